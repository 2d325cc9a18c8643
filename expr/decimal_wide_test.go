package expr

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/types"
)

func dt(p, s int) types.Type { return types.Type{Kind: types.Decimal, Precision: p, Scale: s} }

// wideLit is a DECIMAL literal of type t with the value of text.
func wideLit(text string, t types.Type) Expr {
	d, _, err := types.ParseDecimalDatum([]byte(text), t, nil)
	if err != nil {
		panic(err)
	}
	return &Literal{V: d, T: t}
}

func TestWideDecimalArithmetic(t *testing.T) {
	a := wideLit("10.1234512345123451234", dt(21, 19))
	b := wideLit("-0.0000000000000000001", dt(21, 19))
	big38 := wideLit("99999999999999999999999999999999999999", dt(38, 0))
	cases := []struct {
		e        Expr
		want, tp string
	}{
		{op2(OpAdd, a, b), "10.1234512345123451233", "DECIMAL(22, 19)"},
		{op2(OpSub, a, b), "10.1234512345123451235", "DECIMAL(22, 19)"},
		{op2(OpMul, a, lit(2)), "20.2469024690246902468", "DECIMAL(32, 19)"},
		{op2(OpMul, a, b), "-0.00000000000000000101234512345123451234", "DECIMAL(43, 38)"},
		{op2(OpDiv, a, lit(3)), "3.374483744837448374466666666667", "DECIMAL(32, 30)"}, // scale max(6, 19+10+1)
		{op2(OpDiv, a, lit(0)), "NULL", "DECIMAL(32, 30)"},
		{op2(OpMod, a, lit(3)), "1.1234512345123451234", "DECIMAL(21, 19)"},
		{op2(OpMod, must(NewUnary(OpNeg, a)), lit(3)), "-1.1234512345123451234", "DECIMAL(21, 19)"},
		{op2(OpAdd, big38, lit(1)), "100000000000000000000000000000000000000", "DECIMAL(39, 0)"},
		{op2(OpAdd, a, dec("1.5")), "11.6234512345123451234", "DECIMAL(22, 19)"},
		{op2(OpAdd, a, lit(int64(1))), "11.1234512345123451234", "DECIMAL(39, 19)"},
		{op2(OpAdd, a, lit(1.5)), "11.623451234512345", "DOUBLE"},
		{must(NewUnary(OpNeg, b)), "0.0000000000000000001", "DECIMAL(21, 19)"},
		{op2(OpAdd, a, nil), "NULL", "DECIMAL(22, 19)"},
	}
	for _, c := range cases {
		if got := evalx(t, c.e); got != c.want || c.e.Type().String() != c.tp {
			t.Errorf("%s = %s (%s), want %s (%s)", c.e, got, c.e.Type(), c.want, c.tp)
		}
	}
}

// TestWideDecimalMatchesBig checks wide arithmetic against math/big on
// random operands: exact for + - * %, HALF_UP at the result scale for /.
func TestWideDecimalMatchesBig(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	pow := func(k int) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(k)), nil) }
	ops := []Op{OpAdd, OpSub, OpMul, OpDiv, OpMod}
	for i := 0; i < 3000; i++ {
		op := ops[r.IntN(len(ops))]
		px, py := 19+r.IntN(20), 1+r.IntN(38)
		sx, sy := r.IntN(px+1), r.IntN(py+1)
		ux := new(big.Int).SetUint64(r.Uint64())
		ux.Mul(ux, new(big.Int).SetUint64(r.Uint64()))
		ux.Mod(ux, pow(px))
		uy := new(big.Int).SetUint64(r.Uint64())
		uy.Mod(uy, pow(py))
		if r.IntN(2) == 0 {
			ux.Neg(ux)
		}
		if r.IntN(2) == 0 {
			uy.Neg(uy)
		}
		tx, ty := dt(px, sx), dt(py, sy)
		x := wideLit(decText(ux, sx), tx)
		y := wideLit(decText(uy, sy), ty)
		if ty.Precision <= types.ShortDecimalPrecision {
			y = dec(decText(uy, sy)) // a short operand
			ty = y.Type()
		}
		e := must(NewBinary(op, x, y))
		rt := e.Type()
		got := evalx(t, e)
		// want = round_half_up(x op y, rt.Scale), NULL if it does not fit
		rx := new(big.Rat).SetFrac(ux, pow(sx))
		ry := new(big.Rat).SetFrac(uy, pow(sy))
		var want string
		res := new(big.Rat)
		switch {
		case (op == OpDiv || op == OpMod) && ry.Sign() == 0:
			want = "NULL"
		case op == OpAdd:
			res.Add(rx, ry)
		case op == OpSub:
			res.Sub(rx, ry)
		case op == OpMul:
			res.Mul(rx, ry)
		case op == OpDiv:
			res.Quo(rx, ry)
		case op == OpMod:
			q := new(big.Rat).Quo(rx, ry)
			qi := new(big.Int).Quo(q.Num(), q.Denom())
			res.Sub(rx, new(big.Rat).Mul(new(big.Rat).SetInt(qi), ry))
		}
		if want == "" {
			res.Mul(res, new(big.Rat).SetInt(pow(rt.Scale)))
			num, den := new(big.Int).Abs(res.Num()), res.Denom()
			q, m := new(big.Int).QuoRem(num, den, new(big.Int))
			if m.Lsh(m, 1).Cmp(den) >= 0 {
				q.Add(q, big.NewInt(1))
			}
			if res.Sign() < 0 {
				q.Neg(q)
			}
			want = decText(q, rt.Scale)
			if new(big.Int).Abs(q).Cmp(pow(rt.Precision)) >= 0 {
				want = "NULL"
			}
		}
		if got != want {
			t.Fatalf("%s (%s %s %s into %s) = %s, want %s", e, tx, op, ty, rt, got, want)
		}
	}
}

