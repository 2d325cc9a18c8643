package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// TestAggregateRandomCrashes is TestAggregateExactlyOnceAcrossCrashes with
// the kills at random moments (start-up, restoration, the group's join,
// the first commits, the middle of a batch), many rounds of them. It runs
// only when SQLSTREAMS_CRASH_ROUNDS is set (a soak, not a CI test). On a
// mismatch it counts the repartition topic's committed records per group,
// to tell a duplicated input (the repartitioning side) from state counted
// twice (the aggregating side), and keeps the data directory.
func TestAggregateRandomCrashes(t *testing.T) {
	rounds, _ := strconv.Atoi(os.Getenv("SQLSTREAMS_CRASH_ROUNDS"))
	if rounds <= 0 {
		t.Skip("SQLSTREAMS_CRASH_ROUNDS not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	s, in := startByAuction(t, ctx)
	for round := 0; round < rounds; round++ {
		in.produce(3000 + rand.IntN(6000))
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond)
		crashAndRestart(t, s)
		in.kc.ForceMetadataRefresh()
	}
	in.produce(1000)
	in.checkInput(s.KafkaAddr)

	conn := connect(t, ctx, s)
	deadline := time.Now().Add(90 * time.Second)
	for {
		got := pullByAuction(t, ctx, conn)
		bad, diffs := in.diff(got)
		if bad == 0 {
			t.Logf("%d records over %d crashes: the table equals the batch GROUP BY", in.seq, rounds)
			return
		}
		if time.Now().After(deadline) {
			explainMismatch(t, ctx, s, in.counts())
			t.Fatalf("%d of %d groups differ: %s", bad, len(in.want), strings.Join(diffs, "; "))
		}
		time.Sleep(time.Second)
	}
}

// startByAuction starts a server with the crash tests' query: a stream
// of bids (4 partitions, keyed by bidder) and a GROUP BY of them by
// auction, which repartitions.
func startByAuction(t *testing.T, ctx context.Context) (*testserver.Server, *auctionBids) {
	s := startServer(t)
	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `CREATE STREAM bids (bidder VARCHAR KEY, auction BIGINT, price BIGINT)
  WITH (KAFKA_TOPIC='bids', VALUE_FORMAT='JSON', PARTITIONS=4)`)
	exec1(t, ctx, conn, `CREATE TABLE byauction AS SELECT auction, COUNT(*) AS n, SUM(price) AS total, MAX(price) AS top
  FROM bids GROUP BY auction EMIT CHANGES`)
	return s, newAuctionBids(t, ctx, s.KafkaAddr)
}

// auctionBids is the crash tests' input and the batch GROUP BY of it:
// bid seq goes to auction seq·7919 mod 997 at price seq mod 1000 + 1,
// keyed by one of 113 bidders, its value JSON with its SEQ.
type auctionBids struct {
	t    *testing.T
	ctx  context.Context
	kc   *kgo.Client
	seq  int
	want map[int64]*auctionAgg
}

// auctionAgg is an auction's COUNT(*), SUM(price) and MAX(price).
type auctionAgg struct{ n, total, top int64 }

