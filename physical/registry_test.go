package physical_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// TestRegistryKeyJoinTopologies pins what joins on keys in the
// schema-registry formats add to their topologies: the subjects their
// internal topics' key schemas are registered under (<topic>-key, never
// a source's subject), a stream–table join's table kept by key value,
// and a stream–stream join writing both sides with the schema made from
// the key column. Running queries depend on these names.
func TestRegistryKeyJoinTopologies(t *testing.T) {
	cat := catalog.New()
	add := func(name string, kind catalog.Kind, schemaID int) {
		cat.AddSource(&catalog.Source{Name: name, Kind: kind, Topic: name, KeyFormat: types.FormatAvro, ValueFormat: "JSON", Partitions: 2,
			KeyOptions: types.FormatOptions{SchemaID: schemaID, Subject: name + "-key"},
			Schema: types.Schema{Columns: []types.Column{
				{Name: "ID", Type: types.IntType, Key: true},
				{Name: "V_" + name, Type: types.IntType},
			}}}, false)
	}
	add("S", catalog.Stream, 3)
	add("S2", catalog.Stream, 0)
	add("T", catalog.Table, 4)
	add("U", catalog.Table, 0)
	build := func(id, stmt string) *physical.Topology {
		t.Helper()
		st, err := sql.Parse(stmt)
		if err != nil {
			t.Fatal(err)
		}
		sink, err := sql.BindCreateAs(st.(*sql.CreateAs), cat)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		topo, err := physical.Build(physical.AppID("sqlstreams", id), sink)
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	ops := func(topo *physical.Topology) map[string]physical.Op {
		m := map[string]physical.Op{}
		for _, n := range topo.Nodes {
			m[n.Name] = n.Op
		}
		return m
	}

	// Stream–table: the stream repartitioned with the table's key
	// schema (ID 4) under the topic's own subject; the table's rows kept
	// by key value.
	m := ops(build("CSAS_O_1", "CREATE STREAM o AS SELECT s.id, v_t FROM s JOIN t ON s.id = t.id;"))
	rep, ok := m["REPARTITION-JOIN-T"].(*physical.Repartition)
	if !ok {
		t.Fatalf("no REPARTITION-JOIN-T in %v", m)
	}
	if rep.KeyFormat != types.FormatAvro || rep.KeyOptions.SchemaID != 4 || rep.KeyOptions.Subject != "sqlstreams_query_CSAS_O_1-JOIN-T-repartition-key" {
		t.Errorf("repartition key: %s %+v", rep.KeyFormat, rep.KeyOptions)
	}
	if rep.KeyLatestOf != "T-key" {
		t.Errorf("repartition keys follow subject %q, want the table's T-key", rep.KeyLatestOf)
	}
	if src := m["SOURCE-T"].(*physical.Source); !src.KeyByValue {
		t.Error("the table's source does not key its rows by value")
	}
	if j := m["JOIN-T"].(*physical.StreamTableJoin); j.Store.KeyFormat != physical.ByValueKey || j.Store.KeyOptions.SchemaID != 0 {
		t.Errorf("the table's store keys: %s %+v", j.Store.KeyFormat, j.Store.KeyOptions)
	}

	// Stream–stream: both sides repartitioned with the key column's own
	// schema, each under its topic's subject.
	m = ops(build("CSAS_O_2", "CREATE STREAM o AS SELECT s.id, v_s2 FROM s JOIN s2 WITHIN 1 MINUTE ON s.id = s2.id;"))
	for _, side := range []string{"LEFT", "RIGHT"} {
		rep, ok := m["REPARTITION-JOIN-S2-"+side].(*physical.Repartition)
		if !ok {
			t.Fatalf("no REPARTITION-JOIN-S2-%s in %v", side, m)
		}
		if want := "sqlstreams_query_CSAS_O_2-JOIN-S2-" + side + "-repartition-key"; rep.KeyOptions.Subject != want || rep.KeyOptions.SchemaID != 0 {
			t.Errorf("%s repartition key options %+v, want subject %s and no schema ID", side, rep.KeyOptions, want)
		}
	}

	if j := m["JOIN-S2"].(*physical.StreamStreamJoin); !j.KeyByValue {
		t.Error("the stream-stream join does not key its stored rows by value")
	}

	// Table–table LEFT: the foreign-key join on the key, its foreign
	// keys' schema registered under the registration topic's subject.
	m = ops(build("CTAS_O_3", "CREATE TABLE o AS SELECT t.id, v_u FROM t LEFT JOIN u ON t.id = u.id;"))
	fk, ok := m["JOIN-U"].(*physical.ForeignKeyJoin)
	if !ok {
		t.Fatalf("no foreign-key JOIN-U in %v", m)
	}
	if want := fk.Registration + "-key"; fk.RightKeyOpts.Subject != want {
		t.Errorf("foreign key subject %s, want %s", fk.RightKeyOpts.Subject, want)
	}
	if fk.RightSource.KeyOptions.Subject != "U-key" {
		t.Errorf("the right's source reads subject %s", fk.RightSource.KeyOptions.Subject)
	}
}
