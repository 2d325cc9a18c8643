package state

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
)

var (
	_ Store   = (*Overlay)(nil)
	_ Flusher = (*Overlay)(nil)
)

// Overlay holds a task's uncommitted writes in front of its store, for
// exactly-once processing. Put, Delete and ApplyBatch go to the overlay
// only; Get and Range see the overlay first (a pending delete hides the
// base's key); Commit applies the pending writes to the base store in one
// atomic batch and empties the overlay; Abort drops them. A transaction is
// implicit: it begins with the first write after the previous Commit or
// Abort. Overlay implements Store so operators see one interface.
//
// The intended cycle, per Kafka transaction: operators write through the
// overlay; the task produces its changelog records (Pending lists the last
// write per key); the Kafka transaction commits; then Commit, a Flush of
// the base, and a checkpoint. When the Kafka transaction aborts, Abort.
//
// Concurrency: Store's rule, and Commit, Abort and Pending belong to the
// writer. Readers through the overlay see uncommitted writes; a reader that
// must see committed state only (a pull query under exactly-once) reads
// Base. Commit holds the overlay's write lock while it applies the batch,
// so readers through the overlay never see a key vanish in between.
// An iterator over the overlay keeps reading the pending writes it started
// with across a Commit (harmless: the base now holds the same) and across
// an Abort (where it may still return dropped writes): close iterators
// before ending a transaction.
//
// A key the caller knows the base lacks (PutNew) and then deletes in the
// same transaction reaches the base as nothing: neither its put nor a
// delete of a key the base never held, which would otherwise cost a
// RocksDB tombstone for every short-lived key (a session window's
// versions) until compaction drops it.
//
// With SetAsyncCommit, Commit hands the transaction's writes to a
// goroutine that applies them to the base while the writer goes on with
// the next transaction; reads through the overlay see them until the
// base holds them, and Committed is a view of the base that waits for
// them.
//
// Pending writes live in an arena that is dropped, not reused, at Commit
// and Abort, so writes cost amortized zero allocations and values returned
// by Get stay valid after the transaction ends.
//
// The overlay also keeps a cache of committed values that Get read from
// the base or Commit wrote to it (up to CacheEntries keys and CacheBytes
// bytes, or its share of a CacheBudget, evicted at random), so that hot
// keys cost a map lookup instead of a call into RocksDB. Only the overlay
// writes to the base while it is open, so the cache stays exact. An
// overlay over an empty base knows every key the base holds for as long as
// it has evicted none: a key missing from its cache is then absent without
// asking the base (a fresh aggregation's new groups).
type Overlay struct {
	base Store

	mu     sync.RWMutex
	list   *skiplist // pending writes; deletes are tombstones
	closed bool

	cache      map[string]*cached
	cacheMax   int          // entries
	cacheBytes int          // held, as counted by cacheSize
	budget     *CacheBudget // bounds cacheBytes when set, else CacheBytes
	// complete: every key the base holds is in the cache, so a key the
	// cache lacks is absent. True over an empty base until a present
	// key is evicted or not cached.
	complete bool

	batch Batch // reused by Commit and by the apply in flight; writer only

	// async: Commit hands the pending writes to a goroutine that applies
	// them to the base (SetAsyncCommit). applying is that transaction
	// until the base holds it, nil when none is in flight; reads through
	// the overlay see it between the pending writes and the cache.
	async    bool
	applying *applyJob

	// filter, when set (FilterKeys), holds every key the base holds: a
	// key it lacks is absent without asking the base. Nil once it gave
	// up (too many keys).
	filter *keyFilter

	seekers []*overlaySeeker // open Seekers, whose base snapshots Commit releases
}

// cached is a committed value; absent marks a key the base does not hold.
type cached struct {
	value  []byte
	absent bool
}

const (
	// CacheEntries is how many committed keys an overlay caches by
	// default; CacheBytes bounds their keys and values (with a fixed
	// overhead per entry), so that large values cannot blow it up. The
	// byte bound is the one that binds for small values.
	CacheEntries = 1 << 20
	CacheBytes   = 8 << 20
)

// cacheSize is what an entry counts against CacheBytes: its key, its
// value and the map slot, struct and slice headers around them.
func cacheSize(key, value int) int { return key + value + 64 }

