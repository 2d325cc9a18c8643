package planner

import (
	"fmt"
	"github.com/sqlstreams/sqlstreams/expr"
	"slices"

	"github.com/sqlstreams/sqlstreams/types"
)

// Dialect is the SQL a query is written in. ksqlDB's statements keep
// ksqlDB's behaviour; a statement that uses SQL beyond ksqlDB's (derived
// tables, CTEs, views, DISTINCT, global aggregates) gets SQL's semantics
// where the two differ: a group whose last row is retracted disappears
// from the result (a tombstone downstream), never a COUNT(*) = 0 row.
// The dialect is recorded in the query's plan (physical.Topology), never
// as a property.
type Dialect string

const (
	DialectKsql Dialect = ""    // ksqlDB's (the default)
	DialectSQL  Dialect = "SQL" // SQL's, as Flink SQL, RisingWave and Materialize
)

// A Rule rewrites a bound plan. Apply returns the plan rewritten and
// whether the rule changed anything; the plan given is not modified.
type Rule struct {
	Name  string
	Apply func(n Node, d Dialect) (Node, bool, error)
}

// Rules are the planner's rewrites, in the order Rewrite applies them.
var Rules = []Rule{
	{RuleCoPartitionJoins, coPartitionJoins},
	{"CompactJoinRows", bottomUp(compactJoinRows)},
	{"FlattenDerived", flattenDerived},
	{"AggregateOfAggregate", aggregateOfAggregate},
	{"RowNumberToTopN", rowNumberToTopN},
	{"WindowTVFToEventTime", bottomUp(windowTVFToEventTime)},
	{"JoinResidualToFilter", bottomUp(joinResidualToFilter)},
	{"JoinResidualToNullMask", bottomUp(joinResidualToNullMask)},
	{RuleFilterBelowForeignKeyJoin, bottomUp(filterBelowForeignKeyJoin)},
	{"JoinOldValues", joinOldValues},
	{"SQLRetractions", sqlRetractions},
}

// bottomUp makes a rule of a rewrite of single nodes: f sees each node of
// the plan after its children were rewritten, and returns the node that
// replaces it and whether it changed anything.
func bottomUp(f func(Node) (Node, bool)) func(Node, Dialect) (Node, bool, error) {
	return func(n Node, _ Dialect) (Node, bool, error) {
		fired := false
		var walk func(Node) Node
		walk = func(n Node) Node {
			ch := n.Children()
			changed := false
			nch := make([]Node, len(ch))
			for i, c := range ch {
				nch[i] = walk(c)
				changed = changed || nch[i] != c
			}
			if changed {
				n = withChildren(n, nch)
			}
			if m, ok := f(n); ok {
				fired = true
				n = m
			}
			return n
		}
		out := walk(n)
		return out, fired, nil
	}
}

// withChildren returns a copy of n reading ch. Nodes without children,
// and node kinds the rules never rebuild, come back as they are.
func withChildren(n Node, ch []Node) Node {
	switch x := n.(type) {
	case *Join:
		c := *x
		c.Left, c.Right = ch[0], ch[1]
		return &c
	case *Union:
		c := *x
		c.Inputs = ch
		return &c
	}
	if len(ch) == 1 {
		if m, err := withInput(n, ch[0]); err == nil {
			return m
		}
	}
	return n
}

// Rewrite applies the planner's rules to a bound plan and returns the
// plan and the names of the rules that changed it, in order. The rules
// named in skip are left out (sql.Select.SkipRules: a plan that must
// keep the shape it was first given).
func Rewrite(n Node, d Dialect, skip ...string) (Node, []string, error) {
	var fired []string
	for _, r := range Rules {
		if slices.Contains(skip, r.Name) {
			continue
		}
		out, changed, err := r.Apply(n, d)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", r.Name, err)
		}
		if changed {
			n = out
			fired = append(fired, r.Name)
		}
	}
	return n, fired, nil
}

// withInput returns a copy of n, a node of one input, reading in instead.
func withInput(n Node, in Node) (Node, error) {
	switch x := n.(type) {
	case *Filter:
		c := *x
		c.Input = in
		return &c, nil
	case *Project:
		c := *x
		c.Input = in
		return &c, nil
	case *Aggregate:
		c := *x
		c.Input = in
		return &c, nil
	case *Rekey:
		c := *x
		c.Input = in
		return &c, nil
	case *FlatMap:
		c := *x
		c.Input = in
		return &c, nil
	case *Sink:
		c := *x
		c.Input = in
		return &c, nil
	case *Derived:
		c := *x
		c.Input = in
		return &c, nil
	case *WindowTVF:
		c := *x
		c.Input = in
		return &c, nil
	case *TopN:
		c := *x
		c.Input = in
		return &c, nil
	case *RowNumber:
		c := *x
		c.Input = in
		return &c, nil
	}
	return nil, fmt.Errorf("cannot rewrite the input of %T", n)
}

// rewriteChain rebuilds the linear part of the plan from n down (nodes of
// one input) with f applied to each node, bottom first; f returns the
// node to use and whether it changed it. A node of other than one input
// (a scan, a join) ends the chain and is kept.
func rewriteChain(n Node, f func(Node) (Node, bool, error)) (Node, bool, error) {
	ch := n.Children()
	changed := false
	if len(ch) == 1 {
		in, c, err := rewriteChain(ch[0], f)
		if err != nil {
			return nil, false, err
		}
		if c {
			if n, err = withInput(n, in); err != nil {
				return nil, false, err
			}
			changed = true
		}
	}
	out, c, err := f(n)
	if err != nil {
		return nil, false, err
	}
	return out, changed || c, nil
}

