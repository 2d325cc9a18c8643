package metrics

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestHistoryRatesLagAndRing(t *testing.T) {
	r := New()
	var in, out atomic.Int64
	r.WatchQueries(func() []QueryStats {
		return []QueryStats{{ID: "Q_1", State: "RUNNING", RecordsIn: in.Load(), RecordsOut: out.Load(), BadRecords: 1}}
	})
	q := r.Query("Q_1")
	q.SetLag("in", 0, 30)
	q.SetLag("in", 1, 12)
	q.SetRestore("agg", 0, 5, 10)
	h := NewHistory(r, time.Second, 3)
	t0 := time.Unix(1000, 0)
	h.Sample(t0)
	in.Store(500)
	out.Store(100)
	h.Sample(t0.Add(5 * time.Second))
	s := h.Series()["Q_1"]
	if len(s) != 2 {
		t.Fatalf("got %d samples, want 2", len(s))
	}
	p := s[1]
	if p.InRate != 100 || p.OutRate != 20 || p.Lag != 42 || p.BadRecords != 1 || p.State != "RUNNING" || p.Restored != 5 || p.RestoreTotal != 10 {
		t.Fatalf("second sample = %+v", p)
	}
	for i := 2; i < 6; i++ {
		h.Sample(t0.Add(time.Duration(i*5) * time.Second))
	}
	s = h.Series()["Q_1"]
	if len(s) != 3 || s[2].Time != t0.Add(25*time.Second).UnixMilli() || s[0].Time != t0.Add(15*time.Second).UnixMilli() {
		t.Fatalf("ring keeps %d samples, times %v", len(s), s)
	}
	if last, ok := h.Latest("Q_1"); !ok || last.InRate != 0 {
		t.Fatalf("latest = %+v %v, want a zero rate once nothing moves", last, ok)
	}
	// A terminated query (its series gone) is forgotten.
	r.WatchQueries(nil)
	q.Close()
	h.Sample(t0.Add(time.Minute))
	if _, ok := h.Latest("Q_1"); ok {
		t.Fatal("a terminated query's history is kept")
	}
}

// BenchmarkHistorySample samples a registry with 100 queries of 4 input
// partitions each: the cost of one 5-second tick.
func BenchmarkHistorySample(b *testing.B) {
	r := New()
	stats := make([]QueryStats, 100)
	for i := range stats {
		id := "Q_" + string(rune('A'+i%26)) + string(rune('A'+i/26))
		stats[i] = QueryStats{ID: id, State: "RUNNING", RecordsIn: int64(i), RecordsOut: int64(i)}
		q := r.Query(id)
		for p := int32(0); p < 4; p++ {
			q.SetLag("in", p, 10)
		}
	}
	r.WatchQueries(func() []QueryStats { return stats })
	h := NewHistory(r, 0, 0)
	now := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		h.Sample(now.Add(time.Duration(i) * DefaultSampleInterval))
	}
}