// CacheBudget bounds the bytes the overlays of one server hold in their
// caches of committed values: each overlay sharing it may hold an equal
// share, total / (overlays open). An overlay over its share because
// others opened evicts at its next cache write, so the total can exceed
// the budget for a while after overlays open.
type CacheBudget struct {
	total int64
	users atomic.Int64
}

// NewCacheBudget returns a budget of total bytes.
func NewCacheBudget(total int64) *CacheBudget { return &CacheBudget{total: total} }

// Share returns what each overlay sharing b may hold now.
func (b *CacheBudget) Share() int {
	return int(b.total / max(b.users.Load(), 1))
}

// ShareCache bounds o's cache by a share of b instead of CacheBytes, until
// o closes. Call it once, before o is used.
func (o *Overlay) ShareCache(b *CacheBudget) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed || o.budget != nil {
		return
	}
	b.users.Add(1)
	o.budget = b
	o.evict(0)
}

// cacheLimit is the bytes o's cache may hold now.
func (o *Overlay) cacheLimit() int {
	if o.budget != nil {
		return o.budget.Share()
	}
	return CacheBytes
}

// NewOverlay returns an empty overlay over base. The overlay owns base from
// then on: Close closes it.
func NewOverlay(base Store) *Overlay {
	return &Overlay{base: base, list: newSkiplist(true), cache: map[string]*cached{}, cacheMax: CacheEntries, complete: isEmpty(base)}
}

// isEmpty reports whether s holds no key (false when it cannot tell).
func isEmpty(s Store) bool {
	it, err := s.Range(nil, nil)
	if err != nil {
		return false
	}
	empty := !it.Next() && it.Err() == nil
	if err := it.Close(); err != nil {
		return false
	}
	return empty
}

// SetCacheEntries sets how many committed keys the overlay caches; 0
// turns the cache off and gives up its share of a CacheBudget.
func (o *Overlay) SetCacheEntries(n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.cacheMax = n
	o.evict(0)
	if n <= 0 && o.budget != nil {
		o.budget.users.Add(-1)
		o.budget = nil
	}
}

// evict drops entries at random (map order is random enough) until one of
// need bytes fits in the cache's bounds. Once over them, it drops a
// sixteenth more than that, so that a full cache evicts in runs, each a
// walk through neighbouring slots of the map, rather than starting a
// walk at a random slot for every entry it adds.
func (o *Overlay) evict(need int) {
	limit := o.cacheLimit()
	if len(o.cache) < o.cacheMax && o.cacheBytes+need <= limit {
		return
	}
	maxEntries, limit := o.cacheMax-o.cacheMax/16, limit-limit/16
	for k, c := range o.cache {
		if len(o.cache) < maxEntries && o.cacheBytes+need <= limit {
			return
		}
		o.cacheBytes -= cacheSize(len(k), len(c.value))
		delete(o.cache, k)
		if !c.absent {
			o.complete = false
		}
	}
}

// remember caches a committed value (nil and absent for a missing key).
// Call with the write lock held, or as the only user (the writer, under
// the read lock: readers never touch the cache).
func (o *Overlay) remember(key, value []byte, absent bool) {
	if c := o.cache[string(key)]; c != nil {
		// A fresh copy: readers may still hold the old value.
		o.cacheBytes += len(value) - len(c.value)
		c.value = append([]byte(nil), value...)
		c.absent = absent
		if o.cacheBytes > o.cacheLimit() {
			o.evict(0)
		}
		return
	}
	o.add(key, value, absent)
}

// add caches a committed value of a key the cache does not hold
// (remember's rule).
func (o *Overlay) add(key, value []byte, absent bool) {
	size := cacheSize(len(key), len(value))
	if o.cacheMax <= 0 || size > o.cacheLimit()/16 {
		if !absent {
			o.complete = false
		}
		return
	}
	o.evict(size)
	o.cache[string(key)] = &cached{value: append([]byte(nil), value...), absent: absent}
	o.cacheBytes += size
}

// Base returns the store under the overlay, which holds committed state
// only. Read it; do not write to it while the overlay is open: the
// overlay's cache would no longer match it.
func (o *Overlay) Base() Store { return o.base }

