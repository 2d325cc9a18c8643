package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/physical"
)

// oldCommands are commands as the build before plans (c881d36) recorded
// them: statements with the behaviour properties of their time. Each
// exercises old behaviours: positional aliases and SQL NULL comparisons
// (no properties at all, the first release), SUM NULL for no values,
// legacy STDDEV_SAMP and EMIT FINAL at each commit, legacy joins and
// join keys, invalid timestamps passed on, headers not carried.
var oldCommands = []struct {
	stmt  string
	props map[string]string
}{
	{"CREATE STREAM s (id INT KEY, n BIGINT, name STRING) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);", nil},
	{"CREATE TABLE t (id INT PRIMARY KEY, title STRING) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON', PARTITIONS=1);", nil},
	{"CREATE STREAM old_a WITH (KAFKA_TOPIC='old_a') AS SELECT id, UCASE(name), n = NULL AS isn, n IN (1, NULL) AS inn FROM s;", nil},
	{"CREATE TABLE old_sum WITH (KAFKA_TOPIC='old_sum') AS SELECT id, SUM(n) AS total, STDDEV_SAMP(n) AS sd FROM s GROUP BY id;",
		map[string]string{"sqlstreams.generated.aliases": "ksql", "sqlstreams.null.comparison": "ksql"}},
	{"CREATE TABLE old_final WITH (KAFKA_TOPIC='old_final') AS SELECT id, COUNT(*) AS c FROM s WINDOW TUMBLING (SIZE 10 MILLISECONDS) GROUP BY id EMIT FINAL;",
		map[string]string{"sqlstreams.generated.aliases": "ksql"}},
	{"CREATE STREAM old_j WITH (KAFKA_TOPIC='old_j') AS SELECT s.id, s.name, t.title FROM s LEFT JOIN t ON s.id = t.id;",
		map[string]string{"sqlstreams.generated.aliases": "ksql", "sqlstreams.joins": "2"}},
	{"INSERT INTO old_a SELECT id, LCASE(name) AS ksql_col_1, n = NULL AS isn, n IN (2) AS inn FROM s WHERE id > 100;", nil},
}

// oldBuild is what the build before plans (c881d36) ran of oldCommands:
// each query's application ID, topology fingerprint and sink columns,
// and the output of three records of s (ids 1: NAME a, b, c; N NULL, 2,
// 3) and one of t (id 1: TITLE one). Recorded by replaying oldCommands
// with that build.
var oldBuild = struct {
	fingerprints map[string]string
	output       map[string][]string
}{
	fingerprints: map[string]string{
		"CSAS_OLD_A_4":     "sqlstreams_query_CSAS_OLD_A_4 2c1a2c1de8f8bd58 (ID INTEGER, KSQL_COL_1 STRING, ISN BOOLEAN, INN BOOLEAN)",
		"CSAS_OLD_J_10":    "sqlstreams_query_CSAS_OLD_J_10 3bbfc74f11dc9acd (S_ID INTEGER, NAME STRING, TITLE STRING)",
		"CST_T_2":          "sqlstreams_query_CST_T_2 0957389a657b4819 ()",
		"CTAS_OLD_FINAL_8": "sqlstreams_query_CTAS_OLD_FINAL_8 ca615c95ec753665 (ID INTEGER, C BIGINT)",
		"CTAS_OLD_SUM_6":   "sqlstreams_query_CTAS_OLD_SUM_6 3bb1086add2956cb (ID INTEGER, TOTAL BIGINT, SD DOUBLE)",
		"INSERTQUERY_12":   "sqlstreams_query_INSERTQUERY_12 3173dbb7262390e8 (ID INTEGER, KSQL_COL_1 STRING, ISN BOOLEAN, INN BOOLEAN)",
	},
	output: map[string][]string{
		"old_a":   {`{"KSQL_COL_1":"A","ISN":null,"INN":null}`, `{"KSQL_COL_1":"B","ISN":null,"INN":null}`, `{"KSQL_COL_1":"C","ISN":null,"INN":null}`},
		"old_sum": {`{"TOTAL":null,"SD":null}`, `{"TOTAL":2,"SD":0.0}`, `{"TOTAL":5,"SD":0.7071067811865476}`},
		"old_j":   {`{"NAME":"a","TITLE":"one"}`, `{"NAME":"b","TITLE":"one"}`, `{"NAME":"c","TITLE":"one"}`},
	},
}

