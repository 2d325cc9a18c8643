package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
)

// TestJoinsV3ByCommand checks that stream–stream joins replayed from
// commands recorded under the second revision of join planning
// (sqlstreams.joins=2) keep their stores' layout and output, while the
// same statements run now (sqlstreams.joins=3) follow ksqlDB: a header
// column of a stored row comes back NULL before and with its value now,
// and after PARTITION BY the right's key column read the join key before
// and reads its own value now.
func TestJoinsV3ByCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	props := map[string]string{"auto.offset.reset": "earliest", "sqlstreams.generated.aliases": "ksql", "sqlstreams.null.comparison": "ksql",
		"sqlstreams.join.keys": "ksql", "sqlstreams.headers.propagate": "true", "sqlstreams.joins": "2"}
	const join = "SELECT l.a, l.b, l.c, r.b AS rb, r.c AS rc FROM l JOIN r WITHIN 10 SECONDS ON l.a = r.a;"
	const byA = "SELECT l.a AS la, r.a AS ra, r.b AS rb FROM l JOIN r WITHIN 10 SECONDS ON l.b = r.b PARTITION BY l.a;"
	eng, brokers := replayOld(t, ctx, props,
		"CREATE STREAM l (a INT KEY, b INT, c BYTES HEADER('abc')) WITH (KAFKA_TOPIC='l', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE STREAM r (a INT KEY, b INT, c BYTES HEADER('def')) WITH (KAFKA_TOPIC='r', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE STREAM old_q WITH (KAFKA_TOPIC='old_q') AS "+join,
		"CREATE STREAM old_pb WITH (KAFKA_TOPIC='old_pb') AS "+byA,
	)
	sess := engine.NewSession()
	for _, stmt := range []string{
		"SET 'auto.offset.reset'='earliest';",
		"CREATE STREAM new_q WITH (KAFKA_TOPIC='new_q') AS " + join,
		"CREATE STREAM new_pb WITH (KAFKA_TOPIC='new_pb') AS " + byA,
	} {
		if _, err := eng.Execute(ctx, sess, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	// The left row is stored; the right row meets it in the store.
	produce(t, ctx, brokers, "l", &kgo.Record{Key: intKey(0), Value: []byte(`{"B":1}`), Timestamp: time.UnixMilli(10),
		Headers: []kgo.RecordHeader{{Key: "abc", Value: []byte("!")}}})
	produce(t, ctx, brokers, "r", &kgo.Record{Key: intKey(0), Value: []byte(`{"B":-1}`), Timestamp: time.UnixMilli(11),
		Headers: []kgo.RecordHeader{{Key: "def", Value: []byte("#")}}})
	// A right row of another key with the left row's B.
	produce(t, ctx, brokers, "r", &kgo.Record{Key: intKey(5), Value: []byte(`{"B":1}`), Timestamp: time.UnixMilli(12)})
	for topic, want := range map[string]string{
		"old_q":  `{"L_B":1,"L_C":null,"RB":-1,"RC":"Iw=="}`,
		"new_q":  `{"L_B":1,"L_C":"IQ==","RB":-1,"RC":"Iw=="}`,
		"old_pb": `{"RA":1,"RB":1}`,
		"new_pb": `{"RA":5,"RB":1}`,
	} {
		if got := consume(t, ctx, brokers, topic, 1); got[0] != want {
			t.Errorf("%s: got %s, want %s", topic, got[0], want)
		}
	}
}
