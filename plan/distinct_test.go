package plan_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/plan"
	"github.com/sqlstreams/sqlstreams/sql"
)

// aggregateOf returns the topology's (last) Aggregate.
func aggregateOf(t *testing.T, topo *physical.Topology) *physical.Aggregate {
	t.Helper()
	var agg *physical.Aggregate
	for _, n := range topo.Nodes {
		if a, ok := n.Op.(*physical.Aggregate); ok {
			agg = a
		}
	}
	if agg == nil {
		t.Fatal("no aggregate in the topology")
	}
	return agg
}

// TestDistinctValuesPlans shows the upgrade rule for the store of
// distinct values (physical.Aggregate.DistinctStore): a plan recorded
// before it decodes without it (its groups keep their distinct values
// in their state, as its stores hold them); a statement bound now gets
// it, and it survives the plan's encoding; a command migrated from
// before plans (sql.Select.LegacyDistinctState) does not.
func TestDistinctValuesPlans(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "historical_plans", "1", "e3_1dabe158a38a.json"))
	if err != nil {
		t.Fatal(err)
	}
	var h historical
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	old, err := plan.Decode(h.Plan, "Q1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := aggregateOf(t, old.Query); a.DistinctStore != nil || a.DistinctAggs != nil || len(old.Query.Stores) != 2 {
		t.Fatalf("a plan recorded before distinct values were kept apart decodes with them apart: %+v", a)
	}

	bind := func(legacy bool) *physical.Topology {
		st, err := sql.Parse(h.Statement)
		if err != nil {
			t.Fatal(err)
		}
		ca := st.(*sql.CreateAs)
		ca.Select.LegacyDistinctState = legacy
		sink, err := sql.BindCreateAs(ca, plannerCatalog(t))
		if err != nil {
			t.Fatal(err)
		}
		topo, err := physical.Build(physical.AppID("sqlstreams", "Q1"), sink)
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	now := bind(false)
	a := aggregateOf(t, now)
	if a.DistinctStore == nil || fmt.Sprint(a.DistinctAggs) != "[[4]]" {
		t.Fatalf("a new statement's COUNT_DISTINCT keeps its values in the group: %+v", a)
	}
	if a.DistinctStore.Name != "AGGREGATE-DISTINCT" || a.DistinctStore.Changelog != "sqlstreams_query_Q1-AGGREGATE-DISTINCT-changelog" {
		t.Errorf("distinct store %s, changelog %s", a.DistinctStore.Name, a.DistinctStore.Changelog)
	}
	found := false
	for _, it := range now.InternalTopics() {
		found = found || (it.Name == a.DistinctStore.Changelog && it.Compact)
	}
	if !found {
		t.Errorf("no compacted internal topic %s in %v", a.DistinctStore.Changelog, now.InternalTopics())
	}
	enc, err := plan.Encode(&plan.Plan{Query: now})
	if err != nil {
		t.Fatal(err)
	}
	back, err := plan.Decode(enc, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ba := aggregateOf(t, back.Query); ba.DistinctStore == nil || ba.DistinctStore.Name != a.DistinctStore.Name || fmt.Sprint(ba.DistinctAggs) != "[[4]]" ||
		back.Query.String() != now.String() {
		t.Fatalf("decoded %+v\n%s\nwas\n%s", ba, back.Query, now)
	}

	if a := aggregateOf(t, bind(true)); a.DistinctStore != nil {
		t.Fatalf("a migrated command's COUNT_DISTINCT keeps its values apart: %+v", a)
	}
}
