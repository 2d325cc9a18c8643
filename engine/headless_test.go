package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// TestHeadlessHeaders checks that a query from the queries file behaves
// as the same statement run by a client today: its output records carry
// their input records' headers (sqlstreams.headers.propagate), though a
// headless command is never recorded with properties.
func TestHeadlessHeaders(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers := kfakeBrokers(t)
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir(), Headless: []string{
		"CREATE STREAM s (id INT KEY, v INT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE STREAM out WITH (KAFKA_TOPIC='out') AS SELECT id, v FROM s WHERE v > 0;",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	produce(t, ctx, brokers, "s",
		&kgo.Record{Key: intKey(1), Value: []byte(`{"V":1}`), Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("a1")}, {Key: "x", Value: []byte("y")}}},
		&kgo.Record{Key: intKey(2), Value: []byte(`{"V":-1}`), Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("b2")}}},
		&kgo.Record{Key: intKey(3), Value: []byte(`{"V":3}`), Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("c3")}}},
	)
	got := consumeRecords(t, ctx, brokers, "out", 2)
	want := []string{"trace=a1 x=y", "trace=c3"}
	for i, r := range got {
		var h string
		for j, kv := range r.Headers {
			if j > 0 {
				h += " "
			}
			h += kv.Key + "=" + string(kv.Value)
		}
		if h != want[i] {
			t.Errorf("output record %d (%s): headers %q, want %q", i, r.Value, h, want[i])
		}
	}
}

// TestHeadlessSet: SET and UNSET in the queries file apply to the
// statements after them, as in ksqlDB's headless mode (the server used to
// refuse to start on a SET): a query after SET 'auto.offset.reset' =
// 'latest' reads only the records written after the start, one after the
// UNSET (persistent queries start at the earliest) reads them all, and a stream declared after SET
// 'ksql.persistence.default.format.key' = 'JSON' has JSON keys.
func TestHeadlessSet(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers := kfakeBrokers(t)
	cl, err := kafka.Plain(brokers...).NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "s"); err != nil {
		t.Fatal(err)
	}
	produce(t, ctx, brokers, "s", &kgo.Record{Key: intKey(1), Value: []byte(`{"V":1,"W":1}`)})
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir(), Headless: []string{
		"CREATE STREAM s (id INT KEY, v INT, w INT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON');",
		"SET 'auto.offset.reset'='latest';",
		"SET 'ksql.persistence.default.format.key'='JSON';",
		"CREATE STREAM late WITH (KAFKA_TOPIC='late') AS SELECT id, v FROM s;",
		"CREATE STREAM j (k VARCHAR KEY, v INT) WITH (KAFKA_TOPIC='j', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"UNSET 'auto.offset.reset';",
		"CREATE STREAM early WITH (KAFKA_TOPIC='early') AS SELECT id, v FROM s;",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	if j, _ := eng.Catalog().Source("J"); j == nil || j.KeyFormat != "JSON" {
		t.Errorf("stream J after SET 'ksql.persistence.default.format.key'='JSON': %+v, want JSON keys", j)
	}
	produce(t, ctx, brokers, "s", &kgo.Record{Key: intKey(2), Value: []byte(`{"V":2,"W":2}`)})
	if got := consume(t, ctx, brokers, "early", 2); got[0] != `{"V":1}` || got[1] != `{"V":2}` {
		t.Errorf("early: %q, want the records from before the start and after", got)
	}
	if got := consume(t, ctx, brokers, "late", 1); got[0] != `{"V":2}` {
		t.Errorf("late: %q, want the record after the start only", got)
	}
}

// headlessPlanEntries reads the service's headless plans topic: each
// key's latest entry, and the topic's record count.
func headlessPlanEntries(t *testing.T, ctx context.Context, brokers []string) (map[string]map[string]any, int) {
	t.Helper()
	topic := engine.HeadlessPlansTopic("sqlstreams")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	out := map[string]map[string]any{}
	n := 0
	for int64(n) < end.Offset {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: read %d of %d records", topic, n, end.Offset)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			var e map[string]any
			if err := json.Unmarshal(r.Value, &e); err != nil {
				t.Fatalf("%s at %d: %v", topic, r.Offset, err)
			}
			out[string(r.Key)] = e
		})
	}
	return out, n
}

