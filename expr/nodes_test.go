package expr

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/types"
)

func TestCastMatrix(t *testing.T) {
	d := func(p, s int) types.Type { return types.Type{Kind: types.Decimal, Precision: p, Scale: s} }
	S, I, BI, DB := types.StringType, types.IntType, types.BigintType, types.DoubleType
	runCases(t, []evalCase{
		// numeric to numeric
		{cast(7, BI), "7"},
		{cast(7, DB), "7.0"},
		{cast(7, d(4, 2)), "7.00"},
		{cast(123, d(3, 1)), "NULL"}, // does not fit
		{cast(int64(1<<40), I), "0"}, // BIGINT to INT wraps as Java's (int)
		{cast(int64(1<<40)+5, I), "5"},
		{cast(2.7, I), "2"},
		{cast(-2.7, I), "-2"},
		{cast(1e20, I), "2147483647"}, // saturates
		{cast(-1e20, BI), "-9223372036854775808"},
		{cast(math.NaN(), I), "0"},
		{cast(2.5, d(3, 0)), "3"}, // HALF_UP
		{cast(-2.5, d(3, 0)), "-3"},
		{cast(1.005, d(4, 2)), "1.01"}, // from the shortest decimal form, as BigDecimal.valueOf
		{cast(math.NaN(), d(4, 2)), "NULL"},
		{cast(1e300, d(18, 0)), "NULL"},
		{cast(dec("12.345"), I), "12"},
		{cast(dec("-12.345"), BI), "-12"},
		{cast(dec("12.345"), DB), "12.345"},
		{cast(dec("12.345"), d(4, 1)), "12.3"},
		{cast(dec("12.345"), d(5, 2)), "12.35"},
		{cast(dec("-12.345"), d(5, 2)), "-12.35"},
		{cast(dec("12.345"), d(6, 4)), "12.3450"},
		{cast(dec("999.99"), d(4, 1)), "NULL"}, // rounds to 1000.0
		// to STRING
		{cast(7, S), "7"},
		{cast(true, S), "true"},
		{cast(1.0, S), "1.0"},
		{cast(1e10, S), "1.0E10"},
		{cast(0.001, S), "0.001"},
		{cast(1.5e-5, S), "1.5E-5"},
		{cast(123456.789, S), "123456.789"},
		{cast(math.Inf(1), S), "Infinity"},
		{cast(dec("-0.05"), S), "-0.05"},
		{cast(date("2021-10-11"), S), "2021-10-11"},
		{cast(tm("13:25"), S), "13:25:00"},
		{cast(tm("13:25:01.5"), S), "13:25:01.5"},
		{cast(ts("2021-10-11T12:00:00Z"), S), "2021-10-11T12:00:00.000"},
		{cast(arr(1, 2), S), "[1, 2]"},
		{cast(arr("a", nil), S), "[a, null]"},
		{cast(mp("a", 1, "b", 2), S), "{a=1, b=2}"},
		{cast(st("A", 1, "B", "x"), S), "Struct{A=1,B=x}"},
		{cast(st("A", cast(nil, I), "B", "x"), S), "Struct{B=x}"},
		// from STRING
		{cast(" 42 ", I), "42"},
		{cast("+42", I), "42"},
		{cast("x", I), "NULL"},
		{cast("", I), "NULL"},
		{cast("99999999999", I), "NULL"},
		{cast("99999999999", BI), "99999999999"},
		{cast("4.2", I), "NULL"},
		{cast("1.5", DB), "1.5"},
		{cast("1e3", DB), "1000.0"},
		{cast("NaN", DB), "NaN"},
		{cast("abc", DB), "NULL"},
		{cast("1.5", d(3, 1)), "1.5"},
		{cast("1.25", d(2, 1)), "1.3"},
		{cast("-1.25", d(2, 1)), "-1.3"},
		{cast("1e2", d(5, 1)), "100.0"},
		{cast("12345", d(3, 0)), "NULL"},
		{cast("x", d(3, 0)), "NULL"},
		{cast("true", types.BooleanType), "true"},
		{cast(" TRUE ", types.BooleanType), "true"},
		{cast("Yes", types.BooleanType), "true"},
		{cast("t", types.BooleanType), "true"},
		{cast("no", types.BooleanType), "false"},
		{cast("banana", types.BooleanType), "false"},
		{cast("2021-10-11", types.DateType), "2021-10-11"},
		{cast("2021-02-30", types.DateType), "NULL"},
		{cast("bad", types.DateType), "NULL"},
		{cast("13:25:01.5", types.TimeType), "13:25:01.5"},
		{cast("25:00", types.TimeType), "NULL"},
		{cast("2021-10-11T12:00:00Z", types.TimestampType), "2021-10-11T12:00:00.000"},
		{cast("2021-10-11T12:00:00.123+02:00", types.TimestampType), "2021-10-11T10:00:00.123"},
		{cast("2021-10-11 12:30", types.TimestampType), "2021-10-11T12:30:00.000"},
		{cast("2021-10-11T12", types.TimestampType), "2021-10-11T12:00:00.000"},
		{cast("2021-10-11", types.TimestampType), "2021-10-11T00:00:00.000"},
		{cast("1969-12-31T23:59:59.999Z", types.TimestampType), "1969-12-31T23:59:59.999"},
		{cast("2021-10-11X", types.TimestampType), "NULL"},
		// temporal
		{cast(ts("2021-10-11T12:00:00Z"), types.DateType), "2021-10-11"},
		{cast(ts("2021-10-11T12:00:00Z"), types.TimeType), "12:00:00"},
		{cast(ts("1969-12-31T23:00:00Z"), types.DateType), "1969-12-31"},
		{cast(ts("1969-12-31T23:00:00Z"), types.TimeType), "23:00:00"},
		{cast(date("2021-10-11"), types.TimestampType), "2021-10-11T00:00:00.000"},
		// composites
		{cast(arr(1, 2), tArrStr), "[1, 2]"},
		{cast(arr("1", "x", nil), tArrInt), "[1, null, null]"},
		{cast(arr(arr(1), arr(2, 3)), arrayOf(tArrStr)), "[[1], [2, 3]]"},
		{cast(mp("a", 1), mapOf(S, DB)), "{a=1.0}"},
		{cast(mp("1", "x", "2", "y"), mapOf(I, S)), "{1=x, 2=y}"},
		{cast(st("A", 1, "B", "x"), types.Type{Kind: types.Struct, Fields: []types.Field{{Name: "B", Type: S}, {Name: "C", Type: I}}}), "Struct{B=x}"},
		{cast(st("A", 1, "B", "x"), types.Type{Kind: types.Struct, Fields: []types.Field{{Name: "A", Type: S}}}), "Struct{A=1}"},
		{cast(nil, I), "NULL"},
		{cast(col("N"), S), "NULL"},
		{cast(col("DEC"), DB), "12.34"},
		{cast(col("TS"), S), "2021-04-01T09:05:07.089"},
	})
	for _, c := range []struct {
		from Expr
		to   types.Type
	}{
		{lit(true), I}, {lit([]byte("x")), S}, {lit(1), types.DateType}, {arr(1), tMapSI},
		{lit(1), types.BooleanType}, {date("2021-01-01"), types.TimeType}, {lit("x"), types.BytesType},
		{arr(true), tArrInt}, {lit(1), d(types.MaxDecimalPrecision+1, 2)}, {lit(1), d(3, 4)},
	} {
		if _, err := NewCast(c.from, c.to); !isTypeError(err) {
			t.Errorf("CAST(%s AS %s): %v, want a type error", c.from, c.to, err)
		}
	}
}

