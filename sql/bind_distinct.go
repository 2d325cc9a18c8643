package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/planner"
)

// DISTINCT: exact COUNT(DISTINCT x) and SUM(DISTINCT x) per group
// (expr.DistinctAggregate; aggExpr binds them), and the dialect they put
// a statement in.

// sqlDialectOf reports whether a SELECT uses SQL beyond ksqlDB's that the
// binder reads from its text alone: a distinct aggregate (which ksqlDB's
// grammar does not have). Derived tables, CTEs and materialized views
// set the dialect as they are bound.
func sqlDialectOf(s *ast.SelectStmt) bool {
	v := &distinctFinder{}
	s.Accept(v)
	return v.found
}

type distinctFinder struct{ found bool }

func (v *distinctFinder) Enter(n ast.Node) (ast.Node, bool) {
	if a, ok := n.(*ast.AggregateFuncExpr); ok && a.Distinct {
		v.found = true
	}
	return n, v.found
}

func (v *distinctFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// markDialect sets sel's dialect from its text (sqlDialectOf).
func markDialect(sel *Select) {
	if sel.stmt != nil && sqlDialectOf(sel.stmt) {
		sel.dialect = planner.DialectSQL
	}
}

// selectDistinct binds SELECT DISTINCT over node: a GROUP BY of every
// selected column, without aggregates (planner.Aggregate.Distinct). The
// result is a table keyed by all its columns: over a stream each
// distinct row is emitted once, when first seen; over a table the
// distinct set, a row deleted when no input row holds it any more.
func (b *binder) selectDistinct(sel *Select, node planner.Node) (*planner.Query, error) {
	s := sel.stmt
	switch {
	case s.GroupBy != nil || s.Having != nil || hasAggregate(s):
		return nil, b.errAt("DISTINCT", CodeFeatureNotSupport, "SELECT DISTINCT with GROUP BY, HAVING or aggregates is not supported")
	case sel.window != nil:
		return nil, b.errAt("DISTINCT", CodeFeatureNotSupport, "SELECT DISTINCT with a WINDOW clause is not supported")
	case len(sel.partitionExprs) > 0:
		return nil, b.errAt("DISTINCT", CodeFeatureNotSupport, "SELECT DISTINCT with PARTITION BY is not supported")
	}
	sel.dialect, sel.distinct = planner.DialectSQL, true
	st := *s
	st.Distinct = false
	st.Fields = &ast.FieldList{}
	var items []*ast.ByItem
	for _, f := range s.Fields.Fields {
		if f.WildCard != nil {
			// * is the input's visible columns, each grouped.
			for _, c := range b.schema.Visible() {
				col := &ast.ColumnNameExpr{Name: &ast.ColumnName{Name: ast.NewCIStr(b.schema.Columns[c].Name)}}
				st.Fields.Fields = append(st.Fields.Fields, &ast.SelectField{Expr: col})
				items = append(items, &ast.ByItem{Expr: col, NullOrder: true})
			}
			continue
		}
		st.Fields.Fields = append(st.Fields.Fields, f)
		items = append(items, &ast.ByItem{Expr: f.Expr, NullOrder: true})
	}
	st.GroupBy = &ast.GroupByClause{Items: items}
	cp := *sel
	cp.stmt = &st
	cp.distinct = true
	q, err := b.aggregateQuery(&cp, node)
	if err != nil {
		return nil, err
	}
	for n := q.Root; n != nil; {
		if a, ok := n.(*planner.Aggregate); ok {
			a.Distinct = true
			break
		}
		ch := n.Children()
		if len(ch) != 1 {
			break
		}
		n = ch[0]
	}
	return q, nil
}
