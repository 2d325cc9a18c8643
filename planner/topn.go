package planner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

// Top-N and deduplication, in the form Flink SQL and RisingWave document:
//
//	SELECT * FROM (
//	  SELECT …, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM s
//	) WHERE rn <= N
//
// The binder plans ROW_NUMBER() OVER (…) as a RowNumber node under the
// SELECT's projection; the RowNumberToTopN rule turns a filter of its
// column (rn <= N, rn < N, rn = 1) into a TopN node. A RowNumber left in
// the plan (no such filter) is refused by the binder.

var (
	_ Node = (*RowNumber)(nil)
	_ Node = (*TopN)(nil)
)

// RowNumber numbers its input's rows 1, 2, … within each partition (the
// rows with equal Partition columns) in the order of Order. Its rows are
// its input's columns followed by the number, a BIGINT named Name. It
// only exists between binding and the RowNumberToTopN rule.
type RowNumber struct {
	Input Node
	// Partition are the positions of the PARTITION BY columns in the
	// input's rows.
	Partition []int
	// Order are the ORDER BY expressions over the input's rows; Desc
	// says, for each, whether it sorts descending.
	Order []expr.Expr
	Desc  []bool
	Name  string
	out   types.Schema
}

// NewRowNumber builds ROW_NUMBER() OVER (PARTITION BY partition ORDER BY
// order) over input. Its schema keys the rows by the partition columns
// and the number (the Top-N result's key when the number is selected).
func NewRowNumber(input Node, partition []int, order []expr.Expr, desc []bool, name string) (*RowNumber, error) {
	for _, o := range order {
		if !Orderable(o.Type()) {
			return nil, fmt.Errorf("ROW_NUMBER() cannot ORDER BY %s of type %s", o, o.Type())
		}
	}
	r := &RowNumber{Input: input, Partition: partition, Order: order, Desc: desc, Name: name}
	r.out = topNSchema(input.Schema(), partition, name, true, nil)
	return r, nil
}

// Orderable reports whether values of t can order a Top-N's rows.
func Orderable(t types.Type) bool {
	switch t.Kind {
	case types.Boolean, types.Int, types.Bigint, types.Double, types.String, types.Bytes,
		types.Date, types.Time, types.Timestamp:
		return true
	case types.Decimal:
		return t.Precision <= 18
	}
	return false
}

// topNSchema is in's columns keyed by the partition columns (and, with
// rank, the row number; and the extra key columns), then the row number.
func topNSchema(in types.Schema, partition []int, name string, rank bool, extra []int) types.Schema {
	cols := append([]types.Column(nil), in.Columns...)
	for i := range cols {
		cols[i].Key = false
	}
	for _, p := range partition {
		cols[p].Key = true
	}
	for _, k := range extra {
		cols[k].Key = true
	}
	cols = append(cols, types.Column{Name: name, Type: types.BigintType, Key: rank})
	return types.Schema{Columns: cols}
}

func (r *RowNumber) Schema() types.Schema { return r.out }
func (r *RowNumber) Children() []Node     { return []Node{r.Input} }
func (r *RowNumber) String() string {
	return "RowNumber " + overText(r.Input.Schema(), r.Partition, r.Order, r.Desc) + " AS " + r.Name
}

func overText(in types.Schema, partition []int, order []expr.Expr, desc []bool) string {
	ps := make([]string, len(partition))
	for i, p := range partition {
		ps[i] = in.Columns[p].Name
	}
	os := make([]string, len(order))
	for i, o := range order {
		os[i] = o.String()
		if desc[i] {
			os[i] += " DESC"
		}
	}
	if len(ps) == 0 {
		return "OVER (ORDER BY " + strings.Join(os, ", ") + ")"
	}
	return "OVER (PARTITION BY " + strings.Join(ps, ", ") + " ORDER BY " + strings.Join(os, ", ") + ")"
}

