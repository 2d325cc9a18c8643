package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
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
	s, in := startByAuction(t, ctx)
	const batch = 30000
	for round := 0; round < 3; round++ {
		in.produce(batch)
		// Kill the server while it works through the batch, later into
		// it each round.
		written, committed := waitMidRun(t, ctx, s.KafkaAddr, "BYAUCTION", int64(1+round*3000), func() { in.produce(2000) })
		t.Logf("round %d: SIGKILL with %d records written to BYAUCTION while waiting, %d of them committed", round, written, committed)
		crashAndRestart(t, s)
		in.kc.ForceMetadataRefresh()
	}
	in.produce(batch)
	in.checkInput(s.KafkaAddr)

	// check compares got with the batch GROUP BY, saying how they
	// differ when quiet is false.
	check := func(name string, got map[int64]auctionAgg, quiet bool) bool {
		bad, diffs := in.diff(got)
		if bad > 0 && !quiet {
			t.Logf("%s: %d groups differ: %s", name, bad, strings.Join(diffs, "; "))
		}
		return bad == 0
	}
	topicCheck := func() bool {
		// The topic, read_committed, last value per key.
		latest := map[int64]auctionAgg{}
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
			latest[k] = auctionAgg{r.N, r.Total, r.Top}
		}
		return check("output topic", latest, false)
	}
	conn := connect(t, ctx, s)
	deadline := time.Now().Add(40 * time.Second)
	for {
		got := pullByAuction(t, ctx, conn)
		late := time.Now().After(deadline)
		if check("pull query", got, !late) {
			break
		}
		if late {
			t.Logf("output topic matches: %v", topicCheck())
			explainMismatch(t, ctx, s, in.counts())
			t.Fatalf("the table never matched the batch GROUP BY over %d records", in.seq)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if !topicCheck() {
		t.Fatal("the output topic's last values differ from the batch GROUP BY")
	}
	t.Logf("%d records in %d groups: table and topic equal the batch computation after 3 SIGKILLs", in.seq, len(in.want))
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
