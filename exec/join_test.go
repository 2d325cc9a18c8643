package exec

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// joinTopology is CREATE STREAM OUT AS SELECT pv.userid, pv.page,
// u.level FROM views pv [LEFT] JOIN users u ON pv.userid = u.userid,
// planned and built as the engine does.
func joinTopology(t testing.TB, left bool) *physical.Topology {
	views := &catalog.Source{Name: "VIEWS", Kind: catalog.Stream, Topic: "views", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
		Partitions: 2, Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "PAGE", Type: types.StringType},
		}}}
	users := &catalog.Source{Name: "USERS", Kind: catalog.Table, Topic: "users", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
		Partitions: 2, Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "LEVEL", Type: types.BigintType},
		}}}
	typ := planner.InnerJoin
	if left {
		typ = planner.LeftJoin
	}
	key := &expr.Column{Index: 0, Name: "USERID", T: types.StringType}
	join, err := planner.NewJoin(typ, planner.NewScan(views), planner.NewScan(users), "PV", "U", key, 0)
	if err != nil {
		t.Fatal(err)
	}
	in := join.Schema()
	col := func(name string) expr.Expr {
		i := in.Index(name)
		return &expr.Column{Index: i, Name: name, T: in.Columns[i].Type}
	}
	proj, err := planner.NewProject(join, []expr.Expr{col("PV_USERID"), col("PV_PAGE"), col("U_LEVEL"), col("U_ROWTIME")},
		[]string{"PV_USERID", "PAGE", "LEVEL", "UTIME"})
	if err != nil {
		t.Fatal(err)
	}
	target := &catalog.Source{Name: "OUT", Kind: catalog.Stream, Topic: "out", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Schema: proj.Schema()}
	topo, err := physical.Build("app", &planner.Sink{Input: proj, Target: target})
	if err != nil {
		t.Fatal(err)
	}
	return topo
}

// joinTask is task 0 of a join topology, its records fed by topic.
type joinTask struct {
	*testTask
	sent []string // "key value @timestamp" of each output record
}

func newJoinTask(t testing.TB, left bool) *joinTask {
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	t.Cleanup(func() { res.Close() })
	jt := &joinTask{}
	jt.testTask = newTestTask(t, joinTopology(t, left), 0, Config{StateDir: t.TempDir(), RocksResources: res}, func(r *kgo.Record) {
		jt.sent = append(jt.sent, fmt.Sprintf("%s %s @%d", r.Key, r.Value, r.Timestamp.UnixMilli()))
	})
	return jt
}

// feed processes one record of topic, as the partition group would
// hand it over.
func (jt *joinTask) feed(t *testing.T, topic string, ts int64, key, value string) {
	t.Helper()
	r := &kgo.Record{Topic: topic, Timestamp: time.UnixMilli(ts)}
	if key != "" {
		r.Key = []byte(key)
	}
	if value != "" {
		r.Value = []byte(value)
	}
	for _, q := range jt.queues {
		if q.tp.topic == topic {
			q.recs = append(q.recs, r)
		}
	}
	jt.lastBad = nil
	if _, err := jt.process(jt.onBad); err != nil {
		t.Fatal(err)
	}
	if jt.lastBad != nil {
		t.Fatalf("%s %s: bad record: %v", topic, key, jt.lastBad)
	}
	jt.out.flush()
}

func (jt *joinTask) expect(t *testing.T, want ...string) {
	t.Helper()
	if fmt.Sprint(jt.sent) != fmt.Sprint(want) {
		t.Fatalf("output:\n got %q\nwant %q", jt.sent, want)
	}
	jt.sent = jt.sent[:0]
}

