package rest_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/server/rest"
)

func TestKSQLStatementEntities(t *testing.T) {
	f := newFixture(t)
	ents := f.ksql(`CREATE STREAM KS_SRC (ID INT KEY, NAME STRING, AMOUNT DOUBLE)
		WITH (KAFKA_TOPIC='ks_src', VALUE_FORMAT='JSON', PARTITIONS=1);
		CREATE STREAM KS_BIG AS SELECT * FROM KS_SRC WHERE AMOUNT > 10;`, nil)
	if len(ents) != 2 {
		t.Fatalf("got %d entities, want 2: %v", len(ents), ents)
	}
	create := ents[0]
	if create["@type"] != "currentStatus" || create["commandId"] != f.sub("stream/KS_SRC/create") ||
		get(create, "commandStatus", "status") != "SUCCESS" || get(create, "commandStatus", "message") != "Stream created" ||
		!strings.HasSuffix(create["statementText"].(string), ";") {
		t.Errorf("CREATE STREAM entity: %v", create)
	}
	qid, _ := get(ents[1], "commandStatus", "queryId").(string)
	if !strings.HasPrefix(qid, "CSAS_"+f.sub("KS_BIG")+"_") || get(ents[1], "commandStatus", "message") != "Created query with ID "+qid {
		t.Fatalf("CSAS entity: %v", ents[1])
	}

	streams := f.ksql("SHOW STREAMS;", nil)[0]
	found := false
	for _, s := range streams["streams"].([]any) {
		if get(s, "name") == f.sub("KS_SRC") {
			found = true
			if get(s, "type") != "STREAM" || get(s, "topic") != f.sub("ks_src") || get(s, "keyFormat") != "KAFKA" ||
				get(s, "valueFormat") != "JSON" || get(s, "isWindowed") != false {
				t.Errorf("SHOW STREAMS entry: %v", s)
			}
		}
	}
	if streams["@type"] != "streams" || !found {
		t.Errorf("SHOW STREAMS: %v", streams)
	}

	queries := f.ksql("LIST QUERIES;", nil)[0]
	var q any
	for _, e := range queries["queries"].([]any) {
		if get(e, "id") == qid {
			q = e
		}
	}
	if queries["@type"] != "queries" || q == nil || get(q, "sinks", 0) != f.sub("KS_BIG") ||
		get(q, "queryType") != "PERSISTENT" || get(q, "state") != "RUNNING" || get(q, "statusCount", "RUNNING") != 1.0 {
		t.Errorf("SHOW QUERIES: %v", queries)
	}

	desc := f.ksql("DESCRIBE KS_SRC;", nil)[0]
	sd := desc["sourceDescription"]
	if desc["@type"] != "sourceDescription" || get(sd, "name") != f.sub("KS_SRC") || get(sd, "type") != "STREAM" ||
		get(sd, "topic") != f.sub("ks_src") || get(sd, "extended") != false || get(sd, "readQueries", 0, "id") != qid {
		t.Errorf("DESCRIBE: %v", desc)
	}
	if get(sd, "fields", 0, "name") != "ID" || get(sd, "fields", 0, "type") != "KEY" ||
		get(sd, "fields", 0, "schema", "type") != "INTEGER" || get(sd, "fields", 1, "schema", "type") != "STRING" ||
		get(sd, "fields", 1, "type") != nil {
		t.Errorf("DESCRIBE fields: %v", get(sd, "fields"))
	}
	ext := f.ksql("DESCRIBE EXTENDED KS_BIG;", nil)[0]["sourceDescription"]
	if get(ext, "extended") != true || get(ext, "writeQueries", 0, "id") != qid || get(ext, "partitions") != 1.0 ||
		!strings.Contains(get(ext, "statistics").(string), "records-in:") {
		t.Errorf("DESCRIBE EXTENDED: %v", ext)
	}

	explain := f.ksql("EXPLAIN "+qid+";", nil)[0]
	qd := explain["queryDescription"]
	if explain["@type"] != "queryDescription" || get(qd, "id") != qid || get(qd, "sources", 0) != f.sub("KS_SRC") ||
		get(qd, "sinks", 0) != f.sub("KS_BIG") || !strings.Contains(get(qd, "executionPlan").(string), qid) ||
		get(qd, "topology") == "" || get(qd, "fields", 1, "name") != "NAME" {
		t.Errorf("EXPLAIN: %v", explain)
	}
	explainSelect := f.ksql("EXPLAIN SELECT NAME FROM KS_SRC EMIT CHANGES;", nil)[0]
	if get(explainSelect, "queryDescription", "fields", 0, "name") != "NAME" ||
		!strings.Contains(get(explainSelect, "queryDescription", "executionPlan").(string), f.sub("KS_SRC")) {
		t.Errorf("EXPLAIN SELECT: %v", explainSelect)
	}

	props := f.ksql("SHOW PROPERTIES;", map[string]any{"ksql.streams.auto.offset.reset": "earliest"})[0]
	ok := false
	for _, p := range props["properties"].([]any) {
		if get(p, "name") == "auto.offset.reset" && get(p, "value") == "earliest" {
			ok = true
		}
	}
	if props["@type"] != "properties" || !ok || fmt.Sprint(props["overwrittenProperties"]) != "[auto.offset.reset]" {
		t.Errorf("SHOW PROPERTIES with a streamsProperties override: %v", props)
	}

	fns := f.ksql("SHOW FUNCTIONS;", nil)[0]
	ok = false
	for _, fn := range fns["functions"].([]any) {
		ok = ok || get(fn, "name") == "UCASE" && get(fn, "type") == "SCALAR"
	}
	if fns["@type"] != "function_names" || !ok {
		t.Errorf("SHOW FUNCTIONS: %v", fns)
	}
	fn := f.ksql("DESCRIBE FUNCTION SUBSTRING;", nil)[0]
	if fn["@type"] != "describe_function" || fn["name"] != "SUBSTRING" || fn["type"] != "SCALAR" ||
		get(fn, "functions", 0, "returnType") != "STRING" || get(fn, "functions", 0, "arguments", 1, "name") != "pos" ||
		get(fn, "functions", 0, "arguments", 1, "type") != "INTEGER" {
		t.Errorf("DESCRIBE FUNCTION: %v", fn)
	}

	topics := f.ksql("SHOW TOPICS;", nil)[0]
	ok = false
	for _, tp := range topics["topics"].([]any) {
		ok = ok || get(tp, "name") == f.sub("ks_src") && fmt.Sprint(get(tp, "replicaInfo")) == "[1]"
	}
	if topics["@type"] != "kafka_topics" || !ok {
		t.Errorf("SHOW TOPICS: %v", topics)
	}

	// INSERT VALUES and SET answer with no entity, as in ksqlDB.
	if ents := f.ksql("SET 'auto.offset.reset'='earliest'; INSERT INTO KS_SRC (ID, NAME, AMOUNT) VALUES (1, 'a', 20.5);", nil); len(ents) != 0 {
		t.Errorf("SET and INSERT VALUES answered %v, want no entities", ents)
	}

	// /status knows the commands this server ran.
	resp, body := f.do("GET", "/status/stream/KS_SRC/create", nil)
	if st := decodeObject(t, body); resp.StatusCode != 200 || st["status"] != "SUCCESS" || st["message"] != "Stream created" {
		t.Errorf("/status/stream/KS_SRC/create: %s %s", resp.Status, body)
	}
	resp, body = f.do("GET", "/status", nil)
	if st := decodeObject(t, body); resp.StatusCode != 200 || get(st, "commandStatuses", f.sub("stream/KS_BIG/create")) != "SUCCESS" {
		t.Errorf("/status: %s %s", resp.Status, body)
	}
	if resp, body := f.do("GET", "/status/stream/NOPE/create", nil); resp.StatusCode != 404 || decodeObject(t, body)["error_code"] != 40400.0 {
		t.Errorf("/status of an unknown command: %s %s", resp.Status, body)
	}

	ents = f.ksql("TERMINATE "+qid+"; DROP STREAM KS_BIG;", nil)
	if ents[0]["commandId"] != "terminate/"+qid+"/execute" || get(ents[0], "commandStatus", "message") != "Query terminated." ||
		ents[1]["commandId"] != f.sub("stream/KS_BIG/drop") || !strings.Contains(get(ents[1], "commandStatus", "message").(string), "was dropped") {
		t.Errorf("TERMINATE, DROP: %v", ents)
	}
}

