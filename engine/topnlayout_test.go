package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/physical"
)

// TestTopNLayoutByPlan: a Top-N planned now keeps its rows binary
// (physical.TopN.Binary; a deduplication before a sink keeps no column),
// one of a command recorded before plans in JSON, as its store and
// changelog hold them. Both restore from their changelogs into a new
// state directory and go on from the state they had; CREATE OR REPLACE
// of the old query keeps its layout.
func TestTopNLayoutByPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	brokers := kfakeBrokers(t)
	log, err := catalog.OpenCommandLog(ctx, kafka.Plain(brokers...), "sqlstreams", "old")
	if err != nil {
		t.Fatal(err)
	}
	top := func(name string) string {
		return "TABLE " + name + " WITH (KAFKA_TOPIC='" + name + "', KEY_FORMAT='JSON') AS SELECT g, rn, v, note FROM " +
			"(SELECT *, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC) AS rn FROM s) WHERE rn <= 2;"
	}
	last := func(name string) string {
		return "CREATE TABLE " + name + " WITH (KAFKA_TOPIC='" + name + "') AS SELECT g, v, note FROM " +
			"(SELECT *, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC) AS rn FROM s) WHERE rn = 1;"
	}
	props := map[string]string{"auto.offset.reset": "earliest"}
	for _, stmt := range []string{
		"CREATE STREAM s (id INT KEY, g STRING, v BIGINT, note STRING) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE " + top("old_top"), last("old_last"),
	} {
		if _, err := log.Append(ctx, catalog.Command{Statement: stmt, Props: props}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	open := func() *engine.Engine {
		eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
	eng := open()
	for _, stmt := range []string{"CREATE " + top("new_top"), last("new_last")} {
		if _, err := eng.Execute(ctx, engine.NewSession(), stmt, discard{}); err != nil {
			t.Fatal(err)
		}
	}
	row := func(id int, v int, note string) *kgo.Record {
		return &kgo.Record{Key: intKey(id), Value: fmt.Appendf(nil, `{"G":"a","V":%d,"NOTE":%q}`, v, note), Timestamp: time.UnixMilli(int64(id))}
	}
	produce(t, ctx, brokers, "s", row(1, 5, "x"), row(2, 9, "y"), row(3, 1, "z"))
	wantTop := []string{`{"G":"a","RN":1} {"V":5,"NOTE":"x"}`, `{"G":"a","RN":1} {"V":9,"NOTE":"y"}`, `{"G":"a","RN":2} {"V":5,"NOTE":"x"}`}
	wantLast := []string{`a {"V":5,"NOTE":"x"}`, `a {"V":9,"NOTE":"y"}`}
	check := func(when string) {
		t.Helper()
		for _, c := range []struct {
			topics []string
			want   []string
		}{{[]string{"old_top", "new_top"}, wantTop}, {[]string{"old_last", "new_last"}, wantLast}} {
			for _, topic := range c.topics {
				var got []string
				for _, r := range consumeRecords(t, ctx, brokers, topic, len(c.want)) {
					got = append(got, string(r.Key)+" "+string(r.Value))
				}
				if fmt.Sprint(got) != fmt.Sprint(c.want) {
					t.Errorf("%s: %s:\n got %q\nwant %q", when, topic, got, c.want)
				}
			}
		}
	}
	check("before the restart")
	eng.Close()

	// A new state directory: every store restores from its changelog.
	eng = open()
	defer eng.Close()
	if _, err := eng.Execute(ctx, engine.NewSession(), "CREATE OR REPLACE "+top("old_top"), discard{}); err != nil {
		t.Fatalf("replacing the old Top-N: %v", err)
	}
	// 7 enters the restored top two at 2 (not at 1 of an empty one), 3
	// does not; 10 comes first. The deduplications keep 9 until 10.
	produce(t, ctx, brokers, "s", row(4, 7, "w"), row(5, 3, "q"), row(6, 10, "s"))
	wantTop = append(wantTop, `{"G":"a","RN":2} {"V":7,"NOTE":"w"}`, `{"G":"a","RN":1} {"V":10,"NOTE":"s"}`, `{"G":"a","RN":2} {"V":9,"NOTE":"y"}`)
	wantLast = append(wantLast, `a {"V":10,"NOTE":"s"}`)
	check("after the restore")

	// Pull queries: NEW_TOP's from its Top-N's store, whose rows carry
	// their times (no materialization of its topic), restored from its
	// changelog; OLD_TOP's (replaced, in its old layout) and both
	// deduplications' (which keep no row) from a materialization of
	// their topics. A key's lookup scans the Top-N's partitions.
	for _, name := range []string{"old_top", "new_top"} {
		waitRows(t, ctx, eng, "SELECT g, rn, v, note FROM "+name+";", []string{"a|1|10|s", "a|2|9|y"})
		waitRows(t, ctx, eng, "SELECT rn, note FROM "+name+" WHERE g = 'a' AND rn = 2;", []string{"2|y"})
		waitRows(t, ctx, eng, "SELECT rn FROM "+name+" WHERE g = 'b';", nil)
	}
	// A Top-N's stored row is at the time of the record that brought it
	// (9 came with record 2), the materialized topic's at the time of the
	// record that moved it to its rank (6).
	waitRows(t, ctx, eng, "SELECT rn, ROWTIME FROM new_top;", []string{"1|6", "2|2"})
	waitRows(t, ctx, eng, "SELECT rn, ROWTIME FROM old_top;", []string{"1|6", "2|6"})
	for name, want := range map[string]bool{"OLD_TOP": true, "NEW_TOP": false, "OLD_LAST": true, "NEW_LAST": true} {
		src, ok := eng.Catalog().Source(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		if got := src.MaterializedBy == src.WriterQuery+"_MATERIALIZE"; got != want || src.MaterializedBy == "" {
			t.Errorf("%s is materialized by %q (its writer %s), want a materialization of its topic: %v", name, src.MaterializedBy, src.WriterQuery, want)
		}
	}

	// The running topologies, decoded from the plans: the deduplication
	// planned now keeps no column (an empty Kept, not all of them).
	running := map[string]string{}
	for _, q := range eng.Queries() {
		_, topo, _ := eng.QueryConfig(q.ID)
		for _, n := range topo.Nodes {
			if tn, ok := n.Op.(*physical.TopN); ok {
				running[q.Sink] = fmt.Sprintf("binary=%v kept=%v nil=%v timed=%v", tn.Binary, tn.Kept, tn.Kept == nil, tn.Timed())
			}
		}
	}
	wantRunning := map[string]string{
		"OLD_TOP": "binary=false kept=[] nil=true timed=false", "OLD_LAST": "binary=false kept=[] nil=true timed=false",
		"NEW_TOP": "binary=true kept=[1 2 3] nil=false timed=true", "NEW_LAST": "binary=true kept=[] nil=false timed=false",
	}
	if fmt.Sprint(running) != fmt.Sprint(wantRunning) {
		t.Errorf("running Top-Ns: %v, want %v", running, wantRunning)
	}

	// The layouts, from the plans recorded (the last plan of each
	// target: the replacement's for OLD_TOP).
	layouts := map[string]string{}
	for _, e := range commandsOf(t, ctx, brokers) {
		if len(e.Command.Plan) == 0 {
			continue
		}
		var doc struct {
			Target string `json:"target"`
			Query  struct {
				Nodes []struct {
					Op struct {
						Kind string `json:"kind"`
						Op   struct {
							Binary bool
							Kept   []int
						} `json:"op"`
					} `json:"op"`
				} `json:"nodes"`
			} `json:"query"`
		}
		if err := json.Unmarshal(e.Command.Plan, &doc); err != nil {
			t.Fatal(err)
		}
		for _, n := range doc.Query.Nodes {
			if n.Op.Kind == "TopN" {
				layouts[doc.Target] = fmt.Sprintf("binary=%v kept=%v", n.Op.Op.Binary, n.Op.Op.Kept)
			}
		}
	}
	want := map[string]string{
		"OLD_TOP": "binary=false kept=[]", "OLD_LAST": "binary=false kept=[]",
		"NEW_TOP":  "binary=true kept=[1 2 3]", // G, V, NOTE
		"NEW_LAST": "binary=true kept=[]",      // none
	}
	if fmt.Sprint(layouts) != fmt.Sprint(want) {
		t.Errorf("Top-N layouts by query: %v, want %v", layouts, want)
	}
}
