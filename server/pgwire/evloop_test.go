package pgwire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/broker"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// loopCounts sums the serving loops' counts: messages handled,
// connections given back.
func loopCounts(s *Server) (served, given int64) {
	if ls := s.evl.Load(); ls != nil {
		for _, l := range ls.loops {
			s, g := l.counts()
			served += s
			given += g
		}
	}
	return served, given
}

// loopKeys is the loop tests' table size.
const loopKeys = 200

// startLoopServer starts a broker, an engine and a server over them in
// this process, with table kv of loopKeys rows (id, 'v<id>'), and returns
// the server and a connection string.
func startLoopServer(t *testing.T, opts ...Option) (*Server, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	log := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	br, err := broker.Start(ctx, broker.Config{Addr: "127.0.0.1:0", DataDir: filepath.Join(dir, "kafka"), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { br.Close() })
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(br.Addr()), InstanceID: "loop", Logger: log, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	srv := New(eng, append([]Option{WithLogger(testLogger())}, opts...)...)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		if n := srv.panics.Load(); n > 0 {
			t.Errorf("%d panics recovered", n)
		}
	})
	url := "postgres://loop@" + ln.Addr().String() + "/db?sslmode=disable"

	setup, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close(ctx)
	if _, err := setup.Exec(ctx, "CREATE TABLE kv (id INT PRIMARY KEY, v VARCHAR) WITH (KAFKA_TOPIC='kv', VALUE_FORMAT='JSON', PARTITIONS=2)"); err != nil {
		t.Fatal(err)
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()), kgo.DefaultProduceTopic("kv"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	var recs []*kgo.Record
	for i := 1; i <= loopKeys; i++ {
		recs = append(recs, &kgo.Record{Key: binary.BigEndian.AppendUint32(nil, uint32(i)), Value: fmt.Appendf(nil, `{"V":"v%d"}`, i)})
	}
	if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for i := 1; i <= loopKeys; {
		var v string
		err := setup.QueryRow(ctx, "SELECT v FROM kv WHERE id = $1", i).Scan(&v)
		if err == nil && v == fmt.Sprintf("v%d", i) {
			i++
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("key %d not served: %q, %v", i, v, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return srv, url
}

// TestPlainIO runs TestServingLoop's clients on the plain path
// (WithPlainIO, the only one off Linux): every answer is the same, no
// serving loop starts and no socket leaves the network poller.
func TestPlainIO(t *testing.T) {
	srv, url := startLoopServer(t, WithPlainIO())
	if _, ok := srv.io.(plainIO); !ok {
		t.Fatalf("WithPlainIO: the server's I/O path is %T", srv.io)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const clients, rounds = 3, 40
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loopClient(ctx, c, i, rounds); err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if srv.evl.Load() != nil {
		t.Error("a serving loop started on the plain path")
	}
	srv.mu.Lock()
	loner := srv.loner
	srv.mu.Unlock()
	if loner != nil {
		t.Error("a socket left the network poller on the plain path")
	}
}

// TestServingLoop runs point lookups from several connections at once,
// simple and prepared, keys present and absent, mixed with statements
// the loop leaves to the connection's goroutine (a scan, SET, SHOW, a
// failing statement, a transaction block), and checks every answer; the
// loop must have answered most lookups and given connections back for
// the rest. Then the server closes with connections parked in the loop.
func TestServingLoop(t *testing.T) {
	srv, url := startLoopServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const clients, rounds = 4, 150
	conns := make([]*pgx.Conn, clients)
	for i := range conns {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loopClient(ctx, c, i, rounds); err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	served, given := loopCounts(srv)
	t.Logf("serving loop: %d messages handled, %d connections given back", served, given)
	// Each round's simple and prepared lookups are 1 + 3 messages (Query;
	// Bind, Execute, Sync) the loop may handle; allow for the first
	// ones, which plan, and those after a statement it gave back.
	if want := int64(clients * rounds * 3); served < want {
		t.Errorf("the serving loop handled %d messages, want at least %d", served, want)
	}
	if want := int64(clients * rounds / 10); given < want {
		t.Errorf("the serving loop gave connections back %d times, want at least %d (every round has statements it does not run)", given, want)
	}

	// Close with the connections parked: it returns, and they end.
	time.Sleep(20 * time.Millisecond)
	done := make(chan struct{})
	go func() { srv.Close(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatal("Close did not return with connections parked in the serving loop")
	}
	for i, c := range conns {
		var v string
		if err := c.QueryRow(ctx, "SELECT v FROM kv WHERE id = 1").Scan(&v); err == nil {
			t.Errorf("client %d: a lookup after Close succeeded", i)
		}
	}
}

// loopClient is one TestServingLoop client.
func loopClient(ctx context.Context, c *pgx.Conn, n, rounds int) error {
	for r := 0; r < rounds; r++ {
		id := (n*rounds+r)%(loopKeys+20) + 1 // some beyond the table
		want := fmt.Sprintf("v%d", id)
		// The key as a literal in a simple query, as pgbench sends it
		// (pgx would quote a parameter), then as a prepared statement's
		// parameter.
		for _, prepared := range []bool{false, true} {
			var v string
			var err error
			if prepared {
				err = c.QueryRow(ctx, "SELECT v FROM kv WHERE id = $1", id).Scan(&v)
			} else {
				err = c.QueryRow(ctx, fmt.Sprintf("SELECT v FROM kv WHERE id = %d", id), pgx.QueryExecModeSimpleProtocol).Scan(&v)
			}
			mode := map[bool]string{false: "simple", true: "prepared"}[prepared]
			switch {
			case id > loopKeys && !errors.Is(err, pgx.ErrNoRows):
				return fmt.Errorf("absent key %d (%s): %q, %v", id, mode, v, err)
			case id <= loopKeys && (err != nil || v != want):
				return fmt.Errorf("key %d (%s): %q, %v; want %q", id, mode, v, err, want)
			}
		}
		switch r % 10 {
		case 3:
			rows, err := c.Query(ctx, "SELECT id FROM kv")
			if err != nil {
				return fmt.Errorf("scan: %w", err)
			}
			ids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
			if err != nil || len(ids) != loopKeys {
				return fmt.Errorf("scan: %d rows, %v; want %d", len(ids), err, loopKeys)
			}
		case 5:
			if _, err := c.Exec(ctx, "SET application_name = 'loop'"); err != nil {
				return fmt.Errorf("SET: %w", err)
			}
		case 7:
			var pe *pgconn.PgError
			if _, err := c.Exec(ctx, "SELECT nope FROM kv WHERE id = 1"); !errors.As(err, &pe) {
				return fmt.Errorf("a bad column: %v, want an error", err)
			}
			var v string
			if err := c.QueryRow(ctx, "SELECT v FROM kv WHERE id = 2").Scan(&v); err != nil || v != "v2" {
				return fmt.Errorf("after an error: %q, %v", v, err)
			}
		case 9:
			tx, err := c.Begin(ctx)
			if err != nil {
				return err
			}
			var v string
			if err := tx.QueryRow(ctx, "SELECT v FROM kv WHERE id = 3", pgx.QueryExecModeSimpleProtocol).Scan(&v); err != nil || v != "v3" {
				return fmt.Errorf("in a transaction block: %q, %v", v, err)
			}
			if err := tx.Commit(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestServingLoopSlowReader pipelines lookups of a 64 KiB value on one
// connection without reading the answers, more than the socket buffers
// hold, while another connection runs lookups: the loop must not wait
// for the slow reader (the other connection finishes first), and the
// slow reader then gets every answer, in order.
func TestServingLoopSlowReader(t *testing.T) {
	_, url := startLoopServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	other, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	big := strings.Repeat("x", 64<<10)
	if _, err := other.Exec(ctx, fmt.Sprintf("INSERT INTO kv (id, v) VALUES (%d, '%s')", loopKeys+1, big)); err != nil {
		t.Fatal(err)
	}
	for {
		var v string
		err := other.QueryRow(ctx, fmt.Sprintf("SELECT v FROM kv WHERE id = %d", loopKeys+1)).Scan(&v)
		if err == nil && v == big {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the big row never arrived: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	// A small receive buffer: the server's writes fill it, and its send
	// buffer, soon.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	nc, err := d.DialContext(ctx, "tcp", net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fe := pgproto3.NewFrontend(bufio.NewReader(nc), nc)
	fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber, Parameters: map[string]string{"user": "loop", "database": "db"}})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	readUntilReady := func() {
		t.Helper()
		for {
			m, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := m.(*pgproto3.ReadyForQuery); ok {
				return
			}
		}
	}
	readUntilReady()
	// The first lookup plans the template.
	fe.Send(&pgproto3.Query{String: "SELECT v FROM kv WHERE id = 1"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	readUntilReady()

	const n = 300 // 19 MiB of answers
	key := func(i int) int {
		if i%2 == 0 {
			return loopKeys + 1
		}
		return i%loopKeys + 1
	}
	var msgs []byte
	for i := 0; i < n; i++ {
		msgs, _ = (&pgproto3.Query{String: fmt.Sprintf("SELECT v FROM kv WHERE id = %d", key(i))}).Encode(msgs)
	}
	written := make(chan error, 1)
	go func() {
		_, err := nc.Write(msgs)
		written <- err
	}()
	// While nothing is read from the slow connection, the other one is
	// served.
	for i := 1; i <= 100; i++ {
		var v string
		if err := other.QueryRow(ctx, fmt.Sprintf("SELECT v FROM kv WHERE id = %d", i), pgx.QueryExecModeSimpleProtocol).Scan(&v); err != nil || v != fmt.Sprintf("v%d", i) {
			t.Fatalf("the other connection, key %d: %q, %v", i, v, err)
		}
	}
	for i := 0; i < n; i++ {
		want := fmt.Sprintf("v%d", key(i))
		if key(i) > loopKeys {
			want = big
		}
		for {
			m, err := fe.Receive()
			if err != nil {
				t.Fatalf("answer %d: %v", i, err)
			}
			if d, ok := m.(*pgproto3.DataRow); ok {
				if len(d.Values) != 1 || string(d.Values[0]) != want {
					t.Fatalf("answer %d: %d bytes, want %d", i, len(d.Values[0]), len(want))
				}
			}
			if e, ok := m.(*pgproto3.ErrorResponse); ok {
				t.Fatalf("answer %d: %s", i, e.Message)
			}
			if _, ok := m.(*pgproto3.ReadyForQuery); ok {
				break
			}
		}
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	nc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if m, err := fe.Receive(); err == nil || !errors.Is(err, io.EOF) && !isTimeout(err) {
		t.Fatalf("after the last answer: %T %v", m, err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestServingLoopIdleTimeout: with an idle timeout, a connection parked
// in the loop and sending nothing is closed with 57P05, while one whose
// lookups the loop answers throughout is not.
func TestServingLoopIdleTimeout(t *testing.T) {
	const idle = 400 * time.Millisecond
	_, url := startLoopServer(t, WithIdleTimeout(idle))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	busy, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close(ctx)
	quiet, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Close(ctx)
	var v string
	if err := quiet.QueryRow(ctx, "SELECT v FROM kv WHERE id = 1", pgx.QueryExecModeSimpleProtocol).Scan(&v); err != nil {
		t.Fatal(err)
	}
	// busy looks up keys for three idle timeouts, never pausing for
	// long: the loop answers them, and its goroutine's timer must see
	// that.
	for end := time.Now().Add(3 * idle); time.Now().Before(end); {
		if err := busy.QueryRow(ctx, "SELECT v FROM kv WHERE id = 2", pgx.QueryExecModeSimpleProtocol).Scan(&v); err != nil {
			t.Fatalf("the busy connection: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	var pe *pgconn.PgError
	err = quiet.QueryRow(ctx, "SELECT v FROM kv WHERE id = 1", pgx.QueryExecModeSimpleProtocol).Scan(&v)
	if err == nil {
		t.Fatal("the quiet connection outlived the idle timeout")
	}
	if errors.As(err, &pe) && pe.Code != codeIdleTimeout {
		t.Fatalf("the quiet connection: %v, want %s", err, codeIdleTimeout)
	}
}
