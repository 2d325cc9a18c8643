package engine

import (
	"fmt"
	"strconv"
	"strings"
)

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
	// HeapFloor is the Go heap's goal when its live part is small
	// (SetHeapFloor): fewer collections, so shorter pull-query tails.
	HeapFloor int64
	// FetchMaxBytes bounds one fetch of each stream thread's client.
	FetchMaxBytes int32
	// MaxTxnRecords bounds the records of one transaction of a stream
	// thread, and so the buffers it holds (about 1 KiB a record: its
	// output and changelog records and changed groups).
	MaxTxnRecords int
}

// NewMemoryBudget shares limit out: a quarter for the block cache, an
// eighth each for memtables and the value cache, a sixteenth for RocksDB's
// other native memory, and the Go heap's soft limit at the rest (9/16 of
// the limit, the value cache included); the Go heap may grow to an eighth
// of the limit before it is collected (HeapFloor). Each stream thread fetches at most
// limit/1024 bytes at a time (between 1 MiB and 50 MiB; a fetch of small records decodes into many more bytes of records).
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
	b.HeapFloor = limit / 8
	b.FetchMaxBytes = int32(min(max(limit/1024, 1<<20), 50<<20))
	b.MaxTxnRecords = int(limit >> 16)
	return b, nil
}

// ParseBytes reads a size such as 64MiB, 512KiB, 1GiB or a plain number of
// bytes.
func ParseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"B", 1}}
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(strings.ToUpper(t), strings.ToUpper(u.suffix)) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad size %q (want e.g. 64MiB)", s)
	}
	return n * mult, nil
}