// TopN keeps, per partition, the N first rows in the order of Order: a
// table of those rows that changes as rows enter and leave the first N.
// Its rows are its input's columns followed by the row's rank (1…N),
// laid out as RowNumber's. The result is keyed by the partition columns
// and, with Rank, the rank: a row that changes rank is an update of the
// rank's key and a rank that empties is deleted. Without Rank (the
// number is not selected) it is keyed by the partition columns alone
// when N is 1 (deduplication) or also by the input table's key.
//
// Rows of a stream that tie on Order keep their arrival order:
// ascending, a later row goes after the earlier ones (rn = 1 ORDER BY
// ROWTIME keeps the first row per key); descending, before them (the
// last row wins). Rows of a table that tie are in the order of their
// key.
type TopN struct {
	Input     Node
	Partition []int
	Order     []expr.Expr
	Desc      []bool
	N         int64
	Rank      bool
	// FromTable marks a table's input: its updates and deletions take
	// the old row out, which may let another row move in.
	FromTable bool
	out       types.Schema
}

func (t *TopN) Schema() types.Schema { return t.out }
func (t *TopN) Children() []Node     { return []Node{t.Input} }
func (t *TopN) String() string {
	s := "TopN " + strconv.FormatInt(t.N, 10) + " " + overText(t.Input.Schema(), t.Partition, t.Order, t.Desc)
	if t.Rank {
		s += " RANK AS " + t.out.Columns[len(t.out.Columns)-1].Name
	}
	if t.FromTable {
		s += " (retracts)"
	}
	return s
}

// rowNumberToTopN is the RowNumberToTopN rule: a filter rn <= N (rn < N,
// rn = 1, N >= rn) of a RowNumber's column, through projections, becomes
// a TopN in the RowNumber's place; the filter's other conjuncts stay a
// filter. The nodes above are rebuilt so their key columns are the
// TopN's.
func rowNumberToTopN(root Node, _ Dialect) (Node, bool, error) {
	var path []Node // root first
	for n := root; ; {
		path = append(path, n)
		ch := n.Children()
		if len(ch) != 1 {
			break
		}
		n = ch[0]
	}
	rnAt := -1
	for i, n := range path {
		if _, ok := n.(*RowNumber); ok {
			rnAt = i
		}
	}
	if rnAt < 0 {
		return root, false, nil
	}
	rn := path[rnAt].(*RowNumber)
	rnCol := len(rn.out.Columns) - 1
	// The filter: the nearest above the RowNumber, through projections.
	fAt := -1
	for i := rnAt - 1; i >= 0; i-- {
		if _, ok := path[i].(*Filter); ok {
			fAt = i
			break
		}
		if _, ok := path[i].(*Project); !ok {
			return root, false, nil
		}
	}
	if fAt < 0 {
		return root, false, nil
	}
	f := path[fAt].(*Filter)
	var n int64 = -1
	var rest []expr.Expr
	for _, c := range conjuncts(f.Predicate) {
		if n < 0 {
			if k, ok := rankBound(c, func(col int) bool { return traceColumn(path[fAt+1:rnAt], col) == rnCol }); ok {
				if k < 1 {
					return nil, false, fmt.Errorf("the row number filter %s keeps no rows: it must keep rn <= N for some N >= 1", c)
				}
				n = k
				continue
			}
		}
		rest = append(rest, c)
	}
	if n < 0 {
		return root, false, nil
	}
	// Is the number selected? Some column of the result is it.
	rank := false
	top := path[0].Schema()
	for c := range top.Columns {
		if traceColumn(path[:rnAt], c) == rnCol {
			rank = true
		}
	}
	in := rn.Input.Schema()
	fromTable := IsTable(rn.Input)
	var extra []int
	if !rank && len(rn.Partition) == 0 {
		return nil, false, fmt.Errorf("a Top-N without PARTITION BY must select its row number (%s): the rank is the result's key", rn.Name)
	}
	if !rank && n > 1 {
		if !fromTable {
			return nil, false, fmt.Errorf("a Top-N of more than one row per partition over a stream must select its row number (%s): the rank is part of the result's key", rn.Name)
		}
		extra = in.KeyIndexes() // keyed by the table's key too
	}
	input := rn.Input
	if fromTable {
		// An aggregation's rows come as its changes: each group's
		// previous row with its new one, so that it can be taken out.
		var err error
		if input, err = aggregateChanges(input); err != nil {
			return nil, false, err
		}
	}
	t := &TopN{Input: input, Partition: rn.Partition, Order: rn.Order, Desc: rn.Desc, N: n, Rank: rank, FromTable: fromTable,
		out: topNSchema(in, rn.Partition, rn.Name, rank, extra)}
	// Rebuild the nodes above, bottom up, without the rank filter.
	var cur Node = t
	for i := rnAt - 1; i >= 0; i-- {
		var err error
		switch x := path[i].(type) {
		case *Filter:
			if i == fAt {
				if len(rest) == 0 {
					continue
				}
				cur, err = NewFilter(cur, andOf(rest))
			} else {
				cur, err = NewFilter(cur, x.Predicate)
			}
		case *Project:
			names := make([]string, len(x.out.Columns))
			for j, c := range x.out.Columns {
				names[j] = c.Name
			}
			cur, err = NewProject(cur, x.Exprs, names)
		case *Aggregate:
			// An aggregation over the Top-N reads its changes as a
			// table's: a row leaving the first N is taken out.
			c := *x
			c.Input, c.FromTable = cur, true
			cur = &c
		default:
			cur, err = withInput(x, cur)
		}
		if err != nil {
			return nil, false, err
		}
	}
	return cur, true, nil
}