func TestDecimalArithmetic(t *testing.T) {
	typ := func(e Expr) string { return e.Type().String() }
	cases := []struct {
		e        Expr
		want, tp string
	}{
		{op2(OpAdd, dec("1.50"), dec("2.125")), "3.625", "DECIMAL(5, 3)"},
		{op2(OpSub, dec("1.5"), dec("2.25")), "-0.75", "DECIMAL(4, 2)"},
		{op2(OpMul, dec("1.5"), dec("2.25")), "3.375", "DECIMAL(6, 3)"},
		{op2(OpDiv, dec("1.0"), lit(3)), "0.333333333333", "DECIMAL(13, 12)"},
		{op2(OpDiv, dec("2.0"), lit(3)), "0.666666666667", "DECIMAL(13, 12)"},
		{op2(OpDiv, dec("10.00"), dec("4.00")), "2.500000", "DECIMAL(10, 6)"},
		{op2(OpDiv, dec("-10.00"), dec("3.00")), "-3.333333", "DECIMAL(10, 6)"},
		{op2(OpDiv, dec("1.5"), lit(0)), "NULL", "DECIMAL(13, 12)"},
		{op2(OpMod, dec("5.5"), lit(2)), "1.5", "DECIMAL(2, 1)"},
		{op2(OpMod, dec("-5.5"), lit(2)), "-1.5", "DECIMAL(2, 1)"},
		{op2(OpMod, dec("5.5"), dec("0.0")), "NULL", "DECIMAL(1, 1)"},
		{op2(OpAdd, dec("1.5"), lit(1)), "2.5", "DECIMAL(12, 1)"},
		{op2(OpAdd, dec("1.5"), lit(int64(1))), "2.5", "DECIMAL(18, 1)"},
		{op2(OpAdd, dec("1.5"), lit(1.0)), "2.5", "DOUBLE"},
		{op2(OpMul, col("DEC"), lit(2)), "24.68", "DECIMAL(16, 2)"},
		{op2(OpAdd, dec("999999999999999999"), lit(1)), "NULL", "DECIMAL(18, 0)"}, // overflow
		{op2(OpMul, dec("123456789.123456789"), lit(2)), "246913578.246914", "DECIMAL(18, 6)"},
		{op2(OpMul, dec("0.000000001"), dec("0.000000001")), "0.00000000000000000", "DECIMAL(18, 17)"}, // the scale is capped: 1E-18 rounds away,
		{op2(OpDiv, dec("99999999.99"), dec("0.01")), "9999999999.000000", "DECIMAL(16, 6)"},
		{op2(OpDiv, dec("1"), dec("0.000000000000000007")), "NULL", "DECIMAL(18, 6)"}, // 1.4E17 needs 24 digits,
		{op2(OpSub, dec("-999999999999999999"), dec("999999999999999999")), "NULL", "DECIMAL(18, 0)"},
		{must(NewUnary(OpNeg, dec("1.25"))), "-1.25", "DECIMAL(3, 2)"},
	}
	for _, c := range cases {
		if got := evalx(t, c.e); got != c.want || typ(c.e) != c.tp {
			t.Errorf("%s = %s (%s), want %s (%s)", c.e, got, typ(c.e), c.want, c.tp)
		}
	}
	// DecimalLiteral typing
	for s, want := range map[string]string{"1.50": "DECIMAL(3, 2)", "0.05": "DECIMAL(2, 2)", "-12.5": "DECIMAL(3, 1)", "7": "DECIMAL(1, 0)"} {
		if got := dec(s).Type().String(); got != want {
			t.Errorf("DecimalLiteral(%s) is %s, want %s", s, got, want)
		}
	}
	// More than 18 digits: a wide DECIMAL.
	if l, err := DecimalLiteral("-1234567890.1234567890"); err != nil || l.T.String() != "DECIMAL(20, 10)" || types.Text(l.V, l.T) != "-1234567890.1234567890" {
		t.Errorf("a 20-digit decimal literal: %v %v", l, err)
	}
}

