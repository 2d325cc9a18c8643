package engine_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/engine/enginetest"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/sql"
)

// propEnv is an offline engine (enginetest) with a session, a stream S
// (ID INT KEY, V INT, TS BIGINT) and a table T (ID INT KEY, V INT) made
// by a CREATE TABLE … AS, for one property's case.
type propEnv struct {
	t      *testing.T
	ctx    context.Context
	eng    *engine.Engine
	sess   *engine.Session
	topics *enginetest.Topics
}

func newPropEnv(t *testing.T) *propEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	topics := enginetest.NewTopics()
	cfg := enginetest.Config(topics, enginetest.NewCommandTopic(), filepath.Join(t.TempDir(), "state"))
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := engine.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	x := &propEnv{t: t, ctx: ctx, eng: eng, sess: engine.NewSession(), topics: topics}
	x.must("CREATE STREAM s (id INT KEY, v INT, ts BIGINT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=2)")
	return x
}

func (x *propEnv) run(stmt string) error {
	_, err := x.eng.Execute(x.ctx, x.sess, stmt, discard{})
	return err
}

func (x *propEnv) must(stmt string) {
	x.t.Helper()
	if err := x.run(stmt); err != nil {
		x.t.Fatalf("%s: %v", stmt, err)
	}
}

// query runs a CREATE … AS and returns its query's settings and topology.
func (x *propEnv) query(stmt string) (exec.Config, *physical.Topology) {
	x.t.Helper()
	x.must(stmt)
	qs := x.eng.Queries()
	id := qs[len(qs)-1].ID
	for _, q := range qs {
		if q.ID > id {
			id = q.ID
		}
	}
	cfg, topo, ok := x.eng.QueryConfig(id)
	if !ok {
		x.t.Fatalf("query %s is not running", id)
	}
	return cfg, topo
}

func (x *propEnv) source(name string) *catalog.Source {
	x.t.Helper()
	src, ok := x.eng.Catalog().Source(name)
	if !ok {
		x.t.Fatalf("no source %s", name)
	}
	return src
}

const csas = "CREATE STREAM out AS SELECT id, v FROM s"

