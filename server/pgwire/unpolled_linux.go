package pgwire

import (
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sockConn is a client's TCP socket, read outside the Go runtime's network
// poller while it is the server's only connection, and while the
// connection waits for its next request in the serving loop (evloop.go).
//
// A socket in the poller wakes the runtime's polling thread for every
// packet that arrives, even when the connection's goroutine is already
// reading it itself (spinReader): on a small machine that thread takes
// the CPU the client or the request needed, and a lone client's requests
// pay for it in their tail latency (measured with pgbench and perf sched;
// bench/README.md). Out of the poller, the connection's goroutine reads
// the socket itself: a read that finds nothing polls it for spinFor, then
// waits for it in ppoll(2) on its own thread, as a Postgres backend waits
// in its own process.
//
// Only Read moves the socket, at its start, when the connection's
// goroutine is about to wait for the client: out of the poller when the
// server has one connection (unpoll), back in when the server has asked
// for it because another one opened (requestHandover, handOver) or when
// a read with other connections open is not the serving loop's; and the
// connection's goroutine takes it out before it parks in the loop
// (leavePoller). A
// deadline, Close and the handover request reach a Read or Write waiting
// out of the poller through an eventfd each.
type sockConn struct {
	srv          *Server
	laddr, raddr net.Addr

	rmu sync.Mutex // held by Read, and by the moves, which Read makes
	wmu sync.Mutex // held by Write, and by the moves

	// In the poller: polled and its reader rd; fd is -1. Out of it: fd,
	// non-blocking; polled and rd are nil. Changed under rmu, wmu and
	// pmu, read under any of them.
	polled net.Conn
	rd     io.Reader
	fd     int
	pmu    sync.Mutex // for Set*Deadline

	rev, wev int        // eventfds waking a waiting Read / Write; 0 until the first unpoll
	evmu     sync.Mutex // guards rev and wev for signal, which any goroutine calls
	evClosed bool

	closed   atomic.Bool
	handover atomic.Bool  // asked to go back to the poller
	claimed  atomic.Bool  // the server's loner (claimLone)
	rdl, wdl atomic.Int64 // deadlines, UnixNano; 0: none

	closeOnce sync.Once
	closeErr  error

	lastYield time.Time // Read's; see yieldSometimes

	// While the serving loop handles the connection (evloop.go), reads
	// and writes do not wait: a read that finds nothing returns
	// errWouldBlock, and what a write cannot send now waits in wpend
	// for the connection's goroutine (finishWrites). armedFD is the
	// descriptor in the loop's epoll set, -1: none; its owner changes
	// it.
	nonblock  atomic.Bool
	wpend     []byte // under wmu
	armedFD   int
	armedLoop *servLoop
}

func newSockConn(tc *net.TCPConn, srv *Server) *sockConn {
	return &sockConn{srv: srv, laddr: tc.LocalAddr(), raddr: tc.RemoteAddr(), polled: tc, rd: newSpinReader(tc, srv), fd: -1, armedFD: -1}
}

var (
	_ parkSocket = (*sockConn)(nil)
	_ loneSocket = (*sockConn)(nil)
)

// release implements loneSocket. The server calls it under its mutex.
func (u *sockConn) release(handover bool) {
	u.claimed.Store(false)
	if handover {
		u.requestHandover()
	}
}

func (u *sockConn) LocalAddr() net.Addr  { return u.laddr }
func (u *sockConn) RemoteAddr() net.Addr { return u.raddr }

// unpolled reports whether the socket is out of the poller.
func (u *sockConn) unpolled() bool {
	u.pmu.Lock()
	defer u.pmu.Unlock()
	return u.polled == nil && !u.closed.Load()
}

// requestHandover asks the connection to put its socket back in the
// network poller at its next read: another connection has opened. It
// does not wait. The server calls it under its mutex.
func (u *sockConn) requestHandover() {
	if u.handover.CompareAndSwap(false, true) {
		u.signal(false)
	}
}

// signal wakes a Read (write: a Write) waiting out of the poller.
func (u *sockConn) signal(write bool) {
	u.evmu.Lock()
	defer u.evmu.Unlock()
	ev := u.rev
	if write {
		ev = u.wev
	}
	if !u.evClosed && ev != 0 {
		var one = [8]byte{1}
		unix.Write(ev, one[:])
	}
}

func drain(ev int) {
	var b [8]byte
	unix.Read(ev, b[:])
}

func (u *sockConn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: u.laddr, Addr: u.raddr, Err: err}
}

