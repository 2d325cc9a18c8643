package exec

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// Every value comes back from the binary rows as it was: NULLs, the
// extremes, invalid UTF-8, -0 and NaN, wide decimals and composites with
// NULLs inside; a column not kept comes back NULL.
func TestTopNRowsRoundTrip(t *testing.T) {
	wide := types.Type{Kind: types.Decimal, Precision: 30, Scale: 2}
	arr := types.Type{Kind: types.Array, Elem: &types.StringType}
	mp := types.Type{Kind: types.Map, KeyType: &types.StringType, Elem: &types.BigintType}
	st := types.Type{Kind: types.Struct, Fields: []types.Field{{Name: "A", Type: types.DoubleType}, {Name: "B", Type: arr}}}
	cols := []types.Column{
		{Name: "B", Type: types.BooleanType}, {Name: "I", Type: types.IntType}, {Name: "L", Type: types.BigintType},
		{Name: "D", Type: types.DoubleType}, {Name: "S", Type: types.StringType}, {Name: "Y", Type: types.BytesType},
		{Name: "N", Type: types.Type{Kind: types.Decimal, Precision: 10, Scale: 3}}, {Name: "W", Type: wide},
		{Name: "DT", Type: types.DateType}, {Name: "TM", Type: types.TimeType}, {Name: "TS", Type: types.TimestampType},
		{Name: "AR", Type: arr}, {Name: "MP", Type: mp}, {Name: "ST", Type: st}, {Name: "U", Type: types.UnknownType},
	}
	rows := []types.Row{
		{types.BoolDatum(true), types.IntDatum(math.MinInt32), types.IntDatum(math.MaxInt64), types.DoubleDatum(math.Copysign(0, -1)),
			types.StringDatum("bad\xff"), {B: []byte{0, 1, 255}}, types.IntDatum(-12345), {B: []byte{0x80, 0, 1}},
			types.IntDatum(-1), types.IntDatum(86399999), types.IntDatum(math.MinInt64),
			{L: []types.Datum{types.StringDatum("x"), types.NullDatum, types.StringDatum("")}},
			{L: []types.Datum{types.StringDatum("k"), types.IntDatum(1), types.StringDatum("n"), types.NullDatum}},
			{L: []types.Datum{types.DoubleDatum(math.NaN()), {L: []types.Datum{types.NullDatum}}}}, types.NullDatum},
		{types.NullDatum, types.NullDatum, types.NullDatum, types.NullDatum, types.StringDatum(""), {B: []byte{}}, types.NullDatum,
			types.NullDatum, types.NullDatum, types.NullDatum, types.NullDatum, {L: []types.Datum{}}, types.NullDatum,
			{L: []types.Datum{types.NullDatum, types.NullDatum}}, types.NullDatum},
	}
	same := func(a, b types.Datum, typ types.Type) bool {
		if a.Null || b.Null {
			return a.Null == b.Null
		}
		switch typ.Kind {
		case types.Double:
			return math.Float64bits(a.F) == math.Float64bits(b.F)
		case types.String, types.Bytes:
			return bytes.Equal(a.B, b.B)
		case types.Decimal:
			return a.I == b.I && bytes.Equal(a.B, b.B)
		case types.Array, types.Map, types.Struct:
			return fmt.Sprint(a.L) == fmt.Sprint(b.L)
		}
		return a.I == b.I
	}
	for _, kept := range [][]int{nil, {0, 4, 7, 13}, {}} {
		codec := newTopNRows(cols, kept)
		for ri, row := range rows {
			enc := codec.encode(nil, row)
			got := make(types.Row, len(cols))
			for i := range got {
				got[i] = types.IntDatum(99) // overwritten
			}
			if err := codec.decode(enc, got); err != nil {
				t.Fatalf("kept %v row %d: %v", kept, ri, err)
			}
			for i, c := range cols {
				want := row[i]
				if kept != nil && !slices.Contains(kept, i) || c.Type.Kind == types.Unknown {
					want = types.NullDatum
				}
				if !same(got[i], want, c.Type) {
					t.Errorf("kept %v row %d column %s: got %+v, want %+v", kept, ri, c.Name, got[i], want)
				}
			}
			// Truncated or padded encodings are refused, not misread.
			if len(enc) > 0 {
				if err := codec.decode(enc[:len(enc)-1], got); err == nil {
					t.Errorf("kept %v row %d: a truncated row decoded", kept, ri)
				}
			}
			if err := codec.decode(append(enc, 0), got); err == nil {
				t.Errorf("kept %v row %d: a padded row decoded", kept, ri)
			}
		}
	}
}