// propCases holds, for every property of the registry, a value with an
// effect and a check that the effect is there (after SET of that value),
// and a value SET refuses.
var propCases = map[string]struct {
	good, bad string
	check     func(x *propEnv)
}{
	"auto.offset.reset": {"latest", "none", func(x *propEnv) {
		if cfg, _ := x.query(csas); cfg.OffsetReset != "latest" {
			x.t.Errorf("OffsetReset %q", cfg.OffsetReset)
		}
	}},
	"processing.guarantee": {"at_least_once", "sometimes", func(x *propEnv) {
		if cfg, _ := x.query(csas); !cfg.AtLeastOnce {
			x.t.Error("the query runs exactly-once")
		}
	}},
	"default.dsl.store": {"in_memory", "lmdb", func(x *propEnv) {
		if cfg, _ := x.query(csas); !cfg.MemoryStores {
			x.t.Error("the query's stores are not in memory")
		}
	}},
	"commit.interval.ms": {"20", "0", func(x *propEnv) {
		if cfg, _ := x.query(csas); cfg.CommitInterval != 20*time.Millisecond {
			x.t.Errorf("CommitInterval %v", cfg.CommitInterval)
		}
	}},
	"num.stream.threads": {"3", "65", func(x *propEnv) {
		if cfg, _ := x.query(csas); cfg.Threads != 3 {
			x.t.Errorf("Threads %d", cfg.Threads)
		}
	}},
	"transaction.timeout.ms": {"20000", "999", func(x *propEnv) {
		if cfg, _ := x.query(csas); cfg.TransactionTimeout != 20*time.Second {
			x.t.Errorf("TransactionTimeout %v", cfg.TransactionTimeout)
		}
	}},
	"windowstore.changelog.additional.retention.ms": {"1000", "-1", func(x *propEnv) {
		x.must("CREATE TABLE w AS SELECT id, COUNT(*) AS n FROM s WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 0 SECONDS) GROUP BY id")
		found := false
		for _, name := range x.topics.Names() {
			if strings.HasSuffix(name, "-changelog") {
				tp, _ := x.topics.Get(name)
				found = true
				// The store keeps the window and its grace (ksqlDB's
				// retention: the window size, at least); the changelog
				// 1000 ms more.
				if got := tp.Configs["retention.ms"]; got != "61000" {
					x.t.Errorf("%s retention.ms %s, want 61000", name, got)
				}
			}
		}
		if !found {
			x.t.Error("no changelog topic")
		}
	}},
	engine.StandbyReplicasProp: {"2", "17", func(x *propEnv) {
		if cfg, _ := x.query(csas); cfg.StandbyReplicas != 2 {
			x.t.Errorf("StandbyReplicas %d", cfg.StandbyReplicas)
		}
	}},
	engine.AcceptableLagProp: {"500", "-1", func(x *propEnv) {
		if cfg, _ := x.query(csas); cfg.AcceptableRecoveryLag != 500 {
			x.t.Errorf("AcceptableRecoveryLag %d", cfg.AcceptableRecoveryLag)
		}
	}},
	engine.MaxWarmupReplicasProp: {"5", "0", func(x *propEnv) {
		if cfg, _ := x.query(csas); cfg.MaxWarmupReplicas != 5 {
			x.t.Errorf("MaxWarmupReplicas %d", cfg.MaxWarmupReplicas)
		}
	}},
	engine.ProbingIntervalProp: {"60000", "10", func(x *propEnv) {
		if cfg, _ := x.query(csas); cfg.ProbingRebalanceInterval != time.Minute {
			x.t.Errorf("ProbingRebalanceInterval %v", cfg.ProbingRebalanceInterval)
		}
	}},
	engine.IdleAdvanceProp: {"300", "soon", func(x *propEnv) {
		// The query's plan holds it: a restart runs the plan.
		_, topo := x.query("CREATE TABLE w AS SELECT id, COUNT(*) AS n FROM s WINDOW TUMBLING (SIZE 1 MINUTE) GROUP BY id")
		windows := 0
		for _, n := range topo.Nodes {
			if a, ok := n.Op.(*physical.Aggregate); ok && a.Window != nil {
				windows++
				if a.IdleAdvance != 300 {
					x.t.Errorf("%s: IdleAdvance %d ms, want 300", n.Name, a.IdleAdvance)
				}
			}
		}
		if windows == 0 {
			x.t.Error("no windowed aggregation")
		}
	}},
	"ksql.timestamp.throw.on.invalid": {"true", "yes", func(x *propEnv) {
		_, topo := x.query("CREATE STREAM out WITH (TIMESTAMP='TS') AS SELECT id, v, ts FROM s")
		for _, n := range topo.Nodes {
			if src, ok := n.Op.(*physical.Source); ok && !src.ThrowOnInvalidTimestamp {
				x.t.Errorf("source %s skips invalid timestamps", src.Topic)
			}
		}
	}},
	"ksql.functions.collect_list.limit": {"2", "0", func(x *propEnv) { checkCollectLimit(x, "COLLECT_LIST") }},
	"ksql.functions.collect_set.limit":  {"2", "0", func(x *propEnv) { checkCollectLimit(x, "COLLECT_SET") }},
	"ksql.output.topic.name.prefix": {"team1.", "", func(x *propEnv) {
		x.must(csas)
		if got := x.source("OUT").Topic; got != "team1.OUT" {
			x.t.Errorf("topic %q, want team1.OUT", got)
		}
	}},
	"ksql.persistence.wrap.single.values": {"false", "maybe", func(x *propEnv) {
		x.must("CREATE STREAM one (id INT KEY, v INT) WITH (KAFKA_TOPIC='one', VALUE_FORMAT='JSON', PARTITIONS=1)")
		if w := x.source("ONE").ValueOptions.WrapSingleValue; w == nil || *w {
			x.t.Errorf("WRAP_SINGLE_VALUE %v, want false", w)
		}
	}},
	"ksql.persistence.default.format.key": {"JSON", "XML", func(x *propEnv) {
		x.must("CREATE STREAM k (id INT KEY, v INT) WITH (KAFKA_TOPIC='k', VALUE_FORMAT='JSON', PARTITIONS=1)")
		if got := x.source("K").KeyFormat; got != "JSON" {
			x.t.Errorf("key format %s", got)
		}
	}},
	"ksql.persistence.default.format.value": {"DELIMITED", "XML", func(x *propEnv) {
		x.must("CREATE STREAM d (id INT KEY, v INT) WITH (KAFKA_TOPIC='d', PARTITIONS=1)")
		if got := x.source("D").ValueFormat; got != "DELIMITED" {
			x.t.Errorf("value format %s", got)
		}
	}},
	"ksql.query.pull.table.scan.enabled": {"false", "no", func(x *propEnv) {
		x.must("CREATE TABLE t AS SELECT id, COUNT(*) AS n FROM s GROUP BY id")
		// Without the SET the query scans (here: offline, so it fails
		// finding the partitions' owners); with it, it is refused.
		if err := x.run("SELECT * FROM t WHERE n > 3"); !refusedPull(err, "key column") {
			x.t.Errorf("a table scan with table scans off: %v", err)
		}
	}},
	"ksql.query.pull.range.scan.enabled": {"false", "no", func(x *propEnv) {
		x.must("CREATE STREAM sk (k STRING KEY, v INT) WITH (KAFKA_TOPIC='sk', VALUE_FORMAT='JSON', PARTITIONS=1)")
		x.must("CREATE TABLE t AS SELECT k, COUNT(*) AS n FROM sk GROUP BY k")
		x.must("SET 'ksql.query.pull.table.scan.enabled'='false'")
		const q = "SELECT * FROM t WHERE k > 'a'"
		if err := x.run(q); !refusedPull(err, "Query requires table scan to be enabled") {
			x.t.Errorf("a range scan with range scans off: %v", err)
		}
		x.must("UNSET 'ksql.query.pull.range.scan.enabled'")
		if err := x.run(q); refusedPull(err, "") {
			x.t.Errorf("a range scan with range scans on: %v", err)
		}
		x.must("SET 'ksql.query.pull.range.scan.enabled'='false'")
		x.must("UNSET 'ksql.query.pull.table.scan.enabled'")
	}},
	"ksql.query.pull.limit.clause.enabled": {"false", "no", func(x *propEnv) {
		x.must("CREATE TABLE t AS SELECT id, COUNT(*) AS n FROM s GROUP BY id")
		if err := x.run("SELECT * FROM t WHERE id = 3 LIMIT 1"); err == nil || !strings.Contains(strings.ToLower(err.Error()), "limit") {
			x.t.Errorf("LIMIT with limits off: %v", err)
		}
	}},
	"ksql.create.or.replace.enabled": {"false", "off", func(x *propEnv) {
		x.must(csas)
		err := x.run("CREATE OR REPLACE STREAM out AS SELECT id, v FROM s WHERE v > 0")
		if err == nil || !strings.Contains(err.Error(), "Cannot add stream 'OUT': A stream with the same name already exists") {
			x.t.Errorf("CREATE OR REPLACE with it off: %v", err)
		}
		x.must("UNSET 'ksql.create.or.replace.enabled'")
		x.must("CREATE OR REPLACE STREAM out AS SELECT id, v FROM s WHERE v > 0")
		x.must("SET 'ksql.create.or.replace.enabled'='false'")
	}},
	"ksql.query.pull.stream.enabled": {"false", "off", func(x *propEnv) {
		if err := x.run("SELECT * FROM s"); !refusedPull(err, "Pull queries on streams are disabled") {
			x.t.Errorf("a pull query over a stream with them off: %v", err)
		}
		x.must("UNSET 'ksql.query.pull.stream.enabled'")
		if err := x.run("SELECT * FROM s"); refusedPull(err, "") {
			x.t.Errorf("a pull query over a stream with them on: %v", err)
		}
		x.must("SET 'ksql.query.pull.stream.enabled'='false'")
	}},
	engine.StandbyReadsProp: {"true", "often", func(x *propEnv) {
		if x.sess.Props[engine.StandbyReadsProp] != "true" {
			x.t.Errorf("session props %v", x.sess.Props)
		}
		// The pull path reads it (standbyread_test.go: a pull query
		// answered by a standby only with it set).
	}},
	engine.MaxOffsetLagProp: {"10", "-1", func(x *propEnv) {
		if x.sess.Props[engine.MaxOffsetLagProp] != "10" {
			x.t.Errorf("session props %v", x.sess.Props)
		}
	}},
}