// timeout returns ppoll's timeout for deadline d (UnixNano, 0: none), and
// false once it has passed.
func timeout(d int64, ts *unix.Timespec) (*unix.Timespec, bool) {
	if d == 0 {
		return nil, true
	}
	left := d - time.Now().UnixNano()
	if left <= 0 {
		return nil, false
	}
	*ts = unix.NsecToTimespec(left)
	return ts, true
}

func (u *sockConn) Read(p []byte) (int, error) {
	u.rmu.Lock()
	if u.nonblock.Load() {
		defer u.rmu.Unlock()
		return u.readNow(p)
	}
	if !u.closed.Load() {
		switch {
		case u.fd < 0 && u.srv.lone():
			u.unpoll()
		case u.fd >= 0 && (u.handover.Load() || !u.srv.lone()):
			// Another connection is open: a read the serving loop
			// does not make waits in the poller.
			u.handOver()
		case u.fd >= 0 && !u.claimed.Load():
			// Out of the poller for the serving loop, and now alone.
			u.srv.claimLone(u)
		}
	}
	if u.fd < 0 {
		rd := u.rd
		u.rmu.Unlock()
		if rd == nil {
			return 0, u.opError("read", net.ErrClosed)
		}
		return rd.Read(p)
	}
	n, err := u.readUnpolled(p)
	u.rmu.Unlock()
	if err == errHandover {
		return u.Read(p)
	}
	return n, err
}

// readNow reads what the socket has, for the serving loop; Read calls it
// holding rmu.
func (u *sockConn) readNow(p []byte) (int, error) {
	if u.closed.Load() || u.fd < 0 {
		return 0, u.opError("read", net.ErrClosed)
	}
	if len(p) == 0 {
		return 0, nil
	}
	n, err := readOnce(u.fd, p)
	switch {
	case err == syscall.EAGAIN:
		return 0, errWouldBlock
	case err != nil:
		return 0, u.opError("read", err)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// leavePoller takes the socket out of the network poller, for the
// serving loop; false when it cannot (closed, or the duplicate failed).
func (u *sockConn) leavePoller() bool {
	u.rmu.Lock()
	defer u.rmu.Unlock()
	if u.closed.Load() {
		return false
	}
	if u.fd >= 0 {
		return true
	}
	u.wmu.Lock()
	defer u.wmu.Unlock()
	return u.takeSocket() == nil
}

// errHandover: readUnpolled saw a handover request, for Read to make
// before it reads on.
var errHandover = errors.New("pgwire: socket handover requested")

// readUnpolled reads the socket out of the poller.
func (u *sockConn) readUnpolled(p []byte) (int, error) {
	if u.closed.Load() {
		return 0, u.opError("read", net.ErrClosed)
	}
	if len(p) == 0 {
		return 0, nil
	}
	yieldSometimes(&u.lastYield)
	spun := false
	fds := [2]unix.PollFd{{Fd: int32(u.fd), Events: unix.POLLIN}, {Fd: int32(u.rev), Events: unix.POLLIN}}
	var ts unix.Timespec
	for {
		n, err := readOnce(u.fd, p)
		if err == syscall.EAGAIN && !spun && u.srv.lone() {
			spun = true
			n, err = spinRead(u.fd, p)
		}
		switch {
		case err == nil && n == 0:
			return 0, io.EOF
		case err == nil:
			return n, nil
		case err != syscall.EAGAIN:
			return 0, u.opError("read", err)
		case u.closed.Load():
			return 0, u.opError("read", net.ErrClosed)
		case u.handover.Load():
			return 0, errHandover
		}
		tp, live := timeout(u.rdl.Load(), &ts)
		if !live {
			return 0, u.opError("read", os.ErrDeadlineExceeded)
		}
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Ppoll(fds[:], tp, nil); err != nil && err != unix.EINTR {
			return 0, u.opError("read", err)
		}
		if fds[1].Revents != 0 {
			drain(u.rev)
		}
	}
}

// readOnce reads fd once, retrying an interrupted read; EAGAIN: nothing
// was there.
func readOnce(fd int, p []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, p)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// spinRead polls fd with reads for up to spinFor; EAGAIN: nothing came.
func spinRead(fd int, p []byte) (int, error) {
	until := time.Now().Add(spinFor)
	for time.Now().Before(until) {
		if n, err := readOnce(fd, p); err != syscall.EAGAIN {
			return n, err
		}
	}
	return 0, syscall.EAGAIN
}

// yieldEvery is how often a lone connection's reader yields: well within
// the monitor's 10 ms, and rarely, since a yield wakes an idle thread to
// look for work (a futex wake-up and a thread on the client's CPU); one
// prepared client's p99 was 0.77–0.83× PostgreSQL's yielding every 5 ms
// against 0.95–1.11× every 1 ms, in three A/B rounds (bench/README.md).
const yieldEvery = 5 * time.Millisecond

// yieldSometimes lets the scheduler run once every yieldEvery of reads
// (last: when it last did). A goroutine that keeps its thread busy
// (spinning, then waiting in a system call) never reschedules, and after
// 10 ms the runtime's monitor (sysmon) preempts it and takes its
// processor away; from then on the monitor wakes every 20 µs for a
// while, each time a timer interrupt and a thread taking CPU from the
// client and the requests (≈2,000 more timer interrupts a second in the
// one-client pull benchmark). A voluntary yield now and then keeps it
// asleep.
func yieldSometimes(last *time.Time) {
	if now := time.Now(); now.Sub(*last) > yieldEvery {
		*last = now
		runtime.Gosched()
	}
}

// unpoll takes the socket out of the poller if the server still has this
// one connection. Read calls it holding rmu.
func (u *sockConn) unpoll() {
	if !u.srv.claimLone(u) {
		return
	}
	u.wmu.Lock()
	defer u.wmu.Unlock()
	if err := u.takeSocket(); err != nil {
		u.srv.log.Debug("pgwire: reading a lone connection in the network poller", "err", err)
		u.srv.releaseLone(u)
	}
}

// takeSocket moves the socket out of the poller; the caller holds rmu and
// wmu.
func (u *sockConn) takeSocket() error {
	err := u.openEventfds()
	var fd int
	if err == nil {
		fd, err = dupSocket(u.polled)
	}
	if err != nil {
		return err
	}
	tc := u.polled
	u.pmu.Lock()
	u.polled, u.rd, u.fd = nil, nil, fd
	u.pmu.Unlock()
	// Closing tc takes the socket out of the poller; the duplicate keeps
	// it open. A deadline set on tc meanwhile is in rdl and wdl too.
	tc.Close()
	return nil
}

// disarm takes the socket out of the serving loop's epoll set before its
// descriptor closes; the caller holds rmu and wmu.
func (u *sockConn) disarm() {
	if u.armedFD >= 0 && u.armedFD == u.fd {
		u.armedLoop.disarm(u.fd)
	}
	u.armedFD, u.armedLoop = -1, nil
}

func (u *sockConn) openEventfds() error {
	if u.rev != 0 {
		return nil
	}
	rev, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return err
	}
	wev, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(rev)
		return err
	}
	u.evmu.Lock()
	u.rev, u.wev = rev, wev
	u.evmu.Unlock()
	return nil
}

