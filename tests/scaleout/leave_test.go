package scaleout

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// TestLeaveGroupOnClose stops instances of a three-instance cluster
// sharing a GROUP BY for good: one started with --leave-group-on-close
// leaves its groups as it stops, so the survivors answer the whole table
// again (having taken its tasks) well inside the 10 s session timeout;
// one without it is waited for until the session timeout. Both windows
// are logged.
func TestLeaveGroupOnClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := &cluster{broker: testserver.StartBroker(t)}
	c.add(t, "i1")
	c.add(t, "i2", "--leave-group-on-close")
	c.add(t, "i3")
	conn := connect(t, ctx, c.servers[0])
	exec1(t, ctx, conn, `CREATE STREAM pv (userid VARCHAR KEY, pageid VARCHAR) WITH (KAFKA_TOPIC='pv', VALUE_FORMAT='JSON', PARTITIONS=6)`)
	exec1(t, ctx, conn, `CREATE TABLE pc AS SELECT pageid, COUNT(*) AS n FROM pv GROUP BY pageid`)
	var recs [][2]string
	for i := range 600 {
		recs = append(recs, [2]string{fmt.Sprintf("u%d", i), fmt.Sprintf(`{"PAGEID":"p%d"}`, i%60)})
	}
	produce(t, ctx, c.broker.KafkaAddr, "pv", recs...)
	var want []string
	for i := range 60 {
		want = append(want, fmt.Sprintf("p%d|10", i))
	}
	slices.Sort(want)
	whole := func(conn *pgx.Conn) bool {
		got, err := rows(ctx, conn, "SELECT pageid, n FROM pc")
		slices.Sort(got)
		return err == nil && slices.Equal(got, want)
	}
	for i, s := range c.servers {
		conn := connect(t, ctx, s)
		if !testserver.WaitFor(90*time.Second, func() bool { return whole(conn) }) {
			t.Fatalf("i%d never answered the whole table", i+1)
		}
	}
	// Let the standby-free assignment settle on all three.
	time.Sleep(3 * time.Second)
	window := func(s *testserver.Server) time.Duration {
		began := time.Now()
		if err := s.Stop(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		stopped := time.Since(began)
		if !testserver.WaitFor(60*time.Second, func() bool { return whole(conn) }) {
			t.Fatal("i1 never answered the whole table again")
		}
		d := time.Since(began)
		t.Logf("stop took %v; i1 answered the whole table again %v after the SIGTERM", stopped.Round(100*time.Millisecond), d.Round(100*time.Millisecond))
		return d
	}
	// i1 must own a partition of the table's tasks that i2 had for the
	// window to show: it answers an error until they move.
	leave := window(c.servers[1])
	stay := window(c.servers[2])
	t.Logf("removing an instance: %v with --leave-group-on-close, %v without (session timeout 10 s)", leave.Round(100*time.Millisecond), stay.Round(100*time.Millisecond))
	if leave > 7*time.Second {
		t.Errorf("with --leave-group-on-close the survivors answered the whole table only %v after the stop", leave)
	}
}
