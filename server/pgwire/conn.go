package pgwire

// This file holds a connection's life: the goroutine that reads messages,
// the loop that handles them one at a time, statement cancellation, and
// panic recovery at the connection boundary.
//
// Each connection has two goroutines. The reader decodes messages into a
// channel, so that while a statement runs (a push query may run for
// hours) the connection still sees the client leave: on EOF, a read error
// or Terminate the reader cancels the connection's context, which cancels
// the running statement, and then stops. The handler takes messages from
// the channel in order and runs statements; it leaves when the reader's
// final message (the error or Terminate) arrives or a write fails. Up to
// inboxSize messages pipelined behind a running statement are buffered;
// past that the reader waits, and notices a departing client only once
// the handler catches up or a write fails.
//
// Timeouts: WithIdleTimeout closes a connection whose handler has waited
// that long for a message (FATAL 57P05); statement_timeout cancels a
// statement (57014) through the same context a CancelRequest uses.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// inboxSize is how many messages the reader may run ahead of the handler.
const inboxSize = 64

// inbound is one message from the reader, or the error that ended it.
type inbound struct {
	msg pgproto3.FrontendMessage
	err error
}

// conn is one client connection.
type conn struct {
	srv *Server
	// metricsDone ends the connection's count in the metrics.
	metricsDone func()
	raw         net.Conn // the TCP connection
	nc          net.Conn // raw, or TLS over it after startTLS
	tls         bool
	log         *slog.Logger
	rd          *msgReader
	w           *writer

	// ctx is cancelled when the client leaves or sends Terminate, and by
	// Server.Close. Statements run in children of it.
	ctx    context.Context
	cancel context.CancelFunc

	pid    uint32 // set by Server.register
	secret [4]byte

	in         chan inbound
	done       chan struct{} // closed when the handler leaves
	readerDone chan struct{} // closed when the reader leaves; nil if never started (guarded by mu)

	mu         sync.Mutex
	stmtCancel context.CancelFunc // the running statement's, or nil
	cancelled  bool               // a CancelRequest hit the running statement
	running    bool               // a statement runs (run); see lendReader

	// Handler-goroutine state.
	user, database string
	sess           *engine.Session
	params         map[string]string // Postgres session parameters (session.go)
	stmtTimeout    time.Duration     // statement_timeout; 0 is none
	txStatus       byte              // txIdle, txBlock or txFailed (intercept.go)
	discardAll     bool              // DISCARD ALL ran: reset after the statement
	stmts          map[string]*prepared
	simplePlans    map[string]simplePlan // simplepull.go
	simpleText     string                // the statement simpleTemplate last looked at
	simpleOK       bool
	simpleToks     []token // simpleTemplate's scratch, and its results:
	simpleKey      []byte
	simpleLit      types.Datum
	simpleOID      uint32
	portals        map[string]*portal
	spare          *portal // a closed unnamed portal, for newPortal
	inBatch        bool    // extended-protocol messages since the last Sync
	skipUntilSync  bool    // an extended-protocol error: discard until Sync
	rw             resultWriter
	pullCtx        context.Context // pull queries', kept from one to the next (runGuarded)
	pullCancel     context.CancelFunc
	ended          bool           // a FATAL error was sent: the session is over
	cursors        sync.WaitGroup // goroutines of suspended statements

	// Waiting in the server's serving loop (evloop.go): evl is the
	// connection's, park is the owner (parkOwned…), wake hands the
	// connection back, slot is its place in the loop (-1: none).
	evl    servingLoop
	park   parkState
	wake   chan inbound
	slot   int32
	active atomic.Int64 // when it parked or the loop last handled a message, UnixNano (for the idle timeout)
}

func newConn(s *Server, nc net.Conn) *conn {
	ctx, cancel := context.WithCancel(s.ctx)
	c := &conn{
		srv:      s,
		raw:      nc,
		nc:       nc,
		log:      s.log.With("remote", nc.RemoteAddr().String()),
		rd:       newMsgReader(s.io.reader(nc, s), s.cfg.maxMessage),
		w:        newWriter(nc, s.cfg.flushDelay),
		ctx:      ctx,
		cancel:   cancel,
		in:       make(chan inbound, inboxSize),
		wake:     make(chan inbound, 1),
		slot:     -1,
		done:     make(chan struct{}),
		sess:     engine.NewSession(),
		stmts:    map[string]*prepared{},
		portals:  map[string]*portal{},
		txStatus: txIdle,
	}
	c.rw.c = c
	return c
}

