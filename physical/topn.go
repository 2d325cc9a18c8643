package physical

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Op = (*TopN)(nil)

// TopN keeps, per partition (the rows with equal Partition columns),
// the rows ordered by Order, and emits the changes of the first N
// (planner.TopN): with Rank, each rank's row as a row keyed by the
// partition and the rank (Out's last column), a rank that empties as
// its deletion; without, the rows that enter and leave the first N.
//
// Its Store (key-value, changelogged): over a stream one entry per
// partition, the partition's first N rows in order; over a table
// (FromTable) every row, each an entry of its own keyed by partition,
// order and RowKey (the table's key columns), so that a row taken out
// (an update, a deletion) lets the next one move in. See exec/topn.go.
type TopN struct {
	Partition []int
	Order     []expr.Expr
	Desc      []bool
	N         int64
	Rank      bool
	FromTable bool
	RowKey    []int
	Out       types.Schema
	Store     *Store
	// Binary (plans made since it was added) keeps the partition keys
	// and the rows in a binary encoding (the Store's formats
	// TopNBinaryKey and TopNBinaryRows), and of the rows only the Kept
	// columns (nil: all), those the nodes after the Top-N read: the
	// others are NULL in the rows it emits. The Store's Schema is then
	// the kept columns; the rows are Out's but for the rank. Without it
	// (plans made before, and commands recorded before plans: see
	// WideRepartitions) keys and rows are JSON, rows whole (TopNRows).
	//
	// A deduplication (N 1 over a stream) whose changes go through
	// projections to a sink only keeps no column: it emits each row that
	// enters as it comes, and the sink writes the new row under its key
	// without the old one, so no stored row is read back.
	//
	// Every other binary Top-N (plans made since it was added) stores
	// each row after the timestamp of the record that brought it (the
	// value format TopNBinaryTimedRows): its store then holds the result
	// table's rows whole, and answers pull queries over it (exec's
	// Top-N view), with no materialization of the result topic.
	Binary bool
	Kept   []int
}

// The formats of a TopN's store: rows in JSON (keys in JSON), or keys
// and rows in the binary encoding of TopN.Binary.
const (
	TopNRows       = "TOPN-ROWS"
	TopNBinaryKey  = "TOPN-BINARY-KEY"
	TopNBinaryRows = "TOPN-BINARY-ROWS"
	// TopNBinaryTimedRows is TopNBinaryRows with each row preceded by
	// its timestamp (8 bytes, big-endian milliseconds).
	TopNBinaryTimedRows = "TOPN-BINARY-TIMED-ROWS"
)

// Timed reports whether t stores each row with its timestamp
// (TopNBinaryTimedRows).
func (t *TopN) Timed() bool { return t.Binary && t.Store.ValueFormat == TopNBinaryTimedRows }

func (t *TopN) Schema() types.Schema { return t.Out }
func (t *TopN) Explain(name string) string {
	ps := make([]string, len(t.Partition))
	for i, p := range t.Partition {
		ps[i] = t.Out.Columns[p].Name
	}
	os := make([]string, len(t.Order))
	for i, o := range t.Order {
		os[i] = o.String()
		if t.Desc[i] {
			os[i] += " DESC"
		}
	}
	per := strings.Join(ps, ", ")
	if per == "" {
		per = "ALL"
	}
	d := fmt.Sprintf("TopN: %d PER %s ORDER BY %s", t.N, per, strings.Join(os, ", "))
	if t.Rank {
		d += " RANK " + t.Out.Columns[len(t.Out.Columns)-1].Name
	}
	if t.FromTable {
		d += " RETRACTING"
	}
	return "  --> " + name + "  " + d + " (store: " + t.Store.Name + ", changelog: " + t.Store.Changelog + ")\n"
}
func (t *TopN) stores() []*Store { return []*Store{t.Store} }