// topNSpec is topNFixture's TopN: over rows (G STRING, ID STRING, V
// BIGINT), PARTITION BY G ORDER BY V DESC, first n, ranked; binary: in
// the binary layout (all columns kept unless kept says which).
func topNSpec(n int64, table, binary bool, kept []int) *physical.TopN {
	in := types.Schema{Columns: []types.Column{
		{Name: "G", Type: types.StringType}, {Name: "ID", Type: types.StringType, Key: table}, {Name: "V", Type: types.BigintType},
	}}
	out := types.Schema{Columns: append(slices.Clone(in.Columns), types.Column{Name: "RN", Type: types.BigintType, Key: true})}
	spec := &physical.TopN{Partition: []int{0}, Order: []expr.Expr{&expr.Column{Index: 2, Name: "V", T: types.BigintType}},
		Desc: []bool{true}, N: n, Rank: true, FromTable: table, Out: out,
		Store: &physical.Store{Name: "TOPN", Kind: physical.KeyValue, Changelog: "cl", Schema: in}}
	if table {
		spec.RowKey = []int{1}
	}
	if binary {
		spec.Binary, spec.Kept = true, kept
	}
	return spec
}

// topNRun drives a Top-N through a random history with commits,
// aborted transactions (whose records come again) and restores of the
// store from its changelog, as a task would, and returns the changes it
// emitted in committed transactions.
type topNRun struct {
	t      *testing.T
	spec   *physical.TopN
	op     *topNOp
	st     *taskStore
	sink   Processor
	got    *[]string
	clog   [][2][]byte // the changelog: key, value (nil: deleted)
	stores int
}

func (r *topNRun) open() {
	r.t.Helper()
	if r.st != nil {
		if err := r.st.close(); err != nil {
			r.t.Fatal(err)
		}
	}
	st, err := openTaskStore(r.t.TempDir(), "TOPN", "cl", 0, nil, false)
	if err != nil {
		r.t.Fatal(err)
	}
	// Restore: the changelog's latest value per key.
	for _, kv := range r.clog {
		if kv[1] == nil {
			err = st.ov.Delete(kv[0])
		} else {
			err = st.ov.Put(kv[0], kv[1])
		}
		if err != nil {
			r.t.Fatal(err)
		}
	}
	if err := st.ov.Commit(); err != nil {
		r.t.Fatal(err)
	}
	op, err := newTopN("TOPN", r.spec, st, &outbox{send: func(*kgo.Record) {}}, r.sink)
	if err != nil {
		r.t.Fatal(err)
	}
	r.op, r.st = op, st
}

func (r *topNRun) commit() {
	r.t.Helper()
	if err := r.op.Flush(); err != nil {
		r.t.Fatal(err)
	}
	for _, rec := range r.op.out.pending {
		var v []byte
		if rec.Value != nil {
			v = slices.Clone(rec.Value)
		}
		r.clog = append(r.clog, [2][]byte{slices.Clone(rec.Key), v})
	}
	r.op.out.reset()
	if err := r.st.commit(); err != nil {
		r.t.Fatal(err)
	}
}

