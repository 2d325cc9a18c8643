package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTestCommandExitCodes runs `sqlstreams test` in ksql-test-runner form:
// 0 when the output matches, 1 when a record differs, 2 for a bad file.
func TestTestCommandExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sqlFile := write("q.sql", `CREATE STREAM s (k STRING KEY, v INT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON');
CREATE STREAM big AS SELECT k, v * 2 AS v2 FROM s WHERE v > 1;`)
	in := write("in.json", `{"inputs": [
  {"topic": "s", "key": "a", "value": {"v": 1}, "timestamp": 5},
  {"topic": "s", "key": "b", "value": {"v": 2}, "timestamp": 6}]}`)
	good := write("good.json", `{"outputs": [{"topic": "BIG", "key": "b", "value": {"V2": 4}, "timestamp": 6}]}`)
	bad := write("bad.json", `{"outputs": [{"topic": "BIG", "key": "b", "value": {"V2": 5}, "timestamp": 6}]}`)
	broken := write("broken.json", `{"outputs": [`)
	empty := write("empty.json", `{"outputs": []}`)
	report := filepath.Join(dir, "report.json")
	for _, c := range []struct {
		out  string
		want int
	}{{good, 0}, {bad, 1}, {broken, 2}, {empty, 2}} {
		if got := runTest([]string{"--sql-file", sqlFile, "--input-file", in, "--output-file", c.out, "--json-report", report}); got != c.want {
			t.Errorf("%s: exit %d, want %d", filepath.Base(c.out), got, c.want)
		}
	}
	if _, err := os.Stat(report); err != nil {
		t.Errorf("no JSON report: %v", err)
	}
}

// TestTestCommandSQLTests runs `sqlstreams test --test-directory` over
// ksqlDB-format SQL test files: 0 when every test passes, 1 when an
// ASSERT fails, 2 for a path that does not exist.
func TestTestCommandSQLTests(t *testing.T) {
	for _, c := range []struct {
		dir  string
		want int
	}{
		{"../../conformance/testdata/sqltests/fail/wrong.sql", 1},
		{"../../conformance/testdata/sqltests/missing", 2},
	} {
		if got := runTest([]string{"--test-directory", c.dir, "--filter", "wrong value|missing"}); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.dir, got, c.want)
		}
	}
}
