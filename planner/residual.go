package planner

import (
	"fmt"

	"github.com/sqlstreams/sqlstreams/expr"
)

// A join's residual condition: ON a.k = b.k AND a.t > b.t joins on the
// key equality, as the join operators do, and applies the rest to each
// joined row. How depends on the join:
//
//   - INNER: the rows that fail it are not in the result, as if it were
//     a WHERE (JoinResidualToFilter). This holds for every join kind,
//     table changes included (a Filter takes a changed row's old and new
//     values apart).
//   - LEFT, where a left row meets at most one right row (stream–table,
//     table–table on the key, foreign key): a left row whose right row
//     fails it keeps its place with the right's columns NULL
//     (JoinResidualToNullMask: CASE WHEN residual THEN col END for each
//     of the right's columns).
//
// A LEFT stream–stream join (a left row may meet several right rows, of
// which only those that fail would need NULLs, once) and RIGHT and FULL
// joins are refused (CheckResidual).

// CheckResidual refuses a residual condition the rules cannot apply.
func CheckResidual(j *Join) error {
	if j.Residual == nil || j.Type == InnerJoin {
		return nil
	}
	if j.Type != LeftJoin {
		return fmt.Errorf("a %s join's ON takes only key equalities; conditions beyond them (%s) are supported in INNER and LEFT joins", j.Type, j.Residual)
	}
	if j.Window != nil {
		return fmt.Errorf("a LEFT stream–stream join's ON takes only key equalities and its time bounds; put %s in an INNER join or a WHERE", j.Residual)
	}
	return nil
}

// joinResidualToFilter lowers an INNER join's residual into a Filter
// above it.
func joinResidualToFilter(n Node) (Node, bool) {
	j, ok := n.(*Join)
	if !ok || j.Residual == nil || j.Type != InnerJoin {
		return n, false
	}
	c := *j
	c.Residual = nil
	return &Filter{Input: &c, Predicate: j.Residual}, true
}

// joinResidualToNullMask lowers a LEFT join's residual (the right side
// meets a left row at most once) into a projection that keeps the
// join's rows and NULLs the right's columns where it fails.
func joinResidualToNullMask(n Node) (Node, bool) {
	j, ok := n.(*Join)
	if !ok || j.Residual == nil || j.Type != LeftJoin || j.Window != nil {
		return n, false
	}
	c := *j
	c.Residual = nil
	s := c.Schema()
	exprs := make([]expr.Expr, len(s.Columns))
	for i, col := range s.Columns {
		e := expr.Expr(&expr.Column{Index: i, Name: col.Name, T: col.Type})
		if i >= c.RightOffset() {
			m, err := expr.NewCase(nil, []expr.Expr{j.Residual}, []expr.Expr{e}, nil)
			if err != nil {
				return n, false
			}
			e = m
		}
		exprs[i] = e
	}
	// The rows keep the join's layout: names, keys, pseudo columns.
	return &Project{Input: &c, Exprs: exprs, out: s}, true
}
