package exec

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/state"
)

// BenchmarkAggregate runs GROUP BY auction with COUNT and SUM end to end
// through an in-process broker, with RocksDB state, a changelog and
// exactly-once commits, over 1,000,000 bids spread over 100 to 1,000,000
// groups. It reports records/s and heap allocations per record of the
// whole query (client, broker and all):
//
//	go test ./exec -run '^$' -bench Aggregate -benchtime 1x
func BenchmarkAggregate(b *testing.B) {
	const records = 1_000_000
	for _, groups := range []int{100, 10_000, 1_000_000} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			topo := aggTopology(b, "app", "AUCTION")
			_, brokers := startAggCluster(b, topo)
			cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("bids"), kgo.ProducerBatchMaxBytes(1<<20))
			if err != nil {
				b.Fatal(err)
			}
			recs := make([]*kgo.Record, 0, 100_000)
			for i := 0; i < records; i++ {
				recs = append(recs, &kgo.Record{
					Key:   binary.BigEndian.AppendUint64(nil, uint64(i%groups)),
					Value: fmt.Appendf(nil, `{"bidder":%d,"price":%d}`, i%50, i%10),
				})
				if len(recs) == cap(recs) {
					if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
						b.Fatal(err)
					}
					recs = recs[:0]
				}
			}
			cl.Close()
			res := state.NewRocksResources(64<<20, 64<<20, 0)
			defer res.Close()
			for i := 0; i < b.N; i++ {
				var before, after runtime.MemStats
				runtime.ReadMemStats(&before)
				began := time.Now()
				q, err := Start("CTAS_OUT_1", topo, Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: b.TempDir(), RocksResources: res})
				if err != nil {
					b.Fatal(err)
				}
				waitCommitted(b, ctx, brokers, "app", "bids")
				took := time.Since(began)
				runtime.ReadMemStats(&after)
				q.Stop()
				b.ReportMetric(records/took.Seconds(), "records/s")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/records, "allocs/record")
			}
		})
	}
}

// BenchmarkAggregateUpdate measures the aggregate operator alone: one
// record's update of its group (state read, accumulators, state write,
// changelog record, output row) over 100 groups, the store being RocksDB
// behind the transaction's overlay, committed every 10,000 records.
func BenchmarkAggregateUpdate(b *testing.B) {
	task := newAggTask(b, func(r *kgo.Record) { r.Offset = 1 })
	agg, store, out := task.agg, task.store, task.out
	recs := make([]*kgo.Record, 100)
	for i := range recs {
		recs[i] = &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(i)), Value: []byte(`{"bidder":7,"price":3}`)}
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := task.feed(recs[i%len(recs)]); err != nil {
			b.Fatal(err)
		}
		if i%10000 == 9999 {
			if err := agg.Flush(); err != nil {
				b.Fatal(err)
			}
			out.flush()
			if err := store.commit(); err != nil {
				b.Fatal(err)
			}
			out.reset()
		}
	}
}