// decText is the text of unscaled u at scale s.
func decText(u *big.Int, s int) string {
	neg := u.Sign() < 0
	digits := new(big.Int).Abs(u).String()
	if s > 0 {
		if len(digits) <= s {
			digits = strings.Repeat("0", s-len(digits)+1) + digits
		}
		digits = digits[:len(digits)-s] + "." + digits[len(digits)-s:]
	}
	if neg {
		return "-" + digits
	}
	return digits
}

func TestWideDecimalCastsAndComparisons(t *testing.T) {
	w := wideLit("-12345678901234567890.125", dt(23, 3))
	runCases(t, []evalCase{
		{must(NewCast(w, types.StringType)), "-12345678901234567890.125"},
		{must(NewCast(w, types.DoubleType)), "-1.2345678901234567E19"},
		{must(NewCast(w, types.BigintType)), "6101065172474983726"}, // Java's longValue: the low 64 bits
		{must(NewCast(wideLit("-1234.9", dt(20, 1)), types.IntType)), "-1234"},
		{must(NewCast(w, dt(22, 2))), "-12345678901234567890.13"},
		{must(NewCast(w, dt(21, 2))), "NULL"}, // does not fit
		{must(NewCast(wideLit("1.5", dt(20, 1)), dt(3, 2))), "1.50"},
		{must(NewCast(dec("-1.25"), dt(20, 1))), "-1.3"},
		{must(NewCast(lit(int64(-9223372036854775807)), dt(25, 2))), "-9223372036854775807.00"},
		{must(NewCast(lit(0.1), dt(20, 19))), "0.1000000000000000000"},
		{must(NewCast(lit(" 12.5 "), dt(20, 2))), "12.50"},
		{must(NewCast(lit("x"), dt(20, 2))), "NULL"},
		{op2(OpLT, w, lit(0)), "true"},
		{op2(OpGT, w, dec("-1.5")), "false"},
		{op2(OpEQ, wideLit("1.50", dt(20, 2)), dec("1.5")), "true"},
		{op2(OpEQ, wideLit("1.50", dt(20, 2)), wideLit("1.5", dt(30, 1))), "true"},
		{op2(OpLT, w, lit(-1e30)), "false"},
		{call("GREATEST", w, wideLit("1", dt(20, 0)), dec("-3.5")), "1.000"},
		{call("LEAST", w, wideLit("1", dt(20, 0)), dec("-3.5")), "-12345678901234567890.125"},
		{call("ABS", w), "12345678901234567890.125"},
		{call("SIGN", w), "-1"},
		{call("ROUND", w), "-12345678901234567890"},
		{call("ROUND", wideLit("2.5", dt(20, 1))), "3"},
		{call("ROUND", wideLit("-2.5", dt(20, 1))), "-2"}, // ties toward positive infinity
		{call("ROUND", w, lit(2)), "-12345678901234567890.120"},
		{call("ROUND", w, lit(-2)), "-12345678901234567900.000"},
		{call("TRUNC", w, lit(1)), "-12345678901234567890.100"},
		{call("CEIL", w), "-12345678901234567890.000"},
		{call("FLOOR", w), "-12345678901234567891.000"},
	})
	if got := call("ROUND", w).Type().String(); got != "DECIMAL(20, 0)" {
		t.Errorf("ROUND(DECIMAL(23, 3)) is %s, want ksqlDB's DECIMAL(20, 0)", got)
	}
}

