package exec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// windowedDistinctTopology is CREATE TABLE out AS SELECT auction,
// COUNT(*) AS n, COUNT(DISTINCT bidder) AS bidders, COUNT(DISTINCT
// bidder) FILTER (WHERE price > 50) AS rich, SUM(DISTINCT price) AS
// prices FROM bids WINDOW w GROUP BY auction; apart keeps the distinct
// values in a store of their own (planner.Aggregate.DistinctValues),
// else in the windows' states as plans recorded before it do.
func windowedDistinctTopology(t testing.TB, w *planner.WindowSpec, apart bool) *physical.Topology {
	src := &catalog.Source{Name: "BIDS", Kind: catalog.Stream, Topic: "bids", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
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
	rich, err := expr.NewBinary(expr.OpGT, col("PRICE"), &expr.Literal{V: types.IntDatum(50), T: types.BigintType})
	if err != nil {
		t.Fatal(err)
	}
	filtered, err := expr.NewCase(nil, []expr.Expr{rich}, []expr.Expr{col("BIDDER")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	agg, err := planner.NewWindowedAggregate(scan, []expr.Expr{col("AUCTION")}, []string{"AUCTION"}, []*planner.AggCall{
		{Fn: count, T: types.BigintType},
		{Fn: countDistinct, Args: []expr.Expr{col("BIDDER")}, T: types.BigintType},
		{Fn: countDistinct, Args: []expr.Expr{filtered}, T: types.BigintType},
		{Fn: sumDistinct, Args: []expr.Expr{col("PRICE")}, T: types.BigintType},
	}, w)
	if err != nil {
		t.Fatal(err)
	}
	agg.DistinctValues = apart
	at := 1 + len(types.WindowColumns)
	var cols []expr.Expr
	cols = append(cols, &expr.Column{Index: 0, Name: "AUCTION", T: types.BigintType})
	for j := range 4 {
		cols = append(cols, &expr.Column{Index: at + j, Name: fmt.Sprintf("KSQL_AGG_%d", j), T: types.BigintType})
	}
	proj, err := planner.NewProject(agg, cols, []string{"AUCTION", "N", "BIDDERS", "RICH", "PRICES"})
	if err != nil {
		t.Fatal(err)
	}
	target := &catalog.Source{Name: "OUT", Kind: catalog.Table, Topic: "out", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
		Schema: proj.Schema(), WindowType: w.Type, WindowSizeMs: w.SizeMs}
	topo, err := physical.Build("app", &planner.Sink{Input: proj, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// distinctWindowModel computes the windowed aggregation of
// windowedDistinctTopology: per (auction, window start), the rows, the
// distinct bidders, those of a price over 50 and the distinct prices.
type distinctWindowModel struct {
	size, advance int64
	windows       map[[2]int64]*distinctWindow
}

type distinctWindow struct {
	n       int
	bidders map[int64]bool
	rich    map[int64]bool
	prices  map[int64]bool
}

func (m *distinctWindowModel) add(auction int64, bidder *int64, price, ts int64) {
	for s := max(0, ts-m.size+m.advance) / m.advance * m.advance; s <= ts; s += m.advance {
		w := m.windows[[2]int64{auction, s}]
		if w == nil {
			w = &distinctWindow{bidders: map[int64]bool{}, rich: map[int64]bool{}, prices: map[int64]bool{}}
			m.windows[[2]int64{auction, s}] = w
		}
		w.n++
		if bidder != nil {
			w.bidders[*bidder] = true
			if price > 50 {
				w.rich[*bidder] = true
			}
		}
		w.prices[price] = true
	}
}

// result is the window's row as lastWindows reads it.
func (w *distinctWindow) result() string {
	var sum int64
	for p := range w.prices {
		sum += p
	}
	return fmt.Sprintf("%d|%d|%d|%d", w.n, len(w.bidders), len(w.rich), sum)
}

// entries is the number of its entries in the store of distinct values:
// one per bidder (shared by the FILTER's count), one per price.
func (w *distinctWindow) entries() int { return len(w.bidders) + len(w.prices) }

// distinctWindowTask runs windowedDistinctTopology without a broker,
// keeping each window's last output row and the changelog records.
type distinctWindowTask struct {
	*testTask
	agg        *aggregateOp
	last       map[[2]int64]string
	changelogs []*kgo.Record
}

func newDistinctWindowTask(t *testing.T, topo *physical.Topology, dir string) *distinctWindowTask {
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	t.Cleanup(func() { res.Close() })
	d := &distinctWindowTask{last: map[[2]int64]string{}}
	d.testTask = newTestTask(t, topo, 0, Config{StateDir: dir, RocksResources: res}, func(r *kgo.Record) {
		c := *r
		c.Key, c.Value = append([]byte(nil), r.Key...), append([]byte(nil), r.Value...)
		if r.Value == nil {
			c.Value = nil
		}
		if r.Topic != "out" {
			c.Offset = int64(len(d.changelogs))
			r.Offset = c.Offset
			d.changelogs = append(d.changelogs, &c)
			return
		}
		r.Offset = 1
		k := [2]int64{int64(binary.BigEndian.Uint64(r.Key)), int64(binary.BigEndian.Uint64(r.Key[len(r.Key)-8:]))}
		var v struct{ N, BIDDERS, RICH, PRICES *int64 }
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
		d.last[k] = s(v.N) + "|" + s(v.BIDDERS) + "|" + s(v.RICH) + "|" + s(v.PRICES)
	})
	d.agg = proc[*physical.Aggregate, *aggregateOp](d.testTask)
	return d
}

// commit flushes the aggregation and commits every store, as the
// thread does at a commit.
func (d *distinctWindowTask) commit(t *testing.T) {
	t.Helper()
	if err := d.agg.Flush(); err != nil {
		t.Fatal(err)
	}
	d.out.flush()
	for _, st := range d.stores {
		if err := st.commit(); err != nil {
			t.Fatal(err)
		}
	}
	d.out.reset()
}

// distinctEntries counts the store of distinct values' entries by
// window start.
func (d *distinctWindowTask) distinctEntries(t *testing.T) map[int64]int {
	t.Helper()
	if d.agg.dv == nil {
		return nil
	}
	it, err := d.agg.dv.store.ov.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[int64]int{}
	for it.Next() {
		k := it.Key()
		if len(k) < 8 {
			t.Fatalf("distinct entry %x without a window", k)
		}
		out[storedStart(k)]++
	}
	return out
}

// TestWindowedDistinctValues runs COUNT(DISTINCT bidder), the same with
// a FILTER, and SUM(DISTINCT price) over hopping windows (each row in
// two windows), in both state layouts: the values in each window's
// state (plans recorded before the store of distinct values, which must
// keep running as they were) and in the window store of their own (new
// plans). Each window's last row must equal the aggregation computed
// here, across a restore from the changelogs into a new state
// directory; the store of distinct values holds one entry per window,
// auction and value of the windows still kept, and a window past its
// retention loses its entries with it.
func TestWindowedDistinctValues(t *testing.T) {
	for _, apart := range []bool{false, true} {
		t.Run(fmt.Sprintf("apart=%v", apart), func(t *testing.T) { testWindowedDistinctValues(t, apart) })
	}
}

func testWindowedDistinctValues(t *testing.T, apart bool) {
	const size, advance, grace = 10_000, 5_000, 2_000
	spec, err := planner.NewWindowSpec(types.Hopping, size, advance, -1, grace, "")
	if err != nil {
		t.Fatal(err)
	}
	topo := windowedDistinctTopology(t, spec, apart)
	a, _ := physical.Find[*physical.Aggregate](topo)
	agg := a.Op.(*physical.Aggregate)
	if (agg.DistinctStore != nil) != apart {
		t.Fatalf("distinct store %v", agg.DistinctStore)
	}
	if apart && (fmt.Sprint(agg.DistinctAggs) != "[[1 2] [3]]" || agg.DistinctStore.Kind != physical.WindowStore || agg.DistinctStore.RetentionMs != size+grace) {
		t.Fatalf("distinct store %+v of aggregates %v", agg.DistinctStore, agg.DistinctAggs)
	}
	task := newDistinctWindowTask(t, topo, t.TempDir())
	model := &distinctWindowModel{size: size, advance: advance, windows: map[[2]int64]*distinctWindow{}}
	rng := rand.New(rand.NewPCG(7, 33))
	var streamTime int64
	feed := func(task *distinctWindowTask, from, to int) {
		for i := from; i < to; i++ {
			// In order but for a little disorder within the grace.
			ts := int64(i)*23 + int64(rng.IntN(1500))
			auction := int64(rng.IntN(4))
			price := int64(rng.IntN(12)) * 10
			bidder, b := "null", (*int64)(nil)
			if rng.IntN(10) != 0 {
				v := int64(rng.IntN(30))
				bidder, b = fmt.Sprint(v), &v
			}
			r := &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(auction)),
				Value: fmt.Appendf(nil, `{"bidder":%s,"price":%d}`, bidder, price), Timestamp: time.UnixMilli(ts)}
			if err := task.feed(r); err != nil {
				t.Fatal(err)
			}
			task.out.flush()
			streamTime = max(streamTime, ts)
			model.add(auction, b, price, ts)
			if i%500 == 499 {
				task.commit(t)
			}
		}
		task.commit(t)
	}
	check := func(task *distinctWindowTask) {
		t.Helper()
		for k, w := range model.windows {
			if got := task.last[k]; got != w.result() {
				t.Errorf("auction %d window %d: %q, want %q", k[0], k[1], got, w.result())
			}
		}
		if len(task.last) != len(model.windows) {
			t.Errorf("%d windows emitted, %d held rows", len(task.last), len(model.windows))
		}
	}
	// storedEntries checks the store of distinct values against the
	// model: the entries of every window the window store still holds,
	// none of the others.
	storedEntries := func(task *distinctWindowTask) int {
		t.Helper()
		if !apart {
			return 0
		}
		kept := map[int64]bool{}
		it, err := task.stores[0].ov.Range(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			if k := it.Key(); len(k) >= 8 {
				kept[storedStart(k)] = true
			}
		}
		it.Close()
		want := map[int64]int{}
		for k, w := range model.windows {
			if kept[k[1]] {
				want[k[1]] += w.entries()
			}
		}
		got := task.distinctEntries(t)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("distinct entries by window %v, want %v", got, want)
		}
		n := 0
		for _, c := range got {
			n += c
		}
		return n
	}

	feed(task, 0, 3000)
	check(task)
	n := storedEntries(task)
	if apart {
		all := 0
		for _, w := range model.windows {
			all += w.entries()
		}
		if n == 0 || n >= all/2 {
			t.Errorf("%d distinct entries stored of %d: the windows' retention does not expire them", n, all)
		}
	}

	// A new state directory: the stores restore from their changelogs
	// (as the task manager applies a window store's: restoreWindow).
	restored := newDistinctWindowTask(t, topo, t.TempDir())
	restored.last = task.last
	for _, st := range restored.stores {
		var buf []byte
		for _, r := range task.changelogs {
			if r.Topic == st.changelog {
				if err := restoreWindow(st.ov, r, &buf); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := st.commit(); err != nil {
			t.Fatal(err)
		}
	}
	feed(restored, 3000, 6000)
	check(restored)
	storedEntries(restored)

	// One row a day later: every earlier window expires, with its
	// distinct values.
	day := int64(24 * time.Hour / time.Millisecond)
	r := &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, 1), Value: []byte(`{"bidder":3,"price":70}`), Timestamp: time.UnixMilli(day)}
	if err := restored.feed(r); err != nil {
		t.Fatal(err)
	}
	restored.commit(t)
	b := int64(3)
	model.add(1, &b, 70, day)
	check(restored)
	if apart {
		got := restored.distinctEntries(t)
		if want := fmt.Sprintf("map[%d:2 %d:2]", day-advance, day); fmt.Sprint(got) != want {
			t.Errorf("after a day, distinct entries by window %v, want %s (the new row's two windows)", got, want)
		}
	}
}

// BenchmarkWindowedDistinctUpdate measures the aggregate operator alone
// with COUNT(*), COUNT(DISTINCT bidder), the same with a FILTER and
// SUM(DISTINCT price) over one-hour tumbling windows of a stream, 2
// auctions, each record a new bidder (20,000 records: 10,000 distinct
// bidders an auction's window), committed every 10,000 records: with
// the distinct values in each window's state (plans recorded before
// the store of distinct values), whose cost grows with the values a
// window has, and apart (new plans).
//
//	go test ./exec -run '^$' -bench WindowedDistinctUpdate -benchtime 20000x
func BenchmarkWindowedDistinctUpdate(b *testing.B) {
	spec, err := planner.NewWindowSpec(types.Tumbling, 3_600_000, 0, -1, 0, "")
	if err != nil {
		b.Fatal(err)
	}
	for _, apart := range []bool{false, true} {
		b.Run(fmt.Sprintf("apart=%v", apart), func(b *testing.B) {
			res := state.NewRocksResources(8<<20, 8<<20, 0)
			b.Cleanup(func() { res.Close() })
			task := newTestTask(b, windowedDistinctTopology(b, spec, apart), 0, Config{StateDir: b.TempDir(), RocksResources: res}, func(r *kgo.Record) { r.Offset = 1 })
			agg := proc[*physical.Aggregate, *aggregateOp](task)
			recs := make([]*kgo.Record, 2)
			for i := range recs {
				recs[i] = &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(i))}
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r := recs[i%len(recs)]
				r.Value = fmt.Appendf(r.Value[:0], `{"bidder":%d,"price":%d}`, i, i%100)
				r.Timestamp = time.UnixMilli(int64(i) % 3_600_000)
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
