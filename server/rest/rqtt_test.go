package rest_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// queryRows posts a SELECT to /query and returns its elements.
func (f *fixture) queryRows(stmt string, props map[string]any) ([]map[string]any, error) {
	f.t.Helper()
	resp, body := f.do("POST", "/query", map[string]any{"ksql": stmt, "streamsProperties": props})
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %s", resp.Status, body)
	}
	var elems []map[string]any
	if err := json.Unmarshal(body, &elems); err != nil {
		return nil, fmt.Errorf("%v in %s", err, body)
	}
	return elems, nil
}

// TestWindowedPullHeaderMarksWindowBoundsKey: the header of a pull query
// on a windowed table marks WINDOWSTART and WINDOWEND as KEY, as
// ksqlDB's does (RQTT's pull-query files).
func TestWindowedPullHeaderMarksWindowBoundsKey(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM RQ_WSRC (ID STRING KEY, V INT) WITH (KAFKA_TOPIC='rq_wsrc', VALUE_FORMAT='JSON', PARTITIONS=1);
		CREATE TABLE RQ_WAGG AS SELECT ID, COUNT(1) AS COUNT FROM RQ_WSRC WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY ID;
		INSERT INTO RQ_WSRC (ID, V) VALUES ('a', 1);`, nil)
	want := "`ID` STRING KEY, `WINDOWSTART` BIGINT KEY, `WINDOWEND` BIGINT KEY, `COUNT` BIGINT"
	eventually(t, 30*time.Second, func() error {
		elems, err := f.queryRows("SELECT * FROM RQ_WAGG;", nil)
		if err != nil {
			return err
		}
		if len(elems) != 2 {
			return fmt.Errorf("want header and one row, got %v", elems)
		}
		if got := elems[0]["header"].(map[string]any)["schema"]; got != want {
			return fmt.Errorf("header schema %q, want %q", got, want)
		}
		return nil
	})
}

// TestStreamPullQueryScansTopic: a pull query on a stream reads its topic
// from the start to the end it had when the query started, as ksqlDB's
// does; on /query it ends with "Query Completed", or "Limit Reached"
// when its LIMIT cut it short, and its header marks no key.
func TestStreamPullQueryScansTopic(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM RQ_SSRC (K INT KEY, V INT) WITH (KAFKA_TOPIC='rq_ssrc', VALUE_FORMAT='JSON', PARTITIONS=2);
		INSERT INTO RQ_SSRC (K, V) VALUES (1, 10);
		INSERT INTO RQ_SSRC (K, V) VALUES (2, 20);
		INSERT INTO RQ_SSRC (K, V) VALUES (3, 30);`, nil)
	elems, err := f.queryRows("SELECT * FROM RQ_SSRC WHERE V > 10;", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, e := range elems[1 : len(elems)-1] {
		b, _ := json.Marshal(e["row"].(map[string]any)["columns"])
		got[string(b)] = true
	}
	if len(elems) != 4 || elems[0]["header"].(map[string]any)["schema"] != "`K` INTEGER, `V` INTEGER" ||
		!got["[2,20]"] || !got["[3,30]"] || elems[3]["finalMessage"] != "Query Completed" {
		t.Errorf("scan: %v", elems)
	}
	elems, err = f.queryRows("SELECT * FROM RQ_SSRC LIMIT 2;", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(elems) != 4 || elems[3]["finalMessage"] != "Limit Reached" {
		t.Errorf("scan with LIMIT 2: %v", elems)
	}
	elems, err = f.queryRows("SELECT * FROM RQ_SSRC LIMIT 5;", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(elems) != 5 || elems[4]["finalMessage"] != "Query Completed" {
		t.Errorf("scan with LIMIT 5: %v", elems)
	}
}

// TestScalablePushQueryID: a push query ksqlDB would run as a scalable
// push query (latest offset, one source a persistent query writes, only
// filtered and projected) has an ID starting SCALABLE_PUSH_QUERY, which
// /close-query takes; others keep a plain ID.
func TestScalablePushQueryID(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM RQ_PSRC (K STRING KEY, ID INT) WITH (KAFKA_TOPIC='rq_psrc', VALUE_FORMAT='JSON', PARTITIONS=1);
		CREATE STREAM RQ_PCOPY AS SELECT * FROM RQ_PSRC;`, nil)
	for _, c := range []struct {
		stmt     string
		props    map[string]any
		scalable bool
	}{
		{"SELECT K FROM RQ_PCOPY EMIT CHANGES;", map[string]any{"auto.offset.reset": "latest"}, true},
		{"SELECT K FROM RQ_PCOPY EMIT CHANGES;", map[string]any{"auto.offset.reset": "earliest"}, false},
		{"SELECT K FROM RQ_PSRC EMIT CHANGES;", nil, false},
	} {
		s := f.openStream("/query-stream", map[string]any{"sql": c.stmt, "properties": c.props})
		var h map[string]any
		if err := json.Unmarshal([]byte(s.line(10*time.Second)), &h); err != nil {
			t.Fatal(err)
		}
		id, _ := h["queryId"].(string)
		if strings.HasPrefix(id, "SCALABLE_PUSH_QUERY") != c.scalable {
			t.Errorf("%s %v: queryId %q", c.stmt, c.props, id)
		}
		if resp, body := f.do("POST", "/close-query", map[string]any{"queryId": id}); resp.StatusCode != 200 {
			t.Errorf("/close-query %s: %s %s", id, resp.Status, body)
		}
		s.close()
	}
}

// TestInsertValuesAsKsqlDB: INSERT … VALUES as ksqlDB runs it: ROWTIME
// sets the record timestamp (0 included), the implicit columns are the
// key columns then the value columns, ROWPARTITION and ROWOFFSET are
// refused, and a count mismatch says so as ksqlDB does.
func TestInsertValuesAsKsqlDB(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM RQ_ISRC (ID INT, K STRING KEY) WITH (KAFKA_TOPIC='rq_isrc', VALUE_FORMAT='JSON', PARTITIONS=1);
		INSERT INTO RQ_ISRC (ROWTIME, K, ID) VALUES (1234, 'a', 10);
		INSERT INTO RQ_ISRC (ID, ROWTIME, K) VALUES (11, 0, 'b');
		INSERT INTO RQ_ISRC VALUES ('c', 12);`, nil)
	elems, err := f.queryRows("SELECT ROWTIME, K, ID FROM RQ_ISRC;", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(elems) != 5 {
		t.Fatalf("want header, 3 rows, final message: %v", elems)
	}
	var rows []string
	for _, e := range elems[1:4] {
		b, _ := json.Marshal(e["row"].(map[string]any)["columns"])
		rows = append(rows, string(b))
	}
	if rows[0] != `[1234,"a",10]` || rows[1] != `[0,"b",11]` || !strings.HasSuffix(rows[2], `,"c",12]`) || strings.HasPrefix(rows[2], "[0,") {
		t.Errorf("rows %v", rows)
	}
	for stmt, want := range map[string]string{
		"INSERT INTO RQ_ISRC (K, ID, ROWPARTITION) VALUES ('a', 1, 5);": "Inserting into column `ROWPARTITION` is not allowed.",
		"INSERT INTO RQ_ISRC (K, ID, ROWOFFSET) VALUES ('a', 1, 5);":    "Inserting into column `ROWOFFSET` is not allowed.",
		"INSERT INTO RQ_ISRC (K, ID) VALUES ('a');":                     "Failed to prepare statement: Expected number columns and values to match: 2, 1",
		"INSERT INTO RQ_ISRC (K, ID) VALUES (FOO.bar, '10');":           "Failed to prepare statement: 'FOO' is not a valid stream/table name or alias.",
	} {
		e := f.ksqlError(stmt, 400)
		if m, _ := e["message"].(string); !strings.Contains(m, want) {
			t.Errorf("%s: %q does not contain %q", stmt, m, want)
		}
	}
}

// TestArithmeticOnNullRefused: arithmetic on an untyped NULL is refused
// with ksqlDB's message, as ksqlDB refuses it.
func TestArithmeticOnNullRefused(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM RQ_NSRC (K STRING KEY, ID INT) WITH (KAFKA_TOPIC='rq_nsrc', VALUE_FORMAT='JSON', PARTITIONS=1);`, nil)
	for q, want := range map[string]string{
		"SELECT 1 + NULL FROM RQ_NSRC EMIT CHANGES;":               "Error processing expression: (1 + null). Arithmetic on types INTEGER and null are not supported.",
		"SELECT MAP(1 := 'cat') + NULL FROM RQ_NSRC EMIT CHANGES;": "Error processing expression: (MAP(1:='cat') + null). Arithmetic on types MAP<INTEGER, STRING> and null are not supported.",
		"SELECT Array[1,2,3] + NULL FROM RQ_NSRC EMIT CHANGES;":    "Error processing expression: (ARRAY[1, 2, 3] + null). Arithmetic on types ARRAY<INTEGER> and null are not supported.",
		"SELECT 5.0 / NULL FROM RQ_NSRC EMIT CHANGES;":             "Error processing expression: (5.0 / null). Arithmetic on types DECIMAL(2, 1) and null are not supported.",
		"SELECT NULL * NULL FROM RQ_NSRC EMIT CHANGES;":            "Error processing expression: (null * null). Arithmetic on types null and null are not supported.",
		"SELECT ID + CAST(NULL AS INT) AS X FROM RQ_NSRC LIMIT 1;": "",
	} {
		resp, b := f.do("POST", "/query", map[string]any{"ksql": q})
		if want == "" {
			if resp.StatusCode != 200 {
				t.Errorf("%s: %s %s", q, resp.Status, b)
			}
			continue
		}
		if m, _ := decodeObject(t, b)["message"].(string); resp.StatusCode != 400 || !strings.Contains(m, want) {
			t.Errorf("%s: %s %q, want %q", q, resp.Status, m, want)
		}
	}
}

// TestPullQueryValidation: pull queries are refused as ksqlDB's
// validation refuses them, with its messages, before any state is
// waited for; with ksql.query.pull.table.scan.enabled=false the WHERE
// must pin the key as ksqlDB's lookups do.
func TestPullQueryValidation(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM RQ_VSRC (ID STRING KEY, V INT) WITH (KAFKA_TOPIC='rq_vsrc', VALUE_FORMAT='JSON', PARTITIONS=1);
		CREATE TABLE RQ_VAGG AS SELECT ID, COUNT(1) AS COUNT FROM RQ_VSRC GROUP BY ID;`, nil)
	noScan := map[string]any{"ksql.query.pull.table.scan.enabled": false}
	for _, c := range []struct {
		stmt  string
		props map[string]any
		want  string
	}{
		{"SELECT * FROM RQ_VAGG A JOIN RQ_VSRC I ON A.ID = I.ID WHERE A.ID = '10';", nil, "Pull queries don't support JOIN clauses."},
		{"SELECT * FROM RQ_VAGG WINDOW TUMBLING (SIZE 1 SECOND) WHERE ID = '10';", nil, "Pull queries don't support WINDOW clauses."},
		{"SELECT * FROM RQ_VSRC GROUP BY ID;", nil, "Pull queries don't support GROUP BY clauses."},
		{"SELECT ID, ROWPARTITION FROM RQ_VAGG WHERE ID = '1';", nil, "Pull queries don't support the following columns in SELECT clauses: `ROWPARTITION`"},
		{"SELECT * FROM RQ_VSRC WHERE ROWOFFSET < 3;", nil, "Pull queries don't support the following columns in WHERE clauses: `ROWOFFSET`"},
		{"SELECT * FROM RQ_VSRC LIMIT 2;", map[string]any{"ksql.query.pull.limit.clause.enabled": false}, "LIMIT clause in pull queries is currently disabled."},
		{"SELECT * FROM RQ_VAGG WHERE ID != '100';", noScan, "Bound on key columns '[`ID` STRING KEY]' must currently be '='. "},
		{"SELECT * FROM RQ_VAGG WHERE COUNT = 100;", noScan, "WHERE clause missing key column for disjunct: (COUNT = 100)"},
		{"SELECT * FROM RQ_VAGG WHERE ID = '1' AND ID IN ('1', '2');", noScan, "A comparison condition on the key column cannot be combined with other comparisons such as an IN predicate"},
		{"SELECT * FROM RQ_VAGG WHERE ID = CAST(COUNT AS STRING);", noScan, "A comparison must be between a key column and a resolvable expression."},
		{"SELECT * FROM RQ_VAGG WHERE ID <= '11' OR ID >= '13';", noScan, "Query requires table scan to be enabled"},
		{"SELECT * FROM RQ_VAGG WHERE ID IN (NULL);", nil, "Primary key columns can not be NULL: (ID = null)"},
	} {
		resp, b := f.do("POST", "/query", map[string]any{"ksql": c.stmt, "streamsProperties": c.props})
		if m, _ := decodeObject(t, b)["message"].(string); resp.StatusCode != 400 || !strings.Contains(m, c.want) {
			t.Errorf("%s: %s %q, want %q", c.stmt, resp.Status, m, c.want)
		}
	}
	// What the lookup rules allow.
	for _, stmt := range []string{"SELECT * FROM RQ_VAGG WHERE ID = '1';", "SELECT * FROM RQ_VAGG WHERE ID IN ('1', '2');", "SELECT * FROM RQ_VAGG WHERE ID >= '1';"} {
		eventually(t, 30*time.Second, func() error {
			if resp, b := f.do("POST", "/query", map[string]any{"ksql": stmt, "streamsProperties": noScan}); resp.StatusCode != 200 {
				return fmt.Errorf("%s: %s %s", stmt, resp.Status, b)
			}
			return nil
		})
	}
	if m, _ := f.ksqlError("CREATE TABLE RQ_VLIM AS SELECT * FROM RQ_VAGG LIMIT 5;", 400)["message"].(string); !strings.Contains(m, "CREATE TABLE AS SELECT statements don't support LIMIT clause.") {
		t.Errorf("CTAS with LIMIT: %q", m)
	}
}

// TestTypeErrorsAsKsqlDB: type errors of comparisons, BETWEEN and LIKE,
// and window bounds of a source without windows, say what ksqlDB says.
func TestTypeErrorsAsKsqlDB(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE TABLE RQ_TTAB (ID STRING PRIMARY KEY, N INT) WITH (KAFKA_TOPIC='rq_ttab', VALUE_FORMAT='JSON', PARTITIONS=1);
		CREATE TABLE RQ_TVIEW AS SELECT * FROM RQ_TTAB;
		CREATE TABLE RQ_WL (K STRING PRIMARY KEY, F1 STRING) WITH (KAFKA_TOPIC='rq_wl', VALUE_FORMAT='JSON', PARTITIONS=1, WINDOW_TYPE='Tumbling', WINDOW_SIZE='1 SECOND');
		CREATE TABLE RQ_WR (K STRING PRIMARY KEY, ID INT) WITH (KAFKA_TOPIC='rq_wr', VALUE_FORMAT='JSON', PARTITIONS=1, WINDOW_TYPE='Tumbling', WINDOW_SIZE='1 SECOND');`, nil)
	for q, want := range map[string]string{
		"SELECT * FROM RQ_TVIEW WHERE ID = 11;":                                                                          "Error in WHERE expression: Cannot compare ID (STRING) to 11 (INTEGER) with EQUAL.\nStatement: (ID = 11)",
		"SELECT * FROM RQ_TVIEW WHERE N = NULL;":                                                                         "Error in WHERE expression: Comparison with NULL not supported: INTEGER = NULL\nUse 'IS NULL' or 'IS NOT NULL' instead.\nStatement: (N = null)",
		"SELECT * FROM RQ_TVIEW WHERE ID BETWEEN 10 AND 'x';":                                                            "Invalid expression: Cannot compare ID (STRING) to 10 (INTEGER) with GREATER_THAN_OR_EQUAL",
		"SELECT * FROM RQ_TVIEW WHERE N LIKE 12;":                                                                        "The column type for Like condition must be VARCHAR. The column type is INTEGER",
		"SELECT * FROM RQ_WL JOIN RQ_WR ON RQ_WL.F1 = RQ_WR.K EMIT CHANGES;":                                             "Foreign-key table-table joins are not supported on windowed tables.",
		"SELECT * FROM RQ_TVIEW WHERE WINDOWSTART = 10;":                                                                 "WHERE column 'WINDOWSTART' cannot be resolved",
		"SELECT COUNT(1) FROM RQ_TTAB WINDOW TUMBLING (SIZE 1 SECOND) WHERE WINDOWSTART > 1000 GROUP BY N EMIT CHANGES;": "Error in WHERE expression: Unknown column WINDOWSTART.",
	} {
		resp, b := f.do("POST", "/query", map[string]any{"ksql": q})
		if m, _ := decodeObject(t, b)["message"].(string); resp.StatusCode != 400 || !strings.Contains(m, want) {
			t.Errorf("%s: %s %q, want %q", q, resp.Status, m, want)
		}
	}
}

// TestPushQueryOverTableTombstones: a push query over a table shows a
// tombstone as its key with NULL values marked "tombstone": true, and
// skips a record without key, as ksqlDB's does.
func TestPushQueryOverTableTombstones(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE TABLE RQ_TOMB (K INT PRIMARY KEY, ID INT) WITH (KAFKA_TOPIC='rq_tomb', VALUE_FORMAT='JSON', PARTITIONS=1);`, nil)
	cl, err := kgo.NewClient(kgo.SeedBrokers(testBroker), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topic := f.sub("rq_tomb")
	for _, r := range []*kgo.Record{
		{Topic: topic, Key: []byte{0, 0, 0, 10}, Value: []byte(`{"ID":110}`)},
		{Topic: topic, Key: []byte{0, 0, 0, 10}},
		{Topic: topic, Value: []byte(`{"ID":123}`)},
		{Topic: topic, Key: []byte{0, 0, 0, 11}, Value: []byte(`{"ID":111}`)},
	} {
		if err := cl.ProduceSync(testCtx(t, 10*time.Second), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	elems, err := f.queryRows("SELECT * FROM RQ_TOMB EMIT CHANGES LIMIT 3;", map[string]any{"auto.offset.reset": "earliest"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(elems[1:])
	if want := `[{"row":{"columns":[10,110]}},{"row":{"columns":[10,null],"tombstone":true}},{"row":{"columns":[11,111]}},{"finalMessage":"Limit Reached"}]`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}