// Len returns the number of keys with a pending write (puts and deletes).
func (o *Overlay) Len() int {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return 0
	}
	return o.list.len
}

// Get implements Store: a pending write wins over the base.
func (o *Overlay) Get(key []byte) ([]byte, error) {
	o.mu.RLock()
	if o.closed {
		o.mu.RUnlock()
		return nil, ErrClosed
	}
	n := o.list.get(key)
	if n == nil && o.applying != nil {
		n = o.applying.list.get(key)
	}
	var v []byte
	var tomb bool
	if n != nil {
		v, tomb = n.value, n.tomb
	}
	if n != nil {
		o.mu.RUnlock()
		if tomb {
			return nil, nil
		}
		return v, nil
	}
	if c := o.cache[string(key)]; c != nil {
		v := c.value
		switch {
		case c.absent:
			v = nil
		case v == nil:
			v = []byte{} // present, empty
		}
		o.mu.RUnlock()
		return v, nil
	}
	if o.complete {
		o.mu.RUnlock()
		return nil, nil // the cache would hold it
	}
	if o.filter != nil && !o.filter.mayContain(key) {
		o.mu.RUnlock()
		return nil, nil // the base does not hold it
	}
	o.mu.RUnlock()
	v, err := o.base.Get(key)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	if !o.closed && o.cache[string(key)] == nil {
		o.add(key, v, v == nil)
	}
	o.mu.Unlock()
	return v, nil
}

// Put implements Store; the write is pending until Commit.
func (o *Overlay) Put(key, value []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	o.list.put(key, value, false)
	return nil
}

// PutNew is Put for a key that the caller has found absent through the
// overlay in this transaction (a Get of it returned nil, or a Range over
// it did not list it) and not written since. When the overlay holds no
// pending write of the key, the base does not hold it either, and a
// later Delete of it in this transaction then cancels the put instead of
// recording a delete: Commit writes neither to the base. A false claim
// loses the base's value at such a Delete, so claim only what was read.
func (o *Overlay) PutNew(key, value []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	if n, created := o.list.put(key, value, false); created {
		n.fresh = true
	}
	return nil
}

// Delete implements Store; the delete is pending until Commit. Deleting a
// key the base does not hold still records a pending delete, except for a
// key PutNew wrote in this transaction, whose delete Commit skips.
func (o *Overlay) Delete(key []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	o.list.put(key, nil, true)
	return nil
}

// ApplyBatch implements Store: the batch's operations become pending
// writes, atomically to readers of the overlay. It does not write to the
// base store.
func (o *Overlay) ApplyBatch(b *Batch) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	for i := range b.ops {
		op := &b.ops[i]
		o.list.put(op.key, op.value, op.del)
	}
	return nil
}

// Range implements Store, merging the pending writes with a range over the
// base store (once the apply in flight, if any, is done).
func (o *Overlay) Range(start, end []byte) (Iterator, error) {
	list, err := o.appliedList()
	if err != nil {
		return nil, err
	}
	if emptyRange(start, end) {
		return &emptyIter{}, nil
	}
	base, err := o.base.Range(start, end)
	if err != nil {
		return nil, err
	}
	it := &mergeIter{o: o, base: base}
	it.c.l = list
	it.c.start, it.c.end = cloneBounds(start, end)
	return it, nil
}

// Commit applies the pending writes to the base store in one ApplyBatch and
// empties the overlay. When ApplyBatch fails the base is unchanged (it is
// atomic), the overlay keeps its writes, and Commit may be retried.
//
// With SetAsyncCommit, Commit first waits for the previous transaction's
// apply (returning its error, see Sync), then hands the pending writes to
// a goroutine that applies them, and returns: reads through the overlay
// see them until the base holds them.
func (o *Overlay) Commit() error {
	if err := o.lockSynced(); err != nil {
		return err
	}
	defer o.mu.Unlock()
	if o.list.len == 0 {
		return nil
	}
	if o.async {
		job := &applyJob{list: o.list, done: make(chan struct{})}
		o.applying, o.list = job, newSkiplist(true)
		go o.apply(job)
		return nil
	}
	if err := o.applyList(o.list); err != nil {
		return err
	}
	o.rememberList(o.list)
	o.list = newSkiplist(true)
	o.releaseSeekers()
	return nil
}

