package expr

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/types"
)

// hotExprs are evaluators that run per record in typical queries; each
// must allocate nothing once warm.
func hotExprs() []struct {
	name string
	e    Expr
} {
	I, B, S, DEC, ARR, M, ST, TS := col("I"), col("B"), col("S"), col("DEC"), col("ARR"), col("M"), col("ST"), col("TS")
	x := NewLambdaVar(0, "X", types.IntType)
	plusOne := NewLambda([]string{"X"}, []types.Type{types.IntType}, op2(OpAdd, x, 1))
	sx := NewLambdaVar(0, "X", types.StringType)
	upper := NewLambda([]string{"X"}, []types.Type{types.StringType}, call("UCASE", sx))
	return []struct {
		name string
		e    Expr
	}{
		{"arithmetic", op2(OpAdd, op2(OpMul, I, 10), B)},
		{"decimal", op2(OpMul, op2(OpAdd, DEC, dec("1.25")), 3)},
		{"double", op2(OpDiv, col("D"), 3)},
		{"comparison", op2(OpAnd, op2(OpGT, I, 3), op2(OpEQ, S, "ab"))},
		{"comparison_ksql_nulls", op2(OpAnd, KsqlNulls(op2(OpGT, I, 3)), KsqlNulls(op2(OpEQ, S, "ab")))},
		{"compare_decimal", op2(OpGT, DEC, dec("12.3"))},
		{"like_prefix", must(NewLike(S, lit("a%"), nil, false))},
		{"like_general", must(NewLike(S, lit("%a_"), nil, false))},
		{"in", must(NewIn(I, lits(1, 7, 9), false))},
		{"in_ksql_nulls", KsqlNulls(must(NewIn(I, lits(1, 7, 9), false)))},
		{"between", must(NewBetween(I, lit(1), lit(10), false))},
		{"substring", call("SUBSTRING", S, 2, 3)},
		{"ucase", call("UCASE", S)},
		{"concat", call("CONCAT", S, "-", S)},
		{"case", must(NewCase(nil, []Expr{op2(OpGT, I, 5)}, lits("big"), lit("small")))},
		{"subscript_array", must(NewSubscript(ARR, lit(2)))},
		{"subscript_map", must(NewSubscript(M, lit("b")))},
		{"field", must(NewField(ST, "B"))},
		{"cast_int_string", cast(I, types.StringType)},
		{"cast_string_int", cast(call("SUBSTRING", "12345", 2), types.IntType)},
		{"coalesce", call("COALESCE", col("N"), I)},
		{"transform", call("TRANSFORM", ARR, plusOne)},
		{"transform_strings", call("TRANSFORM", col("SA"), upper)},
		{"format_timestamp", call("FORMAT_TIMESTAMP", TS, "yyyy-MM-dd HH:mm:ss.SSS")},
		{"extractjsonfield", call("EXTRACTJSONFIELD", `{"a":{"b":[1,"x"]}}`, "$.a.b[1]")},
	}
}

// TestHotPathAllocations pins the no-allocation rule for the common
// evaluators.
func TestHotPathAllocations(t *testing.T) {
	for _, h := range hotExprs() {
		ev, err := Compile(h.e)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ { // warm the scratch buffers
			if _, err := ev(xrow); err != nil {
				t.Fatalf("%s: %v", h.name, err)
			}
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = ev(xrow) }); n != 0 {
			t.Errorf("%s (%s) allocates %.1f times per row", h.name, h.e, n)
		}
	}
}

func BenchmarkEvaluators(b *testing.B) {
	for _, h := range hotExprs() {
		ev, err := Compile(h.e)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := ev(xrow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkNexmarkExprs evaluates q17's and q21's per-record expressions
// over a moving time (a bid every 100 µs of event time) and alternating
// urls: go test ./expr -run '^$' -bench NexmarkExprs.
func BenchmarkNexmarkExprs(b *testing.B) {
	TS, S, I := col("TS"), col("S"), col("I")
	q21 := `(&|^)channel_id=([^&]*)`
	for _, c := range []struct {
		name string
		e    Expr
	}{
		{"q17_date_format", call("DATE_FORMAT", TS, "yyyy-MM-dd")},
		{"q17_filter", must(NewCase(nil, []Expr{op2(OpLT, I, 10000)}, lits(1), nil))},
		{"q21_regexp_extract", call("REGEXP_EXTRACT", q21, S, 2)},
	} {
		ev, err := Compile(c.e)
		if err != nil {
			b.Fatal(err)
		}
		row := append(types.Row(nil), xrow...)
		urls := []types.Datum{
			types.StringDatum("https://www.nexmark.com/abcde/fghij/klmno/item.htm?query=1&channel_id=1234567"),
			types.StringDatum("https://www.nexmark.com/abcde/fghij/klmno/item.htm?query=1"),
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				row[9] = types.IntDatum(tsInstant + int64(i)/10)
				row[3] = urls[i%2]
				if _, err := ev(row); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