func newAuctionBids(t *testing.T, ctx context.Context, addr string) *auctionBids {
	kc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("bids"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	return &auctionBids{t: t, ctx: ctx, kc: kc, want: map[int64]*auctionAgg{}}
}

// produce writes the next count bids.
func (b *auctionBids) produce(count int) {
	b.t.Helper()
	recs := make([]*kgo.Record, 0, count)
	for i := 0; i < count; i++ {
		auction := int64(b.seq*7919) % 997
		price := int64(b.seq%1000 + 1)
		a := b.want[auction]
		if a == nil {
			a = &auctionAgg{}
			b.want[auction] = a
		}
		a.n++
		a.total += price
		a.top = max(a.top, price)
		recs = append(recs, &kgo.Record{Key: []byte("b" + strconv.Itoa(b.seq%113)),
			Value: fmt.Appendf(nil, `{"AUCTION":%d,"PRICE":%d,"SEQ":%d}`, auction, price, b.seq)})
		b.seq++
	}
	if err := b.kc.ProduceSync(b.ctx, recs...).FirstErr(); err != nil {
		b.t.Fatalf("producing: %v", err)
	}
}

// checkInput fails the test unless the input topic holds exactly what
// was produced, each record once: the producer's retries across the
// crashes are not stored twice (the embedded broker restores
// idempotent-producer state after a crash).
func (b *auctionBids) checkInput(addr string) {
	b.t.Helper()
	stored := make(map[int64]bool, b.seq)
	for _, v := range readCommittedValues(b.t, b.ctx, addr, "bids") {
		var r struct{ Seq int64 }
		if err := json.Unmarshal(v.value, &r); err != nil {
			b.t.Fatalf("input %s: %v", v.value, err)
		}
		if stored[r.Seq] {
			b.t.Fatalf("input record SEQ %d is stored twice", r.Seq)
		}
		stored[r.Seq] = true
	}
	if len(stored) != b.seq {
		b.t.Fatalf("the input topic holds %d records for %d produced", len(stored), b.seq)
	}
}

// diff counts the groups of got that differ from the batch GROUP BY (or
// are missing or extra), and describes up to ten.
func (b *auctionBids) diff(got map[int64]auctionAgg) (int, []string) {
	bad := 0
	var diffs []string
	note := func(format string, args ...any) {
		if bad++; len(diffs) < 10 {
			diffs = append(diffs, fmt.Sprintf(format, args...))
		}
	}
	for k, w := range b.want {
		if g, ok := got[k]; !ok || g != *w {
			note("auction %d: got %+v, want %+v", k, g, *w)
		}
	}
	for k, g := range got {
		if b.want[k] == nil {
			note("auction %d: got %+v, want none", k, g)
		}
	}
	return bad, diffs
}

// counts is each auction's expected COUNT(*).
func (b *auctionBids) counts() map[int64]int64 {
	out := make(map[int64]int64, len(b.want))
	for k, w := range b.want {
		out[k] = w.n
	}
	return out
}

// pullByAuction reads the byauction table with a pull query; an answer
// refused for now (a partition still restoring after a restart) is an
// empty table, which the caller asks for again.
func pullByAuction(t *testing.T, ctx context.Context, conn *pgx.Conn) map[int64]auctionAgg {
	got := map[int64]auctionAgg{}
	rs, err := tryRows(ctx, conn, "SELECT auction, n, total, top FROM byauction")
	if err != nil {
		t.Logf("pull query: %v", err)
		return got
	}
	for _, r := range rs {
		f := strings.Split(r, "|")
		var v [4]int64
		for i := range min(len(f), 4) {
			v[i], _ = strconv.ParseInt(f[i], 10, 64)
		}
		got[v[0]] = auctionAgg{v[1], v[2], v[3]}
	}
	return got
}

// explainMismatch logs what tells where a GROUP BY's counts went wrong
// after crashes: the repartition topic's committed records per group
// against the input's (wantN), which says whether the input was
// repartitioned twice or the aggregation counted twice; the broker's
// repairs and the engine's aborts and restores from the log; and the data
// directory, copied to the temporary directory for a look.
func explainMismatch(t *testing.T, ctx context.Context, s *testserver.Server, wantN map[int64]int64) {
	t.Helper()
	rep := internalTopic(t, ctx, s.KafkaAddr, "", "repartition")
	for _, level := range []kgo.IsolationLevel{kgo.ReadCommitted(), kgo.ReadUncommitted()} {
		perKey := map[int64]int64{}
		for _, r := range readTo(t, ctx, s.KafkaAddr, rep, level) {
			if r.Attrs.IsControl() {
				continue
			}
			k := int64(0)
			for _, b := range r.Key {
				k = k<<8 | int64(b)
			}
			perKey[k]++
		}
		more, less, extra := 0, 0, int64(0)
		for k, n := range wantN {
			switch {
			case perKey[k] > n:
				more++
				extra += perKey[k] - n
			case perKey[k] < n:
				less++
			}
		}
		name := "read_committed"
		if level != kgo.ReadCommitted() {
			name = "read_uncommitted"
		}
		t.Logf("repartition topic %s, %s: %d groups have more records than the input (%d more in all), %d fewer",
			rep, name, more, extra, less)
	}
	marks := []string{"repair", "completed a commit", "offset of a transaction", "offsets of a committed",
		"committed a transaction", "aborted a transaction", "records will be reprocessed", "ahead of the committed",
		"restored", "task waits", "ERROR", "without a running task", "produce failed", "stream thread failed",
		"persistent query started", "revoked", "WARN"}
	for _, l := range strings.Split(s.Log(), "\n") {
		for _, m := range marks {
			if strings.Contains(l, m) {
				t.Log(l)
				break
			}
		}
	}
	keep := fmt.Sprintf("%s/sqlstreams-mismatch-%d", os.TempDir(), time.Now().UnixNano())
	if err := exec.Command("cp", "-a", s.DataDir, keep).Run(); err == nil {
		t.Logf("data directory copied to %s", keep)
	}
}
