package broker

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkProduce measures produce throughput into a broker with a data
// directory, per fsync mode: one idempotent franz-go client, 100-byte
// records, 3 partitions. Run with a fixed count, for example
//
//	go test -run '^$' -bench Produce -benchtime 300000x ./broker/
func BenchmarkProduce(b *testing.B) {
	for _, mode := range []Sync{SyncNever, SyncInterval, SyncAlways} {
		b.Run(string(mode), func(b *testing.B) {
			br := startBroker(b, Config{Addr: "127.0.0.1:0", DataDir: b.TempDir(), Sync: mode, Logger: discardLogger()})
			defer br.Close()
			createTopic(b, br.Addr(), "bench", 3)
			cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()), kgo.DefaultProduceTopic("bench"))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			value := make([]byte, 100)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var failed error
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				cl.Produce(ctx, &kgo.Record{Key: []byte(strconv.Itoa(i % 1000)), Value: value}, func(_ *kgo.Record, err error) {
					if err != nil && failed == nil {
						failed = err
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
			if failed != nil {
				b.Fatal(failed)
			}
		})
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// BenchmarkProduceOneByOne is the latency-bound case: one record per
// request, each waited for (ProduceSync), so every record is its own batch
// and, with SyncAlways, its own fsync.
//
//	go test -run '^$' -bench ProduceOneByOne -benchtime 3000x ./broker/
func BenchmarkProduceOneByOne(b *testing.B) {
	for _, mode := range []Sync{SyncNever, SyncInterval, SyncAlways} {
		b.Run(string(mode), func(b *testing.B) {
			br := startBroker(b, Config{Addr: "127.0.0.1:0", DataDir: b.TempDir(), Sync: mode, Logger: discardLogger()})
			defer br.Close()
			createTopic(b, br.Addr(), "bench", 1)
			cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()), kgo.DefaultProduceTopic("bench"))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			value := make([]byte, 100)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				if err := cl.ProduceSync(ctx, &kgo.Record{Value: value}).FirstErr(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
		})
	}
}
