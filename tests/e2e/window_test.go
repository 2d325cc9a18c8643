package e2e

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// windowQuery is one windowed aggregation of the differential test, and
// the same computation done here.
type windowQuery struct {
	table                string
	size, advance, grace int64 // ms; a session's gap is its size
	final, session       bool
}

func (q windowQuery) sql() string {
	w := fmt.Sprintf("TUMBLING (SIZE %d MILLISECONDS, GRACE PERIOD %d MILLISECONDS)", q.size, q.grace)
	if q.session {
		w = fmt.Sprintf("SESSION (%d MILLISECONDS, GRACE PERIOD %d MILLISECONDS)", q.size, q.grace)
	} else if q.advance != q.size {
		w = fmt.Sprintf("HOPPING (SIZE %d MILLISECONDS, ADVANCE BY %d MILLISECONDS, GRACE PERIOD %d MILLISECONDS)", q.size, q.advance, q.grace)
	}
	emit := "CHANGES"
	if q.final {
		emit = "FINAL"
	}
	return fmt.Sprintf(`CREATE TABLE %s AS SELECT k, COUNT(*) AS n, SUM(v) AS s, MAX(v) AS m, WINDOWEND AS we
  FROM ev WINDOW %s GROUP BY k EMIT %s`, q.table, w, emit)
}

// winAgg is a window's row.
type winAgg struct{ N, S, M, We int64 }

// winKey names a window of a key.
type winKey struct {
	k     string
	start int64
}

// oracle computes the query over the input, partition by partition in
// offset order, as Kafka Streams defines it: stream time is the largest
// event time seen in the partition; a row counts in each window holding
// it whose end + grace is still after stream time, and is dropped when
// none is. It returns every window's final row and, for EMIT FINAL, the
// windows closed by the end (end + grace <= the partition's stream time).
func (q windowQuery) oracle(in map[int32][]windowEvent) (rows map[winKey]winAgg, closed map[winKey]bool, late int) {
	if q.session {
		return q.sessionOracle(in)
	}
	rows, closed = map[winKey]winAgg{}, map[winKey]bool{}
	for _, evs := range in {
		st := int64(math.MinInt64)
		var keys []winKey
		for _, e := range evs {
			st = max(st, e.ts)
			counted := false
			first := max(0, e.ts-q.size+q.advance) / q.advance * q.advance
			for start := first; start <= e.ts; start += q.advance {
				if start+q.size+q.grace <= st {
					continue
				}
				counted = true
				wk := winKey{e.k, start}
				a, ok := rows[wk]
				if !ok {
					a = winAgg{M: math.MinInt64, We: start + q.size}
					keys = append(keys, wk)
				}
				a.N++
				a.S += e.v
				a.M = max(a.M, e.v)
				rows[wk] = a
			}
			if !counted {
				late++
			}
		}
		for _, wk := range keys {
			if wk.start+q.size+q.grace <= st {
				closed[wk] = true
			}
		}
	}
	return rows, closed, late
}

// sessionOracle is oracle for session windows (a window's start is the
// session's start, its We the session's end), as Kafka Streams defines
// them: a row joins every session of its key that ends at or after
// ts - gap, starts at or before ts + gap and has not expired (ended more
// than the retention, gap + grace, before stream time); it is late when
// the joined session ends before stream time less grace and gap; a
// session is final once it has expired.
func (q windowQuery) sessionOracle(in map[int32][]windowEvent) (rows map[winKey]winAgg, closed map[winKey]bool, late int) {
	rows, closed = map[winKey]winAgg{}, map[winKey]bool{}
	for _, evs := range in {
		st := int64(math.MinInt64)
		sessions := map[string][]winAgg{} // per key; We is the end, start kept in start
		starts := map[string][]int64{}
		for _, e := range evs {
			st = max(st, e.ts)
			start, end := e.ts, e.ts
			agg := winAgg{M: math.MinInt64}
			var keepA []winAgg
			var keepS []int64
			joins := func(a winAgg, s int64) bool {
				return a.We >= e.ts-q.size && s <= e.ts+q.size && a.We > st-q.size-q.grace
			}
			for i, a := range sessions[e.k] {
				s := starts[e.k][i]
				if joins(a, s) {
					start, end = min(start, s), max(end, a.We)
					agg.N += a.N
					agg.S += a.S
					agg.M = max(agg.M, a.M)
					continue
				}
				keepA, keepS = append(keepA, a), append(keepS, s)
			}
			if end < st-q.grace-q.size {
				late++
				continue
			}
			for i, a := range sessions[e.k] {
				if s := starts[e.k][i]; joins(a, s) {
					delete(rows, winKey{e.k, s})
				}
			}
			agg.N++
			agg.S += e.v
			agg.M = max(agg.M, e.v)
			agg.We = end
			sessions[e.k] = append(keepA, agg)
			starts[e.k] = append(keepS, start)
			rows[winKey{e.k, start}] = agg
		}
		for k, as := range sessions {
			for i, a := range as {
				if a.We < st-q.grace-q.size {
					closed[winKey{k, starts[k][i]}] = true
				}
			}
		}
	}
	return rows, closed, late
}

