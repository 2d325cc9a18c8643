package state

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// runConformance runs the Store contract against stores made by open. Each
// subtest opens its own store; open registers the store's cleanup (Close
// is idempotent, so subtests may close early).
func runConformance(t *testing.T, open func(t *testing.T) Store) {
	t.Run("GetPutDelete", func(t *testing.T) { testGetPutDelete(t, open(t)) })
	t.Run("Overwrite", func(t *testing.T) { testOverwrite(t, open(t)) })
	t.Run("CallerBuffersReused", func(t *testing.T) { testCallerBuffers(t, open(t)) })
	t.Run("EmptyValueVsAbsent", func(t *testing.T) { testEmptyValues(t, open(t)) })
	t.Run("EmptyKey", func(t *testing.T) { testEmptyKey(t, open(t)) })
	t.Run("BinaryKeys", func(t *testing.T) { testBinaryKeys(t, open(t)) })
	t.Run("Ranges", func(t *testing.T) { testRanges(t, open(t)) })
	t.Run("RangeBoundsCopied", func(t *testing.T) { testRangeBoundsCopied(t, open(t)) })
	t.Run("Order", func(t *testing.T) { testOrder(t, open(t)) })
	t.Run("Batch", func(t *testing.T) { testBatch(t, open(t)) })
	t.Run("BatchAtomicity", func(t *testing.T) { testBatchAtomicity(t, open(t)) })
	t.Run("ConcurrentReaders", func(t *testing.T) { testConcurrentReaders(t, open(t)) })
	t.Run("IterateAndDelete", func(t *testing.T) { testIterateAndDelete(t, open(t)) })
	t.Run("IterateAndWrite", func(t *testing.T) { testIterateAndWrite(t, open(t)) })
	t.Run("Close", func(t *testing.T) { testClose(t, open(t)) })
	t.Run("RandomModel", func(t *testing.T) { testRandomModel(t, open(t), 3000) })
	t.Run("DeleteRange", func(t *testing.T) { testDeleteRange(t, open(t)) })
}

