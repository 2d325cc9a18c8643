package engine_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
)

// TestWindowedDistinctValuesUpgrade is TestDistinctValuesUpgrade for a
// windowed aggregation: a query recorded with a plan from before time
// windows kept their distinct values apart (every value in the
// window's state, no AGGREGATE-DISTINCT store) runs from that plan,
// while the same statement run now gets the store; both give the same
// windows across a restart; and CREATE OR REPLACE of the old query keeps
// its layout (its window store holds the values).
func TestWindowedDistinctValuesUpgrade(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	u := newUpgradeService(t, ctx)
	brokers, open, run := u.brokers, u.open, u.run
	const ddl = "CREATE STREAM s (id INT KEY, g STRING, v BIGINT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);"
	const selectDistinct = " AS SELECT g, COUNT(DISTINCT v) AS nd, SUM(DISTINCT v) AS sd FROM s WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY g;"
	eng := open()
	run(eng, "SET 'auto.offset.reset'='earliest';")
	run(eng, ddl)
	eng.Close()

	// The old query's command, with the plan a build before recorded:
	// bound with LegacyDistinctState, whose windowed aggregations (as
	// every one of those builds') have no store of distinct values.
	oldStmt := "CREATE TABLE old_wd WITH (KAFKA_TOPIC='old_wd')" + selectDistinct
	recordOldPlan(t, ctx, brokers, []string{ddl}, oldStmt, func(s *sql.Select) { s.LegacyDistinctState = true })

	eng = open()
	run(eng, "CREATE TABLE new_wd WITH (KAFKA_TOPIC='new_wd')"+selectDistinct)
	layouts := func(eng *engine.Engine) string {
		out := map[string]bool{}
		for _, q := range eng.Catalog().Queries() {
			p, ok := eng.ExplainQuery(q.ID)
			if !ok || p.Fingerprint == "" {
				t.Fatalf("query %s: not running", q.ID)
			}
			if q.Sink == "OLD_WD" || q.Sink == "NEW_WD" {
				out[q.Sink] = strings.Contains(p.Text, "AGGREGATE-DISTINCT")
			}
		}
		return fmt.Sprint(out)
	}
	if got := layouts(eng); got != "map[NEW_WD:true OLD_WD:false]" {
		t.Fatalf("queries keeping distinct values apart: %s", got)
	}

	rec := func(id int, ts int64, v string) *kgo.Record {
		return &kgo.Record{Key: intKey(id), Value: []byte(v), Timestamp: time.UnixMilli(ts)}
	}
	// The window of group g starting at start, as the result's key.
	win := func(g string, start int64) string {
		return g + string(binary.BigEndian.AppendUint64(nil, uint64(start)))
	}
	produce(t, ctx, brokers, "s",
		rec(1, 1000, `{"G":"a","V":10}`), rec(2, 2000, `{"G":"a","V":10}`), rec(3, 3000, `{"G":"a","V":20}`),
		rec(4, 12000, `{"G":"a","V":10}`), rec(5, 4000, `{"G":"b","V":5}`))
	want := map[string]string{win("a", 0): `{"ND":2,"SD":30}`, win("a", 10000): `{"ND":1,"SD":10}`, win("b", 0): `{"ND":1,"SD":5}`}
	waitLast(t, ctx, brokers, "old_wd", want)
	waitLast(t, ctx, brokers, "new_wd", want)

	eng.Close()
	eng = open()
	if got := layouts(eng); got != "map[NEW_WD:true OLD_WD:false]" {
		t.Fatalf("after a restart, queries keeping distinct values apart: %s", got)
	}
	// 10 is in a's first window already; 30 is new there.
	produce(t, ctx, brokers, "s", rec(6, 5000, `{"G":"a","V":10}`), rec(7, 6000, `{"G":"a","V":30}`), rec(8, 13000, `{"G":"b","V":5}`))
	want = map[string]string{win("a", 0): `{"ND":3,"SD":60}`, win("a", 10000): `{"ND":1,"SD":10}`, win("b", 0): `{"ND":1,"SD":5}`, win("b", 10000): `{"ND":1,"SD":5}`}
	waitLast(t, ctx, brokers, "old_wd", want)
	waitLast(t, ctx, brokers, "new_wd", want)

	// CREATE OR REPLACE of the old query keeps its state's layout.
	run(eng, "CREATE OR REPLACE TABLE old_wd WITH (KAFKA_TOPIC='old_wd') AS SELECT g, COUNT(DISTINCT v) AS nd, SUM(DISTINCT v) AS sd, COUNT(DISTINCT v) + 1 AS nd1 FROM s WINDOW TUMBLING (SIZE 10 SECONDS) GROUP BY g;")
	if got := layouts(eng); got != "map[NEW_WD:true OLD_WD:false]" {
		t.Fatalf("after CREATE OR REPLACE, queries keeping distinct values apart: %s", got)
	}
	produce(t, ctx, brokers, "s", rec(9, 7000, `{"G":"a","V":40}`))
	// Only a's first window changed after the replace (its values of
	// before it still in its state); the others keep their rows.
	want[win("a", 0)] = `{"ND":4,"SD":100,"ND1":5}`
	waitLast(t, ctx, brokers, "old_wd", want)
	eng.Close()
}
