//go:build cgo

package state

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestRocksReopen checks that a closed store's contents come back on
// reopen, with the WAL on and off.
func TestRocksReopen(t *testing.T) {
	for _, noWAL := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableWAL=%v", noWAL), func(t *testing.T) {
			dir := t.TempDir()
			opts := RocksOptions{Resources: testResources(), DisableWAL: noWAL}
			s, err := OpenRocks(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{}
			var bt Batch
			for i := range 1000 {
				k, v := fmt.Sprintf("k%04d\x00\xff", i), fmt.Sprintf("v%d", i)
				if i%2 == 0 {
					put(t, s, k, v)
				} else {
					bt.Put([]byte(k), []byte(v))
				}
				want[k] = v
			}
			if err := s.ApplyBatch(&bt); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 1000; i += 7 {
				k := fmt.Sprintf("k%04d\x00\xff", i)
				del(t, s, k)
				delete(want, k)
			}
			put(t, s, "empty", "")
			want["empty"] = ""
			if err := s.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			s, err = OpenRocks(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got, w := scan(t, s, nil, nil), modelRange(want, nil, nil); fmt.Sprint(got) != fmt.Sprint(w) {
				t.Fatalf("after reopen: %d keys; want %d", len(got), len(w))
			}
			wantGet(t, s, "empty", "")
			wantAbsent(t, s, "k0000\x00\xff")
		})
	}
}

func TestRocksSecondOpenFails(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenRocks(dir, RocksOptions{Resources: testResources()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s2, err := OpenRocks(dir, RocksOptions{Resources: testResources()}); err == nil {
		s2.Close()
		t.Fatal("a second open of the same directory succeeded")
	}
}

func TestRocksPrivateResources(t *testing.T) {
	s, err := OpenRocks(filepath.Join(t.TempDir(), "nested", "store"), RocksOptions{})
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "a", "1")
	wantGet(t, s, "a", "1")
	if !s.ownRes {
		t.Fatal("no private resources")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !s.res.closed {
		t.Fatal("private resources not released by Close")
	}
}

// TestRocksWriteBufferBudget checks the memtable share as stores open and
// close: budget / (stores × 2), a power of two within [256 KiB, 64 MiB].
func TestRocksWriteBufferBudget(t *testing.T) {
	res := NewRocksResources(1<<20, 8<<20, 0)
	defer res.Close()
	if got := res.WriteBufferSize(); got != 4<<20 {
		t.Fatalf("share with no store = %d; want 4 MiB", got)
	}
	var stores []*Rocks
	check := func(want int64) {
		t.Helper()
		if got := res.WriteBufferSize(); got != want {
			t.Fatalf("%d stores: share = %d; want %d", len(stores), got, want)
		}
		for i, s := range stores {
			if int64(s.writeBufferSize) != want {
				t.Fatalf("%d stores: store %d has write_buffer_size %d; want %d", len(stores), i, s.writeBufferSize, want)
			}
		}
	}
	wants := []int64{4 << 20, 2 << 20, 1 << 20, 1 << 20, 512 << 10, 512 << 10, 512 << 10, 512 << 10, 256 << 10, 256 << 10}
	for i, want := range wants {
		s, err := OpenRocks(filepath.Join(t.TempDir(), fmt.Sprint(i)), RocksOptions{Resources: res})
		if err != nil {
			t.Fatal(err)
		}
		stores = append(stores, s)
		check(want)
	}
	for len(stores) > 1 {
		stores[len(stores)-1].Close()
		stores = stores[:len(stores)-1]
		check(wants[len(stores)-1])
	}
	put(t, stores[0], "still", "works")
	stores[0].Close()

	if err := res.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRocks(t.TempDir(), RocksOptions{Resources: res}); !errors.Is(err, errResourcesClosed) {
		t.Fatalf("OpenRocks with closed resources: %v", err)
	}
}

// TestRocksOpenConcurrently opens stores sharing a budget at once (a
// thread's tasks open their stores together; each database opens outside
// the budget's lock) and closes the budget while more are opening: every
// store that opened has the share of all of them, and an open that lost
// the race with Close fails cleanly.
func TestRocksOpenConcurrently(t *testing.T) {
	res := NewRocksResources(1<<20, 8<<20, 0)
	const n = 8
	stores := make([]*Rocks, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := OpenRocks(filepath.Join(t.TempDir(), fmt.Sprint(i)), RocksOptions{Resources: res})
			if err != nil {
				t.Error(err)
				return
			}
			stores[i] = s
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	want := res.shareFor(n)
	for i, s := range stores {
		if s.writeBufferSize != want {
			t.Errorf("store %d has write_buffer_size %d; want %d (the share of %d stores)", i, s.writeBufferSize, want, n)
		}
		put(t, s, "k", "v")
	}

	errs := make(chan error, n)
	for i := range n {
		go func() {
			s, err := OpenRocks(filepath.Join(t.TempDir(), fmt.Sprint("late", i)), RocksOptions{Resources: res})
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for _, s := range stores {
		s.Close()
	}
	if err := res.Close(); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil && !errors.Is(err, errResourcesClosed) {
			t.Errorf("open racing Close: %v", err)
		}
	}
}

func TestRocksBlockCacheShared(t *testing.T) {
	res := NewRocksResources(4<<20, 8<<20, 0)
	defer res.Close()
	var stores []*Rocks
	for i := range 2 {
		s, err := OpenRocks(t.TempDir(), RocksOptions{Resources: res, DisableWAL: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var bt Batch
		for j := range 5000 {
			bt.Put(fmt.Appendf(nil, "%d-%06d", i, j), make([]byte, 100))
		}
		if err := s.ApplyBatch(&bt); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(); err != nil { // memtable → SST, so reads use the cache
			t.Fatal(err)
		}
		stores = append(stores, s)
	}
	before := res.BlockCacheUsage()
	for i, s := range stores {
		for j := 0; j < 5000; j += 50 {
			if v, err := s.Get(fmt.Appendf(nil, "%d-%06d", i, j)); err != nil || len(v) != 100 {
				t.Fatalf("Get: %d bytes, %v", len(v), err)
			}
		}
	}
	if after := res.BlockCacheUsage(); after <= before {
		t.Fatalf("block cache usage %d → %d: reads from SST files did not use the shared cache", before, after)
	}
}
