package pgwire

// The serving loop on Linux: an epoll set per loop (see evloop.go).

import (
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// stopSlot is the epoll data of the loop's stop eventfd.
const stopSlot = -1

// servLoop is the server's serving loop.
type servLoop struct {
	srv  *Server
	epfd int
	stop int // eventfd: ends run

	mu    sync.Mutex
	slots []*conn // by conn.slot; nil when free
	free  []int32
	done  chan struct{}

	// For tests: messages the loop handled, connections it gave back.
	served, given atomic.Int64
}

func newServLoop(s *Server) (*servLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	stop, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: stopSlot}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, stop, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(stop)
		return nil, fmt.Errorf("epoll_ctl: %w", err)
	}
	l := &servLoop{srv: s, epfd: epfd, stop: stop, done: make(chan struct{})}
	go l.run()
	return l, nil
}

var _ servingLoop = (*servLoop)(nil)

func (l *servLoop) counts() (served, given int64) { return l.served.Load(), l.given.Load() }

// close stops the loop and waits for it. No connection may be parked.
func (l *servLoop) close() {
	var one = [8]byte{1}
	unix.Write(l.stop, one[:])
	<-l.done
	unix.Close(l.epfd)
	unix.Close(l.stop)
}

// register gives c a slot, the data its socket's events carry.
func (l *servLoop) register(c *conn) int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.free); n > 0 {
		i := l.free[n-1]
		l.free = l.free[:n-1]
		l.slots[i] = c
		return i
	}
	l.slots = append(l.slots, c)
	return int32(len(l.slots) - 1)
}

// forget frees c's slot; c's goroutine calls it when the connection ends.
func (l *servLoop) forget(c *conn) {
	if c.slot < 0 {
		return
	}
	l.mu.Lock()
	l.slots[c.slot] = nil
	l.free = append(l.free, c.slot)
	l.mu.Unlock()
	c.slot = -1
}

func (l *servLoop) conn(slot int32) *conn {
	l.mu.Lock()
	defer l.mu.Unlock()
	if slot < 0 || int(slot) >= len(l.slots) {
		return nil
	}
	return l.slots[slot]
}

// arm puts fd in the epoll set, one-shot, for c, which the caller owns
// and hands to the loop: c is parked when arm returns nil.
func (l *servLoop) arm(c *conn, p parkSocket) error {
	u := p.(*sockConn) // linuxIO parks only its own sockets
	if c.slot < 0 {
		c.slot = l.register(c)
	}
	// Under rmu: the socket's Close and the loop read armedFD under it.
	u.rmu.Lock()
	fd := u.fd
	if fd < 0 || u.closed.Load() {
		u.rmu.Unlock()
		return net.ErrClosed
	}
	op := unix.EPOLL_CTL_MOD
	if u.armedFD != fd {
		op = unix.EPOLL_CTL_ADD
	}
	u.armedFD, u.armedLoop = fd, l
	c.park.park()
	err := l.ctl(op, fd, c.slot)
	if err != nil {
		u.armedFD, u.armedLoop = -1, nil
	}
	u.rmu.Unlock()
	if err == nil {
		return nil
	}
	if c.park.unpark() {
		return err
	}
	// An event of an earlier arming reached the loop first: it serves c,
	// and gives it back.
	return nil
}

// ctl adds or re-arms fd, one-shot, with slot as its data.
func (l *servLoop) ctl(op, fd int, slot int32) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLONESHOT, Fd: slot}
	err := unix.EpollCtl(l.epfd, op, fd, &ev)
	switch {
	case err == unix.ENOENT && op == unix.EPOLL_CTL_MOD:
		err = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev)
	case err == unix.EEXIST && op == unix.EPOLL_CTL_ADD:
		err = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, fd, &ev)
	}
	return err
}

// disarm takes fd out of the epoll set, before it closes or goes back
// to the network poller.
func (l *servLoop) disarm(fd int) {
	unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, fd, nil)
}

func (l *servLoop) run() {
	defer close(l.done)
	events := make([]unix.EpollEvent, 64)
	for {
		n, err := unix.EpollWait(l.epfd, events, -1)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			l.srv.log.Error("pgwire: serving loop: epoll_wait failed", "err", err)
			return
		}
		for _, ev := range events[:n] {
			if ev.Fd == stopSlot {
				return
			}
			c := l.conn(ev.Fd)
			if c == nil || !c.park.take() {
				continue // a connection gone, or taken back
			}
			l.serve(c)
		}
	}
}

// serve handles c's ready messages, then parks it again or gives it back
// to its goroutine.
func (l *servLoop) serve(c *conn) {
	u := c.raw.(*sockConn)
	back, give := l.handleReady(c, u)
	if !give {
		u.rmu.Lock()
		if u.closed.Load() || u.fd != u.armedFD {
			give = true
		} else if err := l.ctl(unix.EPOLL_CTL_MOD, u.fd, c.slot); err != nil {
			give = true
		}
		u.rmu.Unlock()
		if !give && c.park.repark() {
			// Left alone meanwhile, it reads its socket itself: the
			// server's unpark found it serving and left it.
			if c.srv.lone() && c.park.unpark() {
				l.given.Add(1)
				c.wake <- inbound{}
			}
			return
		}
		// Its goroutine asked for it back (parkReclaimd).
	}
	l.given.Add(1)
	c.park.give()
	c.wake <- back
}

// handleReady handles the complete messages buffered or readable on c's
// socket, as the connection's goroutine would. give reports that c goes
// back to its goroutine, with back to handle first (a message it read,
// or how the connection ended); back is zero when the goroutine should
// read on.
func (l *servLoop) handleReady(c *conn, u *sockConn) (back inbound, give bool) {
	defer func() {
		if r := recover(); r != nil {
			c.srv.panics.Add(1)
			c.log.Error("pgwire: panic serving connection", "panic", r, "stack", string(debug.Stack()))
			back, give = inbound{err: errServePanic{r}}, true
		}
	}()
	u.nonblock.Store(true)
	defer func() {
		u.nonblock.Store(false)
		if u.pendingWrite() {
			give = true // its goroutine writes the rest
		}
	}()
	for first := true; ; first = false {
		if !first && c.rd.buffered() == 0 {
			// Whatever came since is a new event of the re-armed
			// socket; reading to find nothing would cost a system call.
			return inbound{}, false
		}
		typ, err := c.rd.peekMessage()
		if err != nil {
			if errors.Is(err, errWouldBlock) && c.rd.buffered() == 0 {
				return inbound{}, false
			}
			// Part of a message, an oversized one, the client's end:
			// the goroutine reads it, or finds why not.
			return inbound{}, true
		}
		if !quickType(typ) {
			return inbound{}, true
		}
		msg, err := c.readMessage(c.rd.readReused)
		if err != nil || !c.quick(msg) {
			return inbound{msg: msg, err: err}, true
		}
		l.served.Add(1)
		if c.srv.cfg.idleTimeout > 0 {
			c.active.Store(time.Now().UnixNano())
		}
		if !c.handle(msg) || c.ended {
			return inbound{err: errStop}, true
		}
		if err := c.w.failed(); err != nil {
			c.log.Debug("pgwire: write failed", "pid", c.pid, "err", err)
			return inbound{err: errStop}, true
		}
	}
}
