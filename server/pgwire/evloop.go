package pgwire

// This file holds the serving loops: goroutines that wait, each in an
// epoll set of its own, for the next request of the connections that are
// idle between statements, and answer the point lookups among them
// themselves. There is one loop per two CPUs (loopSet), at least one; a
// connection stays with the loop it first parked in.
//
// With several connections, a request served by the connection's own
// goroutine costs a wake-up of the runtime's network poller thread, a
// thread to run the goroutine, and the scheduler's search for work when
// it parks again: three to four context switches and several system
// calls for a 10 µs lookup, 30–40 µs of CPU in all on a small machine
// (measured with perf sched in the pull benchmark). Those threads also
// run for whole scheduler ticks while the clients wait for a CPU, which
// is where the tail of 16 pgbench clients came from. The loop instead
// takes the requests that are ready in one epoll_wait, reads each socket
// once, answers the lookup, writes the reply, and waits again: one thread
// and a read, a write and a re-arm (epoll_ctl) per request. The price is
// that one loop answers its connections in turn, on one CPU, and that a
// lookup stalled in the store holds up the others.
//
// A connection goes to the loop only from its own goroutine, when that
// goroutine is about to wait for the next message with nothing buffered
// (conn.next): the socket leaves the network poller (sockConn.leavePoller)
// and is armed, one-shot, in the loop's set, and the goroutine waits for
// it to come back. The loop handles only messages that run no statement
// beyond a planned key lookup (conn.quick): a simple query whose plan is
// cached, Bind, Describe and Execute of a planned point lookup, Sync,
// Flush, Close. Anything else — a message that is not complete in the
// buffer, a statement to parse or plan, an error — goes back to the
// goroutine, which handles it as if it had read it, and parks again when
// it is next idle. A write that would block the loop is kept by the
// socket and finished by the goroutine (sockConn.wpend).
//
// Ownership is one atomic state per connection (conn.park): the goroutine
// owns the connection unless it is parked or being served; the loop takes
// it from parked to serving, and gives it back (to parked, or to the
// goroutine through conn.wake). The goroutine takes it back from parked
// itself when its context ends or its idle timeout passes, or asks the
// loop to give it back while it serves; the server gives it back when
// the connection is left alone (conn.unpark).

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Park states of a connection (conn.park).
const (
	parkOwned    int32 = iota // its goroutine has it
	parkParked                // armed in the loop's epoll set; its goroutine waits on wake
	parkServing               // the loop handles its messages
	parkReclaimd              // serving, and its goroutine wants it back
)

// parkState is who owns a connection that may wait in a serving loop:
// each transition is one method, named for the party that makes it, so
// that the protocol can be driven step by step (evloop_test.go).
type parkState struct{ v atomic.Int32 }

// park: the goroutine hands the connection to the loop (owned → parked),
// just before arming its socket.
func (p *parkState) park() { p.v.Store(parkParked) }

// take: the loop takes a parked connection whose socket is ready
// (parked → serving); false when it is no longer parked.
func (p *parkState) take() bool { return p.v.CompareAndSwap(parkParked, parkServing) }

// repark: the loop is done and the connection waits again (serving →
// parked); false when its goroutine asked for it back meanwhile.
func (p *parkState) repark() bool { return p.v.CompareAndSwap(parkServing, parkParked) }

// give: the loop gives the connection back to its goroutine (→ owned),
// which it then wakes.
func (p *parkState) give() { p.v.Store(parkOwned) }

// reclaim: the goroutine takes the connection back. True when it was
// parked (now owned); false when the loop is serving it (now marked
// reclaimed: the loop gives it back) or has given it back already — in
// both cases it comes through the goroutine's wake channel.
func (p *parkState) reclaim() bool {
	for {
		switch p.v.Load() {
		case parkParked:
			if p.v.CompareAndSwap(parkParked, parkOwned) {
				return true
			}
		case parkServing:
			if p.v.CompareAndSwap(parkServing, parkReclaimd) {
				return false
			}
		default:
			return false
		}
	}
}

