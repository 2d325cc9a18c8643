package planner_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
)

// testDDL declares the sources the tests plan against:
//
//	PAGEVIEWS  a stream keyed by USERID
//	USERS      a table keyed by USERID
//	EVENTS     a stream with ARRAY, MAP and STRUCT columns
//	CLICKS     a stream without a key
//	ITEMS      a table keyed by a BIGINT ID
//	STOCK      a table with two key columns (REGION, SHOP)
//	ORDERS     a stream with two key columns (REGION, SHOP)
var testDDL = []string{
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

func testCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	cat := catalog.New()
	for _, ddl := range testDDL {
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

// bind plans a SELECT or a CREATE … AS SELECT; the second result is the
// plan's root (the Sink of a persistent query, the Query's root otherwise).
func bind(cat *catalog.Catalog, text string) (*planner.Query, planner.Node, error) {
	st, err := sql.Parse(text)
	if err != nil {
		return nil, nil, err
	}
	switch st := st.(type) {
	case *sql.Select:
		q, err := sql.BindSelect(st, cat)
		if err != nil {
			return nil, nil, err
		}
		return q, q.Root, nil
	case *sql.CreateAs:
		sink, err := sql.BindCreateAs(st, cat)
		if err != nil {
			return nil, nil, err
		}
		return nil, sink, nil
	}
	return nil, nil, fmt.Errorf("not a query: %T", st)
}

// selectQuery plans a SELECT that must bind.
func selectQuery(t *testing.T, cat *catalog.Catalog, text string) *planner.Query {
	t.Helper()
	q, _, err := bind(cat, text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	if q == nil {
		t.Fatalf("%s: not a SELECT", text)
	}
	return q
}

// find returns the first node of type T on the path from n to its scan.
func find[T planner.Node](t *testing.T, n planner.Node) T {
	t.Helper()
	for cur := n; cur != nil; {
		if x, ok := cur.(T); ok {
			return x
		}
		ch := cur.Children()
		if len(ch) == 0 {
			break
		}
		cur = ch[0]
	}
	var zero T
	t.Fatalf("no %T in plan:\n%s", zero, planner.Explain(n))
	return zero
}

// TestPlans pins the logical plans of typical statements as EXPLAIN prints
// them: node order, output column names (KSQL_COL_n, KSQL_SYNTH_n,
// KSQL_AGG_n) and which columns are keys. Regenerate with -rewrite only
// on purpose: the names are what users see in DESCRIBE and EXPLAIN.
//
//	plan    binds a SELECT or CREATE … AS SELECT; prints emit and limit
//	        (SELECT only), then the plan, or the error
func TestPlans(t *testing.T) {
	cat := testCatalog(t)
	datadriven.RunTest(t, "testdata/plans", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "plan":
			q, root, err := bind(cat, d.Input)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			var b strings.Builder
			if q != nil {
				fmt.Fprintf(&b, "emit=%q limit=%d\n", q.Emit, q.Limit)
			}
			b.WriteString(planner.Explain(root))
			return b.String()
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}

// keyNames lists the key columns of s, in schema order.
func keyNames(n planner.Node) []string {
	s := n.Schema()
	var out []string
	for _, i := range s.KeyIndexes() {
		out = append(out, s.Columns[i].Name)
	}
	return out
}

// TestOutputKeys checks which columns of a query's result are its key
// (what DESCRIBE shows as KEY and what is written to the Kafka key).
func TestOutputKeys(t *testing.T) {
	cat := testCatalog(t)
	for _, tc := range []struct {
		sql  string
		keys []string
	}{
		// A projection keeps a passed-through key column as the key, under
		// its alias; anything computed from it is a value.
		{"SELECT userid, pageid FROM pageviews EMIT CHANGES", []string{"USERID"}},
		{"SELECT pageid, userid AS who FROM pageviews EMIT CHANGES", []string{"WHO"}},
		{"SELECT * FROM pageviews WHERE viewtime > 1 EMIT CHANGES", []string{"USERID"}},
		{"SELECT UCASE(userid) AS u, pageid FROM pageviews EMIT CHANGES", nil},
		{"SELECT pageid FROM pageviews EMIT CHANGES", nil},
		{"SELECT url, n FROM clicks EMIT CHANGES", nil},
		{"SELECT id, EXPLODE(tags) AS tag FROM events EMIT CHANGES", []string{"ID"}},
		{"SELECT region, shop, amount FROM orders EMIT CHANGES", []string{"REGION", "SHOP"}},
		// PARTITION BY makes new keys; the old key becomes a value.
		{"SELECT pageid, userid FROM pageviews PARTITION BY pageid EMIT CHANGES", []string{"PAGEID"}},
		{"SELECT userid, pageid FROM pageviews PARTITION BY userid EMIT CHANGES", []string{"USERID"}},
		{"SELECT UCASE(pageid) AS up, userid FROM pageviews PARTITION BY UCASE(pageid) EMIT CHANGES", []string{"UP"}},
		{"SELECT n, url FROM clicks PARTITION BY n EMIT CHANGES", []string{"N"}},
		{"SELECT ROWTIME AS rt, userid FROM pageviews PARTITION BY ROWTIME EMIT CHANGES", []string{"RT"}},
		{"SELECT amount, region, shop FROM orders PARTITION BY amount EMIT CHANGES", []string{"AMOUNT"}},
		// GROUP BY: the group columns are the keys.
		{"SELECT pageid, COUNT(*) AS n FROM pageviews GROUP BY pageid EMIT CHANGES", []string{"PAGEID"}},
		{"SELECT UCASE(pageid) AS p, COUNT(*) AS n FROM pageviews GROUP BY UCASE(pageid) EMIT CHANGES", []string{"P"}},
		{"SELECT region, shop, SUM(amount) AS s FROM orders GROUP BY region, shop EMIT CHANGES", []string{"REGION", "SHOP"}},
		{"SELECT region, COUNT(*) AS n FROM users GROUP BY region EMIT CHANGES", []string{"REGION"}},
		{"SELECT COUNT(*) AS n, url FROM clicks GROUP BY url EMIT CHANGES", []string{"URL"}},
		{"SELECT COUNT(*) AS n FROM pageviews GROUP BY pageid EMIT CHANGES", nil},
		// A stream–table join keeps the stream's key; the table's key
		// column is a value of the joined rows.
		{"SELECT pv.userid, region FROM pageviews pv JOIN users u ON pv.userid = u.userid EMIT CHANGES", []string{"PV_USERID"}},
		{"SELECT pv.userid AS who, region FROM pageviews pv LEFT JOIN users u ON pv.userid = u.userid EMIT CHANGES", []string{"WHO"}},
		{"SELECT * FROM pageviews pv LEFT JOIN users u ON u.userid = pv.userid EMIT CHANGES", []string{"PV_USERID"}},
		{"SELECT u.userid, pageid FROM pageviews pv JOIN users u ON pv.userid = u.userid EMIT CHANGES", nil},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			q := selectQuery(t, cat, tc.sql)
			if got := keyNames(q.Root); !slices.Equal(got, tc.keys) {
				t.Errorf("keys %v, want %v\n%s", got, tc.keys, planner.Explain(q.Root))
			}
		})
	}
}

// TestRekeySchema checks the rows PARTITION BY produces: the named
// columns, or new KSQL_COL_<n> columns for expressions, are the keys, in
// PARTITION BY order; every input column, the old key included, is kept
// as a value.
func TestRekeySchema(t *testing.T) {
	cat := testCatalog(t)
	for _, tc := range []struct {
		by     string
		keys   []string // Rekey.Keys, by name
		values []string // the value columns, pseudo columns left out
	}{
		{"pageid", []string{"PAGEID"}, []string{"USERID", "VIEWTIME"}},
		{"userid", []string{"USERID"}, []string{"PAGEID", "VIEWTIME"}},
		{"UCASE(pageid)", []string{"KSQL_COL_0"}, []string{"USERID", "PAGEID", "VIEWTIME"}},
		{"viewtime, pageid", []string{"VIEWTIME", "PAGEID"}, []string{"USERID"}},
		{"pageid, viewtime * 2", []string{"PAGEID", "KSQL_COL_0"}, []string{"USERID", "VIEWTIME"}},
		{"LCASE(userid), UCASE(pageid)", []string{"KSQL_COL_0", "KSQL_COL_1"}, []string{"USERID", "PAGEID", "VIEWTIME"}},
		// A pseudo column is not a key column: it is an expression.
		{"ROWTIME", []string{"KSQL_COL_0"}, []string{"USERID", "PAGEID", "VIEWTIME"}},
	} {
		t.Run(tc.by, func(t *testing.T) {
			q := selectQuery(t, cat, "SELECT * FROM pageviews PARTITION BY "+tc.by+" EMIT CHANGES")
			rk := find[*planner.Rekey](t, q.Root)
			s := rk.Schema()
			var keys []string
			for _, i := range rk.Keys {
				if !s.Columns[i].Key {
					t.Errorf("Keys names %s, which is not a key column", s.Columns[i].Name)
				}
				keys = append(keys, s.Columns[i].Name)
			}
			if !slices.Equal(keys, tc.keys) {
				t.Errorf("keys %v, want %v", keys, tc.keys)
			}
			if n := len(s.KeyIndexes()); n != len(rk.Keys) {
				t.Errorf("%d key columns, want %d: %s", n, len(rk.Keys), s)
			}
			var values []string
			for _, i := range s.ValueIndexes() {
				if !s.Columns[i].Pseudo {
					values = append(values, s.Columns[i].Name)
				}
			}
			if !slices.Equal(values, tc.values) {
				t.Errorf("values %v, want %v", values, tc.values)
			}
		})
	}
}

// TestMissingKeys checks Project.MissingKeys, which makes CREATE … AS
// SELECT refuse a projection that drops a key column.
func TestMissingKeys(t *testing.T) {
	cat := testCatalog(t)
	for _, tc := range []struct {
		sql     string
		missing []string
	}{
		{"SELECT userid, pageid FROM pageviews EMIT CHANGES", nil},
		{"SELECT pageid, userid AS who FROM pageviews EMIT CHANGES", nil},
		{"SELECT * FROM pageviews EMIT CHANGES", nil},
		{"SELECT pageid FROM pageviews EMIT CHANGES", []string{"USERID"}},
		{"SELECT UCASE(userid) AS u FROM pageviews EMIT CHANGES", []string{"USERID"}},
		{"SELECT url FROM clicks EMIT CHANGES", nil},
		{"SELECT amount FROM orders EMIT CHANGES", []string{"REGION", "SHOP"}},
		{"SELECT shop, amount FROM orders EMIT CHANGES", []string{"REGION"}},
		{"SELECT EXPLODE(tags) AS tag FROM events EMIT CHANGES", []string{"ID"}},
		// After PARTITION BY the new keys are the ones to keep.
		{"SELECT pageid, viewtime FROM pageviews PARTITION BY pageid EMIT CHANGES", nil},
		{"SELECT userid, viewtime FROM pageviews PARTITION BY pageid EMIT CHANGES", []string{"PAGEID"}},
		{"SELECT UCASE(pageid) AS up FROM pageviews PARTITION BY UCASE(pageid) EMIT CHANGES", nil},
		{"SELECT userid FROM pageviews PARTITION BY UCASE(pageid) EMIT CHANGES", []string{"KSQL_COL_0"}},
		{"SELECT ROWTIME AS rt FROM pageviews PARTITION BY ROWTIME EMIT CHANGES", nil},
		// After GROUP BY, the group columns.
		{"SELECT pageid, COUNT(*) AS n FROM pageviews GROUP BY pageid EMIT CHANGES", nil},
		{"SELECT COUNT(*) AS n FROM pageviews GROUP BY pageid EMIT CHANGES", []string{"PAGEID"}},
		{"SELECT shop, COUNT(*) AS n FROM orders GROUP BY region, shop EMIT CHANGES", []string{"REGION"}},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			q := selectQuery(t, cat, tc.sql)
			if got := q.Root.(*planner.Project).MissingKeys(); !slices.Equal(got, tc.missing) {
				t.Errorf("missing keys %v, want %v", got, tc.missing)
			}
		})
	}
	// What the user sees.
	_, _, err := bind(cat, "CREATE STREAM x AS SELECT pageid FROM pageviews PARTITION BY UCASE(pageid) EMIT CHANGES")
	if want := "must include the partitioning expression UCASE(PAGEVIEWS.PAGEID) in its projection (eg, SELECT UCASE(PAGEVIEWS.PAGEID)...)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("CREATE STREAM without the key: error %v, want %q", err, want)
	}
}

