package expr

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/types"
)

// lambda builds (params) => body with the parameter types the binder
// would get from LambdaParamTypes for fn's argument at pos.
func lambda(t *testing.T, fn string, prior []Expr, pos int, params []string, body func(vars []Expr) Expr) *Lambda {
	t.Helper()
	pts, err := LambdaParamTypes(fn, exprTypes(prior), pos, len(params))
	if err != nil {
		t.Fatal(err)
	}
	vars := make([]Expr, len(params))
	for i, p := range params {
		vars[i] = NewLambdaVar(i, p, pts[i])
	}
	return NewLambda(params, pts, body(vars))
}

func TestLambdas(t *testing.T) {
	I, ARR, M, SA := col("I"), col("ARR"), col("M"), col("SA")
	ucase := func(x Expr) Expr { return must(NewCall(mustLookup("UCASE"), []Expr{x})) }
	concat := func(xs ...Expr) Expr { return must(NewCall(mustLookup("CONCAT"), xs)) }
	nums := arr(1, 2, 3, 4)

	plusOne := lambda(t, "TRANSFORM", []Expr{ARR}, 1, []string{"X"}, func(v []Expr) Expr { return op2(OpAdd, v[0], 1) })
	upper := lambda(t, "TRANSFORM", []Expr{SA}, 1, []string{"X"}, func(v []Expr) Expr { return ucase(v[0]) })
	withCol := lambda(t, "TRANSFORM", []Expr{ARR}, 1, []string{"X"}, func(v []Expr) Expr { return op2(OpAdd, v[0], I) })
	keyUp := lambda(t, "TRANSFORM", []Expr{M}, 1, []string{"K", "V"}, func(v []Expr) Expr { return ucase(v[0]) })
	valTimes := lambda(t, "TRANSFORM", []Expr{M}, 2, []string{"K", "V"}, func(v []Expr) Expr { return op2(OpMul, v[1], 10) })
	even := lambda(t, "FILTER", []Expr{nums}, 1, []string{"X"}, func(v []Expr) Expr { return op2(OpEQ, op2(OpMod, v[0], 2), 0) })
	bigVal := lambda(t, "FILTER", []Expr{M}, 1, []string{"K", "V"}, func(v []Expr) Expr { return op2(OpGT, v[1], 1) })
	sum := lambda(t, "REDUCE", []Expr{nums, lit(0)}, 2, []string{"S", "X"}, func(v []Expr) Expr { return op2(OpAdd, v[0], v[1]) })
	cat := lambda(t, "REDUCE", []Expr{SA, lit("")}, 2, []string{"S", "X"}, func(v []Expr) Expr { return concat(v[0], v[1], v[0]) })
	mapSum := lambda(t, "REDUCE", []Expr{M, lit(10)}, 2, []string{"S", "K", "V"}, func(v []Expr) Expr { return op2(OpAdd, v[0], v[2]) })
	keys := lambda(t, "REDUCE", []Expr{M, lit("")}, 2, []string{"S", "K", "V"}, func(v []Expr) Expr { return concat(v[0], v[1]) })

	// nested: the inner lambda reads its own parameter and the outer one
	nested := lambda(t, "TRANSFORM", []Expr{arr(1, 2)}, 1, []string{"X"}, func(v []Expr) Expr {
		inner := lambda(t, "TRANSFORM", []Expr{arr(10, 20)}, 1, []string{"Y"}, func(w []Expr) Expr {
			return op2(OpAdd, v[0], w[0])
		})
		return call("TRANSFORM", arr(10, 20), inner)
	})
	nestedArr := arr(arr(1, 2), arr(3))
	nested2 := lambda(t, "TRANSFORM", []Expr{nestedArr}, 1, []string{"X"}, func(v []Expr) Expr {
		inner := lambda(t, "TRANSFORM", []Expr{v[0]}, 1, []string{"Y"}, func(w []Expr) Expr { return op2(OpMul, w[0], 10) })
		return call("TRANSFORM", v[0], inner)
	})
	nestedStr := lambda(t, "TRANSFORM", []Expr{arr(arr("a", "b"), arr("c"))}, 1, []string{"X"}, func(v []Expr) Expr {
		inner := lambda(t, "TRANSFORM", []Expr{v[0]}, 1, []string{"Y"}, func(w []Expr) Expr { return ucase(w[0]) })
		return call("TRANSFORM", v[0], inner)
	})
	// a REDUCE inside a FILTER: keep arrays whose sum is above 2
	sumAbove := lambda(t, "FILTER", []Expr{nestedArr}, 1, []string{"X"}, func(v []Expr) Expr {
		inner := lambda(t, "REDUCE", []Expr{v[0], lit(0)}, 2, []string{"S", "Y"}, func(w []Expr) Expr { return op2(OpAdd, w[0], w[1]) })
		return op2(OpGT, call("REDUCE", v[0], 0, inner), 2)
	})
	// positional variables (no name) refer to the innermost lambda
	positional := NewLambda([]string{"X"}, []types.Type{types.IntType}, op2(OpMul, NewLambdaVar(0, "", types.IntType), 2))

	// the body is converted to the state's type
	decs := arr(dec("1.25"), dec("2.50"))
	decSum := lambda(t, "REDUCE", []Expr{decs, cast(0, tDec)}, 2, []string{"S", "X"}, func(v []Expr) Expr { return op2(OpAdd, v[0], v[1]) })
	intIntoBig := lambda(t, "REDUCE", []Expr{nums, lit(int64(0))}, 2, []string{"S", "X"}, func(v []Expr) Expr { return v[1] })

	runCases(t, []evalCase{
		{call("REDUCE", decs, cast(0, tDec), decSum), "3.75"},
		{call("REDUCE", nums, int64(0), intIntoBig), "4"},
		{call("TRANSFORM", ARR, plusOne), "[11, 21, 31]"},
		{call("TRANSFORM", SA, upper), "[X, Y]"},
		{call("TRANSFORM", ARR, withCol), "[17, 27, 37]"},
		{call("TRANSFORM", cast(nil, tArrInt), plusOne), "NULL"},
		{call("TRANSFORM", ARR, positional), "[20, 40, 60]"},
		{call("TRANSFORM", M, keyUp, valTimes), "{A=10, B=20}"},
		{call("FILTER", nums, even), "[2, 4]"},
		{call("FILTER", M, bigVal), "{b=2}"},
		{call("REDUCE", nums, 0, sum), "10"},
		{call("REDUCE", SA, "", cat), "xyx"},
		{call("REDUCE", M, 10, mapSum), "13"},
		{call("REDUCE", M, "", keys), "ab"},
		{call("REDUCE", cast(nil, tArrInt), 5, sum), "5"},
		{call("REDUCE", nums, cast(nil, types.IntType), sum), "NULL"},
		{call("TRANSFORM", arr(1, 2), nested), "[[11, 21], [12, 22]]"},
		{call("TRANSFORM", nestedArr, nested2), "[[10, 20], [30]]"},
		{call("TRANSFORM", arr(arr("a", "b"), arr("c")), nestedStr), "[[A, B], [C]]"},
		{call("FILTER", nestedArr, sumAbove), "[[1, 2], [3]]"},
	})

	// evaluating twice gives the same answer (scratch buffers are reset)
	e := call("TRANSFORM", M, keyUp, valTimes)
	ev, err := Compile(e)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		d, err := ev(xrow)
		if err != nil || render(d, e.Type()) != "{A=10, B=20}" {
			t.Fatalf("run %d: %s %v", i, render(d, e.Type()), err)
		}
	}
	if e.Type().String() != "MAP<STRING, INTEGER>" {
		t.Errorf("TRANSFORM over a map is %s", e.Type())
	}
}

