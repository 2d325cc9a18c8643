package exec

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// topNViewTopology is a Top-N as planned now (binary rows with their
// times) of the first two rows per G by V DESC of a stream, projected
// to (G, RN, ID, V) and written keyed by G and RN in JSON: a table its
// store answers pull queries over.
func topNViewTopology() *physical.Topology {
	in := types.Schema{Columns: []types.Column{
		{Name: "G", Type: types.StringType}, {Name: "ID", Type: types.StringType}, {Name: "V", Type: types.BigintType},
	}}
	rn := types.Column{Name: "RN", Type: types.BigintType, Key: true}
	out := types.Schema{Columns: append(slices.Clone(in.Columns), rn)}
	col := func(s types.Schema, i int) expr.Expr {
		c := s.Columns[i]
		return &expr.Column{Index: i, Name: c.Name, T: c.Type}
	}
	g := physical.NewGraph("app")
	raw := types.Schema{Columns: append(slices.Clone(in.Columns), types.PseudoColumns...)}
	src := g.Add("PROJECT-IN", &physical.Project{Exprs: []expr.Expr{col(raw, 0), col(raw, 1), col(raw, 2)}, Out: in},
		g.Add("SOURCE", &physical.Source{Topic: "in", KeyFormat: types.FormatNone, ValueFormat: types.FormatJSON, Out: raw}))
	tn := &physical.TopN{Partition: []int{0}, Order: []expr.Expr{&expr.Column{Index: 2, Name: "V", T: types.BigintType}},
		Desc: []bool{true}, N: 2, Rank: true, Out: out, Binary: true,
		Store: &physical.Store{Name: "TOPN", Kind: physical.KeyValue, Changelog: "app-TOPN-changelog",
			KeyFormat: physical.TopNBinaryKey, ValueFormat: physical.TopNBinaryTimedRows, Schema: in}}
	sinkCols := []types.Column{{Name: "G", Type: types.StringType, Key: true}, rn,
		{Name: "ID", Type: types.StringType}, {Name: "V", Type: types.BigintType}}
	proj := g.Add("PROJECT", &physical.Project{Exprs: []expr.Expr{col(out, 0), col(out, 3), col(out, 1), col(out, 2)}, Out: types.Schema{Columns: sinkCols}},
		g.Add("TOPN", tn, src))
	g.Add("SINK", &physical.Sink{Topic: "out", KeyFormat: types.FormatJSON, ValueFormat: types.FormatJSON,
		Out: types.Schema{Columns: sinkCols}}, proj)
	return g.Topology()
}

