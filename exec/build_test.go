package exec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/plan"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/state"
)

// TestRecordedPlansSides: in every plan recorded under
// plan/testdata/historical_plans, each node that tells its inputs apart
// (a join) finds, by what its inputs are, the sides its recorded input
// order gave it: recorded plans build as they did when sides were taken
// by position.
func TestRecordedPlansSides(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "plan", "testdata", "historical_plans", "*", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no recorded plans (%v)", err)
	}
	joins := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var h struct {
			Plan json.RawMessage `json:"plan"`
		}
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		p, err := plan.Decode(h.Plan, "", nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, topo := range []*physical.Topology{p.Query, p.Materialization} {
			if topo == nil {
				continue
			}
			for _, n := range topo.Nodes {
				sides, err := inputSides(topo, n)
				if err != nil {
					t.Errorf("%s: %v", filepath.Base(f), err)
					continue
				}
				if sides == nil {
					continue
				}
				joins[fmt.Sprintf("%T", n.Op)]++
				if !slices.Equal(sides, n.Inputs) {
					t.Errorf("%s: %s: sides %s, recorded inputs %s", filepath.Base(f), n.Name, names(sides), names(n.Inputs))
				}
			}
		}
	}
	// The recorded plans hold every kind of join.
	for _, kind := range []string{"*physical.TableTableJoin", "*physical.StreamStreamJoin", "*physical.ForeignKeyJoin", "*physical.ForeignKeySubscriptions"} {
		if joins[kind] == 0 {
			t.Errorf("no recorded plan has a %s", kind)
		}
	}
	t.Logf("sides checked: %v", joins)
}

func names(ns []*physical.Node) string {
	var s []string
	for _, n := range ns {
		s = append(s, n.Name)
	}
	return strings.Join(s, ", ")
}

// permute lists each node's inputs and each sub-topology's nodes in
// reverse order: the same graph, in another order.
func permute(topo *physical.Topology) {
	for _, n := range topo.Nodes {
		slices.Reverse(n.Inputs)
	}
	for _, st := range topo.SubTopologies {
		slices.Reverse(st.Nodes)
	}
}

// TestBuildPermutedStreamJoin: a stream–stream join whose inputs are
// listed right before left, in a sub-topology listed sinks first, joins
// exactly as the topology in its own order does (the bids stay the left
// side: a LEFT join emits an unmatched bid, never an unmatched auction).
func TestBuildPermutedStreamJoin(t *testing.T) {
	run := func(t *testing.T, reorder bool) []string {
		topo := streamJoinTopology(t, planner.LeftJoin, false)
		join, _ := physical.Find[*physical.StreamStreamJoin](topo)
		if got := names(join.Inputs); got != "SOURCE-BIDS, SOURCE-AUCTIONS" {
			t.Fatalf("join inputs %s", got)
		}
		if reorder {
			permute(topo)
			if got := names(join.Inputs); got != "SOURCE-AUCTIONS, SOURCE-BIDS" {
				t.Fatalf("join inputs %s", got)
			}
		}
		res := state.NewRocksResources(8<<20, 8<<20, 0)
		t.Cleanup(func() { res.Close() })
		jt := &joinTask{}
		jt.testTask = newTestTask(t, topo, 0, Config{StateDir: t.TempDir(), RocksResources: res}, func(r *kgo.Record) {
			if r.Topic == "out" {
				jt.sent = append(jt.sent, fmt.Sprintf("%s %s @%d", r.Key, r.Value, r.Timestamp.UnixMilli()))
			}
		})
		jt.feed(t, "bids", 1000, "a1", `{"PRICE":5}`)
		jt.feed(t, "auctions", 3000, "a1", `{"SELLER":"s1"}`)
		jt.feed(t, "auctions", 4000, "a9", `{"SELLER":"s9"}`) // no bid: a LEFT join never emits it alone
		jt.feed(t, "bids", 4000, "a2", `{"PRICE":6}`)
		jt.feed(t, "bids", 19001, "a3", `{"PRICE":9}`) // closes a2's window: a2 alone
		return jt.sent
	}
	want := run(t, false)
	if fmt.Sprint(want) != `[a1 {"PRICE":5,"SELLER":"s1"} @3000 a2 {"PRICE":6,"SELLER":null} @4000]` {
		t.Fatalf("in order: %q", want)
	}
	if got := run(t, true); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("permuted:\n got %q\nwant %q", got, want)
	}
}

