package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
)

// TestJoinsByCommand checks that a foreign-key join under a WHERE
// replayed from a command recorded before the sqlstreams.joins property
// keeps its output (a joined row that stops passing the WHERE stays),
// while the same statement run now deletes the row downstream.
func TestJoinsByCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// The commands an earlier version wrote: no joins property.
	props := map[string]string{"auto.offset.reset": "earliest", "sqlstreams.generated.aliases": "ksql", "sqlstreams.null.comparison": "ksql"}
	const join = "SELECT i.id, title FROM items i JOIN cats c ON i.cat = c.id WHERE live;"
	eng, brokers := replayOld(t, ctx, props,
		"CREATE TABLE items (id VARCHAR PRIMARY KEY, cat VARCHAR) WITH (KAFKA_TOPIC='items', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE TABLE cats (id VARCHAR PRIMARY KEY, title VARCHAR, live BOOLEAN) WITH (KAFKA_TOPIC='cats', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE TABLE old_q WITH (KAFKA_TOPIC='old_q') AS "+join,
	)
	sess := engine.NewSession()
	for _, stmt := range []string{
		"SET 'auto.offset.reset'='earliest';",
		"CREATE TABLE new_q WITH (KAFKA_TOPIC='new_q') AS " + join,
	} {
		if _, err := eng.Execute(ctx, sess, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	produce(t, ctx, brokers, "cats", &kgo.Record{Key: []byte("c1"), Value: []byte(`{"TITLE":"one","LIVE":true}`)})
	produce(t, ctx, brokers, "items", &kgo.Record{Key: []byte("i1"), Value: []byte(`{"CAT":"c1"}`)})
	want := `{"TITLE":"one"}`
	for _, topic := range []string{"old_q", "new_q"} {
		if got := consume(t, ctx, brokers, topic, 1); got[0] != want {
			t.Fatalf("%s: got %s, want %s", topic, got[0], want)
		}
	}
	// c1 stops being live: the new query deletes i1's row.
	produce(t, ctx, brokers, "cats", &kgo.Record{Key: []byte("c1"), Value: []byte(`{"TITLE":"one","LIVE":false}`)})
	if got := consume(t, ctx, brokers, "new_q", 2); got[1] != "" {
		t.Fatalf("new_q: got %q after the filter stopped passing, want a tombstone", got)
	}
	// A row that passes, after it: the old query wrote no tombstone
	// before it.
	produce(t, ctx, brokers, "cats", &kgo.Record{Key: []byte("c2"), Value: []byte(`{"TITLE":"two","LIVE":true}`)})
	produce(t, ctx, brokers, "items", &kgo.Record{Key: []byte("i2"), Value: []byte(`{"CAT":"c2"}`)})
	got := consume(t, ctx, brokers, "old_q", 2)
	if got[1] != `{"TITLE":"two"}` {
		t.Errorf("old_q: got %q, want i1's row, then i2's (no tombstone: its output stays as it was)", got)
	}
}
