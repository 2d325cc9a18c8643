package plan_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/plan"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// roundTrip encodes topo, decodes it and checks that the topology that
// comes back prints (EXPLAIN), fingerprints and encodes the same.
func roundTrip(t *testing.T, what string, topo *physical.Topology) {
	t.Helper()
	b, err := plan.EncodeTopology(topo)
	if err != nil {
		t.Fatalf("%s: encoding: %v", what, err)
	}
	got, err := plan.DecodeTopology(b, nil)
	if err != nil {
		t.Fatalf("%s: decoding: %v\n%s", what, err, b)
	}
	if got.String() != topo.String() {
		t.Fatalf("%s: EXPLAIN differs after a round trip:\n%s\nwant:\n%s", what, got, topo)
	}
	if got.Fingerprint() != topo.Fingerprint() || got.ShapeFingerprint() != topo.ShapeFingerprint() {
		t.Fatalf("%s: fingerprints differ after a round trip", what)
	}
	if got.AppID != topo.AppID || got.Limit != topo.Limit || got.Dialect != topo.Dialect {
		t.Fatalf("%s: app id %s limit %d, want %s %d", what, got.AppID, got.Limit, topo.AppID, topo.Limit)
	}
	if len(got.InternalTopics()) != len(topo.InternalTopics()) {
		t.Fatalf("%s: internal topics %v, want %v", what, got.InternalTopics(), topo.InternalTopics())
	}
	for i, it := range topo.InternalTopics() {
		if got.InternalTopics()[i] != it {
			t.Fatalf("%s: internal topic %v, want %v", what, got.InternalTopics()[i], it)
		}
	}
	again, err := plan.EncodeTopology(got)
	if err != nil {
		t.Fatalf("%s: encoding again: %v", what, err)
	}
	if !bytes.Equal(again, b) {
		t.Fatalf("%s: encoding differs after a round trip:\n%s\nwant:\n%s", what, again, b)
	}
	if !json.Valid(b) {
		t.Fatalf("%s: not JSON", what)
	}
}

// TestTopologyCorpus round-trips every topology pinned by
// physical/testdata/topologies and every persistent or push query of
// planner/testdata/plans.
func TestTopologyCorpus(t *testing.T) {
	cat := physicalCatalog()
	n := 0
	datadriven.RunTest(t, "../physical/testdata/topologies", func(t *testing.T, d *datadriven.TestData) string {
		st, err := sql.Parse(d.Input)
		if err != nil {
			return d.Expected
		}
		var topo *physical.Topology
		switch d.Cmd {
		case "persistent":
			ca := st.(*sql.CreateAs)
			ca.Select.LegacyJoins = d.HasArg("legacy-joins")
			sink, err := sql.BindCreateAs(ca, cat)
			if err != nil {
				return d.Expected
			}
			if topo, err = physical.Build(physical.AppID("sqlstreams", "Q1"), sink); err != nil {
				return d.Expected
			}
		case "push":
			q, err := sql.BindSelect(st.(*sql.Select), cat)
			if err != nil {
				return d.Expected
			}
			if topo, err = physical.BuildPush(q); err != nil {
				return d.Expected
			}
		}
		if topo != nil {
			roundTrip(t, d.Input, topo)
			n++
		}
		return d.Expected
	})
	for _, c := range partitionerCases(t) {
		roundTrip(t, c.text, c.topo)
		n++
	}
	pcat := plannerCatalog(t)
	for _, dir := range []string{"../planner/testdata/plans", "../planner/testdata/rules"} {
		datadriven.Walk(t, dir, func(t *testing.T, file string) {
			datadriven.RunTest(t, file, func(t *testing.T, d *datadriven.TestData) string {
				if topo := build(t, pcat, d.Input, nil); topo != nil {
					roundTrip(t, d.Input, topo)
					n++
				}
				return d.Expected
			})
		})
	}
	if n < 60 {
		t.Fatalf("only %d topologies round-tripped", n)
	}
}