// flattenDerived removes Derived nodes: a derived table, a CTE's or a
// view's reference is its query's plan inlined into the parent's chain
// (the parent's expressions read its output columns by position).
func flattenDerived(n Node, _ Dialect) (Node, bool, error) {
	return rewriteChain(n, func(n Node) (Node, bool, error) {
		if d, ok := n.(*Derived); ok {
			return d.Input, true, nil
		}
		return n, false, nil
	})
}

// aggregateOfAggregate plans an aggregation whose input holds another
// (an aggregate over a derived table that aggregates): the inner
// aggregation emits each group's previous row with its new one
// (Aggregate.Changes), and the outer one aggregates those changes as a
// table's (FromTable: the previous row is taken out of its group).
func aggregateOfAggregate(n Node, _ Dialect) (Node, bool, error) {
	return rewriteChain(n, func(n Node) (Node, bool, error) {
		outer, ok := n.(*Aggregate)
		if !ok {
			return n, false, nil
		}
		var path []Node // from outer.Input down to the inner aggregation
		var inner *Aggregate
		for cur := outer.Input; inner == nil; {
			if a, ok := cur.(*Aggregate); ok {
				inner = a
				break
			}
			ch := cur.Children()
			if len(ch) != 1 {
				return n, false, nil
			}
			path = append(path, cur)
			cur = ch[0]
		}
		if inner.Changes && outer.FromTable {
			return n, false, nil
		}
		if inner.Window != nil && (inner.EmitFinal || inner.Window.Type == types.Session) {
			return nil, false, fmt.Errorf("an aggregation over a windowed aggregation with EMIT FINAL or SESSION windows is not supported yet")
		}
		ic := *inner
		ic.Changes = true
		var in Node = &ic
		for i := len(path) - 1; i >= 0; i-- {
			var err error
			if in, err = withInput(path[i], in); err != nil {
				return nil, false, err
			}
		}
		oc := *outer
		oc.Input, oc.FromTable = in, true
		return &oc, true, nil
	})
}

// sqlRetractions gives a SQL-dialect query SQL's semantics for a table's
// aggregation: a group whose last row is taken out is deleted
// (Aggregate.DropEmpty), where ksqlDB keeps it with COUNT 0.
func sqlRetractions(n Node, d Dialect) (Node, bool, error) {
	if d != DialectSQL {
		return n, false, nil
	}
	return rewriteChain(n, func(n Node) (Node, bool, error) {
		a, ok := n.(*Aggregate)
		if !ok || !a.FromTable || a.DropEmpty || a.Global {
			return n, false, nil
		}
		c := *a
		c.DropEmpty = true
		return &c, true, nil
	})
}

// joinOldValues is the JoinOldValues rule: a foreign-key join whose
// changes a filter or an aggregation reads — the statement's WHERE or
// GROUP BY, an inner join's residual lowered to a filter, an outer
// query's over a derived table or view holding the join — emits each
// change with the key's previous joined row (Join.OldValues), so that a
// row that stops passing is deleted and a group's old contribution taken
// out. Projections, sinks and re-keyings pass the changes on as they
// are; any other node reads the join as a table of its own.
func joinOldValues(root Node, _ Dialect) (Node, bool, error) {
	fired := false
	var walk func(n Node, read bool) Node
	walk = func(n Node, read bool) Node {
		switch x := n.(type) {
		case *Join:
			if read && x.ForeignKey && !x.OldValues && !x.LegacyNoOldValues {
				c := *x
				c.OldValues = true
				n, fired = &c, true
			}
			read = false
		case *Filter, *Aggregate:
			read = true
		case *Project, *Sink, *Rekey:
		default:
			read = false
		}
		ch := n.Children()
		if len(ch) == 0 {
			return n
		}
		nch := make([]Node, len(ch))
		changed := false
		for i, c := range ch {
			nch[i] = walk(c, read)
			changed = changed || nch[i] != c
		}
		if changed {
			n = withChildren(n, nch)
		}
		return n
	}
	out := walk(root, false)
	return out, fired, nil
}

// RuleFilterBelowForeignKeyJoin names the rule a plan that must keep
// its shape skips (sql.Select.NoFilterPushdown).
const RuleFilterBelowForeignKeyJoin = "FilterBelowForeignKeyJoin"

// filterBelowForeignKeyJoin is the FilterBelowForeignKeyJoin rule: the
// conjuncts of a filter right above a foreign-key join (INNER or LEFT)
// that read only the left table's columns filter the left table before
// the join, so that rows they drop never subscribe.
func filterBelowForeignKeyJoin(n Node) (Node, bool) {
	f, ok := n.(*Filter)
	if !ok {
		return n, false
	}
	j, ok := f.Input.(*Join)
	if !ok || !j.ForeignKey || j.Type != InnerJoin && j.Type != LeftJoin {
		return n, false
	}
	nl := len(j.Left.Schema().Columns)
	var push, rest []expr.Expr
	for _, c := range conjuncts(f.Predicate) {
		used := make([]bool, len(j.Schema().Columns))
		expr.MarkColumns(c, used)
		left := true
		for i, u := range used {
			if u && i >= nl {
				left = false
			}
		}
		if left {
			push = append(push, c)
		} else {
			rest = append(rest, c)
		}
	}
	if len(push) == 0 {
		return n, false
	}
	lf, err := NewFilter(j.Left, andOf(push))
	if err != nil {
		return n, false
	}
	c := *j
	c.Left = lf
	if len(rest) == 0 {
		return &c, true
	}
	out, err := NewFilter(&c, andOf(rest))
	if err != nil {
		return n, false
	}
	return out, true
}
