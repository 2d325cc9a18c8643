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

// TestSQLTests runs this repository's SQL test files (ksqlDB's sql-tests/
// format): every test under testdata/sqltests/pass must pass, and every
// one under testdata/sqltests/fail (wrong values, a wrong ROWTIME, a
// record that never comes, an expected error that does not) must be
// reported as a failure.
func TestSQLTests(t *testing.T) {
	pass, err := LoadSQLTests("testdata/sqltests/pass")
	if err != nil {
		t.Fatal(err)
	}
	failing, err := LoadSQLTests("testdata/sqltests/fail")
	if err != nil {
		t.Fatal(err)
	}
	if len(pass) != 7 || len(failing) != 5 {
		t.Fatalf("loaded %d and %d tests, want 7 and 5", len(pass), len(failing))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	for _, r := range Run(ctx, pass, Options{Parallel: 2, Timeout: 60 * time.Second}) {
		if r.Status != Pass || r.MessageDiffers {
			t.Errorf("%s: %s: %s (%s)\n%s", r.File, r.Name, r.Status, r.Reason, r.Detail)
		}
	}
	for _, r := range Run(ctx, failing, Options{Parallel: 2, Timeout: 60 * time.Second}) {
		if r.Status != Fail {
			t.Errorf("%s: %s: %s, want a failure", r.File, r.Name, r.Status)
			continue
		}
		t.Logf("%s: %s: %s (%s)\n%s", r.File, r.Name, r.Status, r.Reason, r.Detail)
	}
}