// TestExpressionKinds round-trips queries that hold every kind of
// expression and every variant of aggregate a binder makes, with the
// legacy binding of recorded statements too.
func TestExpressionKinds(t *testing.T) {
	cat := plannerCatalog(t)
	legacy := func(s *sql.Select) {
		s.SQLNulls, s.LegacyFunctions, s.LegacySum, s.LegacyDistinct, s.PositionalAliases = true, true, true, true, true
	}
	limits := func(s *sql.Select) {
		s.CollectLimits, s.LegacySum = map[string]int{"COLLECT_LIST": 5, "COLLECT_SET": 7}, true
	}
	all := map[string]bool{}
	for _, c := range exprCases {
		for _, tweak := range []func(*sql.Select){nil, legacy, limits} {
			topo := build(t, cat, c, tweak)
			if topo == nil {
				t.Fatalf("%s: not built", c)
			}
			roundTrip(t, c, topo)
			b, _ := plan.EncodeTopology(topo)
			for _, want := range []string{`"variant":"legacy"`, `"variant":"limit=5"`, `"variant":"ksql-zero"`, `"variant":"ksql"`, `"retracting":true`, `"kind":"Lambda"`, `"kind":"LambdaVar"`, `"kind":"Case"`} {
				if strings.Contains(string(b), want) {
					all[want] = true
				}
			}
		}
	}
	if len(all) != 8 {
		t.Fatalf("the cases encode only %v", all)
	}
}

var exprCases = []string{
	`CREATE STREAM e1 AS SELECT id, CASE WHEN attrs['a'] > 1 THEN 'x' WHEN addr->city LIKE 'B%' ESCAPE '!' THEN 'y' ELSE NULL END AS c,
	   CASE id WHEN 1 THEN 1.5 ELSE 2.5 END AS d, tags[1] AS t1, ARRAY[1, 2, id] AS arr, MAP('k' := id) AS m,
	   STRUCT(a := id, b := 'x') AS s, CAST(id AS STRING) AS cs, -id AS neg, NOT (id = 1) AS n,
	   id IN (1, 2, 3) AS i, id NOT BETWEEN 1 AND 2 AS b, id IS DISTINCT FROM 3 AS dis, (id > 1) IS TRUE AS it,
	   addr IS NULL AS isn, TRANSFORM(tags, x => UCASE(x)) AS up, REDUCE(tags, 0, (s, x) => s + LEN(x)) AS total,
	   CONCAT('a', 'b') || 'c' AS cc, 1e300 * 10 AS big, CAST(1.25 AS DECIMAL(4, 2)) AS dec, TO_BYTES('AQI=', 'base64') AS bs,
	   '' AS empty, LOG(2.0) AS l, CEIL(CAST(1.5 AS DECIMAL(3,1))) AS ce
	 FROM events WHERE id % 2 = 0 EMIT CHANGES`,
	`CREATE STREAM e2 AS SELECT id, EXPLODE(tags) AS tag FROM events EMIT CHANGES`,
	`CREATE TABLE e3 AS SELECT userid, COUNT(*) AS n, SUM(level) AS s, COLLECT_SET(region) AS rs,
	   COLLECT_LIST(region) AS rl, COUNT_DISTINCT(region) AS cd, AVG(level) AS a
	 FROM users GROUP BY userid EMIT CHANGES`,
	`CREATE TABLE e4 AS SELECT userid, COUNT(*) AS n, SUM(viewtime) AS s, CORRELATION(viewtime, viewtime) AS c, STDDEV_SAMP(viewtime) AS sd, COLLECT_SET(pageid) AS ps
	 FROM pageviews WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 10 SECONDS) GROUP BY userid HAVING COUNT(*) > 1 EMIT FINAL`,
	`CREATE TABLE e5 AS SELECT userid, COUNT(*) AS n FROM pageviews WINDOW SESSION (5 MINUTES) GROUP BY userid EMIT CHANGES`,
}