// TestTopNView: the result table of a Top-N whose rows carry their
// times is the Top-N's store (MaterializesResult), and a pull over it
// gives each partition's first rows at their ranks and times, by scan
// and by key; a key lookup reads the key's Top-N partition only
// (topNPrefixes).
func TestTopNView(t *testing.T) {
	topo := topNViewTopology()
	if !MaterializesResult(topo) {
		t.Fatal("a timed Top-N's result table should be its store")
	}
	task := newTestTask(t, topo, 0, Config{StateDir: t.TempDir()}, func(*kgo.Record) {})
	for _, ts := range task.stores { // as a running task's (taskManager.run)
		task.tm.q.addStore(ts.name, 0, ts.ov.Committed())
	}
	task.tm.sess = newFakeSession(t)
	if err := task.tm.begin(); err != nil {
		t.Fatal(err)
	}
	rec := func(ts int64, id, g string, v int) *kgo.Record {
		return &kgo.Record{Topic: "in", Value: fmt.Appendf(nil, `{"G":%q,"ID":%q,"V":%d}`, g, id, v), Timestamp: time.UnixMilli(ts)}
	}
	in := []*kgo.Record{rec(1, "a", "g", 5), rec(2, "b", "g", 9), rec(3, "c", "g", 7), rec(4, "d", "h", 1)}
	for _, r := range in {
		if err := task.feed(r); err != nil {
			t.Fatal(err)
		}
	}
	task.tm.txn.records += len(in)
	if res, err := task.tm.commit(context.Background()); err != nil || !res.committed {
		t.Fatalf("commit: %+v, %v", res, err)
	}
	q := task.tm.q
	// The pull's chain: the table's records as a source.
	sink, _ := physical.Find[*physical.Sink](topo)
	so := sink.Op.(*physical.Sink)
	pg := physical.NewGraph("pull")
	pg.Add("SOURCE", &physical.Source{Topic: "out", KeyFormat: so.KeyFormat, ValueFormat: so.ValueFormat,
		Out: types.Schema{Columns: append(slices.Clone(so.Out.Columns), types.PseudoColumns...)}})
	r, err := NewPullRunner(pg.Topology())
	if err != nil {
		t.Fatal(err)
	}
	rowtime := so.Out.Len() // the first pseudo column
	pull := func(sel KeySelection) []string {
		t.Helper()
		var got []string
		if err := q.PullWith(context.Background(), r, "OUT", sel, func(row types.Row) error {
			got = append(got, fmt.Sprintf("%s|%d|%s|%d|%d", row[0].B, row[1].I, row[2].B, row[3].I, row[rowtime].I))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(got)
		return got
	}
	// Each row at the time of the record that brought it.
	want := []string{"g|1|b|9|2", "g|2|c|7|3", "h|1|d|1|4"}
	if got := pull(KeySelection{}); !slices.Equal(got, want) {
		t.Errorf("scan: %v, want %v", got, want)
	}
	key := func(g string, rank int) []byte { return fmt.Appendf(nil, `{"G":%q,"RN":%d}`, g, rank) }
	n, _ := physical.Find[*physical.TopN](topo)
	view := task.graph.procs[n.Name].(*topNOp)
	prefixes, ok := topNPrefixes(topo, n, view, [][]byte{key("g", 2), key("g", 1), key("x", 1)})
	if !ok || len(prefixes) != 2 || !bytes.Contains(prefixes[0], []byte("g")) || !bytes.Contains(prefixes[1], []byte("x")) {
		t.Fatalf("lookup prefixes %q, %v: want g's and x's", prefixes, ok)
	}
	// The pull's chain has no WHERE: a lookup of (g, 2) gives g's rows,
	// read from g's partition alone.
	if got := pull(KeySelection{Keys: [][]byte{key("g", 2)}}); !slices.Equal(got, want[:2]) {
		t.Errorf("lookup of g: %v, want %v", got, want[:2])
	}
	if got := pull(KeySelection{Keys: [][]byte{key("x", 1)}}); len(got) != 0 {
		t.Errorf("lookup of x: %v, want none", got)
	}
}

// TestTopNViewTable: over a table's Top-N, whose rows are entries of
// their own, the view ranks each partition's entries in the order a
// scan reads them, and shows the first N only.
func TestTopNViewTable(t *testing.T) {
	_, _, st := topNFixture(t, 2, true)
	spec := &physical.TopN{Partition: []int{0}, Order: []expr.Expr{&expr.Column{Index: 2, Name: "V", T: types.BigintType}},
		Desc: []bool{true}, N: 2, Rank: true, FromTable: true, RowKey: []int{1}, Binary: true,
		Out: types.Schema{Columns: []types.Column{{Name: "G", Type: types.StringType}, {Name: "ID", Type: types.StringType, Key: true},
			{Name: "V", Type: types.BigintType}, {Name: "RN", Type: types.BigintType, Key: true}}},
		Store: &physical.Store{Name: "TOPN", Kind: physical.KeyValue, Changelog: "cl", KeyFormat: physical.TopNBinaryKey,
			ValueFormat: physical.TopNBinaryTimedRows, Schema: types.Schema{Columns: []types.Column{{Name: "G", Type: types.StringType},
				{Name: "ID", Type: types.StringType, Key: true}, {Name: "V", Type: types.BigintType}}}}}
	c := &collect{}
	op, err := newTopN("TOPN", spec, st, &outbox{send: func(*kgo.Record) {}}, c)
	if err != nil {
		t.Fatal(err)
	}
	steps := []Change{
		{New: topNRow("g", "a", 5), Timestamp: 1},
		{New: topNRow("g", "b", 9), Timestamp: 2},
		{New: topNRow("g", "c", 1), Timestamp: 3},
		{New: topNRow("h", "d", 4), Timestamp: 4},
		{Old: topNRow("g", "b", 9), New: topNRow("g", "b", 0), Timestamp: 5}, // b falls: a up, c in
	}
	for i := range steps {
		if err := op.Process(&steps[i]); err != nil {
			t.Fatal(err)
		}
	}
	view := &stamps{}
	vop, err := newTopN("TOPN", spec, nil, nil, view)
	if err != nil {
		t.Fatal(err)
	}
	it, err := st.ov.Range(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		if err := vop.emitStored(it.Key(), it.Value()); err != nil {
			t.Fatal(err)
		}
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	// a and c at the times they came, b (below them) not shown.
	want := []string{"a/5@1 t1", "c/1@2 t3", "d/4@1 t4"}
	if strings.Join(view.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("view:\n%s\nwant\n%s", strings.Join(view.got, "\n"), strings.Join(want, "\n"))
	}
}

// stamps records the new rows a processor receives, with their times.
type stamps struct{ got []string }

func (c *stamps) Process(ch *Change) error {
	r := ch.New
	c.got = append(c.got, fmt.Sprintf("%s/%d@%d t%d", r[1].B, r[2].I, r[len(r)-1].I, ch.Timestamp))
	return nil
}
