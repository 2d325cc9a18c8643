package state

import (
	"encoding/binary"
	"fmt"
	"testing"
)

const benchKeys = 100_000

// benchKV returns benchKeys 16-byte keys and a 32-byte value, the shape of
// a keyed aggregate's state.
func benchKV() ([][]byte, []byte) {
	keys := make([][]byte, benchKeys)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "key-%012d", i*7919%benchKeys)
	}
	return keys, make([]byte, 32)
}

func fill(b *testing.B, s Store, keys [][]byte, val []byte) {
	var bt Batch
	for i, k := range keys {
		bt.Put(k, val)
		if i%1000 == 999 {
			if err := s.ApplyBatch(&bt); err != nil {
				b.Fatal(err)
			}
			bt.Reset()
		}
	}
	if err := s.ApplyBatch(&bt); err != nil {
		b.Fatal(err)
	}
}

func openRocksBench(b *testing.B) *Rocks {
	s, err := OpenRocks(b.TempDir(), RocksOptions{Resources: testResources(), DisableWAL: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func benchGet(b *testing.B, s Store) {
	keys, val := benchKV()
	fill(b, s, keys, val)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		v, err := s.Get(keys[i%benchKeys])
		if err != nil || len(v) != 32 {
			b.Fatal(len(v), err)
		}
		i++
	}
}

func benchPut(b *testing.B, s Store) {
	keys, val := benchKV()
	fill(b, s, keys, val) // steady state: overwrites of existing keys
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := s.Put(keys[i%benchKeys], val); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkMemoryGet(b *testing.B) { benchGet(b, NewMemory()) }
func BenchmarkMemoryPut(b *testing.B) { benchPut(b, NewMemory()) }
func BenchmarkRocksGet(b *testing.B)  { benchGet(b, openRocksBench(b)) }
func BenchmarkRocksPut(b *testing.B)  { benchPut(b, openRocksBench(b)) }

// BenchmarkRocksApplyBatch reports the cost per key of 1,000-key batches.
func BenchmarkRocksApplyBatch(b *testing.B) {
	s := openRocksBench(b)
	keys, val := benchKV()
	var bt Batch
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		bt.Put(keys[i%benchKeys], val)
		if bt.Len() == 1000 {
			if err := s.ApplyBatch(&bt); err != nil {
				b.Fatal(err)
			}
			bt.Reset()
		}
		i++
	}
}

// BenchmarkOverlayPutCommit is the exactly-once write path: Puts into the
// overlay, a Commit every 1,000 of them; the figure is per Put.
func BenchmarkOverlayPutCommit(b *testing.B) {
	for _, c := range []struct {
		name string
		open func(*testing.B) Store
	}{
		{"Memory", func(*testing.B) Store { return NewMemory() }},
		{"Rocks", func(b *testing.B) Store { return openRocksBench(b) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			base := c.open(b)
			keys, val := benchKV()
			fill(b, base, keys, val)
			o := NewOverlay(base)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := o.Put(keys[i%benchKeys], val); err != nil {
					b.Fatal(err)
				}
				i++
				if i%1000 == 0 {
					if err := o.Commit(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkOverlayGet reads through an overlay holding pending writes for
// a tenth of the keys.
func BenchmarkOverlayGet(b *testing.B) {
	base := NewMemory()
	keys, val := benchKV()
	fill(b, base, keys, val)
	o := NewOverlay(base)
	for i := 0; i < benchKeys; i += 10 {
		o.Put(keys[i], val)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if v, err := o.Get(keys[i%benchKeys]); err != nil || len(v) != 32 {
			b.Fatal(len(v), err)
		}
		i++
	}
}

// BenchmarkRange reports the cost per key of scanning 100-key ranges.
func BenchmarkRange(b *testing.B) {
	for _, c := range []struct {
		name string
		open func(*testing.B) Store
	}{
		{"Memory", func(*testing.B) Store { return NewMemory() }},
		{"Rocks", func(b *testing.B) Store { return openRocksBench(b) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := c.open(b)
			keys, val := benchKV()
			fill(b, s, keys, val)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				start := fmt.Appendf(nil, "key-%012d", i%(benchKeys-100))
				end := fmt.Appendf(nil, "key-%012d", i%(benchKeys-100)+100)
				it, err := s.Range(start, end)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for it.Next() {
					n++
				}
				if err := it.Close(); err != nil || n != 100 {
					b.Fatal(n, err)
				}
				i++
			}
		})
	}
}

// BenchmarkMemoryGetSpread uses keys whose first 8 bytes differ (as
// integer or hashed keys do), so most comparisons end at the node's cached
// key prefix.
func BenchmarkMemoryGetSpread(b *testing.B) {
	s := NewMemory()
	keys, val := benchKV()
	for i := range keys {
		keys[i] = binary.BigEndian.AppendUint64(nil, uint64(i)*0x9e3779b97f4a7c15)
	}
	fill(b, s, keys, val)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if v, err := s.Get(keys[i%benchKeys]); err != nil || len(v) != 32 {
			b.Fatal(len(v), err)
		}
		i++
	}
}