// testDeleteRange: a RangeDeleter deletes exactly [start, end), and
// reads afterwards (through an overlay's cache too) do not see the keys.
// An overlay takes it between transactions: its writes are committed
// first.
func testDeleteRange(t *testing.T, s Store) {
	rd, ok := s.(RangeDeleter)
	if !ok {
		t.Skip("not a RangeDeleter")
	}
	for _, k := range []string{"a", "b", "b\x00", "c", "d"} {
		put(t, s, k, "v"+k)
	}
	commit := func() {
		if o, ok := s.(interface{ Commit() error }); ok {
			if err := o.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	commit()
	wantGet(t, s, "b", "vb") // cached by an overlay
	if err := rd.DeleteRange(b("b"), b("d")); err != nil {
		t.Fatal(err)
	}
	wantAbsent(t, s, "b")
	wantAbsent(t, s, "b\x00")
	wantAbsent(t, s, "c")
	wantScan(t, s, nil, nil, kv{"a", "va"}, kv{"d", "vd"})
	if err := rd.DeleteRange(b("x"), b("a")); err != nil { // empty range
		t.Fatal(err)
	}
	wantScan(t, s, nil, nil, kv{"a", "va"}, kv{"d", "vd"})
}

type kv struct{ k, v string }

func put(t *testing.T, s Store, k, v string) {
	t.Helper()
	if err := s.Put([]byte(k), []byte(v)); err != nil {
		t.Fatalf("Put(%q): %v", k, err)
	}
}

func del(t *testing.T, s Store, k string) {
	t.Helper()
	if err := s.Delete([]byte(k)); err != nil {
		t.Fatalf("Delete(%q): %v", k, err)
	}
}

// get returns the value and whether the key is present.
func get(t *testing.T, s Store, k string) (string, bool) {
	t.Helper()
	v, err := s.Get([]byte(k))
	if err != nil {
		t.Fatalf("Get(%q): %v", k, err)
	}
	return string(v), v != nil
}

func wantGet(t *testing.T, s Store, k, want string) {
	t.Helper()
	if v, ok := get(t, s, k); !ok || v != want {
		t.Fatalf("Get(%q) = %q, present=%v; want %q", k, v, ok, want)
	}
}

func wantAbsent(t *testing.T, s Store, k string) {
	t.Helper()
	if v, ok := get(t, s, k); ok {
		t.Fatalf("Get(%q) = %q; want absent", k, v)
	}
}

// scan collects [start, end); a nil *string bound is unbounded.
func scan(t *testing.T, s Store, start, end []byte) []kv {
	t.Helper()
	it, err := s.Range(start, end)
	if err != nil {
		t.Fatalf("Range(%q, %q): %v", start, end, err)
	}
	var out []kv
	for it.Next() {
		if it.Value() == nil {
			t.Fatalf("Range(%q, %q): nil value for key %q", start, end, it.Key())
		}
		out = append(out, kv{string(it.Key()), string(it.Value())})
	}
	if err := it.Close(); err != nil {
		t.Fatalf("Range(%q, %q): %v", start, end, err)
	}
	return out
}

func wantScan(t *testing.T, s Store, start, end []byte, want ...kv) {
	t.Helper()
	got := scan(t, s, start, end)
	if !slices.Equal(got, want) {
		t.Fatalf("Range(%q, %q) = %q; want %q", start, end, got, want)
	}
}

func b(s string) []byte { return []byte(s) }

func testGetPutDelete(t *testing.T, s Store) {
	wantAbsent(t, s, "k")
	put(t, s, "k", "v")
	wantGet(t, s, "k", "v")
	put(t, s, "k2", "v2")
	del(t, s, "k")
	wantAbsent(t, s, "k")
	wantGet(t, s, "k2", "v2")
	del(t, s, "never-there") // not an error
	del(t, s, "k")           // twice: not an error
	wantAbsent(t, s, "k")
}

func testOverwrite(t *testing.T, s Store) {
	put(t, s, "k", "first")
	v1, err := s.Get(b("k"))
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "k", "second, longer")
	wantGet(t, s, "k", "second, longer")
	put(t, s, "k", "3rd")
	wantGet(t, s, "k", "3rd")
	if string(v1) != "first" {
		t.Fatalf("a retained Get result changed to %q after overwrites", v1)
	}
	del(t, s, "k")
	put(t, s, "k", "again")
	wantGet(t, s, "k", "again")
	wantScan(t, s, nil, nil, kv{"k", "again"})
}

func testCallerBuffers(t *testing.T, s Store) {
	key, val := b("key"), b("value")
	if err := s.Put(key, val); err != nil {
		t.Fatal(err)
	}
	copy(key, "xxx")
	copy(val, "XXXXX")
	wantGet(t, s, "key", "value")
	wantAbsent(t, s, "xxx")
	var bt Batch
	bt.Put(b("bk"), b("bv"))
	if err := s.ApplyBatch(&bt); err != nil {
		t.Fatal(err)
	}
	bt.Reset()
	bt.Put(b("zz"), b("zz")) // overwrites the batch's buffer
	wantGet(t, s, "bk", "bv")
	wantAbsent(t, s, "zz")
}

func testEmptyValues(t *testing.T, s Store) {
	if err := s.Put(b("empty"), []byte{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(b("nil"), nil); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"empty", "nil"} {
		v, err := s.Get(b(k))
		if err != nil || v == nil || len(v) != 0 {
			t.Fatalf("Get(%q) = %v (nil=%v), %v; want a non-nil empty value", k, v, v == nil, err)
		}
	}
	v, err := s.Get(b("absent"))
	if err != nil || v != nil {
		t.Fatalf("Get(absent) = %v (nil=%v), %v; want nil, nil", v, v == nil, err)
	}
	var bt Batch
	bt.Put(b("batch-empty"), nil)
	if err := s.ApplyBatch(&bt); err != nil {
		t.Fatal(err)
	}
	wantScan(t, s, nil, nil, kv{"batch-empty", ""}, kv{"empty", ""}, kv{"nil", ""})
	del(t, s, "empty")
	wantAbsent(t, s, "empty")
}

func testEmptyKey(t *testing.T, s Store) {
	put(t, s, "a", "A")
	if err := s.Put([]byte{}, b("empty key")); err != nil {
		t.Fatal(err)
	}
	wantGet(t, s, "", "empty key")
	if v, err := s.Get(nil); err != nil || string(v) != "empty key" {
		t.Fatalf("Get(nil) = %q, %v", v, err)
	}
	wantScan(t, s, nil, nil, kv{"", "empty key"}, kv{"a", "A"})
	wantScan(t, s, []byte{}, b("a"), kv{"", "empty key"})
	wantScan(t, s, []byte{0}, nil, kv{"a", "A"})
	del(t, s, "")
	wantAbsent(t, s, "")
}

func testBinaryKeys(t *testing.T, s Store) {
	keys := []string{
		"\x00", "\x00\x00", "\x00\xff", "\x7f", "\x80", "\xff", "\xff\x00", "\xff\xff",
		"a\x00b", "a", "a\xff", "ab",
	}
	for i, k := range keys {
		put(t, s, k, fmt.Sprintf("v%d\x00\xff", i))
	}
	for i, k := range keys {
		wantGet(t, s, k, fmt.Sprintf("v%d\x00\xff", i))
	}
	sorted := slices.Clone(keys)
	slices.Sort(sorted) // Go strings order bytewise
	var got []string
	for _, e := range scan(t, s, nil, nil) {
		got = append(got, e.k)
	}
	if !slices.Equal(got, sorted) {
		t.Fatalf("order = %q; want %q", got, sorted)
	}
	wantScan(t, s, b("\xff"), nil,
		kv{"\xff", "v5\x00\xff"}, kv{"\xff\x00", "v6\x00\xff"}, kv{"\xff\xff", "v7\x00\xff"})
	wantScan(t, s, b("\x00"), b("\x00\xff"), kv{"\x00", "v0\x00\xff"}, kv{"\x00\x00", "v1\x00\xff"})
	// A prefix of 0xff bytes has no end bound: PrefixEnd is unbounded.
	wantScan(t, s, b("\xff\xff"), PrefixEnd(b("\xff\xff")), kv{"\xff\xff", "v7\x00\xff"})
	wantScan(t, s, b("a"), PrefixEnd(b("a")),
		kv{"a", "v9\x00\xff"}, kv{"a\x00b", "v8\x00\xff"}, kv{"ab", "v11\x00\xff"}, kv{"a\xff", "v10\x00\xff"})
	wantScan(t, s, b("a\xff"), PrefixEnd(b("a\xff")), kv{"a\xff", "v10\x00\xff"})
}

func testRanges(t *testing.T, s Store) {
	for _, k := range []string{"a", "b", "c", "d"} {
		put(t, s, k, k+k)
	}
	A, B, C, D := kv{"a", "aa"}, kv{"b", "bb"}, kv{"c", "cc"}, kv{"d", "dd"}
	wantScan(t, s, nil, nil, A, B, C, D)
	wantScan(t, s, b("b"), b("d"), B, C) // half-open: d excluded
	wantScan(t, s, b("b"), nil, B, C, D)
	wantScan(t, s, nil, b("c"), A, B)
	wantScan(t, s, b("bb"), b("cc"), C)
	wantScan(t, s, b("0"), b("z"), A, B, C, D)
	wantScan(t, s, []byte{}, nil, A, B, C, D) // empty start = from the first key
	wantScan(t, s, b("c"), b("c"))            // empty range
	wantScan(t, s, b("d"), b("a"))            // inverted: nothing
	wantScan(t, s, nil, []byte{})             // empty non-nil end: nothing
	wantScan(t, s, b("e"), nil)
	wantScan(t, s, nil, b("a"))
	wantScan(t, s, b("d"), b("d\x00"), D)
}

func testRangeBoundsCopied(t *testing.T, s Store) {
	for _, k := range []string{"a", "b", "c", "d"} {
		put(t, s, k, k)
	}
	start, end := b("b"), b("d")
	it, err := s.Range(start, end)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	copy(start, "a")
	copy(end, "z")
	var got []string
	for it.Next() {
		got = append(got, string(it.Key()))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("after the caller changed its bound buffers, Range gave %q; want [b c]", got)
	}
}

func testOrder(t *testing.T, s Store) {
	rng := rand.New(rand.NewPCG(1, 2))
	want := map[string]string{}
	for range 500 {
		k := make([]byte, 1+rng.IntN(12))
		for i := range k {
			k[i] = byte(rng.UintN(256))
		}
		v := fmt.Sprint(rng.Int())
		want[string(k)] = v
		put(t, s, string(k), v)
	}
	got := scan(t, s, nil, nil)
	if len(got) != len(want) {
		t.Fatalf("Range returned %d keys; want %d", len(got), len(want))
	}
	for i, e := range got {
		if i > 0 && got[i-1].k >= e.k {
			t.Fatalf("keys out of order at %d: %q then %q", i, got[i-1].k, e.k)
		}
		if want[e.k] != e.v {
			t.Fatalf("key %q = %q; want %q", e.k, e.v, want[e.k])
		}
	}
}

func testBatch(t *testing.T, s Store) {
	put(t, s, "old", "o")
	put(t, s, "gone", "g")
	var bt Batch
	if err := s.ApplyBatch(&bt); err != nil { // empty batch
		t.Fatal(err)
	}
	bt.Put(b("k"), b("v1"))
	bt.Delete(b("k"))
	bt.Put(b("k"), b("v2")) // later operations win
	bt.Put(b("j"), b("j"))
	bt.Delete(b("j"))
	bt.Delete(b("gone"))
	bt.Put(b("new"), b("n"))
	if bt.Len() != 7 {
		t.Fatalf("Len = %d; want 7", bt.Len())
	}
	if k, v, d := bt.At(1); string(k) != "k" || v != nil || !d {
		t.Fatalf("At(1) = %q, %q, %v; want the delete of k", k, v, d)
	}
	if k, v, d := bt.At(0); string(k) != "k" || string(v) != "v1" || d {
		t.Fatalf("At(0) = %q, %q, %v; want the put of k", k, v, d)
	}
	if err := s.ApplyBatch(&bt); err != nil {
		t.Fatal(err)
	}
	wantScan(t, s, nil, nil, kv{"k", "v2"}, kv{"new", "n"}, kv{"old", "o"})
	bt.Reset()
	if bt.Len() != 0 {
		t.Fatalf("Len after Reset = %d", bt.Len())
	}
	bt.Put(b("again"), b("a"))
	if err := s.ApplyBatch(&bt); err != nil {
		t.Fatal(err)
	}
	wantGet(t, s, "again", "a")
	wantGet(t, s, "k", "v2")
}

// testBatchAtomicity checks that concurrent readers see a batch entirely or
// not at all: each batch writes generation g to keys k00…k31, in that
// order; a reader that sees g on k00 must then see at least g on k31.
func testBatchAtomicity(t *testing.T, s Store) {
	const nkeys, gens = 32, 300
	key := func(i int) []byte { return fmt.Appendf(nil, "k%02d", i) }
	var bt Batch
	for i := range nkeys {
		bt.Put(key(i), b("0000"))
	}
	if err := s.ApplyBatch(&bt); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	errc := make(chan error, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first, last := key(0), key(nkeys-1)
			for {
				select {
				case <-done:
					errc <- nil
					return
				default:
				}
				a, err := s.Get(first)
				if err != nil {
					errc <- err
					return
				}
				z, err := s.Get(last)
				if err != nil {
					errc <- err
					return
				}
				if string(z) < string(a) {
					errc <- fmt.Errorf("saw generation %s on the first key, then %s on the last: batch not atomic", a, z)
					return
				}
			}
		}()
	}
	for g := 1; g <= gens; g++ {
		bt.Reset()
		for i := range nkeys {
			bt.Put(key(i), fmt.Appendf(nil, "%04d", g))
		}
		if err := s.ApplyBatch(&bt); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

// testConcurrentReaders runs scans and gets on two goroutines while one
// writer inserts and deletes: scans stay strictly ascending and in range,
// and keys the writer never touches are always there.
func testConcurrentReaders(t *testing.T, s Store) {
	for i := 0; i < 100; i += 10 {
		put(t, s, fmt.Sprintf("k%03d", i), "stable")
	}
	done := make(chan struct{})
	errc := make(chan error, 2)
	for r := range 2 {
		go func() {
			for n := 0; ; n++ {
				select {
				case <-done:
					errc <- nil
					return
				default:
				}
				it, err := s.Range(b("k000"), b("k100"))
				if err != nil {
					errc <- err
					return
				}
				prev, stable := "", 0
				for it.Next() {
					k := string(it.Key())
					if k <= prev || k >= "k100" {
						errc <- fmt.Errorf("reader %d: key %q after %q", r, k, prev)
						it.Close()
						return
					}
					if k[3] == '0' {
						stable++
					}
					prev = k
				}
				if err := it.Close(); err != nil {
					errc <- err
					return
				}
				if stable != 10 {
					errc <- fmt.Errorf("reader %d: scan saw %d of the 10 untouched keys", r, stable)
					return
				}
				if v, err := s.Get(b("k050")); err != nil || string(v) != "stable" {
					errc <- fmt.Errorf("reader %d: Get(k050) = %q, %v", r, v, err)
					return
				}
			}
		}()
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		k := fmt.Sprintf("k%03d", rng.IntN(100))
		if k[3] == '0' {
			continue
		}
		if rng.IntN(2) == 0 {
			put(t, s, k, "churn")
		} else {
			del(t, s, k)
		}
	}
	close(done)
	for range 2 {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

// testIterateAndDelete is the retention-pruning pattern: delete each key as
// it is visited.
func testIterateAndDelete(t *testing.T, s Store) {
	var want []string
	for i := range 200 {
		k := fmt.Sprintf("k%03d", i)
		want = append(want, k)
		put(t, s, k, "v")
	}
	put(t, s, "z-outside", "v")
	it, err := s.Range(nil, b("z"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for it.Next() {
		k := string(it.Key())
		got = append(got, k)
		del(t, s, k)
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("visited %d keys %q…; want %d", len(got), got[:min(len(got), 5)], len(want))
	}
	wantScan(t, s, nil, nil, kv{"z-outside", "v"})
}

// testIterateAndWrite writes while an iterator is open: overwrites of the
// visited key, inserts behind and ahead of the cursor, and a delete ahead.
// Keys come back strictly ascending, inside the range, at most once, and
// every key present at Range that was not touched is returned.
func testIterateAndWrite(t *testing.T, s Store) {
	untouched := map[string]bool{}
	for i := 0; i < 100; i += 2 {
		k := fmt.Sprintf("k%03d", i)
		put(t, s, k, "v")
		untouched[k] = true
	}
	it, err := s.Range(b("k010"), b("k090"))
	if err != nil {
		t.Fatal(err)
	}
	prev := ""
	n := 0
	for it.Next() {
		k := string(it.Key())
		if k <= prev {
			t.Fatalf("key %q after %q: not strictly ascending", k, prev)
		}
		if k < "k010" || k >= "k090" {
			t.Fatalf("key %q outside [k010, k090)", k)
		}
		prev = k
		delete(untouched, k)
		n++
		if k != "k060" { // a snapshot iterator may return it after its delete
			put(t, s, k, "overwritten") // the current key
		}
		put(t, s, fmt.Sprintf("k%03d", 2*(n%50)+1), "new") // odd keys, behind and ahead
		if n == 5 {
			del(t, s, "k060") // ahead: may or may not be returned
			delete(untouched, "k060")
		}
		if n > 1000 {
			t.Fatal("iterator does not terminate")
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	for k := range untouched {
		if k >= "k010" && k < "k090" {
			t.Fatalf("key %q was present and untouched but not returned", k)
		}
	}
	wantGet(t, s, "k010", "overwritten")
	wantAbsent(t, s, "k060")
}

func testClose(t *testing.T, s Store) {
	put(t, s, "a", "1")
	put(t, s, "b", "2")
	it, err := s.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !it.Next() || string(it.Key()) != "a" {
		t.Fatalf("first key = %q", it.Key())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if it.Next() {
		t.Fatalf("iterator went on after Close: %q", it.Key())
	}
	if !errors.Is(it.Err(), ErrClosed) {
		t.Fatalf("iterator Err after store Close = %v; want ErrClosed", it.Err())
	}
	it.Close()
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Get(b("a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v", err)
	}
	if err := s.Put(b("a"), b("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close: %v", err)
	}
	if err := s.Delete(b("a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Delete after Close: %v", err)
	}
	var bt Batch
	bt.Put(b("a"), b("x"))
	if err := s.ApplyBatch(&bt); !errors.Is(err, ErrClosed) {
		t.Fatalf("ApplyBatch after Close: %v", err)
	}
	if _, err := s.Range(nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Range after Close: %v", err)
	}
}

// randKey draws from a small key space (400 keys) rich in 0x00 and 0xff.
func randKey(rng *rand.Rand) []byte {
	const alphabet = "\x00\x01a\x7f\x80\xfe\xff"
	k := make([]byte, rng.IntN(4))
	for i := range k {
		k[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return k
}

func randValue(rng *rand.Rand) []byte {
	v := make([]byte, rng.IntN(9))
	for i := range v {
		v[i] = byte(rng.UintN(256))
	}
	return v
}

// randBound returns nil a quarter of the time, otherwise a random key.
func randBound(rng *rand.Rand) []byte {
	if rng.IntN(4) == 0 {
		return nil
	}
	return randKey(rng)
}

// modelRange is the reference: the map's keys in [start, end), sorted.
func modelRange(m map[string]string, start, end []byte) []kv {
	var out []kv
	for k, v := range m {
		if k >= string(start) && (end == nil || k < string(end)) {
			out = append(out, kv{k, v})
		}
	}
	slices.SortFunc(out, func(a, b kv) int { return bytes.Compare([]byte(a.k), []byte(b.k)) })
	return out
}

// testRandomModel applies random operations to s and to a Go map and
// compares every read.
func testRandomModel(t *testing.T, s Store, ops int) {
	rng := rand.New(rand.NewPCG(42, uint64(ops)))
	model := map[string]string{}
	var bt Batch
	for i := range ops {
		switch r := rng.IntN(100); {
		case r < 35:
			k, v := randKey(rng), randValue(rng)
			if err := s.Put(k, v); err != nil {
				t.Fatal(err)
			}
			model[string(k)] = string(v)
		case r < 50:
			k := randKey(rng)
			if err := s.Delete(k); err != nil {
				t.Fatal(err)
			}
			delete(model, string(k))
		case r < 75:
			k := randKey(rng)
			got, err := s.Get(k)
			if err != nil {
				t.Fatal(err)
			}
			want, ok := model[string(k)]
			if (got != nil) != ok || string(got) != want {
				t.Fatalf("op %d: Get(%q) = %q (present=%v); want %q (present=%v)", i, k, got, got != nil, want, ok)
			}
		case r < 88:
			start, end := randBound(rng), randBound(rng)
			got, want := scan(t, s, start, end), modelRange(model, start, end)
			if !slices.Equal(got, want) {
				t.Fatalf("op %d: Range(%q, %q) = %q; want %q", i, start, end, got, want)
			}
		default:
			bt.Reset()
			for range 1 + rng.IntN(8) {
				k := randKey(rng)
				if rng.IntN(3) == 0 {
					bt.Delete(k)
					delete(model, string(k))
				} else {
					v := randValue(rng)
					bt.Put(k, v)
					model[string(k)] = string(v)
				}
			}
			if err := s.ApplyBatch(&bt); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, want := scan(t, s, nil, nil), modelRange(model, nil, nil); !slices.Equal(got, want) {
		t.Fatalf("final contents: %d keys; want %d", len(got), len(want))
	}
}

// The stores under test.

func openMemory(t *testing.T) Store {
	s := NewMemory()
	t.Cleanup(func() { s.Close() })
	return s
}

// testResources is shared by every RocksDB store the tests open, as a
// server shares one.
var testResources = sync.OnceValue(func() *RocksResources {
	return NewRocksResources(8<<20, 32<<20, 0)
})

func openRocks(t *testing.T) Store {
	s, err := OpenRocks(t.TempDir(), RocksOptions{Resources: testResources()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// committing is an Overlay that commits after every third write, so the
// suite exercises reads that merge pending writes with committed ones.
type committing struct {
	*Overlay
	writes int
}

func (c *committing) tick(err error) error {
	if err != nil {
		return err
	}
	c.writes++
	if c.writes%3 == 0 {
		return c.Commit()
	}
	return nil
}

func (c *committing) Put(k, v []byte) error     { return c.tick(c.Overlay.Put(k, v)) }
func (c *committing) Delete(k []byte) error     { return c.tick(c.Overlay.Delete(k)) }
func (c *committing) ApplyBatch(b *Batch) error { return c.tick(c.Overlay.ApplyBatch(b)) }

func TestMemoryConformance(t *testing.T) { runConformance(t, openMemory) }

func TestRocksConformance(t *testing.T) { runConformance(t, openRocks) }

func TestOverlayConformance(t *testing.T) {
	for name, base := range map[string]func(*testing.T) Store{"Memory": openMemory, "Rocks": openRocks} {
		t.Run(name, func(t *testing.T) {
			runConformance(t, func(t *testing.T) Store { return NewOverlay(base(t)) })
		})
		t.Run(name+"Committing", func(t *testing.T) {
			runConformance(t, func(t *testing.T) Store { return &committing{Overlay: NewOverlay(base(t))} })
		})
		// Committed writes applied to the base in the background.
		t.Run(name+"AsyncCommitting", func(t *testing.T) {
			runConformance(t, func(t *testing.T) Store {
				o := NewOverlay(base(t))
				if err := o.SetAsyncCommit(true); err != nil {
					t.Fatal(err)
				}
				return &committing{Overlay: o}
			})
		})
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ in, want []byte }{
		{nil, nil},
		{[]byte{}, nil},
		{b("a"), b("b")},
		{b("a\xff"), b("b")},
		{b("a\xfe"), b("a\xff")},
		{b("\xff\xff"), nil},
		{[]byte{0, 0xff, 0xff}, []byte{1}},
	} {
		got := PrefixEnd(c.in)
		if !bytes.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("PrefixEnd(%q) = %q; want %q", c.in, got, c.want)
		}
	}
	in := b("ab")
	PrefixEnd(in)
	if string(in) != "ab" {
		t.Fatalf("PrefixEnd modified its argument: %q", in)
	}
}
