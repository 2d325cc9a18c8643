package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
	"github.com/sqlstreams/sqlstreams/server/rest"
)

var earliest = map[string]any{"auto.offset.reset": "earliest"}

func TestQueryStreamPushStreamsRowsAndEndsOnDisconnect(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM QS_SRC (ID INT KEY, NAME STRING, TS TIMESTAMP)
		WITH (KAFKA_TOPIC='qs_src', VALUE_FORMAT='JSON', PARTITIONS=1);
		INSERT INTO QS_SRC (ID, NAME, TS) VALUES (1, 'ann', '2024-02-29T13:14:15.123');
		INSERT INTO QS_SRC (ID, NAME, TS) VALUES (2, 'bob', NULL);`, nil)

	s := f.openStream("/query-stream", map[string]any{"sql": "SELECT * FROM QS_SRC EMIT CHANGES;", "properties": earliest})
	if s.resp.StatusCode != 200 || s.resp.Header.Get("Content-Type") != "application/vnd.ksqlapi.delimited.v1" {
		t.Fatalf("got %s, %s", s.resp.Status, s.resp.Header.Get("Content-Type"))
	}
	var h struct {
		QueryID     string   `json:"queryId"`
		ColumnNames []string `json:"columnNames"`
		ColumnTypes []string `json:"columnTypes"`
	}
	line := s.line(10 * time.Second)
	if err := json.Unmarshal([]byte(line), &h); err != nil || h.QueryID == "" ||
		fmt.Sprint(h.ColumnNames) != "[ID NAME TS]" || fmt.Sprint(h.ColumnTypes) != "[INTEGER STRING TIMESTAMP]" {
		t.Fatalf("header %q: %v", line, err)
	}
	for _, want := range []string{`[1,"ann","2024-02-29T13:14:15.123"]`, `[2,"bob",null]`} {
		if got := s.line(15 * time.Second); got != want {
			t.Fatalf("row %s, want %s", got, want)
		}
	}
	// A row inserted while the query runs streams to the client.
	f.ksql("INSERT INTO QS_SRC (ID, NAME) VALUES (3, 'cy');", nil)
	if got := s.line(15 * time.Second); got != `[3,"cy",null]` {
		t.Fatalf("live row %s", got)
	}
	if n := f.srv.ActivePushQueries(); n != 1 {
		t.Fatalf("%d push queries running, want 1", n)
	}
	_, body := f.do("GET", "/metrics", nil)
	if !strings.Contains(string(body), `sqlstreams_active_push_queries{server="rest"} 1`) {
		t.Error("/metrics does not count the running push query")
	}

	// The client goes away: the push query ends.
	s.close()
	eventually(t, 10*time.Second, func() error {
		if n := f.srv.ActivePushQueries(); n != 0 {
			return fmt.Errorf("%d push queries still running after the client disconnected", n)
		}
		return nil
	})
	_, body = f.do("GET", "/metrics", nil)
	if !strings.Contains(string(body), `sqlstreams_active_push_queries{server="rest"} 0`) {
		t.Error("/metrics still counts the ended push query")
	}
}

func TestQueryStreamJSONArrayAndCloseQuery(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM QJ_SRC (ID INT KEY, V DECIMAL(4, 2), TAGS ARRAY<STRING>, M MAP<STRING, INT>, S STRUCT<A INT, B STRING>)
		WITH (KAFKA_TOPIC='qj_src', VALUE_FORMAT='JSON', PARTITIONS=1);
		INSERT INTO QJ_SRC (ID, V, TAGS, M, S) VALUES (1, 12.5, ARRAY['x', 'y'], MAP('k' := 1), STRUCT(A := 7, B := 'b'));
		INSERT INTO QJ_SRC (ID, V) VALUES (2, 0.25);`, nil)

	resp, body := f.do("POST", "/query-stream", map[string]any{
		"sql": "SELECT * FROM QJ_SRC EMIT CHANGES LIMIT 2;", "properties": earliest,
	}, "Accept", "application/json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s %s: %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	var all []json.RawMessage
	if err := json.Unmarshal(body, &all); err != nil || len(all) != 3 {
		t.Fatalf("want [header, row, row], got %s (%v)", body, err)
	}
	if got := string(all[1]); got != `[1,12.50,["x","y"],{"k":1},{"A":7,"B":"b"}]` {
		t.Errorf("row 1: %s", got)
	}
	if got := string(all[2]); got != `[2,0.25,null,null,null]` {
		t.Errorf("row 2: %s", got)
	}
	if !strings.Contains(string(all[0]), `"columnTypes":["INTEGER","DECIMAL(4, 2)","ARRAY\u003cSTRING\u003e","MAP\u003cSTRING, INTEGER\u003e","STRUCT\u003c`+"`A`"+` INTEGER, `+"`B`"+` STRING\u003e"]`) &&
		!strings.Contains(string(all[0]), `"columnTypes":["INTEGER","DECIMAL(4, 2)","ARRAY<STRING>","MAP<STRING, INTEGER>","STRUCT<`+"`A`"+` INTEGER, `+"`B`"+` STRING>"]`) {
		t.Errorf("header: %s", all[0])
	}

	// /close-query ends a push query; its JSON array is then complete.
	s := f.openStream("/query-stream", map[string]any{"sql": "SELECT ID FROM QJ_SRC EMIT CHANGES;", "properties": earliest},
		"Accept", "application/json")
	var h struct{ QueryID string }
	first := make([]byte, 0, 256)
	for !strings.Contains(string(first), "}") {
		b := make([]byte, 1)
		if _, err := s.lines.Read(b); err != nil {
			t.Fatalf("reading the header: %v", err)
		}
		first = append(first, b...)
	}
	if err := json.Unmarshal(first[1:], &h); err != nil || h.QueryID == "" {
		t.Fatalf("header %s: %v", first, err)
	}
	if resp, body := f.do("POST", "/close-query", map[string]any{"queryId": h.QueryID}); resp.StatusCode != 200 {
		t.Fatalf("/close-query: %s %s", resp.Status, body)
	}
	done := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(s.lines); done <- b }()
	select {
	case rest := <-done:
		doc := append(first, rest...)
		var elems []json.RawMessage
		if err := json.Unmarshal(doc, &elems); err != nil {
			t.Errorf("closed query's response is not a JSON array: %s (%v)", doc, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the response did not end after /close-query")
	}
}

func TestQueryEndpointAndPrint(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM QL_SRC (ID INT KEY, NAME STRING) WITH (KAFKA_TOPIC='ql_src', VALUE_FORMAT='JSON', PARTITIONS=1);
		INSERT INTO QL_SRC (ID, NAME) VALUES (1, 'a'), (2, 'b'), (3, 'c');`, nil)
	resp, body := f.do("POST", "/query", map[string]any{
		"ksql":              "SELECT NAME, ID FROM QL_SRC EMIT CHANGES LIMIT 2;",
		"streamsProperties": map[string]any{"ksql.streams.auto.offset.reset": "earliest"},
	}, "Accept", "application/vnd.ksql.v1+json")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.ksql.v1+json" {
		t.Fatalf("%s %s: %s", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	var elems []map[string]any
	if err := json.Unmarshal(body, &elems); err != nil || len(elems) != 4 {
		t.Fatalf("want [header, row, row, finalMessage], got %s (%v)", body, err)
	}
	if get(elems[0], "header", "schema") != "`NAME` STRING, `ID` INTEGER" || get(elems[0], "header", "queryId") == "" ||
		fmt.Sprint(get(elems[1], "row", "columns")) != "[a 1]" || fmt.Sprint(get(elems[2], "row", "columns")) != "[b 2]" ||
		elems[3]["finalMessage"] != "Limit Reached" {
		t.Errorf("/query: %s", body)
	}

	resp, body = f.do("POST", "/query", map[string]any{"ksql": "PRINT 'ql_src' FROM BEGINNING LIMIT 2;"})
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	if resp.StatusCode != 200 || len(lines) != 2 || !strings.HasPrefix(lines[0], "rowtime: ") ||
		!strings.Contains(lines[0], `, key: 0x00000001, value: {"NAME":"a"}, partition: 0, offset: 0`) {
		t.Errorf("PRINT on /query: %s %q", resp.Status, body)
	}

	resp, body = f.do("POST", "/query", map[string]any{"ksql": "SHOW STREAMS;"})
	if e := decodeObject(t, body); resp.StatusCode != 400 || e["error_code"] != 40001.0 {
		t.Errorf("SHOW on /query: %s %s", resp.Status, body)
	}
}

func TestInsertsStream(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM IS_DST (ID INT KEY, NAME STRING, PRICE DECIMAL(6, 2), AT TIMESTAMP, TAGS ARRAY<STRING>,
		M MAP<STRING, DOUBLE>, S STRUCT<A INT, B STRING>, RAW BYTES, OK BOOLEAN)
		WITH (KAFKA_TOPIC='is_dst', VALUE_FORMAT='JSON', PARTITIONS=1);`, nil)

	// Acks come back while the request is still being written.
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(testCtx(t, 30*time.Second), "POST", f.url+"/inserts-stream", pr)
	respc := make(chan *http.Response, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			close(respc)
			return
		}
		respc <- resp
	}()
	fmt.Fprintln(pw, f.sub(`{"target": "is_dst"}`))
	fmt.Fprintln(pw, `{"ID": 1, "NAME": "it's a \\ test", "PRICE": 12.5, "AT": "2024-02-29T13:14:15.123", "TAGS": ["x"], "M": {"k": 1.5}, "S": {"a": 7}, "RAW": "AQI=", "OK": true}`)
	resp := <-respc
	if resp == nil {
		t.FailNow()
	}
	defer resp.Body.Close()
	s := &stream{t: t, resp: resp, lines: newLineReader(resp.Body), cancel: func() {}}
	if got := s.line(10 * time.Second); got != `{"status":"ok","seq":0}` {
		t.Fatalf("first ack %s", got)
	}
	fmt.Fprintln(pw, `{"id": 2, "name": "lower-case keys", "at": 1709212455123}`) // keys are case-insensitive; epoch ms
	fmt.Fprintln(pw, `{"ID": 3, "PRICE": "abc"}`)                                 // not a number
	fmt.Fprintln(pw, `{"ID": 4, "NOPE": 1}`)                                      // no such column
	fmt.Fprintln(pw, `{"ID": 5, "TAGS": "x"}`)                                    // not an array
	fmt.Fprintln(pw, `{"ID": 6, "NAME": "last"}`)
	pw.Close()
	for i, want := range []string{
		`{"status":"ok","seq":1}`,
		`{"status":"error","seq":2,"error_code":40001,"message":"column PRICE: cannot use JSON string as DECIMAL(6, 2)"}`,
		f.sub(`{"status":"error","seq":3,"error_code":40001,"message":"column NOPE does not exist in IS_DST"}`),
		`{"status":"error","seq":4,"error_code":40001,"message":"column TAGS: cannot use JSON string as ARRAY<STRING>"}`,
		`{"status":"ok","seq":5}`,
	} {
		if got := s.line(10 * time.Second); got != want {
			t.Errorf("ack %d: %s, want %s", i+1, got, want)
		}
	}

	// The rows landed with their values.
	resp2, body := f.do("POST", "/query-stream", map[string]any{
		"sql": "SELECT ID, NAME, PRICE, AT, TAGS, M, S, RAW, OK FROM IS_DST EMIT CHANGES LIMIT 3;", "properties": earliest,
	})
	lines := strings.Split(strings.TrimSpace(string(body)), "\n")
	want := []string{
		`[1,"it's a \\ test",12.50,"2024-02-29T13:14:15.123",["x"],{"k":1.5},{"A":7,"B":null},"AQI=",true]`,
		`[2,"lower-case keys",null,"2024-02-29T13:14:15.123",null,null,null,null,null]`,
		`[6,"last",null,null,null,null,null,null,null]`,
	}
	if resp2.StatusCode != 200 || len(lines) != 4 || fmt.Sprint(lines[1:]) != fmt.Sprint(want) {
		t.Errorf("inserted rows:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}

	// Malformed JSON ends the stream with an error for that row; JSON
	// acks come as one array when asked for.
	resp3, body := f.do("POST", "/inserts-stream", "{\"target\":\"IS_DST\"}\n{\"ID\": 7}\n{not json\n{\"ID\": 8}\n", "Accept", "application/json")
	var acks []map[string]any
	if err := json.Unmarshal(body, &acks); err != nil || resp3.StatusCode != 200 || len(acks) != 2 ||
		acks[0]["status"] != "ok" || acks[1]["status"] != "error" || acks[1]["seq"] != 1.0 || acks[1]["error_code"] != 40000.0 {
		t.Errorf("malformed row: %s %s (%v)", resp3.Status, body, err)
	}
	_, metrics := f.do("GET", "/metrics", nil)
	if !strings.Contains(string(metrics), `sqlstreams_inserts_stream_rows_total{status="ok"} 4`) ||
		!strings.Contains(string(metrics), `sqlstreams_inserts_stream_rows_total{status="error"} 4`) {
		t.Errorf("/metrics does not count the inserted rows")
	}
}

// TestCurlScript drives /ksql and /query-stream with curl, as ksqlDB's
// documentation does (testdata/curl.sh).
func TestCurlScript(t *testing.T) {
	testtool.Need(t, "curl", "apt-get install curl")
	f := newFixture(t)
	cmd := exec.CommandContext(testCtx(t, 60*time.Second), "bash", "testdata/curl.sh", f.url, f.suffix)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("testdata/curl.sh: %v\n%s", err, out)
	}
}

