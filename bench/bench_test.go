package main

import "testing"

// TestScenariosRun runs every scenario end to end on a small input, one run
// per system, with -verify: it fails if the harness breaks, if either
// pipeline stalls before committing the whole input, or if sqlstreams and
// the hand-written pipeline stop writing the same records.
func TestScenariosRun(t *testing.T) {
	*memory, *verify = true, true
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
	}
}
