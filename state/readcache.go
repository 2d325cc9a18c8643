package state

import (
	"sync"
	"sync/atomic"
)

// SharedGetter is a store whose values can be read through a cache shared
// by concurrent readers (pull queries): GetShared's result must not be
// modified.
type SharedGetter interface {
	GetShared(key []byte) ([]byte, error)
}

// readCache caches values a store's readers got, for GetShared. It is
// made correct by a generation that every write to the store advances
// after it is done: an entry serves only while the generation it was
// read in is current, and a value read while a write ran is not kept. So
// once a write has returned, no reader sees what it replaced.
type readCache struct {
	gen atomic.Uint64

	mu      sync.RWMutex
	entries map[string]cachedValue
	bytes   int
}

type cachedValue struct {
	gen uint64
	v   []byte // nil: the key is absent
}

// readCacheBytes bounds one store's read cache; past its bound (this or
// the store's share of the server's budget, RocksResources.readCacheShare)
// the cache starts over empty.
const readCacheBytes = 8 << 20

// wrote marks a write to the store done: every cached value is stale.
func (c *readCache) wrote() { c.gen.Add(1) }

// get returns the value of key, from the cache while it is current, else
// from read (whose result it keeps when no write ran meanwhile and the
// cache, with it, stays within limit bytes).
func (c *readCache) get(key []byte, read func([]byte) ([]byte, error), limit int) ([]byte, error) {
	g := c.gen.Load()
	c.mu.RLock()
	e, ok := c.entries[string(key)]
	c.mu.RUnlock()
	if ok && e.gen == g {
		return e.v, nil
	}
	v, err := read(key)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen.Load() != g {
		return v, nil // a write ran meanwhile: v may be either side of it
	}
	size := len(key) + len(v) + 64
	if size > limit {
		return v, nil
	}
	if c.entries == nil || c.bytes+size > limit {
		c.entries, c.bytes = make(map[string]cachedValue, 1024), 0
	}
	if old, ok := c.entries[string(key)]; ok {
		c.bytes -= len(key) + len(old.v) + 64
	}
	c.entries[string(key)] = cachedValue{gen: g, v: v}
	c.bytes += size
	return v, nil
}
