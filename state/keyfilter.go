package state

import (
	"hash/maphash"
	"math/bits"
)

// keyFilter is a filter of the keys a store holds (Overlay.FilterKeys):
// a key it does not contain is surely absent; one it contains may be
// absent too, about one time in a hundred while it holds no more keys
// than its bits suit.
//
// It is a chain of blocked Bloom filters, each four times the size of
// the one before: a key goes into the last, and a lookup asks each (one
// cache line apiece, the first ones small enough to stay in the CPU's
// caches). A filter grows without reading the keys again, so that a
// store's filter costs little while it holds few keys. Past maxBytes
// the last filter takes every new key and its false positives rise
// (near 10 % at twice the keys it suits); at four times, the filter
// gives up (dead): it no longer saves enough reads to be worth its
// lookups.
type keyFilter struct {
	seed     maphash.Seed
	parts    []filterPart
	maxBytes int
	dead     bool
}

// filterPart is one blocked Bloom filter of the chain: each key sets
// filterProbes bits of one 512-bit block.
type filterPart struct {
	blocks [][8]uint64
	keys   int // an overcount: a key put twice counts twice
}

const (
	filterBitsPerKey = 10
	filterProbes     = 6
	// filterFirstBlocks is the first filter's size (64 KiB, some 52,000
	// keys).
	filterFirstBlocks = 1024
	// DefaultFilterBytes bounds a store's key filter (Overlay.FilterKeys):
	// 64 KiB, 256 KiB, 1 MiB and 4 MiB filters, some 4.4 million keys.
	DefaultFilterBytes = 5440 << 10
)

func newKeyFilter(maxBytes int) *keyFilter {
	f := &keyFilter{seed: maphash.MakeSeed(), maxBytes: maxBytes}
	f.parts = []filterPart{{blocks: make([][8]uint64, max(min(filterFirstBlocks, maxBytes/64), 1))}}
	return f
}

// hash is the key's hash, which places it in every filter of the chain.
func (f *keyFilter) hash(key []byte) uint64 { return maphash.Bytes(f.seed, key) }

// probe returns h's block in p and the bits to set or test there.
func (p *filterPart) probe(h uint64) (*[8]uint64, uint64) {
	hi, _ := bits.Mul64(h, uint64(len(p.blocks)))
	// The bits within the block from a second mix of the hash, so that
	// they do not repeat the block's choice.
	return &p.blocks[hi], h * 0x9e3779b97f4a7c15
}

func (p *filterPart) full() bool { return p.keys*filterBitsPerKey > len(p.blocks)*512 }

func (f *keyFilter) add(key []byte) {
	if f.dead {
		return
	}
	p := &f.parts[len(f.parts)-1]
	if p.full() {
		if next := len(p.blocks) * 4; f.bytes()+next*64 <= f.maxBytes {
			f.parts = append(f.parts, filterPart{blocks: make([][8]uint64, next)})
			p = &f.parts[len(f.parts)-1]
		} else if p.keys >= 4*len(p.blocks)*512/filterBitsPerKey {
			f.dead, f.parts = true, nil
			return
		}
	}
	b, m := p.probe(f.hash(key))
	for i := range filterProbes {
		bit := m >> (55 - i*9) & 511
		b[bit>>6] |= 1 << (bit & 63)
	}
	p.keys++
}

// mayContain reports whether key may have been added: false when surely
// not. A dead filter may contain anything.
func (f *keyFilter) mayContain(key []byte) bool {
	if f.dead {
		return true
	}
	h := f.hash(key)
next:
	for i := range f.parts {
		b, m := f.parts[i].probe(h)
		for j := range filterProbes {
			bit := m >> (55 - j*9) & 511
			if b[bit>>6]&(1<<(bit&63)) == 0 {
				continue next
			}
		}
		return true
	}
	return false
}

// bytes is the filters' size.
func (f *keyFilter) bytes() int {
	n := 0
	for _, p := range f.parts {
		n += len(p.blocks) * 64
	}
	return n
}
