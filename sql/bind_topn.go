package sql

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
)

// ROW_NUMBER() OVER (PARTITION BY … ORDER BY …): Top-N and
// deduplication (planner/topn.go). A SELECT item that is ROW_NUMBER()
// OVER (…) puts a planner.RowNumber under the SELECT's projection, which
// reads its number as a column; the planner's RowNumberToTopN rule turns
// the outer query's WHERE rn <= N into a Top-N, and BindSelect refuses a
// ROW_NUMBER that no such filter consumed. Other window functions (RANK,
// DENSE_RANK, LAG, SUM(…) OVER, …) are refused.

// topNHint is how a Top-N is written, for the messages.
const topNHint = "SELECT * FROM (SELECT …, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM s) WHERE rn <= N"

type windowFuncFinder struct {
	found []*ast.WindowFuncExpr
}

func (v *windowFuncFinder) Enter(n ast.Node) (ast.Node, bool) {
	if w, ok := n.(*ast.WindowFuncExpr); ok {
		v.found = append(v.found, w)
	}
	return n, false
}

func (v *windowFuncFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// windowFuncs returns the window functions in the expressions of s.
func windowFuncs(s *ast.SelectStmt) []*ast.WindowFuncExpr {
	v := &windowFuncFinder{}
	for _, f := range s.Fields.Fields {
		if f.Expr != nil {
			f.Expr.Accept(v)
		}
	}
	for _, e := range []ast.Node{s.Where, s.Having} {
		if e != nil && e != (*ast.HavingClause)(nil) {
			e.Accept(v)
		}
	}
	return v.found
}

// rowNumber binds the SELECT's ROW_NUMBER() OVER (…) over node: it
// returns the RowNumber node and the SELECT item that reads its column,
// or node unchanged and nil when the SELECT has no window function.
func (b *binder) rowNumber(sel *Select, node planner.Node) (planner.Node, *ast.SelectField, error) {
	s := sel.stmt
	wfs := windowFuncs(s)
	if len(wfs) == 0 {
		return node, nil, nil
	}
	w := wfs[0]
	name := strings.ToUpper(w.Name)
	at := func(format string, args ...any) error {
		return b.errAt(name, CodeFeatureNotSupport, format, args...)
	}
	if name != "ROW_NUMBER" {
		return nil, nil, at("window function %s is not supported: only ROW_NUMBER() OVER (PARTITION BY … ORDER BY …) as a Top-N: %s", name, topNHint)
	}
	if len(wfs) > 1 {
		return nil, nil, b.errAt(strings.ToUpper(wfs[1].Name), CodeFeatureNotSupport, "a SELECT takes one ROW_NUMBER() OVER (…)")
	}
	var field *ast.SelectField
	for _, f := range s.Fields.Fields {
		if f.Expr != nil && unparen(f.Expr) == w {
			field = f
		}
	}
	switch {
	case field == nil:
		return nil, nil, at("ROW_NUMBER() OVER (…) must be a SELECT item of its own, named with AS: %s", topNHint)
	case sel.Emit == "" && !sel.persistent && !sel.inserting:
		return nil, nil, at("ROW_NUMBER() OVER (…) runs as a persistent query (CREATE TABLE … AS or CREATE MATERIALIZED VIEW … AS); pull-query its table")
	case s.Distinct || s.GroupBy != nil || s.Having != nil || hasAggregate(s):
		return nil, nil, at("ROW_NUMBER() OVER (…) with GROUP BY, HAVING, DISTINCT or aggregates in the same SELECT is not supported: aggregate in a derived table")
	case sel.window != nil || len(sel.partitionExprs) > 0:
		return nil, nil, at("ROW_NUMBER() OVER (…) with a WINDOW or PARTITION BY clause is not supported")
	case len(w.Args) > 0 || w.Distinct:
		return nil, nil, at("ROW_NUMBER() takes no arguments")
	case w.Spec.Name.O != "" || w.Spec.Ref.O != "":
		return nil, nil, at("named windows are not supported: write ROW_NUMBER() OVER (PARTITION BY … ORDER BY …)")
	case w.Spec.Frame != nil:
		return nil, nil, at("ROW_NUMBER() OVER (…) takes no frame (ROWS/RANGE)")
	case w.Spec.OrderBy == nil || len(w.Spec.OrderBy.Items) == 0:
		return nil, nil, at("ROW_NUMBER() OVER (…) needs ORDER BY")
	}
	sel.dialect = planner.DialectSQL
	var part []int // none: a Top-N of all rows
	var items []*ast.ByItem
	if w.Spec.PartitionBy != nil {
		items = w.Spec.PartitionBy.Items
	}
	for _, it := range items {
		e, err := b.expr(it.Expr)
		if err != nil {
			return nil, nil, err
		}
		c, ok := e.(*expr.Column)
		if !ok || b.schema.Columns[c.Index].Pseudo {
			return nil, nil, b.errAt("PARTITION", CodeFeatureNotSupport, "ROW_NUMBER() OVER (PARTITION BY …) takes columns, not %s: compute it in a derived table", e)
		}
		if holdsMap(c.T) {
			return nil, nil, b.errAt("PARTITION", CodeFeatureNotSupport, "ROW_NUMBER() OVER (PARTITION BY …) cannot partition by %s of type %s", c.Name, c.T)
		}
		part = append(part, c.Index)
	}
	var order []expr.Expr
	var desc []bool
	for _, it := range w.Spec.OrderBy.Items {
		e, err := b.expr(it.Expr)
		if err != nil {
			return nil, nil, err
		}
		if !planner.Orderable(e.Type()) {
			return nil, nil, b.errAt("ORDER", CodeDatatypeMismatch, "ROW_NUMBER() OVER (… ORDER BY …) cannot order by %s of type %s", e, e.Type())
		}
		order, desc = append(order, e), append(desc, it.Desc)
	}
	col := field.AsName.O
	if col == "" {
		col = "ROW_NUMBER"
	}
	rn, err := planner.NewRowNumber(node, part, order, desc, col)
	if err != nil {
		return nil, nil, at("%v", err)
	}
	return rn, field, nil
}

// rowNumberLeft refuses a plan whose ROW_NUMBER no Top-N filter took.
func rowNumberLeft(sel *Select, root planner.Node) error {
	rn := planner.FindRowNumber(root)
	if rn == nil {
		return nil
	}
	if planner.FindTopN(rn.Input) != nil {
		// The outer ROW_NUMBER, which comes first in the text.
		return errorAt(sel.text, posOf(sel, "ROW_NUMBER"), CodeFeatureNotSupport, "a Top-N over another Top-N is not supported yet")
	}
	return errorAt(sel.text, posOf(sel, "ROW_NUMBER"), CodeFeatureNotSupport,
		"ROW_NUMBER() OVER (…) is supported as a Top-N only, filtered by its number in an outer query: %s", topNHint)
}
