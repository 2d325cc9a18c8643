//go:build cgo

package state

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/linxGnu/grocksdb"
)

var (
	_ Store   = (*Rocks)(nil)
	_ Flusher = (*Rocks)(nil)
)

// Rocks is a Store on RocksDB (through grocksdb and the system's librocksdb).
// One Rocks is one RocksDB database in its own directory.
//
// Every method is safe for concurrent use, writers included; RocksDB does
// its own locking and Rocks adds a read lock per call only so that Close
// cannot free the database under a running call. No write is fsynced on
// its own (see RocksOptions.DisableWAL and Flush). Get returns a fresh copy
// of the value. Range's iterators read a snapshot taken when Range returns
// and read their bounds from a private copy; an iterator pins the
// memtables and files of its snapshot, so close iterators promptly (an
// iterator that reaches its end frees itself early).
//
// Tuning: LZ4 compression, full Bloom filters (10 bits per key) and a
// whole-key Bloom filter on the memtable, index and filter blocks in the
// shared block cache, two memtables per store sized by RocksResources, info
// log at WARN level with two 1 MiB files kept.
type Rocks struct {
	mu     sync.RWMutex // read-held by every call; Close holds it exclusively
	closed bool
	dir    string
	// ingests numbers IngestBatch's files, so concurrent calls never
	// share one.
	ingests atomic.Uint64

	db     *grocksdb.DB
	opts   *grocksdb.Options
	ro     *grocksdb.ReadOptions
	wo     *grocksdb.WriteOptions
	woBulk *grocksdb.WriteOptions // without the WAL, for ApplyBatchUnlogged

	// rep is ApplyBatch's reused buffer for RocksDB's batch format.
	repMu sync.Mutex
	rep   []byte

	res             *RocksResources
	ownRes          bool
	walDisabled     bool
	writeBufferSize uint64 // guarded by res.mu

	itersMu sync.Mutex
	iters   map[*rocksIter]struct{}
	seekers map[*rocksSeeker]struct{}

	// reads caches values for GetShared (pull queries); every write
	// advances its generation.
	reads readCache
}

// OpenRocks opens the RocksDB store in dir, creating dir and the database
// when missing. Two opens of one directory in a process fail (RocksDB's
// LOCK file).
func OpenRocks(dir string, opts RocksOptions) (*Rocks, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state: open rocks: %w", err)
	}
	r := &Rocks{
		dir:         dir,
		res:         opts.Resources,
		walDisabled: opts.DisableWAL,
		iters:       make(map[*rocksIter]struct{}),
		seekers:     make(map[*rocksSeeker]struct{}),
	}
	if r.res == nil {
		r.res = NewRocksResources(8<<20, 16<<20, 0)
		r.ownRes = true
	}
	if err := r.res.open(r, dir); err != nil {
		if r.ownRes {
			r.res.Close()
		}
		return nil, fmt.Errorf("state: open rocks %s: %w", dir, err)
	}
	r.ro = grocksdb.NewDefaultReadOptions()
	r.wo = grocksdb.NewDefaultWriteOptions()
	r.wo.SetSync(false)
	r.wo.DisableWAL(r.walDisabled)
	r.woBulk = grocksdb.NewDefaultWriteOptions()
	r.woBulk.DisableWAL(true)
	return r, nil
}

// openDB builds the options and opens the database; on error it frees
// everything it created. Called by RocksResources.open.
func (r *Rocks) openDB(dir string, cache *grocksdb.Cache, writeBufferSize uint64) error {
	bbto := grocksdb.NewDefaultBlockBasedTableOptions()
	bbto.SetBlockCache(cache)
	bbto.SetFilterPolicy(grocksdb.NewBloomFilterFull(10)) // moved into bbto
	bbto.SetCacheIndexAndFilterBlocks(true)
	bbto.SetPinL0FilterAndIndexBlocksInCache(true)

	opts := grocksdb.NewDefaultOptions()
	opts.SetCreateIfMissing(true)
	opts.SetBlockBasedTableFactory(bbto) // copies the table options
	bbto.Destroy()
	opts.SetCompression(grocksdb.LZ4Compression)
	opts.SetWriteBufferSize(writeBufferSize)
	// The arena's block size is fixed at open (RocksDB derives it from
	// the write buffer size then); a store opened with a large buffer and
	// shrunk by RocksResources' rebalance would start each new memtable
	// past its size, which RocksDB asserts against (memtable.cc
	// "!ShouldScheduleFlush()", a SIGABRT seen with many stores). Blocks
	// of an eighth of the smallest share fit every size.
	opts.SetArenaBlockSize(minWriteBufferSize / 8)
	// A Bloom filter over the memtable's whole keys: a point lookup of a
	// key the memtable lacks (an aggregate's new group) skips its search.
	opts.SetMemTablePrefixBloomSizeRatio(0.1)
	opts.SetMemtableWholeKeyFiltering(true)
	opts.SetMaxWriteBufferNumber(maxWriteBufferNumber)
	opts.SetInfoLogLevel(grocksdb.WarnInfoLogLevel)
	opts.SetKeepLogFileNum(2)
	opts.SetMaxLogFileSize(1 << 20)

	db, err := grocksdb.OpenDb(opts, dir)
	if err != nil {
		opts.Destroy()
		return err
	}
	r.db, r.opts = db, opts
	return nil
}

