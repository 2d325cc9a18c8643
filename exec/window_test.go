package exec

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

func testWindowing(t *testing.T, typ types.WindowType, size, advance int64, zone string) *windowing {
	t.Helper()
	spec, err := planner.NewWindowSpec(typ, size, advance, -1, 0, zone)
	if err != nil {
		t.Fatal(err)
	}
	w, err := newWindowing("AGGREGATE", &physical.Aggregate{Window: spec}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWindowsFor pins which windows a timestamp falls into: aligned to
// the epoch, start inclusive, end exclusive, never starting before 0.
func TestWindowsFor(t *testing.T) {
	for _, c := range []struct {
		typ           types.WindowType
		size, advance int64
		ts            int64
		starts        []int64
	}{
		{types.Tumbling, 60_000, 60_000, 0, []int64{0}},
		{types.Tumbling, 60_000, 60_000, 59_999, []int64{0}},
		{types.Tumbling, 60_000, 60_000, 60_000, []int64{60_000}},
		{types.Hopping, 60_000, 20_000, 65_000, []int64{20_000, 40_000, 60_000}},
		{types.Hopping, 60_000, 20_000, 60_000, []int64{20_000, 40_000, 60_000}},
		{types.Hopping, 60_000, 20_000, 5_000, []int64{0}},
		{types.Hopping, 10, 3, 10, []int64{3, 6, 9}},
	} {
		w := testWindowing(t, c.typ, c.size, c.advance, "")
		w.windowsFor(c.ts)
		if !slices.Equal(w.starts, c.starts) {
			t.Errorf("%s %d/%d at %d: starts %v, want %v", c.typ, c.size, c.advance, c.ts, w.starts, c.starts)
		}
		for i, s := range w.starts {
			if w.ends[i] != s+c.size {
				t.Errorf("%s at %d: window %d ends at %d", c.typ, c.ts, s, w.ends[i])
			}
		}
	}
}

// TestWindowsForTimeZone: day windows in a time zone run from local
// midnight to local midnight, 23 hours long on the day daylight saving
// starts and 25 on the day it ends.
func TestWindowsForTimeZone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	day := int64(24 * time.Hour / time.Millisecond)
	w := testWindowing(t, types.Tumbling, day, day, "Europe/Berlin")
	for _, c := range []struct {
		at         time.Time
		start, end time.Time
	}{
		{time.Date(2026, 3, 29, 12, 0, 0, 0, berlin), time.Date(2026, 3, 29, 0, 0, 0, 0, berlin), time.Date(2026, 3, 30, 0, 0, 0, 0, berlin)},
		{time.Date(2026, 10, 25, 23, 59, 0, 0, berlin), time.Date(2026, 10, 25, 0, 0, 0, 0, berlin), time.Date(2026, 10, 26, 0, 0, 0, 0, berlin)},
		{time.Date(2026, 7, 1, 0, 0, 0, 0, berlin), time.Date(2026, 7, 1, 0, 0, 0, 0, berlin), time.Date(2026, 7, 2, 0, 0, 0, 0, berlin)},
		{time.Date(2026, 6, 30, 23, 59, 59, 0, berlin), time.Date(2026, 6, 30, 0, 0, 0, 0, berlin), time.Date(2026, 7, 1, 0, 0, 0, 0, berlin)},
	} {
		w.windowsFor(c.at.UnixMilli())
		if len(w.starts) != 1 || w.starts[0] != c.start.UnixMilli() || w.ends[0] != c.end.UnixMilli() {
			t.Errorf("%s: windows %v-%v, want [%s, %s)", c.at, w.starts, w.ends, c.start, c.end)
			continue
		}
		if got := w.end(w.starts[0]); got != w.ends[0] {
			t.Errorf("%s: end(%d) = %d, want %d", c.at, w.starts[0], got, w.ends[0])
		}
	}
	if h := (time.Date(2026, 3, 30, 0, 0, 0, 0, berlin).Sub(time.Date(2026, 3, 29, 0, 0, 0, 0, berlin))); h != 23*time.Hour {
		t.Fatalf("29 March 2026 in Berlin lasts %s", h)
	}
	// Hourly hopping windows in a zone 5:45 ahead of UTC align to its
	// half hours, not UTC's.
	kathmandu := testWindowing(t, types.Hopping, 3_600_000, 1_800_000, "Asia/Kathmandu")
	ts := time.Date(2026, 1, 1, 10, 15, 0, 0, time.UTC).UnixMilli() // 16:00 in Kathmandu
	kathmandu.windowsFor(ts)
	want := []int64{time.Date(2026, 1, 1, 9, 45, 0, 0, time.UTC).UnixMilli(), time.Date(2026, 1, 1, 10, 15, 0, 0, time.UTC).UnixMilli()}
	if !slices.Equal(kathmandu.starts, want) {
		t.Fatalf("Kathmandu hopping windows at %d: %v, want %v", ts, kathmandu.starts, want)
	}
}

// hoppingTask is GROUP BY auction over hopping windows of 10 s advancing
// by 2 s (Nexmark q5's shape: five windows per row), RocksDB state;
// emit is "changes", "final" (EMIT FINAL at each commit, queries
// recorded before) or "final-on-close" (EMIT FINAL as ksqlDB's).
func hoppingTask(t testing.TB, emit string, send func(*kgo.Record)) *aggTask {
	spec, err := planner.NewWindowSpec(types.Hopping, 10_000, 2_000, -1, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	task := newWindowedAggTask(t, spec, send)
	task.agg.win.final = emit != "changes"
	task.agg.win.onClose = emit == "final-on-close"
	return task
}

// windowFeeder feeds bids over 100 auctions with event time advancing
// 1 ms a record, committing every 10,000 records as the thread would.
type windowFeeder struct {
	task *aggTask
	recs []*kgo.Record
	i    int
}

func newWindowFeeder(task *aggTask) *windowFeeder {
	f := &windowFeeder{task: task, recs: make([]*kgo.Record, 100)}
	for i := range f.recs {
		f.recs[i] = &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(i)), Value: []byte(`{"bidder":7,"price":3}`)}
	}
	return f
}