// applyList applies list's writes to the base in one batch.
func (o *Overlay) applyList(list *skiplist) error {
	for n := list.head.next[0]; n != nil; n = n.next[0] {
		if !n.void() {
			o.batch.addNoCopy(n.key, n.value, n.tomb)
		}
	}
	var err error
	if len(o.batch.ops) > 0 {
		err = o.base.ApplyBatch(&o.batch)
	}
	o.batch.Reset()
	if err != nil {
		return fmt.Errorf("state: overlay commit: %w", err)
	}
	return nil
}

// rememberList caches the committed values of list's writes; the caller
// holds o.mu for writing.
func (o *Overlay) rememberList(list *skiplist) {
	for n := list.head.next[0]; n != nil; n = n.next[0] {
		if !n.void() {
			o.remember(n.key, n.value, n.tomb)
			if !n.tomb {
				o.filterAdd(n.key)
			}
		}
	}
}

// filterAdd adds a key the base now holds to the filter; the caller
// holds o.mu for writing.
func (o *Overlay) filterAdd(key []byte) {
	if o.filter == nil {
		return
	}
	if o.filter.add(key); o.filter.dead {
		o.filter = nil
	}
}

// FilterKeys makes the overlay keep a filter of the keys the base holds
// (see keyFilter: up to maxBytes, DefaultFilterBytes when not positive),
// so that a Get of a key the base lacks costs no read of the base: for a
// store whose reads are mostly of keys it never held (the distinct
// values of an aggregation). It reads the base's keys once to fill it.
// Call it between transactions; it belongs to the writer.
func (o *Overlay) FilterKeys(maxBytes int) error {
	if maxBytes <= 0 {
		maxBytes = DefaultFilterBytes
	}
	if err := o.lockSynced(); err != nil {
		return err
	}
	defer o.mu.Unlock()
	o.filter = nil
	it, err := o.base.Range(nil, nil)
	if err != nil {
		return err
	}
	f := newKeyFilter(maxBytes)
	for !f.dead && it.Next() {
		f.add(it.Key())
	}
	if err := it.Close(); err != nil {
		return err
	}
	if !f.dead {
		o.filter = f
	}
	return nil
}

// applyJob is a committed transaction's writes on their way to the base
// (SetAsyncCommit). err is set before done closes.
type applyJob struct {
	list *skiplist
	done chan struct{}
	err  error
}

// apply applies job's writes to the base, outside the overlay's lock
// (readers see them in job.list meanwhile), then caches them and drops
// job, or on failure keeps it readable for Sync to retry.
func (o *Overlay) apply(job *applyJob) {
	err := o.applyList(job.list)
	o.mu.Lock()
	if err == nil {
		o.rememberList(job.list)
		o.applying = nil
		o.releaseSeekers()
	}
	job.err = err
	o.mu.Unlock()
	close(job.done)
}

// SetAsyncCommit makes Commit apply each transaction's writes to the base
// in a goroutine of its own while the writer goes on (on), or in Commit
// itself (off, the default). One apply is in flight at a time; Sync
// waits for it, and so do the calls that need the base to hold every
// committed write: Commit, CommitBulk, ApplyBulk, DeleteRange, Flush
// and Close (and Range and seekers, which read the base as it is). A
// reader of Base may not see the last transaction until it is applied:
// Applied waits for it. Belongs to the writer.
func (o *Overlay) SetAsyncCommit(on bool) error {
	if !on {
		if err := o.Sync(); err != nil {
			return err
		}
	}
	o.mu.Lock()
	o.async = on
	o.mu.Unlock()
	return nil
}

// Sync waits until the base holds every committed write. When the apply
// in flight failed, Sync tries it again (so that the base never misses
// a transaction while a later one is applied) and returns its error if
// it fails again; the writes stay readable through the overlay. Belongs
// to the writer.
func (o *Overlay) Sync() error {
	job := o.inFlight()
	if job == nil || job.err == nil {
		return nil
	}
	err := o.applyList(job.list)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		return err
	}
	o.rememberList(job.list)
	o.applying = nil
	o.releaseSeekers()
	return nil
}

