package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// Joins of derived tables (SQL dialect): a side of a join may be a
// derived table or a WITH query's reference that aggregates — a table
// keyed by its group key, and for a windowed aggregation (a window table
// function) by its group key and the window_start column it selects.
// The query writes the side's rows to a topic of its own, keyed by those
// columns (JSON), and joins it as a source table (planner.Computed): two
// windowed aggregations join on their key and window_start as tables
// join on their primary keys, and an aggregation by window_start alone
// is the right side of a foreign-key join from the other's window_start
// (Nexmark q5, q7). Each side's changes update the joined rows.

// derivedSide binds a join side that is a derived table or a WITH
// query's reference; ok is false for a source's name.
func (b *binder) derivedSide(sel *Select, ts *ast.TableSource) (*catalog.Source, bool, error) {
	var q ast.ResultSetNode
	var kind, alias string
	var cols []ast.CIStr
	cat := b.cat
	switch src := ts.Source.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		q, kind, alias = src, "SUBQUERY", ts.AsName.O
	case *ast.TableName:
		c, scope := lookupCTE(b.cat, src.Name.O)
		if c == nil {
			return nil, false, nil
		}
		q, kind, alias, cols, cat = c.Query.Query, "CTE", c.Name.O, c.ColNameList, scope
	default:
		return nil, false, nil
	}
	saveSrc, saveAlias, saveSchema := b.src, b.alias, b.schema
	node, err := b.fromSubquery(sel, q, kind, alias, cols, cat)
	b.src, b.alias, b.schema = saveSrc, saveAlias, saveSchema
	if err != nil {
		return nil, true, err
	}
	feed, _, err := planner.Rewrite(node.(*planner.Derived).Input, planner.DialectSQL, sel.skipRules()...)
	if e := planError(err); e != nil {
		return nil, true, e
	}
	if err != nil {
		return nil, true, b.errAt("JOIN", CodeFeatureNotSupport, "%v", err)
	}
	agg := findAggregate(feed)
	if ij := sel.interval; agg != nil && agg.Window != nil && ij != nil && (ij.derived == ts.AsName.O || ts.AsName.O == "" && ij.derived == alias) {
		src, err := b.finalStream(sel, ij.derived, feed, agg) // bind_join_final.go
		return src, true, err
	}
	if agg == nil || agg.Global {
		return nil, true, b.errAt("JOIN", CodeFeatureNotSupport, "a join of a derived table or WITH query (%s) is supported when it aggregates (GROUP BY): its rows are keyed by the group", alias)
	}
	out := feed.Schema()
	schema := types.Schema{Columns: append([]types.Column(nil), out.Columns...)}
	if agg.Window != nil {
		// A windowed aggregation's rows are keyed by the group and the
		// window: window_start joins the key.
		p, _ := feed.(*planner.Project)
		found := false
		for i := range schema.Columns {
			if p == nil {
				break
			}
			if c, ok := p.Exprs[i].(*expr.Column); ok && c.Name == types.WindowStart {
				schema.Columns[i].Key, found = true, true
			}
		}
		if !found {
			return nil, true, b.errAt("JOIN", CodeFeatureNotSupport, "a join of a windowed aggregation (%s) needs its window_start column selected: its rows are keyed by the group and the window", alias)
		}
		if agg.Window.Type == types.Session {
			return nil, true, b.errAt("JOIN", CodeFeatureNotSupport, "a join of a SESSION windowed aggregation (%s) is not supported", alias)
		}
		if agg.EmitFinal {
			return nil, true, b.errAt("JOIN", CodeFeatureNotSupport, "a join of an aggregation with EMIT FINAL (%s) is not supported", alias)
		}
	}
	want := len(agg.GroupBy)
	if agg.Window != nil {
		want++
	}
	// A window_end column follows from the window_start of its window
	// (TUMBLE, HOP): grouped by both (GROUP BY window_start, window_end
	// of a windowed aggregate's rows), the rows are keyed by
	// window_start alone, and an equality of window_end next to one of
	// window_start in a join's ON is implied (takeImpliedWindowEnds).
	deps := windowDeps(feed, schema)
	for end, start := range deps {
		if schema.Columns[end].Key && schema.Columns[start].Key {
			schema.Columns[end].Key = false
			want--
		}
	}
	if len(schema.KeyIndexes()) < want {
		return nil, true, b.errAt("JOIN", CodeFeatureNotSupport, "a join of a derived table or WITH query (%s) needs all its GROUP BY columns selected: its rows are keyed by them", alias)
	}
	sel.dialect = planner.DialectSQL
	src := &catalog.Source{Name: alias, Kind: catalog.Table, Schema: schema, Topic: "(derived " + alias + ")",
		KeyFormat: types.FormatJSON, ValueFormat: types.FormatJSON, Partitioner: types.Murmur2}
	if b.feeds == nil {
		b.feeds = map[*catalog.Source]planner.Node{}
	}
	b.feeds[src] = feed
	if len(deps) > 0 {
		if b.windowDeps == nil {
			b.windowDeps = map[*catalog.Source]map[int]int{}
		}
		b.windowDeps[src] = deps
	}
	return src, true, nil
}