func TestLambdaErrors(t *testing.T) {
	ARR, M := col("ARR"), col("M")
	for _, c := range []struct {
		fn     string
		args   []types.Type
		pos, n int
	}{
		{"TRANSFORM", []types.Type{tArrInt}, 1, 2},
		{"TRANSFORM", []types.Type{tMapSI}, 1, 1},
		{"TRANSFORM", []types.Type{types.IntType}, 1, 1},
		{"TRANSFORM", []types.Type{tArrInt}, 2, 1},
		{"FILTER", []types.Type{tMapSI}, 2, 2},
		{"REDUCE", []types.Type{tArrInt}, 1, 2},
		{"REDUCE", []types.Type{tArrInt, types.UnknownType}, 2, 2},
		{"REDUCE", []types.Type{tArrInt, types.IntType}, 2, 1},
		{"REDUCE", []types.Type{tMapSI, types.IntType}, 2, 2},
		{"UCASE", []types.Type{types.StringType}, 1, 1},
		{"TRANSFORM", nil, 0, 1},
	} {
		if _, err := LambdaParamTypes(c.fn, c.args, c.pos, c.n); !isTypeError(err) {
			t.Errorf("LambdaParamTypes(%s, %v, %d, %d): %v, want a type error", c.fn, c.args, c.pos, c.n, err)
		}
	}
	if ts, err := LambdaParamTypes("reduce", []types.Type{tMapSI, types.DoubleType}, 2, 3); err != nil || len(ts) != 3 || ts[0].Kind != types.Double || ts[1].Kind != types.String || ts[2].Kind != types.Int {
		t.Errorf("REDUCE over a map: %v %v", ts, err)
	}

	x := NewLambdaVar(0, "X", types.IntType)
	intLambda := NewLambda([]string{"X"}, []types.Type{types.IntType}, op2(OpAdd, x, 1))
	strLambda := NewLambda([]string{"X"}, []types.Type{types.StringType}, NewLambdaVar(0, "X", types.StringType))
	boolLambda := NewLambda([]string{"X"}, []types.Type{types.IntType}, op2(OpGT, x, 1))
	twoParams := NewLambda([]string{"S", "X"}, []types.Type{types.BigintType, types.IntType}, op2(OpAdd, NewLambdaVar(0, "S", types.BigintType), x))
	for name, args := range map[string][]Expr{
		"FILTER with an INT lambda":        {ARR, intLambda},
		"TRANSFORM with wrong param type":  {ARR, strLambda},
		"TRANSFORM with a value":           {ARR, lit(1)},
		"TRANSFORM of a map with 1 lambda": {M, intLambda},
		"REDUCE with a lambda state":       {ARR, intLambda, twoParams},
		"REDUCE with a mismatched state":   {ARR, lit(0), twoParams},
		"UCASE with a lambda":              {intLambda},
		"TRANSFORM to NULL":                {ARR, NewLambda([]string{"X"}, []types.Type{types.IntType}, lit(nil))},
		"REDUCE narrowing the state": {arr(int64(1)), lit(0), NewLambda([]string{"S", "X"}, []types.Type{types.IntType, types.BigintType},
			op2(OpAdd, NewLambdaVar(0, "S", types.IntType), NewLambdaVar(1, "X", types.BigintType)))},
	} {
		fn := mustLookup(map[bool]string{true: "FILTER", false: "TRANSFORM"}[name[0] == 'F'])
		switch name[0] {
		case 'R':
			fn = mustLookup("REDUCE")
		case 'U':
			fn = mustLookup("UCASE")
		}
		if _, err := NewCall(fn, args); !isTypeError(err) {
			t.Errorf("%s: %v, want a type error", name, err)
		}
	}
	_ = boolLambda
	if _, err := Compile(intLambda); err == nil {
		t.Error("a bare lambda compiled")
	}
	if _, err := Compile(x); err == nil {
		t.Error("a lambda variable outside a lambda compiled")
	}
	bad := NewLambda([]string{"X"}, []types.Type{types.IntType}, NewLambdaVar(3, "", types.IntType))
	if _, err := Compile(call("TRANSFORM", ARR, bad)); err == nil {
		t.Error("a lambda variable with a bad index compiled")
	}
}