// unpark: someone other than the loop (the server, the loop's own
// disarming) takes a parked connection back (parked → owned) and must
// then wake its goroutine; false when it was not parked.
func (p *parkState) unpark() bool { return p.v.CompareAndSwap(parkParked, parkOwned) }

func (p *parkState) load() int32 { return p.v.Load() }

// errStop: the loop handled a message after which the connection ends.
var errStop = errors.New("pgwire: connection ends")

// errServePanic: the loop recovered a panic handling the connection's
// message.
type errServePanic struct{ r any }

func (e errServePanic) Error() string { return fmt.Sprintf("internal error: %v", e.r) }

func isServePanic(err error) bool {
	_, ok := err.(errServePanic)
	return ok
}

// quickType reports whether a message of type typ may be one the loop
// handles (conn.quick decides).
func quickType(typ byte) bool {
	switch typ {
	case 'Q', 'B', 'D', 'E', 'S', 'H', 'C':
		return true
	}
	return false
}

// quick reports whether msg runs nothing beyond a planned key lookup, so
// that the serving loop may handle it.
func (c *conn) quick(msg pgproto3.FrontendMessage) bool {
	if c.skipUntilSync {
		_, sync := msg.(*pgproto3.Sync)
		return sync && c.portalsIdle()
	}
	switch m := msg.(type) {
	case *pgproto3.Query:
		// A Query closes the portals, which waits for a suspended one.
		return c.portalsIdle() && c.cachedSimplePull(m.String)
	case *pgproto3.Bind:
		p := c.stmts[m.PreparedStatement]
		pt := c.portals[m.DestinationPortal]
		return p != nil && p.pullTried && p.pull != nil && p.pullKey && (pt == nil || pt.cur == nil)
	case *pgproto3.Describe:
		if m.ObjectType == 'S' {
			p := c.stmts[m.Name]
			return p == nil || p.described
		}
		pt := c.portals[m.Name]
		return pt == nil || pt.described
	case *pgproto3.Execute:
		pt := c.portals[m.Portal]
		return pt == nil || pt.done || pt.cur == nil && pt.pull != nil && pt.stmt.pullKey && m.MaxRows == 0
	case *pgproto3.Sync:
		return c.portalsIdle()
	case *pgproto3.Flush:
		return true
	case *pgproto3.Close:
		if m.ObjectType == 'S' {
			return true
		}
		pt := c.portals[m.Name]
		return pt == nil || pt.cur == nil
	}
	return false
}

// portalsIdle reports whether no portal has a suspended statement, whose
// close would wait for it.
func (c *conn) portalsIdle() bool {
	for _, pt := range c.portals {
		if pt.cur != nil {
			return false
		}
	}
	return true
}

// next returns the connection's next message, read on its goroutine, or
// handed back by the serving loop after the connection waited there.
func (c *conn) next() inbound {
	if u := c.parkable(); u != nil {
		if in, ok := c.parkIn(u); ok {
			return in
		}
	}
	return c.readDirect()
}

// parkable returns the connection's socket when the connection may wait
// in the serving loop: another connection is open (a lone one reads its
// socket itself, sockConn), it is not TLS, and nothing it read waits to
// be handled.
func (c *conn) parkable() parkSocket {
	u := c.srv.io.parkable(c.raw)
	if u == nil || c.nc != c.raw || c.srv.lone() || c.rd.buffered() > 0 || c.ctx.Err() != nil {
		return nil
	}
	return u
}

// parkIn parks the connection in the serving loop and waits for it to
// come back. ok is false when it did not park, or came back with nothing
// to handle: the caller then reads.
func (c *conn) parkIn(u parkSocket) (in inbound, ok bool) {
	if c.evl == nil {
		c.evl = c.srv.servingLoop()
	}
	l := c.evl
	if l == nil || !u.leavePoller() {
		return inbound{}, false
	}
	c.active.Store(time.Now().UnixNano())
	if err := l.arm(c, u); err != nil {
		c.log.Debug("pgwire: connection not parked in the serving loop", "err", err)
		return inbound{}, false
	}
	var idleC <-chan time.Time
	if d := c.srv.cfg.idleTimeout; d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		idleC = t.C
	}
