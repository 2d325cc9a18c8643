package exec

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// aggTopology is CREATE TABLE out AS SELECT <group>, COUNT(*), SUM(price)
// FROM bids GROUP BY <group>: by AUCTION (the input key: one
// sub-topology) or by BIDDER (a repartition and two).
func aggTopology(t testing.TB, appID, group string) *physical.Topology {
	return windowedAggTopology(t, appID, group, nil)
}

// windowedAggTopology is aggTopology per window of w (nil: none), with
// the window bounds after the group key in the aggregate's rows.
func windowedAggTopology(t testing.TB, appID, group string, w *planner.WindowSpec) *physical.Topology {
	src := &catalog.Source{Name: "BIDS", Kind: catalog.Stream, Topic: "bids", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
		Partitions: 3, Schema: types.Schema{Columns: bidSchema.Columns[:5]}}
	scan := planner.NewScan(src)
	in := scan.Schema()
	col := func(name string) *expr.Column {
		i := in.Index(name)
		return &expr.Column{Index: i, Name: name, T: in.Columns[i].Type}
	}
	count, _ := expr.LookupAggregate("COUNT")
	sum, _ := expr.LookupAggregate("SUM")
	agg, err := planner.NewWindowedAggregate(scan, []expr.Expr{col(group)}, []string{group}, []*planner.AggCall{
		{Fn: count, T: types.BigintType},
		{Fn: sum, Args: []expr.Expr{col("PRICE")}, T: types.BigintType},
	}, w)
	if err != nil {
		t.Fatal(err)
	}
	at := 1 // the first aggregate's column
	if w != nil {
		at += len(types.WindowColumns)
	}
	proj, err := planner.NewProject(agg, []expr.Expr{
		&expr.Column{Index: 0, Name: group, T: types.BigintType},
		&expr.Column{Index: at, Name: "KSQL_AGG_0", T: types.BigintType},
		&expr.Column{Index: at + 1, Name: "KSQL_AGG_1", T: types.BigintType},
	}, []string{group, "N", "TOTAL"})
	if err != nil {
		t.Fatal(err)
	}
	target := &catalog.Source{Name: "OUT", Kind: catalog.Table, Topic: "out", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Schema: proj.Schema()}
	if w != nil {
		target.WindowType, target.WindowSizeMs = w.Type, w.SizeMs
	}
	topo, err := physical.Build(appID, &planner.Sink{Input: proj, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// startAggCluster makes a broker with the bids and out topics and the
// topology's internal topics.
func startAggCluster(t testing.TB, topo *physical.Topology) (*kfake.Cluster, []string) {
	c := bidCluster(t)
	brokers := c.ListenAddrs()
	cl, _ := kgo.NewClient(kgo.SeedBrokers(brokers...))
	defer cl.Close()
	for _, it := range topo.InternalTopics() {
		if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 3, 1, nil, it.Name); err != nil {
			t.Fatal(err)
		}
	}
	return c, brokers
}

// produceAggBids writes bids from..to: bidder i%50, auction i%17, price i%10.
func produceAggBids(t testing.TB, ctx context.Context, brokers []string, from, to int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("bids"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, to-from)
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{
			Key:   binary.BigEndian.AppendUint64(nil, uint64(i%17)),
			Value: fmt.Appendf(nil, `{"bidder":%d,"price":%d}`, i%50, i%10),
		})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// lastValues reads "out" read_committed and keeps the last value per key.
func lastValues(t testing.TB, ctx context.Context, brokers []string) map[int64][2]int64 {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int64][2]int64{}
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if fs.Empty() {
			return got
		}
		fs.EachRecord(func(r *kgo.Record) {
			var n, total int64
			fmt.Sscanf(string(r.Value), `{"N":%d,"TOTAL":%d}`, &n, &total)
			got[int64(binary.BigEndian.Uint64(r.Key))] = [2]int64{n, total}
		})
	}
}

// TestAggregateExactlyOnceUnderFaults runs GROUP BY with and without a
// repartition while the broker fails some Produce, EndTxn and
// TxnOffsetCommit requests, then restarts the query (its stores restore
// from their changelog); the result topic's last value per group must
// equal the GROUP BY computed here. It runs with one and with two stream
// threads.
func TestAggregateExactlyOnceUnderFaults(t *testing.T) {
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) { testAggregateExactlyOnceUnderFaults(t, threads) })
	}
}

