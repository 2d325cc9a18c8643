package console_test

import (
	"encoding/json"
	osexec "os/exec"
	"reflect"
	"testing"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
	"github.com/sqlstreams/sqlstreams/sql/splittest"
)

// TestSplitCases runs the console's JavaScript splitter (assets/sql.js)
// with node over the quoting cases the server's splitter is tested
// against (sql/splittest/cases.json): the console runs the statements the
// server would cut, and points errors at the same offsets.
func TestSplitCases(t *testing.T) {
	node := testtool.Need(t, "node", "apt-get install nodejs; scripts/deps.sh installs it for scripts/test")
	out, err := osexec.Command(node, "testdata/split.mjs", "../../sql/splittest/cases.json").Output()
	if err != nil {
		if ee, ok := err.(*osexec.ExitError); ok {
			t.Fatalf("node: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("node: %v", err)
	}
	var got [][]splittest.Statement
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("node's output: %v\n%s", err, out)
	}
	cases := splittest.Cases()
	if len(got) != len(cases) {
		t.Fatalf("node split %d cases, want %d", len(got), len(cases))
	}
	for i, c := range cases {
		if !reflect.DeepEqual(got[i], c.Statements) && len(got[i])+len(c.Statements) > 0 {
			t.Errorf("%s: split(%q)\n got %+v\nwant %+v", c.Name, c.Text, got[i], c.Statements)
		}
	}
}
