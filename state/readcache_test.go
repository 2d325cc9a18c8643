//go:build cgo

package state

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestGetSharedSeesEveryWrite: GetShared serves cached values only until
// the next write; after Put, Delete, ApplyBatch or DeleteRange returns, it
// answers the new state, also with readers hammering the cache meanwhile.
func TestGetSharedSeesEveryWrite(t *testing.T) {
	r, err := OpenRocks(t.TempDir(), RocksOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	get := func(k string) string {
		t.Helper()
		v, err := r.GetShared([]byte(k))
		if err != nil {
			t.Fatal(err)
		}
		if v == nil {
			return "<nil>"
		}
		return string(v)
	}
	if err := r.Put([]byte("a"), []byte("1")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got := get("a"); got != "1" {
			t.Fatalf("a = %s, want 1", got)
		}
	}
	if got := get("b"); got != "<nil>" {
		t.Fatalf("b = %s before it is written", got)
	}
	r.Put([]byte("b"), []byte("2"))
	if got := get("b"); got != "2" {
		t.Fatalf("b = %s after Put (an absent key was cached past a write)", got)
	}
	r.Delete([]byte("a"))
	if got := get("a"); got != "<nil>" {
		t.Fatalf("a = %s after Delete", got)
	}
	var b Batch
	b.Put([]byte("a"), []byte("3"))
	b.Delete([]byte("b"))
	if err := r.ApplyBatch(&b); err != nil {
		t.Fatal(err)
	}
	if got := get("a") + get("b"); got != "3<nil>" {
		t.Fatalf("after ApplyBatch: %s", got)
	}
	if err := r.DeleteRange([]byte("a"), []byte("z")); err != nil {
		t.Fatal(err)
	}
	if got := get("a"); got != "<nil>" {
		t.Fatalf("a = %s after DeleteRange", got)
	}

	// Concurrent readers while a writer counts up: once Put(n) returned,
	// no reader sees a value below n.
	var done atomic.Bool
	var written atomic.Int64
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !done.Load() {
				floor := written.Load()
				v, err := r.GetShared([]byte("n"))
				if err != nil {
					t.Error(err)
					return
				}
				var got int64
				if v != nil {
					fmt.Sscan(string(v), &got)
				}
				if got < floor {
					t.Errorf("read %d after %d was written", got, floor)
					return
				}
			}
		})
	}
	for i := int64(1); i <= 2000; i++ {
		if err := r.Put([]byte("n"), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
		written.Store(i)
	}
	done.Store(true)
	wg.Wait()
}

// TestReadCacheShare: the read caches of a server's stores share a
// quarter of its value-cache budget, so pull queries over many stores stay
// inside a memory limit; a store's cache never holds more than its share.
func TestReadCacheShare(t *testing.T) {
	res := NewRocksResources(0, 0, 4<<20) // read caches: 1 MiB in all
	defer res.Close()
	var stores []*Rocks
	for i := range 4 {
		r, err := OpenRocks(filepath.Join(t.TempDir(), fmt.Sprint(i)), RocksOptions{Resources: res})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		stores = append(stores, r)
	}
	if got, want := res.readCacheShare(), 256<<10; got != want {
		t.Fatalf("share with 4 stores open: %d, want %d", got, want)
	}
	r := stores[0]
	var b Batch
	for i := range 10_000 {
		b.Put(fmt.Appendf(nil, "k%05d", i), make([]byte, 100))
	}
	if err := r.ApplyBatch(&b); err != nil {
		t.Fatal(err)
	}
	peak := 0
	for i := range 10_000 {
		if _, err := r.GetShared(fmt.Appendf(nil, "k%05d", i)); err != nil {
			t.Fatal(err)
		}
		r.reads.mu.RLock()
		peak = max(peak, r.reads.bytes)
		r.reads.mu.RUnlock()
	}
	if peak == 0 || peak > 256<<10 {
		t.Fatalf("read cache peaked at %d bytes; want (0, %d]", peak, 256<<10)
	}
	for _, s := range stores[1:] {
		s.Close()
	}
	if got, want := res.readCacheShare(), 1<<20; got != want {
		t.Fatalf("share with 1 store open: %d, want %d", got, want)
	}
}