// TestStreamTableJoin checks what a stream–table join emits as table rows
// come, change and go: the table row of the stream row's key as of that
// row, nothing for table records, the stream row's timestamp; an INNER
// join drops a stream row without a match, a LEFT join emits it with
// NULLs.
func TestStreamTableJoin(t *testing.T) {
	for _, left := range []bool{false, true} {
		t.Run(fmt.Sprintf("left=%v", left), func(t *testing.T) {
			jt := newJoinTask(t, left)
			unmatched := func(s string) []string {
				if left {
					return []string{s}
				}
				return nil
			}
			jt.feed(t, "users", 10, "u1", `{"LEVEL":1}`)
			jt.expect(t) // table records emit nothing
			jt.feed(t, "views", 20, "u1", `{"PAGE":"a"}`)
			jt.expect(t, `u1 {"PAGE":"a","LEVEL":1,"UTIME":10} @20`)
			jt.feed(t, "views", 21, "u2", `{"PAGE":"b"}`)
			jt.expect(t, unmatched(`u2 {"PAGE":"b","LEVEL":null,"UTIME":null} @21`)...)
			jt.feed(t, "users", 30, "u1", `{"LEVEL":2}`)
			jt.feed(t, "users", 30, "u2", `{"LEVEL":3}`)
			jt.expect(t)
			jt.feed(t, "views", 40, "u1", `{"PAGE":"c"}`)
			jt.feed(t, "views", 41, "u2", `{"PAGE":"d"}`)
			jt.expect(t, `u1 {"PAGE":"c","LEVEL":2,"UTIME":30} @40`, `u2 {"PAGE":"d","LEVEL":3,"UTIME":30} @41`)
			jt.feed(t, "users", 50, "u1", "") // a tombstone
			jt.expect(t)
			jt.feed(t, "views", 60, "u1", `{"PAGE":"e"}`)
			jt.expect(t, unmatched(`u1 {"PAGE":"e","LEVEL":null,"UTIME":null} @60`)...)
			// A stream row without a key matches nothing.
			jt.feed(t, "views", 70, "", `{"PAGE":"f"}`)
			jt.expect(t, unmatched(` {"PAGE":"f","LEVEL":null,"UTIME":null} @70`)...)
		})
	}
}

// TestStreamTableJoinTimestampOrder checks that records of both inputs
// fetched together are joined in timestamp order: a stream row sees the
// table as of its own time, whichever topic's records came first.
func TestStreamTableJoinTimestampOrder(t *testing.T) {
	jt := newJoinTask(t, true)
	jt.feed(t, "users", 10, "u1", `{"LEVEL":1}`)
	queue := func(topic string, ts int64, key, value string) {
		for _, q := range jt.queues {
			if q.tp.topic == topic {
				q.recs = append(q.recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: []byte(value), Timestamp: time.UnixMilli(ts)})
			}
		}
	}
	// One poll: the table's update (ts 30) and deletion (ts 50) arrive
	// with stream rows before, between and after them.
	queue("users", 30, "u1", `{"LEVEL":2}`)
	queue("users", 50, "u1", "")
	queue("views", 20, "u1", `{"PAGE":"a"}`)
	queue("views", 40, "u1", `{"PAGE":"b"}`)
	queue("views", 60, "u1", `{"PAGE":"c"}`)
	for _, q := range jt.queues {
		if q.tp.topic == "users" {
			q.recs[len(q.recs)-1].Value = nil // the tombstone
		}
	}
	if _, err := jt.process(jt.onBad); err != nil || jt.lastBad != nil {
		t.Fatal(err, jt.lastBad)
	}
	jt.out.flush()
	jt.expect(t, `u1 {"PAGE":"a","LEVEL":1,"UTIME":10} @20`, `u1 {"PAGE":"b","LEVEL":2,"UTIME":30} @40`,
		`u1 {"PAGE":"c","LEVEL":null,"UTIME":null} @60`)
}

// streamTableJoinAllocs returns what joining a stream row to a table row
// allocates in steady state, per step of two rows: one whose key the table
// has, one whose key it lacks (a LEFT join).
func streamTableJoinAllocs(t *testing.T) float64 {
	jt := newJoinTask(t, true)
	produced := 0
	jt.out.send = func(*kgo.Record) { produced++ }
	jt.feed(t, "users", 1, "u1", `{"LEVEL":7}`)
	var views *partitionQueue
	for _, q := range jt.queues {
		if q.tp.topic == "views" {
			views = q
		}
	}
	hit := &kgo.Record{Topic: "views", Key: []byte("u1"), Value: []byte(`{"PAGE":"home"}`), Timestamp: time.UnixMilli(5)}
	miss := &kgo.Record{Topic: "views", Key: []byte("u9"), Value: []byte(`{"PAGE":"home"}`), Timestamp: time.UnixMilli(5)}
	step := func() {
		views.recs = append(views.recs, hit, miss)
		if _, err := jt.process(jt.onBad); err != nil || jt.lastBad != nil {
			t.Fatal(err, jt.lastBad)
		}
		jt.out.flush()
		if produced >= 512 {
			produced = 0
			jt.out.reset()
		}
	}
	for range 1024 {
		step()
	}
	return testing.AllocsPerRun(1000, step)
}