// dupSocket returns a non-blocking duplicate of nc's socket.
func dupSocket(nc net.Conn) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return -1, syscall.ENOTSOCK
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// handOver puts the socket back in the poller. Read calls it holding rmu.
func (u *sockConn) handOver() {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	u.handover.Store(false)
	u.disarm()
	f := os.NewFile(uintptr(u.fd), "pgwire")
	nc, err := net.FileConn(f) // a duplicate, in the poller
	f.Close()
	if err != nil {
		u.srv.log.Warn("pgwire: putting a connection's socket back in the network poller failed; closing it", "err", err)
		u.closed.Store(true)
		u.fd = -1
		return
	}
	rd := newSpinReader(nc, u.srv)
	u.pmu.Lock()
	u.polled, u.rd, u.fd = nc, rd, -1
	u.pmu.Unlock()
	// A deadline set from here on goes to nc (Set*Deadline); one set
	// before is in the fields.
	if d := u.rdl.Load(); d != 0 {
		nc.SetReadDeadline(time.Unix(0, d))
	}
	if d := u.wdl.Load(); d != 0 {
		nc.SetWriteDeadline(time.Unix(0, d))
	}
}

func (u *sockConn) Write(p []byte) (int, error) {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	if u.polled != nil {
		return u.polled.Write(p)
	}
	if u.closed.Load() || u.fd < 0 {
		return 0, u.opError("write", net.ErrClosed)
	}
	if u.nonblock.Load() {
		return u.writeNow(p)
	}
	if err := u.writePending(); err != nil {
		return 0, err
	}
	return u.writeAll(p)
}

// writeSome writes p until it is written or the socket takes no more
// (EAGAIN, with what was written).
func (u *sockConn) writeSome(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n, err := syscall.Write(u.fd, p[written:])
		switch {
		case err == nil:
			written += n
		case err != syscall.EINTR:
			return written, err
		}
	}
	return written, nil
}

