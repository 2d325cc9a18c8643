package main

import "testing"

// TestScenariosRun runs every scenario end to end on a small input, one run
// per system, so a change that breaks the harness (or either pipeline
// stalling before it commits the whole input) fails the suite.
func TestScenariosRun(t *testing.T) {
	*memory = true
	for _, sc := range scenarios {
		res, err := runScenario(sc, 20_000, 1)
		if err != nil {
			t.Fatalf("%s: %v", sc, err)
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
