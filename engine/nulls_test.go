package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
)

// TestNullComparisonsByCommand checks that a query replayed from a
// command recorded before sqlstreams followed ksqlDB's NULL comparisons
// keeps SQL's (n = 5 is NULL for a NULL n) and the DECIMAL(p-s+1, 0) that
// FLOOR of a DECIMAL had, while the same statement run now answers as
// ksqlDB does (FALSE, TRUE for NOT IN; FLOOR keeps DECIMAL(4, 2)).
func TestNullComparisonsByCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The commands an earlier version wrote: no null-comparison property.
	props := map[string]string{"auto.offset.reset": "earliest", "sqlstreams.generated.aliases": "ksql"}
	eng, brokers := replayOld(t, ctx, props,
		"CREATE STREAM s (id INT KEY, n INT, d DECIMAL(4, 2)) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE STREAM old_q WITH (KAFKA_TOPIC='old_q') AS SELECT id, n = 5 AS eq, n NOT IN (1, 2) AS notin, FLOOR(d) AS f FROM s;",
	)
	sess := engine.NewSession()
	for _, stmt := range []string{
		"SET 'auto.offset.reset'='earliest';",
		"CREATE STREAM new_q WITH (KAFKA_TOPIC='new_q') AS SELECT id, n = 5 AS eq, n NOT IN (1, 2) AS notin, FLOOR(d) AS f FROM s;",
	} {
		if _, err := eng.Execute(ctx, sess, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	produce(t, ctx, brokers, "s",
		&kgo.Record{Key: intKey(1), Value: []byte(`{"N":null,"D":1.25}`)},
		&kgo.Record{Key: intKey(2), Value: []byte(`{"N":5,"D":-1.25}`)})

	for topic, want := range map[string][]string{
		"old_q": {`{"EQ":null,"NOTIN":null,"F":1}`, `{"EQ":true,"NOTIN":true,"F":-2}`},
		"new_q": {`{"EQ":false,"NOTIN":true,"F":1.00}`, `{"EQ":true,"NOTIN":true,"F":-2.00}`},
	} {
		got := consume(t, ctx, brokers, topic, len(want))
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s record %d: got %s, want %s", topic, i, got[i], want[i])
			}
		}
	}
}

// consume reads n record values of topic from its start.
func consume(t testing.TB, ctx context.Context, brokers []string, topic string, n int) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []string
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: got %d records %v, want %d", topic, len(out), out, n)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, string(r.Value)) })
	}
	return out
}