func TestTablesAndPullQueries(t *testing.T) {
	f := newFixture(t)
	ents := f.ksql(`CREATE TABLE PT_USERS (ID INT PRIMARY KEY, NAME STRING)
		WITH (KAFKA_TOPIC='pt_users', VALUE_FORMAT='JSON', PARTITIONS=1);
		INSERT INTO PT_USERS (ID, NAME) VALUES (1, 'ann'), (2, 'bob'), (1, 'anne');
		SHOW TABLES;`, nil)
	if ents[0]["commandId"] != f.sub("table/PT_USERS/create") || get(ents[0], "commandStatus", "message") != "Table created" ||
		ents[1]["@type"] != "tables" {
		t.Fatalf("CREATE TABLE, SHOW TABLES: %v", ents)
	}
	found := false
	for _, tb := range ents[1]["tables"].([]any) {
		found = found || get(tb, "name") == f.sub("PT_USERS") && get(tb, "type") == "TABLE"
	}
	if !found {
		t.Errorf("SHOW TABLES lacks PT_USERS: %v", ents[1])
	}

	// A pull query: no queryId, the table's current rows, then the end.
	eventually(t, 30*time.Second, func() error {
		resp, body := f.do("POST", "/query-stream", map[string]any{"sql": "SELECT * FROM PT_USERS WHERE ID = 1;"})
		lines := strings.Split(strings.TrimSpace(string(body)), "\n")
		if resp.StatusCode != 200 || len(lines) != 2 || lines[1] != `[1,"anne"]` {
			return fmt.Errorf("pull query: %s %s", resp.Status, body)
		}
		if strings.Contains(lines[0], "queryId") || !strings.Contains(lines[0], `"columnNames":["ID","NAME"]`) {
			return fmt.Errorf("pull query header: %s", lines[0])
		}
		return nil
	})
	// On /query a table's pull query answers the header and the rows,
	// with no final message, as ksqlDB's does (RQTT's pull-query files).
	resp, body := f.do("POST", "/query", map[string]any{"ksql": "SELECT NAME FROM PT_USERS;"})
	var elems []map[string]any
	if err := json.Unmarshal(body, &elems); err != nil || resp.StatusCode != 200 || len(elems) != 3 ||
		elems[0]["header"] == nil || elems[1]["row"] == nil || elems[2]["row"] == nil {
		t.Errorf("pull query on /query: %s %s (%v)", resp.Status, body, err)
	}
	if f.srv.ActivePushQueries() != 0 {
		t.Error("a pull query counts as a push query")
	}
}

