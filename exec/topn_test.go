package exec

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// Sort keys compare bytewise as their values do: NULL first ascending,
// last descending.
func TestTopNSortKey(t *testing.T) {
	null := types.NullDatum
	for _, c := range []struct {
		typ    types.Type
		values []types.Datum // ascending
	}{
		{types.BigintType, []types.Datum{null, types.IntDatum(math.MinInt64), types.IntDatum(-5), types.IntDatum(0), types.IntDatum(3), types.IntDatum(math.MaxInt64)}},
		{types.DoubleType, []types.Datum{null, types.DoubleDatum(math.Inf(-1)), types.DoubleDatum(-2.5), types.DoubleDatum(-1e-300), types.DoubleDatum(0), types.DoubleDatum(1e-300), types.DoubleDatum(7), types.DoubleDatum(math.Inf(1))}},
		{types.StringType, []types.Datum{null, types.StringDatum(""), types.StringDatum("a"), types.StringDatum("a\x00"), types.StringDatum("a\x00b"), types.StringDatum("ab"), types.StringDatum("b")}},
	} {
		for _, desc := range []bool{false, true} {
			var keys [][]byte
			for _, d := range c.values {
				keys = append(keys, appendSortKey(nil, d, c.typ, desc))
			}
			for i := 1; i < len(keys); i++ {
				cmp := bytes.Compare(keys[i-1], keys[i])
				if desc {
					cmp = -cmp
				}
				if cmp >= 0 {
					t.Errorf("%s desc=%v: %v does not sort before %v", c.typ, desc, c.values[i-1], c.values[i])
				}
			}
		}
	}
}

// collect records the changes a processor receives, as text.
type collect struct{ got []string }

func (c *collect) Process(ch *Change) error {
	row := func(r types.Row) string {
		if r == nil {
			return "-"
		}
		return fmt.Sprintf("%s/%d@%d", r[1].B, r[2].I, r[len(r)-1].I)
	}
	c.got = append(c.got, row(ch.Old)+" => "+row(ch.New))
	return nil
}

// topNFixture is a TopN over rows (G STRING, ID STRING, V BIGINT):
// PARTITION BY G ORDER BY V DESC, first n.
func topNFixture(t testing.TB, n int64, table bool) (*topNOp, *collect, *taskStore) {
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
	st, err := openTaskStore(t.TempDir(), "TOPN", "cl", 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.close() })
	c := &collect{}
	op, err := newTopN("TOPN", spec, st, &outbox{send: func(*kgo.Record) {}}, c)
	if err != nil {
		t.Fatal(err)
	}
	return op, c, st
}

func topNRow(g, id string, v int64) types.Row {
	return types.Row{types.StringDatum(g), types.StringDatum(id), types.IntDatum(v)}
}

