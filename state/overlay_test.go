package state

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// forEachBase runs fn with an overlay over each kind of base store.
func forEachBase(t *testing.T, fn func(t *testing.T, o *Overlay)) { forEachSeededBase(t, nil, fn) }

// forEachSeededBase is forEachBase over bases that hold seed (written
// before the overlay opens: nothing writes to its base while it is open).
func forEachSeededBase(t *testing.T, seed []kv, fn func(t *testing.T, o *Overlay)) {
	for _, c := range []struct {
		name string
		open func(*testing.T) Store
	}{{"Memory", openMemory}, {"Rocks", openRocks}} {
		t.Run(c.name, func(t *testing.T) {
			base := c.open(t)
			for _, e := range seed {
				put(t, base, e.k, e.v)
			}
			fn(t, NewOverlay(base))
		})
	}
}

func TestOverlayShadowsBase(t *testing.T) {
	seed := []kv{{"a", "base-a"}, {"b", "base-b"}, {"c", "base-c"}, {"e", "base-e"}}
	forEachSeededBase(t, seed, func(t *testing.T, o *Overlay) {
		base := o.Base()
		put(t, o, "b", "new-b")
		del(t, o, "c")
		put(t, o, "d", "new-d")
		del(t, o, "x") // a delete of a key the base lacks is fine
		if o.Len() != 4 {
			t.Fatalf("Len = %d; want 4 pending writes", o.Len())
		}
		wantGet(t, o, "a", "base-a")
		wantGet(t, o, "b", "new-b")
		wantAbsent(t, o, "c")
		wantGet(t, o, "d", "new-d")
		wantAbsent(t, o, "x")
		wantScan(t, o, nil, nil, kv{"a", "base-a"}, kv{"b", "new-b"}, kv{"d", "new-d"}, kv{"e", "base-e"})
		wantScan(t, o, b("c"), b("e"), kv{"d", "new-d"})
		wantScan(t, o, b("b"), b("c"), kv{"b", "new-b"})
		// The base is untouched until Commit.
		wantScan(t, base, nil, nil, kv{"a", "base-a"}, kv{"b", "base-b"}, kv{"c", "base-c"}, kv{"e", "base-e"})
	})
}

func TestOverlayCommit(t *testing.T) {
	forEachSeededBase(t, []kv{{"a", "1"}, {"c", "3"}}, func(t *testing.T, o *Overlay) {
		base := o.Base()
		put(t, o, "b", "2")
		del(t, o, "c")
		put(t, o, "a", "one")
		v, _ := o.Get(b("a"))
		if err := o.Commit(); err != nil {
			t.Fatal(err)
		}
		if o.Len() != 0 {
			t.Fatalf("Len after Commit = %d", o.Len())
		}
		want := []kv{{"a", "one"}, {"b", "2"}}
		wantScan(t, base, nil, nil, want...)
		wantScan(t, o, nil, nil, want...)
		// A value read through the overlay survives the end of its transaction.
		for i := range 2000 {
			put(t, o, fmt.Sprintf("filler%04d", i), "xxxxxxxxxxxxxxxx")
		}
		o.Abort()
		if string(v) != "one" {
			t.Fatalf("value read before Commit changed to %q", v)
		}
		if err := o.Commit(); err != nil { // nothing pending
			t.Fatal(err)
		}
		wantScan(t, base, nil, nil, want...)
	})
}

func TestOverlayAbort(t *testing.T) {
	forEachSeededBase(t, []kv{{"a", "1"}}, func(t *testing.T, o *Overlay) {
		base := o.Base()
		put(t, o, "a", "changed")
		put(t, o, "b", "2")
		del(t, o, "a")
		o.Abort()
		if o.Len() != 0 {
			t.Fatalf("Len after Abort = %d", o.Len())
		}
		wantScan(t, o, nil, nil, kv{"a", "1"})
		wantScan(t, base, nil, nil, kv{"a", "1"})
		put(t, o, "c", "3") // the next transaction starts clean
		if err := o.Commit(); err != nil {
			t.Fatal(err)
		}
		wantScan(t, base, nil, nil, kv{"a", "1"}, kv{"c", "3"})
	})
}