// Get implements Store. The value is copied out of RocksDB (one allocation,
// none for an empty value).
func (r *Rocks) Get(key []byte) ([]byte, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return nil, ErrClosed
	}
	h, err := r.db.GetPinned(r.ro, key)
	if err != nil {
		return nil, fmt.Errorf("state: rocks get: %w", err)
	}
	if !h.Exists() {
		return nil, nil
	}
	d := h.Data()
	v := emptyBytes
	if len(d) > 0 {
		v = make([]byte, len(d))
		copy(v, d)
	}
	h.Destroy()
	return v, nil
}

// GetShared implements SharedGetter: Get through a cache of the values
// readers got since the last write. The result is shared: do not modify
// it.
func (r *Rocks) GetShared(key []byte) ([]byte, error) {
	return r.reads.get(key, r.Get, r.res.readCacheShare())
}

// Put implements Store.
func (r *Rocks) Put(key, value []byte) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ErrClosed
	}
	defer r.reads.wrote()
	if err := r.db.Put(r.wo, key, value); err != nil {
		return fmt.Errorf("state: rocks put: %w", err)
	}
	return nil
}

// Delete implements Store.
func (r *Rocks) Delete(key []byte) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ErrClosed
	}
	defer r.reads.wrote()
	if err := r.db.Delete(r.wo, key); err != nil {
		return fmt.Errorf("state: rocks delete: %w", err)
	}
	return nil
}

// ApplyBatch implements Store with one RocksDB WriteBatch, built in
// RocksDB's batch format in Go and handed over in one call.
func (r *Rocks) ApplyBatch(b *Batch) error {
	return r.applyBatch(b, false)
}

// ApplyBatchUnlogged implements BulkWriter: ApplyBatch without the
// write-ahead log.
func (r *Rocks) ApplyBatchUnlogged(b *Batch) error {
	return r.applyBatch(b, true)
}

// applyBatch writes b, without the WAL when unlogged. (The write options
// are read under the lock: Close frees them.)
func (r *Rocks) applyBatch(b *Batch, unlogged bool) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ErrClosed
	}
	wo := r.wo
	if unlogged {
		wo = r.woBulk
	}
	if len(b.ops) == 0 {
		return nil
	}
	defer r.reads.wrote()
	r.repMu.Lock()
	r.rep = appendBatchRep(r.rep[:0], b)
	wb := grocksdb.WriteBatchFrom(r.rep) // copies rep
	r.repMu.Unlock()
	defer wb.Destroy()
	// RocksDB counts each key comparison in a thread-local perf context
	// unless the writing thread's perf level says not to (the default
	// counts): ~15 % of a batch of random keys' memtable inserts. The
	// level is the OS thread's, and this goroutine's next call runs on
	// the same thread unless it is rescheduled between the two, so
	// setting it before every write costs one cgo call per batch.
	grocksdb.SetPerfLevel(grocksdb.KDisable)
	if err := r.db.Write(wo, wb); err != nil {
		return fmt.Errorf("state: rocks write batch: %w", err)
	}
	return nil
}

// RocksDB's write batch format (db/write_batch.cc): a 12-byte header, the
// sequence number (fixed64, filled in by the write) and the count
// (fixed32), then per operation a tag and varint32-prefixed key and value.
const (
	repHeader   = 12
	repDeletion = 0x0
	repValue    = 0x1
)

// appendBatchRep appends b in RocksDB's write batch format.
func appendBatchRep(dst []byte, b *Batch) []byte {
	dst = append(dst, make([]byte, repHeader)...)
	binary.LittleEndian.PutUint32(dst[len(dst)-4:], uint32(len(b.ops)))
	for i := range b.ops {
		op := &b.ops[i]
		if op.del {
			dst = append(dst, repDeletion)
			dst = binary.AppendUvarint(dst, uint64(len(op.key)))
			dst = append(dst, op.key...)
			continue
		}
		dst = append(dst, repValue)
		dst = binary.AppendUvarint(dst, uint64(len(op.key)))
		dst = append(dst, op.key...)
		dst = binary.AppendUvarint(dst, uint64(len(op.value)))
		dst = append(dst, op.value...)
	}
	return dst
}

// FlushMemtables implements BulkWriter: it writes the memtables to SST
// files and waits, so writes made without the WAL survive a crash.
func (r *Rocks) FlushMemtables() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ErrClosed
	}
	fo := grocksdb.NewDefaultFlushOptions()
	defer fo.Destroy()
	fo.SetWait(true)
	if err := r.db.Flush(fo); err != nil {
		return fmt.Errorf("state: rocks flush: %w", err)
	}
	return nil
}

