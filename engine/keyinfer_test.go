package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/types"
)

// TestKeyInferenceByCommand checks that a CREATE STREAM whose AVRO key
// columns are inferred from a record schema gets ksqlDB's one key column
// ROWKEY STRUCT<…> when it runs now, while the same statement replayed
// from a command recorded before (without sqlstreams.key.inference) keeps
// a key column per field, so that queries over it keep their output.
func TestKeyInferenceByCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers, schemas := registryCluster(ctx, t)
	keySchema := `{"type":"record","name":"Key","fields":[{"name":"k","type":"string"},{"name":"n","type":["null","int"]}]}`
	id, err := schemas.Register("k-key", types.RegisteredSchema{Type: types.SchemaTypeAvro, Text: keySchema})
	if err != nil {
		t.Fatal(err)
	}

	log, err := catalog.OpenCommandLog(ctx, kafka.Plain(brokers...), "sqlstreams", "old")
	if err != nil {
		t.Fatal(err)
	}
	old := catalog.Command{
		Statement:   "CREATE STREAM old_s (v INT) WITH (KAFKA_TOPIC='k', KEY_FORMAT='AVRO', VALUE_FORMAT='JSON', PARTITIONS=1);",
		Props:       map[string]string{"sqlstreams.generated.aliases": "ksql", "sqlstreams.null.comparison": "ksql"},
		KeySchemaID: id,
	}
	if _, err := log.Append(ctx, old); err != nil {
		t.Fatal(err)
	}
	log.Close()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir(), Schemas: schemas})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	stmt := "CREATE STREAM new_s (v INT) WITH (KAFKA_TOPIC='k', KEY_FORMAT='AVRO', VALUE_FORMAT='JSON');"
	if _, err := eng.Execute(ctx, engine.NewSession(), stmt, discard{}); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	keys := func(name string) string {
		src, ok := eng.Catalog().Source(name)
		if !ok {
			t.Fatalf("no source %s", name)
		}
		var out string
		for _, i := range src.Schema.KeyIndexes() {
			c := src.Schema.Columns[i]
			out += c.Name + " " + c.Type.String() + "; "
		}
		return out
	}
	for name, want := range map[string]string{
		"OLD_S": "K STRING; N INTEGER; ",
		"NEW_S": "ROWKEY STRUCT<K STRING, N INTEGER>; ",
	} {
		if got := keys(name); got != want {
			t.Errorf("%s key columns: got %q, want %q", name, got, want)
		}
	}
}
