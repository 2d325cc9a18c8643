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
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/sql"
)

// TestSessionDistinctValuesUpgrade is TestWindowedDistinctValuesUpgrade
// for session windows: a query recorded with a plan from before
// sessions kept their distinct values apart (every value in the
// session's state, no AGGREGATE-DISTINCT store, as every build before
// recorded it and as a command bound with LegacyDistinctState still
// is) runs from that plan, while the same statement run now gets the
// store; both give the same sessions across a restart, a row bridging
// two sessions and one moving a session's start earlier; and CREATE OR
// REPLACE of the old query keeps its layout.
func TestSessionDistinctValuesUpgrade(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	u := newUpgradeService(t, ctx)
	brokers, open, run := u.brokers, u.open, u.run
	const ddl = "CREATE STREAM s (id INT KEY, g STRING, v BIGINT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);"
	const selectDistinct = " AS SELECT g, COUNT(DISTINCT v) AS nd, SUM(DISTINCT v) AS sd FROM s WINDOW SESSION (5 SECONDS) GROUP BY g;"
	eng := open()
	run(eng, "SET 'auto.offset.reset'='earliest';")
	run(eng, ddl)
	eng.Close()

	oldStmt := "CREATE TABLE old_sd WITH (KAFKA_TOPIC='old_sd')" + selectDistinct
	topo := recordOldPlan(t, ctx, brokers, []string{ddl}, oldStmt, func(s *sql.Select) { s.LegacyDistinctState = true })
	if a, _ := physical.Find[*physical.Aggregate](topo); a == nil || a.Op.(*physical.Aggregate).DistinctStore != nil {
		t.Fatalf("the old plan has a store of distinct values")
	}

	eng = open()
	run(eng, "CREATE TABLE new_sd WITH (KAFKA_TOPIC='new_sd')"+selectDistinct)
	layouts := func(eng *engine.Engine) string {
		out := map[string]bool{}
		for _, q := range eng.Catalog().Queries() {
			p, ok := eng.ExplainQuery(q.ID)
			if !ok || p.Fingerprint == "" {
				t.Fatalf("query %s: not running", q.ID)
			}
			if q.Sink == "OLD_SD" || q.Sink == "NEW_SD" {
				out[q.Sink] = strings.Contains(p.Text, "AGGREGATE-DISTINCT")
			}
		}
		return fmt.Sprint(out)
	}
	if got := layouts(eng); got != "map[NEW_SD:true OLD_SD:false]" {
		t.Fatalf("queries keeping distinct values apart: %s", got)
	}

	rec := func(id int, ts int64, v string) *kgo.Record {
		return &kgo.Record{Key: intKey(id), Value: []byte(v), Timestamp: time.UnixMilli(ts)}
	}
	// The session of group g, as the result's key.
	session := func(g string, start, end int64) string {
		return g + string(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(end)), uint64(start)))
	}
	produce(t, ctx, brokers, "s",
		rec(1, 1000, `{"G":"a","V":10}`), rec(2, 2000, `{"G":"a","V":10}`), rec(3, 3000, `{"G":"a","V":20}`),
		rec(4, 12000, `{"G":"a","V":10}`), rec(5, 4000, `{"G":"b","V":5}`))
	want := map[string]string{session("a", 1000, 3000): `{"ND":2,"SD":30}`, session("a", 12000, 12000): `{"ND":1,"SD":10}`,
		session("b", 4000, 4000): `{"ND":1,"SD":5}`}
	waitLast(t, ctx, brokers, "old_sd", want)
	waitLast(t, ctx, brokers, "new_sd", want)

	eng.Close()
	eng = open()
	if got := layouts(eng); got != "map[NEW_SD:true OLD_SD:false]" {
		t.Fatalf("after a restart, queries keeping distinct values apart: %s", got)
	}
	// 7.5 s bridges a's sessions (10 in both, 30 new); 0.5 s moves b's
	// start earlier.
	produce(t, ctx, brokers, "s", rec(6, 7500, `{"G":"a","V":30}`), rec(7, 500, `{"G":"b","V":7}`))
	want = map[string]string{session("a", 1000, 12000): `{"ND":3,"SD":60}`, session("b", 500, 4000): `{"ND":2,"SD":12}`}
	waitLast(t, ctx, brokers, "old_sd", want)
	waitLast(t, ctx, brokers, "new_sd", want)

	// CREATE OR REPLACE of the old query keeps its state's layout.
	run(eng, "CREATE OR REPLACE TABLE old_sd WITH (KAFKA_TOPIC='old_sd') AS SELECT g, COUNT(DISTINCT v) AS nd, SUM(DISTINCT v) AS sd, COUNT(DISTINCT v) + 1 AS nd1 FROM s WINDOW SESSION (5 SECONDS) GROUP BY g;")
	if got := layouts(eng); got != "map[NEW_SD:true OLD_SD:false]" {
		t.Fatalf("after CREATE OR REPLACE, queries keeping distinct values apart: %s", got)
	}
	produce(t, ctx, brokers, "s", rec(8, 9000, `{"G":"a","V":40}`), rec(9, 9500, `{"G":"a","V":20}`))
	want[session("a", 1000, 12000)] = `{"ND":4,"SD":100,"ND1":5}`
	waitLast(t, ctx, brokers, "old_sd", want)
	want[session("a", 1000, 12000)] = `{"ND":4,"SD":100}`
	waitLast(t, ctx, brokers, "new_sd", want)
	eng.Close()
}
