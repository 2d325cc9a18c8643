//go:build !linux

package pgwire

import (
	"errors"
	"io"
	"net"
	"sync/atomic"
)

// Off Linux there is no serving loop and no socket read outside the
// network poller: every connection's goroutine reads its net.Conn and
// waits in the poller, the plain path WithPolledOnly gives on Linux.
// These stand-ins are never reached: Serve never wraps a socket
// (wrapSocket), so no connection is parkable, and servingLoop finds no
// loop.

var errNoServingLoop = errors.New("pgwire: the serving loop needs Linux (epoll)")

func wrapSocket(tc *net.TCPConn, s *Server) net.Conn { return tc }

type sockConn struct {
	net.Conn
	claimed atomic.Bool
}

func (u *sockConn) requestHandover()    {}
func (u *sockConn) leavePoller() bool   { return false }
func (u *sockConn) finishWrites() error { return nil }
func (u *sockConn) unpolled() bool      { return false }

type servLoop struct {
	served, given atomic.Int64
}

func newServLoop(*Server) (*servLoop, error)   { return nil, errNoServingLoop }
func (l *servLoop) close()                     {}
func (l *servLoop) forget(*conn)               {}
func (l *servLoop) arm(*conn, *sockConn) error { return errNoServingLoop }

// newSpinReader reads nc as it is: the spin needs Linux (ppoll).
func newSpinReader(nc net.Conn, s *Server) io.Reader { return nc }