// TestBuildPermutedTableJoin: a table–table join whose inputs are listed
// right before left keeps its sides (a LEFT join: a right row alone emits
// nothing).
func TestBuildPermutedTableJoin(t *testing.T) {
	topo := tableJoinTopology(t, planner.LeftJoin)
	permute(topo)
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	t.Cleanup(func() { res.Close() })
	jt := &joinTask{}
	jt.testTask = newTestTask(t, topo, 0, Config{StateDir: t.TempDir(), RocksResources: res}, func(r *kgo.Record) {
		if r.Topic == "out" {
			jt.sent = append(jt.sent, fmt.Sprintf("%s %s @%d", r.Key, r.Value, r.Timestamp.UnixMilli()))
		}
	})
	jt.feed(t, "rt", 1, "k2", `{"B":3}`)
	jt.expect(t)
	jt.feed(t, "lt", 2, "k1", `{"A":1}`)
	jt.expect(t, `k1 {"A":1,"B":null} @2`)
	jt.feed(t, "rt", 5, "k1", `{"B":2}`)
	jt.expect(t, `k1 {"A":1,"B":2} @5`)
}

// TestBuildMissingInput: a join none of whose inputs is its right side,
// a node read by a node outside its sub-topology, and a join reading one
// input twice are errors naming the node, not graphs wired at random.
func TestBuildMissingInput(t *testing.T) {
	build := func(topo *physical.Topology) error {
		_, err := buildGraph(topo, topo.SubTopologies[0], &taskEnv{})
		return err
	}
	t.Run("side", func(t *testing.T) {
		topo := streamJoinTopology(t, planner.InnerJoin, false)
		join, op := physical.Find[*physical.StreamStreamJoin](topo)
		op.Right = "NOSUCH"
		err := build(topo)
		if err == nil || !strings.Contains(err.Error(), join.Name) || !strings.Contains(err.Error(), "NOSUCH") {
			t.Fatalf("err %v, want one naming %s and its missing side", err, join.Name)
		}
	})
	t.Run("twice", func(t *testing.T) {
		topo := streamJoinTopology(t, planner.InnerJoin, false)
		join, _ := physical.Find[*physical.StreamStreamJoin](topo)
		join.Inputs[0] = join.Inputs[1]
		if err := build(topo); err == nil || !strings.Contains(err.Error(), join.Name) {
			t.Fatalf("err %v, want one naming %s", err, join.Name)
		}
	})
	t.Run("table side", func(t *testing.T) {
		topo := tableJoinTopology(t, planner.LeftJoin)
		join, op := physical.Find[*physical.TableTableJoin](topo)
		op.RightStore = &physical.Store{Name: "NOSUCH"}
		if err := build(topo); err == nil || !strings.Contains(err.Error(), join.Name) || !strings.Contains(err.Error(), "NOSUCH") {
			t.Fatalf("err %v, want one naming %s and the store", err, join.Name)
		}
	})
	t.Run("reader outside", func(t *testing.T) {
		topo := bidTopology(t)
		st := topo.SubTopologies[0]
		var filter *physical.Node
		st.Nodes = slices.DeleteFunc(st.Nodes, func(n *physical.Node) bool {
			if n.Name == "FILTER-0001" {
				filter = n
				return true
			}
			return false
		})
		if filter == nil {
			t.Fatal("no FILTER-0001")
		}
		if err := build(topo); err == nil || !strings.Contains(err.Error(), "FILTER-0001") || !strings.Contains(err.Error(), "SOURCE-BIDS") {
			t.Fatalf("err %v, want one naming SOURCE-BIDS and FILTER-0001", err)
		}
	})
}

// TestBuildPermutedPipeline: a stateless pipeline listed sinks first
// builds and runs as in its own order.
func TestBuildPermutedPipeline(t *testing.T) {
	topo := bidTopology(t)
	permute(topo)
	var produced []string
	task := newTestTask(t, topo, 0, Config{}, func(r *kgo.Record) { produced = append(produced, string(r.Value)) })
	if err := task.feed(&kgo.Record{Key: bidKey, Value: []byte(`{"bidder":7,"price":10000,"channel":"Google"}`)}); err != nil {
		t.Fatal(err)
	}
	task.out.flush()
	if want := `[{"BIDDER":7,"EUROS":9080,"CHANNEL":"Google"}]`; fmt.Sprint(produced) != want {
		t.Errorf("produced %s, want %s", produced, want)
	}
}
