package expr

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/types"
)

// The richer test row: one column per kind.
var (
	tDec    = types.Type{Kind: types.Decimal, Precision: 5, Scale: 2}
	tArrInt = arrayOf(types.IntType)
	tArrStr = arrayOf(types.StringType)
	tMapSI  = mapOf(types.StringType, types.IntType)
	tStruct = types.Type{Kind: types.Struct, Fields: []types.Field{{Name: "A", Type: types.IntType}, {Name: "B", Type: types.StringType}}}

	tsInstant = time.Date(2021, 4, 1, 9, 5, 7, 89e6, time.UTC).UnixMilli()

	xcols = []*Column{
		{Index: 0, Name: "I", T: types.IntType},
		{Index: 1, Name: "B", T: types.BigintType},
		{Index: 2, Name: "D", T: types.DoubleType},
		{Index: 3, Name: "S", T: types.StringType},
		{Index: 4, Name: "T", T: types.BooleanType},
		{Index: 5, Name: "N", T: types.IntType},
		{Index: 6, Name: "DEC", T: tDec},
		{Index: 7, Name: "DT", T: types.DateType},
		{Index: 8, Name: "TM", T: types.TimeType},
		{Index: 9, Name: "TS", T: types.TimestampType},
		{Index: 10, Name: "ARR", T: tArrInt},
		{Index: 11, Name: "M", T: tMapSI},
		{Index: 12, Name: "ST", T: tStruct},
		{Index: 13, Name: "BY", T: types.BytesType},
		{Index: 14, Name: "SA", T: tArrStr},
		{Index: 15, Name: "NS", T: types.StringType},
	}
	xrow = types.Row{
		types.IntDatum(7),
		types.IntDatum(1 << 40),
		types.DoubleDatum(2.5),
		types.StringDatum("ab"),
		types.BoolDatum(true),
		types.NullDatum,
		types.IntDatum(1234),
		types.IntDatum(18911), // 2021-10-11
		types.IntDatum((13*3600 + 25*60) * 1000),
		types.IntDatum(tsInstant),
		{L: []types.Datum{types.IntDatum(10), types.IntDatum(20), types.IntDatum(30)}},
		{L: []types.Datum{types.StringDatum("a"), types.IntDatum(1), types.StringDatum("b"), types.IntDatum(2)}},
		{L: []types.Datum{types.IntDatum(1), types.StringDatum("x")}},
		{B: []byte("K")},
		{L: []types.Datum{types.StringDatum("x"), types.StringDatum("y")}},
		types.NullDatum,
	}
)

func col(name string) *Column {
	for _, c := range xcols {
		if c.Name == name {
			return c
		}
	}
	panic("no column " + name)
}

// lit makes a literal from a Go value: int → INT, int64 → BIGINT,
// float64 → DOUBLE, string → STRING, bool → BOOLEAN, []byte → BYTES,
// nil → untyped NULL.
func lit(v any) Expr {
	switch v := v.(type) {
	case nil:
		return NullLiteral()
	case int:
		return &Literal{V: types.IntDatum(int64(v)), T: types.IntType}
	case int64:
		return &Literal{V: types.IntDatum(v), T: types.BigintType}
	case float64:
		return &Literal{V: types.DoubleDatum(v), T: types.DoubleType}
	case string:
		return StringLiteral(v)
	case bool:
		return BoolLiteral(v)
	case []byte:
		return &Literal{V: types.Datum{B: v}, T: types.BytesType}
	case Expr:
		return v
	}
	panic("lit: unsupported value")
}

func lits(vs ...any) []Expr {
	out := make([]Expr, len(vs))
	for i, v := range vs {
		out[i] = lit(v)
	}
	return out
}

func dec(s string) Expr {
	l, err := DecimalLiteral(s)
	if err != nil {
		panic(err)
	}
	return l
}

func must(e Expr, err error) Expr {
	if err != nil {
		panic(err)
	}
	return e
}

// cast is CAST(v AS t) for building typed values.
func cast(v any, t types.Type) Expr { return must(NewCast(lit(v), t)) }

func date(s string) Expr { return cast(s, types.DateType) }
func tm(s string) Expr   { return cast(s, types.TimeType) }
func ts(s string) Expr   { return cast(s, types.TimestampType) }

func arr(vs ...any) Expr { return must(NewArray(lits(vs...))) }

func mp(kvs ...any) Expr {
	var ks, vs []Expr
	for i := 0; i < len(kvs); i += 2 {
		ks = append(ks, lit(kvs[i]))
		vs = append(vs, lit(kvs[i+1]))
	}
	return must(NewMap(ks, vs))
}

func st(kvs ...any) Expr {
	var ns []string
	var vs []Expr
	for i := 0; i < len(kvs); i += 2 {
		ns = append(ns, kvs[i].(string))
		vs = append(vs, lit(kvs[i+1]))
	}
	return must(NewStruct(ns, vs))
}

func op2(op Op, l, r any) Expr { return must(NewBinary(op, lit(l), lit(r))) }

// call builds a function call, panicking on a type error.
func call(name string, args ...any) Expr {
	fn, ok := Lookup(name)
	if !ok {
		panic("no function " + name)
	}
	return must(NewCall(fn, lits(args...)))
}

// callErr builds a call and returns the error.
func callErr(name string, args ...any) error {
	fn, ok := Lookup(name)
	if !ok {
		panic("no function " + name)
	}
	_, err := NewCall(fn, lits(args...))
	return err
}

// render is the text of d read as t: NULL, or what CAST(d AS STRING)
// gives (nested NULLs print as null).
func render(d types.Datum, t types.Type) string {
	if d.Null {
		return "NULL"
	}
	return string(appendJava(nil, d, t))
}

// evalErr compiles and runs e over the test row.
func evalErr(e Expr) (string, error) {
	ev, err := Compile(e)
	if err != nil {
		return "", err
	}
	d, err := ev(xrow)
	if err != nil {
		return "", err
	}
	return render(d, e.Type()), nil
}

func evalx(t *testing.T, e Expr) string {
	t.Helper()
	s, err := evalErr(e)
	if err != nil {
		t.Fatalf("%s: %v", e, err)
	}
	return s
}

// isTypeError reports whether err is a *TypeError mentioning all of
// the words.
func isTypeError(err error, words ...string) bool {
	var te *TypeError
	if !errors.As(err, &te) {
		return false
	}
	for _, w := range words {
		if !strings.Contains(te.Msg, w) {
			return false
		}
	}
	return true
}

// evalCase is one expression and the text it must evaluate to.
type evalCase struct {
	e    Expr
	want string
}

func runCases(t *testing.T, cases []evalCase) {
	t.Helper()
	for _, c := range cases {
		got, err := evalErr(c.e)
		if err != nil {
			t.Errorf("%s: error %v, want %s", c.e, err, c.want)
			continue
		}
		if got != c.want {
			t.Errorf("%s = %s, want %s", c.e, got, c.want)
		}
	}
}
