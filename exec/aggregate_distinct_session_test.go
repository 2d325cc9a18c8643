package exec

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// distinctSession is a session of distinctSessionModel: its bounds and
// what windowedDistinctTopology computes of its rows.
type distinctSession struct {
	start, end int64
	distinctWindow
}

// distinctSessionModel computes windowedDistinctTopology over session
// windows of the gap: per auction, its sessions, merged as Kafka
// Streams merges them (a row joins every session that ends at or after
// ts - gap and starts at or before ts + gap). Rows are never late nor
// join expired sessions (the feed's disorder is within the grace).
type distinctSessionModel struct {
	gap      int64
	sessions map[int64][]*distinctSession
	// merges counts the rows that joined two sessions or more, moves
	// those that moved a session's start earlier.
	merges, moves int
}

func (m *distinctSessionModel) add(auction int64, bidder *int64, price, ts int64) {
	s := &distinctSession{start: ts, end: ts, distinctWindow: distinctWindow{bidders: map[int64]bool{}, rich: map[int64]bool{}, prices: map[int64]bool{}}}
	var keep []*distinctSession
	joined := 0
	for _, o := range m.sessions[auction] {
		if o.end < ts-m.gap || o.start > ts+m.gap {
			keep = append(keep, o)
			continue
		}
		joined++
		if ts < o.start {
			m.moves++
		}
		s.start, s.end, s.n = min(s.start, o.start), max(s.end, o.end), s.n+o.n
		for _, p := range []struct{ to, from map[int64]bool }{{s.bidders, o.bidders}, {s.rich, o.rich}, {s.prices, o.prices}} {
			for v := range p.from {
				p.to[v] = true
			}
		}
	}
	if joined > 1 {
		m.merges++
	}
	s.n++
	if bidder != nil {
		s.bidders[*bidder] = true
		if price > 50 {
			s.rich[*bidder] = true
		}
	}
	s.prices[price] = true
	m.sessions[auction] = append(keep, s)
}

// distinctSessionTask runs windowedDistinctTopology over sessions
// without a broker, keeping each live session's last output row (by
// auction, start and end) and the changelog records.
type distinctSessionTask struct {
	*testTask
	agg        *aggregateOp
	last       map[[3]int64]string
	changelogs []*kgo.Record
}