// writeNow writes p for the serving loop, keeping in wpend what the
// socket does not take now; Write calls it holding wmu.
func (u *sockConn) writeNow(p []byte) (int, error) {
	if len(u.wpend) > 0 {
		u.wpend = append(u.wpend, p...)
		return len(p), nil
	}
	n, err := u.writeSome(p)
	switch {
	case err == syscall.EAGAIN:
		u.wpend = append(u.wpend, p[n:]...)
	case err != nil:
		return n, u.opError("write", err)
	}
	return len(p), nil
}

// pendingWrite reports whether writes wait in wpend.
func (u *sockConn) pendingWrite() bool {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	return len(u.wpend) > 0
}

// finishWrites writes what waits in wpend, as Write would.
func (u *sockConn) finishWrites() error {
	u.wmu.Lock()
	defer u.wmu.Unlock()
	if len(u.wpend) > 0 && (u.closed.Load() || u.fd < 0) {
		return u.opError("write", net.ErrClosed)
	}
	return u.writePending()
}

// writePending writes wpend; the caller holds wmu.
func (u *sockConn) writePending() error {
	if len(u.wpend) == 0 {
		return nil
	}
	_, err := u.writeAll(u.wpend)
	u.wpend = u.wpend[:0]
	return err
}

// writeAll writes p to the socket out of the poller, waiting for room as
// long as the write deadline allows; the caller holds wmu.
func (u *sockConn) writeAll(p []byte) (int, error) {
	fds := [2]unix.PollFd{{Fd: int32(u.fd), Events: unix.POLLOUT}, {Fd: int32(u.wev), Events: unix.POLLIN}}
	var ts unix.Timespec
	written := 0
	for {
		n, err := u.writeSome(p[written:])
		written += n
		switch {
		case err == nil:
			return written, nil
		case err != syscall.EAGAIN:
			return written, u.opError("write", err)
		case u.closed.Load():
			return written, u.opError("write", net.ErrClosed)
		}
		tp, live := timeout(u.wdl.Load(), &ts)
		if !live {
			return written, u.opError("write", os.ErrDeadlineExceeded)
		}
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Ppoll(fds[:], tp, nil); err != nil && err != unix.EINTR {
			return written, u.opError("write", err)
		}
		if fds[1].Revents != 0 {
			drain(u.wev)
		}
	}
}

func (u *sockConn) SetDeadline(t time.Time) error {
	u.SetReadDeadline(t)
	return u.SetWriteDeadline(t)
}

func (u *sockConn) SetReadDeadline(t time.Time) error {
	u.rdl.Store(unixNano(t))
	if nc := u.polledConn(); nc != nil {
		return nc.SetReadDeadline(t)
	}
	u.signal(false)
	return nil
}

func (u *sockConn) SetWriteDeadline(t time.Time) error {
	u.wdl.Store(unixNano(t))
	if nc := u.polledConn(); nc != nil {
		return nc.SetWriteDeadline(t)
	}
	u.signal(true)
	return nil
}

// polledConn returns the socket in the poller, or nil when it is out.
func (u *sockConn) polledConn() net.Conn {
	u.pmu.Lock()
	defer u.pmu.Unlock()
	return u.polled
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Close closes the socket. It wakes a Read or Write waiting out of the
// poller and waits for them to leave before it closes the descriptors; in
// the poller, closing the socket ends them.
func (u *sockConn) Close() error {
	u.closeOnce.Do(func() {
		u.closed.Store(true)
		if nc := u.polledConn(); nc != nil {
			// Ends a Read or Write in the poller, which may hold wmu.
			u.closeErr = nc.Close()
		}
		u.signal(false)
		u.signal(true)
		u.rmu.Lock()
		u.wmu.Lock()
		if u.polled == nil && u.fd >= 0 {
			u.disarm()
			u.closeErr = unix.Close(u.fd)
			u.fd = -1
		}
		u.evmu.Lock()
		u.evClosed = true
		if u.rev != 0 {
			unix.Close(u.rev)
			unix.Close(u.wev)
		}
		u.evmu.Unlock()
		u.wmu.Unlock()
		u.rmu.Unlock()
	})
	return u.closeErr
}

// claimLone records u as the lone connection's socket, about to leave the
// network poller, if the server has one connection; a connection opened
// after asks it back (track).
func (s *Server) claimLone(u *sockConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) != 1 || s.closed {
		return false
	}
	s.loner = u
	u.handover.Store(false)
	u.claimed.Store(true)
	return true
}

// releaseLone forgets u as the lone connection's socket.
func (s *Server) releaseLone(u *sockConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loner == loneSocket(u) {
		s.loner = nil
		u.claimed.Store(false)
	}
}
