package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// TestGracefulDrain: SIGTERM ends a pgwire push query with FATAL 57P01,
// commits the persistent query's work, leaves its consumer group (no
// member is left waiting for a session timeout) and exits with status 0;
// after a restart every input record is in the output exactly once.
func TestGracefulDrain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := startServer(t)
	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `CREATE STREAM drain_in (id INT KEY, v INT) WITH (KAFKA_TOPIC='drain_in', VALUE_FORMAT='JSON', PARTITIONS=2)`)
	exec1(t, ctx, conn, `CREATE STREAM drain_out AS SELECT id, v * 2 AS v2 FROM drain_in`)
	insertRange(t, ctx, conn, "drain_in", 0, 40)
	waitCommitted(t, ctx, s.KafkaAddr, "DRAIN_OUT", 40)

	push := connect(t, ctx, s)
	exec1(t, ctx, push, `SET 'auto.offset.reset' = 'earliest'`)
	pushErr := make(chan error, 1)
	firstRow := make(chan struct{})
	go func() {
		rs, err := push.Query(ctx, `SELECT * FROM drain_in EMIT CHANGES`)
		if err == nil {
			for n := 0; rs.Next(); n++ {
				if n == 0 {
					close(firstRow)
				}
			}
			rs.Close()
			err = rs.Err()
		}
		pushErr <- err
	}()
	// The push query is running once a row came (not after a fixed
	// sleep: on a loaded machine it may not have started).
	select {
	case <-firstRow:
	case err := <-pushErr:
		t.Fatalf("the push query ended before its first row: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("the push query sent no row within 60 s")
	}

	if err := s.Stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.ExitErr(); err != nil {
		t.Fatalf("the server exited with %v after SIGTERM, want status 0", err)
	}
	if !strings.Contains(s.Log(), "sqlstreams stopped cleanly") {
		t.Error("the log does not say the server stopped cleanly")
	}
	select {
	case err := <-pushErr:
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "57P01" || pe.Severity != "FATAL" {
			t.Errorf("the push query ended with %v, want FATAL 57P01", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the push query did not end with the server")
	}

	restart(t, s)
	conn = connect(t, ctx, s)
	insertRange(t, ctx, conn, "drain_in", 40, 60)
	got := waitCommitted(t, ctx, s.KafkaAddr, "DRAIN_OUT", 60)
	checkOnce(t, got, 60)
}

// TestDrainKeepsStaticMembership: the stream threads of a server that
// drains are static members of their queries' groups (group.instance.id
// <instance>-<thread>), and they stay in the group when it stops: a
// restart within the session timeout takes its tasks back without a
// rebalance (tests/scaleout's TestRollingRestartMovesNoTask). The broker
// runs in its own process, so the group can be looked at after the
// engine has gone.
func TestDrainKeepsStaticMembership(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	kafka := testserver.StartBroker(t).KafkaAddr
	s := startServer(t, "--bootstrap-servers", kafka, "--service-id", "drainsvc", "--instance-id", "drainer")
	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `CREATE STREAM leave_in (id INT KEY, v INT) WITH (KAFKA_TOPIC='leave_in', VALUE_FORMAT='JSON', PARTITIONS=2)`)
	exec1(t, ctx, conn, `CREATE STREAM leave_out AS SELECT id, v FROM leave_in`)
	insertRange(t, ctx, conn, "leave_in", 0, 10)
	waitCommitted(t, ctx, kafka, "LEAVE_OUT", 10)
	group := "drainsvc_query_" + queryID(t, ctx, conn, "LEAVE_OUT")
	before := groupMembers(t, ctx, kafka, group)
	if before == 0 {
		t.Fatalf("group %s has no members while the query runs", group)
	}
	if err := s.Stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := s.ExitErr(); err != nil {
		t.Fatalf("the drain ended with %v, want status 0", err)
	}
	if n, dyn := groupMembers(t, ctx, kafka, group), dynamicMembers(t, ctx, kafka, group); n != before || dyn != 0 {
		t.Errorf("group %s has %d members (%d dynamic) right after the drain, want its %d static members still there", group, n, dyn, before)
	}
}

// TestSecondSignalExitsAtOnce: a second SIGTERM during the drain (kept
// busy by an HTTP request whose body never comes) ends the process at
// once with status 1; the work committed before is all there after a
// restart, each record once.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := startServer(t)
	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `CREATE STREAM sig_in (id INT KEY, v INT) WITH (KAFKA_TOPIC='sig_in', VALUE_FORMAT='JSON', PARTITIONS=2)`)
	exec1(t, ctx, conn, `CREATE STREAM sig_out AS SELECT id, v * 2 AS v2 FROM sig_in`)
	insertRange(t, ctx, conn, "sig_in", 0, 30)
	waitCommitted(t, ctx, s.KafkaAddr, "SIG_OUT", 30)

	defer holdDrain(t, s).Close()

	p := s.Pid()
	if err := syscall.Kill(p, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !s.WaitLog(10*time.Second, "shutting down: draining") {
		t.Fatal("the server did not start draining")
	}
	if err := s.Stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if s.ExitErr() == nil {
		t.Error("the server exited with status 0 after a second signal, want 1 (the drain was cut short)")
	}
	if !strings.Contains(s.Log(), "second signal: exiting now") {
		t.Error("the log does not say the second signal ended the drain")
	}

	restart(t, s)
	conn = connect(t, ctx, s)
	insertRange(t, ctx, conn, "sig_in", 30, 50)
	got := waitCommitted(t, ctx, s.KafkaAddr, "SIG_OUT", 50)
	checkOnce(t, got, 50)
}

