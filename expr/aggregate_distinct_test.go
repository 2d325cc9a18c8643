package expr

import (
	"strconv"
	"testing"

	"github.com/sqlstreams/sqlstreams/types"
)

// TestDistinctValuesAccumulators folds values as the store of distinct
// values hands them over (Add at a value's first row, Undo at its last)
// and checks the results, NULL of no values included, and that the
// value encodings tell values apart and leave NULL out.
func TestDistinctValuesAccumulators(t *testing.T) {
	count, _ := DistinctAggregate("COUNT")
	sum, _ := DistinctAggregate("SUM")
	if _, ok := NewDistinctValues(KsqlSumZero, []types.Type{types.BigintType}); ok || IsDistinctValues(KsqlSumZero) {
		t.Fatal("SUM without DISTINCT keeps distinct values")
	}
	for _, c := range []struct {
		fn   *AggregateFunction
		t    types.Type
		vals []types.Datum
		want []string // the result after each Add, then after each Undo in reverse
	}{
		{count.ForTable(), types.StringType, []types.Datum{types.StringDatum("a"), types.StringDatum("b")}, []string{"1", "2", "1", "0"}},
		{sum, types.BigintType, []types.Datum{types.IntDatum(5), types.IntDatum(-7)}, []string{"5", "-2", "5", "NULL"}},
		// A DOUBLE sum taken back out keeps float residue (as Flink's
		// retracting SUM does), until its last value goes.
		{sum.ForTable(), types.DoubleType, []types.Datum{types.DoubleDatum(0.1), types.DoubleDatum(0.2)}, []string{"0.1", "0.30000000000000004", "0.10000000000000003", "NULL"}},
	} {
		acc, ok := NewDistinctValues(c.fn, []types.Type{c.t})
		if !ok || !IsDistinctValues(c.fn) {
			t.Fatalf("%s: no DistinctValues accumulator", c.fn.Name)
		}
		if got := show(acc.Result(nil), c.t); got != map[bool]string{true: "0", false: "NULL"}[c.fn.Name == "COUNT_DISTINCT"] {
			t.Errorf("%s of no values: %s", c.fn.Name, got)
		}
		if _, ok := acc.Value(nil, []types.Datum{types.NullDatum}); ok {
			t.Errorf("%s counts NULL", c.fn.Name)
		}
		a, _ := acc.Value(nil, c.vals[:1])
		b, _ := acc.Value(nil, c.vals[1:])
		if string(a) == string(b) {
			t.Errorf("%s: %v and %v encode alike", c.fn.Name, c.vals[0], c.vals[1])
		}
		var st []byte
		var got []string
		for i := range c.vals {
			st = acc.Add(nil, st, c.vals[i:i+1])
			got = append(got, show(acc.Result(st), c.t))
		}
		for i := len(c.vals) - 1; i >= 0; i-- {
			st = acc.Undo(nil, st, c.vals[i:i+1])
			got = append(got, show(acc.Result(st), c.t))
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: %v", c.fn.Name, got)
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%s over %v: %v, want %v", c.fn.Name, c.t, got, c.want)
				break
			}
		}
	}
}

// show renders a COUNT (BIGINT) or a SUM of t.
func show(d types.Datum, t types.Type) string {
	switch {
	case d.Null:
		return "NULL"
	case t.Kind == types.Double:
		return strconv.FormatFloat(d.F, 'g', -1, 64)
	}
	return strconv.FormatInt(d.I, 10)
}
