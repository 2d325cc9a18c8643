package exec

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// streamJoinTopology is CREATE STREAM OUT AS SELECT b.auction, price,
// seller FROM bids b <typ> JOIN auctions a WITHIN 10 SECONDS [GRACE
// PERIOD 5 SECONDS] ON b.auction = a.auction, both streams keyed by
// auction.
func streamJoinTopology(t testing.TB, typ planner.JoinType, legacy bool) *physical.Topology {
	bids := &catalog.Source{Name: "BIDS", Kind: catalog.Stream, Topic: "bids", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
		Partitions: 1, Schema: types.Schema{Columns: []types.Column{
			{Name: "AUCTION", Type: types.StringType, Key: true},
			{Name: "PRICE", Type: types.BigintType},
		}}}
	auctions := &catalog.Source{Name: "AUCTIONS", Kind: catalog.Stream, Topic: "auctions", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
		Partitions: 1, Schema: types.Schema{Columns: []types.Column{
			{Name: "AUCTION", Type: types.StringType, Key: true},
			{Name: "SELLER", Type: types.StringType},
		}}}
	w := planner.JoinWindow{BeforeMs: 10_000, AfterMs: 10_000, GraceMs: 5_000}
	if legacy {
		w.GraceMs, w.Legacy = planner.LegacyJoinGraceMs, true
	}
	if unboundedJoin {
		w = planner.JoinWindow{Unbounded: true}
	}
	join, err := planner.NewStreamJoin(typ, planner.NewScan(bids), planner.NewScan(auctions), "B", "A", 0, 0, "", w)
	if err != nil {
		t.Fatal(err)
	}
	join.CompactRows = !wholeValues
	in := join.Schema()
	col := func(name string) expr.Expr {
		i := in.Index(name)
		return &expr.Column{Index: i, Name: name, T: in.Columns[i].Type}
	}
	proj, err := planner.NewProject(join, []expr.Expr{col("B_AUCTION"), col("B_PRICE"), col("A_SELLER")}, []string{"AUCTION", "PRICE", "SELLER"})
	if err != nil {
		t.Fatal(err)
	}
	target := &catalog.Source{Name: "OUT", Kind: catalog.Stream, Topic: "out", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Schema: proj.Schema()}
	topo, err := physical.Build("app", &planner.Sink{Input: proj, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

func newStreamJoinTask(t testing.TB, typ planner.JoinType, legacy bool) *joinTask {
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	t.Cleanup(func() { res.Close() })
	jt := &joinTask{}
	jt.testTask = newTestTask(t, streamJoinTopology(t, typ, legacy), 0, Config{StateDir: t.TempDir(), RocksResources: res}, func(r *kgo.Record) {
		if r.Topic == "out" {
			jt.sent = append(jt.sent, fmt.Sprintf("%s %s @%d", r.Key, r.Value, r.Timestamp.UnixMilli()))
		}
	})
	return jt
}

// TestStreamStreamJoin checks the rows of a LEFT join within 10 s with a
// grace period: pairs at once, at the later row's time; a bid without an
// auction only once its window has closed; a late auction still joins a
// kept bid.
// wholeValues makes streamJoinTopology's join keep input values whole
// in its stores, as queries planned before CompactRows do.
var wholeValues bool

func TestStreamStreamJoin(t *testing.T) {
	t.Run("compact", testStreamStreamJoin)
	t.Run("whole values", func(t *testing.T) {
		wholeValues = true
		defer func() { wholeValues = false }()
		testStreamStreamJoin(t)
	})
}

func testStreamStreamJoin(t *testing.T) {
	jt := newStreamJoinTask(t, planner.LeftJoin, false)
	jt.feed(t, "bids", 1000, "a1", `{"PRICE":5}`)
	jt.feed(t, "auctions", 3000, "a1", `{"SELLER":"s1"}`)
	jt.expect(t, `a1 {"PRICE":5,"SELLER":"s1"} @3000`)
	jt.feed(t, "bids", 4000, "a2", `{"PRICE":6}`)
	jt.feed(t, "bids", 12000, "a1", `{"PRICE":7}`)
	jt.expect(t, `a1 {"PRICE":7,"SELLER":"s1"} @12000`)
	// a2's window closes at 4 s + 10 s + 5 s.
	jt.feed(t, "bids", 19000, "a3", `{"PRICE":8}`)
	jt.expect(t)
	jt.feed(t, "bids", 19001, "a3", `{"PRICE":9}`)
	jt.expect(t, `a2 {"PRICE":6,"SELLER":null} @4000`)
	// An auction 10 s before a3's bids joins both, though it comes late.
	jt.feed(t, "auctions", 9001, "a3", `{"SELLER":"s3"}`)
	jt.expect(t, `a3 {"PRICE":8,"SELLER":"s3"} @19000`, `a3 {"PRICE":9,"SELLER":"s3"} @19001`)
}

// unboundedJoin makes streamJoinTopology's join a regular join
// (planner.JoinWindow.Unbounded).
var unboundedJoin bool

// TestRegularStreamJoin checks a regular join (no WITHIN): each row
// joins every row of the other side with its key, years apart in either
// order, at the later time, after commits and the stores' retention cut
// (none: rows are kept for good); the changelogs are compacted only.
func TestRegularStreamJoin(t *testing.T) {
	unboundedJoin = true
	defer func() { unboundedJoin = false }()
	const year = 365 * 24 * 3600 * 1000
	jt := newStreamJoinTask(t, planner.InnerJoin, false)
	commit := func() {
		for _, st := range jt.stores {
			if err := st.commit(); err != nil {
				t.Fatal(err)
			}
		}
		for _, f := range jt.graph.flushers {
			if err := f.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	jt.feed(t, "bids", 1000, "a1", `{"PRICE":5}`)
	jt.feed(t, "bids", 50*year, "a2", `{"PRICE":6}`)
	commit()
	jt.feed(t, "auctions", 30*year, "a1", `{"SELLER":"s1"}`)
	jt.expect(t, fmt.Sprintf(`a1 {"PRICE":5,"SELLER":"s1"} @%d`, 30*year))
	commit()
	jt.feed(t, "bids", 100*year, "a1", `{"PRICE":7}`)
	jt.feed(t, "auctions", 0, "a2", `{"SELLER":"s2"}`)
	jt.expect(t, fmt.Sprintf(`a1 {"PRICE":7,"SELLER":"s1"} @%d`, 100*year), fmt.Sprintf(`a2 {"PRICE":6,"SELLER":"s2"} @%d`, 50*year))
	jt.feed(t, "auctions", 200*year, "a1", `{"SELLER":"s1b"}`)
	jt.expect(t, fmt.Sprintf(`a1 {"PRICE":5,"SELLER":"s1b"} @%d`, 200*year), fmt.Sprintf(`a1 {"PRICE":7,"SELLER":"s1b"} @%d`, 200*year))
	for _, it := range streamJoinTopology(t, planner.InnerJoin, false).InternalTopics() {
		if it.RetentionMs != 0 || it.Configs(0)["retention.ms"] != nil {
			t.Errorf("%s: a regular join's changelog has a retention: %+v", it.Name, it)
		}
	}
}

// streamJoinAllocs returns what a stream–stream join of typ allocates
// per step in steady state: a step is an auction and a bid of one key
// (matching the key's recent auctions) and a bid of a key no auction has (on a LEFT join with a
// grace period: buffered, emitted with NULLs once its window closes, and
// taken out of the buffer), 10 ms apart in event time, with the stores
// committed every 200 steps as a stream thread commits its transaction,
// so that scans read both pending and committed rows. Commits allocate
// (a new overlay skiplist, a new RocksDB iterator), amortized over the
// steps between them.
func streamJoinAllocs(t *testing.T, typ planner.JoinType, legacy bool) float64 {
	jt := newStreamJoinTask(t, typ, legacy)
	produced := 0
	jt.out.send = func(*kgo.Record) { produced++ }
	var bids, auctions *partitionQueue
	for _, q := range jt.queues {
		switch q.tp.topic {
		case "bids":
			bids = q
		case "auctions":
			auctions = q
		}
	}
	ts := int64(1000)
	auction := &kgo.Record{Topic: "auctions", Key: []byte("a1"), Value: []byte(`{"SELLER":"s1"}`)}
	bid := &kgo.Record{Topic: "bids", Key: []byte("a1"), Value: []byte(`{"PRICE":5}`)}
	lone := &kgo.Record{Topic: "bids", Key: []byte("a2"), Value: []byte(`{"PRICE":6}`)}
	// 500 keys in turn, each seen every 5 s: each bid meets the
	// auctions of its key within 10 s (four or five).
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "a%d", i)
	}
	off, steps := int64(0), 0
	step := func() {
		ts += 10
		off++
		auction.Key, bid.Key, lone.Key = keys[steps%500], keys[steps%500], keys[500+steps%500]
		auction.Timestamp, auction.Offset = time.UnixMilli(ts), off
		bid.Timestamp, bid.Offset = time.UnixMilli(ts), 2*off
		lone.Timestamp, lone.Offset = time.UnixMilli(ts), 2*off+1
		auctions.recs = append(auctions.recs, auction)
		bids.recs = append(bids.recs, bid, lone)
		if _, err := jt.process(jt.onBad); err != nil || jt.lastBad != nil {
			t.Fatal(err, jt.lastBad)
		}
		jt.out.flush()
		if produced >= 512 {
			produced = 0
			jt.out.reset()
		}
		if steps++; steps%200 == 0 {
			for _, st := range jt.stores {
				if err := st.commit(); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range jt.graph.flushers {
				if err := f.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// Past the window, its grace and the stores' first retention cut.
	for range 5000 {
		step()
	}
	return testing.AllocsPerRun(2000, step)
}

// BenchmarkStreamStreamJoin joins bids to auctions within 10 s (legacy
// INNER join): each bid meets the one auction of its key, 1,000 keys,
// one auction and ten bids per key every 10 s, through the sink; the
// store is RocksDB behind the transaction's overlay, committed every
// 10,000 records.
func BenchmarkStreamStreamJoin(b *testing.B) {
	jt := newStreamJoinTask(b, planner.InnerJoin, true)
	produced := 0
	jt.out.send = func(*kgo.Record) { produced++ }
	var bids, auctions *partitionQueue
	for _, q := range jt.queues {
		switch q.tp.topic {
		case "bids":
			bids = q
		case "auctions":
			auctions = q
		}
	}
	const keys = 1000
	keyBytes := make([][]byte, keys)
	for i := range keyBytes {
		keyBytes[i] = []byte(fmt.Sprintf("a%d", i))
	}
	rec := &kgo.Record{}
	seller, price := []byte(`{"SELLER":"s"}`), []byte(`{"PRICE":5}`)
	ts := int64(0)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := i % keys
		if (i/keys)%11 == 0 {
			*rec = kgo.Record{Topic: "auctions", Key: keyBytes[k], Value: seller, Offset: int64(i)}
		} else {
			*rec = kgo.Record{Topic: "bids", Key: keyBytes[k], Value: price, Offset: int64(i)}
		}
		ts++
		rec.Timestamp = time.UnixMilli(ts)
		if rec.Topic == "bids" {
			bids.recs = append(bids.recs, rec)
		} else {
			auctions.recs = append(auctions.recs, rec)
		}
		if _, err := jt.process(jt.onBad); err != nil || jt.lastBad != nil {
			b.Fatal(err, jt.lastBad)
		}
		jt.out.flush()
		if produced >= 512 {
			produced = 0
			jt.out.reset()
		}
		if i%10_000 == 9_999 {
			for _, st := range jt.stores {
				if err := st.commit(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}