// build binds a CREATE … AS or a push SELECT and builds its topology;
// nil for other statements and for those that do not bind.
func build(t *testing.T, cat *catalog.Catalog, text string, tweak func(*sql.Select)) *physical.Topology {
	st, err := sql.Parse(text)
	if err != nil {
		return nil
	}
	switch st := st.(type) {
	case *sql.CreateAs:
		if tweak != nil {
			tweak(st.Select)
		}
		sink, err := sql.BindCreateAs(st, cat)
		if err != nil {
			t.Logf("%s: %v", text, err)
			return nil
		}
		topo, err := physical.Build(physical.AppID("sqlstreams", "Q1"), sink)
		if err != nil {
			return nil
		}
		return topo
	case *sql.Select:
		q, err := sql.BindSelect(st, cat)
		if err != nil {
			return nil
		}
		topo, err := physical.BuildPush(q)
		if err != nil {
			return nil
		}
		return topo
	}
	return nil
}

// physicalCatalog is the catalog physical's topology tests plan against.
func physicalCatalog() *catalog.Catalog {
	cat := catalog.New()
	add := func(name string, kind catalog.Kind, topic string, parts int32, cols ...types.Column) {
		cat.AddSource(&catalog.Source{Name: name, Kind: kind, Topic: topic, KeyFormat: "KAFKA", ValueFormat: "JSON", Partitions: parts,
			Schema: types.Schema{Columns: cols}}, false)
	}
	key := func(n string) types.Column { return types.Column{Name: n, Type: types.StringType, Key: true} }
	col := func(n string, t types.Type) types.Column { return types.Column{Name: n, Type: t} }
	add("PAGEVIEWS", catalog.Stream, "pageviews", 2, key("USERID"), col("PAGEID", types.StringType), col("VIEWTIME", types.BigintType))
	add("USERS", catalog.Table, "users", 2, key("USERID"), col("REGION", types.StringType), col("LEVEL", types.IntType))
	add("LEVELS", catalog.Table, "levels", 2, key("USERID"), col("TITLE", types.StringType))
	add("BADGES", catalog.Table, "badges", 2, key("USERID"), col("BADGE", types.StringType))
	add("REGIONS", catalog.Table, "regions", 3, key("REGIONID"), col("NAME", types.StringType))
	add("CLICKS", catalog.Stream, "clicks", 2, key("USERID"), col("URL", types.StringType))
	add("PURCHASES", catalog.Stream, "purchases", 2, key("USERID"), col("AMOUNT", types.IntType))
	return cat
}

// plannerDDL declares the sources planner's plan tests plan against.
var plannerDDL = []string{
	`CREATE STREAM pageviews (userid VARCHAR KEY, pageid VARCHAR, viewtime BIGINT)
	   WITH (KAFKA_TOPIC='pageviews', VALUE_FORMAT='JSON', PARTITIONS=2)`,
	`CREATE TABLE users (userid VARCHAR PRIMARY KEY, region VARCHAR, level INT)
	   WITH (KAFKA_TOPIC='users', VALUE_FORMAT='JSON', PARTITIONS=2)`,
	`CREATE STREAM events (id BIGINT KEY, tags ARRAY<VARCHAR>, attrs MAP<VARCHAR, INT>, addr STRUCT<city VARCHAR, zip INT>)
	   WITH (KAFKA_TOPIC='events', VALUE_FORMAT='JSON', PARTITIONS=2)`,
	`CREATE STREAM clicks (url VARCHAR, n INT)
	   WITH (KAFKA_TOPIC='clicks', VALUE_FORMAT='JSON', PARTITIONS=2)`,
	`CREATE TABLE items (id BIGINT PRIMARY KEY, name VARCHAR)
	   WITH (KAFKA_TOPIC='items', VALUE_FORMAT='JSON', PARTITIONS=2)`,
	`CREATE TABLE stock (region VARCHAR PRIMARY KEY, shop VARCHAR PRIMARY KEY, qty INT)
	   WITH (KAFKA_TOPIC='stock', KEY_FORMAT='JSON', VALUE_FORMAT='JSON', PARTITIONS=2)`,
	`CREATE STREAM orders (region VARCHAR KEY, shop VARCHAR KEY, amount DOUBLE)
	   WITH (KAFKA_TOPIC='orders', KEY_FORMAT='JSON', VALUE_FORMAT='JSON', PARTITIONS=2)`,
	`CREATE TABLE permin (userid VARCHAR PRIMARY KEY, n BIGINT)
	   WITH (KAFKA_TOPIC='permin', VALUE_FORMAT='JSON', WINDOW_TYPE='TUMBLING', WINDOW_SIZE='1 MINUTE', PARTITIONS=2)`,
}

func plannerCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	cat := catalog.New()
	for _, ddl := range plannerDDL {
		st, err := sql.Parse(ddl)
		if err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
		src, err := sql.BindCreateSource(st.(*sql.CreateSource))
		if err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
		cat.AddSource(src, false)
	}
	return cat
}

// fakeSchemas is a schema registry that has nothing.
type fakeSchemas struct{ types.SchemaSource }

// TestSchemasGivenBack checks that the decoder gives the server's
// registry to the format options that had one, and to no others.
func TestSchemasGivenBack(t *testing.T) {
	reg := fakeSchemas{}
	topo := physical.NewGraph("app")
	src := &physical.Source{Topic: "in", KeyFormat: "AVRO", ValueFormat: "AVRO",
		KeyOptions: types.FormatOptions{Schemas: reg, Subject: "in-key"}, ValueOptions: types.FormatOptions{Subject: "in-value"}}
	topo.Add("SOURCE", src)
	b, err := plan.EncodeTopology(topo.Topology())
	if err != nil {
		t.Fatal(err)
	}
	got, err := plan.DecodeTopology(b, reg)
	if err != nil {
		t.Fatal(err)
	}
	s := got.Nodes[0].Op.(*physical.Source)
	if s.KeyOptions.Schemas != types.SchemaSource(reg) || s.ValueOptions.Schemas != nil || s.KeyOptions.Subject != "in-key" {
		t.Fatalf("decoded options: %+v %+v", s.KeyOptions, s.ValueOptions)
	}
}

