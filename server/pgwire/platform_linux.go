package pgwire

import (
	"io"
	"net"
)

// platformIO is Linux's I/O path: the spin reader, a lone connection's
// socket read outside the network poller (not with polledSockets) and
// the serving loops.
func platformIO(polledSockets bool) socketIO { return linuxIO{polled: polledSockets} }

// linuxIO is socketIO with epoll and ppoll.
type linuxIO struct {
	// polled keeps every socket in the network poller
	// (WithPolledSockets): no sockConn, so no connection parks either.
	polled bool
}

func (l linuxIO) wrap(tc *net.TCPConn, s *Server) net.Conn {
	if l.polled {
		return tc
	}
	return newSockConn(tc, s)
}

func (linuxIO) reader(nc net.Conn, s *Server) io.Reader { return newSpinReader(nc, s) }

func (linuxIO) parkable(nc net.Conn) parkSocket {
	if u, ok := nc.(*sockConn); ok {
		return u
	}
	return nil
}

func (linuxIO) newLoop(s *Server) (servingLoop, error) {
	l, err := newServLoop(s)
	if err != nil {
		return nil, err
	}
	return l, nil
}