// serve runs the connection to its end. It recovers panics, reporting them
// to the client as a FATAL error before closing.
func (c *conn) serve() {
	defer c.close()
	defer func() {
		if r := recover(); r != nil {
			c.srv.panics.Add(1)
			c.log.Error("pgwire: panic serving connection", "panic", r, "stack", string(debug.Stack()))
			c.fatal(sql.Errorf(sql.CodeInternal, "internal error: %v", r))
		}
	}()
	if !c.startup() {
		return
	}
	// The connection's goroutine reads the client's messages itself, one
	// wake-up per request, until a statement runs for longer than
	// lendAfter (a push query): then a reader goroutine takes over the
	// socket for good, so that the client leaving or sending Terminate
	// cancels the running statement (readLoop). A read blocked when the
	// connection's context ends (Server.Close, Shutdown) is woken by an
	// expired deadline.
	defer context.AfterFunc(c.ctx, func() { c.nc.SetReadDeadline(time.Unix(1, 0)) })()
	c.loop()
}

// lendAfter is how long a statement runs before the connection hands its
// socket to a reader goroutine.
const lendAfter = 20 * time.Millisecond

// lendReader starts the reader goroutine if a statement is running and
// none was started.
func (c *conn) lendReader() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.running || c.readerDone != nil {
		return
	}
	c.readerDone = make(chan struct{})
	go c.readLoop()
}

// readerStarted reports whether the reader goroutine reads the socket.
func (c *conn) readerStarted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readerDone != nil
}

// readDirect reads the next message on the connection's goroutine, with
// the idle timeout as the read deadline. It reports the end of the
// connection as readMessage does; a deadline that expired becomes
// errIdle, or the context's end.
func (c *conn) readDirect() inbound {
	d := c.srv.cfg.idleTimeout
	if d > 0 && c.ctx.Err() == nil {
		c.nc.SetReadDeadline(time.Now().Add(d))
	}
	msg, err := c.readMessage(c.rd.readReused)
	if d > 0 && c.ctx.Err() == nil {
		c.nc.SetReadDeadline(time.Time{})
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		if c.ctx.Err() != nil {
			err = errConnEnded
		} else {
			err = errIdle
		}
	}
	return inbound{msg: msg, err: err}
}

// Ends of a direct read (readDirect).
var (
	errIdle      = errors.New("idle timeout")
	errConnEnded = errors.New("connection ended by the server")
)

// abort cancels the connection's statements and closes its socket, which
// ends both goroutines. Server.Close uses it.
func (c *conn) abort() {
	c.cancel()
	c.raw.Close()
}

// close releases the connection once the handler has left.
func (c *conn) close() {
	c.cancel()
	close(c.done)
	if c.evl != nil {
		c.evl.forget(c)
	}
	c.closePortals()
	c.cursors.Wait()
	// Write what is pending, without waiting long for a client that has
	// stopped reading.
	c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	c.w.flush()
	c.nc.Close()
	c.w.stop()
	c.mu.Lock()
	reader := c.readerDone
	c.mu.Unlock()
	if reader != nil {
		<-reader
	}
	c.log.Debug("pgwire: connection closed", "pid", c.pid)
}

// readLoop reads messages into c.in until the connection ends. Its last
// message is an error or Terminate; either cancels c.ctx first, stopping a
// running statement.
func (c *conn) readLoop() {
	defer close(c.readerDone)
	for {
		msg, err := c.readMessage(c.rd.readMessage)
		_, terminate := msg.(*pgproto3.Terminate)
		if err != nil || terminate {
			c.cancel()
		}
		select {
		case c.in <- inbound{msg: msg, err: err}:
		case <-c.done:
			return
		}
		if err != nil || terminate {
			return
		}
	}
}

// readMessage calls read, msgReader.readMessage or readReused, with panics
// turned into protocol errors: a decoder bug must not take the process
// down.
func (c *conn) readMessage(read func() (pgproto3.FrontendMessage, error)) (msg pgproto3.FrontendMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.srv.panics.Add(1)
			c.log.Error("pgwire: panic decoding message", "panic", r, "stack", string(debug.Stack()))
			msg, err = nil, protocolErrorf("invalid message: %v", r)
		}
	}()
	return read()
}

