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
