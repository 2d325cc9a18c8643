package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// rows runs a query and returns its rows as text, "|"-joined.
func rows(t *testing.T, ctx context.Context, conn *pgx.Conn, q string) []string {
	t.Helper()
	out, err := tryRows(ctx, conn, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func exec1(t *testing.T, ctx context.Context, conn *pgx.Conn, q string) {
	t.Helper()
	if _, err := conn.Exec(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestWalkingSkeleton drives the walking skeleton's example over pgx's
// default (extended) protocol, then produces with a Kafka client, kills
// and restarts the server, and checks that every input record reaches
// CARTVIEWS exactly once under read_committed.
func TestWalkingSkeleton(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	s := startServer(t)
	conn := connect(t, ctx, s)

	exec1(t, ctx, conn, `CREATE STREAM pageviews (userid VARCHAR KEY, pageid VARCHAR, viewtime BIGINT)
  WITH (KAFKA_TOPIC='pageviews', VALUE_FORMAT='JSON', PARTITIONS=2)`)
	exec1(t, ctx, conn, `INSERT INTO pageviews (userid, pageid, viewtime) VALUES ('u1', 'home', 1)`)
	exec1(t, ctx, conn, `INSERT INTO pageviews (userid, pageid, viewtime) VALUES ('u2', 'cart', 2)`)
	exec1(t, ctx, conn, `CREATE STREAM cartviews AS
  SELECT userid, pageid, viewtime * 10 AS t10 FROM pageviews WHERE pageid = 'cart' EMIT CHANGES`)
	exec1(t, ctx, conn, `SET 'auto.offset.reset' = 'earliest'`)

	// A push query: typed columns, one row, then the statement ends.
	rs, err := conn.Query(ctx, `SELECT * FROM cartviews EMIT CHANGES LIMIT 1`)
	if err != nil {
		t.Fatal(err)
	}
	var user, page string
	var t10 int64
	n := 0
	for rs.Next() {
		if err := rs.Scan(&user, &page, &t10); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 1 || user != "u2" || page != "cart" || t10 != 20 {
		t.Fatalf("push query: got %d rows, last %q %q %d; want u2 cart 20", n, user, page, t10)
	}
	if got := rs.FieldDescriptions(); len(got) != 3 || got[0].Name != "USERID" || got[2].Name != "T10" {
		t.Fatalf("push query columns: %+v", got)
	}

	if got := rows(t, ctx, conn, "SHOW STREAMS"); len(got) != 3 ||
		got[0] != "CARTVIEWS|CARTVIEWS|KAFKA|JSON|false" || got[1] != "PAGEVIEWS|pageviews|KAFKA|JSON|false" ||
		got[2] != "PROCESSING_LOG|sqlstreams_processing_log|NONE|JSON|false" {
		t.Fatalf("SHOW STREAMS: %q", got)
	}
	queries := rows(t, ctx, conn, "SHOW QUERIES")
	if len(queries) != 1 || !strings.HasPrefix(queries[0], "CSAS_CARTVIEWS_2|PERSISTENT|RUNNING|CARTVIEWS|CARTVIEWS|") {
		t.Fatalf("SHOW QUERIES: %q", queries)
	}
	if got := rows(t, ctx, conn, "DESCRIBE cartviews"); strings.Join(got, ";") != "USERID|STRING (key);PAGEID|STRING;T10|BIGINT" {
		t.Fatalf("DESCRIBE: %q", got)
	}
	explain := strings.Join(rows(t, ctx, conn, "EXPLAIN CSAS_CARTVIEWS_2"), "\n")
	for _, want := range []string{"sqlstreams_query_CSAS_CARTVIEWS_2", "SOURCE-PAGEVIEWS (topic: pageviews", "Filter: (PAGEID = 'cart')", "SINK-CARTVIEWS (topic: CARTVIEWS"} {
		if !strings.Contains(explain, want) {
			t.Fatalf("EXPLAIN lacks %q:\n%s", want, explain)
		}
	}

	// Errors name what is wrong and where, and create nothing.
	for _, c := range []struct{ sql, code, msg string }{
		{"SELECT userid, nope FROM pageviews EMIT CHANGES", "42703", "SELECT column 'NOPE' cannot be resolved"},
		{"CREATE STREAM bad AS SELECT * FROM nothere", "42P01", "NOTHERE does not exist"},
		{"CREATE STREAM bad2 AS SELECT * FORM pageviews", "42601", `syntax error at or near "FORM"`},
	} {
		_, err := conn.Exec(ctx, c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: want a PgError, got %v", c.sql, err)
		}
		if pe.Code != c.code || !strings.Contains(pe.Message, c.msg) || pe.Position == 0 {
			t.Fatalf("%s: got code %s position %d message %q; want code %s, a position, %q", c.sql, pe.Code, pe.Position, pe.Message, c.code, c.msg)
		}
	}
	if got := rows(t, ctx, conn, "SHOW STREAMS"); len(got) != 3 {
		t.Fatalf("failed statements created something: %q", got)
	}

	// Records from any Kafka client, bad ones among them, then a crash in
	// the middle of processing, a clean restart, and more records.
	kc, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr), kgo.DefaultProduceTopic("pageviews"), kgo.ProducerLinger(0))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	want := map[string]int64{"u2": 20}
	next, bad := 3, 0
	produce := func(count int) {
		t.Helper()
		recs := make([]*kgo.Record, 0, count+2)
		recs = append(recs, &kgo.Record{Key: []byte("bad1"), Value: []byte(`not json`)},
			&kgo.Record{Key: []byte("bad2"), Value: []byte(`{"PAGEID":"cart","VIEWTIME":"x"}`)})
		bad += 2
		for i := 0; i < count; i++ {
			k := fmt.Sprintf("u%d", next)
			page := "home"
			if next%2 == 0 {
				page = "cart"
				want[k] = int64(next) * 10
			}
			// Mixed-case field names: matching is case-insensitive.
			recs = append(recs, &kgo.Record{Key: []byte(k), Value: []byte(fmt.Sprintf(`{"PageId":%q,"viewtime":%d}`, page, next))})
			next++
		}
		if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}

	produce(30000)
	// Crash while the query works through the backlog.
	written, committed := waitMidRun(t, ctx, s.KafkaAddr, "CARTVIEWS", 1000, func() { produce(2000) })
	t.Logf("SIGKILL with %d records written to CARTVIEWS while waiting, %d of them committed", written, committed)
	crashAndRestart(t, s)
	kc.ForceMetadataRefresh()
	produce(20000)
	waitOutput(t, ctx, s.KafkaAddr, len(want)-5000)
	stopAndRestart(t, s)
	produce(5000)

	waitCaughtUp(t, ctx, s.KafkaAddr, "sqlstreams_query_CSAS_CARTVIEWS_2", "pageviews")
	got := readCommitted(t, ctx, s.KafkaAddr, "CARTVIEWS")
	// The input holds each produced record once (the embedded broker
	// keeps idempotent-producer state across the crash, so the client's
	// retries are not stored twice), and the output each cart view once.
	inCount := map[string]int{}
	for _, r := range readCommittedValues(t, ctx, s.KafkaAddr, "pageviews") {
		var v struct {
			PageID   string
			ViewTime int64
		}
		if json.Unmarshal(r.value, &v) == nil && v.PageID == "cart" { // bad records do not unmarshal
			inCount[string(r.key)]++
		}
	}
	inTotal := 0
	for k, n := range inCount {
		inTotal += n
		if _, ok := want[k]; !ok {
			t.Fatalf("input holds cart view %s that was never produced", k)
		}
		if n > 1 {
			t.Fatalf("input holds cart view %s %d times; it was produced once", k, n)
		}
	}
	if inTotal != len(want) {
		t.Fatalf("the input holds %d cart views for %d produced", inTotal, len(want))
	}
	dups, missing, wrong := 0, 0, 0
	for k, n := range got.count {
		if n > inCount[k] {
			dups++
		}
		if _, ok := want[k]; !ok {
			wrong++
		}
	}
	for k, v := range want {
		if got.count[k] < inCount[k] {
			missing++
		} else if got.t10[k] != v {
			wrong++
		}
	}
	if dups+missing+wrong > 0 || got.total != inTotal {
		t.Fatalf("CARTVIEWS (read_committed): %d records for %d keys; want %d; %d duplicated, %d missing, %d wrong", got.total, len(got.count), inTotal, dups, missing, wrong)
	}
	t.Logf("CARTVIEWS holds each of %d input cart views exactly once", inTotal)
	for _, l := range strings.Split(s.LogTail(60), "\n") {
		if strings.Contains(l, "repair") {
			t.Log(l)
		}
	}

	// Each bad record is in the processing log, naming the query, where
	// the record is and why it was skipped (a record reprocessed after the
	// crash may be logged twice).
	logged := 0
	plog := readRaw(t, ctx, s.KafkaAddr, "sqlstreams_processing_log")
	for _, v := range plog {
		var entry struct{ Query, Topic, Error string }
		if err := json.Unmarshal(v, &entry); err != nil {
			t.Fatalf("processing log entry %s: %v", v, err)
		}
		if entry.Query == "CSAS_CARTVIEWS_2" && entry.Topic == "pageviews" && strings.Contains(entry.Error, "bad record") {
			logged++
		}
	}
	if logged < bad {
		t.Fatalf("processing log has %d entries for the %d bad records: %q", logged, bad, plog)
	}

	// The catalog survived the restarts; the query is running again.
	conn = connect(t, ctx, s)
	if got := rows(t, ctx, conn, "SHOW QUERIES"); len(got) != 1 || !strings.Contains(got[0], "|RUNNING|") {
		t.Fatalf("after restart, SHOW QUERIES: %q", got)
	}
	// Prometheus metrics: per query and per server.
	resp, err := http.Get("http://" + s.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`sqlstreams_query_records_in_total{query_id="CSAS_CARTVIEWS_2"}`,
		`sqlstreams_query_bad_records_total{query_id="CSAS_CARTVIEWS_2"}`,
		`sqlstreams_query_commit_latency_seconds_count{query_id="CSAS_CARTVIEWS_2"}`,
		`sqlstreams_query_consumer_lag{partition=`,
		`sqlstreams_connections{server="pgwire"}`,
		`sqlstreams_statements_total{outcome="ok",server="pgwire"}`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

}

type output struct {
	total int
	count map[string]int
	t10   map[string]int64
}

// readCommitted reads topic from the start up to its last stable offset.
func readCommitted(t *testing.T, ctx context.Context, addr, topic string) output {
	t.Helper()
	out := output{count: map[string]int{}, t10: map[string]int64{}}
	for _, r := range readPartitioned(t, ctx, addr, topic) {
		var v struct{ T10 int64 }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Errorf("output record %s: %v", r.Value, err)
		}
		out.total++
		out.count[string(r.Key)]++
		out.t10[string(r.Key)] = v.T10
	}
	return out
}

// readRaw returns the values of every record in topic up to its current
// end, read_uncommitted.
func readRaw(t *testing.T, ctx context.Context, addr, topic string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, r := range readTo(t, ctx, addr, topic, kgo.ReadUncommitted()) {
		out = append(out, r.Value)
	}
	return out
}

// waitOutput waits until topic CARTVIEWS has at least n records (read
// uncommitted high watermarks include commit markers; close enough to
// know the query is busy).
func waitOutput(t *testing.T, ctx context.Context, addr string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		ends, err := adm.ListEndOffsets(ctx, "CARTVIEWS")
		if err == nil {
			var sum int64
			ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
			if sum >= int64(n) {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("CARTVIEWS never reached %d records", n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitMidRun waits until the query writing topic out is in the middle of
// its work, the moment a crash tests exactly-once: at least atLeast
// records have been written to out since the call, and some of out is in
// an open transaction (a partition's end offset is past its last stable
// offset), so the crash leaves written output uncommitted. (Output seen
// only read_committed does not show a query midway: it commits every
// 100ms and works through a batch in a transaction or two.)
//
// A query can use up its input before a poll catches it midway (on a
// loaded machine the poll itself is slow), so whenever out has not grown
// for midRunIdle, waitMidRun calls more, which must produce more input
// for the query, and keeps watching. It returns how many records were
// written since the call, and how many of them are committed; it fails t
// if that does not happen within a minute.
func waitMidRun(t *testing.T, ctx context.Context, addr, out string, atLeast int64, more func()) (written, committed int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	fed := 0
	// offsets returns the sums of out's end and last stable offsets, and
	// whether a partition has an open transaction. A listing that fails
	// (the broker restarted a moment ago) is tried again.
	var listErr error
	offsets := func() (end, stable int64, open bool) {
		for {
			ends, err1 := adm.ListEndOffsets(ctx, out)
			lsos, err2 := adm.ListCommittedOffsets(ctx, out)
			err := errors.Join(err1, err2, ends.Error(), lsos.Error())
			if err == nil {
				ends.Each(func(o kadm.ListedOffset) {
					end += o.Offset
					if lso, ok := lsos.Lookup(out, o.Partition); ok {
						stable += lso.Offset
						open = open || lso.Offset < o.Offset
					}
				})
				return end, stable, open
			}
			if ctx.Err() != nil {
				t.Fatalf("%s never had %d records written and some in an open transaction (more input produced %d times; last failed listing: %v)", out, atLeast, fed, listErr)
			}
			listErr = err
			time.Sleep(50 * time.Millisecond)
		}
	}
	end0, stable0, _ := offsets()
	last, grew := end0, time.Now()
	for {
		end, stable, open := offsets()
		if end-end0 >= atLeast && open {
			if fed > 0 {
				t.Logf("%s midway after more input %d times", out, fed)
			}
			return end - end0, stable - stable0
		}
		switch {
		case end != last:
			last, grew = end, time.Now()
		case time.Since(grew) >= midRunIdle:
			more()
			fed++
			grew = time.Now()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// midRunIdle is how long waitMidRun lets a query's output stand still
// before it asks for more input.
const midRunIdle = 500 * time.Millisecond

// waitCaughtUp waits until group has committed offsets at the last stable
// offsets of topic.
func waitCaughtUp(t *testing.T, ctx context.Context, addr, group, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		lso, err1 := adm.ListCommittedOffsets(ctx, topic)
		committed, err2 := adm.FetchOffsets(ctx, group)
		if err1 == nil && err2 == nil {
			caught := true
			lso.Each(func(o kadm.ListedOffset) {
				c, ok := committed.Lookup(topic, o.Partition)
				if (!ok && o.Offset > 0) || (ok && c.At < o.Offset) {
					caught = false
				}
			})
			if caught {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s never caught up on %s", group, topic)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
