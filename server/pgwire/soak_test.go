package pgwire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sqlstreams/sqlstreams/broker"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// TestSoak runs 200 clients at once against the real engine and embedded
// broker, in this process so that goroutines and heap can be counted: each
// client loops over health checks, engine statements, pg_catalog queries,
// inserts with parameters, push queries that end by LIMIT, push queries
// cancelled by a CancelRequest or by the client hanging up, and
// reconnects. Afterwards every connection must be gone, the goroutines back
// to where they were and the heap not grown.
//
// It runs for 3 seconds by default; for the full minute:
//
//	PGWIRE_SOAK=1m go test -run TestSoak -v ./server/pgwire/
//
// PGWIRE_SOAK_CLIENTS changes the number of clients (default 200).
func TestSoak(t *testing.T) {
	dur := 3 * time.Second
	if v := os.Getenv("PGWIRE_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("PGWIRE_SOAK: %v", err)
		}
		dur = d
	}
	clients := 200
	if v := os.Getenv("PGWIRE_SOAK_CLIENTS"); v != "" {
		clients, _ = strconv.Atoi(v)
	}
	if testing.Short() {
		t.Skip("soak test skipped in -short mode")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	dir := t.TempDir()
	b, err := broker.Start(ctx, broker.Config{Addr: "127.0.0.1:0", DataDir: filepath.Join(dir, "kafka"), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(b.Addr()), InstanceID: "soak", Logger: log, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := New(eng, WithLogger(log), WithMaxConnections(clients+50))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	url := "postgres://soak@" + ln.Addr().String() + "/db?sslmode=disable"

	setup, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"CREATE STREAM SOAK (ID INT KEY, V STRING) WITH (KAFKA_TOPIC='soak', VALUE_FORMAT='JSON', PARTITIONS=2)",
		"INSERT INTO SOAK (ID, V) VALUES (1, 'one')",
		"INSERT INTO SOAK (ID, V) VALUES (2, 'two')",
		"CREATE TABLE SOAKT (ID INT PRIMARY KEY, V STRING) WITH (KAFKA_TOPIC='soakt', VALUE_FORMAT='JSON', PARTITIONS=2)",
		"INSERT INTO SOAKT (ID, V) VALUES (1, 'one'), (2, 'two')",
	} {
		if _, err := setup.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	// The clients' pull queries need the table materialized.
	for deadline := time.Now().Add(30 * time.Second); ; {
		var v string
		if err := setup.QueryRow(ctx, "SELECT V FROM SOAKT WHERE ID = 2").Scan(&v); err == nil && v == "two" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("table SOAKT never answered its pull query")
		}
		time.Sleep(20 * time.Millisecond)
	}
	setup.Close(ctx)

	var ops, pushes, cancels atomic.Int64
	var failures sync.Map
	run := func(d time.Duration) {
		deadline := time.Now().Add(d)
		var wg sync.WaitGroup
		for i := 0; i < clients; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				if err := soakClient(ctx, url, i, deadline, &ops, &pushes, &cancels); err != nil {
					failures.Store(i, err)
				}
			}(i)
		}
		wg.Wait()
	}
	settle := func() (int, uint64) {
		if !testserver.WaitFor(20*time.Second, func() bool { return srv.Stats().Connections == 0 }) {
			t.Errorf("%d connections still open", srv.Stats().Connections)
		}
		var ms runtime.MemStats
		var g int
		for i := 0; i < 20; i++ {
			runtime.GC()
			time.Sleep(100 * time.Millisecond)
			g = runtime.NumGoroutine()
		}
		runtime.ReadMemStats(&ms)
		return g, ms.HeapAlloc
	}

	// A warm-up fills caches and pools (kgo, the engine, pgx's statement
	// cache is per connection), then the measured run.
	run(time.Second)
	g0, h0 := settle()
	ops.Store(0)
	pushes.Store(0)
	cancels.Store(0)
	start := time.Now()
	run(dur)
	elapsed := time.Since(start)
	g1, h1 := settle()

	failures.Range(func(k, v any) bool {
		t.Errorf("client %v: %v", k, v)
		return true
	})
	t.Logf("%d clients for %v: %d statements (%.0f/s), %d push queries, %d cancelled; goroutines %d -> %d, heap %.1f -> %.1f MiB",
		clients, elapsed.Round(time.Millisecond), ops.Load(), float64(ops.Load())/elapsed.Seconds(), pushes.Load(), cancels.Load(),
		g0, g1, float64(h0)/(1<<20), float64(h1)/(1<<20))
	if ops.Load() < int64(clients) {
		t.Errorf("only %d statements ran", ops.Load())
	}
	if g1 > g0+20 {
		t.Errorf("goroutines grew from %d to %d", g0, g1)
		buf := make([]byte, 1<<20)
		t.Logf("%s", buf[:runtime.Stack(buf, true)])
	}
	if h1 > h0*3/2+32<<20 {
		t.Errorf("heap grew from %d to %d bytes", h0, h1)
	}
}

