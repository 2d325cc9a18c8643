package physical_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// TestSubTopologiesFromGraph checks that sub-topologies are the graph's
// connected parts: two sources feeding one node are one sub-topology
// (a co-partitioned join's task reads both), a repartition topic starts
// another, and stores are declared once however many nodes use them.
func TestSubTopologiesFromGraph(t *testing.T) {
	schema := types.Schema{Columns: []types.Column{{Name: "K", Type: types.StringType, Key: true}, {Name: "V", Type: types.BigintType}}}.WithPseudo()
	store := &physical.Store{Name: "AGGREGATE", Kind: physical.KeyValue, Changelog: "app-AGGREGATE-changelog", Schema: schema}
	g := physical.NewGraph("app")
	a := g.Add("SOURCE-A", &physical.Source{Topic: "a", KeyFormat: "KAFKA", ValueFormat: "JSON", Out: schema})
	b := g.Add("SOURCE-B", &physical.Source{Topic: "b", KeyFormat: "KAFKA", ValueFormat: "JSON", Out: schema})
	f := g.Add("FILTER-0001", &physical.Filter{Predicate: expr.IntLiteral(1), Out: schema}, a, b)
	g.Add("REPARTITION-X", &physical.Repartition{Topic: "app-X-repartition", KeyFormat: "KAFKA", In: schema,
		KeyExprs: []expr.Expr{&expr.Column{Index: 1, Name: "V", T: types.BigintType}}}, f)
	r := g.Add("SOURCE-X", &physical.Source{Topic: "app-X-repartition", KeyFormat: "NONE", ValueFormat: "JSON", Out: schema})
	agg := g.Add("AGGREGATE", &physical.Aggregate{Out: schema, Store: store}, r)
	g.Add("AGGREGATE-AGAIN", &physical.Aggregate{Out: schema, Store: store}, agg)
	topo := g.Topology()

	if len(topo.SubTopologies) != 2 {
		t.Fatalf("%d sub-topologies, want 2:\n%s", len(topo.SubTopologies), topo)
	}
	s0, s1 := topo.SubTopologies[0], topo.SubTopologies[1]
	if len(s0.Sources) != 2 || len(s0.Nodes) != 4 || len(s1.Sources) != 1 || len(s1.Nodes) != 3 {
		t.Errorf("sub-topology 0: %d sources, %d nodes (want 2, 4); 1: %d sources, %d nodes (want 1, 3)",
			len(s0.Sources), len(s0.Nodes), len(s1.Sources), len(s1.Nodes))
	}
	if got := topo.SourceTopics(); len(got) != 3 || got[0] != "a" || got[1] != "b" || got[2] != "app-X-repartition" {
		t.Errorf("source topics %v", got)
	}
	if len(topo.Stores) != 1 || topo.Store("AGGREGATE") != store {
		t.Errorf("stores %v, want AGGREGATE once", topo.Stores)
	}
	its := topo.InternalTopics()
	if len(its) != 2 || its[0] != (physical.InternalTopic{Name: "app-X-repartition"}) ||
		its[1] != (physical.InternalTopic{Name: "app-AGGREGATE-changelog", Compact: true}) {
		t.Errorf("internal topics %v", its)
	}
	if outs := topo.Outputs(); len(outs[a.ID]) != 1 || outs[a.ID][0] != f || len(outs[b.ID]) != 1 {
		t.Errorf("outputs of the sources: %v %v", outs[a.ID], outs[b.ID])
	}
	if n, _ := physical.Find[*physical.Repartition](topo); n == nil || n.Name != "REPARTITION-X" {
		t.Errorf("Find: %v", n)
	}
}
