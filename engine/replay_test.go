package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// replayOld starts an embedded broker whose command topic holds stmts as
// an earlier version recorded them, with props (without the property of
// the behaviour under test), and opens an engine on it, which replays
// their queries as they ran then. It returns the engine and the broker's
// addresses; both close when the test ends.
func replayOld(t *testing.T, ctx context.Context, props map[string]string, stmts ...string) (*engine.Engine, []string) {
	t.Helper()
	brokers := kfakeBrokers(t)
	log, err := catalog.OpenCommandLog(ctx, kafka.Plain(brokers...), "sqlstreams", "old")
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range stmts {
		if _, err := log.Append(ctx, catalog.Command{Statement: stmt, Props: props}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	return eng, brokers
}

// writerOf returns the ID of the query that writes sink (query IDs
// derive from command offsets, which migration commands move).
func writerOf(t *testing.T, eng *engine.Engine, sink string) string {
	t.Helper()
	for _, q := range eng.Catalog().Queries() {
		if strings.EqualFold(q.Sink, sink) {
			return q.ID
		}
	}
	t.Fatalf("no query writes %s", sink)
	return ""
}