// lowerTopN adds a Top-N (the TopN node of root's chain, with the nodes
// above it) and returns the last node: the input's chain (a table's as
// changes), then, unless the rows are partitioned by the Top-N's
// partition columns already, <appid>-TOPN-repartition and the source
// that reads it back, then TOPN with its store TOPN
// (<appid>-TOPN-changelog), then the filters and projections above.
func lowerTopN(g *Graph, appID string, above []planner.Node, t *planner.TopN) (*Node, error) {
	if planner.FindTopN(t.Input) != nil {
		return nil, fmt.Errorf("a Top-N over a Top-N is not supported yet")
	}
	var in *Node
	var err error
	if inner, _ := innerAggregate(t.Input); inner != nil {
		// A Top-N of an aggregation's rows: its changes (old and new
		// rows), from sub-topologies named AGGREGATE-1, GROUPBY-1, ….
		if inner.Window != nil || !inner.Changes {
			return nil, fmt.Errorf("a Top-N over a windowed aggregation is not supported yet")
		}
		in, err = lowerInner(g, appID, t.Input, "")
	} else {
		in, err = chain(g, t.Input, t.FromTable)
	}
	if err != nil {
		return nil, err
	}
	schema := t.Input.Schema()
	if topNRepartition(t) {
		if findJoin(t.Input) {
			// A join's rows: each side's pseudo columns are values here
			// (the repartition carries them), as for an aggregation of a
			// join's rows (lowerAt).
			cols := make([]types.Column, len(schema.Columns))
			copy(cols, schema.Columns)
			for i := range cols {
				cols[i].Pseudo = false
			}
			schema = types.Schema{Columns: cols}
		}
		topic := appID + "-TOPN-repartition"
		keys := make([]expr.Expr, len(t.Partition))
		kcols := make([]types.Column, len(t.Partition))
		for i, p := range t.Partition {
			c := schema.Columns[p]
			keys[i] = &expr.Column{Index: p, Name: c.Name, T: c.Type}
			kcols[i] = types.Column{Name: c.Name, Type: c.Type, Key: true}
		}
		if len(t.Partition) == 0 {
			// A Top-N of all rows: one partition, keyed by a constant
			// (as a global aggregate's), read by one task.
			keys = []expr.Expr{&expr.Literal{V: types.IntDatum(0), T: types.IntType}}
			kcols = []types.Column{{Name: "KSQL_GLOBAL", Type: types.IntType, Key: true}}
		}
		g.Add("REPARTITION-TOPN", &Repartition{Topic: topic, KeyExprs: keys, KeySchema: types.Schema{Columns: kcols},
			KeyFormat: types.FormatJSON, In: schema}, in)
		cols := make([]types.Column, len(schema.Columns))
		copy(cols, schema.Columns)
		for i := range cols {
			cols[i].Key = false
		}
		if schema.Index(types.RowTime) < 0 {
			// An aggregation's rows: the rows read back get pseudo
			// columns of their own after them, which the Top-N does not
			// keep (it stores and emits the columns it was planned with).
			cols = append(cols, types.PseudoColumns...)
		}
		in = g.Add("SOURCE-TOPN-repartition", &Source{Topic: topic, KeyFormat: types.FormatNone, ValueFormat: types.FormatJSON,
			Out: types.Schema{Columns: cols}, Repartitioned: t.FromTable})
	}
	op := &TopN{Partition: t.Partition, Order: t.Order, Desc: t.Desc, N: t.N, Rank: t.Rank, FromTable: t.FromTable,
		Out: t.Schema(), Store: &Store{Name: "TOPN", Kind: KeyValue, Changelog: appID + "-TOPN-changelog",
			KeyFormat: types.FormatJSON, ValueFormat: TopNRows, Schema: schema}}
	if !g.wide {
		// Kept follows once the topology is whole (keepTopNColumns).
		op.Binary, op.Store.KeyFormat, op.Store.ValueFormat = true, TopNBinaryKey, TopNBinaryTimedRows
	}
	if t.FromTable {
		op.RowKey = schema.KeyIndexes()
	}
	last := g.Add("TOPN", op, in)
	for i := len(above) - 1; i >= 0; i-- {
		name := fmt.Sprintf("%04d", len(above)-i)
		switch n := above[i].(type) {
		case *planner.Filter:
			last = g.Add("FILTER-TOPN-"+name, &Filter{Predicate: n.Predicate, Out: n.Schema()}, last)
		case *planner.Project:
			last = g.Add("PROJECT-TOPN-"+name, &Project{Exprs: n.Exprs, Out: n.Schema()}, last)
		default:
			return nil, fmt.Errorf("plan node %T above a Top-N is not supported yet", n)
		}
	}
	return last, nil
}

// topNRepartition reports whether a Top-N's input must be repartitioned
// by its partition columns: a table's changes always are (a row's old
// and new versions may belong to different partitions), a stream's
// unless it is keyed by exactly those columns, by a known partitioner.
func topNRepartition(t *planner.TopN) bool {
	if t.FromTable || len(t.Partition) == 0 {
		return true
	}
	for _, src := range planner.Sources(t.Input) {
		if !src.Partitioner.Known() {
			return true
		}
	}
	keys := t.Input.Schema().KeyIndexes()
	if len(keys) != len(t.Partition) {
		return true
	}
	for i, k := range keys {
		if t.Partition[i] != k {
			return true
		}
	}
	return false
}

