package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
)

// TestJoinKeysByCommand checks that a join query replayed from a command
// recorded before sqlstreams followed ksqlDB's key rules for joins keeps
// its columns (SELECT l.* shows the column the repartition by ABS(l.k)
// added; r.k stays a value column), and that one a projection without
// the join key was accepted for still runs, while the same statements
// run now follow ksqlDB: the right's join column is the key, and the
// projection without a join column is refused.
func TestJoinKeysByCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The commands an earlier version wrote: no join-keys property.
	props := map[string]string{"auto.offset.reset": "earliest", "sqlstreams.generated.aliases": "ksql", "sqlstreams.null.comparison": "ksql"}
	oldQ := "CREATE STREAM old_q WITH (KAFKA_TOPIC='old_q') AS SELECT l.*, r.* FROM l JOIN r WITHIN 1 MINUTE ON ABS(l.k) = r.k;"
	eng, brokers := replayOld(t, ctx, props,
		"CREATE STREAM l (k INT KEY, b INT) WITH (KAFKA_TOPIC='l', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE STREAM r (k INT KEY, c INT) WITH (KAFKA_TOPIC='r', VALUE_FORMAT='JSON', PARTITIONS=1);",
		oldQ,
	)
	sess := engine.NewSession()
	for _, stmt := range []string{
		"SET 'auto.offset.reset'='earliest';",
		"CREATE STREAM new_q WITH (KAFKA_TOPIC='new_q') AS SELECT l.*, r.* FROM l JOIN r WITHIN 1 MINUTE ON ABS(l.k) = r.k;",
	} {
		if _, err := eng.Execute(ctx, sess, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if _, err := eng.Execute(ctx, sess, "CREATE STREAM bad AS SELECT l.b, r.c FROM l JOIN r WITHIN 1 MINUTE ON ABS(l.k) = r.k;", discard{}); err == nil {
		t.Error("a join projection without the join key was accepted")
	}
	produce(t, ctx, brokers, "l", &kgo.Record{Key: intKey(-1), Value: []byte(`{"B":1}`), Timestamp: time.UnixMilli(1)})
	produce(t, ctx, brokers, "r", &kgo.Record{Key: intKey(1), Value: []byte(`{"C":2}`), Timestamp: time.UnixMilli(2)})

	for topic, want := range map[string]string{
		"old_q": `{"L_K":-1,"L_B":1,"R_K":1,"R_C":2}`,
		"new_q": `{"L_K":-1,"L_B":1,"R_C":2}`,
	} {
		if got := consume(t, ctx, brokers, topic, 1); got[0] != want {
			t.Errorf("%s: got %s, want %s", topic, got[0], want)
		}
	}
}
