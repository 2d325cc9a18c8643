package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
		// Seen once in CI: the replay missed new_j's command.
		dumpCommandTopic(t, ctx, brokers, "sqlstreams_command_topic")
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

// dumpCommandTopic logs every record of the command topic, read
// uncommitted with the markers, and its last stable offset and high
// watermark: what a replay that missed a command read from.
func dumpCommandTopic(t *testing.T, ctx context.Context, brokers []string, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()), kgo.KeepControlRecords())
	if err != nil {
		t.Log(err)
		return
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	lso, err1 := adm.ListCommittedOffsets(ctx, topic)
	hwm, err2 := adm.ListEndOffsets(ctx, topic)
	l, _ := lso.Lookup(topic, 0)
	h, _ := hwm.Lookup(topic, 0)
	t.Logf("%s: last stable offset %d, high watermark %d (%v %v)", topic, l.Offset, h.Offset, err1, err2)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for next := int64(0); next < h.Offset; {
		fs := cl.PollFetches(dctx)
		if dctx.Err() != nil {
			return
		}
		fs.EachRecord(func(r *kgo.Record) {
			v := string(r.Value)
			if len(v) > 80 {
				v = v[:80]
			}
			t.Logf("  %d: control %v txn %v producer %d/%d key %x value %s", r.Offset, r.Attrs.IsControl(), r.Attrs.IsTransactional(),
				r.ProducerID, r.ProducerEpoch, r.Key, v)
			next = r.Offset + 1
		})
	}
}
