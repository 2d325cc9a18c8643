package exec

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// bidSchema is a Nexmark-like Bid with the pseudo columns appended.
var bidSchema = types.Schema{Columns: []types.Column{
	{Name: "AUCTION", Type: types.BigintType, Key: true},
	{Name: "BIDDER", Type: types.BigintType},
	{Name: "PRICE", Type: types.BigintType},
	{Name: "CHANNEL", Type: types.StringType},
	{Name: "URL", Type: types.StringType},
}}.WithPseudo()

// bidTopology is SELECT auction, bidder, price * 908 / 1000 AS euros, channel
// FROM bids WHERE price > 5000.
func bidTopology(t testing.TB) *physical.Topology {
	col := func(i int) *expr.Column {
		c := bidSchema.Columns[i]
		return &expr.Column{Index: i, Name: c.Name, T: c.Type}
	}
	pred, err := expr.NewBinary(expr.OpGT, col(2), expr.IntLiteral(5000))
	if err != nil {
		t.Fatal(err)
	}
	mul, _ := expr.NewBinary(expr.OpMul, col(2), expr.IntLiteral(908))
	euros, _ := expr.NewBinary(expr.OpDiv, mul, expr.IntLiteral(1000))
	out := types.Schema{Columns: []types.Column{
		{Name: "AUCTION", Type: types.BigintType, Key: true},
		{Name: "BIDDER", Type: types.BigintType},
		{Name: "EUROS", Type: types.BigintType},
		{Name: "CHANNEL", Type: types.StringType},
	}}
	return &physical.Topology{AppID: "app", Limit: -1, SubTopologies: []*physical.SubTopology{{
		Source: &physical.Source{Name: "SOURCE-BIDS", Topic: "bids", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Schema: bidSchema},
		Processors: []physical.Processor{
			&physical.Filter{Name: "FILTER-0001", Predicate: pred, Out: bidSchema},
			&physical.Project{Name: "PROJECT-0002", Exprs: []expr.Expr{col(0), col(1), euros, col(3)}, Out: out},
		},
		Sink: &physical.Sink{Name: "SINK-OUT", Topic: "out", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Schema: out},
	}}}
}

// readQueryColumns has bidTopology's source decode only the columns its
// query reads (bidder, price, channel), as the planner would set it.
func readQueryColumns(topo *physical.Topology) {
	read := make([]bool, bidSchema.Len())
	read[1], read[2], read[3] = true, true, true
	topo.SubTopologies[0].Source.Read = read
}

// newTestTask builds one task of topo whose sink appends to *produced.
func newTestTask(t testing.TB, topo *physical.Topology, produced *[]*kgo.Record) (*sourceOp, *outbox) {
	st := topo.SubTopologies[0]
	var ts time.Time
	out := &outbox{send: func(r *kgo.Record) { *produced = append(*produced, r) }}
	sink, err := newSink(st.Sink, out, &ts)
	if err != nil {
		t.Fatal(err)
	}
	head, err := buildChain(st.Processors, sink)
	if err != nil {
		t.Fatal(err)
	}
	src, err := newSource(st.Source, &ts, head)
	if err != nil {
		t.Fatal(err)
	}
	return src, out
}

var bidKey = []byte{0, 0, 0, 0, 0, 0, 0x03, 0xe9} // BIGINT 1001

