package expr

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/types"
)

// fold runs an aggregate over rows of arguments and returns its result as
// text, checking that the state survives a round trip through bytes (as
// it does through a store) at every step.
func fold(t *testing.T, name string, argTypes []types.Type, rows [][]types.Datum) string {
	t.Helper()
	fn, ok := LookupAggregate(name)
	if !ok {
		t.Fatalf("no aggregate %s", name)
	}
	rt, err := fn.Check(argTypes)
	if err != nil {
		t.Fatal(err)
	}
	acc := fn.New(argTypes)
	var st []byte
	for _, r := range rows {
		st = append([]byte(nil), acc.Add(nil, st, r)...)
	}
	return types.Text(acc.Result(st), rt)
}

func TestAggregates(t *testing.T) {
	I, D, S := types.BigintType, types.DoubleType, types.StringType
	i := func(vs ...int64) (out [][]types.Datum) {
		for _, v := range vs {
			out = append(out, []types.Datum{types.IntDatum(v)})
		}
		return out
	}
	str := func(vs ...string) (out [][]types.Datum) {
		for _, v := range vs {
			if v == "NULL" {
				out = append(out, []types.Datum{types.NullDatum})
				continue
			}
			out = append(out, []types.Datum{types.StringDatum(v)})
		}
		return out
	}
	withK := func(k int64, rows [][]types.Datum) [][]types.Datum {
		for j := range rows {
			rows[j] = append(rows[j], types.IntDatum(k))
		}
		return rows
	}
	nullRow := [][]types.Datum{{types.NullDatum}}
	for _, c := range []struct {
		name string
		args []types.Type
		rows [][]types.Datum
		want string
	}{
		{"COUNT", nil, [][]types.Datum{{}, {}, {}}, "3"},
		{"COUNT", []types.Type{I}, append(i(1, 2), nullRow...), "2"},
		{"SUM", []types.Type{I}, append(i(1, 2, 3), nullRow...), "6"},
		{"SUM", []types.Type{I}, nullRow, "NULL"},
		{"AVG", []types.Type{I}, i(1, 2), "1.5"},
		{"MIN", []types.Type{S}, str("b", "a", "NULL", "c"), "a"},
		{"MAX", []types.Type{I}, i(3, 9, 2), "9"},
		{"LATEST_BY_OFFSET", []types.Type{S}, str("a", "b", "NULL"), "b"},
		{"EARLIEST_BY_OFFSET", []types.Type{S}, str("NULL", "a", "b"), "a"},
		{"COLLECT_LIST", []types.Type{S}, str("b", "a", "b"), `["b","a","b"]`},
		{"COLLECT_SET", []types.Type{S}, str("b", "a", "b"), `["a","b"]`},
		{"COUNT_DISTINCT", []types.Type{I}, i(5, 1, 5, 2, 1), "3"},
		{"TOPK", []types.Type{I, types.IntType}, withK(2, i(3, 9, 2, 9)), "[9,9]"},
		{"TOPKDISTINCT", []types.Type{I, types.IntType}, withK(2, i(3, 9, 2, 9)), "[9,3]"},
		{"HISTOGRAM", []types.Type{S}, str("b", "a", "b", "NULL"), `{"a":1,"b":2}`},
		{"STDDEV_SAMP", []types.Type{D}, [][]types.Datum{{types.DoubleDatum(2)}, {types.DoubleDatum(4)}, {types.DoubleDatum(4)}, {types.DoubleDatum(4)}, {types.DoubleDatum(5)}, {types.DoubleDatum(5)}, {types.DoubleDatum(7)}, {types.DoubleDatum(9)}}, "2.138089935299395"},
		{"STDDEV_SAMP", []types.Type{D}, [][]types.Datum{{types.DoubleDatum(2)}}, "NULL"},
		{"CORRELATION", []types.Type{I, I}, [][]types.Datum{{types.IntDatum(1), types.IntDatum(2)}, {types.IntDatum(2), types.IntDatum(4)}, {types.IntDatum(3), types.IntDatum(6)}}, "1"},
	} {
		if got := fold(t, c.name, c.args, c.rows); got != c.want {
			t.Errorf("%s over %d rows = %s, want %s", c.name, len(c.rows), got, c.want)
		}
	}
}

// The per-record update of common aggregates allocates nothing once its
// buffers have grown.
func TestAggregateAddAllocations(t *testing.T) {
	for _, name := range []string{"COUNT", "SUM", "MAX", "AVG"} {
		fn, _ := LookupAggregate(name)
		args := []types.Type{types.BigintType}
		acc := fn.New(args)
		st := make([]byte, 0, 64)
		dst := make([]byte, 0, 64)
		row := []types.Datum{types.IntDatum(7)}
		allocs := testing.AllocsPerRun(100, func() {
			dst = acc.Add(dst[:0], st, row)
			st = append(st[:0], dst...)
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per update", name, allocs)
		}
	}
}
