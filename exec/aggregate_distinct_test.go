package exec

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// distinctTopology is CREATE TABLE out AS SELECT <group>, COUNT(*),
// COUNT(DISTINCT bidder), SUM(DISTINCT price) FROM bids GROUP BY
// <group>, bids a table keyed by auction (table) or a stream; apart keeps the distinct values in a
// store of their own (planner.Aggregate.DistinctValues), else in the
// groups' states as plans recorded before it do. dropEmpty deletes a
// group whose last row leaves (SQL's semantics).
func distinctTopology(t testing.TB, table bool, group string, apart, dropEmpty bool) *physical.Topology {
	kind := catalog.Stream
	if table {
		kind = catalog.Table
	}
	src := &catalog.Source{Name: "BIDS", Kind: kind, Topic: "bids", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
		Partitions: 3, Schema: types.Schema{Columns: bidSchema.Columns[:5]}}
	scan := planner.NewScan(src)
	in := scan.Schema()
	col := func(name string) *expr.Column {
		i := in.Index(name)
		return &expr.Column{Index: i, Name: name, T: in.Columns[i].Type}
	}
	count, _ := expr.LookupAggregate("COUNT")
	countDistinct, _ := expr.DistinctAggregate("COUNT")
	sumDistinct, _ := expr.DistinctAggregate("SUM")
	if table {
		count, countDistinct, sumDistinct = count.ForTable(), countDistinct.ForTable(), sumDistinct.ForTable()
	}
	agg, err := planner.NewAggregate(scan, []expr.Expr{col(group)}, []string{group}, []*planner.AggCall{
		{Fn: count, T: types.BigintType},
		{Fn: countDistinct, Args: []expr.Expr{col("BIDDER")}, T: types.BigintType},
		{Fn: sumDistinct, Args: []expr.Expr{col("PRICE")}, T: types.BigintType},
	})
	if err != nil {
		t.Fatal(err)
	}
	agg.FromTable, agg.DropEmpty, agg.DistinctValues = table, dropEmpty, apart
	proj, err := planner.NewProject(agg, []expr.Expr{
		&expr.Column{Index: 0, Name: group, T: col(group).T},
		&expr.Column{Index: 1, Name: "KSQL_AGG_0", T: types.BigintType},
		&expr.Column{Index: 2, Name: "KSQL_AGG_1", T: types.BigintType},
		&expr.Column{Index: 3, Name: "KSQL_AGG_2", T: types.BigintType},
	}, []string{group, "N", "BIDDERS", "PRICES"})
	if err != nil {
		t.Fatal(err)
	}
	target := &catalog.Source{Name: "OUT", Kind: catalog.Table, Topic: "out", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Schema: proj.Schema()}
	topo, err := physical.Build("app", &planner.Sink{Input: proj, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// TestAggregateDistinctValues runs COUNT(DISTINCT) and SUM(DISTINCT)
// over a table with updates (rows moving between groups, values
// changing) and deletions, in both state layouts: the distinct values
// in each group's state (plans recorded before the store of distinct
// values, which must keep running as they were) and in the store of
// their own (new plans), with a restart in the middle (stores restore
// from their changelogs, in a new state directory). Each group's last row must equal the
// aggregation computed here.
func TestAggregateDistinctValues(t *testing.T) {
	for _, apart := range []bool{false, true} {
		for _, dropEmpty := range []bool{false, true} {
			t.Run(fmt.Sprintf("apart=%v/dropEmpty=%v", apart, dropEmpty), func(t *testing.T) {
				testAggregateDistinctValues(t, apart, dropEmpty)
			})
		}
	}
}

func testAggregateDistinctValues(t *testing.T, apart, dropEmpty bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	topo := distinctTopology(t, true, "CHANNEL", apart, dropEmpty)
	var agg *physical.Aggregate
	for _, n := range topo.Nodes {
		if a, ok := n.Op.(*physical.Aggregate); ok {
			agg = a
		}
	}
	if (agg.DistinctStore != nil) != apart || (apart && fmt.Sprint(agg.DistinctAggs) != "[[1] [2]]") {
		t.Fatalf("distinct store %v of aggregates %v", agg.DistinctStore, agg.DistinctAggs)
	}
	_, brokers := startAggCluster(t, topo)
	cfg := Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", CommitInterval: 20 * time.Millisecond, StateDir: t.TempDir()}
	q, err := Start("CTAS_OUT_1", topo, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { q.Stop() }()
	pc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("bids"))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()

	type row struct {
		bidder *int64
		price  int64
		ch     string
	}
	table := map[uint64]row{}
	seen := map[string]bool{}
	rng := rand.New(rand.NewPCG(33, 3))
	const batches, perBatch = 6, 400
	for b := 0; b < batches; b++ {
		if b == batches/2 {
			// A new state directory: the stores restore from their
			// changelogs.
			q.Stop()
			cfg.StateDir = t.TempDir()
			if q, err = Start("CTAS_OUT_1", topo, cfg); err != nil {
				t.Fatal(err)
			}
		}
		var recs []*kgo.Record
		for range perBatch {
			id := uint64(rng.IntN(120))
			key := binary.BigEndian.AppendUint64(nil, id)
			if rng.IntN(6) == 0 {
				delete(table, id)
				recs = append(recs, &kgo.Record{Key: key})
				continue
			}
			r := row{price: int64(rng.IntN(15)) * 10, ch: fmt.Sprintf("c%d", rng.IntN(5))}
			bidder := "null"
			if rng.IntN(8) != 0 {
				v := int64(rng.IntN(25))
				r.bidder, bidder = &v, fmt.Sprint(v)
			}
			table[id] = r
			seen[r.ch] = true
			recs = append(recs, &kgo.Record{Key: key, Value: fmt.Appendf(nil, `{"bidder":%s,"price":%d,"channel":"%s"}`, bidder, r.price, r.ch)})
		}
		if err := pc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		waitCommitted(t, ctx, brokers, "app", "bids")
	}

	want := map[string]string{}
	if !dropEmpty {
		for ch := range seen {
			want[ch] = "0|0|<nil>"
		}
	}
	type acc struct {
		n       int
		bidders map[int64]bool
		prices  map[int64]bool
	}
	groups := map[string]*acc{}
	for _, r := range table {
		g := groups[r.ch]
		if g == nil {
			g = &acc{bidders: map[int64]bool{}, prices: map[int64]bool{}}
			groups[r.ch] = g
		}
		g.n++
		if r.bidder != nil {
			g.bidders[*r.bidder] = true
		}
		g.prices[r.price] = true
	}
	for ch, g := range groups {
		var sum int64
		for p := range g.prices {
			sum += p
		}
		want[ch] = fmt.Sprintf("%d|%d|%d", g.n, len(g.bidders), sum)
	}
	for {
		got := lastOut(t, ctx, brokers)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("result %v\nwant   %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lastOut reads "out" read_committed: each channel's last row, as
// N|BIDDERS|PRICES; a deletion removes the channel.
func lastOut(t testing.TB, ctx context.Context, brokers []string) map[string]string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[string]string{}
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if fs.Empty() {
			return got
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Value == nil {
				delete(got, string(r.Key))
				return
			}
			var v struct{ N, BIDDERS, PRICES *int64 }
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Errorf("out value %s: %v", r.Value, err)
				return
			}
			s := func(p *int64) string {
				if p == nil {
					return "<nil>"
				}
				return fmt.Sprint(*p)
			}
			got[string(r.Key)] = s(v.N) + "|" + s(v.BIDDERS) + "|" + s(v.PRICES)
		})
	}
}

// BenchmarkAggregateDistinctUpdate measures the aggregate operator alone
// (as BenchmarkAggregateUpdate does) with COUNT(*), COUNT(DISTINCT
// bidder) and SUM(DISTINCT price) over a stream, 10 groups, each record a
// bidder among 100,000, committed every 10,000 records: with the
// distinct values in each group's state (plans recorded before the
// store of distinct values), whose cost grows with the values a group
// has, and apart (new plans).
//
//	go test ./exec -run '^$' -bench AggregateDistinctUpdate -benchtime 100000x
func BenchmarkAggregateDistinctUpdate(b *testing.B) {
	for _, apart := range []bool{false, true} {
		b.Run(fmt.Sprintf("apart=%v", apart), func(b *testing.B) {
			res := state.NewRocksResources(8<<20, 8<<20, 0)
			b.Cleanup(func() { res.Close() })
			task := newTestTask(b, distinctTopology(b, false, "AUCTION", apart, false), 0, Config{StateDir: b.TempDir(), RocksResources: res}, func(r *kgo.Record) { r.Offset = 1 })
			agg := proc[*physical.Aggregate, *aggregateOp](task)
			recs := make([]*kgo.Record, 1000)
			for i := range recs {
				recs[i] = &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(i%10))}
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r := recs[i%len(recs)]
				r.Value = fmt.Appendf(r.Value[:0], `{"bidder":%d,"price":%d}`, (i*7919)%100_000, i%1000)
				if err := task.feed(r); err != nil {
					b.Fatal(err)
				}
				if i%10000 == 9999 {
					commitBench(b, task, agg)
				}
			}
		})
	}
}
