package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
)

// TestInternalNamesAsUserNames: tables named like the nodes and stores a
// topology names itself (its aggregate's store AGGREGATE, a table's
// changes store TABLE-INPUT, the GROUPBY repartition's source node, JOIN)
// answer exactly as a table named FOO does: as the result of a GROUP BY,
// read by a pull query, and as the table side of a stream–table join
// under a GROUP BY, where the joined table's store and the aggregate's
// share one topology.
func TestInternalNamesAsUserNames(t *testing.T) {
	names := []string{"FOO", "AGGREGATE", "`TABLE-INPUT`", "GROUPBY", "`GROUPBY-repartition`", "`JOIN`"}
	wantAgg := []string{"0|4", "1|4", "2|4", "3|4", "4|4"}
	wantJoin := []string{"0|4|0", "1|4|40", "2|4|80", "3|4|120"}
	t.Run("result", func(t *testing.T) {
		ctx, eng, run, produceAll := internalNamesEngine(t)
		for _, name := range names {
			run(fmt.Sprintf("CREATE TABLE %s AS SELECT k, COUNT(*) AS c FROM events GROUP BY k;", name))
		}
		produceAll(0)
		for _, name := range names {
			waitRows(t, ctx, eng, "SELECT * FROM "+name+";", wantAgg)
			waitRows(t, ctx, eng, "SELECT k, c FROM "+name+" WHERE k = 3;", []string{"3|4"})
		}
	})
	t.Run("joined", func(t *testing.T) {
		ctx, eng, run, produceAll := internalNamesEngine(t)
		for i, name := range names {
			run(fmt.Sprintf("CREATE TABLE %s (id INT PRIMARY KEY, w INT) WITH (KAFKA_TOPIC='dim%d', VALUE_FORMAT='JSON', PARTITIONS=2);", name, i))
			run(fmt.Sprintf("CREATE TABLE joined%d AS SELECT e.k, COUNT(*) AS c, SUM(d.w) AS w FROM events e JOIN %s d ON e.k = d.id GROUP BY e.k;", i, name))
		}
		produceAll(len(names))
		for i := range names {
			waitRows(t, ctx, eng, fmt.Sprintf("SELECT * FROM joined%d;", i), wantJoin)
		}
	})
}

// internalNamesEngine starts an engine, for a minute at most, with the stream EVENTS; produce
// writes rows 0–3 to the topics dim0…dim<dims-1>, then 20 events over
// the keys 0–4.
func internalNamesEngine(t *testing.T) (ctx context.Context, eng *engine.Engine, run func(string), produceAll func(dims int)) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	eng, brokers := openPullEngine(t, ctx)
	s := engine.NewSession()
	run = func(stmt string) {
		t.Helper()
		if _, err := eng.Execute(ctx, s, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	run("SET 'auto.offset.reset'='earliest';")
	run("CREATE STREAM events (k INT KEY, v INT) WITH (KAFKA_TOPIC='events', VALUE_FORMAT='JSON', PARTITIONS=2);")
	produceAll = func(dims int) {
		for i := 0; i < dims; i++ {
			var recs []*kgo.Record
			for id := 0; id < 4; id++ {
				recs = append(recs, &kgo.Record{Key: intKey(id), Value: fmt.Appendf(nil, `{"W":%d}`, 10*id)})
			}
			produce(t, ctx, brokers, fmt.Sprintf("dim%d", i), recs...)
		}
		if dims > 0 {
			// The joins read their tables before the events arrive.
			time.Sleep(2 * time.Second)
		}
		var events []*kgo.Record
		for i := 0; i < 20; i++ {
			events = append(events, &kgo.Record{Key: intKey(i % 5), Value: fmt.Appendf(nil, `{"V":%d}`, i)})
		}
		produce(t, ctx, brokers, "events", events...)
	}
	return ctx, eng, run, produceAll
}