// commandsOf reads every command of the service's command topic.
func commandsOf(t *testing.T, ctx context.Context, brokers []string) []catalog.Entry {
	t.Helper()
	log, err := catalog.OpenCommandLog(ctx, kafka.Plain(brokers...), "sqlstreams", "reader")
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	end, err := log.EndOffset(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []catalog.Entry
	if err := log.ReadTo(ctx, end, func(e catalog.Entry) error { out = append(out, e); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// migrations counts the migration commands, by the offset they migrate.
func migrations(es []catalog.Entry) map[int64]int {
	out := map[int64]int{}
	for _, e := range es {
		if m := e.Command.Migrates; m != nil {
			if len(e.Command.Plan) == 0 {
				continue
			}
			out[*m]++
		}
	}
	return out
}

// fingerprints returns the running queries' topology fingerprints and
// the sinks' columns, by query.
func fingerprints(t *testing.T, eng *engine.Engine) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, q := range eng.Catalog().Queries() {
		p, ok := eng.ExplainQuery(q.ID)
		if !ok || p.Fingerprint == "" {
			t.Fatalf("query %s: not running", q.ID)
		}
		cols := make([]string, len(p.Columns))
		for i, c := range p.Columns {
			cols[i] = c.Name + " " + c.Type.String()
		}
		out[q.ID] = p.AppID + " " + p.Fingerprint + " (" + strings.Join(cols, ", ") + ")"
	}
	return out
}

// TestMigratedCommandsReplayFromPlans replays a command log recorded
// before plans: its commands are bound once with their recorded
// properties (their old behaviours), into the topologies the build
// before plans ran (oldBuild), a migration command records each one's
// plan, and every later start runs the same topologies from those plans
// without writing more, their output going on as that build's did.
// Two instances migrating at once write two migration commands of an
// offset, which is harmless. A command run now records its plan and no
// sqlstreams.* property.
func TestMigratedCommandsReplayFromPlans(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	brokers := kfakeBrokers(t)
	log, err := catalog.OpenCommandLog(ctx, kafka.Plain(brokers...), "sqlstreams", "old")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range oldCommands {
		props := map[string]string{"auto.offset.reset": "earliest"}
		for k, v := range c.props {
			props[k] = v
		}
		if _, err := log.Append(ctx, catalog.Command{Statement: c.stmt, Props: props}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	open := func(instance string) *engine.Engine {
		eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: instance, StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}

	// Two instances start at once: both migrate.
	var wg sync.WaitGroup
	engs := make([]*engine.Engine, 2)
	for i := range engs {
		wg.Add(1)
		go func() { defer wg.Done(); engs[i] = open(fmt.Sprintf("i%d", i)) }()
	}
	wg.Wait()
	first := fingerprints(t, engs[0])
	if fmt.Sprint(first) != fmt.Sprint(oldBuild.fingerprints) {
		t.Fatalf("queries after the migration:\n%v\nthe build before plans ran:\n%v", first, oldBuild.fingerprints)
	}
	if second := fingerprints(t, engs[1]); fmt.Sprint(second) != fmt.Sprint(first) {
		t.Fatalf("the two instances migrated differently:\n%v\n%v", first, second)
	}
	produce(t, ctx, brokers, "t", &kgo.Record{Key: intKey(1), Value: []byte(`{"TITLE":"one"}`), Timestamp: time.UnixMilli(1)})
	produce(t, ctx, brokers, "s",
		&kgo.Record{Key: intKey(1), Value: []byte(`{"N":null,"NAME":"a"}`), Timestamp: time.UnixMilli(5)},
		&kgo.Record{Key: intKey(1), Value: []byte(`{"N":2,"NAME":"b"}`), Timestamp: time.UnixMilli(25)})
	for topic, want := range oldBuild.output {
		if got := consume(t, ctx, brokers, topic, 2); fmt.Sprint(got) != fmt.Sprint(want[:2]) {
			t.Errorf("%s after the migration: %v, want %v", topic, got, want[:2])
		}
	}
	for _, eng := range engs {
		eng.Close()
	}
	es := commandsOf(t, ctx, brokers)
	migrated := migrations(es)
	for _, e := range es[:len(oldCommands)] {
		if migrated[e.Offset] < 1 {
			t.Errorf("command at %d (%s) has no migration command: %v", e.Offset, e.Command.Statement, migrated)
		}
	}

	// A restart replays from the plans: same topologies, no more
	// migration commands, and the queries go on from their state.
	eng := open("i0")
	defer eng.Close()
	if again := fingerprints(t, eng); fmt.Sprint(again) != fmt.Sprint(first) {
		t.Fatalf("replayed from the plans:\n%v\nwant:\n%v", again, first)
	}
	if n := len(commandsOf(t, ctx, brokers)); n != len(es) {
		t.Errorf("the restart wrote %d commands", n-len(es))
	}
	produce(t, ctx, brokers, "s", &kgo.Record{Key: intKey(1), Value: []byte(`{"N":3,"NAME":"c"}`), Timestamp: time.UnixMilli(45)})
	for topic, want := range oldBuild.output {
		if got := consume(t, ctx, brokers, topic, 3); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s after the restart: %v, want %v", topic, got, want)
		}
	}

	// A statement run now: its command has a plan and no behaviour
	// property.
	sess := engine.NewSession()
	if _, err := eng.Execute(ctx, sess, "CREATE STREAM new_a WITH (KAFKA_TOPIC='new_a') AS SELECT id, UCASE(name) FROM s;", discard{}); err != nil {
		t.Fatal(err)
	}
	es = commandsOf(t, ctx, brokers)
	last := es[len(es)-1].Command
	if len(last.Plan) == 0 || last.Migrates != nil {
		t.Fatalf("a new command: %+v", last)
	}
	for k := range last.Props {
		if strings.HasPrefix(k, "sqlstreams.") {
			t.Errorf("a new command records %s", k)
		}
	}
	var doc struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(last.Plan, &doc); err != nil || doc.Version != 1 {
		t.Errorf("plan version %d: %v", doc.Version, err)
	}
	names := sortedKeys(fingerprints(t, eng))
	if len(names) != 7 {
		t.Errorf("queries: %v", names)
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestPlanNotStatement checks that a replay carries out a command from
// its plan and never binds its statement: a command whose statement no
// longer binds (an unknown function) runs the query its plan records.
func TestPlanNotStatement(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	brokers := kfakeBrokers(t)
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sess := engine.NewSession()
	for _, stmt := range []string{
		"SET 'auto.offset.reset'='earliest';",
		"CREATE STREAM s (id INT KEY, name STRING) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE STREAM up WITH (KAFKA_TOPIC='up') AS SELECT id, UCASE(name) AS u FROM s;",
	} {
		if _, err := eng.Execute(ctx, sess, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	eng.Close()
	es := commandsOf(t, ctx, brokers)

	// Another service's log: the same commands, the query's statement
	// replaced by one that cannot bind.
	other := kfakeBrokers(t)
	log, err := catalog.OpenCommandLog(ctx, kafka.Plain(other...), "sqlstreams", "old")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		c := e.Command
		if strings.Contains(c.Statement, "UCASE") {
			c.Statement = "CREATE STREAM up WITH (KAFKA_TOPIC='up') AS SELECT id, NO_SUCH_FUNCTION(name) AS u FROM s;"
		}
		if _, err := log.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()

	// A third service's log: the query's command comes after a DROP
	// of its input (another instance's command overtook it). It fails
	// as binding it would have, and is skipped.
	third := kfakeBrokers(t)
	log, err = catalog.OpenCommandLog(ctx, kafka.Plain(third...), "sqlstreams", "old")
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range es {
		if strings.Contains(e.Command.Statement, "UCASE") {
			if _, err := log.Append(ctx, catalog.Command{Statement: "DROP STREAM s;"}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := log.Append(ctx, es[i].Command); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	dropped, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(third...), InstanceID: "i", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if qs := dropped.Catalog().Queries(); len(qs) != 0 {
		t.Errorf("a query of a dropped source runs: %v", qs[0].ID)
	}
	if _, ok := dropped.Catalog().Source("UP"); ok {
		t.Errorf("the sink of a query of a dropped source is registered")
	}
	dropped.Close()
	eng, err = engine.Open(ctx, engine.Config{Kafka: kafka.Plain(other...), InstanceID: "i", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	produce(t, ctx, other, "s", &kgo.Record{Key: intKey(1), Value: []byte(`{"NAME":"a"}`)})
	if got := consume(t, ctx, other, "up", 1); got[0] != `{"U":"A"}` {
		t.Errorf("up: %v", got)
	}
}

// TestReplacedQueryReplaysFromPlan checks that CREATE OR REPLACE records
// its plan and a restart runs the replaced query from it: same ID, the
// new topology, the new columns.
func TestReplacedQueryReplaysFromPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	brokers := kfakeBrokers(t)
	open := func() *engine.Engine {
		eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return eng
	}
	eng := open()
	sess := engine.NewSession()
	for _, stmt := range []string{
		"SET 'auto.offset.reset'='earliest';",
		"CREATE STREAM s (id INT KEY, name STRING) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE STREAM up WITH (KAFKA_TOPIC='up') AS SELECT id, UCASE(name) AS u FROM s;",
		"CREATE OR REPLACE STREAM up WITH (KAFKA_TOPIC='up') AS SELECT id, UCASE(name) AS u, LCASE(name) AS l FROM s;",
	} {
		if _, err := eng.Execute(ctx, sess, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	replaced := fingerprints(t, eng)
	eng.Close()
	eng = open()
	defer eng.Close()
	if again := fingerprints(t, eng); fmt.Sprint(again) != fmt.Sprint(replaced) || len(again) != 1 {
		t.Fatalf("after a restart:\n%v\nwant:\n%v", again, replaced)
	}
	produce(t, ctx, brokers, "s", &kgo.Record{Key: intKey(1), Value: []byte(`{"NAME":"Ab"}`)})
	if got := consume(t, ctx, brokers, "up", 1); got[0] != `{"U":"AB","L":"ab"}` {
		t.Errorf("up: %v", got)
	}
}

// TestIdleAdvanceFromPlan: sqlstreams.window.idle.advance.ms set before
// a windowed CREATE … AS is recorded in the query's plan, and a restart
// runs the plan's value even if the command's properties say otherwise;
// a plan recorded before plans held it (the field absent) gets the one
// its command's properties ask for.
func TestIdleAdvanceFromPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	brokers := kfakeBrokers(t)
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sess := engine.NewSession()
	for _, stmt := range []string{
		"SET '" + engine.IdleAdvanceProp + "'='300';",
		"CREATE STREAM s (id INT KEY, v INT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE TABLE w AS SELECT id, COUNT(*) AS n FROM s WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY id;",
	} {
		if _, err := eng.Execute(ctx, sess, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	eng.Close()
	es := commandsOf(t, ctx, brokers)

	for _, c := range []struct {
		name string
		edit func(*catalog.Command)
		want int64
	}{
		{"as recorded", func(*catalog.Command) {}, 300},
		{"the property changed", func(c *catalog.Command) { c.Props[engine.IdleAdvanceProp] = "0" }, 300},
		{"a plan before the field", func(c *catalog.Command) {
			c.Plan = json.RawMessage(strings.ReplaceAll(string(c.Plan), `"IdleAdvance":300,`, ""))
			if strings.Contains(string(c.Plan), "IdleAdvance") {
				t.Fatalf("the plan still holds the idle advance: %s", c.Plan)
			}
		}, 300},
		{"a plan before the field, without the property", func(c *catalog.Command) {
			c.Plan = json.RawMessage(strings.ReplaceAll(string(c.Plan), `"IdleAdvance":300,`, ""))
			delete(c.Props, engine.IdleAdvanceProp)
		}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			other := kfakeBrokers(t)
			log, err := catalog.OpenCommandLog(ctx, kafka.Plain(other...), "sqlstreams", "old")
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				cmd := e.Command
				if strings.Contains(cmd.Statement, "WINDOW") {
					cmd.Props = maps.Clone(cmd.Props)
					c.edit(&cmd)
				}
				if _, err := log.Append(ctx, cmd); err != nil {
					t.Fatal(err)
				}
			}
			log.Close()
			eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(other...), InstanceID: "i", StateDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			windows := 0
			for _, q := range eng.Queries() {
				_, topo, _ := eng.QueryConfig(q.ID)
				for _, n := range topo.Nodes {
					if a, ok := n.Op.(*physical.Aggregate); ok && a.Window != nil {
						windows++
						if a.IdleAdvance != c.want {
							t.Errorf("%s: idle advance %d ms, want %d", q.ID, a.IdleAdvance, c.want)
						}
					}
				}
			}
			if windows != 1 {
				t.Errorf("%d windowed aggregations, want 1", windows)
			}
		})
	}
}

// TestRepartitionColumnsByPlan: a GROUP BY's repartition writes only the
// columns its aggregation reads (physical.Repartition.Columns) in a
// query planned now, but every column in a command recorded before
// plans, whose repartition topic held such rows (migrated with
// physical.WideRepartitions); both count the same.
func TestRepartitionColumnsByPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	brokers := kfakeBrokers(t)
	log, err := catalog.OpenCommandLog(ctx, kafka.Plain(brokers...), "sqlstreams", "old")
	if err != nil {
		t.Fatal(err)
	}
	props := map[string]string{"auto.offset.reset": "earliest"}
	for _, stmt := range []string{
		"CREATE STREAM s (id INT KEY, g STRING, note STRING) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE TABLE old_g WITH (KAFKA_TOPIC='old_g') AS SELECT g, COUNT(*) AS c FROM s GROUP BY g;",
	} {
		if _, err := log.Append(ctx, catalog.Command{Statement: stmt, Props: props}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if _, err := eng.Execute(ctx, engine.NewSession(), "CREATE TABLE new_g WITH (KAFKA_TOPIC='new_g') AS SELECT g, COUNT(*) AS c FROM s GROUP BY g;", discard{}); err != nil {
		t.Fatal(err)
	}
	// The repartitions' columns, from the plans recorded.
	written := map[string]string{}
	for _, e := range commandsOf(t, ctx, brokers) {
		c := e.Command
		if len(c.Plan) == 0 {
			continue
		}
		var doc struct {
			Target string `json:"target"`
			Query  struct {
				Nodes []struct {
					Op struct {
						Kind string `json:"kind"`
						Op   struct {
							Columns []int
						} `json:"op"`
					} `json:"op"`
				} `json:"nodes"`
			} `json:"query"`
		}
		if err := json.Unmarshal(c.Plan, &doc); err != nil {
			t.Fatal(err)
		}
		for _, n := range doc.Query.Nodes {
			if n.Op.Kind == "Repartition" {
				written[doc.Target] = fmt.Sprint(n.Op.Op.Columns)
			}
		}
	}
	want := map[string]string{"OLD_G": "[]", "NEW_G": "[0 1]"} // ID, s's key, and G
	if fmt.Sprint(written) != fmt.Sprint(want) {
		t.Fatalf("repartition columns by query: %v, want %v", written, want)
	}
	produce(t, ctx, brokers, "s",
		&kgo.Record{Key: intKey(1), Value: []byte(`{"G":"a","NOTE":"x"}`), Timestamp: time.UnixMilli(1)},
		&kgo.Record{Key: intKey(2), Value: []byte(`{"G":"a","NOTE":"y"}`), Timestamp: time.UnixMilli(2)})
	for _, topic := range []string{"old_g", "new_g"} {
		if got := consume(t, ctx, brokers, topic, 2); fmt.Sprint(got) != `[{"C":1} {"C":2}]` {
			t.Errorf("%s: %v", topic, got)
		}
	}
}
