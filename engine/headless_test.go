package engine_test

import (
	"context"
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