// TestDecimalFastPathMatchesBig checks the 128-bit arithmetic against
// math/big on random operands.
func TestDecimalFastPathMatchesBig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	ops := []Op{OpAdd, OpSub, OpMul, OpDiv, OpMod}
	for i := 0; i < 20000; i++ {
		op := ops[r.IntN(len(ops))]
		px, py := 1+r.IntN(18), 1+r.IntN(18)
		sx, sy := r.IntN(px+1), r.IntN(py+1)
		x := r.Int64N(pow10[px]) * int64(1-2*r.IntN(2))
		y := r.Int64N(pow10[py]) * int64(1-2*r.IntN(2))
		rt := decimalResult(op, types.Type{Kind: types.Decimal, Precision: px, Scale: sx}, types.Type{Kind: types.Decimal, Precision: py, Scale: sy})
		got, ok := decArith(op, x, sx, y, sy, rt.Precision, rt.Scale)
		want, wok := decArithBig(op, x, sx, y, sy, rt.Precision, rt.Scale)
		if ok != wok || ok && got != want {
			t.Fatalf("%d(s%d) %s %d(s%d) into %s: fast %d %v, big %d %v", x, sx, op, y, sy, rt, got, ok, want, wok)
		}
	}
}

func TestArithmeticEdges(t *testing.T) {
	runCases(t, []evalCase{
		{op2(OpDiv, 1.0, 0), "Infinity"}, // DOUBLE follows IEEE 754
		{op2(OpDiv, lit(int64(math.MinInt64)), lit(int64(-1))), "-9223372036854775808"},
		{op2(OpAdd, lit(math.MaxInt32), 1), "-2147483648"},
		{op2(OpAdd, nil, 1), "NULL"},
		{op2(OpMod, -7, 3), "-1"},
		{op2(OpMod, 7.5, 2), "1.5"},
		{must(NewUnary(OpNeg, lit(math.MinInt32))), "-2147483648"},
		{op2(OpAdd, "a", "b"), "ab"},
		{op2(OpConcat, "a", nil), "NULL"},
	})
	for _, c := range []struct {
		op   Op
		l, r Expr
	}{
		{OpAdd, lit(1), lit("a")}, {OpAdd, lit(true), lit(1)}, {OpMul, date("2021-01-01"), lit(1)},
		{OpSub, lit("a"), lit("b")}, {OpAdd, arr(1), arr(2)},
	} {
		if _, err := NewBinary(c.op, c.l, c.r); !isTypeError(err, c.op.String()) {
			t.Errorf("%s %s %s: %v, want a type error", c.l, c.op, c.r, err)
		}
	}
}

