package exec

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/datagen"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// nexmarkBidsSchema is the bench's bids stream (go run ./bench).
var nexmarkBidsSchema = types.Schema{Columns: []types.Column{
	{Name: "AUCTION", Type: types.StringType, Key: true},
	{Name: "BIDDER", Type: types.BigintType},
	{Name: "PRICE", Type: types.BigintType},
	{Name: "CHANNEL", Type: types.StringType},
	{Name: "URL", Type: types.StringType},
	{Name: "DATETIME", Type: types.BigintType},
	{Name: "EXTRA", Type: types.StringType},
}}.WithPseudo()

// BenchmarkDistinctNexmark runs the bench's distinct scenario's query,
// SELECT auction, COUNT(DISTINCT bidder) FROM bids GROUP BY auction, in
// one task without a broker: Nexmark bids decoded, folded, their rows
// and the changelogs' records produced to a discarding outbox, a commit
// (the stores' writes applied to RocksDB in the background, as a
// running task's are) every 25,000 records, polls of 500. It reports the
// CPU of the query's own work per record, the figure `go run ./bench`
// measures with the client's and broker's work around it:
//
//	go test ./exec -run '^$' -bench DistinctNexmark -benchtime 1000000x
func BenchmarkDistinctNexmark(b *testing.B) {
	src := &catalog.Source{Name: "BIDS", Kind: catalog.Stream, Topic: "bids", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
		Partitions: 1, Schema: types.Schema{Columns: nexmarkBidsSchema.Columns[:7]}}
	scan := planner.NewScan(src)
	in := scan.Schema()
	col := func(name string) *expr.Column {
		i := in.Index(name)
		return &expr.Column{Index: i, Name: name, T: in.Columns[i].Type}
	}
	countDistinct, _ := expr.DistinctAggregate("COUNT")
	agg, err := planner.NewAggregate(scan, []expr.Expr{col("AUCTION")}, []string{"AUCTION"}, []*planner.AggCall{
		{Fn: countDistinct, Args: []expr.Expr{col("BIDDER")}, T: types.BigintType},
	})
	if err != nil {
		b.Fatal(err)
	}
	agg.DistinctValues = true
	proj, err := planner.NewProject(agg, []expr.Expr{
		&expr.Column{Index: 0, Name: "AUCTION", T: types.StringType},
		&expr.Column{Index: 1, Name: "KSQL_AGG_0", T: types.BigintType},
	}, []string{"AUCTION", "BIDDERS"})
	if err != nil {
		b.Fatal(err)
	}
	target := &catalog.Source{Name: "OUT", Kind: catalog.Table, Topic: "out", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Schema: proj.Schema()}
	topo, err := physical.Build("app", &planner.Sink{Input: proj, Target: target})
	if err != nil {
		b.Fatal(err)
	}

	gen, err := datagen.New(datagen.Config{Quickstart: "nexmark", Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	recs := make([]kgo.Record, 0, b.N)
	var rec datagen.Record
	for len(recs) < b.N {
		if gen.Next(&rec); rec.Kind == datagen.KindBid {
			recs = append(recs, kgo.Record{Key: bytes.Clone(rec.Key), Value: bytes.Clone(rec.Value), Offset: int64(len(recs))})
		}
	}

	res := state.NewRocksResources(64<<20, 64<<20, 64<<20)
	b.Cleanup(func() { res.Close() })
	task := newTestTask(b, topo, 0, Config{StateDir: b.TempDir(), RocksResources: res}, func(r *kgo.Record) { r.Offset = 1 })
	op := proc[*physical.Aggregate, *aggregateOp](task)
	for _, st := range task.stores {
		if err := st.setAsync(true); err != nil {
			b.Fatal(err)
		}
	}
	const poll, txn = 500, 25_000
	batch := make([]*kgo.Record, 0, poll)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := range recs {
		if batch = append(batch, &recs[i]); len(batch) < poll && i < len(recs)-1 {
			continue
		}
		if err := task.feed(batch...); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
		task.out.flush()
		if (i+1)%txn < poll || i == len(recs)-1 {
			commitBench(b, task, op)
		}
	}
	for _, st := range task.stores {
		if err := st.sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/record")
}
