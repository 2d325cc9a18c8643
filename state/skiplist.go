package state

import (
	"bytes"
	"encoding/binary"
)

// skiplist is the sorted structure under Memory and Overlay: a skip list
// with branching factor 4 (an expected 1.33 pointers per key). It is not
// synchronized; its owner guards it with a sync.RWMutex.
//
// Nodes are never modified in ways that break a reader holding one: a key
// never changes, a value is replaced by a new slice rather than written
// into, and a deleted node is marked dead so that an iterator standing on
// it re-seeks by key instead of following stale links. (A put may pack
// every node's pfx again, see share: pfx is read only by seek, under the
// owner's lock like the put.)
type skiplist struct {
	head     node
	headNext [maxHeight]*node
	height   int
	len      int
	rng      uint64
	arena    *arena // nil: each entry is its own heap allocation
	// common is a prefix every key in the list shares (at most
	// maxCommon bytes): a node's pfx packs the 8 bytes after it, so that
	// keys that all start alike (JSON keys: {"AUCTION":"…) still differ
	// in their pfx. It shrinks when a key that does not share it comes.
	common []byte
}

// maxCommon bounds skiplist.common.
const maxCommon = 32

// maxHeight bounds node height; with branching 4 it suits up to 4^16 keys.
const maxHeight = 16

type node struct {
	pfx   uint64 // keyPrefix of key after the list's common prefix: most comparisons end here, without a cache miss on key
	key   []byte
	value []byte
	tomb  bool // Overlay: a pending delete, value is nil
	// fresh (Overlay): the base store does not hold the key, so a
	// pending delete of it has nothing to delete (see Overlay.PutNew).
	fresh bool
	dead  bool // unlinked by delete
	next  []*node
	tower [1]*node // backs next for height-1 nodes, three in four
}

// newSkiplist returns an empty list. With useArena, keys, values and nodes
// are carved from chunks (amortized zero allocations per write) and freed
// together when the list is dropped: right for an Overlay, which is
// emptied at every commit, wrong for a long-lived store whose overwritten
// values would pin whole chunks.
func newSkiplist(useArena bool) *skiplist {
	l := &skiplist{height: 1, rng: 0x9e3779b97f4a7c15}
	l.head.next = l.headNext[:]
	if useArena {
		l.arena = &arena{}
	}
	return l
}

// seek returns the first node with a key ≥ key (> key when after is set),
// or nil. When prev is non-nil it receives, per level, the last node before
// that position.
func (l *skiplist) seek(key []byte, prev *[maxHeight]*node, after bool) *node {
	off := len(l.common)
	x := &l.head
	if off > 0 && !bytes.HasPrefix(key, l.common) {
		// Before every key, or after every key: key differs from the
		// prefix they all share.
		before := bytes.Compare(key, l.common) < 0
		for i := l.height - 1; i >= 0; i-- {
			for !before && x.next[i] != nil {
				x = x.next[i]
			}
			if prev != nil {
				prev[i] = x
			}
		}
		return x.next[0]
	}
	kp := keyPrefix(key[off:])
	for i := l.height - 1; i >= 0; i-- {
		for {
			nx := x.next[i]
			if nx == nil || nx.pfx > kp {
				break
			}
			if nx.pfx == kp {
				c := bytes.Compare(nx.key[off:], key[off:])
				if c > 0 || (c == 0 && !after) {
					break
				}
			}
			x = nx
		}
		if prev != nil {
			prev[i] = x
		}
	}
	return x.next[0]
}

// get returns the node holding key, or nil.
func (l *skiplist) get(key []byte) *node {
	n := l.seek(key, nil, false)
	if n != nil && bytes.Equal(n.key, key) {
		return n
	}
	return nil
}

// put stores a copy of value (nil when tomb) under a copy of key. It
// returns the key's node, and whether it is new.
func (l *skiplist) put(key, value []byte, tomb bool) (*node, bool) {
	l.share(key)
	var prev [maxHeight]*node
	n := l.seek(key, &prev, false)
	if n != nil && bytes.Equal(n.key, key) {
		n.value = nil
		if !tomb {
			n.value = l.bytes(value)
		}
		n.tomb = tomb
		return n, false
	}
	h := l.randomHeight()
	if h > l.height {
		for i := l.height; i < h; i++ {
			prev[i] = &l.head
		}
		l.height = h
	}
	n = l.newNode(h)
	if tomb {
		n.key = l.bytes(key)
		n.tomb = true
	} else {
		n.key, n.value = l.pair(key, value)
	}
	n.pfx = keyPrefix(key[len(l.common):])
	for i := 0; i < h; i++ {
		n.next[i] = prev[i].next[i]
		prev[i].next[i] = n
	}
	l.len++
	return n, true
}

// delete unlinks key's node and marks it dead; it reports whether the key
// was present.
func (l *skiplist) delete(key []byte) bool {
	var prev [maxHeight]*node
	n := l.seek(key, &prev, false)
	if n == nil || !bytes.Equal(n.key, key) {
		return false
	}
	for i := range n.next {
		prev[i].next[i] = n.next[i]
		n.next[i] = nil
	}
	n.dead = true
	l.len--
	return true
}