// windowDeps returns the columns of n's rows (laid out as schema) that
// pass a TUMBLE or HOP window's WINDOWEND through unchanged, each with
// a column that passes the same window's WINDOWSTART (a key column if
// one does): the window_end that follows from that window_start.
func windowDeps(n planner.Node, schema types.Schema) map[int]int {
	var deps map[int]int
	for e := range schema.Columns {
		agg, end := windowOrigin(n, e)
		if agg == nil || !end {
			continue
		}
		best := -1
		for s := range schema.Columns {
			if a, isEnd := windowOrigin(n, s); a == agg && !isEnd && (best < 0 || schema.Columns[s].Key && !schema.Columns[best].Key) {
				best = s
			}
		}
		if best >= 0 {
			if deps == nil {
				deps = map[int]int{}
			}
			deps[e] = best
		}
	}
	return deps
}

// windowOrigin follows column col of n's rows down through projections,
// filters and the group keys of aggregations to the TUMBLE or HOP
// windowed aggregation whose WINDOWSTART or WINDOWEND (end) it is; nil
// when it is none.
func windowOrigin(n planner.Node, col int) (agg *planner.Aggregate, end bool) {
	for {
		switch x := n.(type) {
		case *planner.Project:
			c, ok := x.Exprs[col].(*expr.Column)
			if !ok {
				return nil, false
			}
			n, col = x.Input, c.Index
		case *planner.Filter:
			n = x.Input
		case *planner.Aggregate:
			if col < len(x.GroupBy) {
				c, ok := x.GroupBy[col].(*expr.Column)
				if !ok {
					return nil, false
				}
				n, col = x.Input, c.Index
				continue
			}
			name := x.Schema().Columns[col].Name
			if x.Window == nil || x.Window.Type == types.Session || (name != types.WindowStart && name != types.WindowEnd) {
				return nil, false
			}
			return x, name == types.WindowEnd
		default:
			return nil, false
		}
	}
}

// takeImpliedWindowEnds takes out of the ON of j, a join of tables on
// several equalities, each equality of two window_end columns that
// follow from window_start columns (windowDeps) the ON equates too: the
// join is on the keys and window_start, and the window_end equality,
// true wherever the windows are of one size, is bound as the join's
// residual (b.implied), which keeps the answer right where they are
// not. An ON that does not bind is left as it is, for the join's
// binding to report.
func (b *binder) takeImpliedWindowEnds(j *ast.Join, js *joinScope) {
	left, right := &js.sides[0], &js.sides[1]
	ldeps, rdeps := b.windowDeps[left.src], b.windowDeps[right.src]
	if len(ldeps) == 0 || len(rdeps) == 0 {
		return
	}
	var conds []ast.ExprNode
	var split func(n ast.ExprNode)
	split = func(n ast.ExprNode) {
		n = unparen(n)
		if bin, ok := n.(*ast.BinaryOperationExpr); ok && bin.Op == opcode.LogicAnd {
			split(bin.L)
			split(bin.R)
			return
		}
		conds = append(conds, n)
	}
	split(j.On.Expr)
	type pair struct{ l, r int }
	pairs := make([]pair, len(conds))
	swapped := js.swapped
	js.on = true
	for i, c := range conds {
		l, r, err := b.joinCondition(c)
		if err != nil {
			js.on, js.swapped = false, swapped
			return
		}
		pairs[i] = pair{-1, -1}
		lc, lok := l.(*expr.Column)
		rc, rok := r.(*expr.Column)
		if lok && rok {
			pairs[i] = pair{lc.Index, rc.Index - right.offset}
		}
	}
	js.on, js.swapped = false, swapped
	var keep []ast.ExprNode
	for i, p := range pairs {
		ls, lok := ldeps[p.l]
		rs, rok := rdeps[p.r]
		implied := false
		for _, q := range pairs {
			implied = implied || lok && rok && q.l == ls && q.r == rs
		}
		if implied {
			b.implied = append(b.implied, conds[i])
		} else {
			keep = append(keep, conds[i])
		}
	}
	if len(keep) < len(conds) {
		j.On.Expr = and(keep)
	}
}

// attachFeeds gives the join's scans of derived tables their plans
// (planner.Computed). The tables' topics have the partition count of the
// widest source either one reads.
func (b *binder) attachFeeds(n planner.Node) {
	j, ok := n.(*planner.Join)
	if !ok || len(b.feeds) == 0 {
		return
	}
	var parts int32
	for _, side := range []planner.Node{j.Left, j.Right} {
		if x, ok := side.(*planner.Scan); ok && b.feeds[x.Source] != nil {
			for _, src := range planner.Sources(b.feeds[x.Source]) {
				parts = max(parts, src.Partitions)
			}
		}
	}
	for _, side := range []*planner.Node{&j.Left, &j.Right} {
		switch x := (*side).(type) {
		case *planner.Scan:
			if feed := b.feeds[x.Source]; feed != nil && x.Computed == nil {
				src := *x.Source
				src.Partitions = parts
				sc := planner.NewScan(&src)
				sc.Computed = &planner.Computed{Plan: feed}
				*side = sc
			}
		case *planner.Rekey:
			// A derived stream repartitioned by the join's key
			// (bind_join_final.go).
			// (bind_join_final.go), its topic with the partition count
			// of the widest source it reads.
			if sc, ok := x.Input.(*planner.Scan); ok && b.feeds[sc.Source] != nil && sc.Computed == nil {
				feed := b.feeds[sc.Source]
				src := *sc.Source
				for _, in := range planner.Sources(feed) {
					src.Partitions = max(src.Partitions, in.Partitions)
				}
				f := planner.NewScan(&src)
				f.Computed = &planner.Computed{Plan: feed}
				r := *x
				r.Input = f
				*side = &r
			}
		case *planner.Join:
			b.attachFeeds(x)
		}
	}
}