// refusedPull says whether err is the pull-query check's refusal (an
// error with want in it, code 0A000), not the offline engine's.
func refusedPull(err error, want string) bool {
	se, ok := err.(*sql.Error)
	return ok && se.Code == sql.CodeFeatureNotSupport && strings.Contains(se.Msg, want)
}

// checkCollectLimit checks that fn in a CREATE TABLE … AS after the SET
// keeps at most 2 elements.
func checkCollectLimit(x *propEnv, fn string) {
	_, topo := x.query("CREATE TABLE c AS SELECT id, " + fn + "(v) AS vs FROM s GROUP BY id")
	for _, n := range topo.Nodes {
		if agg, ok := n.Op.(*physical.Aggregate); ok {
			for _, a := range agg.Aggs {
				if a.Fn.Name == fn && a.Fn.Variant == "limit=2" {
					return
				}
			}
		}
	}
	x.t.Errorf("no %s with limit=2 in the query", fn)
}

// TestPropertyRegistry sets every property of the registry, by each of
// its names, and checks that SET takes a good value and refuses a bad one
// (naming the property, positioned), that its effect is there, that
// UNSET by another name removes it, and that unknown and refused names
// are refused naming them.
func TestPropertyRegistry(t *testing.T) {
	for _, d := range engine.Properties {
		t.Run(d.Name, func(t *testing.T) {
			if d.Fixed != "" {
				x := newPropEnv(t)
				for _, n := range d.Names() {
					if err := x.run("SET '" + n + "'='" + d.Fixed + "'"); err != nil {
						t.Errorf("SET %s to its fixed value: %v", n, err)
					}
				}
				other := "1"
				if d.Fixed == "1" || d.Fixed == "true" {
					other = "false"
				} else if d.Fixed == "false" {
					other = "true"
				}
				err := x.run("SET '" + d.Name + "'='" + other + "'")
				if err == nil || !strings.Contains(err.Error(), d.Name) || !strings.Contains(err.Error(), d.FixedWhy) {
					t.Errorf("SET %s=%s: %v, want a refusal naming it and why", d.Name, other, err)
				}
				return
			}
			c, ok := propCases[d.Name]
			if !ok {
				t.Fatalf("no case for %s: every property of the registry needs one", d.Name)
			}
			for _, n := range d.Names() {
				x := newPropEnv(t)
				if c.bad != "" {
					err := x.run("SET '" + n + "'='" + c.bad + "'")
					var se *sql.Error
					if err == nil || !strings.Contains(err.Error(), n) || !errorsAs(err, &se) || se.Line == 0 {
						t.Errorf("SET %s=%q: %v, want a positioned refusal naming it", n, c.bad, err)
					}
				}
				x.must("SET '" + n + "'='" + c.good + "'")
				if v := x.sess.Props[d.Name]; v == "" && c.good != "" {
					t.Errorf("SET %s: session props %v, want %s set", n, x.sess.Props, d.Name)
				}
				c.check(x)
				other := d.Names()[len(d.Names())-1]
				x.must("UNSET '" + other + "'")
				if len(x.sess.Props) != 0 {
					t.Errorf("UNSET %s left %v", other, x.sess.Props)
				}
			}
		})
	}
	x := newPropEnv(t)
	for stmt, want := range map[string]string{
		"SET 'no.such.property'='1'":                     "line 1:5: Unknown property: no.such.property",
		"SET 'NUM.STREAM.THREADS'='2'":                   "did you mean 'num.stream.threads'",
		"UNSET 'no.such.property'":                       "line 1:7: Unknown property: no.such.property",
		"SET 'ksql.new.query.planner.enabled'='true'":    "Property 'ksql.new.query.planner.enabled' is not supported",
		"SET 'ksql.streams.topology.optimization'='all'": "is not supported",
		"SET 'security.protocol'='SSL'":                  "is a Kafka client setting of the server",
		"SET 'ksql.streams.producer.acks'='all'":         "is a Kafka client setting of the server",
	} {
		if err := x.run(stmt); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", stmt, err, want)
		}
	}
	if len(x.sess.Props) != 0 {
		t.Errorf("refused SETs left %v", x.sess.Props)
	}
}

