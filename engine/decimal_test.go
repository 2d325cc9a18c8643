package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
)

// TestDecimalSumByCommand checks that a query replayed from a command
// recorded before SUM followed ksqlDB's DECIMAL rules keeps SUM(DECIMAL(4,
// 2)) as DECIMAL(18, 2), so 60.00 + 50.00 is 110.00, and that GREATEST over
// INT and BIGINT still binds; the same statements run now sum into
// DECIMAL(4, 2), where 110.00 overflows and its record is skipped, and
// refuse the GREATEST as ksqlDB does.
func TestDecimalSumByCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	props := map[string]string{"auto.offset.reset": "earliest", "sqlstreams.generated.aliases": "ksql"}
	eng, brokers := replayOld(t, ctx, props,
		"CREATE STREAM s (id INT KEY, n INT, b BIGINT, d DECIMAL(4, 2)) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE TABLE old_sum WITH (KAFKA_TOPIC='old_sum') AS SELECT id, SUM(d) AS s FROM s GROUP BY id;",
		"CREATE STREAM old_g WITH (KAFKA_TOPIC='old_g') AS SELECT id, GREATEST(n, b) AS g FROM s;",
	)
	sess := engine.NewSession()
	for _, stmt := range []string{
		"SET 'auto.offset.reset'='earliest';",
		"CREATE TABLE new_sum WITH (KAFKA_TOPIC='new_sum') AS SELECT id, SUM(d) AS s FROM s GROUP BY id;",
	} {
		if _, err := eng.Execute(ctx, sess, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	_, err := eng.Execute(ctx, sess, "CREATE STREAM new_g AS SELECT id, GREATEST(n, b) AS g FROM s;", discard{})
	if err == nil || !strings.Contains(err.Error(), "ambiguous method parameters (INTEGER, BIGINT)") {
		t.Errorf("GREATEST(INT, BIGINT) in a new statement: %v", err)
	}
	produce(t, ctx, brokers, "s",
		&kgo.Record{Key: intKey(1), Value: []byte(`{"N":1,"B":2,"D":60.00}`)},
		&kgo.Record{Key: intKey(1), Value: []byte(`{"N":1,"B":2,"D":50.00}`)},
		&kgo.Record{Key: intKey(2), Value: []byte(`{"N":3,"B":2,"D":1.5}`)})

	for topic, want := range map[string][]string{
		"old_sum": {`{"S":60.00}`, `{"S":110.00}`, `{"S":1.50}`},
		"new_sum": {`{"S":60.00}`, `{"S":1.50}`},
		"old_g":   {`{"G":2}`, `{"G":2}`, `{"G":3}`},
	} {
		got := consume(t, ctx, brokers, topic, len(want))
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s record %d: got %s, want %s", topic, i, got[i], want[i])
			}
		}
	}
	if st, ok := eng.QueryStatus(writerOf(t, eng, "NEW_SUM")); !ok || st.BadRecords != 1 {
		t.Errorf("new_sum's query: %+v %v, want one bad record", st, ok)
	}
}