// loop handles messages until the connection ends.
func (c *conn) loop() {
	var idle *time.Timer
	if d := c.srv.cfg.idleTimeout; d > 0 {
		idle = time.NewTimer(d)
		defer idle.Stop()
	}
	var idleC <-chan time.Time
	if idle != nil {
		idleC = idle.C
	}
	// ctx ends when the client leaves (its last message is still to come
	// on c.in) or when the server shuts down.
	ended := c.ctx.Done()
	for {
		if c.ended {
			return
		}
		var in inbound
		if !c.readerStarted() {
			in = c.next()
		} else {
			select {
			case in = <-c.in:
			case <-idleC:
				in.err = errIdle
			case <-ended:
				if !c.srv.shutdown.Load() {
					ended = nil
					continue
				}
				in.err = errConnEnded
			}
		}
		switch {
		case in.err == errStop:
			return
		case isServePanic(in.err):
			c.fatal(sql.Errorf(sql.CodeInternal, "%s", in.err.Error()))
			return
		case in.err == errIdle:
			c.log.Info("pgwire: closing idle connection", "pid", c.pid, "idle", c.srv.cfg.idleTimeout)
			c.fatal(sql.Errorf(codeIdleTimeout, "terminating connection due to idle-session timeout"))
			return
		case in.err == errConnEnded || in.err != nil && c.srv.shutdown.Load():
			if c.srv.shutdown.Load() {
				c.fatal(errAdminShutdown)
			}
			return
		}
		if in.err != nil {
			var pe *protocolError
			switch {
			case errors.As(in.err, &pe):
				c.log.Warn("pgwire: protocol violation; closing connection", "err", in.err)
				c.fatal(sql.Errorf(codeProtocolViolation, "%s", pe.msg))
			case errors.Is(in.err, io.EOF), errors.Is(in.err, io.ErrUnexpectedEOF), errors.Is(in.err, net.ErrClosed):
				c.log.Debug("pgwire: client left", "pid", c.pid)
			default:
				c.log.Debug("pgwire: read failed", "pid", c.pid, "err", in.err)
			}
			return
		}
		if !c.handle(in.msg) {
			return
		}
		if err := c.w.failed(); err != nil {
			c.log.Debug("pgwire: write failed", "pid", c.pid, "err", err)
			return
		}
		if idle != nil {
			idle.Reset(c.srv.cfg.idleTimeout)
		}
	}
}

// handle dispatches one message; it reports false when the connection
// should end.
func (c *conn) handle(msg pgproto3.FrontendMessage) bool {
	if _, ok := msg.(*pgproto3.Terminate); ok {
		return false
	}
	if c.skipUntilSync {
		if _, ok := msg.(*pgproto3.Sync); !ok {
			return true
		}
	}
	switch m := msg.(type) {
	case *pgproto3.Query:
		c.query(m.String)
	case *pgproto3.Parse:
		c.parse(m)
	case *pgproto3.Bind:
		c.bind(m)
	case *pgproto3.Describe:
		c.describe(m)
	case *pgproto3.Execute:
		c.execute(m)
	case *pgproto3.Close:
		c.closeObject(m)
	case *pgproto3.Sync:
		c.sync()
	case *pgproto3.Flush:
		c.inBatch = true
		c.w.flush()
	case *pgproto3.CopyData, *pgproto3.CopyDone, *pgproto3.CopyFail:
		// Outside COPY, Postgres ignores these: they are likely the tail
		// of a COPY that failed.
	case *unsupportedMsg:
		c.unsupported(m)
	default:
		c.unsupported(&unsupportedMsg{typ: '?'})
	}
	return true
}

// unsupported answers a message the server does not handle. In the middle
// of an extended-protocol batch the client expects the batch's messages
// to be discarded until Sync; otherwise it waits for ReadyForQuery.
func (c *conn) unsupported(m *unsupportedMsg) {
	var err error
	switch m.typ {
	case 'F':
		err = sql.Errorf(sql.CodeFeatureNotSupport, "the function call protocol is not supported")
	case 'p':
		err = sql.Errorf(codeProtocolViolation, "unexpected password message: no authentication is in progress")
	default:
		err = sql.Errorf(codeProtocolViolation, "unsupported frontend message type %s", msgTypeName(m.typ))
	}
	c.log.Debug("pgwire: unsupported message", "type", msgTypeName(m.typ))
	if c.inBatch {
		c.extendedError(err, "", -1)
		return
	}
	c.sendError(err, "", -1)
	c.readyForQuery()
}

func msgTypeName(t byte) string {
	if t >= 0x20 && t < 0x7F {
		return fmt.Sprintf("%q", t)
	}
	return fmt.Sprintf("0x%02x", t)
}

