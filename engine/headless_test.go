package engine_test

import (
	"context"
	"testing"
	"time"

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
