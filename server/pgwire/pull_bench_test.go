package pgwire

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/broker"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// BenchmarkPullQueries measures point-lookup pull queries over pgwire (pgx,
// extended protocol, a prepared statement with $1) on a materialized table
// of 10,000 keys, with 1, 16 and 64 concurrent clients, reporting
// queries/s and p50/p99 latency:
//
//	go test ./server/pgwire -run '^$' -bench PullQueries -benchtime 5000x
func BenchmarkPullQueries(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	dir := b.TempDir()
	br, err := broker.Start(ctx, broker.Config{Addr: "127.0.0.1:0", DataDir: filepath.Join(dir, "kafka"), Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(br.Addr()), InstanceID: "bench", Logger: log, StateDir: filepath.Join(dir, "state")})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	srv := New(eng, WithLogger(log), WithMaxConnections(200))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Close()
	url := "postgres://bench@" + ln.Addr().String() + "/db?sslmode=disable"

	setup, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := setup.Exec(ctx, "CREATE TABLE users (userid VARCHAR PRIMARY KEY, region VARCHAR, level INT) WITH (KAFKA_TOPIC='users', VALUE_FORMAT='JSON', PARTITIONS=4)"); err != nil {
		b.Fatal(err)
	}
	const keys = 10_000
	kc, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()), kgo.DefaultProduceTopic("users"))
	if err != nil {
		b.Fatal(err)
	}
	var recs []*kgo.Record
	for i := 0; i < keys; i++ {
		recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprintf("u%d", i)), Value: fmt.Appendf(nil, `{"REGION":"r%d","LEVEL":%d}`, i%7, i)})
	}
	if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	kc.Close()
	// Wait until the table answers for every key: each partition's task
	// catches up on its own, so the last key written says nothing of the
	// other partitions.
	deadline := time.Now().Add(time.Minute)
	for i := 0; i < keys; {
		var level int
		err := setup.QueryRow(ctx, "SELECT level FROM users WHERE userid = $1", fmt.Sprintf("u%d", i)).Scan(&level)
		if err == nil && level == i {
			i++
			continue
		}
		if time.Now().After(deadline) {
			b.Fatalf("the table never filled (key u%d: %v)", i, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	setup.Close(ctx)

	for _, clients := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			b.ReportAllocs() // the client's (pgx) and the server's together
			conns := make([]*pgx.Conn, clients)
			for i := range conns {
				if conns[i], err = pgx.Connect(ctx, url); err != nil {
					b.Fatal(err)
				}
				defer conns[i].Close(ctx)
			}
			lat := make([][]time.Duration, clients)
			per := b.N/clients + 1
			b.ResetTimer()
			began := time.Now()
			var wg sync.WaitGroup
			for c := range conns {
				wg.Add(1)
				go func(c int) {
					defer wg.Done()
					for i := 0; i < per; i++ {
						k := fmt.Sprintf("u%d", (c*7919+i*31)%keys)
						t0 := time.Now()
						var level int
						if err := conns[c].QueryRow(ctx, "SELECT level FROM users WHERE userid = $1", k).Scan(&level); err != nil {
							b.Errorf("query %d, key %s: %v", i, k, err)
							return
						}
						lat[c] = append(lat[c], time.Since(t0))
					}
				}(c)
			}
			wg.Wait()
			took := time.Since(began)
			b.StopTimer()
			var all []time.Duration
			for _, l := range lat {
				all = append(all, l...)
			}
			sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
			if len(all) == 0 {
				return
			}
			b.ReportMetric(float64(len(all))/took.Seconds(), "queries/s")
			b.ReportMetric(float64(all[len(all)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
		})
	}
}
