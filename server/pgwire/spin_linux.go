package pgwire

import (
	"io"
	"net"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// spinFor is how long a lone connection's reader polls its socket for the
// client's next request before it waits in the kernel. It covers a
// client that turns an answer into its next request at once (pgbench's
// p50 round trip is ≈20 µs); a longer spin keeps a CPU busy while the
// client needs it, and a thread woken meanwhile then queues behind the
// client: one client's p99 was 0.92× PostgreSQL's with 10 µs against
// 1.02× with 40 µs (bench/README.md).
const spinFor = 10 * time.Microsecond

// waitFor is how long, after the spin, a lone connection's reader waits
// for the socket in a blocking ppoll(2) of its own before it parks in the
// network poller. The kernel then wakes this thread itself when the
// request comes, which is one wake-up where the network poller takes two
// (the poller's thread, then a thread to run the reader), and the
// thread usually keeps its P across the wait (the runtime leaves a P in
// a system call alone for up to 10 ms while others are idle).
var waitFor = unix.NsecToTimespec(int64(2 * time.Millisecond))

// spinReader reads a TCP connection as net.Conn does, except that while
// it is the server's only connection, a read that finds nothing polls the
// socket for up to spinFor, then waits for it in the kernel for up to
// waitFor, before parking: a client that sends its next request within
// that time (a benchmark, an application looping over lookups) finds the
// server awake, without the park, the poller's wake-up and the
// rescheduling a request otherwise costs.
type spinReader struct {
	nc  net.Conn
	rc  syscall.RawConn
	srv *Server

	// One Read's buffer and result, kept here (not captured by a
	// closure) so that a Read allocates nothing; poll is r.readFD,
	// bound once.
	p    []byte
	n    int
	err  error
	spun bool

	lastYield time.Time // see yieldSometimes
	poll      func(fd uintptr) bool
	fds       [1]unix.PollFd
	ts        unix.Timespec // ppoll's timeout, which the system call rewrites
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
	r := &spinReader{nc: nc, rc: rc, srv: srv}
	r.poll = r.readFD
	return r
}

func (r *spinReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p, r.n, r.err, r.spun = p, 0, nil, false
	if r.srv.lone() {
		yieldSometimes(&r.lastYield)
	}
	rerr := r.rc.Read(r.poll)
	n, err := r.n, r.err
	r.p, r.err = nil, nil
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

// readFD reads the socket into r.p; it returns false to park in the
// network poller until the socket is readable.
func (r *spinReader) readFD(fd uintptr) bool {
	for {
		if r.n, r.err = readOnce(int(fd), r.p); r.err != syscall.EAGAIN {
			return true
		}
		if r.spun || !r.srv.lone() {
			return false
		}
		r.spun = true
		if r.n, r.err = spinRead(int(fd), r.p); r.err != syscall.EAGAIN {
			return true
		}
		// A blocking wait; the connection's Close waits for it to end
		// (the read holds the descriptor), at most waitFor.
		r.fds[0], r.ts = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}, waitFor
		if n, err := unix.Ppoll(r.fds[:], &r.ts, nil); n <= 0 || err != nil {
			return false
		}
	}
}