func (f *windowFeeder) step(t testing.TB) {
	r := f.recs[f.i%len(f.recs)]
	r.Timestamp = time.UnixMilli(int64(f.i))
	if err := f.task.feed(r); err != nil {
		t.Fatal(err)
	}
	f.task.out.flush()
	if f.i++; f.i%10_000 == 0 {
		if err := f.task.agg.Flush(); err != nil {
			t.Fatal(err)
		}
		f.task.out.flush()
		if err := f.task.store.commit(); err != nil {
			t.Fatal(err)
		}
		f.task.out.reset()
	}
}

// TestWindowAllocations: the window operator's steady state (a row into
// its five hopping windows, EMIT CHANGES and EMIT FINAL, with commits,
// emission of closed windows and retention) allocates nothing per row.
func TestWindowAllocations(t *testing.T) {
	for _, emit := range windowEmits {
		f := newWindowFeeder(hoppingTask(t, emit, func(r *kgo.Record) { r.Offset = 1 }))
		for range 30_000 {
			f.step(t)
		}
		if n := testing.AllocsPerRun(20_000, func() { f.step(t) }); n > 0.01 {
			t.Errorf("emit %s: %.3f allocations per record", emit, n)
		}
	}
}

var windowEmits = []string{"changes", "final", "final-on-close"}

// BenchmarkWindowUpdate measures the window operator alone: a row into
// its five hopping windows (state reads and writes through the overlay
// over RocksDB, changelog records at commit, output rows).
func BenchmarkWindowUpdate(b *testing.B) {
	for _, emit := range windowEmits {
		b.Run("emit="+emit, func(b *testing.B) {
			f := newWindowFeeder(hoppingTask(b, emit, func(r *kgo.Record) { r.Offset = 1 }))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				f.step(b)
			}
		})
	}
}

