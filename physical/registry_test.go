package physical_test

import (
	"slices"
	"strings"
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
	legacy := true // as commands recorded before sqlstreams.joins=4
	build := func(id, stmt string) *physical.Topology {
		t.Helper()
		st, err := sql.Parse(stmt)
		if err != nil {
			t.Fatal(err)
		}
		st.(*sql.CreateAs).Select.LegacyJoins3 = legacy
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
	if _, ok := m["SOURCE-U"].(*physical.Source); !ok {
		t.Errorf("the right table is not read from its topic: %v", m)
	}
}

// TestRegistryKeyTableRepartition pins what the fourth revision of join
// planning adds to joins on a table in a schema-registry key format: the
// table is repartitioned (<appid>-JOIN-<table>-TABLE-repartition for a
// stream–table join, <appid>-KTABLE-FK-JOIN-<right>-TABLE-repartition for
// a foreign-key join), its keys written with the same key schema as the
// stream's repartition or the foreign keys (not the table subject's
// latest), and the join's store of the table restores from that topic.
func TestRegistryKeyTableRepartition(t *testing.T) {
	cat := catalog.New()
	add := func(name string, kind catalog.Kind, schemaID int) {
		cat.AddSource(&catalog.Source{Name: name, Kind: kind, Topic: name, KeyFormat: types.FormatAvro, ValueFormat: "JSON", Partitions: 3,
			KeyOptions: types.FormatOptions{SchemaID: schemaID, Subject: name + "-key"},
			Schema: types.Schema{Columns: []types.Column{
				{Name: "ID", Type: types.IntType, Key: true},
				{Name: "V_" + name, Type: types.IntType},
			}}}, false)
	}
	add("S", catalog.Stream, 0)
	add("T", catalog.Table, 0)
	add("U", catalog.Table, 0)
	var topics []string // the last build's internal topics
	build := func(id, stmt string) map[string]physical.Op {
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
		m := map[string]physical.Op{}
		for _, n := range topo.Nodes {
			m[n.Name] = n.Op
		}
		topics = nil
		for _, it := range topo.InternalTopics() {
			topics = append(topics, it.Name)
			if strings.HasSuffix(it.Name, "-TABLE-repartition") && (!it.Compact || it.Partitions != 3) {
				t.Errorf("%s: %+v, want compacted with the table's 3 partitions", it.Name, it)
			}
		}
		return m
	}

	m := build("CSAS_O_1", "CREATE STREAM o AS SELECT s.id, v_t FROM s JOIN t ON s.id = t.id;")
	rep, ok := m["REPARTITION-JOIN-T"].(*physical.Repartition)
	if !ok {
		t.Fatalf("no REPARTITION-JOIN-T in %v", m)
	}
	if rep.KeyLatestOf != "" {
		t.Errorf("the stream's keys follow subject %q, want the key column's own schema", rep.KeyLatestOf)
	}
	const topic = "sqlstreams_query_CSAS_O_1-JOIN-T-TABLE-repartition"
	tr, ok := m["REPARTITION-JOIN-T-TABLE"].(*physical.TableRepartition)
	if !ok {
		t.Fatalf("no REPARTITION-JOIN-T-TABLE in %v", m)
	}
	if tr.Topic != topic || tr.KeyFormat != types.FormatAvro || tr.KeyOptions.Subject != topic+"-key" || tr.KeyOptions.SchemaID != 0 ||
		tr.TopicKeyOptions.Subject != "T-key" || len(tr.KeyCols) != 1 || tr.KeyCols[0] != 0 || tr.KeySchema.String() != rep.KeySchema.String() {
		t.Errorf("the table's repartition: %+v", tr)
	}
	if src, ok := m["SOURCE-T"].(*physical.Source); !ok || !src.Raw || src.Topic != "T" {
		t.Errorf("the table's topic is not read raw by its repartition: %+v", src)
	}
	src, ok := m["SOURCE-JOIN-T-TABLE-repartition"].(*physical.Source)
	if !ok || src.Topic != topic || !src.KeyByValue || !src.Table {
		t.Errorf("the join's table source: %+v", src)
	}
	if j := m["JOIN-T"].(*physical.StreamTableJoin); j.Store.Changelog != topic || !j.Store.SourceTopicChangelog {
		t.Errorf("the table's store restores from %s", j.Store.Changelog)
	}
	if !slices.Contains(topics, topic) {
		t.Errorf("%s is not among the internal topics", topic)
	}

	m = build("CTAS_O_2", "CREATE TABLE o AS SELECT t.id, v_u FROM t LEFT JOIN u ON t.id = u.id;")
	fk, ok := m["JOIN-U"].(*physical.ForeignKeyJoin)
	if !ok {
		t.Fatalf("no foreign-key JOIN-U in %v", m)
	}
	const fkTopic = "sqlstreams_query_CTAS_O_2-KTABLE-FK-JOIN-U-TABLE-repartition"
	tr, ok = m["REPARTITION-KTABLE-FK-JOIN-U-TABLE"].(*physical.TableRepartition)
	if !ok {
		t.Fatalf("no REPARTITION-KTABLE-FK-JOIN-U-TABLE in %v", m)
	}
	if tr.Topic != fkTopic || tr.KeyOptions.Subject != fkTopic+"-key" || tr.KeyOptions.SchemaID != fk.RightKeyOpts.SchemaID ||
		tr.KeySchema.String() != fk.RightKeySchema.String() {
		t.Errorf("the right table's repartition: %+v; foreign keys %s %+v", tr, fk.RightKeySchema, fk.RightKeyOpts)
	}
	if fk.RightSource.Topic != fkTopic || fk.RightSource.KeyOptions.Subject != "" {
		t.Errorf("the right's source: topic %s subject %q; want %s and none (no latest schema for foreign keys)",
			fk.RightSource.Topic, fk.RightSource.KeyOptions.Subject, fkTopic)
	}
	if !slices.Contains(topics, fkTopic) {
		t.Errorf("%s is not among the internal topics", fkTopic)
	}
}

// sameSet reports whether two space-separated lists hold the same names.
func sameSet(a, b string) bool {
	x, y := strings.Fields(a), strings.Fields(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// TestRegistryKeyWindowedJoin pins a join of windowed streams on
// schema-registry keys: both sides repartitioned with the left's window
// (a HOPPING left and a TUMBLING right of another size), their window
// bounds read back as values, and the join keying stored rows by key
// value and window.
func TestRegistryKeyWindowedJoin(t *testing.T) {
	cat := catalog.New()
	add := func(name string, wt types.WindowType, size int64) {
		cat.AddSource(&catalog.Source{Name: name, Kind: catalog.Stream, Topic: name, KeyFormat: types.FormatJSONSR, ValueFormat: "JSON", Partitions: 2,
			KeyOptions: types.FormatOptions{Subject: name + "-key"}, WindowType: wt, WindowSizeMs: size,
			Schema: types.Schema{Columns: []types.Column{
				{Name: "ID", Type: types.IntType, Key: true},
				{Name: "V", Type: types.IntType},
			}}}, false)
	}
	add("L", types.Hopping, 5000)
	add("R", types.Tumbling, 2000)
	add("K", types.Session, 0)
	add("K2", types.Session, 0)
	st, err := sql.Parse("CREATE STREAM o AS SELECT * FROM l JOIN r WITHIN 1 MINUTE ON l.id = r.id;")
	if err != nil {
		t.Fatal(err)
	}
	sink, err := sql.BindCreateAs(st.(*sql.CreateAs), cat)
	if err != nil {
		t.Fatal(err)
	}
	topo, err := physical.Build(physical.AppID("sqlstreams", "CSAS_O_1"), sink)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*physical.Node{}
	for _, n := range topo.Nodes {
		m[n.Name] = n
	}
	for _, side := range []string{"LEFT", "RIGHT"} {
		rep, ok := m["REPARTITION-JOIN-R-"+side].Op.(*physical.Repartition)
		if !ok {
			t.Fatalf("no REPARTITION-JOIN-R-%s in %v", side, m)
		}
		if rep.WindowType != types.Hopping {
			t.Errorf("%s repartition keys end in a %q window, want the left's HOPPING", side, rep.WindowType)
		}
		src := m["SOURCE-JOIN-R-"+side+"-repartition"].Op.(*physical.Source)
		w := src.Out.Index(types.WindowStart)
		if w < 0 || src.Out.Columns[w].Window || src.Out.Columns[w+1].Window || src.WindowType != types.NoWindow {
			t.Errorf("%s: the window bounds are not read back as values: %v", side, src.Out.Columns)
		}
		if src.Read != nil && (!src.Read[w] || !src.Read[w+1]) {
			t.Errorf("%s: the window bounds are not decoded", side)
		}
	}
	j := m["JOIN-R"].Op.(*physical.StreamStreamJoin)
	if !j.KeyByValue || j.WindowType != types.Hopping {
		t.Errorf("the join keys stored rows by value %v, window %q", j.KeyByValue, j.WindowType)
	}
	// SELECT * lists each side's window bounds as values, as ksqlDB
	// does; commands recorded before sqlstreams.joins=4 did not.
	for _, legacy := range []bool{false, true} {
		st, err := sql.Parse("CREATE STREAM o AS SELECT * FROM k JOIN k2 WITHIN 1 MINUTE ON k.id = k2.id;")
		if err != nil {
			t.Fatal(err)
		}
		st.(*sql.CreateAs).Select.LegacyJoins3 = legacy
		sink, err := sql.BindCreateAs(st.(*sql.CreateAs), cat)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range sink.Target.Schema.Columns {
			names = append(names, c.Name)
		}
		got := strings.Join(names, " ")
		want := "K_ID K_WINDOWSTART K_WINDOWEND K_V K2_ID K2_WINDOWSTART K2_WINDOWEND K2_V"
		if legacy {
			want = "K_ID K_V K2_ID K2_V"
		}
		if !sameSet(got, want) {
			t.Errorf("legacy %v: SELECT * gives %s, want %s", legacy, got, want)
		}
	}
	for _, c := range []struct{ stmt, err string }{
		{"CREATE STREAM o AS SELECT * FROM l JOIN r WITHIN 1 MINUTE ON l.id = r.v;", "Implicit repartitioning of windowed sources is not supported"},
		{"CREATE STREAM o AS SELECT * FROM l JOIN k WITHIN 1 MINUTE ON l.id = k.id;", "Incompatible windowed sources"},
		{"CREATE STREAM o AS SELECT * FROM k JOIN k2 WITHIN 1 MINUTE ON k.id = k2.id;", ""},
	} {
		st, err := sql.Parse(c.stmt)
		if err != nil {
			t.Fatal(err)
		}
		_, err = sql.BindCreateAs(st.(*sql.CreateAs), cat)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.stmt, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: %v, want %q", c.stmt, err, c.err)
		}
	}
}