// traceColumn follows column col of path[0]'s rows down through path's
// projections and filters (top first) and returns its position in the
// rows below path, or -1 when it is computed.
func traceColumn(path []Node, col int) int {
	for _, n := range path {
		switch x := n.(type) {
		case *Project:
			c, ok := x.Exprs[col].(*expr.Column)
			if !ok {
				return -1
			}
			col = c.Index
		case *Filter, *Sink:
		default:
			return -1
		}
	}
	return col
}

// rankBound reads a conjunct that bounds the row number (isRank tells
// its column): rn <= N, rn < N, rn = 1, and the same reversed.
func rankBound(e expr.Expr, isRank func(int) bool) (int64, bool) {
	b, ok := e.(*expr.Binary)
	if !ok {
		return 0, false
	}
	op, l, r := b.Op, b.L, b.R
	if _, ok := l.(*expr.Literal); ok {
		l, r, op = r, l, flip(op)
	}
	c, ok := l.(*expr.Column)
	if !ok || !isRank(c.Index) {
		return 0, false
	}
	lit, ok := r.(*expr.Literal)
	if !ok || lit.V.Null {
		return 0, false
	}
	switch lit.T.Kind {
	case types.Int, types.Bigint:
	default:
		return 0, false
	}
	k := lit.V.I
	switch op {
	case expr.OpLE:
		return k, true
	case expr.OpLT:
		return k - 1, true
	case expr.OpEQ:
		if k == 1 {
			return 1, true
		}
	}
	return 0, false
}

// andOf joins es with AND.
func andOf(es []expr.Expr) expr.Expr {
	out := es[0]
	for _, e := range es[1:] {
		out = &expr.Binary{Op: expr.OpAnd, L: out, R: e, T: types.BooleanType}
	}
	return out
}

// FindRowNumber returns a RowNumber left in the plan (one no Top-N
// filter consumed), or nil.
func FindRowNumber(n Node) *RowNumber {
	if r, ok := n.(*RowNumber); ok {
		return r
	}
	for _, c := range n.Children() {
		if r := FindRowNumber(c); r != nil {
			return r
		}
	}
	return nil
}

// FindTopN returns the TopN of a plan, or nil.
func FindTopN(n Node) *TopN {
	if t, ok := n.(*TopN); ok {
		return t
	}
	for _, c := range n.Children() {
		if t := FindTopN(c); t != nil {
			return t
		}
	}
	return nil
}

// aggregateChanges returns n with the aggregation of its chain (if any)
// emitting changes (Aggregate.Changes).
func aggregateChanges(n Node) (Node, error) {
	if a, ok := n.(*Aggregate); ok {
		c := *a
		c.Changes = true
		return &c, nil
	}
	ch := n.Children()
	if len(ch) != 1 {
		return n, nil
	}
	in, err := aggregateChanges(ch[0])
	if err != nil || in == ch[0] {
		return n, err
	}
	return withInput(n, in)
}