// TestHTTP2Cleartext runs a push query and an inserts stream over HTTP/2
// without TLS (prior knowledge), as ksqlDB's Java client does; the server
// binary serves the same protocols.
func TestHTTP2Cleartext(t *testing.T) {
	srv := rest.New(testEngine)
	hs := httptest.NewUnstartedServer(srv)
	hs.Config.Protocols = new(http.Protocols)
	hs.Config.Protocols.SetHTTP1(true)
	hs.Config.Protocols.SetUnencryptedHTTP2(true)
	hs.Start()
	t.Cleanup(func() { srv.Close(); hs.Close() })
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: tr}
	t.Cleanup(tr.CloseIdleConnections)
	f := &fixture{t: t, srv: srv, url: hs.URL, suffix: runSuffix(t)}
	f.ksql(`CREATE STREAM H2_SRC (ID INT KEY, V STRING) WITH (KAFKA_TOPIC='h2_src', VALUE_FORMAT='JSON', PARTITIONS=1);`, nil)

	// Inserts and their acks interleave on one HTTP/2 stream.
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(testCtx(t, 30*time.Second), "POST", hs.URL+"/inserts-stream", pr)
	go fmt.Fprintln(pw, f.sub(`{"target":"H2_SRC"}`)+"\n"+`{"ID":1,"V":"a"}`)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Fatalf("served over %s, want HTTP/2", resp.Proto)
	}
	acks := &stream{t: t, resp: resp, lines: newLineReader(resp.Body), cancel: func() {}}
	if got := acks.line(10 * time.Second); got != `{"status":"ok","seq":0}` {
		t.Fatalf("ack %s", got)
	}
	fmt.Fprintln(pw, `{"ID":2,"V":"b"}`)
	if got := acks.line(10 * time.Second); got != `{"status":"ok","seq":1}` {
		t.Fatalf("ack %s", got)
	}
	pw.Close()

	// A push query streams over HTTP/2 and ends when the client resets
	// its stream.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"sql": "SELECT V FROM H2_SRC EMIT CHANGES;", "properties": {"auto.offset.reset": "earliest"}}`
	qreq, _ := http.NewRequestWithContext(ctx, "POST", hs.URL+"/query-stream", strings.NewReader(f.sub(body)))
	qresp, err := client.Do(qreq)
	if err != nil {
		t.Fatal(err)
	}
	defer qresp.Body.Close()
	q := &stream{t: t, resp: qresp, lines: newLineReader(qresp.Body), cancel: cancel}
	q.line(10 * time.Second) // header
	if a, b := q.line(10*time.Second), q.line(10*time.Second); a != `["a"]` || b != `["b"]` {
		t.Fatalf("rows %s %s", a, b)
	}
	cancel()
	eventually(t, 10*time.Second, func() error {
		if n := srv.ActivePushQueries(); n != 0 {
			return fmt.Errorf("%d push queries still running after the stream was reset", n)
		}
		return nil
	})
}

