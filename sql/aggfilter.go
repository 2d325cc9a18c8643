package sql

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// An aggregate's FILTER clause, as Postgres and Flink write it:
//
//	COUNT(*) FILTER (WHERE price < 10000)
//	COUNT(DISTINCT bidder) FILTER (WHERE price >= 1000000)
//
// aggregates only the rows for which the condition holds. TiDB's grammar
// has no FILTER, so the rewriter (rewrite.go) wraps the call and its
// condition as __AGG_FILTER(agg, condition), and once parsed the wrapper
// becomes the aggregate of CASE WHEN condition THEN argument END (of 1
// for COUNT(*)): the aggregates FILTER is allowed on ignore NULLs, so
// the two count, sum and compare the same rows, and the aggregation
// needs nothing new. A SUM is NULL when no row passes, as in SQL.

// aggFilterMarker names the wrapper the rewriter writes.
const aggFilterMarker = "__AGG_FILTER"

// filterAggregates are the aggregates that take FILTER: those that
// ignore NULL arguments.
var filterAggregates = map[string]bool{"COUNT": true, "SUM": true, "AVG": true, "MIN": true, "MAX": true}

// aggFilter wraps the call whose name is toks[i] when a FILTER (WHERE …)
// follows it.
func (r *rewriter) aggFilter(toks []token, i int) *Error {
	end := match(toks, i+1)
	if end < 0 || end+3 >= len(toks) || !toks[end+1].is("FILTER") || !isPunct(toks[end+2], "(") || !toks[end+3].is("WHERE") {
		return nil
	}
	if !filterAggregates[toks[i].text] {
		return errorAt(r.text, toks[end+1].pos, CodeFeatureNotSupport, "FILTER (WHERE …) is supported on COUNT, SUM, AVG, MIN and MAX, not on %s", toks[i].text)
	}
	if match(toks, end+2) < 0 {
		return errorAt(r.text, toks[end+2].pos, CodeSyntaxError, "syntax error: unclosed (")
	}
	r.insert(toks[i].pos, aggFilterMarker+"(")
	r.replace(toks[end+1].pos, toks[end+3].end, ",")
	return nil
}

// aggFilterUnwrapper turns __AGG_FILTER(agg(x), c) into
// agg(CASE WHEN c THEN x END).
type aggFilterUnwrapper struct{}

func (aggFilterUnwrapper) Enter(n ast.Node) (ast.Node, bool) { return n, false }

func (aggFilterUnwrapper) Leave(n ast.Node) (ast.Node, bool) {
	call, ok := n.(*ast.FuncCallExpr)
	if !ok || !strings.EqualFold(call.FnName.O, aggFilterMarker) || len(call.Args) != 2 {
		return n, true
	}
	agg, ok := call.Args[0].(*ast.AggregateFuncExpr)
	if !ok || len(agg.Args) != 1 {
		return n, true // bound as an unknown function: the binder names it
	}
	arg := agg.Args[0]
	if v, ok := arg.(*driver.ValueExpr); ok && strings.EqualFold(agg.F, "count") && v.Kind() != driver.KindNull {
		arg = ast.NewValueExpr(int64(1), "", "") // COUNT(*)
	}
	filtered := func() ast.ExprNode {
		return &ast.CaseExpr{WhenClauses: []*ast.WhenClause{{Expr: call.Args[1], Result: arg}}}
	}
	agg.Args[0] = filtered()
	if !strings.EqualFold(agg.F, "sum") {
		return agg, true
	}
	// SQL's SUM of no rows is NULL; ksqlDB's SUM (which a SUM over CASE
	// is) starts at 0.
	count := &ast.AggregateFuncExpr{F: "count", Args: []ast.ExprNode{filtered()}, Distinct: agg.Distinct}
	none := &ast.BinaryOperationExpr{Op: opcode.EQ, L: count, R: ast.NewValueExpr(int64(0), "", "")}
	return &ast.CaseExpr{WhenClauses: []*ast.WhenClause{{Expr: none, Result: ast.NewValueExpr(nil, "", "")}}, ElseClause: agg}, true
}

// hasAggFilter reports whether text may hold a FILTER clause, to spare
// the tree walk for the statements that have none.
func hasAggFilter(rw rewritten) bool { return strings.Contains(rw.text, aggFilterMarker) }
