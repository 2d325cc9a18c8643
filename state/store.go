package state

import (
	"bytes"
	"errors"
	"slices"
)

// ErrClosed is returned by every method of a store, overlay or iterator
// used after the store was closed.
var ErrClosed = errors.New("state: store is closed")

// Store is a sorted map from byte keys to byte values.
//
// Concurrency: any number of concurrent readers (Get, Range and the
// iterators it returns) with one writer (Put, Delete, ApplyBatch, and for
// an Overlay also Commit and Abort). The Memory and Rocks stores also
// serialize concurrent writers, but code written against Store must not
// rely on that. A single Iterator is not safe for concurrent use. Close
// must be the last call; after it every method returns ErrClosed.
//
// Keys and values: any byte string is a key, including the empty one and
// keys containing 0x00 or 0xff; keys order bytewise (bytes.Compare). A
// value may be empty: Put(k, nil) and Put(k, []byte{}) both store an empty
// value, which Get returns as a non-nil empty slice, while an absent key is
// (nil, nil). Stores copy the keys and values passed in; the caller may
// reuse its buffers as soon as a call returns.
//
// Ranges are half-open, [start, end), in ascending key order. A nil start
// means from the first key, a nil end means to the last. A non-nil empty
// end is a bound like any other and selects nothing; use PrefixEnd to turn
// a prefix into an end bound.
//
// Writes while an iterator is open are allowed, including from the
// goroutine that iterates (for example deleting each key as it is
// visited). The iterator still returns keys in strictly ascending order,
// each at most once, all within its range, and every key that was present
// when Range returned and is neither deleted nor overwritten before the
// iterator reaches it. Whether it reflects other writes made after Range
// returned is unspecified: a Rocks iterator reads a snapshot taken by
// Range, a Memory iterator sees writes ahead of its position.
type Store interface {
	// Get returns the value stored under key, or (nil, nil) when the key is
	// absent. The returned slice may be retained (no later call changes its
	// bytes) but must not be modified.
	Get(key []byte) ([]byte, error)
	// Put stores value under key, replacing any previous value.
	Put(key, value []byte) error
	// Delete removes key. Deleting an absent key is not an error.
	Delete(key []byte) error
	// Range returns an iterator over the keys in [start, end) in ascending
	// order; nil bounds are unbounded. The iterator must be closed.
	Range(start, end []byte) (Iterator, error)
	// ApplyBatch applies every operation in b, in order, atomically:
	// concurrent readers see all of them or none, and after an error none
	// has been applied. b is not retained and may be reset afterwards.
	ApplyBatch(b *Batch) error
	// Close releases the store. Open iterators are invalidated; their
	// Next returns false and Err returns ErrClosed.
	Close() error
}

// Iterator walks a key range. Start with Next; the first call positions it
// on the first key. Key and Value are valid only until the next call to
// Next or Close and must not be modified: copy what you keep.
type Iterator interface {
	// Next advances to the next key and reports whether there is one.
	Next() bool
	// Key returns the current key.
	Key() []byte
	// Value returns the current value (non-nil, possibly empty).
	Value() []byte
	// Err returns the error that ended the iteration, if any. Check it
	// after Next returns false.
	Err() error
	// Close releases the iterator. It must be called, and is idempotent;
	// it returns the same error as Err.
	Close() error
}

// RangeDeleter is implemented by stores that delete a whole key range
// at once (Rocks with a range tombstone, cheap however many keys it
// covers): every key in [start, end) is gone, as if deleted one by one.
// Memory and Overlay implement it too.
type RangeDeleter interface {
	DeleteRange(start, end []byte) error
}

// Flusher is implemented by stores that can make applied writes durable on
// demand: Rocks, and an Overlay whose base is one. Flush covers every write
// applied before it was called. Write a checkpoint only after a Flush that
// covers the offsets it records, or the checkpoint may claim state a crash
// lost.
type Flusher interface {
	Flush() error
}

// BulkWriter is implemented by stores that can take writes without their
// write-ahead log, for restoring from a changelog, where a crash only
// means replaying it again from the last checkpoint (Rocks).
type BulkWriter interface {
	// ApplyBatchUnlogged is ApplyBatch without the write-ahead log: a
	// crash loses what no FlushMemtables has covered since (a prefix
	// of the writes survives, in order).
	ApplyBatchUnlogged(b *Batch) error
	// FlushMemtables makes every write applied before it durable.
	FlushMemtables() error
}

