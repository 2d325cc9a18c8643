package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
)

// TestDistinctValuesUpgrade shows the upgrade rule for the store of
// distinct values (physical.Aggregate.DistinctStore): a query recorded
// with a plan from before it (its COUNT(DISTINCT) and SUM(DISTINCT) keep
// every value in the group's state) runs from that plan, while the same
// statement run now gets the store; both give the same answers over a
// table's updates and deletions, across a restart; and CREATE OR REPLACE
// of the old query keeps its layout (its stores hold it).
func TestDistinctValuesUpgrade(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	u := newUpgradeService(t, ctx)
	brokers, open, run := u.brokers, u.open, u.run
	const ddl = "CREATE TABLE t (id INT PRIMARY KEY, g STRING, v BIGINT) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON', PARTITIONS=1);"
	const selectDistinct = " AS SELECT g, COUNT(DISTINCT v) AS nd, SUM(DISTINCT v) AS sd FROM t GROUP BY g;"
	eng := open()
	run(eng, "SET 'auto.offset.reset'='earliest';")
	run(eng, ddl)
	eng.Close()

	// The old query's command, with the plan a build before the store of
	// distinct values recorded: bound as then (LegacyDistinctState binds
	// the layout of those builds, as the historical plans test shows).
	oldStmt := "CREATE TABLE old_d WITH (KAFKA_TOPIC='old_d')" + selectDistinct
	recordOldPlan(t, ctx, brokers, []string{ddl}, oldStmt, func(s *sql.Select) { s.LegacyDistinctState = true })

	eng = open()
	run(eng, "CREATE TABLE new_d WITH (KAFKA_TOPIC='new_d')"+selectDistinct)
	layouts := func(eng *engine.Engine) map[string]bool {
		out := map[string]bool{}
		for _, q := range eng.Catalog().Queries() {
			p, ok := eng.ExplainQuery(q.ID)
			if !ok || p.Fingerprint == "" {
				t.Fatalf("query %s: not running", q.ID)
			}
			if strings.HasSuffix(q.Sink, "_D") {
				out[q.Sink] = strings.Contains(p.Text, "AGGREGATE-DISTINCT")
			}
		}
		return out
	}
	if got := fmt.Sprint(layouts(eng)); got != "map[NEW_D:true OLD_D:false]" {
		t.Fatalf("queries keeping distinct values apart: %s", got)
	}

	// Rows 1..4 in groups a and b, then updates and deletions.
	rec := func(id int, v string) *kgo.Record {
		r := &kgo.Record{Key: intKey(id)}
		if v != "" {
			r.Value = []byte(v)
		}
		return r
	}
	produce(t, ctx, brokers, "t",
		rec(1, `{"G":"a","V":10}`), rec(2, `{"G":"a","V":10}`), rec(3, `{"G":"a","V":20}`), rec(4, `{"G":"b","V":5}`))
	want := map[string]string{"a": `{"ND":2,"SD":30}`, "b": `{"ND":1,"SD":5}`}
	waitLast(t, ctx, brokers, "old_d", want)
	waitLast(t, ctx, brokers, "new_d", want)

	eng.Close()
	eng = open()
	if got := fmt.Sprint(layouts(eng)); got != "map[NEW_D:true OLD_D:false]" {
		t.Fatalf("after a restart, queries keeping distinct values apart: %s", got)
	}
	// 10 stays in a (row 2 holds it) when row 1 leaves; 20 moves to b.
	produce(t, ctx, brokers, "t", rec(1, ""), rec(3, `{"G":"b","V":20}`), rec(5, `{"G":"b","V":5}`))
	want = map[string]string{"a": `{"ND":1,"SD":10}`, "b": `{"ND":2,"SD":25}`}
	waitLast(t, ctx, brokers, "old_d", want)
	waitLast(t, ctx, brokers, "new_d", want)

	// CREATE OR REPLACE of the old query keeps its state's layout.
	run(eng, "CREATE OR REPLACE TABLE old_d WITH (KAFKA_TOPIC='old_d') AS SELECT g, COUNT(DISTINCT v) AS nd, SUM(DISTINCT v) AS sd, COUNT(DISTINCT v) + 1 AS nd1 FROM t GROUP BY g;")
	if got := fmt.Sprint(layouts(eng)); got != "map[NEW_D:true OLD_D:false]" {
		t.Fatalf("after CREATE OR REPLACE, queries keeping distinct values apart: %s", got)
	}
	produce(t, ctx, brokers, "t", rec(2, ""), rec(6, `{"G":"b","V":7}`))
	// Group a's last row left: deleted (SQL's semantics).
	waitLast(t, ctx, brokers, "old_d", map[string]string{"b": `{"ND":3,"SD":32,"ND1":4}`})
	waitLast(t, ctx, brokers, "new_d", map[string]string{"b": `{"ND":3,"SD":32}`})
	eng.Close()
}

// waitLast waits until topic's last value per (string) key is want's.
func waitLast(t *testing.T, ctx context.Context, brokers []string, topic string, want map[string]string) {
	t.Helper()
	var got map[string]string
	for ctx.Err() == nil {
		got = map[string]string{}
		for _, r := range consumeAll(t, ctx, brokers, topic) {
			if r.Value == nil {
				delete(got, string(r.Key))
				continue
			}
			var v any
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatalf("%s: %s: %v", topic, r.Value, err)
			}
			norm, _ := json.Marshal(v)
			got[string(r.Key)] = string(norm)
		}
		if fmt.Sprint(got) == fmt.Sprint(normalize(want)) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: %v, want %v", topic, got, want)
}

// normalize re-encodes JSON values as json.Marshal orders their keys.
func normalize(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, s := range m {
		var v any
		_ = json.Unmarshal([]byte(s), &v)
		b, _ := json.Marshal(v)
		out[k] = string(b)
	}
	return out
}

// consumeAll reads topic from its start until no record comes for half
// a second, read_committed.
func consumeAll(t *testing.T, ctx context.Context, brokers []string, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if fs.Empty() {
			return out
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
}
