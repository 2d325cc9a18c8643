package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// BenchmarkExecutePull measures pull queries run with Execute (parsed,
// bound and planned per run) on a materialized table of 1,000 keys: a
// point lookup and a scan with a filter.
//
//	go test ./engine -run '^$' -bench ExecutePull -benchmem
func BenchmarkExecutePull(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer eng.Close()
	s := engine.NewSession()
	if _, err := eng.Execute(ctx, s, "CREATE TABLE kv (id INT PRIMARY KEY, v VARCHAR, n BIGINT) WITH (KAFKA_TOPIC='kv', VALUE_FORMAT='JSON', PARTITIONS=2)", discard{}); err != nil {
		b.Fatal(err)
	}
	const keys = 1000
	var recs []*kgo.Record
	for i := 0; i < keys; i++ {
		recs = append(recs, &kgo.Record{Key: intKey(i), Value: fmt.Appendf(nil, `{"V":"v%d","N":%d}`, i, i)})
	}
	produce(b, ctx, brokers, "kv", recs...)
	for {
		var c collect
		if _, err := eng.Execute(ctx, s, "SELECT id FROM kv WHERE id = 999", &c); err == nil && len(c.rows) == 1 {
			break
		}
		if ctx.Err() != nil {
			b.Fatal(ctx.Err())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, stmt := range []string{"SELECT v, n FROM kv WHERE id = 7", "SELECT id FROM kv WHERE n > 990"} {
		b.Run(stmt, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := eng.Execute(ctx, s, stmt, discard{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