func runTopNHistory(t *testing.T, spec *physical.TopN, sink Processor, got *[]string, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 1))
	r := &topNRun{t: t, spec: spec, sink: sink, got: got}
	r.open()
	pendingTable := map[string]types.Row{} // a table's rows by ID
	var batch []Change
	committed := 0
	id := 0
	for step := 0; step < 600; step++ {
		var c Change
		g := fmt.Sprintf("g%d", rng.IntN(4))
		v := int64(rng.IntN(20) + step/30) // rising: rows keep entering
		switch {
		case !spec.FromTable:
			id++
			c = Change{New: topNRow(g, fmt.Sprintf("r%d", id), v)}
		case len(pendingTable) == 0 || rng.IntN(3) == 0:
			id++
			c = Change{New: topNRow(g, fmt.Sprintf("r%d", id), v)}
		default:
			var ids []string
			for k := range pendingTable {
				ids = append(ids, k)
			}
			slices.Sort(ids)
			k := ids[rng.IntN(len(ids))]
			c = Change{Old: pendingTable[k]}
			if rng.IntN(4) > 0 {
				c.New = topNRow(g, k, v)
			}
		}
		if c.Old != nil {
			delete(pendingTable, string(c.Old[1].B))
		}
		if c.New != nil {
			pendingTable[string(c.New[1].B)] = c.New
		}
		batch = append(batch, c)
		if err := r.op.Process(&c); err != nil {
			t.Fatal(err)
		}
		switch x := rng.IntN(100); {
		case x < 10: // commit
			r.commit()
			committed, batch = len(*got), batch[:0]
		case x < 15: // abort: the changes come again
			r.op.Abort()
			r.st.abort()
			*got = (*got)[:committed]
			for i := range batch {
				if err := r.op.Process(&batch[i]); err != nil {
					t.Fatal(err)
				}
			}
		case x < 16: // commit, then restore into a new store and task
			r.commit()
			committed, batch = len(*got), batch[:0]
			r.open()
			r.stores++
		}
	}
	r.commit()
	if err := r.st.close(); err != nil {
		t.Fatal(err)
	}
	if r.stores == 0 {
		t.Fatalf("seed %d: no restore", seed)
	}
	return slices.Clone(*got)
}

// TestTopNLayoutsAgree: the binary layout (with its cache of hot
// partitions, over a stream with N above 1) emits what the JSON layout
// emits, through commits, aborted transactions and restores from the
// changelog; a deduplication before a sink that keeps no column emits
// the same rows too.
func TestTopNLayoutsAgree(t *testing.T) {
	for _, c := range []struct {
		n     int64
		table bool
	}{{1, false}, {3, false}, {1, true}, {3, true}} {
		for seed := uint64(1); seed <= 3; seed++ {
			name := fmt.Sprintf("n=%d table=%v seed=%d", c.n, c.table, seed)
			var want, got []string
			jc, bc := &collect{}, &collect{}
			want = runTopNHistory(t, topNSpec(c.n, c.table, false, nil), jc, &jc.got, seed)
			got = runTopNHistory(t, topNSpec(c.n, c.table, true, nil), bc, &bc.got, seed)
			if len(want) < 50 {
				t.Fatalf("%s: only %d changes", name, len(want))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s: binary rows emitted\n%s\nJSON rows\n%s", name, diffLines(got, want), "")
			}
			if c.n == 1 && !c.table {
				jn, bn := &newOnly{}, &newOnly{}
				want = runTopNHistory(t, topNSpec(c.n, c.table, false, nil), jn, &jn.got, seed)
				got = runTopNHistory(t, topNSpec(c.n, c.table, true, []int{}), bn, &bn.got, seed)
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s, no column kept: %s", name, diffLines(got, want))
				}
			}
		}
	}
}

func diffLines(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at change %d: got %q, want %q", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("%d changes, want %d", len(got), len(want))
}

