package exec

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// unionTopology is UNION ALL of two branches over one source (the bids
// over 5000, as euros, and the others, as they are), as physical.Build
// lowers it: the source feeds both branches, MERGE reads both.
func unionTopology(t testing.TB) *physical.Topology {
	col := func(i int) *expr.Column {
		c := bidSchema.Columns[i]
		return &expr.Column{Index: i, Name: c.Name, T: c.Type}
	}
	hi, err := expr.NewBinary(expr.OpGT, col(2), expr.IntLiteral(5000))
	if err != nil {
		t.Fatal(err)
	}
	lo, _ := expr.NewBinary(expr.OpLE, col(2), expr.IntLiteral(5000))
	mul, _ := expr.NewBinary(expr.OpMul, col(2), expr.IntLiteral(908))
	euros, _ := expr.NewBinary(expr.OpDiv, mul, expr.IntLiteral(1000))
	out := types.Schema{Columns: []types.Column{
		{Name: "AUCTION", Type: types.BigintType, Key: true},
		{Name: "PRICE", Type: types.BigintType},
	}}
	g := physical.NewGraph("app")
	src := g.Add("SOURCE-BIDS", &physical.Source{Topic: "bids", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Out: bidSchema})
	f1 := g.Add("FILTER-0001", &physical.Filter{Predicate: hi, Out: bidSchema}, src)
	p1 := g.Add("PROJECT-0002", &physical.Project{Exprs: []expr.Expr{col(0), euros}, Out: out}, f1)
	f2 := g.Add("FILTER-0001", &physical.Filter{Predicate: lo, Out: bidSchema}, src)
	p2 := g.Add("PROJECT-0002", &physical.Project{Exprs: []expr.Expr{col(0), col(2)}, Out: out}, f2)
	m := g.Add("MERGE", &physical.Merge{Out: out}, p1, p2)
	g.Add("SINK-OUT", &physical.Sink{Topic: "out", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Out: out}, m)
	return g.Topology()
}

// TestUnionPipeline runs records through both branches of a UNION ALL:
// each comes out once, from the branch whose filter it passes.
func TestUnionPipeline(t *testing.T) {
	var produced []*kgo.Record
	task := newTestTask(t, unionTopology(t), 0, Config{}, func(r *kgo.Record) { produced = append(produced, r) })
	if err := task.feed(
		&kgo.Record{Key: bidKey, Value: []byte(`{"bidder":7,"price":10000}`)},
		&kgo.Record{Key: bidKey, Value: []byte(`{"bidder":8,"price":100}`)},
	); err != nil {
		t.Fatal(err)
	}
	task.out.flush()
	var got []string
	for _, r := range produced {
		got = append(got, string(r.Value))
	}
	if len(got) != 2 || got[0] != `{"PRICE":9080}` || got[1] != `{"PRICE":100}` {
		t.Fatalf("output %q, want the first bid in euros and the second as it is", got)
	}
}

// mergeAllocs returns the allocations per record of a UNION ALL's
// branches and merge, once warm.
func mergeAllocs(t *testing.T) float64 {
	var produced []*kgo.Record
	task := newTestTask(t, unionTopology(t), 0, Config{}, func(r *kgo.Record) { produced = append(produced, r) })
	recs := []*kgo.Record{
		{Key: bidKey, Value: []byte(`{"bidder":7,"price":10000}`)},
		{Key: bidKey, Value: []byte(`{"bidder":8,"price":100}`)},
	}
	i := 0
	step := func() {
		if err := task.feed(recs[i%2]); err != nil {
			t.Fatal(err)
		}
		i++
		task.out.flush()
		if len(produced) == 512 {
			produced = produced[:0]
			task.out.reset()
		}
	}
	for range 1024 {
		step()
	}
	return testing.AllocsPerRun(1000, step)
}