// Batch is an ordered list of puts and deletes for Store.ApplyBatch, to be
// applied atomically. A later operation on a key overrides an earlier one.
// Put and Delete copy their arguments. The zero value is an empty batch;
// Reset empties it and keeps its memory for reuse. A Batch is not safe for
// concurrent use.
type Batch struct {
	buf []byte
	ops []batchOp
}

type batchOp struct {
	key, value []byte
	del        bool
}

// Put appends a put of value under key. A nil value is an empty value.
func (b *Batch) Put(key, value []byte) {
	k := b.copy(key)
	v := b.copy(value)
	b.ops = append(b.ops, batchOp{key: k, value: v})
}

// Delete appends a delete of key.
func (b *Batch) Delete(key []byte) {
	b.ops = append(b.ops, batchOp{key: b.copy(key), del: true})
}

// Len returns the number of operations in the batch.
func (b *Batch) Len() int { return len(b.ops) }

// At returns operation i (0 ≤ i < Len): its key, its value (non-nil for a
// put, nil for a delete) and whether it is a delete. The slices are valid
// until Reset and must not be modified. Store implementations outside this
// package use it to read a batch.
func (b *Batch) At(i int) (key, value []byte, deleted bool) {
	op := &b.ops[i]
	return op.key, op.value, op.del
}

// Grow makes room for ops more operations and bytes more bytes of keys
// and values, so that a batch whose size is known ahead fills without
// copying itself as it grows.
func (b *Batch) Grow(ops, bytes int) {
	b.ops = slices.Grow(b.ops, ops)
	b.buf = slices.Grow(b.buf, bytes)
}

// Size returns the bytes of keys and values the batch holds.
func (b *Batch) Size() int { return len(b.buf) }

// Reset empties the batch, keeping its buffers.
func (b *Batch) Reset() {
	clear(b.ops) // drop references to memory the batch does not own
	b.ops = b.ops[:0]
	b.buf = b.buf[:0]
}

// copy appends p to the batch's buffer and returns the copy, never nil.
// Slices handed out earlier stay valid when append moves the buffer: they
// keep pointing into the old array, which nothing overwrites.
func (b *Batch) copy(p []byte) []byte {
	if len(p) == 0 {
		return emptyBytes
	}
	n := len(b.buf)
	b.buf = append(b.buf, p...)
	return b.buf[n:len(b.buf):len(b.buf)]
}

// addNoCopy appends an operation whose slices the caller guarantees stay
// unchanged until the batch is reset.
func (b *Batch) addNoCopy(key, value []byte, del bool) {
	b.ops = append(b.ops, batchOp{key: key, value: value, del: del})
}

// emptyBytes is the shared non-nil empty value. Its capacity is zero, so
// nothing can write through it.
var emptyBytes = []byte{}

// PrefixEnd returns the smallest key greater than every key that starts with
// prefix, for use as Range's end: Range(prefix, PrefixEnd(prefix)) visits
// exactly the keys with that prefix. It returns nil (unbounded) when no such
// key exists, i.e. when prefix is empty or all 0xff. The result is a new
// slice.
func PrefixEnd(prefix []byte) []byte {
	for i := len(prefix) - 1; i >= 0; i-- {
		if prefix[i] != 0xff {
			end := make([]byte, i+1)
			copy(end, prefix)
			end[i]++
			return end
		}
	}
	return nil
}

// emptyRange reports whether [start, end) can contain no key.
func emptyRange(start, end []byte) bool {
	return end != nil && bytes.Compare(start, end) >= 0
}

// cloneBounds copies start and end in one allocation, keeping nil as nil.
func cloneBounds(start, end []byte) (s, e []byte) {
	buf := make([]byte, len(start)+len(end))
	if start != nil {
		s = buf[:len(start):len(start)]
		copy(s, start)
	}
	if end != nil {
		e = buf[len(start):]
		copy(e, end)
	}
	return s, e
}

// emptyIter is the iterator over a range that selects nothing.
type emptyIter struct{ err error }

func (it *emptyIter) Next() bool    { return false }
func (it *emptyIter) Key() []byte   { return nil }
func (it *emptyIter) Value() []byte { return nil }
func (it *emptyIter) Err() error    { return it.err }
func (it *emptyIter) Close() error  { return it.err }
