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

// TestWindowedDistinctValuesPlans shows the upgrade rule for time
// windows' distinct values: a windowed plan recorded before they were
// kept apart decodes without a store of distinct values (its windows
// keep the values in their state, as its stores hold them); the same
// statement bound now gets one, a window store with the window store's
// retention (and a changelog deleted by time), which survives the
// plan's encoding; sessions get one without retention (a compacted
// changelog only); commands migrated from before plans
// (sql.Select.LegacyDistinctState) get none.
func TestWindowedDistinctValuesPlans(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "historical_plans", "1", "hopdist_47ffa1b0840a.json"))
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
	if a := aggregateOf(t, old.Query); a.Window == nil || a.DistinctStore != nil || a.DistinctAggs != nil || len(old.Query.Stores) != 1 {
		t.Fatalf("a windowed plan recorded before distinct values were kept apart decodes with them apart: %+v", a)
	}

	bind := func(text string, legacy bool) *physical.Topology {
		st, err := sql.Parse(text)
		if err != nil {
			t.Fatal(err)
		}
		ca := st.(*sql.CreateAs)
		ca.Select.LegacyDistinctState = legacy
		sink, err := sql.BindCreateAs(ca, physicalCatalog())
		if err != nil {
			t.Fatal(err)
		}
		topo, err := physical.Build(physical.AppID("sqlstreams", "Q1"), sink)
		if err != nil {
			t.Fatal(err)
		}
		return topo
	}
	now := bind(h.Statement, false)
	a := aggregateOf(t, now)
	if d := a.DistinctStore; d == nil || fmt.Sprint(a.DistinctAggs) != "[[0 1] [2]]" || d.Kind != physical.WindowStore ||
		d.RetentionMs != a.Store.RetentionMs || d.RetentionMs != 70_000 || d.Name != "AGGREGATE-DISTINCT" {
		t.Fatalf("a new windowed statement's distinct values: %+v of %v", d, a.DistinctAggs)
	}
	found := false
	for _, it := range now.InternalTopics() {
		found = found || (it.Name == a.DistinctStore.Changelog && it.Compact && it.RetentionMs == 70_000)
	}
	if !found {
		t.Errorf("no compacted internal topic %s with retention 70 s in %v", a.DistinctStore.Changelog, now.InternalTopics())
	}
	enc, err := plan.Encode(&plan.Plan{Query: now})
	if err != nil {
		t.Fatal(err)
	}
	back, err := plan.Decode(enc, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ba := aggregateOf(t, back.Query); ba.DistinctStore == nil || ba.DistinctStore.Kind != physical.WindowStore || ba.DistinctStore.RetentionMs != 70_000 || back.Query.String() != now.String() {
		t.Fatalf("decoded %+v\n%s\nwas\n%s", ba.DistinctStore, back.Query, now)
	}

	if a := aggregateOf(t, bind(h.Statement, true)); a.DistinctStore != nil {
		t.Fatalf("a migrated command's windowed COUNT(DISTINCT) keeps its values apart: %+v", a)
	}
	// Sessions: a window store keyed by the session's start, without
	// retention (entries leave by tombstones: a compacted changelog
	// only, never deleted by time under a long session).
	sessions := "CREATE TABLE sessdist AS SELECT pageid, COUNT(DISTINCT userid) AS users FROM pageviews WINDOW SESSION (5 MINUTES) GROUP BY pageid;"
	st := bind(sessions, false)
	sa := aggregateOf(t, st)
	if d := sa.DistinctStore; d == nil || d.Kind != physical.WindowStore || d.RetentionMs != 0 || fmt.Sprint(sa.DistinctAggs) != "[[0]]" {
		t.Fatalf("a new session statement's distinct values: %+v of %v", d, sa.DistinctAggs)
	}
	for _, it := range st.InternalTopics() {
		if it.Name == sa.DistinctStore.Changelog && (!it.Compact || it.RetentionMs != 0 || it.Configs(0)["cleanup.policy"] == nil || *it.Configs(0)["cleanup.policy"] != "compact") {
			t.Errorf("session distinct values' changelog %+v: want compact only", it)
		}
	}
	if a := aggregateOf(t, bind(sessions, true)); a.DistinctStore != nil {
		t.Fatalf("a migrated command's session COUNT(DISTINCT) keeps its values apart: %+v", a)
	}
}
