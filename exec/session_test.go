package exec

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// sessionTask is GROUP BY auction over SESSION 10 s windows (Nexmark
// q11's shape), RocksDB state.
func sessionTask(t testing.TB, send func(*kgo.Record)) *aggTask {
	spec, err := planner.NewWindowSpec(types.Session, 10_000, 0, -1, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	return newWindowedAggTask(t, spec, send)
}

// sessionFeeder feeds bids round robin over keys auctions, event time
// advancing 1 ms a record, committing every 1,000 records as the thread
// would: each auction's one session grows by every bid (q11's busy
// bidders).
type sessionFeeder struct {
	task *aggTask
	recs []*kgo.Record
	i    int
}

func newSessionFeeder(task *aggTask, keys int) *sessionFeeder {
	f := &sessionFeeder{task: task, recs: make([]*kgo.Record, keys)}
	for i := range f.recs {
		f.recs[i] = &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(i)), Value: []byte(`{"bidder":7,"price":3}`)}
	}
	return f
}

func (f *sessionFeeder) step(t testing.TB) {
	r := f.recs[f.i%len(f.recs)]
	r.Timestamp = time.UnixMilli(int64(f.i))
	if err := f.task.feed(r); err != nil {
		t.Fatal(err)
	}
	f.task.out.flush()
	if f.i++; f.i%1_000 == 0 {
		if err := f.task.agg.Flush(); err != nil {
			t.Fatal(err)
		}
		f.task.out.flush()
		if err := f.task.store.commit(); err != nil {
			t.Fatal(err)
		}
		f.task.out.reset()
	}
}

// BenchmarkSessionUpdate measures the session operator alone: a bid
// that extends its auction's open session (100 auctions, each bidding
// every 100 ms, so a gap holds 100 versions of each session), state
// through the overlay over RocksDB, changelog records at commit.
func BenchmarkSessionUpdate(b *testing.B) {
	f := newSessionFeeder(sessionTask(b, func(r *kgo.Record) { r.Offset = 1 }), 100)
	for range 20_000 {
		f.step(b)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.step(b)
	}
}

// TestSessionCacheMatchesScan: the session operator with its cache of
// open sessions and its new-key writes gives what it gives without them
// (every row scanning the store, every write a put): the same output and
// changelog records, in order, and the same store, over bids of 20
// auctions with event time mostly advancing but often out of order (rows
// bridging two sessions, late rows), sessions expiring, commits and
// aborted transactions (open, or flushed: sessions expired in them come
// back), with and without grace.
func TestSessionCacheMatchesScan(t *testing.T) {
	for _, grace := range []int64{0, 2_000} {
		spec, err := planner.NewWindowSpec(types.Session, 1_000, 0, -1, grace, "")
		if err != nil {
			t.Fatal(err)
		}
		type out struct {
			topic      string
			key, value string
		}
		var got [2][]out
		var tasks [2]*aggTask
		for i := range tasks {
			tasks[i] = newWindowedAggTask(t, spec, func(r *kgo.Record) {
				got[i] = append(got[i], out{r.Topic, string(r.Key), string(r.Value)})
			})
		}
		tasks[1].agg.win.session.noCache = true
		rng := rand.New(rand.NewPCG(1, uint64(grace)))
		ts := int64(100_000)
		for i := range 20_000 {
			at := ts
			switch r := rng.IntN(100); {
			case r < 6: // one out of order, maybe late
				at -= rng.Int64N(3_000)
			case r < 8: // a pause: sessions close, some expire
				ts += rng.Int64N(3_000)
			default:
				ts += rng.Int64N(40)
			}
			rec := &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, uint64(rng.IntN(20))), Value: []byte(`{"bidder":7,"price":3}`),
				Timestamp: time.UnixMilli(at)}
			for _, task := range tasks {
				c := *rec
				if err := task.feed(&c); err != nil {
					t.Fatal(err)
				}
				task.out.flush()
			}
			if i%50 == 0 {
				checkSessionCache(t, tasks[0])
			}
			switch r := rng.IntN(1_000); {
			case r < 10:
				for _, task := range tasks {
					commitTask(t, task)
				}
			case r < 14:
				// The transaction aborts: while open, or once flushed
				// (its commit failed).
				for _, task := range tasks {
					if r >= 12 {
						if err := task.agg.Flush(); err != nil {
							t.Fatal(err)
						}
						task.out.flush()
					}
					task.Task.abort()
					task.store.abort()
					task.out.reset()
				}
			}
		}
		for _, task := range tasks {
			commitTask(t, task)
		}
		// Rows scan the store after an abort, after a pause and when
		// out of order by more than a gap; the others find their key's
		// sessions in the cache.
		scans, all := tasks[0].agg.win.session.scans, tasks[1].agg.win.session.scans
		t.Logf("grace %d: %d of %d rows scanned, %d records", grace, scans, all, len(got[0]))
		if all != 20_000 || scans > all/3 || scans < 100 {
			t.Fatalf("grace %d: %d of %d rows scanned the store: the test does not exercise the cache", grace, scans, all)
		}
		if len(got[0]) != len(got[1]) {
			t.Errorf("grace %d: %d records with the cache, %d without", grace, len(got[0]), len(got[1]))
		}
		for i := range min(len(got[0]), len(got[1])) {
			if got[0][i] != got[1][i] {
				t.Fatalf("grace %d: record %d: %q with the cache, %q without", grace, i, got[0][i], got[1][i])
			}
		}
		var stores [2]map[string]string
		for i, task := range tasks {
			stores[i] = map[string]string{}
			it, err := task.store.base.Range(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for it.Next() {
				stores[i][string(it.Key())] = string(it.Value())
			}
			if err := it.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if len(stores[0]) < 5 || !maps.Equal(stores[0], stores[1]) {
			t.Errorf("grace %d: stores differ: %d keys with the cache, %d without", grace, len(stores[0]), len(stores[1]))
		}
	}
}

