package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/broker"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/metrics"
	"github.com/sqlstreams/sqlstreams/server/console"
	"github.com/sqlstreams/sqlstreams/server/rest"
	"github.com/sqlstreams/sqlstreams/types"
)

// The tests share one embedded broker, one engine and one REST server
// with the console mounted as the binary mounts it; each test uses its
// own streams.
var (
	testEngine *engine.Engine
	testURL    string
	testHist   *metrics.History
	testBroker string
	testReg    *metrics.Registry
)

func TestMain(m *testing.M) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	b, err := broker.Start(ctx, broker.Config{Addr: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the broker:", err)
		os.Exit(1)
	}
	stateDir, err := os.MkdirTemp("", "console-test-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	reg := metrics.New()
	eng, err := engine.Open(ctx, engine.Config{
		Kafka: kafka.Plain(b.Addr()), ServiceID: "consoletest", InstanceID: "console-test",
		CommitInterval: 50 * time.Millisecond, Logger: quiet, StateDir: stateDir, Metrics: reg,
	})
	cancel()
	if err != nil {
		b.Close()
		fmt.Fprintln(os.Stderr, "opening the engine:", err)
		os.Exit(1)
	}
	// Sampled often so that the charts move within the test.
	testHist = metrics.NewHistory(reg, 300*time.Millisecond, 0)
	histCtx, stopHist := context.WithCancel(context.Background())
	go testHist.Run(histCtx)
	web := console.New(eng, testHist)
	srv := rest.New(eng, rest.WithLogger(quiet), rest.WithMetrics(reg),
		rest.WithHandler(console.Index, false, web), rest.WithHandler(console.Prefix, true, web))
	hs := httptest.NewServer(srv)
	testEngine, testURL, testBroker, testReg = eng, hs.URL, b.Addr(), reg
	code := m.Run()
	srv.Close()
	hs.Close()
	stopHist()
	eng.Close()
	b.Close()
	os.RemoveAll(stateDir)
	os.Exit(code)
}

// exec runs statements on the engine.
func exec(t *testing.T, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := testEngine.Execute(context.Background(), engine.NewSession(), s, discard{}); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

type discard struct{}

func (discard) Columns([]types.Column) error { return nil }
func (discard) Row(types.Row) error          { return nil }

func get(t *testing.T, path string, v any) (int, string) {
	t.Helper()
	resp, err := http.Get(testURL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if v != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
	return resp.StatusCode, string(body)
}

func TestPageAndAssetsAreServed(t *testing.T) {
	code, body := get(t, "/", nil)
	if code != http.StatusOK || !strings.Contains(body, `<script type="module" src="/console/assets/app.js">`) {
		t.Fatalf("GET / = %d %q", code, body)
	}
	for _, a := range []string{"app.js", "editor.js", "sql.js", "chart.js", "graph.js", "style.css"} {
		if code, body := get(t, "/console/assets/"+a, nil); code != http.StatusOK || len(body) < 100 {
			t.Errorf("GET %s = %d (%d bytes)", a, code, len(body))
		}
	}
	// The API stays where it was.
	if code, body := get(t, "/info", nil); code != http.StatusOK || !strings.Contains(body, "KsqlServerInfo") {
		t.Errorf("GET /info = %d %q", code, body)
	}
	if code, _ := get(t, "/console/api/nope", nil); code != http.StatusNotFound {
		t.Errorf("unknown console endpoint answered %d", code)
	}
}

func TestCatalogQueriesPlanAndCompletions(t *testing.T) {
	exec(t,
		"CREATE STREAM api_clicks (user_id VARCHAR KEY, url VARCHAR, n INT) WITH (KAFKA_TOPIC='api_clicks', VALUE_FORMAT='JSON', PARTITIONS=2)",
		"CREATE TABLE api_counts AS SELECT user_id, COUNT(*) AS c FROM api_clicks GROUP BY user_id EMIT CHANGES",
	)
	var cat []struct {
		Name        string `json:"name"`
		Kind        string `json:"kind"`
		Topic       string `json:"topic"`
		Partitions  int    `json:"partitions"`
		KeyFormat   string `json:"keyFormat"`
		ValueFormat string `json:"valueFormat"`
		Columns     []struct {
			Name string `json:"name"`
			Type string `json:"type"`
			Key  bool   `json:"key"`
		} `json:"columns"`
	}
	get(t, "/console/api/catalog", &cat)
	found := false
	for _, s := range cat {
		if s.Name == "API_CLICKS" {
			found = true
			if s.Kind != "STREAM" || s.Topic != "api_clicks" || s.Partitions != 2 || s.ValueFormat != "JSON" ||
				len(s.Columns) != 3 || !s.Columns[0].Key || s.Columns[0].Name != "USER_ID" || s.Columns[1].Key {
				t.Errorf("API_CLICKS = %+v", s)
			}
		}
	}
	if !found {
		t.Fatalf("catalog lacks API_CLICKS: %+v", cat)
	}
	var src struct {
		Extended [][]string `json:"extended"`
		Readers  []struct {
			ID string `json:"id"`
		} `json:"readers"`
	}
	get(t, "/console/api/source?name=API_CLICKS", &src)
	if len(src.Readers) != 1 || len(src.Extended) == 0 || src.Extended[0][0] != "name" {
		t.Errorf("source API_CLICKS = %+v", src)
	}
	var qs []struct {
		ID    string `json:"id"`
		Sink  string `json:"sink"`
		State string `json:"state"`
	}
	get(t, "/console/api/queries", &qs)
	var id string
	for _, q := range qs {
		if q.Sink == "API_COUNTS" {
			id = q.ID
			if q.State != "RUNNING" && q.State != "RESTORING" {
				t.Errorf("query %s state %s", q.ID, q.State)
			}
		}
	}
	if id == "" {
		t.Fatalf("queries lack the one writing API_COUNTS: %+v", qs)
	}
	// A store being restored shows the query RESTORING with its progress.
	testReg.Query(id).SetRestore("console-test-store", 99, 5, 10)
	testHist.Sample(time.Now())
	var restoring []struct {
		ID     string         `json:"id"`
		State  string         `json:"state"`
		Latest *metrics.Point `json:"latest"`
	}
	get(t, "/console/api/queries", &restoring)
	for _, q := range restoring {
		if q.ID == id && (q.State != "RESTORING" || q.Latest == nil || q.Latest.RestoreTotal-q.Latest.Restored != 5) {
			t.Errorf("query %s while restoring: %s %+v", id, q.State, q.Latest)
		}
	}
	testReg.Query(id).SetRestore("console-test-store", 99, 10, 10)
	testHist.Sample(time.Now())

	var plan struct {
		Graph engine.Graph `json:"graph"`
		Text  string       `json:"text"`
	}
	get(t, "/console/api/plan?id="+id, &plan)
	// A GROUP BY on the key: one sub-topology reading api_clicks, an
	// aggregate with its store and changelog, a sink.
	kinds := map[string]bool{}
	for _, st := range plan.Graph.SubTopologies {
		for _, n := range st.Nodes {
			kinds[n.Kind] = true
			if n.Kind == "Source" && n.ReadsTopic != "api_clicks" && !n.Repartition {
				t.Errorf("source reads %q", n.ReadsTopic)
			}
		}
	}
	if !kinds["Source"] || !kinds["Aggregate"] || !kinds["Sink"] || len(plan.Graph.Stores) == 0 ||
		!strings.HasSuffix(plan.Graph.Stores[0].Changelog, "-changelog") || !strings.Contains(plan.Text, "Topology:") {
		t.Errorf("plan graph = %+v", plan.Graph)
	}
	var words engine.Completions
	get(t, "/console/api/completions", &words)
	has := func(list []string, w string) bool {
		for _, x := range list {
			if x == w {
				return true
			}
		}
		return false
	}
	if !has(words.Keywords, "SELECT") || !has(words.Functions, "COUNT") {
		t.Errorf("completions lack SELECT or COUNT: %d keywords, %d functions", len(words.Keywords), len(words.Functions))
	}
	ok := false
	for _, s := range words.Sources {
		ok = ok || s.Name == "API_CLICKS" && len(s.Columns) == 3
	}
	if !ok {
		t.Errorf("completions lack API_CLICKS and its columns: %+v", words.Sources)
	}
	exec(t, "TERMINATE "+id)
}

func TestConsoleNeedsTheAPIsCredentials(t *testing.T) {
	users, err := rest.ParseUsers(strings.NewReader("ann:secret\n"))
	if err != nil {
		t.Fatal(err)
	}
	web := console.New(testEngine, testHist)
	srv := rest.New(testEngine, rest.WithUsers(users),
		rest.WithHandler(console.Index, false, web), rest.WithHandler(console.Prefix, true, web))
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()
	for _, path := range []string{"/", "/console/assets/app.js", "/console/api/catalog"} {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s without credentials = %d", path, resp.StatusCode)
		}
		req, _ := http.NewRequest(http.MethodGet, hs.URL+path, nil)
		req.SetBasicAuth("ann", "secret")
		if resp, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s with credentials = %d", path, resp.StatusCode)
		}
	}
}