// run calls f, one statement's work, in a context that a CancelRequest,
// the client leaving or Server.Close cancels. When a CancelRequest hit the
// statement, run reports errCanceled whatever f returned.
func (c *conn) run(f func(ctx context.Context) error) error {
	return c.runGuarded(true, f)
}

// runPullQuery is run for a pull query: it reads committed state and
// ends on its own, so it never lends the socket to a reader goroutine,
// and arms no timer for that. A timer per statement costs more than the
// point lookup it guards: adding one wakes the thread parked in the
// network poller. A CancelRequest, the statement timeout and
// Server.Close still end it; a client that leaves is seen at the next
// write or read.
func (c *conn) runPullQuery(f func(ctx context.Context) error) error {
	return c.runGuarded(false, f)
}

func (c *conn) runGuarded(mayLend bool, f func(ctx context.Context) error) error {
	var ctx context.Context
	var cancel context.CancelFunc
	if !mayLend && c.stmtTimeout == 0 {
		// A pull query's context is kept for the next one until a
		// CancelRequest ends it: one per statement would cost more
		// allocations than the point lookup it runs.
		if c.pullCtx == nil || c.pullCtx.Err() != nil {
			c.pullCtx, c.pullCancel = context.WithCancel(c.ctx)
		}
		ctx, cancel = c.pullCtx, c.pullCancel
	} else {
		ctx, cancel = context.WithCancel(c.ctx)
		defer cancel()
	}
	if c.stmtTimeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(ctx, c.stmtTimeout)
		defer cancelT()
	}
	c.mu.Lock()
	c.stmtCancel, c.cancelled, c.running = cancel, false, true
	lend := mayLend && c.readerDone == nil
	c.mu.Unlock()
	var lendTimer *time.Timer
	if lend {
		lendTimer = time.AfterFunc(lendAfter, c.lendReader)
	}

	err := f(ctx)

	if lendTimer != nil {
		lendTimer.Stop()
	}
	c.mu.Lock()
	cancelled := c.cancelled
	c.stmtCancel, c.cancelled, c.running = nil, false, false
	c.mu.Unlock()
	switch {
	case cancelled && (err != nil || ctx.Err() != nil):
		return errCanceled
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && c.ctx.Err() == nil:
		return errStatementTimeout
	case err != nil && c.ctx.Err() != nil && c.srv.ctx.Err() != nil:
		return errAdminShutdown
	}
	return err
}

// cancelStatement cancels the running statement, if any; it reports
// whether there was one.
func (c *conn) cancelStatement() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stmtCancel == nil {
		return false
	}
	c.cancelled = true
	c.stmtCancel()
	return true
}

// sendError sends an ErrorResponse for err, a failure of the statement at
// byte stmtOff of query (-1 when unknown).
func (c *conn) sendError(err error, query string, stmtOff int) {
	c.log.Debug("pgwire: statement failed", "pid", c.pid, "err", err)
	if c.txStatus == txBlock {
		c.txStatus = txFailed
	}
	if err == errAdminShutdown {
		// The server shuts down: the session ends here, as Postgres
		// ends it, with no ReadyForQuery after.
		c.fatal(err)
		c.ended = true
		return
	}
	c.w.send(errorResponse("ERROR", err, query, stmtOff))
}

// errAdminShutdown ends a session's running statement, and the session,
// when the server shuts down.
var errAdminShutdown = sql.Errorf(codeAdminShutdown, "terminating connection due to administrator command")

// fatal sends a FATAL ErrorResponse and flushes it; the caller then closes
// the connection.
func (c *conn) fatal(err error) {
	c.w.send(errorResponse("FATAL", err, "", -1))
	c.w.flush()
}

// readyForQuery tells the client the server awaits a new query, with the
// transaction status (see intercept.go), and flushes.
func (c *conn) readyForQuery() {
	if c.ended {
		return
	}
	c.w.readyForQuery(c.txStatus)
	c.w.flush()
}

// afterStatement applies what a statement asked to happen once it has
// finished: DISCARD ALL resets the session.
func (c *conn) afterStatement() {
	if !c.discardAll {
		return
	}
	c.discardAll = false
	c.closePortals()
	clear(c.stmts)
	clear(c.simplePlans)
	for _, p := range pgParams {
		if !p.readOnly {
			c.setParam(p.name, "", true)
		}
	}
	c.sess = engine.NewSession()
}