func TestPushQueryLimit(t *testing.T) {
	f := newFixture(t, rest.WithMaxPushQueries(1))
	f.ksql(`CREATE STREAM PL_SRC (ID INT KEY, NAME STRING, TS TIMESTAMP) WITH (KAFKA_TOPIC='pl_src', VALUE_FORMAT='JSON', PARTITIONS=1);`, nil)
	s := f.openStream("/query-stream", map[string]any{"sql": "SELECT * FROM PL_SRC EMIT CHANGES;"})
	s.line(10 * time.Second)
	resp, body := f.do("POST", "/query-stream", map[string]any{"sql": "SELECT * FROM PL_SRC EMIT CHANGES;"})
	if e := decodeObject(t, body); resp.StatusCode != 400 || e["error_code"] != 40003.0 {
		t.Errorf("a push query over the limit: %s %s", resp.Status, body)
	}
}

// TestPushQueryEndsWithAMessageOnClose: when the server drains (Close), a
// running push query's response ends with an error element saying so,
// not as a completed query.
func TestPushQueryEndsWithAMessageOnClose(t *testing.T) {
	f := newFixture(t)
	f.ksql(`CREATE STREAM QD_SRC (ID INT KEY, V STRING) WITH (KAFKA_TOPIC='qd_src', VALUE_FORMAT='JSON', PARTITIONS=1);
		INSERT INTO QD_SRC (ID, V) VALUES (1, 'a');`, nil)
	s := f.openStream("/query-stream", map[string]any{"sql": "SELECT * FROM QD_SRC EMIT CHANGES;", "properties": earliest})
	defer s.close()
	s.line(10 * time.Second) // header
	if got := s.line(15 * time.Second); got != `[1,"a"]` {
		t.Fatalf("row %s", got)
	}
	f.srv.Close()
	var last struct {
		Type      string `json:"@type"`
		ErrorCode int    `json:"error_code"`
		Message   string `json:"message"`
	}
	line := s.line(10 * time.Second)
	if err := json.Unmarshal([]byte(line), &last); err != nil || last.ErrorCode != 50300 || !strings.Contains(last.Message, "shutting down") {
		t.Fatalf("last element %q (%v), want a 50300 error saying the server is shutting down", line, err)
	}
}