func TestComparisons(t *testing.T) {
	runCases(t, []evalCase{
		{op2(OpEQ, dec("1.50"), dec("1.5")), "true"},
		{op2(OpLT, dec("1.5"), 2), "true"},
		{op2(OpEQ, dec("1.5"), 1.5), "true"},
		{op2(OpGT, col("DEC"), dec("12.339")), "true"},
		{op2(OpLT, lit(int64(1)), 1.5), "true"},
		{op2(OpEQ, col("DT"), "2021-10-11"), "true"},
		{op2(OpLT, "2021-10-10", col("DT")), "true"},
		{op2(OpGT, col("TS"), date("2021-04-01")), "true"},
		{op2(OpLT, col("TS"), date("2021-04-02")), "true"},
		{op2(OpLT, col("TM"), "14:00:00"), "true"},
		{op2(OpGE, col("TS"), "2021-04-01T09:05:07.089"), "true"},
		{op2(OpEQ, col("TS"), "not a time"), "NULL"},
		{op2(OpEQ, arr(1, 2), arr(1, 2)), "true"},
		{op2(OpNE, arr(1, 2), arr(1, 3)), "true"},
		{op2(OpEQ, arr(1, 2), arr(int64(1), int64(2))), "true"},
		{op2(OpEQ, mp("a", 1, "b", 2), mp("b", 2, "a", 1)), "true"},
		{op2(OpEQ, st("A", 1), st("A", 1)), "true"},
		{op2(OpEQ, st("A", 1), st("A", 2)), "false"},
		{op2(OpEQ, col("ARR"), arr(10, 20, 30)), "true"},
		{op2(OpLT, false, true), "true"},
		{op2(OpEQ, []byte("K"), col("BY")), "true"},
		{op2(OpEQ, nil, 1), "NULL"},
		{op2(OpLT, "abc", "abd"), "true"},
		{op2(OpEQ, math.NaN(), math.NaN()), "true"},
	})
	for _, c := range []struct {
		op   Op
		l, r Expr
	}{
		{OpLT, arr(1), arr(2)}, {OpEQ, arr(1), arr("a")}, {OpEQ, lit(1), lit("one")},
		{OpEQ, lit(true), lit(1)}, {OpEQ, date("2021-01-01"), tm("10:00")}, {OpEQ, mp("a", 1), arr(1)},
		{OpGT, st("A", 1), st("A", 2)}, {OpEQ, st("A", 1), st("B", 1)},
	} {
		if _, err := NewBinary(c.op, c.l, c.r); !isTypeError(err) {
			t.Errorf("%s %s %s: %v, want a type error", c.l, c.op, c.r, err)
		}
	}
}

