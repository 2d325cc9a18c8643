package exec

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// topNCacheRows bounds the rows a Top-N's cache holds.
const topNCacheRows = 8192

// topNCache holds the first N rows of a stream's recently changed
// partitions in memory, in front of the store (binary rows, N above 1:
// Flink's AppendOnlyTopNFunction keeps such a cache too). A row that
// enters a cached partition costs neither a read of the store nor a
// parse of the partition's state, and a changed partition is written
// to the store once per transaction, at Flush (or when evicted), rather
// than at every change.
//
// The cache holds the transaction's uncommitted changes: Abort drops
// it, and so does a store that aborted or was replaced (a wipe before a
// restore) since it was filled.
type topNCache struct {
	parts map[string]*topNPart
	// dirty lists the partitions changed since Flush (some may have
	// been written since, when evicted).
	dirty  []*topNPart
	rows   int
	ov     *state.Overlay
	aborts int64
}

// topNPart is a cached partition: its key, its rows in order, and
// whether they changed since they were last written to the store.
type topNPart struct {
	key   string
	rows  []topNCached
	dirty bool
}

// topNCached is a cached row: its sort key and encoding, in one
// allocation that sort's capacity spans (nothing appends to sort).
type topNCached struct{ sort, enc []byte }

func newTopNCached(sort, enc []byte) topNCached {
	return fillTopNCached(make([]byte, len(sort)+len(enc)), sort, enc)
}

func fillTopNCached(b, sort, enc []byte) topNCached {
	n := copy(b, sort)
	m := copy(b[n:], enc)
	return topNCached{sort: b[:n:len(b)], enc: b[n : n+m : n+m]}
}

// refill returns a cached row of sort and enc, in r's bytes when they
// are large enough (r leaves the cache).
func (r topNCached) refill(sort, enc []byte) topNCached {
	if b := r.sort[:cap(r.sort)]; len(b) >= len(sort)+len(enc) {
		return fillTopNCached(b, sort, enc)
	}
	return newTopNCached(sort, enc)
}

// reset empties the cache, which follows store from now on.
func (c *topNCache) reset(store *taskStore) {
	clear(c.parts)
	clear(c.dirty)
	c.dirty = c.dirty[:0]
	c.rows = 0
	if store != nil {
		c.ov, c.aborts = store.ov, store.aborts
	}
}

// updateCached is update for a stream's Top-N with a cache: new comes
// into the partition under t.key.
func (t *topNOp) updateCached(new types.Row) error {
	c := t.cache
	if c.ov != t.store.ov || c.aborts != t.store.aborts {
		c.reset(t.store)
	}
	p := c.parts[string(t.key)]
	if p == nil {
		v, err := t.store.ov.Get(t.key)
		if err != nil {
			return fatal(err)
		}
		if t.before, err = parseTopN(t.before[:0], v, true); err != nil {
			return fatal(fmt.Errorf("%s: stored state of %s: %w", t.name, t.key, err))
		}
		if err := t.evict(len(t.before)); err != nil {
			return err
		}
		p = &topNPart{key: string(t.key), rows: make([]topNCached, len(t.before), t.n)}
		for i, e := range t.before {
			p.rows[i] = newTopNCached(e.sort, e.row)
		}
		c.parts[p.key] = p
		c.rows += len(p.rows)
	}
	if err := t.sortKeyOf(new); err != nil {
		return err
	}
	at := len(p.rows)
	for i, r := range p.rows {
		cmp := bytes.Compare(r.sort, t.sortKey)
		if cmp > 0 || cmp == 0 && t.laterFirst {
			at = i
			break
		}
	}
	if at >= t.n {
		return nil // not among the first N: nothing changes
	}
	t.row, _ = t.encodeRow(t.row[:0], new) // binary rows: no error
	t.before = t.before[:0]
	for _, r := range p.rows {
		t.before = append(t.before, topNEntry{sort: r.sort, row: r.enc})
	}
	t.after = append(t.after[:0], t.before...)
	t.after = slices.Insert(t.after, at, topNEntry{sort: t.sortKey, row: t.row})
	t.after = t.after[:min(len(t.after), t.n)]
	t.fresh, t.freshRow = at, new
	// The changes go out first: t.before holds views of the cached rows,
	// whose bytes the row that leaves gives to the new one.
	err := t.emit()
	if len(p.rows) == t.n {
		// Full: the last row leaves, and its bytes hold the new one
		// when they can.
		last := p.rows[t.n-1]
		copy(p.rows[at+1:], p.rows[at:t.n-1])
		p.rows[at] = last.refill(t.sortKey, t.row)
	} else {
		p.rows = slices.Insert(p.rows, at, newTopNCached(t.sortKey, t.row))
		c.rows++
	}
	if !p.dirty {
		p.dirty = true
		c.dirty = append(c.dirty, p)
	}
	return err
}

// evict makes room for n more rows: it drops partitions (writing the
// changed ones to the store) until the cache holds at most three
// quarters of its bound with them.
func (t *topNOp) evict(n int) error {
	c := t.cache
	if c.rows+n <= topNCacheRows {
		return nil
	}
	for k, p := range c.parts {
		if c.rows+n <= topNCacheRows*3/4 {
			break
		}
		if p.dirty {
			if err := t.writeBack(p); err != nil {
				return err
			}
		}
		c.rows -= len(p.rows)
		delete(c.parts, k)
	}
	return nil
}

// writeBack writes a changed cached partition to the store's overlay.
func (t *topNOp) writeBack(p *topNPart) error {
	t.state = t.state[:0]
	for _, r := range p.rows {
		t.state = appendPart(t.state, r.sort)
		t.state = appendPart(t.state, r.enc)
	}
	t.oldKey = append(t.oldKey[:0], p.key...)
	var err error
	if len(p.rows) == 0 {
		err = t.store.ov.Delete(t.oldKey)
	} else {
		err = t.store.ov.Put(t.oldKey, t.state)
	}
	if err != nil {
		return fatal(err)
	}
	p.dirty = false
	return nil
}

// writeBackChanged writes the cached partitions the transaction changed
// to the store's overlay, before Flush reads them back.
func (t *topNOp) writeBackChanged() error {
	c := t.cache
	if c.ov != t.store.ov || c.aborts != t.store.aborts {
		c.reset(t.store) // nothing of it is the store's transaction's
		return nil
	}
	for _, p := range c.dirty {
		if p.dirty {
			if err := t.writeBack(p); err != nil {
				return err
			}
		}
	}
	clear(c.dirty)
	c.dirty = c.dirty[:0]
	return nil
}
