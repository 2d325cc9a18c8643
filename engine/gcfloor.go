package engine

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// A heap floor keeps the Go heap's goal at no less than a given size.
//
// The Go runtime starts a collection when the heap has grown by GOGC
// percent over what the last one left live. A server whose live heap is
// small (a few MB: its state is in RocksDB and the value cache is cold
// or off) then collects every few hundred milliseconds under load, and
// each collection's mark phase takes one of the machine's cores for
// milliseconds: the requests that arrive meanwhile wait, which is what a
// pull query's p99 latency is made of. Under --memory-limit, memory up
// to the budget is the server's to use, so the heap may grow to a floor
// inside it before collecting; the soft limit (debug.SetMemoryLimit)
// still bounds the heap as before, and a live heap above the floor is
// collected at GOGC as without one.
//
// The floor is kept by setting GOGC after each collection to what puts
// the next goal at the floor when the base GOGC would put it lower: Go
// has no minimum heap
// goal of its own, and a ballast (a large never-touched allocation) would
// count against the soft limit.

// heapFloor is the process's floor (the Go runtime's settings are the
// process's).
var heapFloor struct {
	mu      sync.Mutex
	floor   int64 // 0: none
	base    int   // GOGC without the floor
	percent int   // GOGC as last set
	armed   bool
}

// SetHeapFloor keeps the Go heap's goal at least floor bytes (0 removes
// the floor). The base GOGC is the one in effect when it is first set.
func SetHeapFloor(floor int64) {
	heapFloor.mu.Lock()
	defer heapFloor.mu.Unlock()
	if floor > 0 && heapFloor.floor == 0 {
		heapFloor.base = debug.SetGCPercent(100)
		debug.SetGCPercent(heapFloor.base)
		heapFloor.percent = heapFloor.base
	}
	if floor <= 0 && heapFloor.floor > 0 {
		debug.SetGCPercent(heapFloor.base)
		heapFloor.percent = heapFloor.base
	}
	heapFloor.floor = max(floor, 0)
	if heapFloor.floor > 0 && heapFloor.base > 0 {
		retuneHeapFloorLocked()
		if !heapFloor.armed {
			heapFloor.armed = true
			armHeapFloor()
		}
	}
}

// gcSentinel is garbage whose finalizer runs after a collection.
type gcSentinel struct{ _ [16]byte }

// armHeapFloor retunes GOGC after the next collection, and again after
// each one while a floor is set.
func armHeapFloor() {
	runtime.SetFinalizer(new(gcSentinel), func(*gcSentinel) {
		heapFloor.mu.Lock()
		defer heapFloor.mu.Unlock()
		if heapFloor.floor == 0 || heapFloor.base <= 0 {
			heapFloor.armed = false
			return
		}
		retuneHeapFloorLocked()
		armHeapFloor()
	})
}

// The collector's goal is live + scan × GOGC/100, scan being the live
// heap and some of the stacks and globals (as the runtime counts them);
// scan is read back from the goal the runtime set at the current GOGC.
var heapSamples = []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/heap/goal:bytes"}}

// retuneHeapFloorLocked sets GOGC for the live heap the last collection
// left. GOGC off (base < 0) is left alone.
func retuneHeapFloorLocked() {
	metrics.Read(heapSamples)
	var live, goal int64
	if s := heapSamples[0]; s.Value.Kind() == metrics.KindUint64 {
		live = int64(s.Value.Uint64())
	}
	if s := heapSamples[1]; s.Value.Kind() == metrics.KindUint64 {
		goal = int64(s.Value.Uint64())
	}
	scan := live
	if heapFloor.percent > 0 && goal > live {
		scan = (goal - live) * 100 / int64(heapFloor.percent)
	}
	p := heapFloorPercent(heapFloor.floor, live, scan, heapFloor.base)
	// Setting GOGC costs a little: only a change of a tenth or more.
	if d := p - heapFloor.percent; d*10 > heapFloor.percent || -d*10 > heapFloor.percent {
		debug.SetGCPercent(p)
		heapFloor.percent = p
	}
}

// heapFloorPercent is the GOGC that puts the next goal, live + scan ×
// GOGC/100 (scan: the live heap, stacks and globals), at max(floor, the
// goal at base).
func heapFloorPercent(floor, live, scan int64, base int) int {
	scan = max(scan, 1<<20) // a tiny heap would ask for an absurd percent
	need := (floor - live) * 100 / scan
	return int(max(int64(base), min(need, 100_000)))
}