// TestDescribeListsInsertQueriesAsWriters: a source's writeQueries are
// every query that writes it, its CREATE … AS SELECT and INSERT INTO …
// SELECT alike.
func TestDescribeListsInsertQueriesAsWriters(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM IW_SRC (ID INT KEY, V INT) WITH (KAFKA_TOPIC='iw_src', VALUE_FORMAT='JSON', PARTITIONS=1);
		CREATE STREAM IW_DST AS SELECT * FROM IW_SRC;
		INSERT INTO IW_DST SELECT * FROM IW_SRC;`, nil)
	sd := f.ksql("DESCRIBE IW_DST;", nil)[0]["sourceDescription"]
	w, _ := get(sd, "writeQueries").([]any)
	r, _ := get(sd, "readQueries").([]any)
	if len(w) != 2 || len(r) != 0 {
		t.Errorf("DESCRIBE IW_DST: writeQueries %v, readQueries %v; want 2 and none", w, r)
	}
	src := f.ksql("DESCRIBE IW_SRC;", nil)[0]["sourceDescription"]
	if r, _ := get(src, "readQueries").([]any); len(r) != 2 {
		t.Errorf("DESCRIBE IW_SRC: readQueries %v, want 2", r)
	}
}

func TestKSQLErrors(t *testing.T) {
	f := newFixture(t)
	// The second statement fails: the answer is a statement error with its
	// position and the entity of the first statement.
	e := f.ksqlError("SHOW STREAMS;\nSELEC * FROM nowhere;", http.StatusBadRequest)
	if e["@type"] != "statement_error" || e["error_code"] != 40001.0 || e["statementText"] != "SELEC * FROM nowhere;" ||
		len(e["entities"].([]any)) != 1 || get(e, "entities", 0, "@type") != "streams" ||
		e["sqlState"] != "42601" || e["line"] != 1.0 || e["column"] == nil || !strings.Contains(e["message"].(string), "line 1:") {
		t.Errorf("syntax error: %v", e)
	}
	// A name error on line 2 points at the name.
	e = f.ksqlError("DESCRIBE\n  NO_SUCH_STREAM;", http.StatusBadRequest)
	if e["line"] != 2.0 || e["column"] != 3.0 || e["sqlState"] != "42P01" || len(e["entities"].([]any)) != 0 {
		t.Errorf("unknown stream: %v", e)
	}
	// Queries belong on /query-stream.
	f.ksql("CREATE STREAM KE_SRC (ID INT KEY, V STRING) WITH (KAFKA_TOPIC='ke_src', VALUE_FORMAT='JSON', PARTITIONS=1);", nil)
	if e := f.ksqlError("SELECT * FROM KE_SRC EMIT CHANGES;", http.StatusBadRequest); e["error_code"] != 40002.0 {
		t.Errorf("SELECT on /ksql: %v", e)
	}

	for _, c := range []struct {
		name, method, path, body string
		status                   int
		code                     float64
	}{
		{"malformed JSON", "POST", "/ksql", `{"ksql": `, 400, 40000},
		{"no statements", "POST", "/ksql", `{"ksql": " ; -- nothing"}`, 400, 40000},
		{"wrong method", "GET", "/ksql", "", 405, 40500},
		{"unknown endpoint", "GET", "/nope", "", 404, 40400},
		{"two statements on /query-stream", "POST", "/query-stream", `{"sql": "SELECT * FROM KE_SRC EMIT CHANGES; SELECT 1"}`, 400, 40000},
		{"DDL on /query-stream", "POST", "/query-stream", `{"sql": "DROP STREAM KE_SRC"}`, 400, 40001},
		{"pull query on an unknown source", "POST", "/query-stream", `{"sql": "SELECT * FROM KE_NOPE;"}`, 400, 40001},
		{"close of an unknown query", "POST", "/close-query", `{"queryId": "nope"}`, 400, 40000},
		{"inserts into nothing", "POST", "/inserts-stream", `{"target": "NOPE"}` + "\n", 400, 40001},
	} {
		resp, body := f.do(c.method, c.path, c.body)
		e := decodeObject(t, body)
		if resp.StatusCode != c.status || e["error_code"] != c.code || e["message"] == "" || e["@type"] == nil ||
			!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %s %s", c.name, resp.Status, body)
		}
	}

	small := newFixture(t, rest.WithMaxBodyBytes(64))
	resp, body := small.do("POST", "/ksql", map[string]any{"ksql": "SHOW STREAMS; " + strings.Repeat("-- padding\n", 20)})
	if e := decodeObject(t, body); resp.StatusCode != http.StatusRequestEntityTooLarge || e["error_code"] != 41300.0 {
		t.Errorf("body over the limit: %s %s", resp.Status, body)
	}
}

func TestInfoHealthcheckAndAuth(t *testing.T) {
	f := newFixture(t)
	resp, body := f.do("GET", "/info", nil)
	info := decodeObject(t, body)
	if resp.StatusCode != 200 || get(info, "KsqlServerInfo", "version") != "test" || get(info, "KsqlServerInfo", "ksqlServiceId") != "resttest" ||
		get(info, "KsqlServerInfo", "serverStatus") != "RUNNING" || get(info, "KsqlServerInfo", "kafkaClusterId") == "" {
		t.Errorf("/info: %s %s", resp.Status, body)
	}
	resp, body = f.do("GET", "/healthcheck", nil)
	h := decodeObject(t, body)
	if resp.StatusCode != 200 || h["isHealthy"] != true || get(h, "details", "kafka", "isHealthy") != true || get(h, "details", "metastore", "isHealthy") != true {
		t.Errorf("/healthcheck: %s %s", resp.Status, body)
	}

	users, err := rest.ParseUsers(strings.NewReader("# accounts\nalice:s3cret\nbob:sha256:" +
		"5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8\n")) // "password"
	if err != nil {
		t.Fatal(err)
	}
	a := newFixture(t, rest.WithUsers(users))
	resp, body = a.do("GET", "/info", nil)
	if resp.StatusCode != 401 || decodeObject(t, body)["error_code"] != 40100.0 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
		t.Errorf("/info without credentials: %s %s", resp.Status, body)
	}
	for _, c := range []struct {
		user, pass string
		status     int
	}{{"alice", "wrong", 401}, {"mallory", "s3cret", 401}, {"alice", "s3cret", 200}, {"bob", "password", 200}} {
		req, _ := http.NewRequest("POST", a.url+"/ksql", strings.NewReader(`{"ksql":"SHOW STREAMS;"}`))
		req.SetBasicAuth(c.user, c.pass)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s:%s: %s, want %d", c.user, c.pass, resp.Status, c.status)
		}
	}
	if resp, _ := a.do("GET", "/healthcheck", nil); resp.StatusCode != 200 {
		t.Errorf("/healthcheck needs no credentials, got %s", resp.Status)
	}
}

func TestParseUsersRejectsBadFiles(t *testing.T) {
	for _, bad := range []string{"", "# only comments\n", "nopassword\n", "a:\n", "a:x\na:y\n", "a:sha256:abc\n"} {
		if _, err := rest.ParseUsers(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseUsers(%q) succeeded", bad)
		}
	}
}

func TestRequireLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:8088": true, "[::1]:8088": true, "localhost:8088": true,
		":8088": false, "0.0.0.0:8088": false, "[::]:8088": false, "192.0.2.1:8088": false,
	} {
		if err := rest.RequireLoopback(addr); (err == nil) != ok {
			t.Errorf("RequireLoopback(%s) = %v", addr, err)
		}
	}
}

func TestMetricsServePerQueryCounters(t *testing.T) {
	f := newFixture(t)
	ents := f.ksql(`CREATE STREAM KM_SRC (ID INT KEY, V INT) WITH (KAFKA_TOPIC='km_src', VALUE_FORMAT='JSON', PARTITIONS=1);
		INSERT INTO KM_SRC (ID, V) VALUES (1, 10), (2, 20), (3, 30);
		CREATE STREAM KM_OUT AS SELECT ID, V * 2 AS V2 FROM KM_SRC;`, nil)
	qid := get(ents[1], "commandStatus", "queryId").(string)
	want := fmt.Sprintf(`sqlstreams_query_records_in_total{query_id=%q} 3`, qid)
	eventually(t, 30*time.Second, func() error {
		_, body := f.do("GET", "/metrics", nil)
		if !strings.Contains(string(body), want) {
			return fmt.Errorf("/metrics lacks %s", want)
		}
		for _, w := range []string{
			fmt.Sprintf(`sqlstreams_query_records_out_total{query_id=%q} 3`, qid),
			fmt.Sprintf(`sqlstreams_query_state{query_id=%q,state="RUNNING"} 1`, qid),
			`sqlstreams_http_requests_total{code="200",endpoint="/ksql"} 1`,
			`sqlstreams_active_push_queries`,
			"go_goroutines",
		} {
			if !strings.Contains(string(body), w) {
				return fmt.Errorf("/metrics lacks %s:\n%s", w, body)
			}
		}
		return nil
	})
}

// TestWindowedTableEntities: a windowed table is marked as such in SHOW
// TABLES (isWindowed) and DESCRIBE (windowType), as ksqlDB's clients read
// them.
func TestWindowedTableEntities(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM WIN_SRC (ID INT KEY, N INT) WITH (KAFKA_TOPIC='win_src', VALUE_FORMAT='JSON', PARTITIONS=1);
		CREATE TABLE WIN_T AS SELECT ID, COUNT(*) AS C FROM WIN_SRC WINDOW HOPPING (SIZE 10 SECONDS, ADVANCE BY 5 SECONDS) GROUP BY ID;`, nil)
	tables := f.ksql("SHOW TABLES;", nil)[0]
	found := false
	for _, s := range tables["tables"].([]any) {
		if get(s, "name") == f.sub("WIN_T") {
			found = get(s, "isWindowed") == true
		}
	}
	if !found {
		t.Errorf("SHOW TABLES does not list %s as windowed: %v", f.sub("WIN_T"), tables)
	}
	desc := f.ksql("DESCRIBE WIN_T;", nil)[0]
	if wt := get(desc, "sourceDescription", "windowType"); wt != "HOPPING" {
		t.Errorf("DESCRIBE windowType %v, want HOPPING", wt)
	}
	src := f.ksql("DESCRIBE WIN_SRC;", nil)[0]
	if wt := get(src, "sourceDescription", "windowType"); wt != nil {
		t.Errorf("DESCRIBE of a stream: windowType %v, want null", wt)
	}
}

