package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScenariosRun runs every scenario end to end on a small input, one run
// per system, with -verify: it fails if the harness breaks, if either
// pipeline stalls before committing the whole input, or if sqlstreams and
// the hand-written pipeline stop writing the same records. Then it checks
// both report forms: the markdown table and the -json object.
func TestScenariosRun(t *testing.T) {
	*memory, *verify = true, true
	var results []result
	for _, sc := range scenarios {
		res, err := runScenario(sc, 20_000, 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.SQLRPS <= 0 || res.HandRPS <= 0 || res.Ratio <= 0 {
			t.Errorf("%s: rates not measured: %+v", sc, res)
		}
		if len(res.SQLRuns) != 1 || len(res.HandRuns) != 1 {
			t.Errorf("%s: want one run per system, got %+v", sc, res)
		}
		if res.SQLCPU <= 0 || res.HandCPU <= 0 {
			t.Errorf("%s: CPU not measured: %+v", sc, res)
		}
		results = append(results, res)
	}

	var md bytes.Buffer
	if err := report(&md, results, false); err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		if !strings.Contains(md.String(), "| "+sc+" | 20000 | ") {
			t.Errorf("markdown report lacks a %s row:\n%s", sc, md.String())
		}
	}

	var js bytes.Buffer
	if err := report(&js, results, true); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Scenarios []map[string]any `json:"scenarios"`
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatalf("-json output is not one JSON object: %v\n%s", err, js.String())
	}
	if len(got.Scenarios) != len(scenarios) {
		t.Fatalf("-json has %d scenarios, want %d", len(got.Scenarios), len(scenarios))
	}
	for i, s := range got.Scenarios {
		if s["name"] != scenarios[i] || s["records"] != float64(20_000) {
			t.Errorf("-json scenario %d: %v", i, s)
		}
		for _, k := range []string{"sqlstreams_rps", "handwritten_rps", "ratio", "median_ratio", "sqlstreams_cpu_s_per_m", "handwritten_cpu_s_per_m", "sqlstreams_peak_rss_mb"} {
			if v, ok := s[k].(float64); !ok || v <= 0 {
				t.Errorf("-json scenario %s: %s = %v", s["name"], k, s[k])
			}
		}
	}
}

// TestMain makes the test binary serve as the benchmark's broker process
// when it is started as one.
func TestMain(m *testing.M) {
	if spec := os.Getenv(brokerEnv); spec != "" {
		serveBroker(spec)
		return
	}
	os.Exit(m.Run())
}

// TestJoinScenariosRun runs the join scenarios (selectable with
// -scenario, not in the default list) end to end on a small input, one
// run per system, with -verify: both pipelines commit the whole input of
// both topics and write the same records.
func TestJoinScenariosRun(t *testing.T) {
	*memory, *verify = true, true
	for _, sc := range []string{"join-st", "join-ss"} {
		res, err := runScenario(sc, 20_000, 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.SQLRPS <= 0 || res.HandRPS <= 0 || res.SQLCPU <= 0 || res.HandCPU <= 0 {
			t.Errorf("%s: not measured: %+v", sc, res)
		}
	}
}

// TestNexmarkRuns runs the nexmark scenario tiny (a few thousand events;
// a stateless query with the hand-written q1 beside it, a join of tables
// and an aggregate with a repartition): every query must consume its
// whole input, its CPU and RSS be measured, the stateful ones report
// their changelog and store, and the table list every query.
func TestNexmarkRuns(t *testing.T) {
	*memory, *verify = true, true // the hand-written q1 writes what sqlstreams' does
	*nexQueries = "q1,q3,q17"
	defer func() { *nexQueries = "" }()
	rs, err := runNexmark(4000)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("want 3 results, got %+v", rs)
	}
	for _, r := range rs {
		if r.EventsPerS <= 0 || r.CPUPerM <= 0 || r.PerCore <= 0 || r.RSSMB <= 0 || r.InputRecords <= 0 || r.Flink <= 0 || r.Ratio <= 0 {
			t.Errorf("%s: not measured: %+v", r.Query, r)
		}
	}
	if rs[0].HandRSSMB <= 0 || rs[0].HandCPUPerM <= 0 {
		t.Errorf("q1: hand-written pipeline not measured: %+v", rs[0])
	}
	if rs[0].InputRecords >= 4000 || rs[1].InputRecords >= rs[0].InputRecords {
		t.Errorf("inputs: q1 reads the bids only, q3 persons and auctions: %+v", rs)
	}
	for _, r := range rs[1:] {
		if r.ChangelogRecords <= 0 || r.ChangelogBytesPerEvent <= 0 || r.StoreMB <= 0 {
			t.Errorf("%s: state not measured: %+v", r.Query, r)
		}
	}
	var md bytes.Buffer
	if err := reportNexmark(&md, rs, false); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"q1", "q3", "q17"} {
		if !strings.Contains(md.String(), "| "+q+" | 4000 | ") {
			t.Errorf("table lacks %s:\n%s", q, md.String())
		}
	}
	if !strings.Contains(md.String(), "q1 hand-written franz-go") {
		t.Errorf("table lacks the hand-written q1:\n%s", md.String())
	}
}

// TestNexmarkInputsFound: the bench finds the topics every query of
// tests/nexmark reads (a window table function's TABLE input, a comma
// join's second source included), so that none is refused as reading
// nothing and each one's input records count what it reads.
func TestNexmarkInputsFound(t *testing.T) {
	dir, err := nexmarkDir()
	if err != nil {
		t.Fatal(err)
	}
	qs, err := nexmarkQueries(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"q5": "[bids]", "q4": "[bids auctions]", "q13": "[bids side_input]", "q3": "[auctions persons]"}
	for _, q := range qs {
		text, err := os.ReadFile(filepath.Join(dir, q+".sql"))
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(nexInputs(string(text)))
		if got == "[]" || want[q] != "" && got != want[q] {
			t.Errorf("%s reads %s, want %s", q, got, cmp.Or(want[q], "some input"))
		}
	}
	if len(qs) != 23 {
		t.Errorf("%d queries in %s, want the suite's 23", len(qs), dir)
	}
}
