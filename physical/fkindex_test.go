package physical

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

// TestFKIndex checks which conjunct of the filters after a foreign-key
// join orders its subscriptions: a comparison of a left column with a
// right one, both integers, an inequality before an equality, the left
// column on the left (the operator flipped when it is written on the
// right); none for other comparisons.
func TestFKIndex(t *testing.T) {
	// Left: L_K, L_N, L_S; right: R_K, R_M, R_T.
	out := types.Schema{Columns: []types.Column{
		{Name: "L_K", Type: types.StringType}, {Name: "L_N", Type: types.BigintType}, {Name: "L_S", Type: types.StringType},
		{Name: "R_K", Type: types.StringType}, {Name: "R_M", Type: types.IntType}, {Name: "R_T", Type: types.StringType},
	}}
	col := func(i int) expr.Expr {
		return &expr.Column{Index: i, Name: out.Columns[i].Name, T: out.Columns[i].Type}
	}
	cmp := func(op expr.Op, l, r expr.Expr) expr.Expr {
		return &expr.Binary{Op: op, L: l, R: r, T: types.BooleanType}
	}
	and := func(l, r expr.Expr) expr.Expr { return &expr.Binary{Op: expr.OpAnd, L: l, R: r, T: types.BooleanType} }
	lit := &expr.Literal{V: types.Datum{I: 3}, T: types.BigintType}
	for _, c := range []struct {
		name    string
		filters []expr.Expr
		want    string
	}{
		{"ge", []expr.Expr{cmp(expr.OpGE, col(1), col(4))}, "L_N >= R_M 1 4"},
		{"flipped", []expr.Expr{cmp(expr.OpLT, col(4), col(1))}, "L_N > R_M 1 4"},
		{"inequality first", []expr.Expr{cmp(expr.OpEQ, col(1), col(4)), and(cmp(expr.OpGT, col(1), lit), cmp(expr.OpLE, col(1), col(4)))}, "L_N <= R_M 1 4"},
		{"equality", []expr.Expr{cmp(expr.OpEQ, col(4), col(1))}, "L_N = R_M 1 4"},
		{"strings", []expr.Expr{cmp(expr.OpGE, col(2), col(5))}, ""},
		{"one side", []expr.Expr{cmp(expr.OpGE, col(1), lit)}, ""},
		{"not equal", []expr.Expr{cmp(expr.OpNE, col(1), col(4))}, ""},
		{"or", []expr.Expr{&expr.Binary{Op: expr.OpOr, L: cmp(expr.OpGE, col(1), col(4)), R: cmp(expr.OpEQ, col(1), lit), T: types.BooleanType}}, ""},
		{"none", nil, ""},
	} {
		got := ""
		if ix, _ := fkIndex(c.filters, out, 3); ix != nil {
			got = ix.Name + " " + string(rune('0'+ix.Left)) + " " + string(rune('0'+ix.Right+3))
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
