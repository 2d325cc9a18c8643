package engine_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
)

// TestResultChange checks what Execute reports a catalog-changing
// statement created or changed: the query it started, the source and
// its topic, and the command's offset; servers build their answers from
// it instead of comparing the catalog before and after.
func TestResultChange(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, _ := openPullEngine(t, ctx)
	sess := engine.NewSession()
	run := func(text string) *engine.Change {
		t.Helper()
		st, err := sql.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		res, err := eng.ExecuteStatement(ctx, sess, st, &collect{})
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if res.Change == nil {
			t.Fatalf("%s: no Change", text)
		}
		return res.Change
	}
	last := int64(-1)
	check := func(text string, want engine.Change, recorded bool) {
		t.Helper()
		got := run(text)
		if recorded {
			if got.Offset <= last {
				t.Errorf("%s: offset %d, want after %d", text, got.Offset, last)
			}
			last = got.Offset
		} else if got.Offset != -1 {
			t.Errorf("%s: offset %d, want -1 (nothing recorded)", text, got.Offset)
		}
		got.Offset, want.Offset = 0, 0
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", text, *got, want)
		}
	}
	check("CREATE STREAM s (id INT KEY, v INT) WITH (KAFKA_TOPIC='s_topic', VALUE_FORMAT='JSON', PARTITIONS=1)",
		engine.Change{Source: "S", Kind: catalog.Stream, Topic: "s_topic"}, true)
	check("CREATE STREAM IF NOT EXISTS s (id INT KEY) WITH (KAFKA_TOPIC='other', VALUE_FORMAT='JSON', PARTITIONS=1)",
		engine.Change{Source: "S", Kind: catalog.Stream, Topic: "s_topic", Existed: true}, false)
	csas := run("CREATE STREAM t AS SELECT * FROM s")
	if csas.Source != "T" || csas.Topic != "T" || csas.QueryID == "" || csas.Existed {
		t.Errorf("CSAS: %+v", *csas)
	}
	if q, ok := eng.Catalog().Query(csas.QueryID); !ok || q.Sink != "T" {
		t.Errorf("CSAS reported query %q, which is not in the catalog writing T", csas.QueryID)
	}
	ins := run("INSERT INTO t SELECT * FROM s")
	if ins.Source != "T" || ins.Kind != catalog.Stream || ins.QueryID == "" || ins.QueryID == csas.QueryID {
		t.Errorf("INSERT INTO … SELECT: %+v", *ins)
	}
	check("TERMINATE "+ins.QueryID, engine.Change{Queries: []string{ins.QueryID}}, true)
	check("TERMINATE "+csas.QueryID, engine.Change{Queries: []string{csas.QueryID}}, true)
	check("DROP STREAM t", engine.Change{Source: "T", Kind: catalog.Stream, Topic: "T", Existed: true}, true)
	check("DROP STREAM IF EXISTS t", engine.Change{Source: "T", Kind: catalog.Stream}, false)
	ctas := run("CREATE TABLE u (id INT PRIMARY KEY, v INT) WITH (KAFKA_TOPIC='u_topic', VALUE_FORMAT='JSON', PARTITIONS=1)")
	if ctas.Source != "U" || ctas.Kind != catalog.Table || ctas.QueryID == "" {
		t.Errorf("CREATE TABLE: %+v, want the query keeping its state", *ctas)
	}
	// Statements that change no catalog report no Change.
	res, err := eng.Execute(ctx, sess, "SET 'auto.offset.reset'='earliest'", &collect{})
	if err != nil || res.Change != nil {
		t.Errorf("SET: %+v, %v", res, err)
	}
}