type windowEvent struct {
	k     string
	ts, v int64
}

// TestWindowsDifferential runs tumbling and hopping windows, EMIT CHANGES
// and EMIT FINAL, over random events (out of order, some later than
// their windows' grace) with the server SIGKILLed twice mid-run, and
// compares the output topics with the same windows computed here over
// the input, which must be exactly what was produced: every window's last
// row equal, no window missing or extra, and under EMIT FINAL each closed
// window emitted exactly once. (EMIT FINAL emits as ksqlDB's onWindowClose:
// a window is emitted by the record that closes it; event time jumps 30 s
// now and then, past every window's close by more than its retention,
// where Kafka Streams would never emit the windows jumped over.)
func TestWindowsDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := startServer(t)
	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `CREATE STREAM ev (k VARCHAR KEY, ts BIGINT, v BIGINT)
  WITH (KAFKA_TOPIC='ev', VALUE_FORMAT='JSON', PARTITIONS=3, TIMESTAMP='ts')`)
	queries := []windowQuery{
		{table: "TUMBLE", size: 10_000, advance: 10_000, grace: 3_000},
		{table: "HOP", size: 10_000, advance: 4_000, grace: 1_000},
		{table: "TUMBLE_FINAL", size: 10_000, advance: 10_000, grace: 3_000, final: true},
		{table: "HOP_FINAL", size: 6_000, advance: 2_000, grace: 0, final: true},
		{table: "SESS", size: 1_500, grace: 1_000, session: true},
		{table: "SESS_FINAL", size: 1_000, grace: 500, session: true, final: true},
	}
	for _, q := range queries {
		exec1(t, ctx, conn, q.sql())
	}

	kc, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr), kgo.DefaultProduceTopic("ev"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	rng := rand.New(rand.NewPCG(7, 11))
	now := int64(1_700_000_000_000)
	seq := 0
	var producing sync.Mutex // the trickle below and waitMidRun's more
	produce := func(count int) {
		producing.Lock()
		defer producing.Unlock()
		recs := make([]*kgo.Record, 0, count)
		for i := 0; i < count; i++ {
			now += rng.Int64N(40)
			if rng.IntN(1500) == 0 {
				now += 30_000 // past every open window's close and retention
			}
			ts := now - rng.Int64N(2_000) // mostly a little out of order
			if rng.IntN(50) == 0 {
				ts = now - 5_000 - rng.Int64N(20_000) // often too late
			}
			k := "k" + strconv.Itoa(rng.IntN(25))
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: fmt.Appendf(nil, `{"TS":%d,"V":%d,"SEQ":%d}`, ts, seq%997, seq)})
			seq++
		}
		if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Errorf("producing: %v", err)
		}
	}
	// Each round: a batch every query has committed (windows closed and
	// emitted, progress marks written), then more input, and a SIGKILL
	// while a transaction over it is open.
	for round := 0; round < 2; round++ {
		produce(6000)
		for i, q := range queries {
			// Query IDs end in their command's offset: CREATE STREAM
			// ev is at 0, each command a record and a commit marker.
			waitCaughtUp(t, ctx, s.KafkaAddr, fmt.Sprintf("sqlstreams_query_CTAS_%s_%d", q.table, 2*(i+1)), "ev")
		}
		// More input, trickled in, so that the kill finds work under way.
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; i < 20; i++ {
				produce(100)
				time.Sleep(10 * time.Millisecond)
			}
		}()
		written, committed := waitMidRun(t, ctx, s.KafkaAddr, "HOP", 20, func() { produce(100) })
		t.Logf("round %d: SIGKILL with %d records written to HOP while waiting, %d of them committed", round, written, committed)
		crashAndRestart(t, s)
		kc.ForceMetadataRefresh()
		<-done
	}
	produce(8000)

	// The input as stored, per partition in offset order: exactly what
	// was produced, each record once (the embedded broker keeps
	// idempotent-producer state across the crashes).
	in := map[int32][]windowEvent{}
	total := 0
	stored := map[int64]bool{}
	for _, r := range readPartitioned(t, ctx, s.KafkaAddr, "ev") {
		var v struct{ TS, V, Seq int64 }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("input %s: %v", r.Value, err)
		}
		if stored[v.Seq] {
			t.Fatalf("input record SEQ %d is stored twice", v.Seq)
		}
		stored[v.Seq] = true
		in[r.Partition] = append(in[r.Partition], windowEvent{string(r.Key), v.TS, v.V})
		total++
	}
	if total != seq {
		t.Fatalf("the input topic holds %d records for %d produced", total, seq)
	}

	for _, q := range queries {
		want, closed, late := q.oracle(in)
		check := func() (string, bool) {
			// Each output record: the windowed key (key bytes, then the
			// start as 8 big-endian bytes) and the window's row.
			latest := map[winKey]winAgg{}
			emits := map[winKey]int{}
			partOf := map[string]int32{}
			for _, r := range readPartitioned(t, ctx, s.KafkaAddr, q.table) {
				n := 8 // session keys: key bytes, end, start
				if q.session {
					n = 16
				}
				if len(r.Key) < n {
					return fmt.Sprintf("a key of %d bytes is not windowed", len(r.Key)), false
				}
				wk := winKey{string(r.Key[:len(r.Key)-n]), int64(binary.BigEndian.Uint64(r.Key[len(r.Key)-8:]))}
				// Every window of a key in one partition, as Kafka
				// Streams partitions windowed keys.
				if p, ok := partOf[wk.k]; ok && p != r.Partition {
					return fmt.Sprintf("key %s in partitions %d and %d", wk.k, p, r.Partition), false
				}
				partOf[wk.k] = r.Partition
				if r.Value == nil {
					if q.final {
						return fmt.Sprintf("EMIT FINAL wrote a tombstone for %v", wk), false
					}
					delete(latest, wk) // a session merged into another
					continue
				}
				var a winAgg
				if err := json.Unmarshal(r.Value, &a); err != nil {
					return fmt.Sprintf("output %s: %v", r.Value, err), false
				}
				latest[wk] = a
				emits[wk]++
			}
			expect := want
			if q.final {
				expect = map[winKey]winAgg{}
				for wk := range closed {
					expect[wk] = want[wk]
				}
				for wk, n := range emits {
					if n != 1 {
						return fmt.Sprintf("window %v emitted %d times", wk, n), false
					}
				}
			}
			if len(latest) != len(expect) {
				var missing, extra []string
				for wk, a := range expect {
					if _, ok := latest[wk]; !ok && len(missing) < 5 {
						missing = append(missing, fmt.Sprintf("%v=%+v", wk, a))
					}
				}
				for wk, a := range latest {
					if _, ok := expect[wk]; !ok && len(extra) < 5 {
						extra = append(extra, fmt.Sprintf("%v=%+v", wk, a))
					}
				}
				return fmt.Sprintf("%d windows, want %d; missing %v; extra %v", len(latest), len(expect), missing, extra), false
			}
			for wk, a := range expect {
				if g, ok := latest[wk]; !ok || g != a {
					return fmt.Sprintf("window %v: got %+v, want %+v", wk, g, a), false
				}
			}
			return "", true
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			msg, ok := check()
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the output never matched the windows computed over %d records: %s", q.table, total, msg)
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Logf("%s: %d windows (%d closed), %d late records: output equals the batch computation", q.table, len(want), len(closed), late)
	}

	// Late rows are counted on the query (since its last restart).
	conn = connect(t, ctx, s)
	late := int64(-1)
	for _, r := range rows(t, ctx, conn, "DESCRIBE EXTENDED tumble") {
		if f := strings.Split(r, "|"); len(f) == 2 && f[0] == "late records dropped" {
			late, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	if late <= 0 {
		t.Fatalf("DESCRIBE EXTENDED counts %d late records", late)
	}

	// Pull queries answer from the window store: each window returned
	// holds the batch computation's row, and so does each key's newest
	// window (older ones may have expired with the store's retention).
	want, _, _ := queries[0].oracle(in)
	newest := map[string]int64{}
	for wk := range want {
		newest[wk.k] = max(newest[wk.k], wk.start)
	}
	keys := make([]string, 0, len(newest))
	for k := range newest {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys[:5] {
		got := rows(t, ctx, conn, "SELECT k, WINDOWSTART, WINDOWEND, n, s, m, we FROM tumble WHERE k = '"+k+"'")
		found := false
		for _, r := range got {
			f := strings.Split(r, "|")
			start, _ := strconv.ParseInt(f[1], 10, 64)
			var a winAgg
			end, _ := strconv.ParseInt(f[2], 10, 64)
			a.N, _ = strconv.ParseInt(f[3], 10, 64)
			a.S, _ = strconv.ParseInt(f[4], 10, 64)
			a.M, _ = strconv.ParseInt(f[5], 10, 64)
			a.We, _ = strconv.ParseInt(f[6], 10, 64)
			if w := want[winKey{k, start}]; w != a || end != start+10_000 {
				t.Fatalf("pull %s window %d: got %s, want %+v", k, start, r, w)
			}
			found = found || start == newest[k]
		}
		if !found {
			t.Fatalf("pull %s: the newest window %d is missing from %v", k, newest[k], got)
		}
	}
	bounded := rows(t, ctx, conn, fmt.Sprintf("SELECT k, WINDOWSTART FROM tumble WHERE k = '%s' AND WINDOWSTART >= %d", keys[0], newest[keys[0]]))
	if len(bounded) != 1 || !strings.HasSuffix(bounded[0], "|"+strconv.FormatInt(newest[keys[0]], 10)) {
		t.Fatalf("pull with WINDOWSTART >= %d: %v", newest[keys[0]], bounded)
	}
}

// readPartitioned reads a topic from the start to its end, read_committed,
// in offset order within each partition.
func readPartitioned(t *testing.T, ctx context.Context, addr, topic string) []*kgo.Record {
	t.Helper()
	return readTo(t, ctx, addr, topic, kgo.ReadCommitted())
}

// readTo returns the records of topic from the start to its end as listed
// when it starts (the last stable offsets read_committed, the high
// watermarks read_uncommitted), in offset order within each partition. It
// reads until every partition is there, markers included, never until
// polls go quiet: a loaded machine can be quiet for seconds in the middle
// of a topic.
func readTo(t *testing.T, ctx context.Context, addr, topic string, level kgo.IsolationLevel) []*kgo.Record {
	t.Helper()
	adm, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	list := kadm.NewClient(adm).ListEndOffsets
	if level == kgo.ReadCommitted() {
		list = kadm.NewClient(adm).ListCommittedOffsets
	}
	var ends kadm.ListedOffsets
	for {
		if ends, err = list(ctx, topic); err == nil {
			err = ends.Error()
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("listing the end offsets of %s: %v", topic, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(level), kgo.KeepControlRecords())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pos := map[int32]int64{} // the offset after the last record read
	behind := func() string {
		var b strings.Builder
		ends.Each(func(o kadm.ListedOffset) {
			if pos[o.Partition] < o.Offset {
				fmt.Fprintf(&b, " p%d at %d of %d;", o.Partition, pos[o.Partition], o.Offset)
			}
		})
		return b.String()
	}
	var out []*kgo.Record
	for behind() != "" {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s timed out:%s", topic, behind())
		}
		fs.EachError(func(_ string, p int32, err error) {
			// The client retries; a topic that stays unreadable
			// ends at ctx with where each partition stands.
			t.Logf("reading %s[%d]: %v", topic, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			pos[r.Partition] = r.Offset + 1
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		})
	}
	return out
}
