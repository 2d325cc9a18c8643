package scaleout

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// TestWarmupThenMove adds a third instance to two that share a GROUP BY
// with a long history: no stateful task moves to it at once (it has none
// of their state); it warms up to max.warmup.replicas tasks as standbys,
// forces probing rebalances, and the tasks move to it once caught up,
// their restores there reading only the little the warm-up had not. The
// counts stay exact.
func TestWarmupThenMove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// 5,000 changelog records a task: more than the acceptable lag, so
	// the new instance warms up before it takes a task.
	flags := []string{"--probing-rebalance-interval-ms", "2000", "--acceptable-recovery-lag", "1000"}
	c := startCluster(t, 2, flags...)
	conn := connect(t, ctx, c.servers[0])
	exec1(t, ctx, conn, `CREATE STREAM pv (userid VARCHAR KEY, pageid VARCHAR) WITH (KAFKA_TOPIC='pv', VALUE_FORMAT='JSON', PARTITIONS=6)`)
	exec1(t, ctx, conn, `CREATE TABLE pc WITH (KAFKA_TOPIC='pc') AS SELECT userid, COUNT(*) AS n FROM pv GROUP BY userid`)
	const users = 30_000
	var recs [][2]string
	for i := range users {
		recs = append(recs, [2]string{fmt.Sprintf("u%d", i), `{"PAGEID":"p"}`})
	}
	produce(t, ctx, c.broker.KafkaAddr, "pv", recs...)
	if !testserver.WaitFor(2*time.Minute, func() bool { return len(latestCommitted(t, ctx, c.broker.KafkaAddr, "pc")) == users }) {
		t.Fatal("the GROUP BY never counted every user")
	}
	s3 := c.add(t, "i3", flags...)
	if !testserver.WaitFor(60*time.Second, func() bool {
		for _, l := range strings.Split(s3.Log(), "\n") {
			if strings.Contains(l, "standby tasks assigned") && !strings.Contains(l, "warmup=[]") {
				return true
			}
		}
		return false
	}) {
		t.Fatal("the new instance got no warm-up")
	}
	// The move comes with the probing rebalance the new instance forces
	// while it holds warm-ups; when the warm-ups catch up within the
	// follow-up rebalances of its own join (cooperative rebalancing runs
	// a second round after revocations) the move comes there and no
	// probe is needed. Either way the tasks move, and only after warming.
	if !testserver.WaitFor(90*time.Second, func() bool { return restoredRE.MatchString(s3.Log()) }) {
		t.Fatal("no stateful task moved to the new instance after its warm-up (no probing rebalance either: " +
			fmt.Sprint(strings.Contains(s3.Log(), "probing rebalance")) + ")")
	}
	t.Logf("the tasks moved after a probing rebalance: %v", strings.Contains(s3.Log(), "probing rebalance"))
	got := restores(s3.Log())
	t.Logf("restores on the new instance (records read): %v; a restore from the start would read ~%d", got, users/6)
	for _, n := range got {
		if n > users/6/2 {
			t.Errorf("a task restored %d records on the new instance: it moved before its warm-up caught up", n)
		}
	}
	// More input; every count still exact.
	produce(t, ctx, c.broker.KafkaAddr, "pv", recs[:600]...)
	if !testserver.WaitFor(2*time.Minute, func() bool {
		m := latestCommitted(t, ctx, c.broker.KafkaAddr, "pc")
		if len(m) != users {
			return false
		}
		for i := range 600 {
			if m[fmt.Sprintf("u%d", i)]["N"] != float64(2) {
				return false
			}
		}
		return true
	}) {
		t.Error("counts are not exact after the tasks moved")
	}
	lines := slices.DeleteFunc(strings.Split(s3.Log(), "\n"), func(l string) bool {
		return !strings.Contains(l, "warm") && !restoredRE.MatchString(l)
	})
	t.Logf("new instance's warm-up log:\n%s", strings.Join(lines[:min(len(lines), 12)], "\n"))
}
