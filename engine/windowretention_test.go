package engine_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// windowCluster starts a one-broker kfake cluster for the test's
// lifetime and returns it, its addresses and an admin client.
func windowCluster(t testing.TB) (*kfake.Cluster, []string, *kadm.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return c, c.ListenAddrs(), kadm.NewClient(cl)
}

// topicConfig returns a topic's cleanup.policy and retention.ms.
func topicConfig(t testing.TB, ctx context.Context, adm *kadm.Client, topic string) (policy, retention string) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describing %s: %v %v", topic, err, rc.Err)
	}
	for _, c := range rc.Configs {
		switch c.Key {
		case "cleanup.policy":
			policy = c.MaybeValue()
		case "retention.ms":
			retention = c.MaybeValue()
		}
	}
	return policy, retention
}

// changelogSpan returns how many offsets a one-partition topic holds
// (end minus start) and its start.
func changelogSpan(t testing.TB, ctx context.Context, adm *kadm.Client, topic string) (n, start int64) {
	t.Helper()
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := starts.Lookup(topic, 0)
	e, _ := ends.Lookup(topic, 0)
	return e.Offset - s.Offset, s.Offset
}

// TestWindowChangelogRetention: window and session store changelogs are
// compact,delete with retention.ms the store's retention plus
// windowstore.changelog.additional.retention.ms (a day unless set); the
// changelog of a query recorded before, created compact only, is
// altered when the query starts; retention deletes what is older, and a
// new instance whose changelog retention emptied restores (nothing) and
// goes on.
func TestWindowChangelogRetention(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, brokers, adm := windowCluster(t)
	// An existing query: its command recorded, its changelog created as
	// before (compact only).
	log, err := catalog.OpenCommandLog(ctx, kafka.Plain(brokers...), "sqlstreams", "old")
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"CREATE STREAM ev (k INT KEY, v INT) WITH (KAFKA_TOPIC='ev', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE TABLE old_w WITH (KAFKA_TOPIC='old_w') AS SELECT k, COUNT(*) AS c FROM ev WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY k;",
	} {
		if _, err := log.Append(ctx, catalog.Command{Statement: stmt, Props: map[string]string{"auto.offset.reset": "earliest"}}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	const oldChangelog = "sqlstreams_query_CTAS_OLD_W_2-AGGREGATE-changelog"
	compact := "compact"
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"cleanup.policy": &compact}, oldChangelog); err != nil {
		t.Fatal(err)
	}
	open := func() *engine.Engine {
		eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
	eng := open()
	// 1 minute windows with the default grace (24 hours less the size)
	// and retention (size + grace: a day), plus a day.
	if p, r := topicConfig(t, ctx, adm, oldChangelog); p != "compact,delete" || r != strconv.Itoa(2*24*3600*1000) {
		t.Errorf("the existing query's changelog: cleanup.policy=%s retention.ms=%s", p, r)
	}
	s := engine.NewSession()
	for _, stmt := range []string{
		"SET 'auto.offset.reset'='earliest';",
		"SET 'windowstore.changelog.additional.retention.ms'='0';",
		"CREATE TABLE w WITH (KAFKA_TOPIC='w') AS SELECT k, COUNT(*) AS c FROM ev WINDOW TUMBLING (SIZE 1 SECOND, GRACE PERIOD 0 SECONDS) GROUP BY k EMIT FINAL;",
		"CREATE TABLE sess WITH (KAFKA_TOPIC='sess') AS SELECT k, COUNT(*) AS c FROM ev WINDOW SESSION (1 SECOND, GRACE PERIOD 0 SECONDS) GROUP BY k;",
	} {
		if _, err := eng.Execute(ctx, s, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	wlog := "sqlstreams_query_" + writerOf(t, eng, "W") + "-AGGREGATE-changelog"
	slog := "sqlstreams_query_" + writerOf(t, eng, "SESS") + "-AGGREGATE-changelog"
	for _, topic := range []string{wlog, slog} {
		if p, r := topicConfig(t, ctx, adm, topic); p != "compact,delete" || r != "1000" {
			t.Errorf("%s: cleanup.policy=%s retention.ms=%s, want compact,delete and 1000", topic, p, r)
		}
	}
	// Event time now: windows close as the next second's row comes.
	base := time.Now().UnixMilli() / 1000 * 1000
	var recs []*kgo.Record
	for i := 0; i < 5; i++ {
		recs = append(recs, &kgo.Record{Key: intKey(i % 2), Value: []byte(`{"V":1}`), Timestamp: time.UnixMilli(base + int64(i)*1000)})
	}
	produce(t, ctx, brokers, "ev", recs...)
	consumeRecords(t, ctx, brokers, "w", 4) // windows 0-3, closed by the rows after them
	eng.Close()
	before, _ := changelogSpan(t, ctx, adm, wlog)
	time.Sleep(1100 * time.Millisecond)
	c.ApplyRetention()
	after, start := changelogSpan(t, ctx, adm, wlog)
	if before == 0 || after != 0 || start == 0 {
		t.Fatalf("%s: %d offsets before retention, %d after (start %d): retention did not delete them", wlog, before, after, start)
	}
	// A new instance: nothing to restore (the open window of key 0 at 4 s
	// went with the retention this test made 1 s), and the query goes on:
	// a window opened now closes and is emitted.
	eng = open()
	defer eng.Close()
	produce(t, ctx, brokers, "ev",
		&kgo.Record{Key: intKey(7), Value: []byte(`{"V":1}`), Timestamp: time.UnixMilli(base + 10_000)},
		&kgo.Record{Key: intKey(8), Value: []byte(`{"V":1}`), Timestamp: time.UnixMilli(base + 11_000)})
	got := consumeRecords(t, ctx, brokers, "w", 5)
	if k := got[4].Key; len(k) != 12 || binary.BigEndian.Uint32(k) != 7 || int64(binary.BigEndian.Uint64(k[4:])) != base+10_000 {
		t.Errorf("after the restart the window emitted is %x, want key 7's at %d", k, base+10_000)
	}
}

// TestWindowChangelogSoak (SQLSTREAMS_WINDOW_SOAK=1; heavy) aggregates
// 1,000,000 windows (1,000 keys × 1,000 one-second windows, event time
// one second per 1,000 records) and reports the window changelog's size
// and a new instance's restore time, with the changelog deleting after
// the store's retention (1 s + windowstore.changelog.additional.retention.ms
// 0, retention applied every second while it runs) and, for comparison,
// keeping a day:
//
//	SQLSTREAMS_WINDOW_SOAK=1 go test -run TestWindowChangelogSoak -v -timeout 30m ./engine/
func TestWindowChangelogSoak(t *testing.T) {
	if os.Getenv("SQLSTREAMS_WINDOW_SOAK") == "" {
		t.Skip("set SQLSTREAMS_WINDOW_SOAK=1 to run the 1,000,000-window soak")
	}
	for _, extra := range []string{"0", strconv.Itoa(24 * 3600 * 1000)} {
		t.Run("additional="+extra, func(t *testing.T) { windowSoak(t, extra) })
	}
}

func windowSoak(t *testing.T, extra string) {
	const keys, windows = 1000, 1000
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	c, brokers, adm := windowCluster(t)
	stop := make(chan struct{})
	cleaned := make(chan struct{})
	go func() { // the embedded broker's cleaner, every second
		defer close(cleaned)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
				c.ApplyRetention()
			}
		}
	}()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir(), LeaveGroupOnClose: true})
	if err != nil {
		t.Fatal(err)
	}
	s := engine.NewSession()
	for _, stmt := range []string{
		"CREATE STREAM ev (k INT KEY, v INT) WITH (KAFKA_TOPIC='ev', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"SET 'auto.offset.reset'='earliest';",
		"SET 'windowstore.changelog.additional.retention.ms'='" + extra + "';",
		"CREATE TABLE w WITH (KAFKA_TOPIC='w') AS SELECT k, COUNT(*) AS c FROM ev WINDOW TUMBLING (SIZE 1 SECOND, GRACE PERIOD 0 SECONDS) GROUP BY k;",
	} {
		if _, err := eng.Execute(ctx, s, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	const changelog = "sqlstreams_query_CTAS_W_2-AGGREGATE-changelog"
	pc, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("ev"), kgo.ProducerBatchMaxBytes(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	base := began.UnixMilli() / 1000 * 1000
	maxSpan := int64(0)
	for w := 0; w < windows; w++ {
		recs := make([]*kgo.Record, 0, keys)
		for k := 0; k < keys; k++ {
			recs = append(recs, &kgo.Record{Key: intKey(k), Value: []byte(`{"V":1}`), Timestamp: time.UnixMilli(base + int64(w)*1000)})
		}
		if err := pc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if w%100 == 99 {
			n, _ := changelogSpan(t, ctx, adm, changelog)
			maxSpan = max(maxSpan, n)
		}
	}
	pc.Close()
	// Every record processed: the last window's rows are in the output.
	total := keys * windows
	consumeCount(t, ctx, brokers, "w", total)
	took := time.Since(began)
	// The restart comes within the retention: the cleaner stops, the
	// changelog holds what it held.
	close(stop)
	<-cleaned
	eng.Close()
	span, start := changelogSpan(t, ctx, adm, changelog)
	// A new instance restores the store: the time to its first output
	// record (the restore, then one record).
	ends, err := adm.ListEndOffsets(ctx, "w")
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup("w", 0)
	began = time.Now()
	eng, err = engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i2", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	produce(t, ctx, brokers, "ev", &kgo.Record{Key: intKey(0), Value: []byte(`{"V":1}`), Timestamp: time.UnixMilli(base + windows*1000)})
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"w": {0: kgo.NewOffset().At(end.Offset)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for n := 0; n == 0; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("no output after the restart")
		}
		n = fs.NumRecords()
	}
	restore := time.Since(began)
	t.Logf("additional retention %s ms: %d windows in %s; changelog at most %d offsets while running (sampled), %d at the end (start %d); a new instance's restore and first record %s",
		extra, total, took.Round(time.Millisecond), maxSpan, span, start, restore.Round(time.Millisecond))
	fmt.Fprintf(os.Stderr, "SOAK additional=%s windows=%d took=%s changelog_max=%d changelog_end=%d restore=%s\n", extra, total, took.Round(time.Millisecond), maxSpan, span, restore.Round(time.Millisecond))
}

// consumeCount reads topic from its start (read_committed) until it has
// read n records.
func consumeCount(t *testing.T, ctx context.Context, brokers []string, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := 0
	for got < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: %d records, want %d", topic, got, n)
		}
		got += fs.NumRecords()
	}
}
