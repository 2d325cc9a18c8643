package engine

import (
	"runtime"
	"runtime/debug"
	"testing"
)

var gcFloorSink []byte

// collections allocates n bytes of garbage and returns how many
// collections that took.
func collections(n int) uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.NumGC
	for range n / (64 << 10) {
		gcFloorSink = make([]byte, 64<<10)
	}
	runtime.ReadMemStats(&ms)
	return ms.NumGC - before
}

// TestHeapFloor: with a floor, a small live heap is collected once per
// floor's worth of garbage, not once per live heap's worth; without one
// (and after it is removed) GOGC is as it was.
func TestHeapFloor(t *testing.T) {
	base := debug.SetGCPercent(100)
	debug.SetGCPercent(base)
	if base <= 0 {
		t.Skip("GOGC is off")
	}
	runtime.GC()
	without := collections(512 << 20)
	SetHeapFloor(256 << 20)
	runtime.GC() // the floor applies from the next collection's end
	with := collections(512 << 20)
	SetHeapFloor(0)
	t.Logf("collections for 512 MiB of garbage: %d without a floor, %d with a 256 MiB floor", without, with)
	if with > 6 || without < 3*with {
		t.Errorf("collections: %d with a 256 MiB floor, %d without; want at most 6 with, and 3× as many without", with, without)
	}
	if got := debug.SetGCPercent(base); got != base {
		t.Errorf("GOGC after the floor is removed: %d, want %d", got, base)
	}
}

func TestHeapFloorPercent(t *testing.T) {
	for _, c := range []struct {
		floor, live, scan int64
		base, want        int
	}{
		{100 << 20, 10 << 20, 10 << 20, 100, 900}, // goal 100 MiB
		{100 << 20, 10 << 20, 20 << 20, 100, 450}, // stacks and globals count
		{100 << 20, 80 << 20, 80 << 20, 100, 100}, // 2 × live is above the floor
		{100 << 20, 200 << 20, 200 << 20, 50, 50}, // live above the floor: the base
		{1 << 30, 0, 0, 100, 100_000},             // an empty heap: capped
		{64 << 20, 1 << 20, 1 << 20, 200, 6300},   // goal 64 MiB
	} {
		if got := heapFloorPercent(c.floor, c.live, c.scan, c.base); got != c.want {
			t.Errorf("floor %d, live %d, scan %d, base %d: %d, want %d", c.floor, c.live, c.scan, c.base, got, c.want)
		}
	}
}