func newDistinctSessionTask(t *testing.T, topo *physical.Topology, dir string) *distinctSessionTask {
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	t.Cleanup(func() { res.Close() })
	d := &distinctSessionTask{last: map[[3]int64]string{}}
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
		gkey, start, end, err := types.Session.SplitWindowKey(r.Key, 0)
		if err != nil {
			t.Errorf("out key %x: %v", r.Key, err)
			return
		}
		k := [3]int64{int64(binary.BigEndian.Uint64(gkey)), start, end}
		if r.Value == nil {
			delete(d.last, k)
			return
		}
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

func (d *distinctSessionTask) commit(t *testing.T) {
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

// sessionEntries counts the store of distinct values' entries by
// (auction, session start).
func (d *distinctSessionTask) sessionEntries(t *testing.T) map[[2]int64]int {
	t.Helper()
	it, err := d.agg.dv.store.ov.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[[2]int64]int{}
	for it.Next() {
		k := it.Key()
		n, w := binary.Uvarint(k[8:])
		if len(k) < 8 || w <= 0 || n != 8 || len(k) < 8+w+8 {
			t.Fatalf("distinct entry %x: not [start][8][auction]…", k)
		}
		out[[2]int64{int64(binary.BigEndian.Uint64(k[8+w:])), storedStart(k)}]++
	}
	return out
}

// storedSessions returns the sessions the session store holds, by
// (auction, start).
func (d *distinctSessionTask) storedSessions(t *testing.T) map[[2]int64]bool {
	t.Helper()
	it, err := d.agg.store.ov.Range([]byte{sessionPrefix}, []byte{sessionPrefix + 1})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	out := map[[2]int64]bool{}
	for it.Next() {
		k := it.Key()
		start, _ := sessionBounds(k)
		out[[2]int64{int64(binary.BigEndian.Uint64(k[1:])), start}] = true
	}
	return out
}

// TestSessionDistinctValues runs COUNT(DISTINCT bidder), the same with a
// FILTER (sharing its entries) and SUM(DISTINCT price) over session
// windows, rows out of order so that rows bridge sessions (merging
// their values, overlapping and not) and move sessions' starts earlier,
// in both state layouts: the values in each session's state (plans
// recorded before sessions kept them apart, which must keep running as
// they were) and apart (new plans). Each live session's last row must
// equal the model's, across a restore from the changelogs into a new
// state directory; the store of distinct values holds exactly the
// entries of the sessions the session store holds, under their starts,
// and a session's expiry deletes its entries.
func TestSessionDistinctValues(t *testing.T) {
	results := map[bool]map[[3]int64]string{}
	for _, apart := range []bool{false, true} {
		t.Run(fmt.Sprintf("apart=%v", apart), func(t *testing.T) { results[apart] = testSessionDistinctValues(t, apart) })
	}
	if len(results[true]) == 0 || len(results[true]) != len(results[false]) {
		t.Errorf("%d sessions apart, %d in state", len(results[true]), len(results[false]))
	}
	for k, v := range results[true] {
		if results[false][k] != v {
			t.Errorf("session %v: %q apart, %q in state", k, v, results[false][k])
		}
	}
}

func testSessionDistinctValues(t *testing.T, apart bool) map[[3]int64]string {
	const gap, grace = 500, 2_000
	spec, err := planner.NewWindowSpec(types.Session, gap, 0, -1, grace, "")
	if err != nil {
		t.Fatal(err)
	}
	topo := windowedDistinctTopology(t, spec, apart)
	a, _ := physical.Find[*physical.Aggregate](topo)
	agg := a.Op.(*physical.Aggregate)
	if (agg.DistinctStore != nil) != apart {
		t.Fatalf("distinct store %v", agg.DistinctStore)
	}
	if apart && (fmt.Sprint(agg.DistinctAggs) != "[[1 2] [3]]" || agg.DistinctStore.Kind != physical.WindowStore || agg.DistinctStore.RetentionMs != 0) {
		t.Fatalf("distinct store %+v of aggregates %v", agg.DistinctStore, agg.DistinctAggs)
	}
	task := newDistinctSessionTask(t, topo, t.TempDir())
	model := &distinctSessionModel{gap: gap, sessions: map[int64][]*distinctSession{}}
	rng := rand.New(rand.NewPCG(7, 34))
	feed := func(task *distinctSessionTask, from, to int) {
		for i := from; i < to; i++ {
			// Bursts of rows out of order (within the grace), 1.5 s
			// apart: sessions form, merge and start earlier.
			ts := int64(i)*20 + int64(i/40)*1500 + int64(rng.IntN(1200))
			auction := int64(rng.IntN(6))
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
			model.add(auction, b, price, ts)
			if i%300 == 299 {
				task.commit(t)
			}
		}
		task.commit(t)
	}
	check := func(task *distinctSessionTask) {
		t.Helper()
		n := 0
		for auction, ss := range model.sessions {
			for _, s := range ss {
				n++
				k := [3]int64{auction, s.start, s.end}
				if got := task.last[k]; got != s.result() {
					t.Errorf("auction %d session [%d, %d]: %q, want %q", auction, s.start, s.end, got, s.result())
				}
			}
		}
		if len(task.last) != n {
			t.Errorf("%d sessions emitted and not deleted, %d in the model", len(task.last), n)
		}
	}
	// storedEntries checks the store of distinct values against the
	// model: the entries of every session the session store holds, none
	// of the others'.
	storedEntries := func(task *distinctSessionTask) int {
		t.Helper()
		if !apart {
			return 0
		}
		kept := task.storedSessions(t)
		want := map[[2]int64]int{}
		for auction, ss := range model.sessions {
			for _, s := range ss {
				if kept[[2]int64{auction, s.start}] {
					want[[2]int64{auction, s.start}] = s.entries()
				}
			}
		}
		got := task.sessionEntries(t)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("distinct entries by session %v,\nwant %v", got, want)
		}
		n := 0
		for _, c := range got {
			n += c
		}
		return n
	}

	feed(task, 0, 2000)
	check(task)
	if model.merges < 20 || model.moves < 20 {
		t.Fatalf("%d rows merged sessions, %d moved a start: the feed does not test them", model.merges, model.moves)
	}
	n := storedEntries(task)
	if apart {
		all := 0
		for _, ss := range model.sessions {
			for _, s := range ss {
				all += s.entries()
			}
		}
		if n == 0 || n >= all/2 {
			t.Errorf("%d distinct entries stored of %d: expiry does not drop them", n, all)
		}
	}

	// A new state directory: the stores restore from their changelogs as
	// the task manager applies them (restoreSession; the distinct
	// values' window store: restoreWindow).
	restored := newDistinctSessionTask(t, topo, t.TempDir())
	restored.last = task.last
	for _, st := range restored.stores {
		var buf []byte
		for _, r := range task.changelogs {
			if r.Topic != st.changelog {
				continue
			}
			var err error
			if st == restored.agg.store {
				err = restoreSession(st.ov, r, &buf)
			} else {
				err = restoreWindow(st.ov, r, &buf)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := st.commit(); err != nil {
			t.Fatal(err)
		}
	}
	// (The restored session store holds the sessions expired since
	// their changelog records, without tombstones, until its next sweep;
	// their entries left with tombstones.)
	feed(restored, 2000, 4000)
	check(restored)
	storedEntries(restored)

	// One row a day later: every earlier session expires, with its
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
		if got, want := fmt.Sprint(restored.sessionEntries(t)), fmt.Sprintf("map[[1 %d]:2]", day); got != want {
			t.Errorf("after a day, distinct entries by session %v, want %s (the new row's session)", got, want)
		}
	}
	return restored.last
}

// BenchmarkSessionDistinctUpdate measures the aggregate operator alone
// with windowedDistinctTopology over one-hour sessions of 2 auctions,
// each record a new bidder in order (N records: one session of N/2
// distinct bidders an auction), committed every 10,000 records: with
// the distinct values in the session's state (plans recorded before
// sessions kept them apart), whose cost grows with the values a session
// has (each record merges the session's state into the extended one),
// and apart (new plans). 2 cores, loaded: 6.3 ms a record in state at
// 2,000 records, 12.5 µs apart at 20,000.
//
//	go test ./exec -run '^$' -bench 'SessionDistinctUpdate/apart=true' -benchtime 20000x
//	go test ./exec -run '^$' -bench 'SessionDistinctUpdate/apart=false' -benchtime 2000x
func BenchmarkSessionDistinctUpdate(b *testing.B) {
	spec, err := planner.NewWindowSpec(types.Session, 3_600_000, 0, -1, 0, "")
	if err != nil {
		b.Fatal(err)
	}
	for _, apart := range []bool{false, true} {
		b.Run(fmt.Sprintf("apart=%v", apart), func(b *testing.B) {
			task, agg := newSessionBenchTask(b, spec, apart)
			recs := make([]*kgo.Record, 2)
			for i := range recs {
				recs[i] = &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(i))}
			}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r := recs[i%len(recs)]
				r.Value = fmt.Appendf(r.Value[:0], `{"bidder":%d,"price":%d}`, i, i%100)
				r.Timestamp = time.UnixMilli(int64(i))
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

// BenchmarkSessionDistinctMerge measures one row joining sessions of an
// auction that hold n distinct bidders each (half of them shared, and
// 100 prices), committed alone: bridging two sessions (the later one's
// entries move under the earlier one's start), and moving one session's
// start earlier (all its entries move), up to its Flush (the store's
// commit untimed). Each iteration builds its
// sessions under a new auction first, untimed (in state, n = 1,000
// only: building larger ones takes minutes).
//
//	go test ./exec -run '^$' -bench SessionDistinctMerge -benchtime 5x
func BenchmarkSessionDistinctMerge(b *testing.B) {
	const gap = 60_000
	spec, err := planner.NewWindowSpec(types.Session, gap, 0, -1, 3_600_000, "")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int64{1_000, 10_000} {
		for _, bridge := range []bool{true, false} {
			for _, apart := range []bool{false, true} {
				if n > 1_000 && !apart {
					continue
				}
				benchSessionDistinctMerge(b, spec, n, gap, bridge, apart)
			}
		}
	}
}

func benchSessionDistinctMerge(b *testing.B, spec *planner.WindowSpec, n, gap int64, bridge, apart bool) {
	b.Run(fmt.Sprintf("values=%d/bridge=%v/apart=%v", n, bridge, apart), func(b *testing.B) {
		task, agg := newSessionBenchTask(b, spec, apart)
		r := &kgo.Record{}
		row := func(auction, bidder, ts int64) {
			r.Key = binary.BigEndian.AppendUint64(r.Key[:0], uint64(auction))
			r.Value = fmt.Appendf(r.Value[:0], `{"bidder":%d,"price":%d}`, bidder, bidder%100)
			r.Timestamp = time.UnixMilli(ts)
			if err := task.feed(r); err != nil {
				b.Fatal(err)
			}
		}
		base := int64(0)
		var rowNs, flushNs int64
		defer func() {
			b.ReportMetric(float64(rowNs)/float64(b.N)/1e3, "row-µs")
			b.ReportMetric(float64(flushNs)/float64(b.N)/1e3, "flush-µs")
		}()
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			// Session one: bidders 0..n-1 over [base, base+n);
			// bridging: session two, bidders n/2..3n/2 over
			// [base+n+gap+gap/2, …), both within the grace.
			for j := int64(0); j < n; j++ {
				row(int64(i), j, base+gap+j)
				if bridge {
					row(int64(i), n/2+j, base+gap+n+gap+gap/2+j)
				}
			}
			commitBench(b, task, agg)
			b.StartTimer()
			t0 := time.Now()
			if bridge {
				row(int64(i), 0, base+gap+n+gap/2) // within the gap of both
			} else {
				row(int64(i), 0, base+gap/2) // before the session's start
			}
			t1 := time.Now()
			if err := agg.Flush(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			rowNs, flushNs = rowNs+t1.Sub(t0).Nanoseconds(), flushNs+time.Since(t1).Nanoseconds()
			commitBench(b, task, agg)
			b.StartTimer()
			base += 4 * gap
		}
	})
}

func newSessionBenchTask(b *testing.B, spec *planner.WindowSpec, apart bool) (*testTask, *aggregateOp) {
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	b.Cleanup(func() { res.Close() })
	task := newTestTask(b, windowedDistinctTopology(b, spec, apart), 0, Config{StateDir: b.TempDir(), RocksResources: res}, func(r *kgo.Record) { r.Offset = 1 })
	return task, proc[*physical.Aggregate, *aggregateOp](task)
}

// commitBench ends a benchmark task's transaction as a thread's commit
// does: the aggregate's Flush, the outbox sent, the stores committed.
func commitBench(b *testing.B, task *testTask, agg *aggregateOp) {
	if err := agg.Flush(); err != nil {
		b.Fatal(err)
	}
	task.out.flush()
	for _, st := range task.stores {
		if err := st.commit(); err != nil {
			b.Fatal(err)
		}
	}
	task.out.reset()
}
