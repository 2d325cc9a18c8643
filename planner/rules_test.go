package planner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/sqlstreams/sqlstreams/planner"
)

// TestRules plans statements and shows the logical plan after the
// planner's rules, the rules that fired and the query's dialect
// (testdata/rules).
func TestRules(t *testing.T) {
	cat := testCatalog(t)
	datadriven.RunTest(t, "testdata/rules", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "plan":
			q, root, err := bind(cat, d.Input)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			var b strings.Builder
			dialect, rules := planner.Dialect(""), []string(nil)
			if q != nil {
				dialect, rules = q.Dialect, q.Rules
			} else if s, ok := root.(*planner.Sink); ok {
				dialect, rules = s.Dialect, s.Rules
			}
			if dialect == "" {
				dialect = "KSQL"
			}
			fmt.Fprintf(&b, "dialect: %s\nrules: %s\n", dialect, strings.Join(rules, ", "))
			b.WriteString(planner.Explain(root))
			return b.String()
		}
		t.Fatalf("unknown command %s", d.Cmd)
		return ""
	})
}