// share makes the list's common prefix one that key shares: the start of
// key (up to maxCommon bytes) in an empty list, else the part of it key
// shares, the nodes' pfx then packed again after it.
func (l *skiplist) share(key []byte) {
	if l.head.next[0] == nil {
		l.common = append(l.common[:0], key[:min(len(key), maxCommon)]...)
		return
	}
	if bytes.HasPrefix(key, l.common) {
		return
	}
	n := 0
	for n < len(l.common) && n < len(key) && l.common[n] == key[n] {
		n++
	}
	l.common = l.common[:n]
	for x := l.head.next[0]; x != nil; x = x.next[0] {
		x.pfx = keyPrefix(x.key[n:])
	}
}

// keyPrefix packs the first 8 bytes of key, zero-padded, big-endian. For
// keys a and b, keyPrefix(a) < keyPrefix(b) implies a < b bytewise (a
// shorter key pads with zeros, the smallest byte), so only equal prefixes
// need the full comparison.
func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var p uint64
	for i, c := range key {
		p |= uint64(c) << (56 - 8*i)
	}
	return p
}

func (l *skiplist) randomHeight() int {
	// xorshift64: heights need independence from keys, not crypto strength.
	l.rng ^= l.rng << 13
	l.rng ^= l.rng >> 7
	l.rng ^= l.rng << 17
	h := 1
	for r := l.rng; h < maxHeight && r&3 == 0; r >>= 2 {
		h++
	}
	return h
}

func (l *skiplist) newNode(h int) *node {
	if l.arena != nil {
		return l.arena.node(h)
	}
	n := &node{}
	if h == 1 {
		n.next = n.tower[:]
	} else {
		n.next = make([]*node, h)
	}
	return n
}

// bytes returns a non-nil copy of p.
func (l *skiplist) bytes(p []byte) []byte {
	if len(p) == 0 {
		return emptyBytes
	}
	if l.arena != nil {
		return l.arena.bytes(p)
	}
	c := make([]byte, len(p))
	copy(c, p)
	return c
}

// pair copies a new entry's key and value, in one allocation outside an
// arena.
func (l *skiplist) pair(key, value []byte) (k, v []byte) {
	if l.arena != nil || len(value) == 0 {
		return l.bytes(key), l.bytes(value)
	}
	buf := make([]byte, len(key)+len(value))
	copy(buf, key)
	copy(buf[len(key):], value)
	return buf[:len(key):len(key)], buf[len(key):]
}

// arena hands out memory in chunks that are never reused: slices given
// out stay valid for as long as anyone holds them.
type arena struct {
	buf   []byte
	chunk int
	nodes []node
	ptrs  []*node
}

const (
	arenaMinChunk = 4 << 10
	arenaMaxChunk = 64 << 10
)

func (a *arena) bytes(p []byte) []byte {
	if len(p) > arenaMaxChunk/4 {
		c := make([]byte, len(p))
		copy(c, p)
		return c
	}
	if len(p) > cap(a.buf)-len(a.buf) {
		switch {
		case a.chunk == 0:
			a.chunk = arenaMinChunk
		case a.chunk < arenaMaxChunk:
			a.chunk *= 2
		}
		a.buf = make([]byte, 0, a.chunk)
	}
	n := len(a.buf)
	a.buf = append(a.buf, p...)
	return a.buf[n:len(a.buf):len(a.buf)]
}

func (a *arena) node(h int) *node {
	if len(a.nodes) == 0 {
		a.nodes = make([]node, 64)
	}
	n := &a.nodes[0]
	a.nodes = a.nodes[1:]
	if h == 1 {
		n.next = n.tower[:]
		return n
	}
	if len(a.ptrs) < h {
		a.ptrs = make([]*node, 256)
	}
	n.next = a.ptrs[:h:h]
	a.ptrs = a.ptrs[h:]
	return n
}

// cursor walks a skiplist over [start, end). Its owner holds the list's
// read lock around each call to next.
type cursor struct {
	l          *skiplist
	start, end []byte
	cur        *node
	started    bool
	done       bool
}

// next moves to the next node in range and returns it, or nil at the end.
// A cursor standing on a node that was deleted since re-seeks past that
// node's key, so it never repeats or skips a key that stayed present.
func (c *cursor) next() *node {
	if c.done {
		return nil
	}
	var n *node
	switch {
	case !c.started:
		c.started = true
		n = c.l.seek(c.start, nil, false)
	case c.cur.dead:
		n = c.l.seek(c.cur.key, nil, true)
	default:
		n = c.cur.next[0]
	}
	if n == nil || (c.end != nil && bytes.Compare(n.key, c.end) >= 0) {
		c.done = true
		c.cur = nil
		return nil
	}
	c.cur = n
	return n
}