func errorsAs(err error, se **sql.Error) bool {
	e, ok := err.(*sql.Error)
	*se = e
	return ok
}

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/properties.md's table from the registry")

// TestPropertiesDocumented: docs/properties.md's table is the registry's
// (go test ./engine -run TestPropertiesDocumented -update-docs writes it).
func TestPropertiesDocumented(t *testing.T) {
	const path = "../docs/properties.md"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	const begin, end = "<!-- registry -->\n", "<!-- /registry -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q … %q section", path, begin, end)
	}
	var tb strings.Builder
	tb.WriteString("| property | also set by | applies to | value | default | effect |\n|---|---|---|---|---|---|\n")
	for _, d := range engine.Properties {
		names := d.Names()[1:]
		for k, n := range names {
			names[k] = "`" + n + "`"
		}
		value := d.Type
		switch {
		case d.Fixed != "":
			value = "only `" + d.Fixed + "`"
		case d.Type == "enum":
			value = "`" + strings.Join(d.Values, "`, `") + "`"
		case d.Type == "int" || d.Type == "ms":
			unit := ""
			if d.Type == "ms" {
				unit = " ms"
			}
			if d.Max >= 1<<62 {
				value = fmt.Sprintf("%d or more%s", d.Min, unit)
			} else {
				value = fmt.Sprintf("%d to %d%s", d.Min, d.Max, unit)
			}
		}
		effect := d.Effect
		if d.Fixed != "" {
			effect = d.FixedWhy
		}
		fmt.Fprintf(&tb, "| `%s` | %s | %s | %s | %s | %s |\n", d.Name, strings.Join(names, ", "), d.Scope, value, d.Default, effect)
	}
	want := doc[:i+len(begin)] + tb.String() + doc[j:]
	if *updateDocs {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want != doc {
		t.Errorf("%s's table is not the registry's: run go test ./engine -run TestPropertiesDocumented -update-docs", path)
	}
}

