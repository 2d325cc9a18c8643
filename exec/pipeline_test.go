package exec

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
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
// FROM bids WHERE price > 5000. Its source decodes only the columns the
// query reads (bidder, price, channel), as a built topology's does.
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
	g := physical.NewGraph("app")
	src := g.Add("SOURCE-BIDS", &physical.Source{Topic: "bids", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Out: bidSchema})
	filter := g.Add("FILTER-0001", &physical.Filter{Predicate: pred, Out: bidSchema}, src)
	project := g.Add("PROJECT-0002", &physical.Project{Exprs: []expr.Expr{col(0), col(1), euros, col(3)}, Out: out}, filter)
	g.Add("SINK-OUT", &physical.Sink{Topic: "out", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Out: out}, project)
	return g.Topology()
}

// readAllColumns has bidTopology's source decode every column.
func readAllColumns(topo *physical.Topology) {
	topo.SubTopologies[0].Source().Read = nil
}

// testTask is a task built by the task manager, as a stream thread
// builds it, without a broker: its records go to the outbox's send.
type testTask struct {
	*Task
	tm  *taskManager
	out *outbox
	// lastBad is the error of the last bad record fed.
	lastBad error
	onBad   func(*kgo.Record, error)
}

// newTestTask builds task (sub, partition 0) of topo. cfg needs a
// StateDir when the sub-topology keeps stores.
func newTestTask(t testing.TB, topo *physical.Topology, sub int, cfg Config, send func(*kgo.Record)) *testTask {
	t.Helper()
	cfg.defaults()
	q := &Query{id: "T", topo: topo, cfg: cfg, log: cfg.Logger}
	q.newPartitionChecks()
	tt := &testTask{out: &outbox{send: send}}
	tt.onBad = func(_ *kgo.Record, err error) { tt.lastBad = err }
	tt.tm = newTaskManager(q, 0, tt.out)
	st := topo.SubTopologies[sub]
	tt.Task = &Task{id: TaskID{Sub: sub}, sub: st, streamTime: noStreamTime}
	for _, s := range st.Sources {
		tt.queues = append(tt.queues, &partitionQueue{tp: topicPartition{s.Op.(*physical.Source).Topic, 0}})
	}
	if err := tt.tm.openStores([]*Task{tt.Task})[0]; err != nil {
		t.Fatal(err)
	}
	if err := tt.tm.open(tt.Task); err != nil {
		t.Fatal(err)
	}
	tt.state = taskRunning
	tt.tm.tasks[tt.id] = tt.Task
	t.Cleanup(func() { tt.tm.closeTask(tt.Task) })
	return tt
}

// feed processes records as one poll's; it returns the error of the last
// bad record, or the task's failure.
func (tt *testTask) feed(recs ...*kgo.Record) error {
	q := tt.queues[0]
	q.recs = append(q.recs, recs...)
	tt.lastBad = nil
	if _, err := tt.process(tt.onBad); err != nil {
		return err
	}
	return tt.lastBad
}

// proc returns the processor of the first node of type T.
func proc[T physical.Op, P Processor](tt *testTask) P {
	n, _ := physical.Find[T](tt.tm.topo)
	return tt.graph.procs[n.Name].(P)
}

var bidKey = []byte{0, 0, 0, 0, 0, 0, 0x03, 0xe9} // BIGINT 1001

func TestPipeline(t *testing.T) {
	var produced []*kgo.Record
	task := newTestTask(t, bidTopology(t), 0, Config{}, func(r *kgo.Record) { produced = append(produced, r) })
	out := task.out
	in := []*kgo.Record{
		{Key: bidKey, Value: []byte(`{"bidder":7,"price":10000,"channel":"Google","url":"https://x/y","extra":1}`)},
		{Key: bidKey, Value: []byte(`{"bidder":8,"price":100,"channel":"Apple"}`)}, // filtered out
		{Key: bidKey, Value: []byte(`{"bidder":9,"price":"nope"}`)},                // bad record
		{Key: bidKey, Value: nil}, // null value: no row
		{Key: bidKey, Value: []byte(`{"bidder":10,"price":6000}`)},
	}
	var bad int
	for _, r := range in {
		if err := task.feed(r); err != nil {
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
			if name == "every" {
				readAllColumns(topo)
			}
			task := newTestTask(b, topo, 0, Config{}, func(r *kgo.Record) { produced = append(produced, r) })
			out := task.out
			rec := &kgo.Record{Key: bidKey, Value: []byte(`{"auction":1001,"bidder":2001,"price":987654,"channel":"channel-5901","url":"https://www.nexmark.com/auction/bid?id=1001","dateTime":"2026-11-30 05:00:00.000","extra":""}`)}
			// Records come in polls: a task runs a poll's records of its
			// partition at once (here 64 per call).
			const poll = 64
			batch := make([]*kgo.Record, poll)
			for i := range batch {
				batch[i] = rec
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(rec.Value)))
			for i := 0; i < b.N; i += poll {
				if err := task.feed(batch[:min(poll, b.N-i)]...); err != nil {
					b.Fatal(err)
				}
				out.flush()
				if len(produced) >= 1024 {
					produced = produced[:0]
					out.reset()
				}
			}
		})
	}
}

// TestSteadyStateAllocations holds the per-record paths to zero heap
// allocations once warm: a stateless chain (decoding only the columns it
// reads, filter, projection, encoding, queuing for the producer), an
// aggregate's update of groups the transaction has already changed, a
// stream–table join (streamTableJoinAllocs) and stream–stream joins with
// their window-store range scans (streamJoinAllocs: INNER, and LEFT with
// a grace period, whose unmatched rows go through the buffer), and UNION
// ALL's branches and merge (mergeAllocs).
func TestSteadyStateAllocations(t *testing.T) {
	var produced []*kgo.Record
	task := newTestTask(t, bidTopology(t), 0, Config{}, func(r *kgo.Record) { produced = append(produced, r) })
	out := task.out
	rec := &kgo.Record{Key: bidKey, Value: []byte(`{"auction":1001,"bidder":2001,"price":987654,"channel":"channel-5901","url":"https://www.nexmark.com/auction/bid?id=1001","dateTime":1700000000123,"extra":"xyz"}`)}
	step := func() {
		if err := task.feed(rec); err != nil {
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
		if err := agg.feed(recs[i%len(recs)]); err != nil {
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
	// The same aggregation emitting each group's previous row with its
	// new one (physical.Aggregate.Changes: an aggregation over it reads
	// them), as a nested aggregation's inner one does.
	agg.agg.changes = true
	for range 1024 {
		update()
	}
	if n := testing.AllocsPerRun(1000, update); n != 0 {
		t.Errorf("aggregate update with old rows: %.2f allocations per record", n)
	}

	if n := streamTableJoinAllocs(t); n != 0 {
		t.Errorf("stream–table join: %.2f allocations per two records", n)
	}
	if n := streamJoinAllocs(t, planner.InnerJoin, true); n != 0 {
		t.Errorf("stream–stream INNER join: %.2f allocations per three records", n)
	}
	if n := streamJoinAllocs(t, planner.LeftJoin, false); n != 0 {
		t.Errorf("stream–stream LEFT join with grace: %.2f allocations per three records", n)
	}
	if n := mergeAllocs(t); n != 0 {
		t.Errorf("UNION ALL (two branches of one source, MERGE): %.2f allocations per record", n)
	}
}
