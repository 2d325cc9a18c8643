package scaleout

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// TestRollingRestartMovesNoTask restarts each of two servers in turn
// (SIGTERM, start again) while they share a GROUP BY query: with static
// membership and state-aware assignment every task is back on the
// instance that had it, and the counts are exact.
func TestRollingRestartMovesNoTask(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := startCluster(t, 2)
	conn := connect(t, ctx, c.servers[0])
	exec1(t, ctx, conn, `CREATE STREAM pv (userid VARCHAR KEY, pageid VARCHAR) WITH (KAFKA_TOPIC='pv', VALUE_FORMAT='JSON', PARTITIONS=4)`)
	exec1(t, ctx, conn, `CREATE TABLE pc WITH (KAFKA_TOPIC='pc') AS SELECT pageid, COUNT(*) AS n FROM pv GROUP BY pageid`)
	const group, repart = "sqlstreams_query_CTAS_PC_2", "sqlstreams_query_CTAS_PC_2-GROUPBY-repartition"
	addr := c.broker.KafkaAddr

	batch := func(round int) {
		var recs [][2]string
		for i := range 200 {
			recs = append(recs, [2]string{fmt.Sprintf("u%d", i), fmt.Sprintf(`{"PAGEID":"p%d"}`, i%20)})
		}
		produce(t, ctx, addr, "pv", recs...)
	}
	// The first stable assignment may leave an instance without tasks
	// until a probing rebalance moves some to it: wait for each to own
	// two partitions.
	stable := func() string {
		var a string
		testserver.WaitFor(60*time.Second, func() bool {
			a = assignment(ctx, addr, group, repart, 4)
			return a != "" && !strings.Contains(a, ": ") && !strings.HasSuffix(a, ":") && strings.Count(a, ",") == 2
		})
		return a
	}
	batch(0)
	before := stable()
	if before == "" {
		t.Fatal("the query's group never became stable with all partitions assigned")
	}
	t.Logf("assignment: %s", before)
	for i, s := range c.servers {
		if err := s.Stop(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		batch(i + 1)
		if after := stable(); after != before {
			t.Errorf("after restarting i%d the assignment is %q, was %q", i+1, after, before)
		}
	}
	// 3 batches of 10 per page.
	want := 3 * 10
	var got map[string]map[string]any
	ok := testserver.WaitFor(60*time.Second, func() bool {
		got = latestCommitted(t, ctx, addr, "pc")
		if len(got) != 20 {
			return false
		}
		for _, v := range got {
			if v["N"] != float64(want) {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("counts after rolling restarts: %v, want 20 pages of %d", got, want)
	}
}