func testAggregateExactlyOnceUnderFaults(t *testing.T, threads int) {
	for _, group := range []string{"AUCTION", "BIDDER"} {
		for _, fault := range []struct {
			name string
			key  kmsg.Key
			err  int16
		}{
			{"produce", kmsg.Produce, kerr.InvalidRecord.Code},
			{"end-txn", kmsg.EndTxn, kerr.CoordinatorNotAvailable.Code},
			{"txn-offset-commit", kmsg.TxnOffsetCommit, kerr.CoordinatorLoadInProgress.Code},
		} {
			t.Run(group+"/"+fault.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				defer cancel()
				topo := aggTopology(t, "app", group)
				c, brokers := startAggCluster(t, topo)
				injected := injectFaults(c, fault.key, fault.err, 4, 3)
				cfg := Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", Threads: threads, CommitInterval: 20 * time.Millisecond, StateDir: t.TempDir()}
				const n, batches = 6000, 6
				q, err := Start("CTAS_OUT_1", topo, cfg)
				if err != nil {
					t.Fatal(err)
				}
				for b := 0; b < batches; b++ {
					if b == batches/2 {
						q.Stop() // a restart in the middle: stores restore from changelogs
						if q, err = Start("CTAS_OUT_1", topo, cfg); err != nil {
							t.Fatal(err)
						}
					}
					produceAggBids(t, ctx, brokers, b*n/batches, (b+1)*n/batches)
					waitCommitted(t, ctx, brokers, "app", "bids")
				}
				want := map[int64][2]int64{}
				for i := 0; i < n; i++ {
					g := int64(i % 17)
					if group == "BIDDER" {
						g = int64(i % 50)
					}
					w := want[g]
					want[g] = [2]int64{w[0] + 1, w[1] + int64(i%10)}
				}
				for {
					got := lastValues(t, ctx, brokers)
					if fmt.Sprint(got) == fmt.Sprint(want) {
						break
					}
					if ctx.Err() != nil {
						t.Fatalf("result %v\nwant %v", got, want)
					}
					time.Sleep(100 * time.Millisecond)
				}
				q.Stop()
				if injected.Load() == 0 {
					t.Fatal("no fault was injected")
				}
				t.Logf("injected %d faults; stats %+v", injected.Load(), q.Status().Stats)
			})
		}
	}
}

// TestAggregateWritesGroupsAtCommit checks that a transaction's changes
// to a group reach the store and the changelog once, with the group's
// latest state, while every change still emits a row; and that an abort
// forgets them.
// aggTask is one task of aggTopology (GROUP BY auction) without a
// broker, built by the task manager: its aggregate, its store (RocksDB
// behind the overlay) and its outbox, whose flushed records go to send.
type aggTask struct {
	*testTask
	agg   *aggregateOp
	store *taskStore
}

func newAggTask(t testing.TB, send func(*kgo.Record)) *aggTask {
	return newWindowedAggTask(t, nil, send)
}

// newWindowedAggTask is newAggTask per window of w (nil: none).
func newWindowedAggTask(t testing.TB, w *planner.WindowSpec, send func(*kgo.Record)) *aggTask {
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	t.Cleanup(func() { res.Close() })
	tt := newTestTask(t, windowedAggTopology(t, "app", "AUCTION", w), 0, Config{StateDir: t.TempDir(), RocksResources: res}, send)
	return &aggTask{testTask: tt, agg: proc[*physical.Aggregate, *aggregateOp](tt), store: tt.stores[0]}
}