// Applied waits until the apply in flight when it was called, if any,
// has ended, and returns its error: after it the base holds every write
// committed before the call, unless it returns an error. Safe for any
// goroutine (a pull query reading Base after a transaction committed).
func (o *Overlay) Applied() error {
	if job := o.inFlight(); job != nil {
		return job.err
	}
	return nil
}

// appliedList returns the pending writes once no apply is in flight:
// merged with the base, they are what the overlay holds (a Commit after
// it makes the list the one in flight, whose writes stay in it).
func (o *Overlay) appliedList() (*skiplist, error) {
	for {
		o.mu.RLock()
		closed, job, list := o.closed, o.applying, o.list
		o.mu.RUnlock()
		if closed {
			return nil, ErrClosed
		}
		if job == nil {
			return list, nil
		}
		<-job.done
		if job.err != nil {
			return nil, job.err
		}
	}
}

// lockSynced waits until the base holds every committed write (Sync),
// then takes o.mu for writing, which the caller releases; it fails, not
// holding o.mu, when the apply fails again or the overlay is closed.
func (o *Overlay) lockSynced() error {
	if err := o.Sync(); err != nil {
		return err
	}
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// inFlight waits for the end of the apply in flight, if any, and
// returns it (nil when none was): its err is set.
func (o *Overlay) inFlight() *applyJob {
	o.mu.RLock()
	job := o.applying
	o.mu.RUnlock()
	if job != nil {
		<-job.done
	}
	return job
}

// CommitBulk is Commit for a restore from a changelog: when the base is a
// BulkWriter the batch skips its write-ahead log, and the values are not
// added to the cache (keys it holds are dropped from it), so restoring a
// large store neither logs every write twice nor churns the cache. Call
// FlushBulk before a checkpoint covers these writes.
func (o *Overlay) CommitBulk() error {
	if err := o.lockSynced(); err != nil {
		return err
	}
	defer o.mu.Unlock()
	if o.list.len == 0 {
		return nil
	}
	for n := o.list.head.next[0]; n != nil; n = n.next[0] {
		if !n.void() {
			o.batch.addNoCopy(n.key, n.value, n.tomb)
		}
	}
	var err error
	if len(o.batch.ops) == 0 {
		// Only cancelled writes.
	} else if bw, ok := o.base.(BulkWriter); ok {
		err = bw.ApplyBatchUnlogged(&o.batch)
	} else {
		err = o.base.ApplyBatch(&o.batch)
	}
	o.batch.Reset()
	if err != nil {
		return fmt.Errorf("state: overlay commit: %w", err)
	}
	for n := o.list.head.next[0]; n != nil; n = n.next[0] {
		if n.void() {
			continue
		}
		if c := o.cache[string(n.key)]; c != nil {
			o.cacheBytes -= cacheSize(len(n.key), len(c.value))
			delete(o.cache, string(n.key))
		}
		if !n.tomb {
			o.complete = false
			o.filterAdd(n.key)
		}
	}
	o.list = newSkiplist(true)
	return nil
}

// MinIngest is the size from which ApplyBulk hands a batch to an Ingester
// base as one sorted file; smaller batches go through the memtable, where
// a file per batch would cost more than it saves.
const MinIngest = 16384

// ApplyBulk applies b to the base as CommitBulk applies pending writes
// (without the base's WAL when it is a BulkWriter; b's keys dropped from
// the cache), for a restore that collects its writes in a Batch rather
// than in the overlay: a batch of MinIngest operations or more is ingested
// as a file when the base is an Ingester. The overlay must hold no
// pending write.
func (o *Overlay) ApplyBulk(b *Batch) error {
	if err := o.lockSynced(); err != nil {
		return err
	}
	defer o.mu.Unlock()
	if o.list.len > 0 {
		return fmt.Errorf("state: overlay apply bulk: %d pending writes", o.list.len)
	}
	if len(b.ops) == 0 {
		return nil
	}
	var err error
	if in, ok := o.base.(Ingester); ok && len(b.ops) >= MinIngest {
		err = in.IngestBatch(b)
	} else if bw, ok := o.base.(BulkWriter); ok {
		err = bw.ApplyBatchUnlogged(b)
	} else {
		err = o.base.ApplyBatch(b)
	}
	if err != nil {
		return fmt.Errorf("state: overlay apply bulk: %w", err)
	}
	for i := range b.ops {
		op := &b.ops[i]
		if c := o.cache[string(op.key)]; c != nil {
			o.cacheBytes -= cacheSize(len(op.key), len(c.value))
			delete(o.cache, string(op.key))
		}
		if !op.del {
			o.complete = false
			o.filterAdd(op.key)
		}
	}
	return nil
}

// FlushBulk makes the writes of CommitBulk durable: the base's
// FlushMemtables when it is a BulkWriter, else its Flush (if any).
func (o *Overlay) FlushBulk() error {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return ErrClosed
	}
	if bw, ok := o.base.(BulkWriter); ok {
		return bw.FlushMemtables()
	}
	if f, ok := o.base.(Flusher); ok {
		return f.Flush()
	}
	return nil
}