// TestEmitFinalStreamTimeJump: EMIT FINAL (ksqlDB's, on close) emits
// every window that held rows exactly once, however far stream time
// jumps past its close: 20 s of in-order bids over 700 auctions in
// TUMBLING 10 s windows without grace, then one bid a day later, which
// closes the second period's windows (Kafka Streams fetches only those
// within the retention of the latest window start, and loses them) and
// expires all of them, committing every 1,000 records as the thread
// would.
func TestEmitFinalStreamTimeJump(t *testing.T) {
	spec, err := planner.NewWindowSpec(types.Tumbling, 10_000, 10_000, -1, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	emitted := map[[2]int64]int{}
	task := newWindowedAggTask(t, spec, func(r *kgo.Record) {
		if r.Topic == "out" {
			k := r.Key
			emitted[[2]int64{int64(binary.BigEndian.Uint64(k)), int64(binary.BigEndian.Uint64(k[len(k)-8:]))}]++
		}
	})
	task.agg.win.final, task.agg.win.onClose = true, true
	windows := map[[2]int64]bool{}
	n := 0
	send := func(auction, ts int64) {
		r := &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(auction)), Value: []byte(`{"bidder":7,"price":3}`), Timestamp: time.UnixMilli(ts)}
		if err := task.feed(r); err != nil {
			t.Fatal(err)
		}
		task.out.flush()
		if n++; n%1000 == 0 {
			commitTask(t, task)
		}
	}
	for i := int64(0); i*7 < 20_000; i++ {
		ts, a := i*7, (i*7919)%700
		send(a, ts)
		windows[[2]int64{a, ts / 10_000 * 10_000}] = true
	}
	commitTask(t, task)
	closedBefore := len(emitted)
	day := int64(24 * time.Hour / time.Millisecond)
	send(1, day)
	commitTask(t, task)
	if closedBefore == 0 || closedBefore == len(windows) {
		t.Fatalf("%d of %d windows emitted before the jump: the input does not test it", closedBefore, len(windows))
	}
	for w := range windows {
		if emitted[w] != 1 {
			t.Errorf("window %v emitted %d times", w, emitted[w])
		}
	}
	if len(emitted) != len(windows) {
		t.Errorf("%d windows emitted, %d held rows", len(emitted), len(windows))
	}
	// The jump expired them: only the last bid's window and the progress
	// mark are left.
	it, err := task.store.ov.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	for it.Next() {
		if k := it.Key(); len(k) >= 8 && storedStart(k) < day/10_000*10_000 {
			t.Errorf("window %d of auction %x still stored", storedStart(k), k[8:])
		}
		left++
	}
	it.Close()
	if left != 2 {
		t.Errorf("%d keys left in the store, want the new window and the mark", left)
	}
}

// commitTask flushes the task's aggregation and commits its store, as
// the thread does at a commit.
func commitTask(t *testing.T, task *aggTask) {
	t.Helper()
	if err := task.agg.Flush(); err != nil {
		t.Fatal(err)
	}
	task.out.flush()
	if err := task.store.commit(); err != nil {
		t.Fatal(err)
	}
	task.out.reset()
}

// TestEmitFinalSessionsStreamTimeJump: EMIT FINAL over session windows
// emits each session once when it expires, however far stream time
// jumps: every session of 20 s of bids (several per auction) is emitted
// after one bid a day later, and none is left in the store.
func TestEmitFinalSessionsStreamTimeJump(t *testing.T) {
	spec, err := planner.NewWindowSpec(types.Session, 500, 0, -1, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	emitted := map[string]int{}
	task := newWindowedAggTask(t, spec, func(r *kgo.Record) {
		if r.Topic == "out" {
			if r.Value == nil {
				t.Errorf("EMIT FINAL wrote a tombstone for %x", r.Key)
			}
			emitted[string(r.Key)]++
		}
	})
	task.agg.win.final = true
	n := 0
	send := func(auction, ts int64) {
		r := &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(auction)), Value: []byte(`{"bidder":7,"price":3}`), Timestamp: time.UnixMilli(ts)}
		if err := task.feed(r); err != nil {
			t.Fatal(err)
		}
		task.out.flush()
		if n++; n%1000 == 0 {
			commitTask(t, task)
		}
	}
	// Auction a bids every 100 ms for 1 s, then pauses 1 s: sessions of
	// [2 s·j + a ms, 2 s·j + 900 + a ms].
	sessions := map[string]bool{}
	for j := int64(0); j < 10; j++ {
		for step := int64(0); step < 10; step++ {
			for a := int64(0); a < 50; a++ {
				send(a, 2000*j+100*step+a)
			}
		}
		for a := int64(0); a < 50; a++ {
			k := binary.BigEndian.AppendUint64(nil, uint64(a))
			sessions[string(types.Session.AppendWindowKey(k, 2000*j+a, 2000*j+900+a))] = true
		}
	}
	commitTask(t, task)
	before := len(emitted)
	send(1, int64(24*time.Hour/time.Millisecond))
	commitTask(t, task)
	if before == 0 || before == len(sessions) {
		t.Fatalf("%d of %d sessions emitted before the jump: the input does not test it", before, len(sessions))
	}
	for k := range sessions {
		if emitted[k] != 1 {
			t.Errorf("session %x emitted %d times", k, emitted[k])
		}
	}
	if len(emitted) != len(sessions) {
		t.Errorf("%d sessions emitted, want %d", len(emitted), len(sessions))
	}
}
