package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
)

// TestTypedResults checks that SHOW, DESCRIBE and EXPLAIN return typed
// values, and that the rows sent to the writer are those values' tables.
func TestTypedResults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	eng, _ := openPullEngine(t, ctx)
	s := engine.NewSession()
	run := func(stmt string) (engine.Tabular, *collect) {
		t.Helper()
		c := &collect{}
		res, err := eng.Execute(ctx, s, stmt, c)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		return res.Value, c
	}
	run("CREATE STREAM tr_in (id VARCHAR KEY, v INT) WITH (KAFKA_TOPIC='tr_in', VALUE_FORMAT='JSON', PARTITIONS=2)")
	run("CREATE TABLE tr_counts AS SELECT id, COUNT(*) AS n FROM tr_in GROUP BY id EMIT CHANGES")

	v, rows := run("SHOW STREAMS")
	l, ok := v.(*engine.SourceList)
	if !ok || l.Kind != catalog.Stream {
		t.Fatalf("SHOW STREAMS = %T %+v", v, v)
	}
	var in *engine.SourceInfo
	for i := range l.Sources {
		if l.Sources[i].Name == "TR_IN" {
			in = &l.Sources[i]
		}
	}
	if in == nil || in.Topic != "tr_in" || in.Partitions != 2 || in.ValueFormat != "JSON" || in.Windowed {
		t.Errorf("SHOW STREAMS lists TR_IN as %+v", in)
	}
	if len(rows.rows) != len(l.Sources) {
		t.Errorf("SHOW STREAMS sent %d rows for %d sources", len(rows.rows), len(l.Sources))
	}

	v, _ = run("SHOW QUERIES")
	ql, ok := v.(*engine.QueryList)
	if !ok || len(ql.Queries) != 1 || ql.Queries[0].Sink != "TR_COUNTS" || ql.Queries[0].State() != "RUNNING" ||
		ql.Queries[0].SinkTopic != "TR_COUNTS" || len(ql.Queries[0].Sources) != 1 {
		t.Fatalf("SHOW QUERIES = %T %+v", v, v)
	}
	id := ql.Queries[0].ID

	v, rows = run("DESCRIBE EXTENDED tr_counts")
	d, ok := v.(*engine.SourceDescription)
	if !ok || !d.Extended || d.Source.Kind != catalog.Table || d.Writer == nil || d.Writer.ID != id || d.Writer.Status == nil ||
		len(d.Columns) < 2 || !d.Columns[0].Key {
		t.Fatalf("DESCRIBE EXTENDED = %T %+v", v, v)
	}
	if !strings.Contains(strings.Join(rows.rows, "\n"), "written by query|"+id) {
		t.Errorf("DESCRIBE EXTENDED rows lack the writer: %q", rows.rows)
	}

	v, _ = run("DESCRIBE FUNCTION substring")
	if f, ok := v.(*engine.FunctionDescription); !ok || f.Name != "SUBSTRING" || f.Type != "SCALAR" || len(f.Signatures) == 0 {
		t.Errorf("DESCRIBE FUNCTION = %T %+v", v, v)
	}

	v, rows = run("EXPLAIN " + id)
	p, ok := v.(*engine.Plan)
	if !ok || p.QueryID != id || p.Graph == nil || p.Status == nil || p.Sink != "TR_COUNTS" || !strings.Contains(p.Topology(), "Sub-topology 0") {
		t.Fatalf("EXPLAIN = %T %+v", v, v)
	}
	if got := strings.Join(rows.rows, "\n") + "\n"; got != p.Text {
		t.Errorf("EXPLAIN rows %q differ from the plan's text %q", got, p.Text)
	}
	var kinds []string
	for _, st := range p.Graph.SubTopologies {
		for _, n := range st.Nodes {
			kinds = append(kinds, n.Kind)
		}
	}
	if got := strings.Join(kinds, ","); !strings.HasPrefix(got, "Source,") || !strings.Contains(got, ",Aggregate,") || !strings.HasSuffix(got, ",Sink") {
		t.Errorf("EXPLAIN graph nodes = %s", got)
	}
	if len(p.Graph.Stores) != 1 || !strings.HasSuffix(p.Graph.Stores[0].Changelog, "-AGGREGATE-changelog") {
		t.Errorf("EXPLAIN graph stores = %+v", p.Graph.Stores)
	}

	v, _ = run("EXPLAIN SELECT id, v FROM tr_in EMIT CHANGES")
	if p, ok := v.(*engine.Plan); !ok || p.Type != "PUSH" || p.SQL != "SELECT id, v FROM tr_in EMIT CHANGES" || p.Graph == nil || len(p.Columns) != 2 {
		t.Errorf("EXPLAIN SELECT = %T %+v", v, v)
	}

	// Statements that return no typed result have none.
	if res, err := eng.Execute(ctx, s, "SET 'auto.offset.reset'='earliest'", &collect{}); err != nil || res.Value != nil {
		t.Errorf("SET = %+v, %v", res, err)
	}
}
