package sql

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/sqlstreams/sqlstreams/planner"
)

// A join's ON may hold, after its key equalities, conditions of other
// kinds (ON a.k = b.k AND a.t > b.t AND b.flag IS NULL): they are cut
// from the ON before the join is bound (which binds the equalities as
// ksqlDB does, its errors unchanged) and bound over the joined rows as
// the join's residual, which lowering applies (planner/residual.go).
// Only the last join of the FROM takes them; an ON with no equality
// keeps ksqlDB's errors.

// bindJoinResidual binds the join j (bindJoin) with its interval bounds
// and residual conditions.
func (b *binder) bindJoinResidual(sel *Select, j *ast.Join) (*planner.Join, error) {
	commaJoin(sel, j) // FROM a, b WHERE a.k = b.k (bind_join_regular.go)
	if err := b.bindIntervalJoin(sel, j); err != nil {
		return nil, err
	}
	residual, marked, eq := takeResidual(j)
	marked = marked || sel.whereInterval(j) // interval.go
	if marked && !eq {
		return nil, errorAt(sel.text, sel.interval.pos, CodeFeatureNotSupport, "an interval join joins on a key equality as well: ON a.k = b.k AND a.ts BETWEEN …")
	}
	if sel.interval != nil && !marked {
		return nil, errorAt(sel.text, sel.interval.pos, CodeFeatureNotSupport, "… BETWEEN … INTERVAL … bounds the times of a stream–stream join: it goes in the join's ON, ANDed with the key equality")
	}
	b.lastJoin, b.implied = j, nil
	join, err := b.bindJoin(sel, j)
	if err != nil {
		return nil, err
	}
	b.attachFeeds(join)
	residual = append(residual, b.implied...)
	if err := b.bindResidual(join, residual); err != nil {
		return nil, err
	}
	return join, nil
}

// takeResidual removes the conjuncts of j's ON that are not equalities
// and returns them; ON keeps the equalities, in order. marked says
// whether ON held an interval join's bounds, eq whether it held an
// equality.
func takeResidual(j *ast.Join) (rest []ast.ExprNode, marked, eq bool) {
	if j.On == nil {
		return nil, false, false
	}
	var keep []ast.ExprNode
	var split func(n ast.ExprNode)
	split = func(n ast.ExprNode) {
		n = unparen(n)
		if bin, ok := n.(*ast.BinaryOperationExpr); ok && bin.Op == opcode.LogicAnd {
			split(bin.L)
			split(bin.R)
			return
		}
		if bin, ok := n.(*ast.BinaryOperationExpr); ok && bin.Op == opcode.EQ && sidesDiffer(bin.L, bin.R) {
			keep = append(keep, n)
			return
		}
		if call, ok := n.(*ast.FuncCallExpr); ok && strings.EqualFold(call.FnName.O, intervalJoinMarker) {
			marked = true // the interval join's bounds, a WITHIN now (interval.go)
			return
		}
		rest = append(rest, n)
	}
	split(j.On.Expr)
	if len(keep) == 0 {
		return nil, marked, false // ksqlDB's error for an ON without an equality
	}
	j.On.Expr = and(keep)
	return rest, marked, true
}

// and joins conditions with AND, left to right.
func and(cs []ast.ExprNode) ast.ExprNode {
	e := cs[0]
	for _, c := range cs[1:] {
		e = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: e, R: c}
	}
	return e
}

// bindResidual binds the residual conditions over the join's rows and
// sets them on join.
func (b *binder) bindResidual(join *planner.Join, rest []ast.ExprNode) error {
	if len(rest) == 0 {
		return nil
	}
	b.clause = "ON"
	defer func() { b.clause = "" }()
	pred, err := b.expr(and(rest))
	if err != nil {
		return err
	}
	f, err := planner.NewFilter(join, pred)
	if err != nil {
		return b.errAt("ON", CodeDatatypeMismatch, "Type error in ON: %v", err)
	}
	// An inner join's residual becomes a filter of its changes, which
	// then carry old rows (rules JoinResidualToFilter, JoinOldValues).
	join.Residual = f.Predicate
	if err := planner.CheckResidual(join); err != nil {
		return b.errAt("ON", CodeFeatureNotSupport, "%v", err)
	}
	return nil
}

// sidesDiffer reports whether l and r could name the two sides of a
// join (a key equality, bound as ksqlDB binds it): both name columns,
// and not only the columns of one qualified side. An equality with a
// constant (u.region = 'x') is a residual condition.
func sidesDiffer(l, r ast.ExprNode) bool {
	lq, lok := qualifiers(l)
	rq, rok := qualifiers(r)
	if !lok || !rok {
		return false
	}
	return !(len(lq) == 1 && len(rq) == 1 && lq[0] != "" && lq[0] == rq[0])
}

// qualifiers returns the distinct qualifiers of the columns n names
// ("" for an unqualified one), and whether it names any.
func qualifiers(n ast.ExprNode) ([]string, bool) {
	var qs []string
	found := false
	n.Accept(&columnVisitor{f: func(cn *ast.ColumnNameExpr) {
		found = true
		q := strings.ToUpper(cn.Name.Table.O)
		for _, x := range qs {
			if x == q {
				return
			}
		}
		qs = append(qs, q)
	}})
	return qs, found
}

type columnVisitor struct{ f func(*ast.ColumnNameExpr) }

func (v *columnVisitor) Enter(n ast.Node) (ast.Node, bool) {
	if cn, ok := n.(*ast.ColumnNameExpr); ok {
		v.f(cn)
	}
	return n, false
}

func (v *columnVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }
