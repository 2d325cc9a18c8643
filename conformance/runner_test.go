package conformance

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/sql"
)

// TestRunnerForm runs this repository's ksql-test-runner examples
// (testdata/runner/<name>/statements.sql, input.json, output.json, in the
// shape of ksqlDB's test-runner/ examples) and wants each to pass.
func TestRunnerForm(t *testing.T) {
	dirs, err := filepath.Glob("testdata/runner/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no runner examples: %v", err)
	}
	var cases []Case
	for _, d := range dirs {
		c, err := LoadRunner(filepath.Join(d, "statements.sql"), filepath.Join(d, "input.json"), filepath.Join(d, "output.json"), sql.Split)
		if err != nil {
			t.Fatal(err)
		}
		c.Name = filepath.Base(d)
		cases = append(cases, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, r := range Run(ctx, cases, Options{Parallel: 2, Timeout: 60 * time.Second}) {
		if r.Status != Pass {
			t.Errorf("%s: %s (%s)\n%s", r.Name, r.Status, r.Reason, r.Detail)
		}
	}
}