// TestHeadlessProperties: SET and UNSET in a headless server's queries
// file go through the registry: a query after SET of the ksql.streams.
// name runs with it, one after the UNSET without it, and a file that
// sets an unknown property or a bad value does not start, naming it.
func TestHeadlessProperties(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open := func(file ...string) (*engine.Engine, error) {
		cfg := enginetest.Config(enginetest.NewTopics(), enginetest.NewCommandTopic(), filepath.Join(t.TempDir(), "state"))
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		cfg.CommandLog = nil
		cfg.Headless = append([]string{"CREATE STREAM s (id INT KEY, v INT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);"}, file...)
		return engine.Open(ctx, cfg)
	}
	eng, err := open(
		"SET 'ksql.streams.num.stream.threads' = '3';",
		"SET 'processing.guarantee' = 'at_least_once';",
		"CREATE STREAM a AS SELECT * FROM s;",
		"UNSET 'num.stream.threads';",
		"UNSET 'ksql.streams.processing.guarantee';",
		"CREATE STREAM b AS SELECT * FROM s;",
	)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if n := len(eng.Queries()); n != 2 {
		t.Fatalf("%d queries, want A and B", n)
	}
	for _, q := range eng.Queries() {
		cfg, _, ok := eng.QueryConfig(q.ID)
		if !ok {
			t.Fatalf("query %s is not running", q.ID)
		}
		switch q.Sink {
		case "A":
			if cfg.Threads != 3 || !cfg.AtLeastOnce {
				t.Errorf("A: threads %d, at-least-once %v; want 3, true", cfg.Threads, cfg.AtLeastOnce)
			}
		case "B":
			if cfg.Threads != 1 || cfg.AtLeastOnce {
				t.Errorf("B: threads %d, at-least-once %v; want 1, false", cfg.Threads, cfg.AtLeastOnce)
			}
		default:
			t.Errorf("query %s of %s", q.ID, q.Sink)
		}
	}
	for stmt, want := range map[string]string{
		"SET 'no.such.property' = '1';":   "Unknown property: no.such.property",
		"SET 'commit.interval.ms' = 'x';": `commit.interval.ms must be a whole number of milliseconds from 1 to 3600000, not "x"`,
		"UNSET 'no.such.property';":       "Unknown property: no.such.property",
	} {
		if eng, err := open(stmt, "CREATE STREAM a AS SELECT * FROM s;"); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "queries file") {
			if eng != nil {
				eng.Close()
			}
			t.Errorf("queries file with %s: %v, want an error naming the file and %q", stmt, err, want)
		}
	}
}

