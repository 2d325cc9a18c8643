package console_test

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	osexec "os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/sql/splittest"
)

// TestSplitCases runs the console's JavaScript splitter (assets/sql.js)
// with node over the quoting cases the server's splitter is tested
// against (sql/splittest/cases.json), and over random texts made of the
// characters that matter to it, compared with sql.Segments: the console
// runs the statements the server would cut, and points errors at the same
// offsets.
func TestSplitCases(t *testing.T) {
	node := testtool.Need(t, "node", "apt-get install nodejs; scripts/deps.sh installs it for scripts/test")
	cases := splittest.Cases()
	r := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"'", "''", `"`, "`", "E'", "e", "-", "--", "/", "/*", "*/", "*", ";", `\`, "\n", " ", "a", "1", "$", "é", "\u00a0", "SELECT"}
	for i := 0; i < 2000; i++ {
		var b strings.Builder
		for n := r.IntN(12); n >= 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		c := splittest.Case{Name: "random", Text: b.String()}
		for _, s := range sql.Segments(c.Text) {
			c.Statements = append(c.Statements, splittest.Statement{Pos: s.Pos, Text: s.Text})
		}
		cases = append(cases, c)
	}
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(path, in, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := osexec.Command(node, "testdata/split.mjs", path).Output()
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
	if len(got) != len(cases) {
		t.Fatalf("node split %d cases, want %d", len(got), len(cases))
	}
	fails := 0
	for i, c := range cases {
		if !reflect.DeepEqual(got[i], c.Statements) && len(got[i])+len(c.Statements) > 0 {
			t.Errorf("%s: split(%q)\n got %+v\nwant %+v", c.Name, c.Text, got[i], c.Statements)
			if fails++; fails == 10 {
				t.Fatal("too many failures")
			}
		}
	}
}
