package pgwire

import (
	"errors"
	"io"
	"net"
)

// socketIO is how the server reads and waits on its sockets: the one
// place where the platform-specific I/O plugs in. plainIO, on every
// platform and with WithPlainIO, reads each connection's net.Conn on its
// goroutine, waiting in the Go runtime's network poller. Linux's
// (linuxIO, platform_linux.go) adds the spin reader, a lone
// connection's read outside the poller (sockConn) and the serving loops
// (servLoop), which the ownership protocol in evloop.go drives.
type socketIO interface {
	// wrap returns an accepted socket as its connection reads and
	// writes it.
	wrap(tc *net.TCPConn, s *Server) net.Conn
	// reader returns what a connection's message reader reads nc with.
	reader(nc net.Conn, s *Server) io.Reader
	// parkable returns nc's side of parking in a serving loop; nil when
	// nc cannot park.
	parkable(nc net.Conn) parkSocket
	// newLoop starts a serving loop, or says why there is none.
	newLoop(s *Server) (servingLoop, error)
}

// parkSocket is a socket that can wait in a serving loop.
type parkSocket interface {
	// leavePoller takes the socket out of the network poller, to be
	// armed in a loop; false when it cannot (closed).
	leavePoller() bool
	// finishWrites writes what the loop could not send without waiting.
	finishWrites() error
}

// servingLoop answers the quick messages of parked connections
// (evloop.go) on a thread of its own.
type servingLoop interface {
	// arm parks c, which its goroutine owns, with its socket u: c is
	// parked when arm returns nil.
	arm(c *conn, u parkSocket) error
	// forget drops an ended connection.
	forget(c *conn)
	// close stops the loop and waits for it; no connection is parked.
	close()
	// counts are the messages the loop handled and the connections it
	// gave back to their goroutines (for tests).
	counts() (served, given int64)
}

// loneSocket is the socket of the server's only connection, which reads
// it outside the network poller until another connection opens.
type loneSocket interface {
	net.Conn
	// release forgets that the socket is the loner; handover asks it
	// back into the network poller.
	release(handover bool)
}

// errNoServingLoop: this I/O path has no serving loop.
var errNoServingLoop = errors.New("pgwire: no serving loop on this I/O path (it needs Linux's epoll)")

// plainIO is the plain path: net.Conn and a goroutine per connection.
type plainIO struct{}

func (plainIO) wrap(tc *net.TCPConn, _ *Server) net.Conn { return tc }
func (plainIO) reader(nc net.Conn, _ *Server) io.Reader  { return nc }
func (plainIO) parkable(net.Conn) parkSocket             { return nil }
func (plainIO) newLoop(*Server) (servingLoop, error)     { return nil, errNoServingLoop }