// TestConstructorErrors checks the statements the plan constructors
// refuse, with the text the user reads.
func TestConstructorErrors(t *testing.T) {
	cat := testCatalog(t)
	for _, tc := range []struct {
		sql, err string
	}{
		// NewProject
		{"SELECT userid, pageid AS userid FROM pageviews EMIT CHANGES", "Duplicate value columns found in schema: `USERID` STRING; give one an alias with AS"},
		{"SELECT pageid AS p, viewtime AS p FROM pageviews EMIT CHANGES", "Duplicate value columns found in schema: `P` BIGINT; give one an alias with AS"},
		{"SELECT pageid, COUNT(*) AS pageid FROM pageviews GROUP BY pageid EMIT CHANGES", "Duplicate value columns found in schema: `PAGEID` BIGINT; give one an alias with AS"},
		{"SELECT userid, NULL FROM pageviews EMIT CHANGES", "Can't infer a type of null. Please explicitly cast it"},
		{"SELECT userid, NULL AS n FROM pageviews EMIT CHANGES", "Can't infer a type of null. Please explicitly cast it"},
		// NewFilter
		{"SELECT * FROM pageviews WHERE viewtime EMIT CHANGES", "Should evaluate to boolean but is VIEWTIME (BIGINT) instead."},
		{"SELECT * FROM pageviews WHERE pageid EMIT CHANGES", "Should evaluate to boolean but is PAGEID (STRING) instead."},
		{"SELECT * FROM users WHERE level", "Should evaluate to boolean but is LEVEL (INTEGER) instead."},
		{"SELECT pageid, COUNT(*) AS n FROM pageviews GROUP BY pageid HAVING COUNT(*) EMIT CHANGES", "Type error in HAVING expression: Should evaluate to boolean but is COUNT() (BIGINT) instead."},
		// NewAggregate
		{"SELECT COUNT(*) AS n FROM pageviews GROUP BY NULL EMIT CHANGES", "cannot GROUP BY NULL"},
		{"SELECT attrs, COUNT(*) AS n FROM events GROUP BY attrs EMIT CHANGES", "Map keys, including types that contain maps, are not supported as they may lead to unexpected behavior due to inconsistent serialization. Key column name: `ATTRS`"},
		// NewRekey
		{"SELECT * FROM pageviews PARTITION BY pageid, NULL EMIT CHANGES", "Cannot PARTITION BY multiple columns including NULL"},
		{"SELECT * FROM pageviews PARTITION BY pageid, pageid EMIT CHANGES", "PARTITION BY names PAGEID twice"},
		// NewFlatMap
		{"SELECT EXPLODE(viewtime) FROM pageviews EMIT CHANGES", "Function 'EXPLODE' does not accept parameters (BIGINT)."},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			_, root, err := bind(cat, tc.sql)
			if err == nil {
				t.Fatalf("planned, want error %q:\n%s", tc.err, planner.Explain(root))
			}
			if !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %q, want %q", err, tc.err)
			}
		})
	}
}