// TestKSQLCommandsReportWhatTheyCreated checks the entities built from
// what the engine reports a statement did: the INSERT INTO … SELECT's
// own query ID, DROP's topic, and commandSequenceNumber, the command's
// offset, increasing with each recorded statement and -1 for one that
// recorded nothing.
func TestKSQLCommandsReportWhatTheyCreated(t *testing.T) {
	f := newFixture(t)
	ents := f.ksql(`CREATE STREAM RC_SRC (ID INT KEY, V INT) WITH (KAFKA_TOPIC='rc_src', VALUE_FORMAT='JSON', PARTITIONS=1);
		CREATE STREAM RC_DST AS SELECT * FROM RC_SRC;
		INSERT INTO RC_DST SELECT * FROM RC_SRC;
		CREATE STREAM IF NOT EXISTS RC_SRC (ID INT KEY) WITH (KAFKA_TOPIC='other', VALUE_FORMAT='JSON', PARTITIONS=1);`, nil)
	if len(ents) != 4 {
		t.Fatalf("got %d entities, want 4: %v", len(ents), ents)
	}
	last := -1.0
	for _, e := range ents[:3] {
		seq, _ := e["commandSequenceNumber"].(float64)
		if seq <= last {
			t.Errorf("commandSequenceNumber %v after %v: %v", e["commandSequenceNumber"], last, e)
		}
		last = seq
	}
	if seq := ents[3]["commandSequenceNumber"]; seq != -1.0 {
		t.Errorf("CREATE … IF NOT EXISTS of an existing stream: commandSequenceNumber %v, want -1", seq)
	}
	csas, _ := get(ents[1], "commandStatus", "queryId").(string)
	ins, _ := get(ents[2], "commandStatus", "queryId").(string)
	if !strings.HasPrefix(ins, "INSERTQUERY_") || ins == csas || get(ents[2], "commandStatus", "message") != "Created query with ID "+ins {
		t.Errorf("INSERT INTO … SELECT entity: %v (the CSAS is %s)", ents[2], csas)
	}
	var writers []string
	for _, q := range get(f.ksql("DESCRIBE RC_DST;", nil)[0], "sourceDescription", "writeQueries").([]any) {
		writers = append(writers, get(q, "id").(string))
	}
	if !slices.Contains(writers, ins) || !slices.Contains(writers, csas) {
		t.Errorf("writers of RC_DST %v, want %s and %s", writers, csas, ins)
	}
	f.ksql("TERMINATE "+ins+"; TERMINATE "+csas+";", nil)
	drop := f.ksql("DROP STREAM RC_DST;", nil)[0]
	if msg := get(drop, "commandStatus", "message"); msg != "Source `"+f.sub("RC_DST")+"` (topic: "+f.sub("RC_DST")+") was dropped." {
		t.Errorf("DROP entity message %q", msg)
	}
}