// A column the Top-N does not keep is NULL in the rows it emits from its
// state; the row being added comes whole.
func TestTopNKeptColumns(t *testing.T) {
	st, err := openTaskStore(t.TempDir(), "TOPN", "cl", 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	var rows []string
	sink := topNFunc(func(c *Change) error {
		r := c.New
		rows = append(rows, fmt.Sprintf("%v/%s/%d@%d", r[0].Null, r[1].B, r[2].I, r[3].I))
		return nil
	})
	op, err := newTopN("TOPN", topNSpec(2, false, true, []int{1}), st, &outbox{send: func(*kgo.Record) {}}, sink)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []types.Row{topNRow("g", "a", 5), topNRow("g", "b", 9)} {
		if err := op.Process(&Change{New: r}); err != nil {
			t.Fatal(err)
		}
	}
	// b enters whole at 1; a, shifted to 2, comes from the state: its G
	// (not kept) NULL, V (not kept) 0.
	want := []string{"false/a/5@1", "false/b/9@1", "true/a/0@2"}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", rows, want)
	}
	if _, err := newTopN("TOPN", topNSpec(2, false, true, []int{3}), st, &outbox{}, sink); err == nil {
		t.Error("a kept column past the row's was accepted")
	}
}

// topNFunc is a Processor of a function.
type topNFunc func(*Change) error

func (f topNFunc) Process(c *Change) error { return f(c) }

// Partition keys that compare equal encode alike: -0 and 0, any NaN;
// rows keep their values' bits.
func TestTopNKeyCanonical(t *testing.T) {
	cols := []types.Column{{Name: "D", Type: types.DoubleType}, {Name: "A", Type: types.Type{Kind: types.Array, Elem: &types.DoubleType}}}
	key := newTopNRows(cols, nil)
	key.key = true
	row := newTopNRows(cols, nil)
	nan2 := math.Float64frombits(math.Float64bits(math.NaN()) ^ 2)
	pairs := [][2]float64{{0, math.Copysign(0, -1)}, {math.NaN(), nan2}}
	for _, p := range pairs {
		a := types.Row{types.DoubleDatum(p[0]), {L: []types.Datum{types.DoubleDatum(p[0])}}}
		b := types.Row{types.DoubleDatum(p[1]), {L: []types.Datum{types.DoubleDatum(p[1])}}}
		if !bytes.Equal(key.encode(nil, a), key.encode(nil, b)) {
			t.Errorf("keys of %v and %v differ", p[0], p[1])
		}
		if bytes.Equal(row.encode(nil, a), row.encode(nil, b)) {
			t.Errorf("rows of %v and %v are alike", p[0], p[1])
		}
	}
}

// BenchmarkTopNLayouts: BenchmarkTopNStream's rows (1,000 partitions,
// top 10, random values) and a deduplication of rising values, in
// either layout.
func BenchmarkTopNLayouts(b *testing.B) {
	for _, c := range []struct {
		name string
		n    int64
		kept []int
	}{{"top10", 10, nil}, {"dedup", 1, []int{}}} {
		for _, binary := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/binary=%v", c.name, binary), func(b *testing.B) {
				st, err := openTaskStore(b.TempDir(), "TOPN", "cl", 0, nil, false)
				if err != nil {
					b.Fatal(err)
				}
				defer st.close()
				var sink Processor = nop{}
				if c.n == 1 {
					sink = nopNew{}
				}
				op, err := newTopN("TOPN", topNSpec(c.n, false, binary, c.kept), st, &outbox{send: func(*kgo.Record) {}}, sink)
				if err != nil {
					b.Fatal(err)
				}
				rows := make([]types.Row, 4096)
				for i := range rows {
					rows[i] = topNRow(fmt.Sprintf("g%d", (i*7919)%1000), "https://www.nexmark.com/x/y/z/item.htm?query=1", int64((i*104729)%100000))
				}
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					r := rows[i%len(rows)]
					if c.n == 1 {
						r[2] = types.IntDatum(int64(i)) // rising: every row enters
					}
					if err := op.Process(&Change{New: r}); err != nil {
						b.Fatal(err)
					}
					if i%1000 == 999 {
						if err := op.Flush(); err != nil {
							b.Fatal(err)
						}
						if err := st.commit(); err != nil {
							b.Fatal(err)
						}
						op.out.reset()
					}
				}
			})
		}
	}
}

// nopNew drops changes, reading no old row beside a new one (a sink).
type nopNew struct{}

func (nopNew) Process(*Change) error   { return nil }
func (nopNew) ignoresOldWithNew() bool { return true }