// BenchmarkStreamTableJoin joins stream rows to a 1,000-row table, every
// tenth row missing its table row (a LEFT join), through the sink.
func BenchmarkStreamTableJoin(b *testing.B) {
	jt := newJoinTask(b, true)
	produced := 0
	jt.out.send = func(*kgo.Record) { produced++ }
	var users, views *partitionQueue
	for _, q := range jt.queues {
		switch q.tp.topic {
		case "users":
			users = q
		case "views":
			views = q
		}
	}
	const keys = 1000
	recs := make([]*kgo.Record, keys)
	for i := range recs {
		k := []byte(fmt.Sprintf("u%d", i))
		recs[i] = &kgo.Record{Topic: "views", Key: k, Value: []byte(`{"PAGE":"/home/index.html"}`), Timestamp: time.UnixMilli(2)}
		if i%10 != 0 {
			users.recs = append(users.recs, &kgo.Record{Topic: "users", Key: k, Value: fmt.Appendf(nil, `{"LEVEL":%d}`, i), Timestamp: time.UnixMilli(1)})
		}
	}
	if _, err := jt.process(jt.onBad); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		views.recs = append(views.recs, recs[i%keys])
		if _, err := jt.process(jt.onBad); err != nil || jt.lastBad != nil {
			b.Fatal(err, jt.lastBad)
		}
		jt.out.flush()
		if produced >= 512 {
			produced = 0
			jt.out.reset()
		}
	}
}

// TestMaterializedStoreCache checks which stores keep a cache of
// committed values: the one a stream–table join looks rows up
// in does (a lookup must not cost a RocksDB read per row: Nexmark q13),
// a table's own materialization, which only pull queries read from the
// committed store, does not.
func TestMaterializedStoreCache(t *testing.T) {
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	t.Cleanup(func() { res.Close() })
	cfg := Config{StateDir: t.TempDir(), RocksResources: res}
	joined := newTestTask(t, joinTopology(t, false), 0, cfg, func(*kgo.Record) {})
	if len(joined.stores) != 1 {
		t.Fatalf("the join's task has %d stores, want 1", len(joined.stores))
	}
	if joined.stores[0].uncached {
		t.Errorf("the join's table store %s caches nothing", joined.stores[0].name)
	}
	users := &catalog.Source{Name: "USERS", Kind: catalog.Table, Topic: "users", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON,
		Partitions: 2, Schema: types.Schema{Columns: []types.Column{
			{Name: "USERID", Type: types.StringType, Key: true},
			{Name: "LEVEL", Type: types.BigintType},
		}}}
	table := newTestTask(t, physical.BuildTable("app", planner.NewScan(users)), 0, Config{StateDir: t.TempDir(), RocksResources: res}, func(*kgo.Record) {})
	if len(table.stores) != 1 || !table.stores[0].uncached {
		t.Errorf("a table's materialization keeps a cache of committed values (stores %v)", table.stores)
	}
	// An aggregation's groups are cached; its distinct values, read once
	// a transaction and mostly new, are not.
	agg := newTestTask(t, distinctTopology(t, false, "AUCTION", true, false), 0, Config{StateDir: t.TempDir(), RocksResources: res}, func(*kgo.Record) {})
	cached := map[string]bool{}
	for _, st := range agg.stores {
		cached[st.name] = !st.uncached
	}
	if len(cached) != 2 || cached["AGGREGATE-DISTINCT"] || !cached["AGGREGATE"] {
		t.Errorf("stores cached: %v, want AGGREGATE only", cached)
	}
}
