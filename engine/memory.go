package engine

import "fmt"

// MinMemoryLimit is the smallest memory limit a server accepts.
const MinMemoryLimit = 256 << 20

// MemoryBudget is how one memory limit for a server (--memory-limit) is
// shared out. RocksDB's block cache and memtables live outside the Go
// heap, so the Go runtime's soft limit (GoSoftLimit, for
// debug.SetMemoryLimit) is what is left of the limit after them and an
// allowance for RocksDB's other native memory (iterators, table readers,
// compaction buffers). Inside the Go heap the value cache in front of the
// stores is the one large cache; the stream threads' fetch buffers are
// bounded per client (FetchMaxBytes). The rest of the Go heap — records
// in flight, producer buffers, pull and push query results — is what the
// soft limit leaves room for; the GC works harder as it fills.
type MemoryBudget struct {
	Limit        int64
	BlockCache   int64 // RocksDB block cache (index and filter blocks too)
	WriteBuffers int64 // RocksDB memtables, all stores
	NativeSlack  int64 // RocksDB's other native memory
	ValueCache   int64 // committed values cached in front of the stores (Go heap)
	GoSoftLimit  int64 // for debug.SetMemoryLimit
	// FetchMaxBytes bounds one fetch of each stream thread's client.
	FetchMaxBytes int32
}

// NewMemoryBudget shares limit out: a quarter for the block cache, an
// eighth each for memtables and the value cache, a sixteenth for RocksDB's
// other native memory, and the Go heap's soft limit at the rest (9/16 of
// the limit, the value cache included). Each stream thread fetches at most
// limit/256 bytes at a time (between 1 MiB and 50 MiB).
func NewMemoryBudget(limit int64) (MemoryBudget, error) {
	if limit < MinMemoryLimit {
		return MemoryBudget{}, fmt.Errorf("a memory limit of %d bytes is below the minimum of %d MiB", limit, MinMemoryLimit>>20)
	}
	b := MemoryBudget{
		Limit:        limit,
		BlockCache:   limit / 4,
		WriteBuffers: limit / 8,
		NativeSlack:  limit / 16,
		ValueCache:   limit / 8,
	}
	b.GoSoftLimit = limit - b.BlockCache - b.WriteBuffers - b.NativeSlack
	b.FetchMaxBytes = int32(min(max(limit/256, 1<<20), 50<<20))
	return b, nil
}
