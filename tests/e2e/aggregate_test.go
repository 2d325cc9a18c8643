package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAggregateExactlyOnceAcrossCrashes runs a GROUP BY (with a
// repartition, RocksDB state and a changelog) over 120,000 records while
// the server is killed with SIGKILL three times in the middle of the run
// and restarted, then checks that the table (pull query) and its topic
// (read_committed, last value per key) equal the same GROUP BY computed
// here over exactly the input: nothing lost, nothing counted twice.
func TestAggregateExactlyOnceAcrossCrashes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := startServer(t)
	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `CREATE STREAM bids (bidder VARCHAR KEY, auction BIGINT, price BIGINT)
  WITH (KAFKA_TOPIC='bids', VALUE_FORMAT='JSON', PARTITIONS=4)`)
	exec1(t, ctx, conn, `CREATE TABLE byauction AS SELECT auction, COUNT(*) AS n, SUM(price) AS total, MAX(price) AS top
  FROM bids GROUP BY auction EMIT CHANGES`)

	kc, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr), kgo.DefaultProduceTopic("bids"), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	type agg struct{ n, total, top int64 }
	want := map[int64]*agg{}
	seq := 0
	produce := func(count int) {
		t.Helper()
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
			a.top = max(a.top, price)
			recs = append(recs, &kgo.Record{Key: []byte("b" + strconv.Itoa(seq%113)),
				Value: fmt.Appendf(nil, `{"AUCTION":%d,"PRICE":%d,"SEQ":%d}`, auction, price, seq)})
			seq++
		}
		if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}

	const batch = 30000
	for round := 0; round < 3; round++ {
		produce(batch)
		// Kill the server while it works through the batch, later into
		// it each round.
		written, committed := waitMidRun(t, ctx, s.KafkaAddr, "BYAUCTION", int64(1+round*3000), func() { produce(2000) })
		t.Logf("round %d: SIGKILL with %d records written to BYAUCTION while waiting, %d of them committed", round, written, committed)
		crashAndRestart(t, s)
		kc.ForceMetadataRefresh()
	}
	produce(batch)

	// The input holds exactly what was produced, each record once: the
	// producer's retries across the crashes are not stored twice (the
	// embedded broker restores idempotent-producer state after a crash).
	produced := int64(seq)
	stored := make(map[int64]bool, produced)
	var total int64
	for _, v := range readCommittedValues(t, ctx, s.KafkaAddr, "bids") {
		var r struct{ Seq int64 }
		if err := json.Unmarshal(v.value, &r); err != nil {
			t.Fatalf("input %s: %v", v.value, err)
		}
		if stored[r.Seq] {
			t.Fatalf("input record SEQ %d is stored twice", r.Seq)
		}
		stored[r.Seq] = true
		total++
	}
	if total != produced {
		t.Fatalf("the input topic holds %d records for %d produced", total, produced)
	}
	check := func(name string, got map[int64]agg) bool {
		if len(got) != len(want) {
			t.Logf("%s: %d groups, want %d", name, len(got), len(want))
			return false
		}
		for k, w := range want {
			if g := got[k]; g != *w {
				t.Logf("%s: auction %d: got %+v, want %+v", name, k, g, *w)
				return false
			}
		}
		return true
	}
	topicCheck := func() bool {
		// The topic, read_committed, last value per key.
		latest := map[int64]agg{}
		for _, v := range readCommittedValues(t, ctx, s.KafkaAddr, "BYAUCTION") {
			var r struct{ N, Total, Top int64 }
			if err := json.Unmarshal(v.value, &r); err != nil {
				t.Fatalf("output %s: %v", v.value, err)
			}
			k, err := strconv.ParseInt(string(v.key), 10, 64)
			if err != nil {
				// KAFKA BIGINT key: 8 bytes big-endian.
				k = int64(0)
				for _, b := range v.key {
					k = k<<8 | int64(b)
				}
			}
			latest[k] = agg{r.N, r.Total, r.Top}
		}
		return check("output topic", latest)
	}
	conn = connect(t, ctx, s)
	deadline := time.Now().Add(40 * time.Second)
	for {
		got := map[int64]agg{}
		for _, r := range rows(t, ctx, conn, "SELECT auction, n, total, top FROM byauction") {
			f := strings.Split(r, "|")
			k, _ := strconv.ParseInt(f[0], 10, 64)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			sum, _ := strconv.ParseInt(f[2], 10, 64)
			top, _ := strconv.ParseInt(f[3], 10, 64)
			got[k] = agg{n, sum, top}
		}
		if check("pull query", got) {
			break
		}
		if time.Now().After(deadline) {
			t.Logf("output topic matches: %v", topicCheck())
			wantN := map[int64]int64{}
			for k, w := range want {
				wantN[k] = w.n
			}
			explainMismatch(t, ctx, s, wantN)
			t.Fatalf("the table never matched the batch GROUP BY over %d records", total)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !topicCheck() {
		t.Fatal("the output topic's last values differ from the batch GROUP BY")
	}
	t.Logf("%d records in %d groups: table and topic equal the batch computation after 3 SIGKILLs", total, len(want))
	for _, l := range strings.Split(s.LogTail(60), "\n") {
		if strings.Contains(l, "repair done") || strings.Contains(l, "store restored") {
			t.Log(l)
		}
	}
}

type kv struct{ key, value []byte }

// readCommittedValues reads a topic from the start to its end, read_committed.
func readCommittedValues(t *testing.T, ctx context.Context, addr, topic string) []kv {
	t.Helper()
	var out []kv
	for _, r := range readPartitioned(t, ctx, addr, topic) {
		out = append(out, kv{r.Key, r.Value})
	}
	return out
}
