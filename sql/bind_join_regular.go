package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/sqlstreams/sqlstreams/planner"
)

// Regular joins and comma joins (SQL dialect).
//
// A join of two streams without WITHIN is, in Flink and in SQL, a
// regular join: both streams are kept whole and each row joins every row
// of the other side with its key, whatever their times. ksqlDB refuses
// it ("Stream-Stream joins must have a WITHIN clause specified"), and so
// does a ksqlDB-dialect statement here (a forgotten WITHIN would keep
// both streams for good); a statement in the SQL dialect — a derived
// table, a CTE, a comma join, a Top-N, a MATERIALIZED VIEW, … — runs it
// as a stream–stream join whose window is planner.JoinWindow.Unbounded.
// It is INNER only: a regular outer join's NULL-padded rows are
// retracted when a match comes, which a stream's output cannot do.
//
// FROM a, b WHERE a.k = b.k AND … (ksqlDB's grammar has no comma join)
// is the inner join of a and b ON the WHERE's equalities of the two
// sides; the rest of the WHERE filters the joined rows.

// commaJoin turns the ON-less join j of sel (FROM a, b, or a CROSS JOIN
// b) into an inner join on the WHERE's equalities between its sides,
// which leave the WHERE; it reports whether it did. A join without such
// an equality keeps the error of a join without ON.
func commaJoin(sel *Select, j *ast.Join) bool {
	if j.On != nil || j.Tp != ast.CrossJoin || j.NaturalJoin || j.Using != nil || j.StraightJoin || sel.stmt == nil || sel.stmt.Where == nil {
		return false
	}
	left := j.Left
	for {
		l, ok := left.(*ast.Join)
		if !ok || l.Right != nil {
			break
		}
		left = l.Left
	}
	if _, nested := left.(*ast.Join); nested {
		return false // FROM a, b, c: not yet
	}
	var keep, rest []ast.ExprNode
	var split func(n ast.ExprNode)
	split = func(n ast.ExprNode) {
		u := unparen(n)
		if bin, ok := u.(*ast.BinaryOperationExpr); ok && bin.Op == opcode.LogicAnd {
			split(bin.L)
			split(bin.R)
			return
		}
		if bin, ok := u.(*ast.BinaryOperationExpr); ok && bin.Op == opcode.EQ && sidesDiffer(bin.L, bin.R) && len(subqueriesOf(u)) == 0 {
			keep = append(keep, u)
			return
		}
		rest = append(rest, n)
	}
	split(sel.stmt.Where)
	if len(keep) == 0 {
		return false
	}
	j.On = &ast.OnCondition{Expr: and(keep)}
	sel.stmt.Where = nil
	if len(rest) > 0 {
		sel.stmt.Where = and(rest)
	}
	sel.dialect = planner.DialectSQL
	return true
}

// regularJoins reports whether a join of two streams without WITHIN in
// sel is a regular join: the statement is in the SQL dialect.
func regularJoins(sel *Select) bool {
	return sel.dialect == planner.DialectSQL || sel.inSQL
}
