package exec

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestHandOffKeepsOrder gives runs of records to a handOff whose client
// is slow to take them: they reach it in the order given, settle returns
// only once every one has, and once a few runs go round handing over
// allocates nothing.
func TestHandOffKeepsOrder(t *testing.T) {
	var got []int64
	gate := make(chan struct{}, 1)
	h := newHandOff(func(r *kgo.Record) {
		<-gate
		got = append(got, r.Offset)
	})
	defer h.close()
	recs := make([]kgo.Record, 100)
	out := &outbox{hand: h}
	next := int64(0)
	giveRun := func(n int) {
		for range n {
			r := &recs[next%int64(len(recs))]
			r.Offset = next
			next++
			out.produce(r)
		}
		out.flush()
	}
	for run := range handOffRuns - 2 { // no more than the queue holds: the client waits for the gate
		giveRun(run%5 + 1)
	}
	done := make(chan struct{})
	go func() {
		out.settle()
		close(done)
	}()
	for sent := int64(0); sent < next; sent++ {
		select {
		case <-done:
			t.Fatalf("settle returned with %d of %d records handed over", sent, next)
		default:
		}
		gate <- struct{}{}
	}
	<-done
	if int64(len(got)) != next {
		t.Fatalf("%d records handed over, want %d", len(got), next)
	}
	for i, off := range got {
		if off != int64(i) {
			t.Fatalf("record %d handed over as the %dth", off, i)
		}
	}

	close(gate) // the client takes records at once from now on
	allocs := testing.AllocsPerRun(100, func() {
		giveRun(7)
		out.settle()
	})
	if allocs != 0 {
		t.Errorf("a run given and settled allocates %.1f times", allocs)
	}
}