func TestWideDecimalAggregates(t *testing.T) {
	wt := dt(20, 2)
	rows := func(vs ...string) (out [][]types.Datum) {
		for _, v := range vs {
			if v == "NULL" {
				out = append(out, []types.Datum{types.NullDatum})
				continue
			}
			d, _, err := types.ParseDecimalDatum([]byte(v), wt, nil)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, []types.Datum{d})
		}
		return out
	}
	in := rows("123456789012345678.25", "NULL", "-0.50", "876543210987654321.75")
	for name, want := range map[string]string{
		"SUM": "999999999999999999.50",
		"AVG": "3.333333333333333e+17",
		"MIN": "-0.50",
		"MAX": "876543210987654321.75",
	} {
		if got := fold(t, name, []types.Type{wt}, in); got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	fn, _ := LookupAggregate("SUM")
	if rt, _ := fn.Check([]types.Type{wt}); !rt.Equal(wt) {
		t.Errorf("SUM(%s) is %s", wt, rt)
	}
	// Overflow: the sum no longer fits DECIMAL(20, 2); the Checker says so.
	acc := fn.New([]types.Type{wt})
	var st []byte
	for _, r := range rows("999999999999999999.99", "0.01") {
		st = append([]byte(nil), acc.Add(nil, st, r)...)
	}
	if err := acc.(Checker).Check(st); err == nil || !strings.Contains(err.Error(), "numeric field overflow") {
		t.Errorf("overflow: %v", err)
	}
	// Undo and Merge.
	u := fn.New([]types.Type{wt}).(Undoer)
	st = nil
	for _, r := range in {
		st = append([]byte(nil), acc.Add(nil, st, r)...)
	}
	st = u.Undo(nil, st, in[0])
	if got := types.Text(acc.Result(st), wt); got != "876543210987654321.25" {
		t.Errorf("after Undo: %s", got)
	}
	m := fn.New([]types.Type{wt}).(Merger)
	a := acc.Add(nil, nil, in[2])
	b := append([]byte(nil), acc.Add(nil, nil, in[3])...)
	if got := types.Text(acc.Result(m.Merge(nil, a, b)), wt); got != "876543210987654321.25" {
		t.Errorf("Merge: %s", got)
	}
}

// TestKsqlSumDecimal: new statements' SUM keeps DECIMAL(p, s) and fails
// on overflow; the registry's SUM keeps DECIMAL(18, s) and NULL.
func TestKsqlSumDecimal(t *testing.T) {
	st := dt(4, 1)
	if rt, _ := KsqlSum.Check([]types.Type{st}); !rt.Equal(st) {
		t.Errorf("KsqlSum(%s) is %s", st, rt)
	}
	acc := KsqlSum.New([]types.Type{st})
	var s []byte
	for _, v := range []int64{54, 1001, 5009} { // 5.4 + 100.1 + 500.9 = 606.4 fits
		s = append([]byte(nil), acc.Add(nil, s, []types.Datum{types.IntDatum(v)})...)
	}
	if err := acc.(Checker).Check(s); err != nil || types.Text(acc.Result(s), st) != "606.4" {
		t.Errorf("606.4: %s %v", types.Text(acc.Result(s), st), err)
	}
	s = acc.Add(nil, s, []types.Datum{types.IntDatum(4008)}) // 1007.2 does not fit DECIMAL(4, 1)
	if err := acc.(Checker).Check(s); err == nil {
		t.Error("1007.2 fit DECIMAL(4, 1)")
	}
	old, _ := LookupAggregate("SUM")
	if rt, _ := old.Check([]types.Type{st}); rt.String() != "DECIMAL(18, 1)" {
		t.Errorf("the registry's SUM(%s) is %s", st, rt)
	}
	if _, ok := old.New([]types.Type{st}).(Checker); ok {
		t.Error("the registry's SUM of a short DECIMAL fails on overflow")
	}
	if _, ok := KsqlSum.New([]types.Type{types.BigintType}).(Checker); ok {
		t.Error("a BIGINT sum is checked")
	}
}

func TestAmbiguousExtremum(t *testing.T) {
	I, B, D := types.IntType, types.BigintType, types.DoubleType
	for _, c := range []struct {
		args []types.Type
		msg  string
	}{
		{[]types.Type{I, B}, "Function 'greatest' cannot be resolved due to ambiguous method parameters (INTEGER, BIGINT)."},
		{[]types.Type{I, B, dt(50, 30)}, "(INTEGER, BIGINT, DECIMAL(50, 30))"},
		{[]types.Type{I, dt(5, 2)}, "(INTEGER, DECIMAL(5, 2))"},
		{[]types.Type{I, B, dt(30, 18), D}, ""},
		{[]types.Type{dt(9, 2), dt(7, 6)}, ""},
		{[]types.Type{I, I, types.UnknownType}, ""},
	} {
		err := AmbiguousExtremum("GREATEST", c.args)
		if (err == nil) != (c.msg == "") || err != nil && !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%v: %v, want %q", c.args, err, c.msg)
		}
	}
}

func TestNegLiteral(t *testing.T) {
	w := wideLit("0.12345678905234567891", dt(20, 20))
	if got := types.Text(NegLiteral(w.(*Literal)).V, dt(20, 20)); got != "-0.12345678905234567891" {
		t.Errorf("-wide: %s", got)
	}
	if got := types.Text(NegLiteral(w.(*Literal)).V, dt(20, 20)); got != "-0.12345678905234567891" {
		t.Errorf("the literal changed: %s", got)
	}
	if got := NegLiteral(dec("1.5").(*Literal)).V.I; got != -15 {
		t.Errorf("-short: %d", got)
	}
}