// DeleteRange implements RangeDeleter on the committed state: it deletes
// [start, end) from the base store (which must be a RangeDeleter) and
// from the cache. The overlay must hold no pending write in the range:
// call it between transactions, after Commit.
func (o *Overlay) DeleteRange(start, end []byte) error {
	if err := o.lockSynced(); err != nil {
		return err
	}
	defer o.mu.Unlock()
	rd, ok := o.base.(RangeDeleter)
	if !ok {
		return fmt.Errorf("state: overlay delete range: the base store %T cannot delete ranges", o.base)
	}
	if err := rd.DeleteRange(start, end); err != nil {
		return err
	}
	for k, c := range o.cache {
		if k >= string(start) && (end == nil || k < string(end)) {
			o.cacheBytes -= cacheSize(len(k), len(c.value))
			delete(o.cache, k)
		}
	}
	return nil
}

// Abort drops the pending writes.
func (o *Overlay) Abort() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.list = newSkiplist(true)
	}
}

// Pending calls fn for each pending write in key order, with the key, the
// value (nil for a delete) and whether it is a delete, stopping at fn's
// first error, which it returns. Only the last write to each key is
// listed, and not the deletes of keys PutNew wrote (which Commit skips
// too). The slices stay valid after the transaction ends. Pending
// belongs to the writer, and fn must not write to the overlay.
func (o *Overlay) Pending(fn func(key, value []byte, deleted bool) error) error {
	o.mu.RLock()
	if o.closed {
		o.mu.RUnlock()
		return ErrClosed
	}
	list := o.list
	o.mu.RUnlock()
	// Only the writer changes list, and the writer is here: no lock needed,
	// and fn may read through the overlay.
	for n := list.head.next[0]; n != nil; n = n.next[0] {
		if n.void() {
			continue
		}
		if err := fn(n.key, n.value, n.tomb); err != nil {
			return err
		}
	}
	return nil
}

// Flush implements Flusher by flushing the base store when it is a
// Flusher; it covers committed writes only, after waiting for the apply
// in flight (Sync). FlushApplied does not wait.
func (o *Overlay) Flush() error {
	if err := o.Sync(); err != nil {
		return err
	}
	return o.FlushApplied()
}

// FlushApplied is Flush without waiting for the apply in flight: it
// covers the writes the base holds, at least those of every transaction
// applied before the call, and maybe some of the one in flight.
func (o *Overlay) FlushApplied() error {
	if f, ok := o.base.(Flusher); ok {
		return f.Flush()
	}
	return nil
}

// Close drops the pending writes and closes the base store, after the
// apply in flight ended (its writes are kept unless it failed).
func (o *Overlay) Close() error {
	_ = o.Applied()
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	o.list, o.applying, o.filter = nil, nil, nil
	o.cache, o.cacheBytes = nil, 0
	if o.budget != nil {
		o.budget.users.Add(-1)
	}
	o.mu.Unlock()
	return o.base.Close()
}

// void reports whether an overlay's pending write is no write to the
// base: the delete of a key the base does not hold.
func (n *node) void() bool { return n.tomb && n.fresh }

