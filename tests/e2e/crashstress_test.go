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
	s := startServer(t)
	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `CREATE STREAM bids (bidder VARCHAR KEY, auction BIGINT, price BIGINT)
  WITH (KAFKA_TOPIC='bids', VALUE_FORMAT='JSON', PARTITIONS=4)`)
	exec1(t, ctx, conn, `CREATE TABLE byauction AS SELECT auction, COUNT(*) AS n, SUM(price) AS total
  FROM bids GROUP BY auction EMIT CHANGES`)
	kc, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr), kgo.DefaultProduceTopic("bids"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	type agg struct{ n, total int64 }
	want := map[int64]*agg{}
	seq := 0
	produce := func(count int) {
		recs := make([]*kgo.Record, 0, count)
		for i := 0; i < count; i++ {
			auction := int64(seq*7919) % 997
			price := int64(seq%1000 + 1)
			a := want[auction]
			if a == nil {
				a = &agg{}
				want[auction] = a
			}
			a.n++
			a.total += price
			recs = append(recs, &kgo.Record{Key: []byte("b" + strconv.Itoa(seq%113)),
				Value: fmt.Appendf(nil, `{"AUCTION":%d,"PRICE":%d,"SEQ":%d}`, auction, price, seq)})
			seq++
		}
		if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}
	for round := 0; round < rounds; round++ {
		produce(3000 + rand.IntN(6000))
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond)
		crashAndRestart(t, s)
		kc.ForceMetadataRefresh()
	}
	produce(1000)

	stored := map[int64]bool{}
	for _, v := range readCommittedValues(t, ctx, s.KafkaAddr, "bids") {
		var r struct{ Seq int64 }
		if err := json.Unmarshal(v.value, &r); err != nil {
			t.Fatalf("input %s: %v", v.value, err)
		}
		if stored[r.Seq] {
			t.Fatalf("input record SEQ %d is stored twice", r.Seq)
		}
		stored[r.Seq] = true
	}
	if len(stored) != seq {
		t.Fatalf("the input topic holds %d records for %d produced", len(stored), seq)
	}
	conn = connect(t, ctx, s)
	deadline := time.Now().Add(90 * time.Second)
	for {
		bad := 0
		got := map[int64]agg{}
		for _, r := range rows(t, ctx, conn, "SELECT auction, n, total FROM byauction") {
			f := strings.Split(r, "|")
			k, _ := strconv.ParseInt(f[0], 10, 64)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			sum, _ := strconv.ParseInt(f[2], 10, 64)
			got[k] = agg{n, sum}
		}
		var diffs []string
		for k, w := range want {
			if got[k] != *w {
				bad++
				if len(diffs) < 10 {
					diffs = append(diffs, fmt.Sprintf("auction %d: got %+v want %+v", k, got[k], *w))
				}
			}
		}
		if bad == 0 && len(got) == len(want) {
			t.Logf("%d records over %d crashes: the table equals the batch GROUP BY", seq, rounds)
			return
		}
		if time.Now().After(deadline) {
			wantN := map[int64]int64{}
			for k, w := range want {
				wantN[k] = w.n
			}
			explainMismatch(t, ctx, s, wantN)
			t.Fatalf("%d of %d groups differ: %s", bad, len(want), strings.Join(diffs, "; "))
		}
		time.Sleep(time.Second)
	}
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
