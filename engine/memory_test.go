package engine

import "testing"

func TestNewMemoryBudget(t *testing.T) {
	for _, limit := range []int64{MinMemoryLimit, 1 << 30, 3<<30 + 12345, 64 << 30} {
		b, err := NewMemoryBudget(limit)
		if err != nil {
			t.Fatal(err)
		}
		// Native memory plus the Go heap's soft limit (which holds the
		// value cache) is the limit, with nothing counted twice.
		if sum := b.BlockCache + b.WriteBuffers + b.NativeSlack + b.GoSoftLimit; sum != limit {
			t.Errorf("limit %d: shares add up to %d", limit, sum)
		}
		if b.ValueCache >= b.GoSoftLimit/2 {
			t.Errorf("limit %d: value cache %d leaves too little of the Go heap's %d", limit, b.ValueCache, b.GoSoftLimit)
		}
		if b.HeapFloor <= 0 || b.HeapFloor+b.ValueCache > b.GoSoftLimit/2 {
			t.Errorf("limit %d: a heap floor of %d with a value cache of %d in a Go heap of %d", limit, b.HeapFloor, b.ValueCache, b.GoSoftLimit)
		}
		if b.MaxTxnRecords < 4096 {
			t.Errorf("limit %d: transactions of at most %d records", limit, b.MaxTxnRecords)
		}
		if b.FetchMaxBytes < 1<<20 || b.FetchMaxBytes > 50<<20 {
			t.Errorf("limit %d: fetch max %d outside [1 MiB, 50 MiB]", limit, b.FetchMaxBytes)
		}
	}
	if _, err := NewMemoryBudget(MinMemoryLimit - 1); err == nil {
		t.Error("a limit below the minimum was accepted")
	}
}
