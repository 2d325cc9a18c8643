package expr

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sqlstreams/sqlstreams/types"
)

// cols are the test row's columns: I INT, B BIGINT, D DOUBLE, S STRING,
// T BOOLEAN, N (a NULL INT).
var cols = []*Column{
	{Index: 0, Name: "I", T: types.IntType},
	{Index: 1, Name: "B", T: types.BigintType},
	{Index: 2, Name: "D", T: types.DoubleType},
	{Index: 3, Name: "S", T: types.StringType},
	{Index: 4, Name: "T", T: types.BooleanType},
	{Index: 5, Name: "N", T: types.IntType},
}

var row = types.Row{types.IntDatum(7), types.IntDatum(1 << 40), types.DoubleDatum(2.5), types.StringDatum("ab"), types.BoolDatum(true), types.NullDatum}

func bin(t *testing.T, op Op, l, r Expr) Expr {
	t.Helper()
	e, err := NewBinary(op, l, r)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func eval(t *testing.T, e Expr) string {
	t.Helper()
	ev, err := Compile(e)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ev(row)
	if err != nil {
		t.Fatal(err)
	}
	return types.Text(d, e.Type())
}

func TestArithmetic(t *testing.T) {
	I, B, D, S, N := cols[0], cols[1], cols[2], cols[3], cols[5]
	for _, c := range []struct {
		e    Expr
		want string
		typ  types.Kind
	}{
		{bin(t, OpAdd, I, IntLiteral(3)), "10", types.Int},
		{bin(t, OpMul, I, B), "7696581394432", types.Bigint},
		{bin(t, OpMul, I, D), "17.5", types.Double},
		{bin(t, OpDiv, I, IntLiteral(2)), "3", types.Int},
		{bin(t, OpDiv, I, IntLiteral(0)), "NULL", types.Int},
		{bin(t, OpMod, I, IntLiteral(0)), "NULL", types.Int},
		{bin(t, OpMod, I, IntLiteral(4)), "3", types.Int},
		{bin(t, OpAdd, I, N), "NULL", types.Int},
		{bin(t, OpMul, IntLiteral(1<<30), IntLiteral(4)), "0", types.Int}, // INT wraps at 32 bits, as in Java
		{bin(t, OpAdd, S, S), "abab", types.String},
		{bin(t, OpConcat, S, &Literal{V: types.StringDatum("c"), T: types.StringType}), "abc", types.String},
	} {
		if got := eval(t, c.e); got != c.want || c.e.Type().Kind != c.typ {
			t.Errorf("%s = %s (%s), want %s (%s)", c.e, got, c.e.Type(), c.want, c.typ)
		}
	}
}

func TestLogicAndComparison(t *testing.T) {
	I, D, S, T, N := cols[0], cols[2], cols[3], cols[4], cols[5]
	null := &Literal{V: types.NullDatum, T: types.BooleanType}
	f := &Literal{V: types.BoolDatum(false), T: types.BooleanType}
	nullCmp := bin(t, OpEQ, N, IntLiteral(1))
	for _, c := range []struct {
		e    Expr
		want string
	}{
		{bin(t, OpGT, I, D), "true"},
		{bin(t, OpEQ, S, &Literal{V: types.StringDatum("ab"), T: types.StringType}), "true"},
		{bin(t, OpLT, S, &Literal{V: types.StringDatum("aa"), T: types.StringType}), "false"},
		{nullCmp, "NULL"},
		{bin(t, OpAnd, null, f), "false"}, // three-valued logic
		{bin(t, OpAnd, null, T), "NULL"},
		{bin(t, OpOr, null, T), "true"},
		{bin(t, OpOr, null, f), "NULL"},
		{&IsNull{X: N}, "true"},
		{&IsNull{X: I, Not: true}, "true"},
		{&Unary{Op: OpNot, X: nullCmp}, "NULL"},
		{&Unary{Op: OpNot, X: T}, "false"},
	} {
		if got := eval(t, c.e); got != c.want {
			t.Errorf("%s = %s, want %s", c.e, got, c.want)
		}
	}
}

func TestTypeErrors(t *testing.T) {
	I, S, T := cols[0], cols[3], cols[4]
	for _, c := range []struct {
		op   Op
		l, r Expr
	}{
		{OpAdd, I, S}, {OpEQ, I, S}, {OpAnd, I, T}, {OpConcat, I, S},
	} {
		if _, err := NewBinary(c.op, c.l, c.r); err == nil {
			t.Errorf("%s %s %s: accepted", c.l, c.op, c.r)
		}
	}
	fn, _ := Lookup("ucase")
	if _, err := NewCall(fn, []Expr{I}); err == nil || err.Error() != "Function 'UCASE' does not accept parameters (INTEGER)." {
		t.Errorf("UCASE(INT): %v", err)
	}
}

func TestFunctions(t *testing.T) {
	I, S, N := cols[0], cols[3], cols[5]
	call := func(name string, args ...Expr) Expr {
		fn, ok := Lookup(name)
		if !ok {
			t.Fatalf("no function %s", name)
		}
		e, err := NewCall(fn, args)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	for _, c := range []struct {
		e    Expr
		want string
	}{
		{call("UCASE", S), "AB"},
		{call("lcase", call("UCASE", S)), "ab"},
		{call("LEN", &Literal{V: types.StringDatum("héllo"), T: types.StringType}), "5"},
		{call("CONCAT", S, &Literal{V: types.NullDatum, T: types.StringType}, S), "abab"},
		{call("ABS", &Literal{V: types.IntDatum(-3), T: types.IntType}), "3"},
		{call("COALESCE", N, I), "7"},
		{call("TRIM", &Literal{V: types.StringDatum("  x "), T: types.StringType}), "x"},
	} {
		if got := eval(t, c.e); got != c.want {
			t.Errorf("%s = %s, want %s", c.e, got, c.want)
		}
	}
}

func BenchmarkFilterProject(b *testing.B) {
	I, S := cols[0], cols[3]
	pred, _ := NewBinary(OpAnd, mustBin(OpGT, I, IntLiteral(3)), mustBin(OpEQ, S, &Literal{V: types.StringDatum("ab"), T: types.StringType}))
	fn, _ := Lookup("UCASE")
	up, _ := NewCall(fn, []Expr{S})
	mul := mustBin(OpMul, I, IntLiteral(10))
	evs := make([]Evaluator, 0, 3)
	for _, e := range []Expr{pred, up, mul} {
		ev, _ := Compile(e)
		evs = append(evs, ev)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for _, ev := range evs {
			if _, err := ev(row); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func mustBin(op Op, l, r Expr) Expr {
	e, err := NewBinary(op, l, r)
	if err != nil {
		panic(err)
	}
	return e
}

// TestIntegerArithmeticTrees checks the compiled integer arithmetic (kept
// in int64s down the tree) against a plain interpretation of random
// expressions over INT and BIGINT columns, NULLs, extremes and constants:
// NULL propagation, division and modulo by zero, INT wrapping at every
// INT node.
func TestIntegerArithmeticTrees(t *testing.T) {
	icols := []*Column{
		{Index: 0, Name: "A", T: types.IntType},
		{Index: 1, Name: "B", T: types.BigintType},
		{Index: 2, Name: "C", T: types.IntType},
		{Index: 3, Name: "D", T: types.BigintType},
	}
	rows := []types.Row{
		{types.IntDatum(7), types.IntDatum(1 << 40), types.IntDatum(-3), types.IntDatum(0)},
		{types.IntDatum(math.MaxInt32), types.IntDatum(math.MinInt64), types.IntDatum(-1), types.IntDatum(-1)},
		{types.NullDatum, types.IntDatum(5), types.IntDatum(2), types.NullDatum},
		{types.IntDatum(math.MinInt32), types.IntDatum(math.MaxInt64), types.IntDatum(0), types.IntDatum(3)},
	}
	consts := []int64{0, 1, -1, 2, 908, 1000, math.MaxInt32}
	ops := []Op{OpAdd, OpSub, OpMul, OpDiv, OpMod}
	rng := rand.New(rand.NewPCG(1, 2))
	var gen func(depth int) Expr
	gen = func(depth int) Expr {
		if depth == 0 || rng.IntN(3) == 0 {
			if rng.IntN(2) == 0 {
				return icols[rng.IntN(len(icols))]
			}
			return IntLiteral(consts[rng.IntN(len(consts))])
		}
		return bin(t, ops[rng.IntN(len(ops))], gen(depth-1), gen(depth-1))
	}
	var interp func(e Expr, row types.Row) (int64, bool)
	interp = func(e Expr, row types.Row) (int64, bool) {
		switch n := e.(type) {
		case *Column:
			return row[n.Index].I, row[n.Index].Null
		case *Literal:
			return n.V.I, n.V.Null
		case *Binary:
			x, xn := interp(n.L, row)
			y, yn := interp(n.R, row)
			if xn || yn {
				return 0, true
			}
			var v int64
			switch n.Op {
			case OpAdd:
				v = x + y
			case OpSub:
				v = x - y
			case OpMul:
				v = x * y
			case OpDiv, OpMod:
				switch {
				case y == 0:
					return 0, true
				case y == -1 && n.Op == OpDiv:
					v = -x
				case y == -1:
					v = 0
				case n.Op == OpDiv:
					v = x / y
				default:
					v = x % y
				}
			}
			if n.T.Kind == types.Int {
				v = int64(int32(v))
			}
			return v, false
		}
		t.Fatalf("unexpected node %T", e)
		return 0, false
	}
	for i := 0; i < 2000; i++ {
		e := gen(4)
		ev, err := Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			d, err := ev(row)
			if err != nil {
				t.Fatal(err)
			}
			v, null := interp(e, row)
			if d.Null != null || (!null && d.I != v) {
				t.Fatalf("%s on %v = %s, want %d (null %v)", e, row, types.Text(d, e.Type()), v, null)
			}
		}
	}
}
