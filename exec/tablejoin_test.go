package exec

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// tableJoinTopology is CREATE TABLE OUT AS SELECT l.id, a, b FROM lt l
// <typ> JOIN rt r ON l.id = r.id.
func tableJoinTopology(t testing.TB, typ planner.JoinType) *physical.Topology {
	table := func(name, col string) *catalog.Source {
		return &catalog.Source{Name: name, Kind: catalog.Table, Topic: name, KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
			Partitions: 1, Schema: types.Schema{Columns: []types.Column{
				{Name: "ID", Type: types.StringType, Key: true},
				{Name: col, Type: types.BigintType},
			}}}
	}
	join, err := planner.NewTableJoin(typ, planner.NewScan(table("lt", "A")), planner.NewScan(table("rt", "B")), "L", "R", 0, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	in := join.Schema()
	col := func(name string) expr.Expr {
		i := in.Index(name)
		return &expr.Column{Index: i, Name: name, T: in.Columns[i].Type}
	}
	proj, err := planner.NewProject(join, []expr.Expr{col("L_ID"), col("L_A"), col("R_B")}, []string{"ID", "A", "B"})
	if err != nil {
		t.Fatal(err)
	}
	target := &catalog.Source{Name: "OUT", Kind: catalog.Table, Topic: "out", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Schema: proj.Schema()}
	topo, err := physical.Build("app", &planner.Sink{Input: proj, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// TestTableTableJoin checks a LEFT table–table join's records as either
// side changes: the joined row's new value at the later side's time, the
// left's row with NULLs when the right goes, a tombstone when the left
// goes, nothing for a right row without a left one.
func TestTableTableJoin(t *testing.T) {
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	t.Cleanup(func() { res.Close() })
	jt := &joinTask{}
	jt.testTask = newTestTask(t, tableJoinTopology(t, planner.LeftJoin), 0, Config{StateDir: t.TempDir(), RocksResources: res}, func(r *kgo.Record) {
		if r.Topic == "out" {
			jt.sent = append(jt.sent, fmt.Sprintf("%s %s @%d", r.Key, r.Value, r.Timestamp.UnixMilli()))
		}
	})
	jt.feed(t, "lt", 1, "k1", `{"A":1}`)
	jt.expect(t, `k1 {"A":1,"B":null} @1`)
	jt.feed(t, "rt", 5, "k1", `{"B":2}`)
	jt.expect(t, `k1 {"A":1,"B":2} @5`)
	jt.feed(t, "lt", 3, "k1", `{"A":4}`)
	jt.expect(t, `k1 {"A":4,"B":2} @5`)
	jt.feed(t, "rt", 6, "k1", "")
	jt.expect(t, `k1 {"A":4,"B":null} @6`)
	jt.feed(t, "lt", 7, "k1", "")
	jt.expect(t, `k1  @7`)
	jt.feed(t, "rt", 8, "k2", `{"B":3}`)
	jt.expect(t)
	jt.feed(t, "rt", 9, "k2", "")
	jt.expect(t)
}