func TestOverlayPending(t *testing.T) {
	o := NewOverlay(NewMemory())
	defer o.Close()
	put(t, o, "b", "1")
	put(t, o, "a", "1")
	put(t, o, "b", "2")
	del(t, o, "c")
	var bt Batch
	bt.Put(b("d"), nil)
	bt.Delete(b("a"))
	if err := o.ApplyBatch(&bt); err != nil {
		t.Fatal(err)
	}
	type w struct {
		k, v string
		del  bool
	}
	var got []w
	err := o.Pending(func(k, v []byte, d bool) error {
		if d != (v == nil) {
			t.Fatalf("Pending(%q): deleted=%v but value nil=%v", k, d, v == nil)
		}
		got = append(got, w{string(k), string(v), d})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []w{{"a", "", true}, {"b", "2", false}, {"c", "", true}, {"d", "", false}}
	if !slices.Equal(got, want) {
		t.Fatalf("Pending = %v; want %v", got, want)
	}
	stop := errors.New("stop")
	n := 0
	if err := o.Pending(func(k, v []byte, d bool) error { n++; return stop }); err != stop || n != 1 {
		t.Fatalf("Pending did not stop at fn's error: err=%v after %d calls", err, n)
	}
}

// batchCounter counts the operations ApplyBatch writes to a store.
type batchCounter struct {
	Store
	ops int
}

func (c *batchCounter) ApplyBatch(b *Batch) error {
	c.ops += b.Len()
	return c.Store.ApplyBatch(b)
}

// TestOverlayPutNew: a key PutNew wrote and a later Delete deleted in the
// same transaction reaches the base as nothing, neither put nor delete
// (nor does Pending list it); a key the base holds, or that has a
// pending write, is written as Put writes it.
func TestOverlayPutNew(t *testing.T) {
	base := &batchCounter{Store: NewMemory()}
	put(t, base, "held", "0")
	base.ops = 0
	o := NewOverlay(base)
	defer o.Close()
	putNew := func(k, v string) {
		t.Helper()
		if err := o.PutNew(b(k), b(v)); err != nil {
			t.Fatal(err)
		}
	}
	// Versions of a session: each written new, each deleted by the next.
	for i := range 10 {
		if i > 0 {
			del(t, o, fmt.Sprint("v", i-1))
		}
		putNew(fmt.Sprint("v", i), "x")
		put(t, o, fmt.Sprint("v", i), "y") // rewritten: still new
	}
	putNew("gone", "1")
	del(t, o, "gone")
	del(t, o, "gone") // deleted again (an aggregation's flush)
	putNew("back", "1")
	del(t, o, "back")
	put(t, o, "back", "2") // written again after its cancelled put
	// The base holds it: its delete must reach the base, and a claim of
	// new after the delete changes nothing.
	del(t, o, "held")
	putNew("held", "1")
	del(t, o, "held")
	wantAbsent(t, o, "gone")
	wantAbsent(t, o, "v0")
	wantGet(t, o, "v9", "y")
	var pending []string
	if err := o.Pending(func(k, v []byte, d bool) error {
		pending = append(pending, fmt.Sprintf("%s=%s/%v", k, v, d))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"back=2/false", "held=/true", "v9=y/false"}; !slices.Equal(pending, want) {
		t.Fatalf("Pending: %q, want %q", pending, want)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if base.ops != 3 {
		t.Fatalf("Commit wrote %d operations to the base, want 3 (back, held, v9)", base.ops)
	}
	wantAbsent(t, base, "held")
	wantGet(t, base, "back", "2")
	wantGet(t, base, "v9", "y")
	wantScan(t, base, nil, nil, kv{"back", "2"}, kv{"v9", "y"})
	// Only cancelled writes: Commit writes nothing.
	putNew("w", "1")
	del(t, o, "w")
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if base.ops != 3 {
		t.Fatalf("Commit of a cancelled put wrote %d operations", base.ops-3)
	}
	wantAbsent(t, o, "w")
}

// failingStore fails ApplyBatch while fail is set.
type failingStore struct {
	Store
	fail bool
}

func (f *failingStore) ApplyBatch(b *Batch) error {
	if f.fail {
		return errors.New("disk on fire")
	}
	return f.Store.ApplyBatch(b)
}

func TestOverlayCommitFailureKeepsWrites(t *testing.T) {
	base := &failingStore{Store: NewMemory(), fail: true}
	o := NewOverlay(base)
	defer o.Close()
	put(t, o, "a", "1")
	del(t, o, "b")
	if err := o.Commit(); err == nil {
		t.Fatal("Commit succeeded over a failing base")
	}
	if o.Len() != 2 {
		t.Fatalf("Len after failed Commit = %d; want the 2 writes kept", o.Len())
	}
	wantGet(t, o, "a", "1")
	wantAbsent(t, base, "a")
	base.fail = false
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	wantGet(t, base, "a", "1")
}

// TestOverlayAsyncCommit: with SetAsyncCommit, Commit returns before
// the base holds the writes; the overlay shows them meanwhile, the
// committed view and Sync wait for them, and a failed apply keeps them
// readable until Sync applies them.
func TestOverlayAsyncCommit(t *testing.T) {
	base := &failingStore{Store: NewMemory()}
	o := NewOverlay(base)
	defer o.Close()
	if err := o.SetAsyncCommit(true); err != nil {
		t.Fatal(err)
	}
	view := o.Committed()
	put(t, o, "a", "1")
	put(t, o, "b", "2")
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	put(t, o, "b", "3") // the next transaction, while the first applies
	wantGet(t, o, "a", "1")
	wantGet(t, o, "b", "3")
	wantGet(t, view, "a", "1")
	wantGet(t, view, "b", "2")
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := o.Sync(); err != nil {
		t.Fatal(err)
	}
	wantGet(t, base, "b", "3")
	if o.Len() != 0 {
		t.Fatalf("Len after Commit = %d", o.Len())
	}

	base.fail = true
	put(t, o, "c", "4")
	del(t, o, "a")
	if err := o.Commit(); err != nil {
		t.Fatal(err) // the apply fails later
	}
	if err := o.Sync(); err == nil {
		t.Fatal("Sync succeeded over a failing base")
	}
	wantGet(t, o, "c", "4")
	wantAbsent(t, o, "a")
	wantAbsent(t, base, "c")
	if err := o.Commit(); err == nil {
		t.Fatal("Commit succeeded with a failed apply before it")
	}
	base.fail = false
	if err := o.Sync(); err != nil {
		t.Fatal(err)
	}
	wantGet(t, base, "c", "4")
	wantAbsent(t, base, "a")
	if _, err := view.Get(b("c")); err != nil {
		t.Fatal(err)
	}
	if err := view.Put(b("x"), b("y")); err == nil {
		t.Fatal("a write through the committed view succeeded")
	}
}

func TestOverlayCloseClosesBase(t *testing.T) {
	base := NewMemory()
	o := NewOverlay(base)
	put(t, o, "a", "1")
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := base.Get(b("a")); !errors.Is(err, ErrClosed) {
		t.Fatalf("base after Overlay.Close: %v; want ErrClosed", err)
	}
	if err := o.Commit(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close: %v", err)
	}
	if err := o.Pending(func([]byte, []byte, bool) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("Pending after Close: %v", err)
	}
}

// TestOverlayRandomModel mixes writes with Commit and Abort and checks the
// overlay's view and the base's (committed) view against two maps, with
// the cache of committed values large, small (evicting) and off.
// With async, commits apply in the background (SetAsyncCommit); with a
// filter (FilterKeys) of 64 bytes, it overflows and goes, of 512 it
// grows.
func TestOverlayRandomModel(t *testing.T) {
	for _, async := range []bool{false, true} {
		for _, entries := range []int{CacheEntries, 8, 0} {
			for _, filter := range []int{0, 64, 512} {
				t.Run(fmt.Sprintf("cache=%d/async=%v/filter=%d", entries, async, filter), func(t *testing.T) {
					testOverlayRandomModel(t, entries, async, filter)
				})
			}
		}
	}
}

func testOverlayRandomModel(t *testing.T, cacheEntries int, async bool, filter int) {
	forEachBase(t, func(t *testing.T, o *Overlay) {
		o.SetCacheEntries(cacheEntries)
		if err := o.SetAsyncCommit(async); err != nil {
			t.Fatal(err)
		}
		if filter > 0 {
			if err := o.FilterKeys(filter); err != nil {
				t.Fatal(err)
			}
		}
		// The committed state, as a pull query reads it (with async, a
		// view that waits for the apply in flight).
		committedView := o.Committed()
		rng := rand.New(rand.NewPCG(7, 11))
		committed := map[string]string{}
		pending := map[string]*string{} // nil: pending delete
		view := func() map[string]string {
			m := map[string]string{}
			for k, v := range committed {
				m[k] = v
			}
			for k, v := range pending {
				if v == nil {
					delete(m, k)
				} else {
					m[k] = *v
				}
			}
			return m
		}
		check := func(i int) {
			t.Helper()
			start, end := randBound(rng), randBound(rng)
			if got, want := scan(t, o, start, end), modelRange(view(), start, end); !slices.Equal(got, want) {
				t.Fatalf("op %d: overlay Range(%q, %q) = %q; want %q", i, start, end, got, want)
			}
			if got, want := scan(t, committedView, start, end), modelRange(committed, start, end); !slices.Equal(got, want) {
				t.Fatalf("op %d: base Range(%q, %q) = %q; want %q", i, start, end, got, want)
			}
			if o.Len() != len(pending) {
				t.Fatalf("op %d: Len = %d; want %d", i, o.Len(), len(pending))
			}
		}
		for i := range 3000 {
			switch r := rng.IntN(100); {
			case r < 40:
				k, v := randKey(rng), string(randValue(rng))
				if _, ok := view()[string(k)]; !ok && rng.IntN(2) == 0 {
					// Absent, as the caller would have read it.
					if err := o.PutNew(k, []byte(v)); err != nil {
						t.Fatal(err)
					}
				} else {
					put(t, o, string(k), v)
				}
				pending[string(k)] = &v
			case r < 55:
				k := randKey(rng)
				del(t, o, string(k))
				pending[string(k)] = nil
			case r < 75:
				k := randKey(rng)
				got, err := o.Get(k)
				if err != nil {
					t.Fatal(err)
				}
				want, ok := view()[string(k)]
				if (got != nil) != ok || string(got) != want {
					t.Fatalf("op %d: Get(%q) = %q; want %q (present=%v)", i, k, got, want, ok)
				}
			case r < 85:
				check(i)
			case r < 93:
				if err := o.Commit(); err != nil {
					t.Fatal(err)
				}
				committed = view()
				clear(pending)
				check(i)
			default:
				o.Abort()
				clear(pending)
				check(i)
			}
		}
	})
}

// TestOverlayCacheBounds checks that the cache of committed values stays
// within CacheBytes however large the values, and still answers right.
func TestOverlayCacheBounds(t *testing.T) {
	o := NewOverlay(NewMemory())
	defer o.Close()
	big := bytes.Repeat([]byte{'v'}, 64<<10)
	for i := range 1000 {
		if err := o.Put([]byte(fmt.Sprint("k", i)), big); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			if err := o.Commit(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if o.cacheBytes > CacheBytes || len(o.cache) > CacheBytes/len(big) {
		t.Errorf("cache holds %d entries, %d bytes; bound %d bytes", len(o.cache), o.cacheBytes, CacheBytes)
	}
	sum := 0
	for k, c := range o.cache {
		sum += cacheSize(len(k), len(c.value))
	}
	if sum != o.cacheBytes {
		t.Errorf("cache counts %d bytes, holds %d", o.cacheBytes, sum)
	}
	for _, k := range []string{"k0", "k500", "k999"} {
		if v, err := o.Get([]byte(k)); err != nil || !bytes.Equal(v, big) {
			t.Errorf("Get(%s) = %d bytes, %v", k, len(v), err)
		}
	}
}

// TestOverlayCacheBudget checks that overlays sharing a CacheBudget split
// it equally, shrink when more open and grow back when some close.
func TestOverlayCacheBudget(t *testing.T) {
	const budget = 1 << 20
	b := NewCacheBudget(budget)
	val := bytes.Repeat([]byte{'v'}, 1000)
	fill := func(o *Overlay, prefix string) {
		t.Helper()
		for i := range 2000 {
			if err := o.Put([]byte(fmt.Sprint(prefix, i)), val); err != nil {
				t.Fatal(err)
			}
			if i%100 == 99 {
				if err := o.Commit(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	var ovs []*Overlay
	for i := range 4 {
		o := NewOverlay(NewMemory())
		o.ShareCache(b)
		ovs = append(ovs, o)
		fill(o, fmt.Sprint("o", i, "k"))
	}
	if got := b.Share(); got != budget/4 {
		t.Fatalf("share %d with 4 overlays, want %d", got, budget/4)
	}
	total := 0
	for i, o := range ovs {
		fill(o, fmt.Sprint("o", i, "again")) // each writes again under 4 sharing
		if o.cacheBytes > budget/4 {
			t.Errorf("overlay %d caches %d bytes, share %d", i, o.cacheBytes, budget/4)
		}
		if o.cacheBytes < budget/8 {
			t.Errorf("overlay %d caches only %d bytes of its %d share", i, o.cacheBytes, budget/4)
		}
		total += o.cacheBytes
	}
	if total > budget {
		t.Errorf("overlays cache %d bytes together, budget %d", total, budget)
	}
	for _, o := range ovs[2:] {
		o.Close()
	}
	if got := b.Share(); got != budget/2 {
		t.Fatalf("share %d after two closed, want %d", got, budget/2)
	}
	fill(ovs[0], "o0more")
	if c := ovs[0].cacheBytes; c <= budget/4 || c > budget/2 {
		t.Errorf("overlay 0 caches %d bytes with a share of %d", c, budget/2)
	}
	// An overlay whose cache is turned off (a store its task only
	// writes) gives its share to the others and caches nothing more.
	ovs[1].SetCacheEntries(0)
	if got := b.Share(); got != budget {
		t.Fatalf("share %d with one overlay caching, want %d", got, budget)
	}
	fill(ovs[1], "o1off")
	if c := ovs[1].cacheBytes; c != 0 {
		t.Errorf("overlay 1 caches %d bytes with its cache off", c)
	}
	fill(ovs[0], "o0most")
	if c := ovs[0].cacheBytes; c <= budget/2 || c > budget {
		t.Errorf("overlay 0 caches %d bytes with a share of %d", c, budget)
	}
	for _, o := range ovs[:2] {
		o.Close()
	}
	if n := b.users.Load(); n != 0 {
		t.Errorf("%d overlays still counted after all closed", n)
	}
}

// countingStore counts the Gets that reach a store.
type countingStore struct {
	Store
	gets int
}

func (c *countingStore) Get(key []byte) ([]byte, error) {
	c.gets++
	return c.Store.Get(key)
}

// TestOverlayKnowsAbsentKeys checks that an overlay over an empty base
// answers a key it never wrote as absent without asking the base, until it
// evicts a present key; and that over a non-empty base it always asks.
func TestOverlayKnowsAbsentKeys(t *testing.T) {
	base := &countingStore{Store: NewMemory()}
	o := NewOverlay(base)
	defer o.Close()
	for i := range 100 {
		put(t, o, fmt.Sprint("k", i), "v")
	}
	del(t, o, "k7")
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	wantGet(t, o, "k3", "v")
	wantAbsent(t, o, "k7")
	wantAbsent(t, o, "never")
	if base.gets != 0 {
		t.Fatalf("%d Gets reached the base while the cache held every key", base.gets)
	}

	o.SetCacheEntries(10) // evicts present keys: the cache no longer knows all
	for i := range 100 {
		if i == 7 {
			wantAbsent(t, o, "k7")
		} else {
			wantGet(t, o, fmt.Sprint("k", i), "v")
		}
	}
	wantAbsent(t, o, "never")
	if base.gets == 0 {
		t.Fatal("no Get reached the base after present keys were evicted")
	}

	seeded := &countingStore{Store: NewMemory()}
	put(t, seeded, "s", "1")
	o2 := NewOverlay(seeded)
	defer o2.Close()
	wantAbsent(t, o2, "other")
	wantGet(t, o2, "s", "1")
	if seeded.gets != 2 {
		t.Fatalf("%d Gets reached a non-empty base, want 2", seeded.gets)
	}
}

// TestOverlayCommitBulk checks a restore's commit: the values reach the
// base (RocksDB, without its WAL), reads through the overlay see them and
// not values it had cached before, a fresh overlay over an empty base
// stops answering "absent" from its cache, and after FlushBulk the writes
// survive reopening the database.
func TestOverlayCommitBulk(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenRocks(dir, RocksOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := NewOverlay(db)
	if err := o.Put([]byte("cached"), []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil { // cached now
		t.Fatal(err)
	}
	for i := 0; i < 5000; i++ {
		if err := o.Put(fmt.Appendf(nil, "k%05d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := o.Put([]byte("cached"), []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := o.Delete([]byte("k00007")); err != nil {
		t.Fatal(err)
	}
	if err := o.CommitBulk(); err != nil {
		t.Fatal(err)
	}
	if o.Len() != 0 {
		t.Fatalf("%d pending writes after CommitBulk", o.Len())
	}
	get := func(s Store, k string) string {
		t.Helper()
		v, err := s.Get([]byte(k))
		if err != nil {
			t.Fatal(err)
		}
		if v == nil {
			return "<absent>"
		}
		return string(v)
	}
	for k, want := range map[string]string{"cached": "new", "k00000": "v0", "k04999": "v4999", "k00007": "<absent>"} {
		if got := get(o, k); got != want {
			t.Errorf("through the overlay, %s = %s, want %s", k, got, want)
		}
		if got := get(db, k); got != want {
			t.Errorf("in the base, %s = %s, want %s", k, got, want)
		}
	}
	if err := o.FlushBulk(); err != nil {
		t.Fatal(err)
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = OpenRocks(dir, RocksOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := get(db, "k01234"); got != "v1234" {
		t.Errorf("after reopening, k01234 = %s", got)
	}
}

// TestOverlayApplyBulk checks a restore's batch: applied to the base,
// seen through the overlay instead of what it had cached, refused while
// writes are pending.
func TestOverlayApplyBulk(t *testing.T) {
	db, err := OpenRocks(t.TempDir(), RocksOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := NewOverlay(db)
	defer o.Close()
	if err := o.Put([]byte("a"), []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.Put([]byte("a"), []byte("new"))
	b.Put([]byte("b"), []byte("1"))
	b.Delete([]byte("b"))
	b.Put([]byte("c"), []byte("3"))
	if err := o.ApplyBulk(&b); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"a": "new", "b": "", "c": "3"} {
		v, err := o.Get([]byte(k))
		if err != nil || string(v) != want || (want == "") != (v == nil) {
			t.Errorf("%s = %q %v, want %q", k, v, err, want)
		}
	}
	if err := o.Put([]byte("d"), []byte("4")); err != nil {
		t.Fatal(err)
	}
	if err := o.ApplyBulk(&b); err == nil {
		t.Error("ApplyBulk with a pending write did not fail")
	}
}

// TestKeyFilter: no key added is ever missing; about one in a hundred
// keys never added seems present while the filter holds a key per
// filterBitsPerKey bits; a full filter grows a larger one, and gives up
// past its bound.
func TestKeyFilter(t *testing.T) {
	f := newKeyFilter(DefaultFilterBytes)
	n := 0
	add := func(to int) {
		for ; n < to; n++ {
			f.add(fmt.Appendf(nil, "key-%d", n))
		}
	}
	check := func(wantFP int) {
		t.Helper()
		for i := range n {
			if !f.mayContain(fmt.Appendf(nil, "key-%d", i)) {
				t.Fatalf("key-%d added but missing", i)
			}
		}
		fp := 0
		for i := range 100_000 {
			if f.mayContain(fmt.Appendf(nil, "other-%d", i)) {
				fp++
			}
		}
		if fp > wantFP {
			t.Errorf("%d keys, %d filters: %d false positives in 100000", n, len(f.parts), fp)
		}
		t.Logf("%d keys, %d filters: %d false positives in 100000", n, len(f.parts), fp)
	}
	add(filterFirstBlocks * 512 / filterBitsPerKey)
	if len(f.parts) != 1 {
		t.Fatalf("%d filters for the keys the first suits", len(f.parts))
	}
	check(1_500)
	add(n + 100_000)
	if len(f.parts) != 2 {
		t.Fatalf("%d filters", len(f.parts))
	}
	check(3_000)

	small := newKeyFilter(64) // one block: 51 keys, dead past 204
	for i := range 204 {
		small.add(fmt.Appendf(nil, "key-%d", i))
	}
	if small.dead {
		t.Fatal("dead at four times the keys it suits")
	}
	small.add([]byte("one more"))
	if !small.dead || !small.mayContain([]byte("anything")) {
		t.Fatal("alive past four times the keys it suits")
	}
}

// TestOverlayFilterKeys: a filter made over a base that holds keys has
// them (a scan), and keeps every key a commit, a bulk commit or a bulk
// apply writes after.
func TestOverlayFilterKeys(t *testing.T) {
	forEachSeededBase(t, []kv{{"a", "1"}, {"b", "2"}}, func(t *testing.T, o *Overlay) {
		o.SetCacheEntries(0)
		if err := o.FilterKeys(0); err != nil {
			t.Fatal(err)
		}
		wantGet(t, o, "a", "1")
		wantGet(t, o, "b", "2")
		wantAbsent(t, o, "c")
		put(t, o, "c", "3")
		if err := o.Commit(); err != nil {
			t.Fatal(err)
		}
		put(t, o, "d", "4")
		if err := o.CommitBulk(); err != nil {
			t.Fatal(err)
		}
		var bt Batch
		bt.Put(b("e"), b("5"))
		if err := o.ApplyBulk(&bt); err != nil {
			t.Fatal(err)
		}
		for i, k := range []string{"a", "b", "c", "d", "e"} {
			wantGet(t, o, k, fmt.Sprint(i+1))
		}
		if o.filter == nil || o.filter.mayContain(b("z")) && o.filter.mayContain(b("y")) && o.filter.mayContain(b("x")) {
			t.Fatal("no filter, or one that keeps nothing out")
		}
	})
}
