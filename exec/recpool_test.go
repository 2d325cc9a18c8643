package exec

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestRecordPool(t *testing.T) {
	var p recordPool
	for _, n := range []int{0, 1, 2, 3, 100, 4096, 5000} {
		s := p.GetRecords(n)
		if len(s) != 0 || cap(s) < n {
			t.Fatalf("GetRecords(%d): len %d cap %d", n, len(s), cap(s))
		}
	}
	// A slice put back is lent again, for any count its capacity covers.
	s := p.GetRecords(3000)
	p.PutRecords(s[:cap(s)])
	if got := p.GetRecords(2100); cap(got) != cap(s) || &got[:1][0] != &s[:1][0] {
		t.Fatalf("GetRecords after PutRecords: got a new slice (cap %d), want the one put back (cap %d)", cap(got), cap(s))
	}
	if got := p.GetRecords(2100); &got[:1][0] == &s[:1][0] {
		t.Fatal("one slice lent twice")
	}
	// Slices of other capacities (not lent by the pool) are dropped.
	p.PutRecords(make([]kgo.Record, 0, 3000))
	if got := p.GetRecords(3000); cap(got) != 4096 {
		t.Fatalf("cap %d, want 4096 (a new slice)", cap(got))
	}
	// At most recordPoolDepth slices of a size are kept.
	for i := 0; i < 2*recordPoolDepth; i++ {
		p.PutRecords(make([]kgo.Record, 8))
	}
	if n := len(p.free[3]); n != recordPoolDepth {
		t.Fatalf("kept %d slices of 8, want %d", n, recordPoolDepth)
	}
}
