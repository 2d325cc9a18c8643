package physical_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// TestKeepTopNLayout: a query replacing another (CREATE OR REPLACE)
// keeps the replaced Top-N's layout when its store holds what the new
// one reads (same shape: it may take the store over), and not
// otherwise (different shapes: the replacement is refused).
func TestKeepTopNLayout(t *testing.T) {
	cat := catalog.New()
	cat.AddSource(&catalog.Source{
		Name: "PAGEVIEWS", Kind: catalog.Stream, Topic: "pageviews", KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: 2,
		Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "PAGEID", Type: types.StringType},
			{Name: "VIEWTIME", Type: types.BigintType},
		}},
	}, false)
	build := func(cols string, opts ...physical.BuildOption) *physical.Topology {
		t.Helper()
		st, err := sql.Parse("CREATE TABLE t AS SELECT " + cols + " FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY pageid ORDER BY viewtime DESC) AS rn FROM pageviews) WHERE rn <= 2;")
		if err != nil {
			t.Fatal(err)
		}
		sink, err := sql.BindCreateAs(st.(*sql.CreateAs), cat)
		if err != nil {
			t.Fatal(err)
		}
		topo, err := physical.Build(physical.AppID("sqlstreams", "CTAS_T_1"), sink, opts...)
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	topN := func(topo *physical.Topology) *physical.TopN {
		for _, n := range topo.Nodes {
			if tn, ok := n.Op.(*physical.TopN); ok {
				return tn
			}
		}
		t.Fatal("no Top-N")
		return nil
	}
	for _, c := range []struct {
		name       string
		prev, next *physical.Topology
		same       bool
	}{
		{"fewer columns", build("pageid, rn, userid, viewtime"), build("pageid, rn, userid"), true},
		{"more columns", build("pageid, rn, userid"), build("pageid, rn, userid, viewtime"), false},
		{"all columns kept before", build("*"), build("pageid, rn, userid"), true},
		{"JSON rows before", build("pageid, rn, userid", physical.WideRepartitions), build("pageid, rn, viewtime"), true},
	} {
		before := topN(c.next).Binary
		physical.KeepTopNLayout(c.prev, c.next)
		p, n := topN(c.prev), topN(c.next)
		if same := c.prev.ShapeFingerprint() == c.next.ShapeFingerprint(); same != c.same {
			t.Errorf("%s: same shape %v, want %v (kept %v, then %v; stores %s, %s)", c.name, same, c.same, p.Kept, n.Kept, p.Store.Schema, n.Store.Schema)
		}
		if c.same && (n.Binary != p.Binary || len(n.Kept) != len(p.Kept) || n.Store.ValueFormat != p.Store.ValueFormat) {
			t.Errorf("%s: layout binary %v kept %v (%s), want %v %v (%s)", c.name, n.Binary, n.Kept, n.Store.ValueFormat, p.Binary, p.Kept, p.Store.ValueFormat)
		}
		if !before {
			t.Errorf("%s: the new query was not binary to begin with", c.name)
		}
	}
}
