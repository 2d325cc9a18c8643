package pgwire

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sqlstreams/sqlstreams/engine"
)

// ServerVersion is the server_version the server reports. Drivers parse
// the leading number, so clients treat the server as Postgres 15.
const ServerVersion = "15.0 (sqlstreams)"

// Server serves the Postgres wire protocol for an engine.Executor. Create
// it with New, run it with Serve and stop it with Close. Each connection
// gets its own engine.Session and runs one statement at a time. Serve and
// Close may be called from any goroutine.
type Server struct {
	exec    engine.Executor
	catalog CatalogSource // nil when exec has no catalog
	cfg     config
	log     *slog.Logger

	ctx    context.Context // cancelled by Close; parent of every connection's
	cancel context.CancelFunc

	shutdown atomic.Bool // Shutdown began: sessions end with FATAL 57P01

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}      // every accepted connection
	nconns    atomic.Int32            // len(conns)
	byPID     map[uint32]*conn        // connections past startup, for CancelRequest
	loner     loneSocket              // the only connection's socket, out of the network poller
	io        socketIO                // how sockets are read and waited on (platform.go)
	wg        sync.WaitGroup          // connection goroutines
	evl       atomic.Pointer[loopSet] // started by the first connection to park (evloop.go)
	evlErr    bool                    // it could not start

	panics atomic.Int64 // recovered panics, for tests
}

// New returns a server that runs statements on exec. With no options it
// logs to slog.Default(), flushes streamed rows within 2ms, accepts
// messages up to 32 MiB and gives clients 10s to complete startup.
func New(exec engine.Executor, opts ...Option) *Server {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cat, _ := exec.(CatalogSource)
	return &Server{
		exec:      exec,
		catalog:   cat,
		cfg:       cfg,
		io:        cfg.socketIO(),
		log:       cfg.logger,
		ctx:       ctx,
		cancel:    cancel,
		listeners: map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
		byPID:     map[uint32]*conn{},
	}
}

// ListenAndServe listens on the TCP address addr and calls Serve.
func (s *Server) ListenAndServe(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ln)
}

// Serve accepts connections on ln and serves each in its own goroutine
// until ln fails or Close is called; it closes ln before returning. After
// Close it returns ErrServerClosed. Serve may be called for several
// listeners at once.
func (s *Server) Serve(ln net.Listener) error {
	if err := s.checkListener(ln.Addr()); err != nil {
		ln.Close()
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
		ln.Close()
	}()

	s.log.Info("pgwire: serving", "addr", ln.Addr().String())
	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Temporary failure (e.g. out of file descriptors): back
				// off as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("pgwire: accept failed; retrying", "err", err, "in", backoff)
				select {
				case <-time.After(backoff):
				case <-s.ctx.Done():
				}
				continue
			}
			return err
		}
		backoff = 0
		if tc, ok := nc.(*net.TCPConn); ok {
			nc = s.io.wrap(tc, s)
		}
		c := newConn(s, nc)
		if !s.track(c) {
			nc.Close()
			return ErrServerClosed
		}
		go func() {
			defer s.untrack(c)
			c.serve()
		}()
	}
}

// Shutdown stops the server as Postgres' fast shutdown does: it closes the
// listeners (no new connections), cancels running statements — a push
// query among them — and ends every session with FATAL 57P01
// "terminating connection due to administrator command", so clients
// learn why. It waits for the connections to end until ctx is done, then
// closes those left, as Close does.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	var err error
	if !s.closed {
		s.closed = true
		s.shutdown.Store(true)
		for ln := range s.listeners {
			if e := ln.Close(); e != nil && err == nil && !errors.Is(e, net.ErrClosed) {
				err = e
			}
		}
		s.cancel()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.stopServingLoop()
		return err
	case <-ctx.Done():
	}
	left := s.abortAll()
	s.log.Warn("pgwire: connections still open at the end of the shutdown; closed them", "connections", left)
	<-done
	s.stopServingLoop()
	return err
}