func TestInBetween(t *testing.T) {
	in := func(x any, not bool, list ...any) Expr { return must(NewIn(lit(x), lits(list...), not)) }
	between := func(x, lo, hi any, not bool) Expr { return must(NewBetween(lit(x), lit(lo), lit(hi), not)) }
	runCases(t, []evalCase{
		{in(7, false, 1, 7), "true"},
		{in(7, false, 1, 2), "false"},
		{in(7, false, 1, nil), "NULL"},
		{in(7, false, 7, nil), "true"},
		{in(nil, false, 1), "NULL"},
		{in(7, true, 1, 2), "true"},
		{in(7, true, 1, nil), "NULL"},
		{in(7, true, 7), "false"},
		{in(col("I"), false, int64(7), 8), "true"},
		{in(col("I"), false, 7.0), "true"},
		{in(col("I"), false, col("B"), 7), "true"},
		{in(col("I"), false, col("N"), 8), "NULL"},
		{in(col("S"), false, "x", "ab"), "true"},
		{in(col("S"), true, "x", "ab"), "false"},
		{in(col("DEC"), false, dec("12.340")), "true"},
		{in(col("DT"), false, "2021-10-10", "2021-10-11"), "true"},
		{in(col("ARR"), false, arr(10, 20, 30)), "true"},
		{between(7, 1, 10, false), "true"},
		{between(7, 8, 10, false), "false"},
		{between(7, 8, 10, true), "true"},
		{between(7, 7, 7, false), "true"},
		{between(7, nil, 10, false), "NULL"},
		{between(7, nil, 5, false), "false"},
		{between(7, nil, 5, true), "true"},
		{between(nil, 1, 5, false), "NULL"},
		{between("b", "a", "c", false), "true"},
		{between(col("DEC"), 12, 13, false), "true"},
		{between(col("TS"), "2021-04-01", "2021-04-02", false), "true"},
	})
	if _, err := NewIn(lit(1), lits("a"), false); !isTypeError(err) {
		t.Errorf("1 IN ('a'): %v", err)
	}
	if _, err := NewIn(lit(1), nil, false); !isTypeError(err) {
		t.Errorf("1 IN (): %v", err)
	}
	if _, err := NewBetween(lit(1), lit("a"), lit(2), false); !isTypeError(err) {
		t.Errorf("1 BETWEEN 'a' AND 2: %v", err)
	}
	if _, err := NewBetween(arr(1), arr(0), arr(2), false); !isTypeError(err) {
		t.Errorf("BETWEEN on arrays: %v", err)
	}
}

