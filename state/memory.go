package state

import (
	"bytes"
	"sync"
)

var _ Store = (*Memory)(nil)

// Memory is an in-memory Store: a skip list under a sync.RWMutex. It is for
// operator tests, small state and stores that are rebuilt from their
// changelog on every start; nothing survives Close.
//
// Get and Range's iterators take the read lock per call, so any number of
// readers run in parallel; writers take the write lock, so concurrent
// writers are serialized and each ApplyBatch is atomic to readers. Get
// does not allocate. Put allocates its copies: a node plus one buffer for
// a new key and its value, one buffer for a new value of an existing key
// (values are replaced, never written into, so slices returned by Get stay
// valid).
type Memory struct {
	mu     sync.RWMutex
	list   *skiplist
	closed bool
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{list: newSkiplist(false)}
}

// Len returns the number of keys in the store.
func (m *Memory) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return 0
	}
	return m.list.len
}

// Get implements Store. The returned slice is the store's own copy, shared
// with other readers; it never changes.
func (m *Memory) Get(key []byte) ([]byte, error) {
	m.mu.RLock()
	if m.closed {
		m.mu.RUnlock()
		return nil, ErrClosed
	}
	n := m.list.get(key)
	var v []byte
	if n != nil {
		v = n.value
	}
	m.mu.RUnlock()
	return v, nil
}

// Put implements Store.
func (m *Memory) Put(key, value []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.list.put(key, value, false)
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(key []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.list.delete(key)
	return nil
}

// DeleteRange implements RangeDeleter, deleting the keys one by one
// under the write lock.
func (m *Memory) DeleteRange(start, end []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	var keys [][]byte
	for n := m.list.seek(start, nil, false); n != nil && (end == nil || bytes.Compare(n.key, end) < 0); n = n.next[0] {
		keys = append(keys, n.key)
	}
	for _, k := range keys {
		m.list.delete(k)
	}
	return nil
}

// ApplyBatch implements Store; it holds the write lock for the whole batch.
func (m *Memory) ApplyBatch(b *Batch) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	for i := range b.ops {
		op := &b.ops[i]
		if op.del {
			m.list.delete(op.key)
		} else {
			m.list.put(op.key, op.value, false)
		}
	}
	return nil
}

// Range implements Store. The iterator sees writes made ahead of its
// position; it allocates once, for itself and its copy of the bounds.
func (m *Memory) Range(start, end []byte) (Iterator, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	if emptyRange(start, end) {
		return &emptyIter{}, nil
	}
	it := &memIter{m: m}
	it.c.l = m.list
	it.c.start, it.c.end = cloneBounds(start, end)
	return it, nil
}

// Close implements Store. It drops the contents.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.list = nil
	return nil
}

type memIter struct {
	m      *Memory
	c      cursor
	key    []byte
	val    []byte
	err    error
	closed bool
}

func (it *memIter) Next() bool {
	if it.closed || it.err != nil {
		return false
	}
	it.m.mu.RLock()
	if it.m.closed {
		it.m.mu.RUnlock()
		it.err = ErrClosed
		it.key, it.val = nil, nil
		return false
	}
	n := it.c.next()
	if n == nil {
		it.key, it.val = nil, nil
	} else {
		it.key, it.val = n.key, n.value
	}
	it.m.mu.RUnlock()
	return n != nil
}

func (it *memIter) Key() []byte   { return it.key }
func (it *memIter) Value() []byte { return it.val }
func (it *memIter) Err() error    { return it.err }

func (it *memIter) Close() error {
	it.closed = true
	it.key, it.val = nil, nil
	it.c = cursor{}
	return it.err
}