// findJoin reports whether n's plan holds a join whose rows it reads
// (not below an aggregation: the aggregation's rows are its own).
func findJoin(n planner.Node) bool {
	switch n.(type) {
	case *planner.Join:
		return true
	case *planner.Aggregate:
		return false
	}
	for _, c := range n.Children() {
		if findJoin(c) {
			return true
		}
	}
	return false
}

// keepTopNColumns sets the Kept columns of each binary Top-N: those the
// nodes after it read (all when some path may need the whole row, as a
// push query's client), and its store's schema to them.
func (t *Topology) keepTopNColumns() {
	outs := t.Outputs()
	for _, n := range t.Nodes {
		tn, ok := n.Op.(*TopN)
		if !ok || !tn.Binary {
			continue
		}
		if !tn.FromTable && tn.N == 1 && toSinks(outs, n) {
			// Its rows are not kept: neither are their times.
			tn.keep([]int{})
			tn.Store.ValueFormat = TopNBinaryRows
			continue
		}
		read := make([]bool, tn.Out.Len())
		if !readsThrough(outs, n, read) {
			continue
		}
		kept := []int{}
		for i := range tn.Out.Len() - 1 {
			if read[i] {
				kept = append(kept, i)
			}
		}
		if len(kept) < tn.Out.Len()-1 {
			tn.keep(kept)
		}
	}
}

// readsThrough is markReads, but that a projection marks only the
// expressions of the columns read after it.
func readsThrough(outs [][]*Node, n *Node, read []bool) bool {
	if len(outs[n.ID]) == 0 {
		return false
	}
	for _, o := range outs[n.ID] {
		p, ok := o.Op.(*Project)
		if !ok {
			cr, ok := o.Op.(columnReader)
			if !ok || !cr.markRead(read) && !markReads(outs, o, read) {
				return false
			}
			continue
		}
		after := make([]bool, p.Out.Len())
		all := !readsThrough(outs, o, after)
		for i, e := range p.Exprs {
			if all || after[i] {
				expr.MarkColumns(e, read)
			}
		}
	}
	return true
}

// toSinks reports whether n's rows go through projections to sinks only.
func toSinks(outs [][]*Node, n *Node) bool {
	if len(outs[n.ID]) == 0 {
		return false
	}
	for _, o := range outs[n.ID] {
		switch o.Op.(type) {
		case *Sink:
		case *Project:
			if !toSinks(outs, o) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// keep sets t's kept columns and its store's schema to them.
func (t *TopN) keep(kept []int) {
	t.Kept = kept
	cols := make([]types.Column, len(kept))
	for i, k := range kept {
		cols[i] = t.Store.Schema.Columns[k]
	}
	t.Store.Schema = types.Schema{Columns: cols}
}

// KeepTopNLayout makes the Top-N of next, a query that replaces prev
// (CREATE OR REPLACE), keep its rows as prev's Top-N keeps them, so that
// it can take over prev's store: in JSON (prev's plan was made before
// binary rows), or binary with prev's kept columns when they hold every
// column next reads. Otherwise (next reads a column prev did not keep,
// or the rows differ) the two stores differ, and so do the topologies'
// shapes.
func KeepTopNLayout(prev, next *Topology) {
	p, n := topNOf(prev), topNOf(next)
	if p == nil || n == nil || !n.Binary || !sameRows(p.Out, n.Out) {
		return
	}
	if p.Binary && p.Kept != nil {
		for _, k := range n.Kept {
			if !slices.Contains(p.Kept, k) {
				return
			}
		}
		if n.Kept == nil {
			return
		}
	}
	n.Binary, n.Kept = p.Binary, slices.Clone(p.Kept)
	n.Store.KeyFormat, n.Store.ValueFormat, n.Store.Schema = p.Store.KeyFormat, p.Store.ValueFormat, p.Store.Schema
}

// topNOf returns t's Top-N, or nil.
func topNOf(t *Topology) *TopN {
	for _, n := range t.Nodes {
		if tn, ok := n.Op.(*TopN); ok {
			return tn
		}
	}
	return nil
}

// sameRows reports whether two Top-Ns' rows have the same columns.
func sameRows(a, b types.Schema) bool {
	if a.Len() != b.Len() {
		return false
	}
	for i, c := range a.Columns {
		if d := b.Columns[i]; !strings.EqualFold(c.Name, d.Name) || !c.Type.Equal(d.Type) {
			return false
		}
	}
	return true
}
