//go:build !cgo

package state

import "errors"

// Without cgo there is no RocksDB: OpenRocks fails, so a server built
// this way runs only queries without state. The build exists so that the
// packages above type-check on any platform (GOOS=darwin go vet ./...);
// sqlstreams is built with cgo and Debian's librocksdb.

// ErrNoRocksDB is OpenRocks' error in a build without cgo.
var ErrNoRocksDB = errors.New("state: this build of sqlstreams has no RocksDB (it was built without cgo); build it with CGO_ENABLED=1 and librocksdb")

// Rocks is never opened without cgo; its methods are the interfaces'.
type Rocks struct {
	Store
	Flusher
	BulkWriter
	RangeDeleter
	SharedGetter
	Seekable
	Ingester
}

// OpenRocks fails: see ErrNoRocksDB.
func OpenRocks(dir string, opts RocksOptions) (*Rocks, error) { return nil, ErrNoRocksDB }

// FlushMemtables is Rocks' own; never called without cgo.
func (r *Rocks) FlushMemtables() error { return ErrNoRocksDB }

// RocksResources holds the value-cache budget only: there is no block
// cache or memtable without RocksDB.
type RocksResources struct {
	values *CacheBudget
}

// NewRocksResources returns the value-cache budget; the other sizes are
// ignored.
func NewRocksResources(blockCacheBytes, writeBufferBytes, valueCacheBytes int64) *RocksResources {
	if valueCacheBytes <= 0 {
		valueCacheBytes = DefaultValueCacheBytes
	}
	return &RocksResources{values: NewCacheBudget(valueCacheBytes)}
}

// ValueCache is the budget the overlays share for their caches.
func (r *RocksResources) ValueCache() *CacheBudget { return r.values }

// WriteBufferSize is 0: there are no memtables.
func (r *RocksResources) WriteBufferSize() int64 { return 0 }

// BlockCacheUsage is 0: there is no block cache.
func (r *RocksResources) BlockCacheUsage() int64 { return 0 }

// Close does nothing.
func (r *RocksResources) Close() error { return nil }
