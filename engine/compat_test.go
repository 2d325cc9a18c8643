package engine_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
)

// TestTimestampsAndConfigsByCommand checks that queries replayed from
// commands recorded before sqlstreams skipped negative event times,
// honoured ksql.persistence.wrap.single.values and emitted EMIT FINAL as
// Kafka Streams' onWindowClose keep their output (the record with a
// negative sink timestamp written, the single value wrapped, every
// closed window emitted at a commit), while the same statements run now
// skip the record and unwrap the value, as ksqlDB does, and emit each
// window as the record closing it comes — the one stream time jumped
// over too, which ksqlDB misses (past the store's retention).
func TestTimestampsAndConfigsByCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	props := map[string]string{"auto.offset.reset": "earliest", "sqlstreams.generated.aliases": "ksql",
		"sqlstreams.null.comparison": "ksql", "ksql.persistence.wrap.single.values": "false"}
	eng, brokers := replayOld(t, ctx, props,
		"CREATE STREAM s (id INT KEY, n BIGINT, name STRING) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE STREAM old_ts WITH (KAFKA_TOPIC='old_ts', TIMESTAMP='n') AS SELECT id, n FROM s;",
		"CREATE STREAM old_names WITH (KAFKA_TOPIC='old_names') AS SELECT id, name FROM s;",
		"CREATE TABLE old_final WITH (KAFKA_TOPIC='old_final') AS SELECT id, COUNT(*) AS c FROM s WINDOW TUMBLING (SIZE 10 MILLISECONDS, GRACE PERIOD 0 SECONDS) GROUP BY id EMIT FINAL;",
	)
	sess := engine.NewSession()
	for _, stmt := range []string{
		"SET 'auto.offset.reset'='earliest';",
		"SET 'ksql.persistence.wrap.single.values'='false';",
		"CREATE STREAM new_ts WITH (KAFKA_TOPIC='new_ts', TIMESTAMP='n') AS SELECT id, n FROM s;",
		"CREATE STREAM new_names WITH (KAFKA_TOPIC='new_names') AS SELECT id, name FROM s;",
		"CREATE TABLE new_final WITH (KAFKA_TOPIC='new_final') AS SELECT id, COUNT(*) AS c FROM s WINDOW TUMBLING (SIZE 10 MILLISECONDS, GRACE PERIOD 0 SECONDS) GROUP BY id EMIT FINAL;",
	} {
		if _, err := eng.Execute(ctx, sess, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	produce(t, ctx, brokers, "s",
		&kgo.Record{Key: intKey(1), Value: []byte(`{"N":-2,"NAME":"a"}`), Timestamp: time.UnixMilli(1)},
		&kgo.Record{Key: intKey(2), Value: []byte(`{"N":7,"NAME":"b"}`), Timestamp: time.UnixMilli(45)},
		&kgo.Record{Key: intKey(2), Value: []byte(`{"N":8,"NAME":"c"}`), Timestamp: time.UnixMilli(52)})

	for topic, want := range map[string][]string{
		"old_ts":    {`{"N":-2} ts=-2`, `{"N":7} ts=7`, `{"N":8} ts=8`},
		"new_ts":    {`7 ts=7`, `8 ts=8`}, // one value column: unwrapped too
		"old_names": {`{"NAME":"a"}`, `{"NAME":"b"}`, `{"NAME":"c"}`},
		"new_names": {`"a"`, `"b"`, `"c"`},
		// Window [0, 10) of id 1 closed when stream time jumped to 45.
		"old_final": {`{"C":1} window=0`, `{"C":1} window=40`},
		"new_final": {`1 window=0`, `1 window=40`},
	} {
		got := consumeRecords(t, ctx, brokers, topic, len(want))
		for i := range want {
			g := string(got[i].Value)
			switch topic {
			case "old_ts", "new_ts":
				g += fmt.Sprintf(" ts=%d", got[i].Timestamp.UnixMilli())
			case "old_final", "new_final":
				g += fmt.Sprintf(" window=%d", binary.BigEndian.Uint64(got[i].Key[len(got[i].Key)-8:]))
			}
			if g != want[i] {
				t.Errorf("%s record %d: got %s, want %s", topic, i, g, want[i])
			}
		}
	}
}

// consumeRecords reads n committed records of topic from its start.
func consumeRecords(t *testing.T, ctx context.Context, brokers []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: got %d records, want %d", topic, len(out), n)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}
