package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// TestFormatWithKeyOrValueFormat: FORMAT together with KEY_FORMAT or
// VALUE_FORMAT is refused with ksqlDB's message, for CREATE and CREATE …
// AS; a command recorded before (without a plan) that has both still
// replays, through the migration binding.
func TestFormatWithKeyOrValueFormat(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brokers := kfakeBrokers(t)
	log, err := catalog.OpenCommandLog(ctx, kafka.Plain(brokers...), "sqlstreams", "old")
	if err != nil {
		t.Fatal(err)
	}
	old := "CREATE STREAM old_s (k INT KEY, v INT) WITH (KAFKA_TOPIC='old_s', PARTITIONS=1, KEY_FORMAT='JSON', FORMAT='JSON')"
	if _, err := log.Append(ctx, catalog.Command{Statement: old, Props: map[string]string{}}); err != nil {
		t.Fatal(err)
	}
	log.Close()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	src, ok := eng.Catalog().Source("OLD_S")
	if !ok || src.KeyFormat != "JSON" || src.ValueFormat != "JSON" {
		t.Fatalf("the recorded command did not replay: %+v", src)
	}
	s := engine.NewSession()
	for _, tc := range []struct{ stmt, name string }{
		{"CREATE STREAM f1 (k INT KEY, v INT) WITH (KAFKA_TOPIC='f1', PARTITIONS=1, KEY_FORMAT='KAFKA', FORMAT='JSON')", "KEY_FORMAT"},
		{"CREATE STREAM f2 WITH (KAFKA_TOPIC='f2', VALUE_FORMAT='JSON', FORMAT='KAFKA')", "VALUE_FORMAT"},
		{"CREATE STREAM f3 WITH (KAFKA_TOPIC='f3', VALUE_FORMAT='JSON', FORMAT='JSON') AS SELECT * FROM old_s", "VALUE_FORMAT"},
	} {
		_, err := eng.Execute(ctx, s, tc.stmt, discard{})
		want := "Cannot supply both '" + tc.name + "' and 'FORMAT' properties, as 'FORMAT' sets both key and value formats. Either use just 'FORMAT', or use 'KEY_FORMAT' and 'VALUE_FORMAT'."
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", tc.stmt, err, want)
		}
	}
}