// mergeIter merges the overlay's pending writes (cursor c) with an iterator
// over the base. Equal keys: the overlay wins; a tombstone hides both.
type mergeIter struct {
	o    *Overlay
	c    cursor
	base Iterator

	ovOK     bool // c stands on a node
	ovKey    []byte
	ovVal    []byte
	ovTomb   bool
	baseOK   bool // base stands on a key
	advOv    bool // advance c before the next comparison
	advBase  bool // advance base before the next comparison
	started  bool
	closed   bool
	key, val []byte
	err      error
}

func (it *mergeIter) Next() bool {
	if it.closed || it.err != nil {
		return false
	}
	if !it.started {
		it.started = true
		it.advOv, it.advBase = true, true
	}
	for {
		if it.advOv {
			it.advOv = false
			if !it.stepOverlay() {
				return false
			}
		}
		if it.advBase {
			it.advBase = false
			it.baseOK = it.base.Next()
			if !it.baseOK {
				if err := it.base.Err(); err != nil {
					it.err = err
					it.key, it.val = nil, nil
					return false
				}
			}
		}
		var c int
		switch {
		case !it.ovOK && !it.baseOK:
			it.key, it.val = nil, nil
			return false
		case !it.baseOK:
			c = -1
		case !it.ovOK:
			c = 1
		default:
			c = bytes.Compare(it.ovKey, it.base.Key())
		}
		if c > 0 {
			it.advBase = true
			it.key, it.val = it.base.Key(), it.base.Value()
			return true
		}
		it.advOv = true
		it.advBase = c == 0
		if it.ovTomb {
			continue
		}
		it.key, it.val = it.ovKey, it.ovVal
		return true
	}
}

// stepOverlay advances the overlay cursor; it returns false when the
// overlay was closed.
func (it *mergeIter) stepOverlay() bool {
	it.o.mu.RLock()
	defer it.o.mu.RUnlock()
	if it.o.closed {
		it.err = ErrClosed
		it.key, it.val = nil, nil
		return false
	}
	n := it.c.next()
	it.ovOK = n != nil
	if it.ovOK {
		it.ovKey, it.ovVal, it.ovTomb = n.key, n.value, n.tomb
	}
	return true
}

func (it *mergeIter) Key() []byte   { return it.key }
func (it *mergeIter) Value() []byte { return it.val }
func (it *mergeIter) Err() error    { return it.err }

func (it *mergeIter) Close() error {
	if it.closed {
		return it.err
	}
	it.closed = true
	it.key, it.val = nil, nil
	it.c = cursor{}
	if err := it.base.Close(); err != nil && it.err == nil {
		it.err = err
	}
	return it.err
}

// Committed returns a read-only view of the base for readers of
// committed state (pull queries): each read first waits for the apply in
// flight (Applied), so that what a reader sees after a transaction
// committed includes it, as it would without SetAsyncCommit. Writes
// through the view fail; closing it does nothing. The view is a
// SharedGetter when the base is.
func (o *Overlay) Committed() Store {
	if _, ok := o.base.(SharedGetter); ok {
		return sharedCommittedView{committedView{o}}
	}
	return committedView{o}
}

// errReadOnly is the error of a write through Overlay.Committed's view.
var errReadOnly = fmt.Errorf("state: the committed view of an overlay is read-only")

type committedView struct{ o *Overlay }

func (v committedView) Get(key []byte) ([]byte, error) {
	if err := v.o.Applied(); err != nil {
		return nil, err
	}
	return v.o.base.Get(key)
}

func (v committedView) Range(start, end []byte) (Iterator, error) {
	if err := v.o.Applied(); err != nil {
		return nil, err
	}
	return v.o.base.Range(start, end)
}

func (v committedView) Put(key, value []byte) error { return errReadOnly }
func (v committedView) Delete(key []byte) error     { return errReadOnly }
func (v committedView) ApplyBatch(b *Batch) error   { return errReadOnly }
func (v committedView) Close() error                { return nil }

type sharedCommittedView struct{ committedView }

func (v sharedCommittedView) GetShared(key []byte) ([]byte, error) {
	if err := v.o.Applied(); err != nil {
		return nil, err
	}
	return v.o.base.(SharedGetter).GetShared(key)
}