// TestJoinPlan checks the shape of a stream–table join's plan as the
// helpers that walk plans see it: the join has both scans as children,
// the stream first, so Sources lists the stream first (the engine takes
// the result's partitions and formats from it, and refuses a pull query
// over it as over a stream); its rows are the stream's columns then the
// table's, prefixed with the sides' names.
func TestJoinPlan(t *testing.T) {
	cat := testCatalog(t)
	q := selectQuery(t, cat, "SELECT pv.pageid, u.region FROM pageviews pv LEFT JOIN users u ON pv.userid = u.userid WHERE u.level > 1 EMIT CHANGES")
	var names []string
	for _, s := range planner.Sources(q.Root) {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"PAGEVIEWS", "USERS"}) {
		t.Errorf("sources %v, want [PAGEVIEWS USERS]", names)
	}
	j := find[*planner.Join](t, q.Root)
	if j.Type != planner.LeftJoin || len(j.Children()) != 2 || j.RightOffset() != j.Left.Schema().Len() {
		t.Errorf("join %s: children %d, right offset %d", j, len(j.Children()), j.RightOffset())
	}
	want := "PV_USERID STRING KEY, PV_PAGEID STRING, PV_VIEWTIME BIGINT, PV_ROWTIME BIGINT, PV_ROWPARTITION INTEGER, PV_ROWOFFSET BIGINT, " +
		"U_USERID STRING, U_REGION STRING, U_LEVEL INTEGER, U_ROWTIME BIGINT, U_ROWPARTITION INTEGER, U_ROWOFFSET BIGINT"
	if got := j.Schema().String(); got != want {
		t.Errorf("join schema\n got %s\nwant %s", got, want)
	}
	// The WHERE over the joined rows is the filter a pull query would use;
	// it does not constrain the key, so there is no key filter.
	if f, ok := planner.PullKeyFilter(q); ok {
		t.Errorf("PullKeyFilter found %+v in a filter on a table column", f)
	}
}