func TestTopNStream(t *testing.T) {
	op, c, _ := topNFixture(t, 2, false)
	for _, r := range []types.Row{topNRow("g", "a", 5), topNRow("g", "b", 9), topNRow("g", "c", 1), topNRow("g", "d", 7), topNRow("h", "e", 1), topNRow("g", "f", 7)} {
		if err := op.Process(&Change{New: r}); err != nil {
			t.Fatal(err)
		}
	}
	// f ties with d: DESC puts the later row first.
	want := []string{
		"- => a/5@1",
		"a/5@1 => b/9@1", "- => a/5@2",
		"a/5@2 => d/7@2",
		"- => e/1@1",
		"d/7@2 => f/7@2",
	}
	if strings.Join(c.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(c.got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTopNTable(t *testing.T) {
	op, c, _ := topNFixture(t, 2, true)
	steps := []Change{
		{New: topNRow("g", "a", 5)},
		{New: topNRow("g", "b", 9)},
		{New: topNRow("g", "c", 1)},                            // third: kept, not shown
		{Old: topNRow("g", "b", 9), New: topNRow("g", "b", 0)}, // b falls: a up, c in
		{Old: topNRow("g", "a", 5), New: topNRow("h", "a", 5)}, // a moves partition: b in at 2
		{Old: topNRow("g", "c", 1)},                            // c goes: b up, rank 2 empties
	}
	for i := range steps {
		if err := op.Process(&steps[i]); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"- => a/5@1",
		"a/5@1 => b/9@1", "- => a/5@2",
		"b/9@1 => a/5@1", "a/5@2 => c/1@2",
		"a/5@1 => c/1@1", "c/1@2 => b/0@2", "- => a/5@1",
		"c/1@1 => b/0@1", "b/0@2 => -",
	}
	if strings.Join(c.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(c.got, "\n"), strings.Join(want, "\n"))
	}
}

// Steady state over a stream: a row that does not enter the first N, and
// one that does (and pushes another out).
func TestTopNAllocs(t *testing.T) {
	op, c, st := topNFixture(t, 3, false)
	for i := range 100 {
		if err := op.Process(&Change{New: topNRow(fmt.Sprintf("g%d", i%10), "x", int64(1000+i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := op.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := st.commit(); err != nil {
		t.Fatal(err)
	}
	low := &Change{New: topNRow("g1", "y", 1)}
	high := &Change{New: topNRow("g2", "z", 5000)}
	out := 0.0
	if a := testing.AllocsPerRun(200, func() {
		c.got = c.got[:0]
		if err := op.Process(low); err != nil {
			t.Fatal(err)
		}
	}); a > 0 {
		out = a
	}
	in := testing.AllocsPerRun(200, func() {
		c.got = c.got[:0]
		if err := op.Process(high); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("allocations per record: %.1f not entering the top 3, %.1f entering it (3 changes emitted)", out, in)
	if out > 2 || in > 40 {
		t.Errorf("allocations per record: %.1f, %.1f", out, in)
	}
}

// BenchmarkTopNStream: 1,000 partitions, top 10 each, random values (most
// rows do not enter once the partitions fill).
func BenchmarkTopNStream(b *testing.B) {
	op, _, st := topNFixture(b, 10, false)
	op.next = nop{}
	rows := make([]types.Row, 4096)
	for i := range rows {
		rows[i] = topNRow(fmt.Sprintf("g%d", (i*7919)%1000), "x", int64((i*104729)%100000))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := op.Process(&Change{New: rows[i%len(rows)]}); err != nil {
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
}

// A table's Top-N keeps every row as an entry of its own: an update in a
// partition of 2,000 rows reads the first N and writes one or two entries.
func BenchmarkTopNTableUpdate(b *testing.B) {
	op, _, st := topNFixture(b, 3, true)
	op.next = nop{}
	for i := range 2000 {
		if err := op.Process(&Change{New: topNRow("g", fmt.Sprintf("id%d", i), int64(i))}); err != nil {
			b.Fatal(err)
		}
	}
	if err := op.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := st.commit(); err != nil {
		b.Fatal(err)
	}
	op.out.reset()
	rows := make([]types.Row, 2000)
	for i := range rows {
		rows[i] = topNRow("g", fmt.Sprintf("id%d", i), int64(i))
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		j := (i * 7919) % len(rows)
		old := rows[j]
		nw := topNRow("g", fmt.Sprintf("id%d", j), int64((i*104729)%5000))
		if err := op.Process(&Change{Old: old, New: nw}); err != nil {
			b.Fatal(err)
		}
		rows[j] = nw
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
}

// A NULL partition column makes the row bad; taking such a row out of a
// table is nothing, and its update to a partition still comes in.
func TestTopNNullPartition(t *testing.T) {
	op, c, _ := topNFixture(t, 2, true)
	nullG := types.Row{types.NullDatum, types.StringDatum("a"), types.IntDatum(5)}
	if err := op.Process(&Change{New: nullG}); !errors.Is(err, types.ErrBadRecord) {
		t.Fatalf("NULL partition: %v, want a bad record", err)
	}
	if err := op.Process(&Change{Old: nullG, New: topNRow("g", "a", 5)}); err != nil {
		t.Fatal(err)
	}
	if err := op.Process(&Change{Old: topNRow("g", "a", 5), New: nullG}); !errors.Is(err, types.ErrBadRecord) {
		t.Fatalf("to a NULL partition: %v, want a bad record", err)
	}
	want := "- => a/5@1\na/5@1 => -"
	if got := strings.Join(c.got, "\n"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// newOnly is a collect whose Process leaves the old row of a change with
// a new one unread, as a sink does (oldIgnorer).
type newOnly struct{ collect }

func (*newOnly) ignoresOldWithNew() bool { return true }

// TestTopNSkipsUnreadOld: before a node that reads no old row beside a
// new one (a sink, through projections), a Top-N emits the new rows of
// the ranks that changed without decoding the old ones; a rank that
// empties still gets its old row.
func TestTopNSkipsUnreadOld(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		op, c, _ := topNFixture(t, 2, true)
		var sink Processor = c
		if ignore {
			sink = &newOnly{}
		}
		p := &projectOp{name: "P", exprs: make([]expr.Evaluator, 4), copies: make([]datumCopy, 4), cols: []int{0, 1, 2, 3},
			out: make(types.Row, 4), outOld: make(types.Row, 4), next: sink}
		for i := range p.exprs {
			i := i
			p.exprs[i] = func(r types.Row) (types.Datum, error) { return r[i], nil }
			p.copies[i] = copyAll
		}
		op.next, op.skipOld = p, !readsOldWithNew(p)
		if op.skipOld != ignore {
			t.Fatalf("ignore %v: skipOld %v", ignore, op.skipOld)
		}
		steps := []Change{
			{New: topNRow("g", "a", 5)},
			{New: topNRow("g", "b", 9)},
			{Old: topNRow("g", "a", 5)}, // a goes: b stays first, rank 2 empties
		}
		for i := range steps {
			if err := op.Process(&steps[i]); err != nil {
				t.Fatal(err)
			}
		}
		want := []string{"- => a/5@1", "a/5@1 => b/9@1", "- => a/5@2", "a/5@2 => -"}
		got := c.got
		if ignore {
			got = sink.(*newOnly).got
			want = []string{"- => a/5@1", "- => b/9@1", "- => a/5@2", "a/5@2 => -"}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("ignore %v: got\n%s\nwant\n%s", ignore, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// TestTopNFreshRowAsStored: the row a change adds is emitted as its
// stored JSON gives it back, whether it is emitted from the row in hand
// (valid UTF-8) or decoded (a STRING with invalid bytes, which JSON
// replaces).
func TestTopNFreshRowAsStored(t *testing.T) {
	op, c, _ := topNFixture(t, 2, false)
	for _, r := range []types.Row{topNRow("g", "ok", 5), topNRow("g", "bad\xff", 9)} {
		if err := op.Process(&Change{New: r}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"- => ok/5@1", "ok/5@1 => bad\uFFFD/9@1", "- => ok/5@2"}
	if strings.Join(c.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%q\nwant\n%q", c.got, want)
	}
}
