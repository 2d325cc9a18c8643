package main

// The idle scenario: what a server burns while nothing happens. An
// engine with -idle-queries persistent queries (half stateless, half
// aggregations) over a topic that receives nothing, then a pgwire
// server over it with 1 and with -idle-conns connections that ran one
// statement each and wait for the next, on the default I/O path and on
// the plain one (pgwire.WithPlainIO). Each phase lasts -idle-seconds
// (after -idle-settle seconds; the queries-only phase is measured first
// and last) and reports the CPU seconds per minute of this process
// (getrusage(RUSAGE_SELF): the engine, its queries' stream threads and
// the pgwire server) and of the broker's process (/proc/<pid>/stat).

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/server/pgwire"
)

var (
	idleQueries = flag.Int("idle-queries", 10, "idle scenario: persistent queries, half stateless, half aggregations")
	idleConns   = flag.Int("idle-conns", 50, "idle scenario: idle pgwire connections of the many-connections phase")
	idleSeconds = flag.Int("idle-seconds", 30, "idle scenario: length of each measured phase")
	idleSettle  = flag.Int("idle-settle", 60, "idle scenario: seconds the queries run before the first phase (their groups form, their stores open)")
)

// idlePhase is one measured phase of the idle scenario.
type idlePhase struct {
	name              string
	server, brokerCPU float64 // CPU seconds per minute
}

func runIdle() error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "sqlstreams-bench-idle-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b, err := startBroker(ctx, filepath.Join(dir, "kafka"))
	if err != nil {
		return err
	}
	defer b.Close()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(b.addr), ServiceID: "svc_idle", InstanceID: "bench",
		StateDir: filepath.Join(dir, "state")})
	if err != nil {
		return err
	}
	defer eng.Close()
	exec := func(stmt string) error {
		if _, err := eng.Execute(ctx, engine.NewSession(), stmt, nopWriter{}); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
		return nil
	}
	if err := exec("CREATE STREAM ev (k VARCHAR KEY, v BIGINT) WITH (KAFKA_TOPIC='ev', VALUE_FORMAT='JSON', PARTITIONS=4)"); err != nil {
		return err
	}
	if err := exec("CREATE TABLE kv (id INT PRIMARY KEY, v VARCHAR) WITH (KAFKA_TOPIC='kv', VALUE_FORMAT='JSON', PARTITIONS=4)"); err != nil {
		return err
	}
	for i := range *idleQueries {
		stmt := fmt.Sprintf("CREATE STREAM s%d AS SELECT k, v * 2 AS v2 FROM ev WHERE v > %d", i, i)
		if i%2 == 1 {
			stmt = fmt.Sprintf("CREATE TABLE a%d AS SELECT k, COUNT(*) AS n, SUM(v) AS total FROM ev GROUP BY k", i)
		}
		if err := exec(stmt); err != nil {
			return err
		}
	}
	logf("idle: %d queries created; letting them settle", *idleQueries+1)
	time.Sleep(time.Duration(*idleSettle) * time.Second)

	window := time.Duration(*idleSeconds) * time.Second
	measure := func(name string) idlePhase {
		c0, b0, t0 := cpuTime(), b.cpu(), time.Now()
		time.Sleep(window)
		c1, b1, wall := cpuTime(), b.cpu(), time.Since(t0)
		perMin := func(d time.Duration) float64 { return round3(d.Seconds() * 60 / wall.Seconds()) }
		p := idlePhase{name: name, server: perMin(c1 - c0), brokerCPU: perMin(b1 - b0)}
		logf("idle: %s: server %.3f s/min, broker %.3f s/min", name, p.server, p.brokerCPU)
		return p
	}
	baseline := fmt.Sprintf("%d queries, no connection", *idleQueries+1)
	phases := []idlePhase{measure(baseline)}
	for _, path := range []struct {
		name string
		opts []pgwire.Option
	}{{"default (Linux: spin reader, lone socket out of the poller, serving loops)", nil}, {"plain (WithPlainIO)", []pgwire.Option{pgwire.WithPlainIO()}}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		srv := pgwire.New(eng, append([]pgwire.Option{pgwire.WithLogger(slog.Default()), pgwire.WithMaxConnections(1000)}, path.opts...)...)
		go srv.Serve(ln)
		url := "postgres://bench@" + ln.Addr().String() + "/db?sslmode=disable"
		var conns []*pgx.Conn
		open := func(n int) error {
			for len(conns) < n {
				c, err := pgx.Connect(ctx, url)
				if err != nil {
					return err
				}
				conns = append(conns, c)
				// One pull query each, so that the connection has run
				// a statement and waits for the next, as a client's
				// pool does.
				var v string
				if err := c.QueryRow(ctx, "SELECT v FROM kv WHERE id = 1").Scan(&v); err != nil && err != pgx.ErrNoRows {
					return err
				}
			}
			return nil
		}
		if err := open(1); err != nil {
			return err
		}
		phases = append(phases, measure(path.name+", 1 idle connection"))
		if err := open(*idleConns); err != nil {
			return err
		}
		phases = append(phases, measure(fmt.Sprintf("%s, %d idle connections", path.name, *idleConns)))
		for _, c := range conns {
			c.Close(ctx)
		}
		srv.Close()
	}
	// The same phase again at the end: the queries' own idle cost, to
	// tell a trend from the connections' cost.
	phases = append(phases, measure(baseline+" (again)"))
	fmt.Printf("| phase | server CPU s/min | broker CPU s/min |\n|---|---:|---:|\n")
	for _, p := range phases {
		fmt.Printf("| %s | %.3f | %.3f |\n", p.name, p.server, p.brokerCPU)
	}
	fmt.Printf("\nCPU seconds per minute of wall time over %d s per phase: the bench process (engine, %d persistent queries with their stream threads, the pgwire server) and the broker's child process; nothing is produced or queried during a phase.\n", *idleSeconds, *idleQueries+1)
	return nil
}
