package expr

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/types"
)

// TestCaseOneWhenConstants covers CASE WHEN c THEN constant [ELSE
// constant] END (an aggregate's FILTER), compiled with no call for the
// constants: true, false and NULL conditions, with and without ELSE.
func TestCaseOneWhenConstants(t *testing.T) {
	I, N := col("I"), col("N") // 7, NULL
	for _, c := range []struct {
		e    Expr
		want types.Datum
	}{
		{must(NewCase(nil, []Expr{op2(OpLT, I, 10)}, lits(1), nil)), types.IntDatum(1)},
		{must(NewCase(nil, []Expr{op2(OpGE, I, 10)}, lits(1), nil)), types.NullDatum},
		{must(NewCase(nil, []Expr{op2(OpGE, N, 10)}, lits(1), nil)), types.NullDatum},
		{must(NewCase(nil, []Expr{op2(OpGE, I, 10)}, lits("x"), lit("y"))), types.StringDatum("y")},
		{must(NewCase(nil, []Expr{op2(OpLT, I, 10)}, lits("x"), lit("y"))), types.StringDatum("x")},
		{must(NewCase(nil, []Expr{op2(OpLT, N, 10)}, lits("x"), lit("y"))), types.StringDatum("y")},
		{must(NewCase(nil, []Expr{op2(OpLT, I, 10)}, lits(nil), lit(2))), types.NullDatum},
		{must(NewCase(nil, []Expr{op2(OpLT, I, 10)}, []Expr{I}, nil)), types.IntDatum(7)}, // not a constant
	} {
		ev, err := Compile(c.e)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ev(xrow)
		if err != nil {
			t.Fatalf("%s: %v", c.e, err)
		}
		if got.Null != c.want.Null || got.I != c.want.I || string(got.B) != string(c.want.B) {
			t.Errorf("%s = %+v, want %+v", c.e, got, c.want)
		}
	}
}
