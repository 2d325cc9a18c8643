package main

import (
	"bytes"
	"encoding/json"
	"os"
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