// TestStreamsPropertiesChecked: a request's streamsProperties go through
// the engine's property registry, as SET does: an unknown name is refused
// with ksqlDB's message, a bad value naming the property, on every
// endpoint that takes properties; a ksql.streams. name is its property.
func TestStreamsPropertiesChecked(t *testing.T) {
	f := newFixture(t)
	for _, c := range []struct {
		path string
		body map[string]any
		want string
	}{
		{"/ksql", map[string]any{"ksql": "SHOW STREAMS;", "streamsProperties": map[string]any{"no.such": "1"}},
			"Not recognizable as ksql, streams, consumer, or producer property: 'no.such'"},
		{"/ksql", map[string]any{"ksql": "SHOW STREAMS;", "streamsProperties": map[string]any{"ksql.streams.num.stream.threads": "zero"}},
			`ksql.streams.num.stream.threads must be a whole number from 1 to 64, not "zero"`},
		{"/query", map[string]any{"ksql": "SELECT 1;", "streamsProperties": map[string]any{"auto.offset.reset": "none"}},
			"'none' is not valid for this property within KSQL"},
		{"/query-stream", map[string]any{"sql": "SELECT 1;", "properties": map[string]any{"ksql.new.query.planner.enabled": true}},
			"Property 'ksql.new.query.planner.enabled' is not supported"},
	} {
		resp, body := f.do("POST", c.path, c.body)
		e := decodeObject(t, body)
		if resp.StatusCode != http.StatusBadRequest || e["error_code"] != 40000.0 || !strings.Contains(fmt.Sprint(e["message"]), c.want) {
			t.Errorf("%s %v: %s %s, want 400 with %q", c.path, c.body, resp.Status, body, c.want)
		}
	}
	props := f.ksql("SHOW PROPERTIES;", map[string]any{"ksql.streams.num.stream.threads": 3})[0]
	ok := false
	for _, p := range props["properties"].([]any) {
		ok = ok || get(p, "name") == "num.stream.threads" && get(p, "value") == "3"
	}
	if !ok || fmt.Sprint(props["overwrittenProperties"]) != "[num.stream.threads]" {
		t.Errorf("SHOW PROPERTIES with ksql.streams.num.stream.threads=3: %v", props)
	}
}