func TestAggregateWritesGroupsAtCommit(t *testing.T) {
	var sent []*kgo.Record
	task := newAggTask(t, func(r *kgo.Record) { c := *r; sent = append(sent, &c) })
	agg, store, out := task.agg, task.store, task.out
	feed := func(keys ...uint64) {
		t.Helper()
		for i, k := range keys {
			r := &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, k), Value: []byte(`{"bidder":1,"price":10}`), Timestamp: time.UnixMilli(int64(1000 + i))}
			if err := task.feed(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	count := func(topic string) (n int) {
		for _, r := range sent {
			if r.Topic == topic {
				n++
			}
		}
		return n
	}
	feed(1, 1, 2, 1)
	if err := agg.Flush(); err != nil {
		t.Fatal(err)
	}
	out.flush()
	if got := count(agg.changelog); got != 2 {
		t.Fatalf("changelog records: %d, want one per group (2)", got)
	}
	if got := len(sent) - count(agg.changelog); got != 4 {
		t.Fatalf("output records: %d, want one per input (4)", got)
	}
	if store.ov.Len() != 2 {
		t.Fatalf("pending store writes: %d, want 2", store.ov.Len())
	}
	if err := store.commit(); err != nil {
		t.Fatal(err)
	}
	// Group 1's state: its count is 3, and it carries the time of its
	// last change.
	v, err := store.base.Get(binary.BigEndian.AppendUint64(nil, 1))
	if err != nil || len(v) < tsLen || binary.BigEndian.Uint64(v) != 1003 {
		t.Fatalf("stored state of group 1: %x (%v)", v, err)
	}
	for _, r := range sent {
		if r.Topic == agg.changelog && binary.BigEndian.Uint64(r.Key) == 1 && string(r.Value) != string(v) {
			t.Errorf("changelog record of group 1: %x, want the stored state %x", r.Value, v)
		}
	}
	// An aborted transaction's changes are forgotten: the next change
	// of group 1 starts from its committed state.
	feed(1, 1)
	agg.Abort()
	store.abort()
	out.reset()
	sent = sent[:0]
	feed(1)
	out.flush()
	if want := `{"N":4,"TOTAL":40}`; len(sent) != 1 || string(sent[0].Value) != want {
		t.Errorf("after the abort: %d records, first %s; want %s", len(sent), sent[0].Value, want)
	}
}

// TestTaskStoresShareValueCache checks that a server's task stores split
// its value-cache budget: each open store's overlay takes a share, and
// closing or wiping a store gives its share back.
func TestTaskStoresShareValueCache(t *testing.T) {
	res := state.NewRocksResources(8<<20, 8<<20, 3<<20)
	defer res.Close()
	var stores []*taskStore
	for p := range 3 {
		s, err := openTaskStore(t.TempDir(), "AGGREGATE", "changelog", int32(p), res, false)
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	if got := res.ValueCache().Share(); got != 1<<20 {
		t.Fatalf("share with 3 stores: %d, want %d", got, 1<<20)
	}
	if err := stores[0].wipe(res); err != nil { // reopens: still 3
		t.Fatal(err)
	}
	if got := res.ValueCache().Share(); got != 1<<20 {
		t.Fatalf("share after a wipe: %d, want %d", got, 1<<20)
	}
	for _, s := range stores[1:] {
		if err := s.close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := res.ValueCache().Share(); got != 3<<20 {
		t.Fatalf("share with 1 store: %d, want %d", got, 3<<20)
	}
	stores[0].close()
}

// TestRestoreWaitsForAnOpenTransaction: a store's checkpoint past its
// changelog's last stable offset, because another producer's transaction
// that began earlier is still open, is not a lost changelog: the task
// waits for the transaction to end instead of wiping the store (which
// would lose every update committed after the open transaction began).
func TestRestoreWaitsForAnOpenTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	topo := aggTopology(t, "app", "AUCTION")
	_, brokers := startAggCluster(t, topo)
	cfg := Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", CommitInterval: 20 * time.Millisecond, StateDir: t.TempDir()}
	q, err := Start("CTAS_OUT_1", topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	produceAggBids(t, ctx, brokers, 0, 300)
	waitCommitted(t, ctx, brokers, "app", "bids")

	// Another producer opens a transaction on every changelog partition
	// and leaves it open; the query commits more after it.
	changelog := "app-AGGREGATE-changelog"
	x, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("zombie"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.TransactionTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		if err := x.ProduceSync(ctx, &kgo.Record{Topic: changelog, Partition: p, Key: []byte("zombie"), Value: []byte("x")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	produceAggBids(t, ctx, brokers, 300, 600)
	waitCommitted(t, ctx, brokers, "app", "bids")
	q.Stop() // checkpoints past the open transaction

	// Restart; end the open transaction a few seconds later.
	if q, err = Start("CTAS_OUT_1", topo, cfg); err != nil {
		t.Fatal(err)
	}
	defer q.Stop()
	time.Sleep(2 * time.Second)
	if err := x.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatal(err)
	}
	produceAggBids(t, ctx, brokers, 600, 900)
	waitCommitted(t, ctx, brokers, "app", "bids")
	waitAggBids(t, ctx, brokers, 900)
}

// waitAggBids waits until the output's last values are the counts and
// sums of produceAggBids' first n bids.
func waitAggBids(t *testing.T, ctx context.Context, brokers []string, n int) {
	t.Helper()
	want := map[int64][2]int64{}
	for i := 0; i < n; i++ {
		g := int64(i % 17)
		w := want[g]
		want[g] = [2]int64{w[0] + 1, w[1] + int64(i%10)}
	}
	for {
		got := lastValues(t, ctx, brokers)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("result %v\nwant %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMemoryStores runs an aggregation with its stores in memory
// (Config.MemoryStores): nothing of them is written to the state
// directory, and a restart restores each from the start of its changelog,
// so that the counts go on from where they were.
func TestMemoryStores(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	topo := aggTopology(t, "app", "AUCTION")
	_, brokers := startAggCluster(t, topo)
	dir := t.TempDir()
	cfg := Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", CommitInterval: 20 * time.Millisecond, StateDir: dir, MemoryStores: true}
	q, err := Start("CTAS_OUT_1", topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	produceAggBids(t, ctx, brokers, 0, 300)
	waitCommitted(t, ctx, brokers, "app", "bids")
	q.Stop()
	if r := q.Status().Restored; r != 0 {
		t.Errorf("first start restored %d records", r)
	}
	for _, pattern := range []string{"*/*/*/rocksdb", "*/*/*/checkpoint"} {
		if found, _ := filepath.Glob(filepath.Join(dir, pattern)); len(found) > 0 {
			t.Errorf("memory stores left %v", found)
		}
	}

	if q, err = Start("CTAS_OUT_1", topo, cfg); err != nil {
		t.Fatal(err)
	}
	defer q.Stop()
	produceAggBids(t, ctx, brokers, 300, 600)
	waitCommitted(t, ctx, brokers, "app", "bids")
	waitAggBids(t, ctx, brokers, 600)
	// 17 groups over 3 partitions: the restart read every changelog
	// record of the first run (one per input record, at most 300).
	if r := q.Status().Restored; r < 17 {
		t.Errorf("restart restored %d changelog records, want the whole changelog", r)
	}
	keys := 0
	for _, p := range q.Stores("AGGREGATE") {
		it, err := p.Store.Range(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			keys++
		}
		it.Close()
	}
	if keys != 17 {
		t.Errorf("the stores hold %d groups, want 17", keys)
	}
}
