package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
)

// TestFilterPushdownUpgrade: a foreign-key join under a WHERE over its
// left table, recorded with a plan from before rule
// FilterBelowForeignKeyJoin (the filter above the join, every left row
// subscribing), runs from that plan, while the same statement run now
// filters the left table before the join; both give the same rows
// across a restart, and CREATE OR REPLACE of the old query keeps its
// shape (it is not refused as another topology).
func TestFilterPushdownUpgrade(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	u := newUpgradeService(t, ctx)
	brokers, open, run := u.brokers, u.open, u.run
	ddls := []string{
		"CREATE TABLE items (id INT PRIMARY KEY, name STRING, cat INT) WITH (KAFKA_TOPIC='items', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE TABLE cats (id INT PRIMARY KEY, title STRING) WITH (KAFKA_TOPIC='cats', VALUE_FORMAT='JSON', PARTITIONS=1);",
	}
	const selectJoin = " AS SELECT i.id, name, title FROM items i JOIN cats c ON i.cat = c.id WHERE i.name <> 'skip';"
	eng := open()
	run(eng, "SET 'auto.offset.reset'='earliest';")
	for _, d := range ddls {
		run(eng, d)
	}
	eng.Close()

	// The old query's command, with the plan a build before the rule
	// recorded (bound with NoFilterPushdown, as every such build's).
	oldStmt := "CREATE TABLE old_j WITH (KAFKA_TOPIC='old_j')" + selectJoin
	recordOldPlan(t, ctx, brokers, ddls, oldStmt, func(s *sql.Select) { s.NoFilterPushdown = true })

	eng = open()
	run(eng, "CREATE TABLE new_j WITH (KAFKA_TOPIC='new_j')"+selectJoin)
	// Whether each query filters its left table before the join (its
	// left rows then have a store of the join's own).
	pushed := func(eng *engine.Engine) string {
		out := map[string]bool{}
		for _, q := range eng.Catalog().Queries() {
			p, ok := eng.ExplainQuery(q.ID)
			if !ok || p.Fingerprint == "" {
				t.Fatalf("query %s: not running", q.ID)
			}
			if q.Sink == "OLD_J" || q.Sink == "NEW_J" {
				out[q.Sink] = strings.Contains(p.Text, "KTABLE-FK-JOIN-LEFT-CATS")
			}
		}
		return fmt.Sprint(out)
	}
	if got := pushed(eng); got != "map[NEW_J:true OLD_J:false]" {
		t.Fatalf("queries filtering before the join: %s", got)
	}
	rec := func(id int, v string) *kgo.Record { return &kgo.Record{Key: intKey(id), Value: []byte(v)} }
	produce(t, ctx, brokers, "cats", rec(1, `{"TITLE":"one"}`), rec(2, `{"TITLE":"two"}`))
	produce(t, ctx, brokers, "items", rec(10, `{"NAME":"a","CAT":1}`), rec(11, `{"NAME":"skip","CAT":1}`), rec(12, `{"NAME":"b","CAT":2}`))
	want := map[string]string{string(intKey(10)): `{"NAME":"a","TITLE":"one"}`, string(intKey(12)): `{"NAME":"b","TITLE":"two"}`}
	waitLast(t, ctx, brokers, "old_j", want)
	waitLast(t, ctx, brokers, "new_j", want)

	eng.Close()
	eng = open()
	if got := pushed(eng); got != "map[NEW_J:true OLD_J:false]" {
		t.Fatalf("after a restart, queries filtering before the join: %s", got)
	}
	// 10 stops passing, 11 starts.
	produce(t, ctx, brokers, "items", rec(10, `{"NAME":"skip","CAT":1}`), rec(11, `{"NAME":"c","CAT":2}`))
	want = map[string]string{string(intKey(11)): `{"NAME":"c","TITLE":"two"}`, string(intKey(12)): `{"NAME":"b","TITLE":"two"}`}
	waitLast(t, ctx, brokers, "old_j", want)
	waitLast(t, ctx, brokers, "new_j", want)

	// CREATE OR REPLACE of the old query keeps its shape.
	run(eng, "CREATE OR REPLACE TABLE old_j WITH (KAFKA_TOPIC='old_j') AS SELECT i.id, name, title, LCASE(title) AS lt FROM items i JOIN cats c ON i.cat = c.id WHERE i.name <> 'skip';")
	if got := pushed(eng); got != "map[NEW_J:true OLD_J:false]" {
		t.Fatalf("after CREATE OR REPLACE, queries filtering before the join: %s", got)
	}
	eng.Close()
}