// TestHeadlessRecordedPlans checks that a headless server builds each
// statement of its queries file from the plan recorded for it at its
// first start (issue 32 point 1: a later build's binding and planning
// cannot change a running query, with or without a command topic): a
// recorded plan that names another changelog is what runs after a
// restart, a start that finds every plan writes none, and a recorded
// plan this build cannot use is planned again and replaced.
func TestHeadlessRecordedPlans(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	brokers := kfakeBrokers(t)
	stmts := []string{
		"CREATE STREAM s (id INT KEY, v INT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE TABLE c AS SELECT id, COUNT(*) AS n FROM s GROUP BY id;",
	}
	start := func() *engine.Engine {
		t.Helper()
		eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir(), Headless: stmts})
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
	start().Close()
	plans, n := headlessPlanEntries(t, ctx, brokers)
	if len(plans) != 2 || n != 2 {
		t.Fatalf("%d plans in %d records after the first start, want 2 and 2: %v", len(plans), n, plans)
	}
	var key string
	var entry map[string]any
	for k, e := range plans {
		if strings.HasPrefix(e["statement"].(string), "CREATE TABLE c") {
			key, entry = k, e
		}
	}
	if entry == nil {
		t.Fatalf("no plan recorded for the CREATE TABLE … AS: %v", plans)
	}
	if entry["statement"] != stmts[1] {
		t.Fatalf("recorded statement %q, want %q", entry["statement"], stmts[1])
	}
	// What a later build's planner would not do: another changelog.
	plan, err := json.Marshal(entry["plan"])
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.ReplaceAll(string(plan), "-AGGREGATE-changelog", "-RECORDED-changelog")
	if edited == string(plan) {
		t.Fatalf("the plan names no AGGREGATE changelog: %s", plan)
	}
	entry["plan"] = json.RawMessage(edited)
	v, err := json.Marshal(entry)
	if err != nil {
		t.Fatal(err)
	}
	topic := engine.HeadlessPlansTopic("sqlstreams")
	produce(t, ctx, brokers, topic, &kgo.Record{Key: []byte(key), Value: v})

	eng := start()
	produce(t, ctx, brokers, "s", &kgo.Record{Key: intKey(1), Value: []byte(`{"V":1}`)}, &kgo.Record{Key: intKey(1), Value: []byte(`{"V":2}`)})
	if got := consumeRecords(t, ctx, brokers, "C", 2); string(got[1].Value) != `{"N":2}` {
		t.Errorf("second count %s, want {\"N\":2}", got[1].Value)
	}
	eng.Close()
	topics := listTopics(t, ctx, kafka.Plain(brokers...))
	recorded := false
	for _, name := range topics.Names() {
		recorded = recorded || strings.HasSuffix(name, "-RECORDED-changelog")
	}
	if !recorded {
		t.Errorf("no -RECORDED-changelog topic: the recorded plan did not run (topics %v)", topics.Names())
	}
	if _, n := headlessPlanEntries(t, ctx, brokers); n != 3 {
		t.Errorf("%d records in %s after a start that found every plan, want 3", n, topic)
	}

	// A plan this build cannot use: planned again, and replaced.
	entry["plan"] = json.RawMessage(`{"version":99}`)
	if v, err = json.Marshal(entry); err != nil {
		t.Fatal(err)
	}
	produce(t, ctx, brokers, topic, &kgo.Record{Key: []byte(key), Value: v})
	start().Close()
	plans, _ = headlessPlanEntries(t, ctx, brokers)
	if p, _ := json.Marshal(plans[key]["plan"]); !strings.Contains(string(p), "-AGGREGATE-changelog") {
		t.Errorf("the unusable plan was not replaced by a new one: %s", p)
	}
}