// Close stops the server: it closes the listeners, cancels running
// statements, closes every connection and waits for their goroutines to
// end. Clients see their connection drop. Close is safe to call more than
// once.
func (s *Server) Close() error {
	s.mu.Lock()
	var err error
	if !s.closed {
		s.closed = true
		s.cancel()
		for ln := range s.listeners {
			if e := ln.Close(); e != nil && err == nil && !errors.Is(e, net.ErrClosed) {
				err = e
			}
		}
	}
	s.mu.Unlock()
	s.abortAll()
	s.wg.Wait()
	s.stopServingLoop()
	return err
}

// abortAll closes every open connection and returns how many there were.
// It aborts them outside the server's mutex: closing a socket waits for
// its reader, which may be waiting for the mutex (claimLone).
func (s *Server) abortAll() int {
	s.mu.Lock()
	open := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		open = append(open, c)
	}
	s.mu.Unlock()
	for _, c := range open {
		c.abort()
	}
	return len(open)
}

// checkListener refuses a non-loopback address when every client is
// trusted, unless WithInsecureListen was given.
func (s *Server) checkListener(addr net.Addr) error {
	if s.cfg.users != nil || s.cfg.allowInsecure {
		return nil
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %s", ErrInsecureListen, addr)
}

// tooMany reports whether c is past the connection limit.
func (s *Server) tooMany(c *conn) bool {
	if s.cfg.maxConns <= 0 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byPID) >= s.cfg.maxConns
}

// Stats are counters of a server, for tests and monitoring.
type Stats struct {
	// Connections is the number of open connections, including those in
	// startup.
	Connections int
}

// Stats returns the server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{Connections: len(s.conns)}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// lone reports whether one connection is open.
func (s *Server) lone() bool { return s.nconns.Load() == 1 }

// track registers an accepted connection; it reports false after Close.
func (s *Server) track(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.nconns.Store(int32(len(s.conns)))
	// Only a lone connection's socket stays out of the network poller.
	if len(s.conns) > 1 && s.loner != nil {
		s.loner.release(true)
		s.loner = nil
	}
	s.wg.Add(1)
	c.metricsDone = s.cfg.metrics.ConnOpened("pgwire")
	return true
}

func (s *Server) untrack(c *conn) {
	if c.metricsDone != nil {
		c.metricsDone()
	}
	s.mu.Lock()
	delete(s.conns, c)
	s.nconns.Store(int32(len(s.conns)))
	if s.loner != nil && c.raw == net.Conn(s.loner) {
		s.loner.release(false)
		s.loner = nil
	}
	if c.pid != 0 && s.byPID[c.pid] == c {
		delete(s.byPID, c.pid)
	}
	// A connection left alone reads its socket itself (sockConn).
	if len(s.conns) == 1 {
		for last := range s.conns {
			last.unpark()
		}
	}
	s.mu.Unlock()
	s.wg.Done()
}

// register gives c a process id unique among live connections and a random
// secret, the key a CancelRequest must present.
func (s *Server) register(c *conn) {
	var b [8]byte
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		rand.Read(b[:])
		pid := binary.BigEndian.Uint32(b[:4]) & 0x7FFFFFFF
		if pid == 0 || s.byPID[pid] != nil {
			continue
		}
		c.pid = pid
		copy(c.secret[:], b[4:])
		s.byPID[pid] = c
		return
	}
}

// cancelRequest cancels the running statement of the connection whose key
// is pid and secret, if there is one.
func (s *Server) cancelRequest(pid uint32, secret []byte) {
	s.mu.Lock()
	c := s.byPID[pid]
	s.mu.Unlock()
	if c == nil || subtle.ConstantTimeCompare(secret, c.secret[:]) != 1 {
		s.log.Debug("pgwire: cancel request for no connection", "pid", pid)
		return
	}
	if c.cancelStatement() {
		s.log.Info("pgwire: statement cancelled by request", "pid", pid)
	}
}
