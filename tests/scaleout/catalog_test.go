package scaleout

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// queryIDs returns SHOW QUERIES' IDs.
func queryIDs(t *testing.T, ctx context.Context, s *testserver.Server) []string {
	t.Helper()
	conn := connect(t, ctx, s)
	var ids []string
	for _, r := range mustRows(t, ctx, conn, "SHOW QUERIES") {
		ids = append(ids, strings.SplitN(r, "|", 2)[0])
	}
	return ids
}

// TestSharedCatalog runs two servers of one service on a standalone
// broker: a statement run on either is applied by both (in the command
// topic's order), statements run on both at once get distinct query IDs
// (from their commands' offsets) and both agree on the outcome, and a
// restarted server replays the topic to its end.
func TestSharedCatalog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := startCluster(t, 2)
	a, b := c.servers[0], c.servers[1]
	ca, cb := connect(t, ctx, a), connect(t, ctx, b)

	exec1(t, ctx, ca, `CREATE STREAM pv (userid VARCHAR KEY, pageid VARCHAR) WITH (KAFKA_TOPIC='pv', VALUE_FORMAT='JSON', PARTITIONS=4)`)
	began := time.Now()
	seen := testserver.WaitFor(30*time.Second, func() bool {
		out, err := rows(ctx, cb, "SHOW STREAMS")
		return err == nil && slices.ContainsFunc(out, func(r string) bool { return strings.HasPrefix(r, "PV|") })
	})
	if !seen {
		t.Fatal("a stream created on the first server never showed on the second")
	}
	t.Logf("a CREATE STREAM on one server showed on the other after %v", time.Since(began).Round(time.Millisecond))

	// A DDL statement on b sees a's stream and is applied by a.
	exec1(t, ctx, cb, `CREATE STREAM cart AS SELECT * FROM pv WHERE pageid = 'cart'`)
	if !testserver.WaitFor(30*time.Second, func() bool { return len(queryIDs(t, ctx, a)) == 1 }) {
		t.Fatal("a query created on the second server never showed on the first")
	}
	// Query IDs come from the command's offset (as ksqlDB's): the
	// second command, after one transaction's record and marker.
	if ids := queryIDs(t, ctx, a); ids[0] != "CSAS_CART_2" {
		t.Errorf("query ID %s, want CSAS_CART_2", ids[0])
	}

	// Both create queries at once, some of the same name: every
	// statement succeeds on exactly one server or fails on both for the
	// same reason, and both end with the same queries, no ID twice.
	const rounds = 4
	var mu sync.Mutex
	outcome := map[string][]string{}
	var wg sync.WaitGroup
	for i := range rounds {
		for j, s := range []*testserver.Server{a, b} {
			conn := connect(t, ctx, s)
			wg.Add(1)
			go func() { // one statement at a time per connection
				defer wg.Done()
				for _, name := range []string{fmt.Sprintf("same%d", i), fmt.Sprintf("own%d_%d", i, j)} {
					_, err := conn.Exec(ctx, "CREATE STREAM "+name+" AS SELECT * FROM pv")
					mu.Lock()
					outcome[name] = append(outcome[name], fmt.Sprint(err))
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	for name, errs := range outcome {
		ok := 0
		for _, e := range errs {
			if e == "<nil>" {
				ok++
			} else if !strings.Contains(e, "already exists") {
				t.Errorf("CREATE STREAM %s: %s", name, e)
			}
		}
		if ok != 1 {
			t.Errorf("CREATE STREAM %s succeeded %d times: %v", name, ok, errs)
		}
	}
	want := 1 + rounds*3
	var idsA, idsB []string
	if !testserver.WaitFor(30*time.Second, func() bool {
		idsA, idsB = queryIDs(t, ctx, a), queryIDs(t, ctx, b)
		return len(idsA) == want && slices.Equal(idsA, idsB)
	}) {
		t.Fatalf("the servers disagree or miss queries (want %d):\n%v\n%v", want, idsA, idsB)
	}
	if len(slices.Compact(slices.Clone(idsA))) != len(idsA) {
		t.Errorf("a query ID twice: %v", idsA)
	}

	// Restarted, b replays the topic (failed commands skipped) to the
	// same catalog.
	if err := b.Stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exec1(t, ctx, ca, `CREATE STREAM late AS SELECT * FROM pv`)
	if err := b.Restart(); err != nil {
		t.Fatal(err)
	}
	idsA, idsB = queryIDs(t, ctx, a), queryIDs(t, ctx, b)
	if !slices.Equal(idsA, idsB) || len(idsA) != want+1 {
		t.Fatalf("after a restart the servers disagree:\n%v\n%v", idsA, idsB)
	}
}