// TestNamedIntegers checks that every named integer type a plan holds is
// encoded by name (a renumbered constant would change old plans' meaning
// silently), and that a plan holds no maps, functions or interfaces the
// codec does not know.
func TestNamedIntegers(t *testing.T) {
	byName := map[string]bool{"types.Kind": true, "expr.Op": true, "types.Partitioner": true, "catalog.Kind": true}
	known := map[string]bool{"expr.Expr": true, "types.SchemaSource": true, "physical.Op": true}
	seen := map[reflect.Type]bool{}
	var walk func(rt reflect.Type, path string)
	walk = func(rt reflect.Type, path string) {
		if seen[rt] {
			return
		}
		seen[rt] = true
		switch rt {
		case reflect.TypeFor[*expr.Function](), reflect.TypeFor[*expr.AggregateFunction](), reflect.TypeFor[*expr.TableFunction]():
			return // by name
		}
		switch rt.Kind() {
		case reflect.Pointer, reflect.Slice:
			walk(rt.Elem(), path)
		case reflect.Struct:
			for i := range rt.NumField() {
				walk(rt.Field(i).Type, path+"."+rt.Field(i).Name)
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if rt.PkgPath() != "" && !byName[rt.String()] {
				t.Errorf("%s (%s) is a named integer the plan encodes as a number", path, rt)
			}
		case reflect.Map, reflect.Interface, reflect.Func, reflect.Chan:
			if !known[rt.String()] {
				t.Errorf("%s (%s) cannot be encoded", path, rt)
			}
		}
	}
	for _, op := range []any{&physical.Source{}, &physical.Filter{}, &physical.Project{}, &physical.Rekey{}, &physical.FlatMap{},
		&physical.TableChanges{}, &physical.Aggregate{}, &physical.Materialize{}, &physical.StreamTableJoin{},
		&physical.TableTableJoin{}, &physical.StreamStreamJoin{}, &physical.Repartition{}, &physical.Sink{},
		&physical.ForeignKeyJoin{}, &physical.ForeignKeySubscriptions{}, &physical.TableRepartition{},
		&physical.Merge{},
		&expr.Column{}, &expr.Literal{}, &expr.Binary{}, &expr.Unary{}, &expr.IsNull{}, &expr.Call{},
		&expr.Cast{}, &expr.In{}, &expr.Between{}, &expr.Like{}, &expr.Distinct{}, &expr.IsTrue{},
		&expr.Case{}, &expr.Subscript{}, &expr.Field{}, &expr.Array{}, &expr.Map{}, &expr.Struct{},
		&expr.Lambda{}, &expr.LambdaVar{}, &catalog.Source{}, &physical.Store{}} {
		walk(reflect.TypeOf(op), reflect.TypeOf(op).Elem().Name())
	}
}

// partitionerCase is a persistent query of physical/testdata/partitioners.
type partitionerCase struct {
	text   string
	target *catalog.Source
	topo   *physical.Topology
}

// partitionerCases plans the persistent queries of
// physical/testdata/partitioners (sources declared PARTITIONER=…).
func partitionerCases(t *testing.T) []partitionerCase {
	var out []partitionerCase
	cat := catalog.New()
	datadriven.RunTest(t, "../physical/testdata/partitioners", func(t *testing.T, d *datadriven.TestData) string {
		st, err := sql.Parse(d.Input)
		if err != nil {
			return d.Expected
		}
		switch d.Cmd {
		case "source":
			if src, err := sql.BindCreateSource(st.(*sql.CreateSource)); err == nil {
				cat.AddSource(src, false)
			}
		case "persistent":
			var sink *planner.Sink
			if is, ok := st.(*sql.InsertSelect); ok {
				sink, err = sql.BindInsertSelect(is, cat)
			} else {
				sink, err = sql.BindCreateAs(st.(*sql.CreateAs), cat)
			}
			if err != nil {
				return d.Expected
			}
			topo, err := physical.Build(physical.AppID("sqlstreams", plan.QueryIDPlaceholder), sink)
			if err != nil {
				return d.Expected
			}
			out = append(out, partitionerCase{text: d.Input, target: sink.Target, topo: topo})
		}
		return d.Expected
	})
	return out
}

// TestSQLDialectRoundTrip checks that a SQL-dialect query's plan records
// its dialect and its aggregations' SQL semantics (Aggregate.Changes,
// DropEmpty), and that a ksqlDB one records neither.
func TestSQLDialectRoundTrip(t *testing.T) {
	pcat := plannerCatalog(t)
	topo := build(t, pcat, `CREATE TABLE nested AS SELECT n, COUNT(*) AS c FROM (SELECT userid, COUNT(*) AS n FROM pageviews GROUP BY userid) x GROUP BY n`, nil)
	b, err := plan.EncodeTopology(topo)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"dialect":"SQL"`, `"Changes":true`, `"DropEmpty":true`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("plan lacks %s:\n%s", want, b)
		}
	}
	got, err := plan.DecodeTopology(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Dialect != "SQL" {
		t.Errorf("dialect %q after a round trip", got.Dialect)
	}
	roundTrip(t, "nested", topo)
	ksql := build(t, pcat, `CREATE TABLE flat AS SELECT region, COUNT(*) AS n FROM users GROUP BY region`, nil)
	b, err = plan.EncodeTopology(ksql)
	if err != nil {
		t.Fatal(err)
	}
	for _, not := range []string{`"dialect"`, `"Changes"`, `"DropEmpty"`} {
		if bytes.Contains(b, []byte(not)) {
			t.Errorf("a ksqlDB plan records %s:\n%s", not, b)
		}
	}
}
