package planner

import (
	"fmt"
	"strings"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Node = (*Aggregate)(nil)

// AggCall is one aggregate in a GROUP BY query.
type AggCall struct {
	Fn   *expr.AggregateFunction
	Args []expr.Expr // over the Aggregate's input rows; none for COUNT(*)
	T    types.Type
}

// NewAccumulator returns an accumulator of the call's function for its
// arguments' types (the optional interfaces it implements, expr.Undoer
// and expr.Merger, say what it can do).
func (a *AggCall) NewAccumulator() expr.Accumulator {
	ts := make([]types.Type, len(a.Args))
	for i, e := range a.Args {
		ts[i] = e.Type()
	}
	return a.Fn.New(ts)
}

func (a *AggCall) String() string {
	if a.Fn.Variant == "distinct" {
		parts := make([]string, len(a.Args))
		for i, e := range a.Args {
			parts[i] = e.String()
		}
		return a.Fn.Name + "(DISTINCT " + strings.Join(parts, ", ") + ")"
	}
	if len(a.Args) == 0 {
		return a.Fn.Name + "(*)"
	}
	parts := make([]string, len(a.Args))
	for i, e := range a.Args {
		parts[i] = e.String()
	}
	return a.Fn.Name + "(" + strings.Join(parts, ", ") + ")"
}

// Aggregate groups its input by GroupBy and computes Aggs per group. Its
// rows are the group key columns (key columns of the result), then one
// column per aggregate, named KSQL_AGG_<n>. The result is a table:
// each input row updates its group's row.
type Aggregate struct {
	Input   Node
	GroupBy []expr.Expr
	Aggs    []*AggCall
	// FromTable marks the aggregation of a table: a changed row's old
	// value is taken back out of its group (every aggregate is an
	// expr.Undoer); a group whose rows are all gone stays, with the
	// aggregates of no rows (COUNT 0), as in ksqlDB.
	FromTable bool
	// Window, when set, aggregates per group and window: the rows carry
	// WINDOWSTART and WINDOWEND after the group key columns, and the
	// result is a windowed table.
	Window *WindowSpec
	// EmitFinal (EMIT FINAL, windowed only) emits each window's row once,
	// when stream time passes its end plus grace, instead of every update.
	EmitFinal bool
	// FinalOnClose makes EMIT FINAL ksqlDB's (Kafka Streams'
	// emit-on-window-close): windows are emitted as the record that
	// closes them is processed, every one of them however far stream
	// time jumps (see physical.Aggregate.FinalOnClose).
	FinalOnClose bool
	// Changes makes each emitted row carry the group's previous row (as
	// a table's change), for an aggregation that reads this one's result
	// (rule AggregateOfAggregate).
	Changes bool
	// DropEmpty (FromTable) deletes a group whose last row is taken out,
	// as SQL does, instead of keeping it with COUNT 0 as ksqlDB does
	// (rule SQLRetractions).
	DropEmpty bool
	// Global marks an aggregation without GROUP BY (SQL dialect): one
	// group, keyed by a constant (its key column, KSQL_GLOBAL, is
	// internal: the result projects none). Its row stays when its rows
	// are all gone, with the aggregates of no rows, as SQL's does.
	Global bool
	// Distinct marks SELECT DISTINCT: a GROUP BY of every selected
	// column without aggregates, whose row is emitted when its group
	// appears (and, of a table, deleted when it empties), not at each
	// row (physical.Aggregate.Distinct).
	Distinct bool
	// DistinctValues keeps the distinct values of its exact distinct
	// aggregates (expr.IsDistinctValues: COUNT(DISTINCT x), SUM(DISTINCT
	// x)) apart from the groups' states, one entry per group and value
	// (KeepsDistinctValues, physical.Aggregate.DistinctStore); of a
	// windowed aggregation one per group, window and value, expiring
	// with the window (of session windows per session: merging sessions
	// merge their entries). The binder sets it for new statements;
	// statements migrated from before plans keep every value in the
	// group's state.
	DistinctValues bool
	out            types.Schema
}

// KeepsDistinctValues returns the distinct aggregates whose values the
// aggregation keeps apart (DistinctValues), by the value they count:
// the aggregates of one value x — x itself or CASE WHEN c THEN x END, a
// FILTER (WHERE c) — share one entry per group and value, with a count
// per aggregate (per filter), as Flink's distinct views do. None when
// it keeps them in the groups' states: DistinctValues unset.
func (a *Aggregate) KeepsDistinctValues() [][]int {
	if !a.DistinctValues {
		return nil
	}
	var shares [][]int
	var values []string
	for i, c := range a.Aggs {
		if !expr.IsDistinctValues(c.Fn) || len(c.Args) != 1 {
			continue
		}
		v := distinctValue(c.Args[0])
		id := v.Type().String() + " " + v.String()
		at := -1
		for s, w := range values {
			if w == id {
				at = s
			}
		}
		if at < 0 {
			at = len(shares)
			shares, values = append(shares, nil), append(values, id)
		}
		shares[at] = append(shares[at], i)
	}
	return shares
}

// distinctValue returns the value a distinct aggregate's argument counts:
// x of CASE WHEN c THEN x END (FILTER (WHERE c), sql/aggfilter.go), else
// the argument.
func distinctValue(arg expr.Expr) expr.Expr {
	c, ok := arg.(*expr.Case)
	if !ok || c.Operand != nil || len(c.Whens) != 1 || c.Else != nil || !c.T.Equal(c.Thens[0].Type()) {
		return arg
	}
	return c.Thens[0]
}

// NewAggregate builds a GROUP BY of input. names are the group key
// columns' names.
func NewAggregate(input Node, groupBy []expr.Expr, names []string, aggs []*AggCall) (*Aggregate, error) {
	return NewWindowedAggregate(input, groupBy, names, aggs, nil)
}

// NewWindowedAggregate builds a GROUP BY of input per window of w (nil:
// not windowed). Its rows are the group key columns, then (windowed) the
// window bounds, then the aggregates.
func NewWindowedAggregate(input Node, groupBy []expr.Expr, names []string, aggs []*AggCall, w *WindowSpec) (*Aggregate, error) {
	var cols []types.Column
	for i, g := range groupBy {
		t := g.Type()
		if t.Kind == types.Unknown {
			return nil, fmt.Errorf("cannot GROUP BY NULL")
		}
		// ARRAY and STRUCT keys need a key format that holds them (the
		// sink's encoder says); MAP keys ksqlDB refuses, as their
		// serialization is not deterministic.
		if holdsMap(t) {
			return nil, fmt.Errorf("Map keys, including types that contain maps, are not supported as they may lead to unexpected behavior due to inconsistent serialization. Key column name: `%s`. Column type: %s. See https://github.com/confluentinc/ksql/issues/6621 for more.", names[i], t.Quoted())
		}
		cols = append(cols, types.Column{Name: names[i], Type: t, Key: true})
	}
	if w != nil {
		cols = append(cols, types.WindowColumns...)
	}
	for i, a := range aggs {
		cols = append(cols, types.Column{Name: fmt.Sprintf("KSQL_AGG_%d", i), Type: a.T})
	}
	return &Aggregate{Input: input, GroupBy: groupBy, Aggs: aggs, Window: w, out: types.Schema{Columns: cols}}, nil
}

func (a *Aggregate) Schema() types.Schema { return a.out }
func (a *Aggregate) Children() []Node     { return []Node{a.Input} }
func (a *Aggregate) String() string {
	keys := make([]string, len(a.GroupBy))
	for i, g := range a.GroupBy {
		keys[i] = g.String()
	}
	aggs := make([]string, len(a.Aggs))
	for i, c := range a.Aggs {
		aggs[i] = c.String()
	}
	s := "Aggregate GROUP BY " + strings.Join(keys, ", ") + " COMPUTE " + strings.Join(aggs, ", ")
	if a.Window != nil {
		s += " WINDOW " + a.Window.String()
	}
	if a.EmitFinal {
		s += " EMIT FINAL"
	}
	if a.Changes {
		s += " (emits changes)"
	}
	if a.DropEmpty {
		s += " (empty groups deleted)"
	}
	if a.Global {
		s += " (global)"
	}
	if a.Distinct {
		s += " (distinct)"
	}
	return s
}

// NeedsRepartition reports whether the input must be repartitioned by the
// group key before aggregating: unless the group key is exactly the
// input's key columns, rows of one group may sit in several partitions. A
// table's aggregation always is: its first sub-topology turns each change
// into the old row's removal and the new row's addition. So is an input
// read from a source declared PARTITIONER='unknown'.
func (a *Aggregate) NeedsRepartition() bool {
	if a.FromTable || hasUnion(a.Input) {
		// A UNION ALL's branches may place a key in different
		// partitions (their topics' partition counts differ).
		return true
	}
	for _, src := range Sources(a.Input) {
		if !src.Partitioner.Known() {
			return true // its producers may have put a key anywhere
		}
	}
	in := a.Input.Schema()
	keys := in.KeyIndexes()
	if len(keys) != len(a.GroupBy) {
		return true
	}
	for i, g := range a.GroupBy {
		c, ok := g.(*expr.Column)
		if !ok || c.Index != keys[i] {
			return true
		}
	}
	return false
}

func holdsMap(t types.Type) bool {
	switch t.Kind {
	case types.Map:
		return true
	case types.Array:
		return holdsMap(*t.Elem)
	case types.Struct:
		for _, f := range t.Fields {
			if holdsMap(f.Type) {
				return true
			}
		}
	}
	return false
}

// hasUnion reports whether n's chain of single inputs ends in a UNION ALL.
func hasUnion(n Node) bool {
	for {
		if _, ok := n.(*Union); ok {
			return true
		}
		ch := n.Children()
		if len(ch) != 1 {
			return false
		}
		n = ch[0]
	}
}
