//go:build cgo

package state

import (
	"errors"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/linxGnu/grocksdb"
)

// Memtable sizing. Each store keeps at most maxWriteBufferNumber memtables
// (one active, one flushing) of writeBufferSize bytes.
const (
	maxWriteBufferNumber = 2
	minWriteBufferSize   = 256 << 10
	maxWriteBufferSize   = 64 << 20
)

// RocksResources is the memory shared by all the RocksDB stores of one
// server: one LRU block cache (which also holds index and filter blocks),
// one budget for memtables (write buffers), and one for the caches of
// committed values in the overlays over the stores (ValueCache). Create it
// once per server with NewRocksResources, pass it in RocksOptions to every
// OpenRocks, and Close it after the stores.
//
// The write-buffer budget is enforced by resizing, not by RocksDB's
// WriteBufferManager: grocksdb v1.7.15 does not expose one, and neither
// does the C API of RocksDB 7.8 it binds. Instead each open store gets an
// equal share: its memtable size is budget / (open stores × 2), rounded
// down to a power of two and clamped to [256 KiB, 64 MiB]. Opening or
// closing a store recomputes the share and, when the power of two changes,
// resizes the other stores with SetOptions. A resize takes effect at each
// store's next memtable switch, so the total can exceed the budget for a
// while after stores open; it also exceeds it when more than budget/512 KiB
// stores are open, where the 256 KiB floor wins. Rounding keeps the
// resizes to about two per store opened.
type RocksResources struct {
	cache            *grocksdb.Cache
	writeBufferBytes int64
	values           *CacheBudget

	// opening is held (shared) by opens while they use cache outside mu,
	// and by Close before it destroys cache.
	opening sync.RWMutex
	mu      sync.Mutex
	stores  map[*Rocks]struct{}
	closed  bool
	// opened counts stores for readCacheShare, which must not take mu.
	opened atomic.Int64
}

// readCacheShare is the bytes one store's read cache (Rocks.GetShared) may
// hold: the read caches of all open stores share a quarter of the
// value-cache budget (so a memory limit bounds them too), each at most
// readCacheBytes.
func (r *RocksResources) readCacheShare() int {
	return int(min(r.values.total/4/max(r.opened.Load(), 1), readCacheBytes))
}

// NewRocksResources creates the block cache, write-buffer budget and
// value-cache budget for a server. Non-positive sizes select
// DefaultBlockCacheBytes, DefaultWriteBufferBytes and
// DefaultValueCacheBytes.
func NewRocksResources(blockCacheBytes, writeBufferBytes, valueCacheBytes int64) *RocksResources {
	if blockCacheBytes <= 0 {
		blockCacheBytes = DefaultBlockCacheBytes
	}
	if writeBufferBytes <= 0 {
		writeBufferBytes = DefaultWriteBufferBytes
	}
	if valueCacheBytes <= 0 {
		valueCacheBytes = DefaultValueCacheBytes
	}
	return &RocksResources{
		cache:            grocksdb.NewLRUCache(uint64(blockCacheBytes)),
		writeBufferBytes: writeBufferBytes,
		values:           NewCacheBudget(valueCacheBytes),
		stores:           make(map[*Rocks]struct{}),
	}
}

// ValueCache is the budget the overlays over these stores share for their
// caches of committed values (Overlay.ShareCache).
func (r *RocksResources) ValueCache() *CacheBudget { return r.values }

// WriteBufferSize returns the memtable size of each open store: the share
// for the number of stores open now.
func (r *RocksResources) WriteBufferSize() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return int64(r.shareFor(len(r.stores)))
}

// BlockCacheUsage returns the bytes currently held by the block cache, or 0
// after Close.
func (r *RocksResources) BlockCacheUsage() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return 0
	}
	return int64(r.cache.GetUsage())
}

// Close releases the block cache. Close the stores first: stores still open
// keep working (RocksDB holds its own reference to the cache) but are no
// longer resized, and OpenRocks with these resources fails afterwards.
// Close is idempotent.
func (r *RocksResources) Close() error {
	r.opening.Lock()
	defer r.opening.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.cache.Destroy()
	r.stores = nil
	return nil
}

var errResourcesClosed = errors.New("state: rocks resources are closed")

// shareFor returns the memtable size for each of n open stores.
func (r *RocksResources) shareFor(n int) uint64 {
	if n < 1 {
		n = 1
	}
	per := r.writeBufferBytes / int64(n) / maxWriteBufferNumber
	per = min(max(per, minWriteBufferSize), maxWriteBufferSize)
	return 1 << (bits.Len64(uint64(per)) - 1)
}

// open opens s.db in dir and adds s to the stores sharing the budget.
// The database opens outside the lock (an open waits on its files, and a
// thread's tasks open their stores at once): sized for the stores open
// then, it is resized with the others by the rebalance that adds it.
func (r *RocksResources) open(s *Rocks, dir string) error {
	r.opening.RLock()
	defer r.opening.RUnlock()
	r.mu.Lock()
	closed, size := r.closed, r.shareFor(len(r.stores)+1)
	r.mu.Unlock()
	if closed {
		return errResourcesClosed
	}
	if err := s.openDB(dir, r.cache, size); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		s.db.Close()
		s.opts.Destroy()
		return errResourcesClosed
	}
	s.writeBufferSize = size
	r.stores[s] = struct{}{}
	r.opened.Add(1)
	r.rebalanceLocked()
	return nil
}

// release removes s from the stores sharing the budget. It is called before
// s's database closes.
func (r *RocksResources) release(s *Rocks) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	delete(r.stores, s)
	r.opened.Add(-1)
	r.rebalanceLocked()
}

// rebalanceLocked resizes the stores whose memtable size differs from the
// current share. Every store in r.stores is open (release runs before a
// database closes), and rebalancing takes no store's lock, so it cannot
// deadlock with a store's Close. A failed resize is left for the next
// rebalance to retry: the store keeps working at its old size.
//
// grocksdb v1.7.15's DB.SetOptions never frees the two C strings it makes
// per key (about 40 bytes a call here); rounding to powers of two keeps
// the calls, and so that leak, to about two per store opened.
func (r *RocksResources) rebalanceLocked() {
	size := r.shareFor(len(r.stores))
	val := strconv.FormatUint(size, 10)
	for s := range r.stores {
		if s.writeBufferSize == size {
			continue
		}
		if err := s.db.SetOptions([]string{"write_buffer_size"}, []string{val}); err == nil {
			s.writeBufferSize = size
		}
	}
}
