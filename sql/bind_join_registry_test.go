package sql

import (
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// registryCatalog has co-partitioned streams and tables keyed in the
// schema-registry formats; AT1 and AT2 name their key schemas (IDs 5 and
// 6), AT3 the same as AT1.
func registryCatalog() *catalog.Catalog {
	cat := catalog.New()
	add := func(name string, kind catalog.Kind, format string, schemaID int) {
		cat.AddSource(&catalog.Source{Name: name, Kind: kind, Topic: strings.ToLower(name), KeyFormat: format, ValueFormat: "JSON",
			Partitions: 2, KeyOptions: types.FormatOptions{SchemaID: schemaID},
			Schema: types.Schema{Columns: []types.Column{
				{Name: "ID", Type: types.IntType, Key: true},
				{Name: "V_" + name, Type: types.StringType},
			}}}, false)
	}
	add("AS1", catalog.Stream, types.FormatAvro, 0)
	add("PS1", catalog.Stream, types.FormatProtobuf, 0)
	add("JS1", catalog.Stream, types.FormatJSONSR, 0)
	add("KS1", catalog.Stream, types.FormatKafka, 0)
	add("AT1", catalog.Table, types.FormatAvro, 5)
	add("AT2", catalog.Table, types.FormatAvro, 6)
	add("AT3", catalog.Table, types.FormatAvro, 5)
	add("KT1", catalog.Table, types.FormatKafka, 0)
	return cat
}

// registryJoin binds a CREATE … AS SELECT over a join and returns its
// join node.
func registryJoin(t *testing.T, cat *catalog.Catalog, stmt string) (*planner.Join, error) {
	t.Helper()
	st, err := Parse(stmt)
	if err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
	sink, err := BindCreateAs(st.(*CreateAs), cat)
	if err != nil {
		return nil, err
	}
	var join *planner.Join
	var walk func(n planner.Node)
	walk = func(n planner.Node) {
		if j, ok := n.(*planner.Join); ok && join == nil {
			join = j
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(sink.Input)
	if join == nil {
		t.Fatalf("%s: no join in the plan", stmt)
	}
	return join, nil
}

// TestRegistryKeyJoins checks how joins on keys in the schema-registry
// formats are planned so that keys meet by value: a stream joined key to
// key with a table is still repartitioned (its key then written with the
// table's key schema), both streams of a stream–stream join are, two
// tables INNER or LEFT are joined through the left's key written as the
// right's (the foreign-key join), and RIGHT or FULL joins of tables whose
// keys are written with different schemas are refused. Joins of KAFKA
// keys are planned as before.
func TestRegistryKeyJoins(t *testing.T) {
	cat := registryCatalog()
	for _, c := range []struct {
		stmt  string
		check func(*planner.Join) bool
		err   string
	}{
		{stmt: "CREATE STREAM o AS SELECT s.id, v_at1 FROM as1 s JOIN at1 t ON s.id = t.id;",
			check: func(j *planner.Join) bool { return j.Repartition && !j.Tables && !j.ForeignKey }},
		{stmt: "CREATE STREAM o AS SELECT s.id, v_at1 FROM ps1 s LEFT JOIN at1 t ON s.id = t.id;",
			check: func(j *planner.Join) bool { return j.Repartition }},
		{stmt: "CREATE STREAM o AS SELECT s.id, v_kt1 FROM ks1 s JOIN kt1 t ON s.id = t.id;",
			check: func(j *planner.Join) bool { return !j.Repartition }},
		{stmt: "CREATE STREAM o AS SELECT a.id, v_js1 FROM as1 a JOIN js1 b WITHIN 1 MINUTE ON a.id = b.id;",
			check: func(j *planner.Join) bool { return j.Window != nil && j.Repartition && j.RepartitionRight }},
		{stmt: "CREATE STREAM o AS SELECT ROWKEY, v_as1 FROM js1 a FULL OUTER JOIN as1 b WITHIN 1 MINUTE ON a.id = b.id;",
			check: func(j *planner.Join) bool { return j.Repartition && j.RepartitionRight }},
		{stmt: "CREATE TABLE o AS SELECT a.id, v_at2 FROM at1 a JOIN at2 b ON a.id = b.id;",
			check: func(j *planner.Join) bool { return j.ForeignKey }},
		{stmt: "CREATE TABLE o AS SELECT a.id, v_at2 FROM at1 a LEFT JOIN at2 b ON a.id = b.id;",
			check: func(j *planner.Join) bool { return j.ForeignKey }},
		{stmt: "CREATE TABLE o AS SELECT ROWKEY, v_at3 FROM at1 a FULL OUTER JOIN at3 b ON a.id = b.id;",
			check: func(j *planner.Join) bool { return j.Tables && j.Type == planner.FullJoin }},
		{stmt: "CREATE TABLE o AS SELECT b.id, v_at2 FROM at1 a RIGHT JOIN at2 b ON a.id = b.id;",
			err: "RIGHT OUTER JOIN of tables whose AVRO keys are written with different schemas (IDs 5 and 6) is not supported"},
		{stmt: "CREATE TABLE o AS SELECT ROWKEY, v_at2 FROM at1 a FULL OUTER JOIN at2 b ON a.id = b.id;",
			err: "FULL OUTER JOIN of tables whose AVRO keys are written with different schemas"},
	} {
		j, err := registryJoin(t, cat, c.stmt)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: got error %v, want %q", c.stmt, err, c.err)
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.stmt, err)
		case c.err == "" && !c.check(j):
			t.Errorf("%s: planned as %s (repartition %v/%v, tables %v, foreign key %v)", c.stmt, j, j.Repartition, j.RepartitionRight, j.Tables, j.ForeignKey)
		}
	}
}