// DeleteRange implements RangeDeleter with one RocksDB range tombstone.
func (r *Rocks) DeleteRange(start, end []byte) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ErrClosed
	}
	if emptyRange(start, end) {
		return nil
	}
	defer r.reads.wrote()
	wb := grocksdb.NewWriteBatch()
	defer wb.Destroy()
	wb.DeleteRange(start, end)
	if err := r.db.Write(r.wo, wb); err != nil {
		return fmt.Errorf("state: rocks delete range: %w", err)
	}
	return nil
}

// Range implements Store with a bounded RocksDB iterator.
func (r *Rocks) Range(start, end []byte) (Iterator, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return nil, ErrClosed
	}
	if emptyRange(start, end) {
		return &emptyIter{}, nil
	}
	it := &rocksIter{r: r}
	// RocksDB keeps pointers to the bounds for the iterator's life: give it
	// a copy that the iterator keeps reachable and nobody else can change.
	it.lower, it.upper = cloneBounds(start, end)
	it.ro = grocksdb.NewDefaultReadOptions()
	if len(it.lower) > 0 {
		it.ro.SetIterateLowerBound(it.lower)
	}
	if it.upper != nil {
		it.ro.SetIterateUpperBound(it.upper)
	}
	it.it = r.db.NewIterator(it.ro)
	r.itersMu.Lock()
	r.iters[it] = struct{}{}
	r.itersMu.Unlock()
	return it, nil
}

// Flush implements Flusher: with the WAL on it fsyncs the WAL; with the WAL
// disabled it flushes the memtables to SST files and waits. The latter is
// expensive (it writes a file per call), so checkpoint rarely then.
func (r *Rocks) Flush() error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ErrClosed
	}
	if !r.walDisabled {
		if err := r.db.FlushWAL(true); err != nil {
			return fmt.Errorf("state: rocks sync wal: %w", err)
		}
		return nil
	}
	fo := grocksdb.NewDefaultFlushOptions()
	defer fo.Destroy()
	fo.SetWait(true)
	if err := r.db.Flush(fo); err != nil {
		return fmt.Errorf("state: rocks flush: %w", err)
	}
	return nil
}

// Close implements Store: it closes open iterators, leaves the shared
// budget and closes the database. A clean Close keeps every write (with
// DisableWAL RocksDB flushes the memtables on close). Close is idempotent.
func (r *Rocks) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	r.itersMu.Lock()
	for it := range r.iters {
		it.err = ErrClosed
		it.free()
	}
	clear(r.iters)
	for s := range r.seekers {
		s.mu.Lock()
		s.err = ErrClosed
		s.free()
		s.mu.Unlock()
	}
	clear(r.seekers)
	r.itersMu.Unlock()
	r.res.release(r) // before the database closes; see rebalanceLocked
	r.ro.Destroy()
	r.wo.Destroy()
	r.woBulk.Destroy()
	r.db.Close()
	r.opts.Destroy()
	r.db, r.opts, r.ro, r.wo, r.woBulk = nil, nil, nil, nil, nil
	if r.ownRes {
		r.res.Close()
	}
	return nil
}

type rocksIter struct {
	r            *Rocks
	it           *grocksdb.Iterator
	ro           *grocksdb.ReadOptions
	lower, upper []byte
	started      bool
	done         bool
	key, val     []byte
	err          error
}

func (it *rocksIter) Next() bool {
	it.r.mu.RLock() // it.done may be set by Rocks.Close
	defer it.r.mu.RUnlock()
	if it.done {
		return false
	}
	if !it.started {
		it.started = true
		if len(it.lower) > 0 {
			it.it.Seek(it.lower)
		} else {
			it.it.SeekToFirst()
		}
	} else {
		it.it.Next()
	}
	if !it.it.Valid() {
		if err := it.it.Err(); err != nil {
			it.err = fmt.Errorf("state: rocks iterate: %w", err)
		}
		it.release()
		return false
	}
	it.key = sliceData(it.it.Key())
	it.val = sliceData(it.it.Value())
	return true
}

// sliceData returns s's bytes without copying them, never nil.
func sliceData(s *grocksdb.Slice) []byte {
	if s == nil || !s.Exists() {
		return emptyBytes
	}
	return s.Data()
}

func (it *rocksIter) Key() []byte   { return it.key }
func (it *rocksIter) Value() []byte { return it.val }
func (it *rocksIter) Err() error    { return it.err }

func (it *rocksIter) Close() error {
	it.r.mu.RLock()
	defer it.r.mu.RUnlock()
	if !it.done {
		it.release()
	}
	return it.err
}

// release frees the iterator and unregisters it; the caller holds r.mu.
func (it *rocksIter) release() {
	it.r.itersMu.Lock()
	delete(it.r.iters, it)
	it.r.itersMu.Unlock()
	it.free()
}

// free destroys the C iterator and read options (iterator first: it
// references the options' bounds).
func (it *rocksIter) free() {
	it.done = true
	it.key, it.val = nil, nil
	it.it.Close()
	it.ro.Destroy()
	it.it, it.ro = nil, nil
	it.lower, it.upper = nil, nil
}