func TestLike(t *testing.T) {
	like := func(x, p any, esc any, not bool) Expr {
		var e Expr
		if esc != nil {
			e = lit(esc)
		}
		return must(NewLike(lit(x), lit(p), e, not))
	}
	cases := []struct {
		s, p string
		esc  any
		want bool
	}{
		{"abc", "a%", nil, true},
		{"abc", "%c", nil, true},
		{"abc", "%b%", nil, true},
		{"abc", "%", nil, true},
		{"", "%", nil, true},
		{"", "", nil, true},
		{"a", "", nil, false},
		{"abc", "a_c", nil, true},
		{"abc", "a_", nil, false},
		{"abc", "___", nil, true},
		{"abc", "____", nil, false},
		{"abc", "abc", nil, true},
		{"abc", "ABC", nil, false}, // case-sensitive
		{"abc", "b%", nil, false},
		{"héllo", "h_llo", nil, true},
		{"日本語", "_本_", nil, true},
		{"aaa", "%a%a%a%", nil, true},
		{"aa", "%a%a%a%", nil, false},
		{"mississippi", "%iss%ppi", nil, true},
		{"mississippi", "m%iss%iss%", nil, true},
		{"mississippi", "m%ss_s%pi", nil, true},
		{"mississippi", "%sip%x", nil, false},
		{"a%c", "a!%c", "!", true},
		{"abc", "a!%c", "!", false},
		{"100%", "100!%", "!", true},
		{"1000", "100!%", "!", false},
		{"a_b", `a\_b`, `\`, true},
		{"axb", `a\_b`, `\`, false},
		{`a\b`, `a\\b`, `\`, true},
		{"a!b", "a!!b", "!", true},
		{"x%y", "%!%%", "!", true},
		{"xy", "%!%%", "!", false},
		{"ab", "a%%b", nil, true},
		{"abcabd", "%abd", nil, true},
	}
	for _, c := range cases {
		for _, not := range []bool{false, true} {
			e := like(c.s, c.p, c.esc, not)
			want := "true"
			if c.want == not {
				want = "false"
			}
			if got := evalx(t, e); got != want {
				t.Errorf("%s = %s, want %s", e, got, want)
			}
			// the same pattern from a column (compiled per row)
			row := types.Row{types.StringDatum(c.s), types.StringDatum(c.p)}
			var esc Expr
			if c.esc != nil {
				esc = lit(c.esc)
			}
			ev, err := Compile(must(NewLike(&Column{Index: 0, Name: "X", T: types.StringType}, &Column{Index: 1, Name: "P", T: types.StringType}, esc, not)))
			if err != nil {
				t.Fatal(err)
			}
			if d, _ := ev(row); render(d, types.BooleanType) != want {
				t.Errorf("column LIKE %q (%v): %s, want %s", c.p, c.esc, render(d, types.BooleanType), want)
			}
		}
	}
	runCases(t, []evalCase{
		{like(nil, "a%", nil, false), "NULL"},
		{like("a", nil, nil, false), "NULL"},
		{like(col("NS"), "%", nil, true), "NULL"},
		{like(col("S"), col("S"), nil, false), "true"},
	})
	for _, c := range []struct {
		x, p, esc Expr
	}{
		{lit("x"), lit("x!"), lit("!")},
		{lit("x"), lit("x"), lit("ab")},
		{lit(1), lit("1"), nil},
		{lit("x"), lit("x"), col("S")},
	} {
		if _, err := NewLike(c.x, c.p, c.esc, false); !isTypeError(err) {
			t.Errorf("LIKE %s ESCAPE %v: %v, want a type error", c.p, c.esc, err)
		}
	}
}

func TestDistinctIsTrue(t *testing.T) {
	dist := func(l, r any, not bool) Expr { return must(NewDistinct(lit(l), lit(r), not)) }
	is := func(x any, want, not bool) Expr { return must(NewIsTrue(lit(x), want, not)) }
	runCases(t, []evalCase{
		{dist(nil, nil, false), "false"},
		{dist(1, nil, false), "true"},
		{dist(nil, 1, false), "true"},
		{dist(1, 1, false), "false"},
		{dist(1, 2, false), "true"},
		{dist(1, 1, true), "true"},
		{dist(nil, nil, true), "true"},
		{dist(col("N"), 1, true), "false"},
		{dist(arr(1, 2), arr(1, 2), false), "false"},
		{dist(dec("1.0"), 1, false), "false"},
		{is(true, true, false), "true"},
		{is(false, true, false), "false"},
		{is(nil, true, false), "false"},
		{is(nil, true, true), "true"},
		{is(false, false, false), "true"},
		{is(nil, false, true), "true"},
		{is(true, false, true), "true"},
		{is(op2(OpGT, col("N"), 1), true, true), "true"},
	})
	if _, err := NewDistinct(lit(1), lit("a"), false); !isTypeError(err) {
		t.Errorf("1 IS DISTINCT FROM 'a': %v", err)
	}
	if _, err := NewIsTrue(lit(1), true, false); !isTypeError(err) {
		t.Errorf("1 IS TRUE: %v", err)
	}
}

func TestCase(t *testing.T) {
	searched := func(els any, wt ...any) Expr {
		var ws, ts []Expr
		for i := 0; i < len(wt); i += 2 {
			ws, ts = append(ws, lit(wt[i])), append(ts, lit(wt[i+1]))
		}
		var e Expr
		if els != nil {
			e = lit(els)
		}
		return must(NewCase(nil, ws, ts, e))
	}
	simple := func(op any, els any, wt ...any) Expr {
		var ws, ts []Expr
		for i := 0; i < len(wt); i += 2 {
			ws, ts = append(ws, lit(wt[i])), append(ts, lit(wt[i+1]))
		}
		var e Expr
		if els != nil {
			e = lit(els)
		}
		return must(NewCase(lit(op), ws, ts, e))
	}
	c1 := searched("small", op2(OpGT, col("I"), 5), "big")
	if c1.Type().Kind != types.String {
		t.Errorf("CASE type %s", c1.Type())
	}
	c2 := searched(2.5, true, 1)
	if c2.Type().Kind != types.Double {
		t.Errorf("CASE of INT and DOUBLE is %s", c2.Type())
	}
	runCases(t, []evalCase{
		{c1, "big"},
		{searched("small", op2(OpGT, col("I"), 50), "big"), "small"},
		{searched(nil, op2(OpGT, col("I"), 50), "big"), "NULL"},
		{searched(nil, op2(OpGT, col("N"), 1), "a", true, "b"), "b"}, // a NULL condition is not true
		{c2, "1.0"},
		{searched(nil, false, 1, true, nil), "NULL"},
		{simple(col("I"), nil, 1, "one", 7, "seven"), "seven"},
		{simple(col("I"), "other", 1, "one"), "other"},
		{simple(col("N"), "null operand", 1, "one"), "null operand"},
		{simple(col("DEC"), nil, dec("12.340"), "same"), "same"},
		{simple(col("DT"), nil, "2021-10-11", "today"), "today"},
		{simple(col("I"), dec("1.5"), 7, 2), "2.0"},
	})
	if _, err := NewCase(nil, lits(1), lits("x"), nil); !isTypeError(err, "BOOLEAN") {
		t.Errorf("CASE WHEN 1: %v", err)
	}
	if _, err := NewCase(nil, lits(true), lits("x"), lit(1)); !isTypeError(err, "incompatible") {
		t.Errorf("CASE with STRING and INT results: %v", err)
	}
	if _, err := NewCase(lit(1), lits("a"), lits(1), nil); !isTypeError(err) {
		t.Errorf("CASE 1 WHEN 'a': %v", err)
	}
	if _, err := NewCase(nil, nil, nil, nil); !isTypeError(err) {
		t.Errorf("CASE without WHEN: %v", err)
	}
}

func TestSubscriptAndField(t *testing.T) {
	sub := func(x, i any) Expr { return must(NewSubscript(lit(x), lit(i))) }
	field := func(x any, n string) Expr { return must(NewField(lit(x), n)) }
	runCases(t, []evalCase{
		{sub(col("ARR"), 1), "10"},
		{sub(col("ARR"), 3), "30"},
		{sub(col("ARR"), -1), "30"},
		{sub(col("ARR"), -3), "10"},
		{sub(col("ARR"), 0), "NULL"},
		{sub(col("ARR"), 4), "NULL"},
		{sub(col("ARR"), -4), "NULL"},
		{sub(col("ARR"), int64(2)), "20"},
		{sub(col("ARR"), col("N")), "NULL"},
		{sub(col("ARR"), nil), "NULL"},
		{sub(cast(nil, tArrInt), 1), "NULL"},
		{sub(arr("x", "y"), col("I")), "NULL"},
		{sub(col("M"), "b"), "2"},
		{sub(col("M"), "z"), "NULL"},
		{sub(col("M"), col("NS")), "NULL"},
		{sub(mp(1, "one", 2, "two"), int64(2)), "two"},
		{sub(sub(arr(arr(1, 2), arr(3)), 2), 1), "3"},
		{field(col("ST"), "B"), "x"},
		{field(col("ST"), "a"), "1"},
		{field(cast(nil, tStruct), "A"), "NULL"},
		{field(st("X", arr(1, 2)), "X"), "[1, 2]"},
		{sub(field(st("X", arr(1, 2)), "X"), 2), "2"},
	})
	for _, c := range []struct{ x, i Expr }{
		{lit(1), lit(1)}, {col("ARR"), lit("a")}, {col("M"), lit(1)}, {col("S"), lit(1)},
	} {
		if _, err := NewSubscript(c.x, c.i); !isTypeError(err) {
			t.Errorf("%s[%s]: %v, want a type error", c.x, c.i, err)
		}
	}
	if _, err := NewField(col("ST"), "C"); !isTypeError(err, "C") {
		t.Errorf("ST->C: %v", err)
	}
	if _, err := NewField(col("I"), "A"); !isTypeError(err) {
		t.Errorf("I->A: %v", err)
	}
	twoCase := types.Type{Kind: types.Struct, Fields: []types.Field{{Name: "a", Type: types.IntType}, {Name: "A", Type: types.IntType}}}
	if e, err := NewField(cast(nil, twoCase), "a"); err != nil || e.(*Field).Index != 0 {
		t.Errorf("exact field match: %v", err)
	}
	if _, err := NewField(cast(nil, twoCase), "b"); !isTypeError(err) {
		t.Errorf("unknown field: %v", err)
	}
}

func TestConstructors(t *testing.T) {
	a := arr(1, 2.5)
	if a.Type().String() != "ARRAY<DOUBLE>" {
		t.Errorf("ARRAY[1, 2.5] is %s", a.Type())
	}
	n := arr(nil, 1)
	if n.Type().String() != "ARRAY<INTEGER>" {
		t.Errorf("ARRAY[NULL, 1] is %s", n.Type())
	}
	m := mp("a", 1, "b", int64(2))
	if m.Type().String() != "MAP<STRING, BIGINT>" {
		t.Errorf("MAP type %s", m.Type())
	}
	s := st("ID", 1, "NAME", "A")
	if s.Type().String() != "STRUCT<ID INTEGER, NAME STRING>" {
		t.Errorf("STRUCT type %s", s.Type())
	}
	runCases(t, []evalCase{
		{a, "[1.0, 2.5]"},
		{n, "[null, 1]"},
		{arr(col("I"), col("N"), 3), "[7, null, 3]"},
		{arr(col("S"), must(NewCall(mustLookup("UCASE"), []Expr{col("S")}))), "[ab, AB]"},
		{arr(arr(1), arr(2, 3)), "[[1], [2, 3]]"},
		{arr(dec("1.5"), dec("22.25")), "[1.50, 22.25]"},
		{m, "{a=1, b=2}"},
		{mp("a", 1, "a", 2), "{a=2}"},
		{mp("a", 1, cast(nil, types.StringType), 2), "{a=1}"},
		{mp("k", col("N")), "{k=null}"},
		{s, "Struct{ID=1,NAME=A}"},
		{st("A", st("B", 1)), "Struct{A=Struct{B=1}}"},
	})
	for name, err := range map[string]error{
		"ARRAY[]":               func() error { _, err := NewArray(nil); return err }(),
		"ARRAY[NULL]":           func() error { _, err := NewArray(lits(nil)); return err }(),
		"ARRAY[1, 'a']":         func() error { _, err := NewArray(lits(1, "a")); return err }(),
		"MAP()":                 func() error { _, err := NewMap(nil, nil); return err }(),
		"MAP(ARRAY key)":        func() error { _, err := NewMap([]Expr{arr(1)}, lits(1)); return err }(),
		"MAP(1 := 'a', 'b':=1)": func() error { _, err := NewMap(lits(1, "b"), lits("a", 1)); return err }(),
		"MAP('a' := NULL)":      func() error { _, err := NewMap(lits("a"), lits(nil)); return err }(),
		"STRUCT(A, A)":          func() error { _, err := NewStruct([]string{"A", "A"}, lits(1, 2)); return err }(),
		"STRUCT(A := NULL)":     func() error { _, err := NewStruct([]string{"A"}, lits(nil)); return err }(),
		"STRUCT(mismatch)":      func() error { _, err := NewStruct([]string{"A"}, lits(1, 2)); return err }(),
	} {
		if !isTypeError(err) {
			t.Errorf("%s: %v, want a type error", name, err)
		}
	}
}

func mustLookup(name string) *Function {
	f, ok := Lookup(name)
	if !ok {
		panic(name)
	}
	return f
}

func TestPrinting(t *testing.T) {
	x := lambdaVar(0, "X", types.IntType)
	for _, c := range []struct {
		e    Expr
		want string
	}{
		{cast(col("I"), types.StringType), "CAST(I AS STRING)"},
		{must(NewIn(col("I"), lits(1, 2), true)), "(I NOT IN (1, 2))"},
		{must(NewBetween(col("I"), lit(1), lit(2), false)), "(I BETWEEN 1 AND 2)"},
		{must(NewLike(col("S"), lit("a%"), lit("!"), true)), "(S NOT LIKE 'a%' ESCAPE '!')"},
		{must(NewDistinct(col("I"), lit(1), true)), "(I IS NOT DISTINCT FROM 1)"},
		{must(NewIsTrue(col("T"), false, true)), "(T IS NOT FALSE)"},
		{must(NewCase(col("I"), lits(1), lits("a"), lit("b"))), "CASE I WHEN 1 THEN 'a' ELSE 'b' END"},
		{must(NewSubscript(col("ARR"), lit(1))), "ARR[1]"},
		{must(NewField(col("ST"), "A")), "ST->A"},
		{arr(1, 2), "ARRAY[1, 2]"},
		{mp("a", 1), "MAP('a' := 1)"},
		{st("A", 1), "STRUCT(A := 1)"},
		{call("TRANSFORM", col("ARR"), NewLambda([]string{"X"}, []types.Type{types.IntType}, op2(OpAdd, x, 1))), "TRANSFORM(ARR, (X => (X + 1)))"},
	} {
		if got := c.e.String(); got != c.want {
			t.Errorf("String() = %s, want %s", got, c.want)
		}
		if len(c.e.Children()) == 0 && !strings.HasPrefix(c.want, "ARRAY") {
			t.Errorf("%s has no children", c.want)
		}
	}
}

func lambdaVar(i int, name string, t types.Type) Expr { return NewLambdaVar(i, name, t) }

// A string literal that reads as a number compares with numbers, as ksqlDB
// coerces literals.
func TestStringLiteralCoercion(t *testing.T) {
	eq, err := NewBinary(OpEQ, IntLiteral(5), StringLiteral("5"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := NewIn(IntLiteral(5), []Expr{IntLiteral(1), StringLiteral("5")}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Expr{eq, in} {
		ev, err := Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		if d, err := ev(nil); err != nil || !d.Bool() {
			t.Errorf("%s = %v (%v), want true", e, d, err)
		}
	}
}