// TestRecordedAliasProperties: a command recorded before the registry,
// with a property under one of its other names (ksql.streams.…) or a
// value the registry now normalizes, replays with that property's effect.
func TestRecordedAliasProperties(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topics, cmds := enginetest.NewTopics(), enginetest.NewCommandTopic()
	topics.Add("s", 1)
	for _, c := range []catalog.Command{
		{Statement: "CREATE STREAM s (id INT KEY, v INT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON')", Props: map[string]string{}},
		{Statement: "CREATE STREAM a AS SELECT * FROM s", Props: map[string]string{
			"ksql.streams.num.stream.threads":   "3",
			"ksql.streams.processing.guarantee": "EXACTLY_ONCE",
			"ksql.streams.auto.offset.reset":    "latest",
			"producer.transaction.timeout.ms":   "20000",
		}},
	} {
		if _, err := cmds.Log().Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	cfg := enginetest.Config(topics, cmds, filepath.Join(t.TempDir(), "state"))
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.AtLeastOnce = true
	eng, err := engine.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	qs := eng.Queries()
	if len(qs) != 1 {
		t.Fatalf("queries %v, want A's", qs)
	}
	qc, _, ok := eng.QueryConfig(qs[0].ID)
	if !ok || qc.Threads != 3 || qc.AtLeastOnce || qc.OffsetReset != "latest" || qc.TransactionTimeout != 20*time.Second {
		t.Errorf("replayed A runs with threads %d, at-least-once %v, reset %q, transaction timeout %v; want 3, false, latest, 20s",
			qc.Threads, qc.AtLeastOnce, qc.OffsetReset, qc.TransactionTimeout)
	}
}

// TestServerPropertyDefaults: Config.Properties (a --config file's
// ksql.streams.auto.offset.reset=earliest, …) is every session's start:
// SHOW PROPERTIES says it is the server's, a CREATE … AS records it with
// its command, SET overrides it and UNSET goes back to it, not to the
// registry's default.
func TestServerPropertyDefaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topics := enginetest.NewTopics()
	cfg := enginetest.Config(topics, enginetest.NewCommandTopic(), filepath.Join(t.TempDir(), "state"))
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg.Properties = map[string]string{"auto.offset.reset": "earliest", "ksql.query.pull.table.scan.enabled": "false"}
	eng, err := engine.Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	sess := engine.NewSession()
	run := func(stmt string) engine.Result {
		t.Helper()
		res, err := eng.Execute(ctx, sess, stmt, discard{})
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		return res
	}
	show := func() map[string]engine.Property {
		out := map[string]engine.Property{}
		for _, p := range run("SHOW PROPERTIES").Value.(*engine.PropertyList).Properties {
			out[p.Name] = p
		}
		return out
	}
	if p := show()["auto.offset.reset"]; p.Value != "earliest" || p.Source != "server (--config)" || p.Overridden {
		t.Errorf("auto.offset.reset before SET: %+v, want the server's earliest", p)
	}
	run("CREATE STREAM s (id INT KEY, v INT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1)")
	run("CREATE STREAM o AS SELECT * FROM s")
	if props := eng.Catalog().Queries()[0].Props; props["auto.offset.reset"] != "earliest" {
		t.Errorf("the query's recorded properties %v, want the server's auto.offset.reset", props)
	}
	run("SET 'auto.offset.reset' = 'latest'")
	if p := show()["auto.offset.reset"]; p.Value != "latest" || p.Source != "session (SET)" || !p.Overridden {
		t.Errorf("auto.offset.reset after SET: %+v", p)
	}
	run("UNSET 'ksql.streams.auto.offset.reset'")
	if p := show()["auto.offset.reset"]; p.Value != "earliest" || p.Source != "server (--config)" {
		t.Errorf("auto.offset.reset after UNSET: %+v, want the server's again", p)
	}
	// The pull-query default applies too.
	run("CREATE TABLE t (id INT PRIMARY KEY, v INT) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON', PARTITIONS=1)")
	if _, err := eng.Execute(ctx, sess, "SELECT * FROM t", discard{}); err == nil || !strings.Contains(err.Error(), "table scan") {
		t.Errorf("a scan with the server's ksql.query.pull.table.scan.enabled=false: %v", err)
	}
}