// holdDrain opens an HTTP request to s that holds its REST server's
// drain (up to its 5 s for sessions): headers sent, body promised but
// never sent.
func holdDrain(t *testing.T, s *testserver.Server) net.Conn {
	t.Helper()
	var nc net.Conn
	var err error
	testserver.WaitFor(10*time.Second, func() bool { // REST listens after pgwire
		nc, err = net.Dial("tcp", s.HTTPAddr)
		return err == nil
	})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(nc, "POST /ksql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"ksql\":")
	time.Sleep(200 * time.Millisecond)
	return nc
}

// TestDrainBound: a drain that takes longer than --drain-timeout ends
// the process with status 1 and says so.
func TestDrainBound(t *testing.T) {
	s := startServer(t, "--drain-timeout", "1s")
	defer holdDrain(t, s).Close()
	if err := s.Stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if s.ExitErr() == nil {
		t.Error("the server exited with status 0 although its drain outlasted --drain-timeout 1s, want 1")
	}
	if !strings.Contains(s.Log(), "the drain took longer than its bound") {
		t.Error("the log does not say the drain outlasted its bound")
	}
}

// TestResetQuery: RESET QUERY deletes a GROUP BY query's committed
// offsets, internal topics and state, and starts it again from the
// earliest input: the table's counts are those of one pass over the input
// (not two), the repartition topic holds one pass too, and the output
// topic got the results again. While another member is in the query's
// group, the reset is refused and the query goes on.
func TestResetQuery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	kafka := testserver.StartBroker(t).KafkaAddr
	s := startServer(t, "--bootstrap-servers", kafka)
	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `CREATE STREAM rs_in (id INT KEY, region STRING) WITH (KAFKA_TOPIC='rs_in', VALUE_FORMAT='JSON', PARTITIONS=2)`)
	exec1(t, ctx, conn, `CREATE TABLE rs_counts AS SELECT region, COUNT(*) AS n FROM rs_in GROUP BY region`)
	for i := range 20 {
		exec1(t, ctx, conn, fmt.Sprintf(`INSERT INTO rs_in (id, region) VALUES (%d, 'r%d')`, i, i%4))
	}
	want := []string{"r0|5", "r1|5", "r2|5", "r3|5"}
	waitTable(t, ctx, conn, `SELECT region, n FROM rs_counts`, want)
	id := queryID(t, ctx, conn, "RS_COUNTS")
	group := "sqlstreams_query_" + id
	waitCaughtUp(t, ctx, kafka, group, "rs_in")
	repartition := internalTopic(t, ctx, kafka, group, "-repartition")
	if n := len(readCommittedValues(t, ctx, kafka, repartition)); n != 20 {
		t.Fatalf("repartition topic %s holds %d records before the reset, want 20", repartition, n)
	}

	// Refused while the query runs on another instance too.
	members := groupMembers(t, ctx, kafka, group)
	other := startServer(t, "--bootstrap-servers", kafka)
	if !testserver.WaitFor(60*time.Second, func() bool { return groupMembers(t, ctx, kafka, group) > members }) {
		t.Fatal("the second instance never joined the query's group")
	}
	_, err := conn.Exec(ctx, `RESET QUERY `+id)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "55006" || !strings.Contains(pe.Message, "runs on other instances") {
		t.Errorf("RESET QUERY with another instance in the group: %v, want 55006 naming the other instances", err)
	}
	// The query went on: it counts a new row. Then the other instance
	// stops, and its static members leave the group at their session
	// timeout.
	exec1(t, ctx, conn, `INSERT INTO rs_in (id, region) VALUES (20, 'r0')`)
	want[0] = "r0|6"
	waitTable(t, ctx, conn, `SELECT region, n FROM rs_counts`, want)
	if err := other.Stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !testserver.WaitFor(60*time.Second, func() bool { return groupMembers(t, ctx, kafka, group) <= members }) {
		t.Fatal("the stopped instance's members never left the query's group")
	}
	waitTable(t, ctx, conn, `SELECT region, n FROM rs_counts`, want)
	waitCaughtUp(t, ctx, kafka, group, "rs_in")
	outBefore := len(readCommittedValues(t, ctx, kafka, "RS_COUNTS"))

	// The reset.
	exec1(t, ctx, conn, `RESET QUERY `+id)
	waitCaughtUp(t, ctx, kafka, group, "rs_in")
	waitTable(t, ctx, conn, `SELECT region, n FROM rs_counts`, want)
	if n := len(readCommittedValues(t, ctx, kafka, repartition)); n != 21 {
		t.Errorf("repartition topic holds %d records after the reset, want 21 (one pass over the input)", n)
	}
	if n := len(readCommittedValues(t, ctx, kafka, "RS_COUNTS")); n <= outBefore {
		t.Errorf("the output topic has %d records after the reset, %d before: the input was not processed again", n, outBefore)
	}
	if !strings.Contains(s.Log(), "query reset") {
		t.Error("the log does not record the reset")
	}

	// A reset query survives a restart with its new state.
	stopAndRestart(t, s)
	conn = connect(t, ctx, s)
	waitTable(t, ctx, conn, `SELECT region, n FROM rs_counts`, want)

	// The command-line form: the same reset, asked of the server.
	out, err := osexec.Command(testserver.Binary(t), "reset", "--server", s.PGAddr, "--query", strings.ToLower(id)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), id+" reset") {
		t.Errorf("sqlstreams reset: %v: %s", err, out)
	}
	waitTable(t, ctx, conn, `SELECT region, n FROM rs_counts`, want)
	out, err = osexec.Command(testserver.Binary(t), "reset", "--server", s.PGAddr, "--query", "NO_SUCH").CombinedOutput()
	if code := exitCode(err); code != 1 || !strings.Contains(string(out), "query NO_SUCH does not exist") {
		t.Errorf("sqlstreams reset of a missing query: exit %d: %s", code, out)
	}

	for _, bad := range []struct{ stmt, code string }{
		{`RESET QUERY NO_SUCH_QUERY`, "42704"},
		{`RESET QUERY`, "42601"},
	} {
		_, err := conn.Exec(ctx, bad.stmt)
		if !errors.As(err, &pe) || pe.Code != bad.code {
			t.Errorf("%s: %v, want SQLSTATE %s", bad.stmt, err, bad.code)
		}
	}
}

