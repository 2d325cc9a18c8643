package engine_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
)

// TestSumByCommand checks that a SUM replayed from a command recorded
// before sqlstreams.sum stays NULL for a group whose values are all NULL
// (a LEFT join's missing side), while the same statement run now gives
// 0, as ksqlDB's SUM does.
func TestSumByCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	props := map[string]string{"auto.offset.reset": "earliest", "sqlstreams.generated.aliases": "ksql", "sqlstreams.null.comparison": "ksql",
		"sqlstreams.join.keys": "ksql", "sqlstreams.functions": "ksql", "sqlstreams.joins": "3"}
	const sum = "SELECT t1.id, SUM(t2.total) AS s FROM t1 LEFT JOIN t2 ON t1.id = t2.id GROUP BY t1.id;"
	eng, brokers := replayOld(t, ctx, props,
		"CREATE TABLE t1 (id BIGINT PRIMARY KEY, total INT) WITH (KAFKA_TOPIC='t1', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE TABLE t2 (id BIGINT PRIMARY KEY, total INT) WITH (KAFKA_TOPIC='t2', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE TABLE old_q WITH (KAFKA_TOPIC='old_q') AS "+sum,
	)
	sess := engine.NewSession()
	for _, stmt := range []string{
		"SET 'auto.offset.reset'='earliest';",
		"CREATE TABLE new_q WITH (KAFKA_TOPIC='new_q') AS " + sum,
	} {
		if _, err := eng.Execute(ctx, sess, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	produce(t, ctx, brokers, "t1", &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, 0), Value: []byte(`{"TOTAL":100}`)})
	produce(t, ctx, brokers, "t2", &kgo.Record{Key: binary.BigEndian.AppendUint64(nil, 0), Value: []byte(`{"TOTAL":5}`)})
	for topic, want := range map[string][]string{
		"old_q": {`{"S":null}`, `{"S":5}`},
		"new_q": {`{"S":0}`, `{"S":5}`},
	} {
		got := consume(t, ctx, brokers, topic, 2)
		if got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: got %q, want %q", topic, got, want)
		}
	}
}
