package pgwire

import (
	"io"
	"net"
	"syscall"
	"time"
)

// spinFor is how long a lone connection's reader polls its socket for the
// client's next request before it parks in the network poller.
const spinFor = 40 * time.Microsecond

// spinReader reads a TCP connection as net.Conn does, except that while
// it is the server's only connection, a read that finds nothing polls the
// socket for up to spinFor before parking: a client that sends its next
// request within that time (a benchmark, an application looping over
// lookups) finds the server awake, without the park, the poller's wake-up
// and the rescheduling a request otherwise costs.
type spinReader struct {
	nc  net.Conn
	rc  syscall.RawConn
	srv *Server
}

func newSpinReader(nc net.Conn, srv *Server) io.Reader {
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return nc
	}
	return &spinReader{nc: nc, rc: rc, srv: srv}
}

func (r *spinReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	spun := false
	rerr := r.rc.Read(func(fd uintptr) bool {
		for {
			n, err = syscall.Read(int(fd), p)
			if err == syscall.EINTR {
				continue
			}
			if err != syscall.EAGAIN {
				return true
			}
			if spun || !r.srv.lone() {
				return false
			}
			spun = true
			until := time.Now().Add(spinFor)
			for time.Now().Before(until) {
				n, err = syscall.Read(int(fd), p)
				if err != syscall.EAGAIN && err != syscall.EINTR {
					return true
				}
			}
			return false
		}
	})
	if rerr != nil {
		return 0, rerr
	}
	if err != nil {
		return 0, &net.OpError{Op: "read", Net: "tcp", Source: r.nc.LocalAddr(), Addr: r.nc.RemoteAddr(), Err: err}
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}