// checkSessionCache fails unless the task's cache of open sessions holds,
// for each of its keys, exactly the sessions the store holds that end at
// or after the key's bound.
func checkSessionCache(t *testing.T, task *aggTask) {
	t.Helper()
	w := task.agg.win
	if w.session.gen != w.gen {
		return // reset at the next row
	}
	for gkey, l := range w.session.open.m {
		from := append([]byte{sessionPrefix}, gkey...)
		to := append(slices.Clone(from), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
		from = binary.BigEndian.AppendUint64(from, uint64(l.from)^(1<<63))
		it, err := task.store.ov.Range(from, to)
		if err != nil {
			t.Fatal(err)
		}
		var stored []sessionSpan
		for it.Next() {
			if k := it.Key(); len(k) == 1+len(gkey)+16 {
				s, e := sessionBounds(k)
				stored = append(stored, sessionSpan{s, e})
			}
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(stored, l.spans) {
			t.Fatalf("key %x: cached sessions from %d: %v, stored %v", gkey, l.from, l.spans, stored)
		}
	}
}

// feedBid feeds task (sessionTask's) a bid of bidder 7 at ts and flushes
// what it emits.
func feedBid(t *testing.T, task *aggTask, ts int64) {
	t.Helper()
	r := &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, 7), Value: []byte(`{"bidder":7,"price":3}`), Timestamp: time.UnixMilli(ts)}
	if err := task.feed(r); err != nil {
		t.Fatal(err)
	}
	task.out.flush()
}

// TestSessionExtensionsWriteOnce: a transaction in which a bid extends
// a committed session 50 times writes the store once for it: the
// committed version's deletion and the last version (each with its
// index entry), and the progress mark; none of the 49 versions in
// between, nor a tombstone for each, which RocksDB's seeks would then
// walk over. The rows find the session in the cache: one store scan, for
// the first row.
func TestSessionExtensionsWriteOnce(t *testing.T) {
	task := sessionTask(t, func(*kgo.Record) {})
	bid := func(ts int64) { t.Helper(); feedBid(t, task, ts) }
	bid(100_000)
	commitTask(t, task)
	for i := range 50 {
		bid(100_001 + int64(i)*100)
	}
	if err := task.agg.Flush(); err != nil {
		t.Fatal(err)
	}
	var writes []string
	if err := task.store.ov.Pending(func(k, v []byte, deleted bool) error {
		switch {
		case len(k) == 1:
			writes = append(writes, "mark")
		case deleted:
			writes = append(writes, fmt.Sprintf("delete %c %x", k[0], k[1:]))
		default:
			writes = append(writes, fmt.Sprintf("put %c %x", k[0], k[1:]))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	gkey := task.agg.win.gkey
	want := []string{"mark",
		fmt.Sprintf("delete s %x", appendSessionKey(nil, gkey, 100_000, 100_000)[1:]),
		fmt.Sprintf("put s %x", appendSessionKey(nil, gkey, 100_000, 104_901)[1:]),
		fmt.Sprintf("delete t %x", appendSessionIndex(nil, gkey, 100_000, 100_000)[1:]),
		fmt.Sprintf("put t %x", appendSessionIndex(nil, gkey, 100_000, 104_901)[1:]),
	}
	if !slices.Equal(writes, want) {
		t.Errorf("the transaction writes\n%s\nwant\n%s", strings.Join(writes, "\n"), strings.Join(want, "\n"))
	}
	task.out.flush()
	if err := task.store.commit(); err != nil {
		t.Fatal(err)
	}
	if n := task.agg.win.session.scans; n != 1 {
		t.Errorf("%d rows scanned the store, want 1", n)
	}
	v, err := task.store.base.Get(appendSessionKey(nil, gkey, 100_000, 104_901))
	if err != nil || len(v) < tsLen {
		t.Fatalf("the extended session is not stored: %x, %v", v, err)
	}
}

// TestSessionVersionsNoTombstones: the session versions a transaction
// makes and replaces (a new session extended by every bid of one
// transaction: Nexmark q11's busy bidders) reach the changelog as the
// last version alone, without a tombstone for each replaced one, which
// the changelog never had; a version committed before is still deleted
// there when a later transaction replaces it.
func TestSessionVersionsNoTombstones(t *testing.T) {
	var clog []string
	task := sessionTask(t, func(r *kgo.Record) {
		if strings.HasSuffix(r.Topic, "-changelog") && len(r.Key) > 16 {
			// Kafka Streams' session key: the group's, end, start.
			n := len(r.Key)
			e, s := int64(binary.BigEndian.Uint64(r.Key[n-16:])), int64(binary.BigEndian.Uint64(r.Key[n-8:]))
			kind := "put"
			if r.Value == nil {
				kind = "tombstone"
			}
			clog = append(clog, fmt.Sprintf("%s %d-%d", kind, s, e))
		}
	})
	bid := func(ts int64) { t.Helper(); feedBid(t, task, ts) }
	for i := range 50 {
		bid(100_000 + int64(i)*100)
	}
	commitTask(t, task)
	if want := []string{"put 100000-104900"}; !slices.Equal(clog, want) {
		t.Errorf("a new session extended 50 times in one transaction: changelog %v, want %v", clog, want)
	}
	clog = nil
	for i := range 3 {
		bid(105_000 + int64(i)*100)
	}
	commitTask(t, task)
	if want := []string{"tombstone 100000-104900", "put 100000-105200"}; !slices.Equal(clog, want) {
		t.Errorf("the committed session extended: changelog %v, want %v", clog, want)
	}
}