func TestPipeline(t *testing.T) {
	var produced []*kgo.Record
	task, out := newTestTask(t, bidTopology(t), &produced)
	in := []*kgo.Record{
		{Key: bidKey, Value: []byte(`{"bidder":7,"price":10000,"channel":"Google","url":"https://x/y","extra":1}`)},
		{Key: bidKey, Value: []byte(`{"bidder":8,"price":100,"channel":"Apple"}`)}, // filtered out
		{Key: bidKey, Value: []byte(`{"bidder":9,"price":"nope"}`)},                // bad record
		{Key: bidKey, Value: nil}, // null value: no row
		{Key: bidKey, Value: []byte(`{"bidder":10,"price":6000}`)},
	}
	var bad int
	for _, r := range in {
		if err := task.process(r); err != nil {
			if !errors.Is(err, types.ErrBadRecord) {
				t.Fatalf("unexpected error %v", err)
			}
			bad++
		}
	}
	if bad != 1 {
		t.Errorf("bad records: %d, want 1", bad)
	}
	out.flush()
	want := []string{`{"BIDDER":7,"EUROS":9080,"CHANNEL":"Google"}`, `{"BIDDER":10,"EUROS":5448,"CHANNEL":null}`}
	if len(produced) != len(want) {
		t.Fatalf("produced %d records, want %d", len(produced), len(want))
	}
	for i, r := range produced {
		if string(r.Value) != want[i] || string(r.Key) != string(bidKey) || r.Topic != "out" {
			t.Errorf("record %d: key %x value %s topic %s; want %s", i, r.Key, r.Value, r.Topic, want[i])
		}
	}
}

// BenchmarkPipeline measures one task's per-record path: JSON decode,
// filter, project and JSON encode of a ~150-byte record that passes the
// filter.
func BenchmarkPipeline(b *testing.B) {
	// every: the source decodes every column; read: only those the query
	// reads (bidder, price, channel), as the planner sets it.
	for _, name := range []string{"every", "read"} {
		b.Run(name, func(b *testing.B) {
			var produced []*kgo.Record
			topo := bidTopology(b)
			if name == "read" {
				readQueryColumns(topo)
			}
			task, out := newTestTask(b, topo, &produced)
			rec := &kgo.Record{Key: bidKey, Value: []byte(`{"auction":1001,"bidder":2001,"price":987654,"channel":"channel-5901","url":"https://www.nexmark.com/auction/bid?id=1001","dateTime":"2026-11-30 05:00:00.000","extra":""}`)}
			b.ReportAllocs()
			b.SetBytes(int64(len(rec.Value)))
			for i := 0; i < b.N; i++ {
				if err := task.process(rec); err != nil {
					b.Fatal(err)
				}
				out.flush()
				if len(produced) == 1024 {
					produced = produced[:0]
					out.reset()
				}
			}
		})
	}
}

// TestSteadyStateAllocations holds the per-record paths to zero heap
// allocations once warm: a stateless chain (decoding only the columns it
// reads, filter, projection, encoding, queuing for the producer) and an
// aggregate's update of groups the transaction has already changed.
func TestSteadyStateAllocations(t *testing.T) {
	var produced []*kgo.Record
	topo := bidTopology(t)
	readQueryColumns(topo)
	task, out := newTestTask(t, topo, &produced)
	rec := &kgo.Record{Key: bidKey, Value: []byte(`{"auction":1001,"bidder":2001,"price":987654,"channel":"channel-5901","url":"https://www.nexmark.com/auction/bid?id=1001","dateTime":1700000000123,"extra":"xyz"}`)}
	step := func() {
		if err := task.process(rec); err != nil {
			t.Fatal(err)
		}
		out.flush()
		if len(produced) == 512 {
			produced = produced[:0]
			out.reset()
		}
	}
	for range 1024 {
		step()
	}
	if n := testing.AllocsPerRun(1000, step); n != 0 {
		t.Errorf("stateless chain: %.2f allocations per record", n)
	}

	agg := newAggTask(t, func(*kgo.Record) {})
	recs := make([]*kgo.Record, 16)
	for i := range recs {
		recs[i] = &kgo.Record{Key: []byte{0, 0, 0, 0, 0, 0, 0, byte(i)}, Value: []byte(`{"bidder":7,"price":3}`)}
	}
	i := 0
	update := func() {
		if err := agg.src.process(recs[i%len(recs)]); err != nil {
			t.Fatal(err)
		}
		agg.out.flush()
		if i++; i%512 == 0 {
			agg.out.reset()
		}
	}
	for range 1024 {
		update()
	}
	if n := testing.AllocsPerRun(1000, update); n != 0 {
		t.Errorf("aggregate update: %.2f allocations per record", n)
	}
}
