package state

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// seeking is a Store whose Range is a fresh Seeker of s, so that the
// conformance suite checks Seekers as it checks iterators.
type seeking struct {
	Store
	s Seekable
}

func (s seeking) Range(start, end []byte) (Iterator, error) {
	sk, err := s.s.NewSeeker()
	if err != nil {
		return nil, err
	}
	if err := sk.Seek(start, end); err != nil {
		sk.Close()
		return nil, err
	}
	return sk, nil
}

func TestSeekerConformance(t *testing.T) {
	t.Run("Rocks", func(t *testing.T) {
		runConformance(t, func(t *testing.T) Store { s := openRocks(t); return seeking{s, s.(Seekable)} })
	})
	for name, base := range map[string]func(*testing.T) Store{"Memory": openMemory, "Rocks": openRocks} {
		t.Run("Overlay"+name, func(t *testing.T) {
			runConformance(t, func(t *testing.T) Store { o := NewOverlay(base(t)); return seeking{o, o} })
		})
		t.Run("Overlay"+name+"Committing", func(t *testing.T) {
			runConformance(t, func(t *testing.T) Store { c := &committing{Overlay: NewOverlay(base(t))}; return seeking{c, c} })
		})
	}
}

// TestSeekerReuse points one Seeker of an overlay over RocksDB at range
// after range while keys are written, deleted, committed and aborted, and
// checks every range against a fresh Range of the same store.
func TestSeekerReuse(t *testing.T) {
	db, err := OpenRocks(t.TempDir(), RocksOptions{Resources: testResources()})
	if err != nil {
		t.Fatal(err)
	}
	o := NewOverlay(db)
	defer o.Close()
	sk, err := o.NewSeeker()
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(200)) }
	collect := func(it Iterator) []kv {
		var out []kv
		for it.Next() {
			out = append(out, kv{string(it.Key()), string(it.Value())})
		}
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for step := range 3000 {
		switch r := rng.IntN(100); {
		case r < 50:
			if err := o.Put(key(), fmt.Appendf(nil, "v%d", step)); err != nil {
				t.Fatal(err)
			}
		case r < 65:
			if err := o.Delete(key()); err != nil {
				t.Fatal(err)
			}
		case r < 70:
			if err := o.Commit(); err != nil {
				t.Fatal(err)
			}
		case r < 72:
			o.Abort()
		case r < 74:
			if err := o.Commit(); err != nil {
				t.Fatal(err)
			}
			a, b := key(), key()
			if err := o.DeleteRange(a, b); err != nil {
				t.Fatal(err)
			}
		}
		start, end := key(), key()
		switch rng.IntN(10) {
		case 0:
			start = nil
		case 1:
			end = nil
		}
		it, err := o.Range(start, end)
		if err != nil {
			t.Fatal(err)
		}
		want := collect(it)
		it.Close()
		if err := sk.Seek(start, end); err != nil {
			t.Fatal(err)
		}
		// Sometimes a range is left half read before the next Seek.
		got := collect(sk)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: Seek(%q, %q) gave %q; Range gives %q", step, start, end, got, want)
		}
		if rng.IntN(4) == 0 {
			if err := sk.Seek(start, nil); err != nil {
				t.Fatal(err)
			}
			sk.Next()
		}
	}
	// A closed store: the seeker reports it.
	o.Close()
	if err := sk.Seek(nil, nil); err == nil && sk.Next() {
		t.Fatal("a seeker of a closed overlay still iterates")
	}
}

// TestSeekerAllocations holds a reused Seeker's range scans over an
// overlay on RocksDB (pending and committed keys) to zero allocations.
func TestSeekerAllocations(t *testing.T) {
	db, err := OpenRocks(t.TempDir(), RocksOptions{Resources: testResources()})
	if err != nil {
		t.Fatal(err)
	}
	o := NewOverlay(db)
	defer o.Close()
	for i := range 100 {
		if err := o.Put(fmt.Appendf(nil, "k%03d", i), []byte("committed")); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i += 3 {
		if err := o.Put(fmt.Appendf(nil, "k%03d", i), []byte("pending")); err != nil {
			t.Fatal(err)
		}
	}
	sk, err := o.NewSeeker()
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	from, to := []byte("k010"), []byte("k020")
	n := 0
	scan := func() {
		if err := sk.Seek(from, to); err != nil {
			t.Fatal(err)
		}
		for sk.Next() {
			n++
		}
		if err := sk.Err(); err != nil {
			t.Fatal(err)
		}
	}
	scan()
	if allocs := testing.AllocsPerRun(1000, scan); allocs != 0 {
		t.Errorf("a seeker's range scan: %.2f allocations", allocs)
	}
	if n != 1002*10 {
		t.Errorf("scanned %d keys; want %d", n, 1002*10)
	}
}

// TestRocksSeekerBuffer: a RocksDB seeker copies a range's entries into
// its buffer while they fit; ranges longer than the buffer, and entries
// larger than it, read back as a store's Range gives them.
func TestRocksSeekerBuffer(t *testing.T) {
	db, err := OpenRocks(t.TempDir(), RocksOptions{Resources: testResources()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b Batch
	for i := range 60 {
		v := bytes.Repeat([]byte{byte('a' + i%26)}, 500)
		switch i {
		case 7:
			v = bytes.Repeat([]byte("big"), 5000) // larger than the buffer
		case 8:
			v = nil // empty
		}
		b.Put(fmt.Appendf(nil, "k%03d", i), v)
	}
	if err := db.ApplyBatch(&b); err != nil {
		t.Fatal(err)
	}
	sk, err := db.NewSeeker()
	if err != nil {
		t.Fatal(err)
	}
	defer sk.Close()
	for _, r := range [][2]string{{"", ""}, {"k005", "k050"}, {"k007", "k008"}, {"k008", "k009"}, {"k059", ""}, {"k100", ""}} {
		var from, to []byte
		if r[0] != "" {
			from = []byte(r[0])
		}
		if r[1] != "" {
			to = []byte(r[1])
		}
		var want, got []string
		it, err := db.Range(from, to)
		if err != nil {
			t.Fatal(err)
		}
		for it.Next() {
			want = append(want, fmt.Sprintf("%s=%d:%.3s", it.Key(), len(it.Value()), it.Value()))
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if err := sk.Seek(from, to); err != nil {
			t.Fatal(err)
		}
		for sk.Next() {
			if sk.Value() == nil {
				t.Errorf("%v: %s: a nil value", r, sk.Key())
			}
			got = append(got, fmt.Sprintf("%s=%d:%.3s", sk.Key(), len(sk.Value()), sk.Value()))
		}
		if err := sk.Err(); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%v: got\n%v\nwant\n%v", r, got, want)
		}
	}
}