// soakClient is one client of TestSoak.
func soakClient(ctx context.Context, url string, i int, deadline time.Time, ops, pushes, cancels *atomic.Int64) error {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	for n := 0; time.Now().Before(deadline); n++ {
		if conn == nil || n%25 == 0 {
			if conn != nil {
				conn.Close(ctx)
			}
			var err error
			if conn, err = pgx.Connect(ctx, url); err != nil {
				return fmt.Errorf("connect: %w", err)
			}
			if _, err := conn.Exec(ctx, "SET 'auto.offset.reset'='earliest'"); err != nil {
				return err
			}
		}
		var err error
		switch (n + i) % 10 {
		case 0:
			var one int
			err = conn.QueryRow(ctx, "SELECT 1").Scan(&one)
		case 1:
			_, err = conn.Exec(ctx, "SHOW STREAMS")
		case 2:
			var name string
			err = conn.QueryRow(ctx, "SELECT c.relname FROM pg_catalog.pg_class c WHERE c.relname = $1", "SOAK").Scan(&name)
		case 3:
			_, err = conn.Exec(ctx, "INSERT INTO SOAK (ID, V) VALUES ($1, $2)", 100+i, "soak")
		case 4:
			var v string
			pushes.Add(1)
			err = conn.QueryRow(ctx, "SELECT V FROM SOAK WHERE ID = $1 EMIT CHANGES LIMIT 1", 1).Scan(&v)
		case 5:
			// A push query that waits for a row that never comes, stopped
			// by a CancelRequest.
			pushes.Add(1)
			err = cancelledPush(ctx, conn)
			if err == nil {
				cancels.Add(1)
			}
		case 6:
			_, err = conn.Exec(ctx, "SELECT current_setting('application_name'), version()", pgx.QueryExecModeSimpleProtocol)
		case 7:
			if n%16 == 7 {
				// Hang up in the middle of a push query.
				pushes.Add(1)
				qctx, qcancel := context.WithTimeout(ctx, 30*time.Millisecond)
				rows, qerr := conn.Query(qctx, "SELECT V FROM SOAK WHERE ID = -1 EMIT CHANGES", pgx.QueryExecModeSimpleProtocol)
				if qerr == nil {
					for rows.Next() {
					}
					rows.Close()
				}
				qcancel()
				conn.Close(ctx)
				conn = nil
				cancels.Add(1)
			} else {
				_, err = conn.Exec(ctx, "BEGIN; COMMIT")
			}
		case 8:
			// A pull query: a point lookup on the materialized table.
			var v string
			if err = conn.QueryRow(ctx, "SELECT V FROM SOAKT WHERE ID = $1", 1).Scan(&v); err == nil && v != "one" {
				err = fmt.Errorf("pull query: got %q", v)
			}
		case 9:
			// A pull query scanning the table with a WHERE.
			var id int
			if err = conn.QueryRow(ctx, "SELECT ID FROM SOAKT WHERE V = 'two' LIMIT 1", pgx.QueryExecModeSimpleProtocol).Scan(&id); err == nil && id != 2 {
				err = fmt.Errorf("pull scan: got %d", id)
			}
		}
		if err != nil {
			return fmt.Errorf("op %d: %w", (n+i)%10, err)
		}
		ops.Add(1)
	}
	return nil
}

// cancelledPush starts a push query with no rows to come, cancels it with
// a CancelRequest and checks that it failed with 57014.
func cancelledPush(ctx context.Context, conn *pgx.Conn) error {
	done := make(chan error, 1)
	go func() {
		_, err := conn.Exec(ctx, "SELECT V FROM SOAK WHERE ID = -1 EMIT CHANGES", pgx.QueryExecModeSimpleProtocol)
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	for {
		if err := conn.PgConn().CancelRequest(ctx); err != nil {
			return err
		}
		select {
		case err := <-done:
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "57014" {
				return fmt.Errorf("cancelled push query: %v", err)
			}
			return nil
		case <-time.After(200 * time.Millisecond):
			// The cancel arrived before the statement started; again.
		}
	}
}
