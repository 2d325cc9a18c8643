package exec

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/physical"
)

// TestStandbyReadableOnceCaughtUp: a standby copy answers pull queries
// only once it has read its changelog up to where it stood when the
// copy opened — never while it holds only part of the store, whatever
// lag a query allows — and a copy that has read everything is 0 offsets
// behind, its changelog's transaction markers counted.
func TestStandbyReadableOnceCaughtUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	topo := aggTopology(t, "standby-readable", "AUCTION")
	_, brokers := startAggCluster(t, topo)
	var store, changelog string
	sub := -1
	for _, st := range topo.SubTopologies {
		for _, n := range st.Nodes {
			for _, spec := range physical.StoresOf(n) {
				store, changelog, sub = spec.Name, spec.Changelog, st.ID
			}
		}
	}
	if sub < 0 {
		t.Fatal("the topology keeps no store")
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("standby-test"),
		kgo.DefaultProduceTopic(changelog), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	keys := 0
	// write appends n keys to partition 0 of the changelog, in
	// transactions of 1,000 records.
	write := func(n int) {
		for n > 0 {
			batch := min(n, 1000)
			if err := cl.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			recs := make([]*kgo.Record, 0, batch)
			for range batch {
				recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%06d", keys), Value: []byte("v"), Partition: 0})
				keys++
			}
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				t.Fatal(err)
			}
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
			n -= batch
		}
	}
	write(30_000)

	cfg := Config{Kafka: kafka.Plain(brokers...), StateDir: t.TempDir()}
	cfg.defaults()
	q := &Query{topo: topo, cfg: cfg, log: cfg.Logger}
	s := newStandbyRunner(q, 0)
	s.set([]TaskID{{Sub: sub, Partition: 0}})
	defer s.stop()

	count := func(p Partition) int {
		it, err := p.Store.Range(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer it.Close()
		n := 0
		for it.Next() {
			n++
		}
		return n
	}
	// Until it is readable, the copy must not answer with fewer keys.
	for {
		if parts := q.StandbyStores(store, []int32{0}, -1); len(parts) == 1 {
			if n := count(parts[0]); n != keys {
				t.Fatalf("the standby copy was readable holding %d of %d keys", n, keys)
			}
			break
		}
		if ctx.Err() != nil {
			lag, caughtUp, ok := q.StandbyPartition(store, 0)
			t.Fatalf("the standby copy never became readable: kept %v, lag %d, caught up %v", ok, lag, caughtUp)
		}
		time.Sleep(time.Millisecond)
	}
	// More records: the copy follows, and once it has read them (their
	// transaction markers too) it is exactly 0 behind.
	write(5_000)
	for {
		if parts := q.StandbyStores(store, []int32{0}, 0); len(parts) == 1 && count(parts[0]) == keys {
			break
		}
		if ctx.Err() != nil {
			lag, caughtUp, ok := q.StandbyPartition(store, 0)
			t.Fatalf("the standby copy never read the %d keys 0 offsets behind: kept %v, lag %d, caught up %v", keys, ok, lag, caughtUp)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
