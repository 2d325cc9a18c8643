package expr

import (
	"math"
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

// Queries recorded before STDDEV_SAMP and CORRELATION followed ksqlDB
// keep their former definitions.
func TestLegacyAggregates(t *testing.T) {
	std, ok := LookupLegacyAggregate("stddev_samp")
	if !ok {
		t.Fatal("no legacy STDDEV_SAMP")
	}
	acc := std.New([]types.Type{types.DoubleType})
	var st []byte
	for _, v := range []float64{2, 4, 4, 4, 5, 5, 7, 9} {
		st = append([]byte(nil), acc.Add(nil, st, []types.Datum{types.DoubleDatum(v)})...)
	}
	if got := acc.Result(st).F; got != 2.138089935299395 {
		t.Errorf("legacy STDDEV_SAMP = %v", got)
	}
	corr, _ := LookupLegacyAggregate("CORRELATION")
	c := corr.New([]types.Type{types.BigintType, types.BigintType})
	if _, undo := c.(Undoer); undo {
		t.Error("legacy CORRELATION takes rows back out")
	}
	if d := c.Result(nil); !d.Null {
		t.Errorf("legacy CORRELATION of nothing = %v, want NULL", d)
	}
	if _, ok := LookupLegacyAggregate("SUM"); ok {
		t.Error("SUM has a legacy definition")
	}
}

// STDDEV_SAMP taking a value back out, and merging two states, give what
// folding the values in gives.
func TestYoungsCramerUndoMerge(t *testing.T) {
	fn, _ := LookupAggregate("STDDEV_SAMP")
	acc := fn.New([]types.Type{types.DoubleType})
	fold := func(vs ...float64) []byte {
		var st []byte
		for _, v := range vs {
			st = append([]byte(nil), acc.Add(nil, st, []types.Datum{types.DoubleDatum(v)})...)
		}
		return st
	}
	undone := acc.(Undoer).Undo(nil, fold(2, 4, 9), []types.Datum{types.DoubleDatum(9)})
	if got := acc.Result(undone).F; got != 2 {
		t.Errorf("undo: %v, want 2", got)
	}
	merged := acc.(Merger).Merge(nil, fold(2, 4), fold(9))
	if got := acc.Result(merged).F; math.Abs(got-13) > 1e-9 {
		t.Errorf("merge: %v, want 13", got)
	}
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
		{"COLLECT_SET", []types.Type{S}, str("b", "a", "b"), `["b","a"]`},             // in the order first seen, as ksqlDB keeps them
		{"COLLECT_SET", []types.Type{S}, str("b", "NULL", "b", "NULL"), `["b",null]`}, // NULL once, as in ksqlDB
		{"COUNT_DISTINCT", []types.Type{I}, i(5, 1, 5, 2, 1), "3"},
		{"TOPK", []types.Type{I, types.IntType}, withK(2, i(3, 9, 2, 9)), "[9,9]"},
		{"TOPKDISTINCT", []types.Type{I, types.IntType}, withK(2, i(3, 9, 2, 9)), "[9,3]"},
		{"HISTOGRAM", []types.Type{S}, str("b", "a", "b", "NULL"), `{"a":1,"b":2}`},
		// ksqlDB's STDDEV_SAMP is the sample variance; STDDEV_SAMPLE its root.
		{"STDDEV_SAMP", []types.Type{D}, [][]types.Datum{{types.DoubleDatum(2)}, {types.DoubleDatum(4)}, {types.DoubleDatum(4)}, {types.DoubleDatum(4)}, {types.DoubleDatum(5)}, {types.DoubleDatum(5)}, {types.DoubleDatum(7)}, {types.DoubleDatum(9)}}, "4.571428571428571"},
		{"STDDEV_SAMPLE", []types.Type{D}, [][]types.Datum{{types.DoubleDatum(2)}, {types.DoubleDatum(4)}, {types.DoubleDatum(4)}, {types.DoubleDatum(4)}, {types.DoubleDatum(5)}, {types.DoubleDatum(5)}, {types.DoubleDatum(7)}, {types.DoubleDatum(9)}}, "2.138089935299395"},
		{"STDDEV_SAMP", []types.Type{D}, [][]types.Datum{{types.NullDatum}}, "0"}, // no values: 0.0 as well
		// INTEGER sums wrap at 32 bits, as Java's do: the deltas come out huge.
		{"STDDEV_SAMP", []types.Type{types.IntType}, [][]types.Datum{{types.IntDatum(math.MaxInt32)}, {types.IntDatum(1)}}, "2.305843013508661e+18"},
		{"STDDEV_SAMP", []types.Type{D}, [][]types.Datum{{types.DoubleDatum(2)}}, "0"}, // ksqlDB: 0.0 for one value
		{"CORRELATION", []types.Type{I, I}, [][]types.Datum{{types.IntDatum(1), types.IntDatum(2)}, {types.IntDatum(2), types.IntDatum(4)}, {types.IntDatum(3), types.IntDatum(6)}}, "1"},
		{"CORRELATION", []types.Type{I, I}, [][]types.Datum{{types.IntDatum(1), types.IntDatum(2)}}, "NaN"},
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

// TestMerge: for every aggregate that merges (session windows), merging
// the states of two runs of rows gives the result of one run over all of
// them, whichever way the rows are split (including an empty side and
// NULLs).
func TestMerge(t *testing.T) {
	I, D, S := types.BigintType, types.DoubleType, types.StringType
	rows := map[types.Kind][]types.Datum{
		types.Bigint: {types.IntDatum(5), types.NullDatum, types.IntDatum(-3), types.IntDatum(12), types.IntDatum(7)},
		types.Double: {types.DoubleDatum(1.5), types.DoubleDatum(-2), types.NullDatum, types.DoubleDatum(8.25), types.DoubleDatum(0)},
		types.String: {{B: []byte("m")}, types.NullDatum, {B: []byte("a")}, {B: []byte("z")}, {B: []byte("q")}},
	}
	for _, c := range []struct {
		name string
		t    types.Type
	}{
		{"COUNT", I}, {"SUM", I}, {"SUM", D}, {"AVG", I}, {"AVG", D},
		{"MIN", I}, {"MAX", I}, {"MIN", D}, {"MAX", D}, {"MIN", S}, {"MAX", S},
	} {
		fn, _ := LookupAggregate(c.name)
		rt, err := fn.Check([]types.Type{c.t})
		if err != nil {
			t.Fatal(err)
		}
		acc := fn.New([]types.Type{c.t})
		m, ok := acc.(Merger)
		if !ok {
			t.Fatalf("%s(%s) does not merge", c.name, c.t)
		}
		vals := rows[c.t.Kind]
		run := func(vs []types.Datum) []byte {
			var st []byte
			for _, v := range vs {
				st = append([]byte(nil), acc.Add(nil, st, []types.Datum{v})...)
			}
			return st
		}
		want := types.Text(acc.Result(run(vals)), rt)
		for split := 0; split <= len(vals); split++ {
			a, b := run(vals[:split]), run(vals[split:])
			if got := types.Text(acc.Result(m.Merge(nil, a, b)), rt); got != want {
				t.Errorf("%s(%s) split at %d: merged %s, want %s", c.name, c.t, split, got, want)
			}
			if got := types.Text(acc.Result(m.Merge(nil, b, a)), rt); got != want {
				t.Errorf("%s(%s) split at %d, reversed: merged %s, want %s", c.name, c.t, split, got, want)
			}
		}
	}
}

func TestHistogramUndoMerge(t *testing.T) {
	h := &histogramAcc{}
	add := func(st []byte, v string) []byte { return h.Add(nil, st, []types.Datum{types.StringDatum(v)}) }
	a := add(add(add(nil, "x"), "y"), "x")
	b := add(add(nil, "z"), "x")
	show := func(st []byte) string {
		return types.Text(h.Result(st), types.Type{Kind: types.Map, KeyType: &types.StringType, Elem: &types.BigintType})
	}
	if got := show(h.Merge(nil, a, b)); got != `{"x":3,"y":1,"z":1}` {
		t.Errorf("merge: %s", got)
	}
	if got := show(h.Undo(nil, a, []types.Datum{types.StringDatum("y")})); got != `{"x":2}` {
		t.Errorf("undo: %s", got)
	}
}

// TestDistinctOverTable: COUNT_DISTINCT and COLLECT_SET over a table
// (ForTable) forget a value only when the last row holding it goes, and
// take a row back out without allocating once their buffers have grown.
func TestDistinctOverTable(t *testing.T) {
	S := types.StringType
	arr := types.Type{Kind: types.Array, Elem: &S}
	for _, c := range []struct {
		name string
		rt   types.Type
		// after adding a, b, a, NULL; after taking one a back out;
		// after taking the other a and NULL back out.
		want [3]string
	}{
		{"COUNT_DISTINCT", types.BigintType, [3]string{"2", "2", "1"}},
		{"COLLECT_SET", arr, [3]string{`["a","b",null]`, `["a","b",null]`, `["b"]`}},
	} {
		fn, _ := LookupAggregate(c.name)
		if stream := fn.New([]types.Type{S}); stream == nil {
			t.Fatal(c.name)
		}
		acc := fn.ForTable().New([]types.Type{S})
		u := acc.(Undoer)
		a, b := []types.Datum{types.StringDatum("a")}, []types.Datum{types.StringDatum("b")}
		null := []types.Datum{types.NullDatum}
		var st []byte
		for _, r := range [][]types.Datum{a, b, a, null} {
			st = append([]byte(nil), acc.Add(nil, st, r)...)
		}
		if got := types.Text(acc.Result(st), c.rt); got != c.want[0] {
			t.Errorf("%s after a, b, a, NULL: %s, want %s", c.name, got, c.want[0])
		}
		st = append([]byte(nil), u.Undo(nil, st, a)...)
		if got := types.Text(acc.Result(st), c.rt); got != c.want[1] {
			t.Errorf("%s without one a: %s, want %s", c.name, got, c.want[1])
		}
		st = append([]byte(nil), u.Undo(nil, st, a)...)
		st = append([]byte(nil), u.Undo(nil, st, null)...)
		if got := types.Text(acc.Result(st), c.rt); got != c.want[2] {
			t.Errorf("%s without both a and NULL: %s, want %s", c.name, got, c.want[2])
		}
		st = append(make([]byte, 0, 256), st...)
		dst := make([]byte, 0, 256)
		allocs := testing.AllocsPerRun(100, func() {
			dst = acc.Add(dst[:0], st, a)
			st = append(st[:0], dst...)
			dst = u.Undo(dst[:0], st, a)
			st = append(st[:0], dst...)
			acc.Result(st)
		})
		if allocs != 0 {
			t.Errorf("%s over a table: %.1f allocations per update", c.name, allocs)
		}
	}
	// The limit holds over tables too.
	limited, _ := CollectWithLimit("COLLECT_SET", 2)
	acc := limited.ForTable().New([]types.Type{S})
	var st []byte
	for _, v := range []string{"x", "y", "z"} {
		st = append([]byte(nil), acc.Add(nil, st, []types.Datum{types.StringDatum(v)})...)
	}
	if got := types.Text(acc.Result(st), arr); got != `["x","y"]` {
		t.Errorf("COLLECT_SET limited to 2 over a table: %s", got)
	}
}

// TestMinMaxOverTable: MIN and MAX over a table (SQL dialect) keep each
// value with its row count, so taking the extreme's last row out gives
// the next one, and NULLs are left out.
func TestMinMaxOverTable(t *testing.T) {
	I := types.BigintType
	for _, c := range []struct {
		name string
		want [3]string // after 3, 9, 9, NULL, 2; without one 9; without the other
	}{
		{"MAX", [3]string{"9", "9", "3"}},
		{"MIN", [3]string{"2", "2", "2"}},
	} {
		fn, _ := LookupAggregate(c.name)
		acc := fn.ForTable().New([]types.Type{I})
		u, ok := acc.(Undoer)
		if !ok {
			t.Fatalf("%s over a table cannot undo", c.name)
		}
		var st []byte
		for _, r := range []types.Datum{types.IntDatum(3), types.IntDatum(9), types.IntDatum(9), types.NullDatum, types.IntDatum(2)} {
			st = append([]byte(nil), acc.Add(nil, st, []types.Datum{r})...)
		}
		nine := []types.Datum{types.IntDatum(9)}
		for i := range 3 {
			if got := types.Text(acc.Result(st), I); got != c.want[i] {
				t.Errorf("%s step %d: %s, want %s", c.name, i, got, c.want[i])
			}
			st = append([]byte(nil), u.Undo(nil, st, nine)...)
		}
		st = append([]byte(nil), u.Undo(nil, st, []types.Datum{types.IntDatum(2)})...)
		st = append([]byte(nil), u.Undo(nil, st, []types.Datum{types.IntDatum(3)})...)
		if got := acc.Result(st); !got.Null {
			t.Errorf("%s of no rows: %v, want NULL", c.name, types.Text(got, I))
		}
	}
}