wait:
	for {
		select {
		case in = <-c.wake:
			break wait
		case <-c.ctx.Done():
			if c.reclaim() {
				return inbound{err: errConnEnded}, true
			}
			in = <-c.wake
			break wait
		case <-idleC:
			// The loop may have handled messages meanwhile.
			d := c.srv.cfg.idleTimeout
			if left := d - time.Since(time.Unix(0, c.active.Load())); left > 0 {
				idleC = time.After(left)
				continue
			}
			if c.reclaim() {
				return inbound{err: errIdle}, true
			}
			in = <-c.wake
			break wait
		}
	}
	if err := u.finishWrites(); err != nil {
		return inbound{err: err}, true
	}
	return in, in.msg != nil || in.err != nil
}

// reclaim takes a parked connection back from the serving loop; false:
// the loop is serving it, or has given it back, and it comes through
// wake.
func (c *conn) reclaim() bool { return c.park.reclaim() }

// unpark gives a parked connection back to its goroutine, which reads its
// socket itself from then on: the server calls it when the connection is
// left alone.
func (c *conn) unpark() {
	if c.park.unpark() {
		c.wake <- inbound{}
	}
}

// loopSet is the server's serving loops: one per two CPUs (GOMAXPROCS),
// at least one, so that serving pull queries leaves CPUs to the engine
// and, on a small machine, to the clients; connections are spread over
// them in turn.
type loopSet struct {
	loops []servingLoop
	next  atomic.Uint32
}

func (ls *loopSet) pick() servingLoop {
	return ls.loops[int(ls.next.Add(1))%len(ls.loops)]
}

// servingLoop returns the serving loop for a connection about to park
// for the first time, starting the loops at the first call; nil after
// Close, or when they cannot start.
func (s *Server) servingLoop() servingLoop {
	if ls := s.evl.Load(); ls != nil {
		return ls.pick()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.evlErr {
		return nil
	}
	if ls := s.evl.Load(); ls != nil {
		return ls.pick()
	}
	ls := &loopSet{}
	for range max(1, runtime.GOMAXPROCS(0)/2) {
		l, err := s.io.newLoop(s)
		if err != nil {
			s.evlErr = true
			s.log.Warn("pgwire: no serving loop; connections wait for requests in the network poller", "err", err)
			for _, l := range ls.loops {
				l.close()
			}
			return nil
		}
		ls.loops = append(ls.loops, l)
	}
	s.evl.Store(ls)
	return ls.pick()
}

// stopServingLoop stops the serving loops once every connection has
// ended.
func (s *Server) stopServingLoop() {
	s.mu.Lock()
	ls := s.evl.Swap(nil)
	s.mu.Unlock()
	if ls == nil {
		return
	}
	for _, l := range ls.loops {
		l.close()
	}
}

// peekMessage reports the type of the next message when all of it is
// buffered, reading what the socket has if it is not; it never waits
// (the socket is non-blocking while the loop serves: errWouldBlock).
func (r *msgReader) peekMessage() (byte, error) {
	hdr, err := r.br.Peek(5)
	if err != nil {
		return 0, err
	}
	n := int(int32(uint32(hdr[1])<<24 | uint32(hdr[2])<<16 | uint32(hdr[3])<<8 | uint32(hdr[4])))
	if n < 4 || n+1 > r.br.Size() {
		return 0, errTooLarge
	}
	typ := hdr[0]
	if _, err := r.br.Peek(n + 1); err != nil {
		return 0, err
	}
	return typ, nil
}

// errTooLarge: a message the serving loop leaves to the goroutine, which
// reads it in parts (or refuses its length).
var errTooLarge = errors.New("pgwire: message larger than the read buffer")

// errWouldBlock: a socket read while the serving loop has it found
// nothing there.
var errWouldBlock = syscall.EAGAIN