// insertRange inserts rows id = v = from … to-1 into stream.
func insertRange(t *testing.T, ctx context.Context, conn *pgx.Conn, stream string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (id, v) VALUES (%d, %d)`, stream, i, i)); err != nil {
			t.Fatal(err)
		}
	}
}

// waitCommitted waits until topic has at least n committed records and
// returns their values.
func waitCommitted(t *testing.T, ctx context.Context, addr, topic string, n int) []string {
	t.Helper()
	var got []string
	ok := testserver.WaitFor(90*time.Second, func() bool {
		got = got[:0]
		for _, r := range readCommittedValues(t, ctx, addr, topic) {
			got = append(got, string(r.value))
		}
		return len(got) >= n
	})
	if !ok {
		t.Fatalf("%s has %d committed records, want %d", topic, len(got), n)
	}
	return got
}

// checkOnce checks that values are n distinct records.
func checkOnce(t *testing.T, values []string, n int) {
	t.Helper()
	seen := map[string]int{}
	for _, v := range values {
		seen[v]++
	}
	for v, c := range seen {
		if c > 1 {
			t.Errorf("%s is in the output %d times", v, c)
		}
	}
	if len(values) != n || len(seen) != n {
		t.Errorf("%d output records (%d distinct), want %d", len(values), len(seen), n)
	}
}

// waitTable waits until a pull query's rows, sorted, are want.
func waitTable(t *testing.T, ctx context.Context, conn *pgx.Conn, q string, want []string) {
	t.Helper()
	var got []string
	var err error
	if !testserver.WaitFor(60*time.Second, func() bool {
		// A partition still being restored is an error, not a partial
		// answer: ask again.
		got, err = tryRows(ctx, conn, q)
		sort.Strings(got)
		return err == nil && strings.Join(got, ",") == strings.Join(want, ",")
	}) {
		t.Fatalf("%s: %v (%v), want %v", q, got, err, want)
	}
}

// groupMembers returns how many members group has.
func groupMembers(t *testing.T, ctx context.Context, addr, group string) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	d, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	return len(d[group].Members)
}

// dynamicMembers returns how many members of group have no
// group.instance.id (static members stay in the group across a restart).
func dynamicMembers(t *testing.T, ctx context.Context, addr, group string) int {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	d, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range d[group].Members {
		if m.InstanceID == nil {
			n++
		}
	}
	return n
}

// internalTopic returns the topic of the query's application ID ending in
// suffix.
func internalTopic(t *testing.T, ctx context.Context, addr, appID, suffix string) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range topics.Names() {
		if strings.HasPrefix(name, appID) && strings.HasSuffix(name, suffix) {
			return name
		}
	}
	t.Fatalf("no topic %s…%s among %v", appID, suffix, topics.Names())
	return ""
}

// exitCode is the exit status in err from exec.Cmd (0 for nil).
func exitCode(err error) int {
	var ee *osexec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestProcessingLogSettings: ksqlDB's ksql.logging.processing.topic.* and
// .stream.* keys in a --config file name and size the processing log's
// topic and stream; a skipped record lands there.
func TestProcessingLogSettings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := filepath.Join(t.TempDir(), "server.properties")
	if err := os.WriteFile(cfg, []byte(strings.Join([]string{
		"ksql.logging.processing.topic.name=ops_plog",
		"ksql.logging.processing.topic.partitions=2",
		"ksql.logging.processing.topic.replication.factor=1",
		"ksql.logging.processing.stream.name=ops_log",
		"ksql.logging.processing.rows.include=false",
	}, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--config", cfg)
	conn := connect(t, ctx, s)
	if got := strings.Join(rows(t, ctx, conn, "SHOW STREAMS"), ";"); got != "OPS_LOG|ops_plog|NONE|JSON|false" {
		t.Fatalf("SHOW STREAMS: %q, want the processing log stream OPS_LOG over ops_plog", got)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx, "ops_plog")
	if err != nil || len(topics["ops_plog"].Partitions) != 2 {
		t.Fatalf("topic ops_plog: %v, %v; want 2 partitions", topics["ops_plog"], err)
	}
	exec1(t, ctx, conn, `CREATE STREAM pl_in (id INT KEY, v INT) WITH (KAFKA_TOPIC='pl_in', VALUE_FORMAT='JSON', PARTITIONS=1)`)
	exec1(t, ctx, conn, `CREATE STREAM pl_out AS SELECT id, v FROM pl_in`)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "pl_in", Value: []byte("not json")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	exec1(t, ctx, conn, `SET 'auto.offset.reset' = 'earliest'`)
	got := rows(t, ctx, conn, `SELECT query, topic, record_value FROM ops_log EMIT CHANGES LIMIT 1`)
	if id := queryID(t, ctx, conn, "PL_OUT"); len(got) != 1 || got[0] != id+"|pl_in|<nil>" {
		t.Errorf("processing log entries %q, want one for %s without the record (rows.include=false)", got, id)
	}

	// stream.auto.create=false declares no stream.
	s2 := startServer(t, "--processing-log-stream-auto-create=false", "--service-id", "other")
	conn2 := connect(t, ctx, s2)
	if got := rows(t, ctx, conn2, "SHOW STREAMS"); len(got) != 0 {
		t.Errorf("SHOW STREAMS with the stream turned off: %q, want none", got)
	}
	// topic.auto.create=false leaves a missing topic missing, and then
	// there is no stream over it either.
	s3 := startServer(t, "--processing-log-topic-auto-create=false", "--service-id", "third")
	conn3 := connect(t, ctx, s3)
	if got := rows(t, ctx, conn3, "SHOW STREAMS"); len(got) != 0 {
		t.Errorf("SHOW STREAMS without the processing log topic: %q, want none", got)
	}
	cl3, err := kgo.NewClient(kgo.SeedBrokers(s3.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl3.Close()
	if topics, err := kadm.NewClient(cl3).ListTopics(ctx); err != nil || topics.Has("third_processing_log") {
		t.Errorf("topics %v (%v): the processing log topic was created although auto.create is false", topics.Names(), err)
	}
	if !strings.Contains(s3.Log(), "processing log topic does not exist") {
		t.Error("the server log does not say the processing log topic is missing")
	}
}

// TestMemoryLimit: --memory-limit sizes the caches not given their own
// flag, and SHOW PROPERTIES says so; a limit below the minimum is refused.
func TestMemoryLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := startServer(t, "--memory-limit", "1GiB", "--rocksdb-block-cache", "100MiB")
	conn := connect(t, ctx, s)
	props := map[string]string{}
	for _, r := range rows(t, ctx, conn, "SHOW PROPERTIES") {
		parts := strings.Split(r, "|")
		props[parts[0]] = strings.Join(parts[1:], "|")
	}
	for name, want := range map[string]string{
		"server.memory-limit":          "1GiB|flag --memory-limit",
		"server.rocksdb-block-cache":   "100MiB|flag --rocksdb-block-cache",
		"server.rocksdb-write-buffers": "128MiB|--memory-limit",
		"server.state-value-cache":     "128MiB|--memory-limit",
	} {
		if got := props[name]; got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
	if !s.WaitLog(time.Second, "memory limit", "go_soft_limit_mib=576", "fetch_max_kib=1024") {
		t.Error("the log does not give the memory budget")
	}
	out, err := osexec.Command(testserver.Binary(t), "server", "--memory-limit", "10MiB", "--data-dir", t.TempDir()).CombinedOutput()
	if exitCode(err) != 2 || !strings.Contains(string(out), "below the minimum of 256 MiB") {
		t.Errorf("--memory-limit 10MiB: exit %d: %s", exitCode(err), out)
	}
}

// queryID returns the ID of the persistent query writing sink, from SHOW
// QUERIES (IDs are numbered by the server).
func queryID(t *testing.T, ctx context.Context, conn *pgx.Conn, sink string) string {
	t.Helper()
	for _, r := range rows(t, ctx, conn, "SHOW QUERIES") {
		f := strings.Split(r, "|")
		if len(f) > 3 && f[3] == sink {
			return f[0]
		}
	}
	t.Fatalf("no query writes %s", sink)
	return ""
}

// tryRows runs a query and returns its rows as text, "|"-joined, or its
// error.
func tryRows(ctx context.Context, conn *pgx.Conn, q string) ([]string, error) {
	rs, err := conn.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		vals, err := rs.Values()
		if err != nil {
			return nil, err
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out, rs.Err()
}

// TestQueryFailsAndRecovers: a query whose output topic is deleted
// under it fails (its writes keep failing), shows FAILED with the error
// over pgwire and REST, restarts with backoff, and once the topic is back
// runs again, keeping the failure as its last error.
func TestQueryFailsAndRecovers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := startServer(t)
	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `CREATE STREAM fq_in (id INT KEY, v INT) WITH (KAFKA_TOPIC='fq_in', VALUE_FORMAT='JSON', PARTITIONS=1)`)
	exec1(t, ctx, conn, `CREATE STREAM fq_out AS SELECT id, v FROM fq_in`)
	insertRange(t, ctx, conn, "fq_in", 0, 1)
	waitCommitted(t, ctx, s.KafkaAddr, "FQ_OUT", 1)
	id := queryID(t, ctx, conn, "FQ_OUT")

	cl, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopics(ctx, "FQ_OUT"); err != nil {
		t.Fatal(err)
	}
	insertRange(t, ctx, conn, "fq_in", 1, 2)

	// status returns SHOW QUERIES EXTENDED's state, restarts and last
	// error of the query.
	status := func() (state, restarts, lastErr string) {
		for _, r := range rows(t, ctx, conn, "SHOW QUERIES EXTENDED") {
			f := strings.Split(r, "|")
			if f[0] == id {
				return f[2], f[4], f[5]
			}
		}
		t.Fatalf("SHOW QUERIES EXTENDED lists no %s", id)
		return
	}
	var state, restarts, lastErr string
	if !testserver.WaitFor(90*time.Second, func() bool {
		state, restarts, lastErr = status()
		return state == "FAILED"
	}) {
		t.Fatalf("the query is %s (last error %q) with its output topic deleted, want FAILED", state, lastErr)
	}
	if !strings.Contains(lastErr, "writing records failed") {
		t.Errorf("last error %q does not say the writes failed", lastErr)
	}
	// The same over REST.
	resp, err := http.Post("http://"+s.HTTPAddr+"/ksql", "application/json", strings.NewReader(`{"ksql":"SHOW QUERIES;"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"state":"FAILED"`) || !strings.Contains(string(body), `"lastError":"`) {
		t.Errorf("REST SHOW QUERIES %s: want the query FAILED with its last error", body)
	}

	// The topic back: the query restarts into RUNNING, its last error
	// kept, and writes what it could not.
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, "FQ_OUT"); err != nil {
		t.Fatal(err)
	}
	if !testserver.WaitFor(90*time.Second, func() bool {
		state, restarts, lastErr = status()
		return state == "RUNNING"
	}) {
		t.Fatalf("the query is %s after its topic came back, want RUNNING", state)
	}
	if restarts == "0" || !strings.Contains(lastErr, "writing records failed") {
		t.Errorf("after the recovery: restarts %s, last error %q; want at least one restart and the failure kept", restarts, lastErr)
	}
	waitCommitted(t, ctx, s.KafkaAddr, "FQ_OUT", 1)
}
