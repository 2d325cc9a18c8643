// Package layers checks that imports between sqlstreams' packages point the
// way DESIGN.md's package table says (docs/architecture.md maps it to the
// code), and that TiDB's parser is imported by sql/ alone:
//
//	types ◀ expr ◀ planner ◀ physical ◀ exec ◀ engine ◀ servers, cmd
//	            catalog ◀┘      state ◀┘
//
// exec sees only physical topologies (graphs of nodes and store specs),
// never the logical plan or the SQL; tests/testserver, which starts real
// servers for the tests, sees none of the packages: it runs the binary.
package layers

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/sqlstreams/sqlstreams/"

// allowed lists, per package, the internal packages it may import
// directly. Packages not listed (cmd, tests) may import anything.
var allowed = map[string][]string{
	"types":    {},
	"expr":     {"types"},
	"kafka":    {},
	"catalog":  {"types", "kafka"},
	"state":    {"types"},
	"broker":   {"kafka"},
	"registry": {"types", "kafka"},
	"planner":  {"types", "expr", "catalog"},
	"physical": {"types", "expr", "planner"},
	"plan":     {"types", "expr", "catalog", "planner", "physical"},
	"exec":     {"types", "expr", "physical", "state", "metrics", "kafka"},
	"sql":      {"types", "expr", "catalog", "planner"},
	"engine":   {"types", "expr", "catalog", "planner", "physical", "plan", "exec", "state", "sql", "metrics", "kafka"},
	// enginetest runs the engine without a broker, for tests.
	"engine/enginetest": {"catalog", "engine"},
	"server/pgwire":     {"types", "catalog", "engine", "sql", "metrics"},
	"server/rest":       {"types", "catalog", "engine", "sql", "metrics"},
	"server/console":    {"types", "catalog", "engine", "metrics"},
	"metrics":           {},
	"tests/testserver":  {},
	// conformance runs ksqlDB's REST tests against the REST server.
	"conformance": {"types", "catalog", "engine", "sql", "broker", "registry", "kafka", "server/rest"},
}

type pkg struct {
	ImportPath string
	Imports    []string
}

func TestImportsPointOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := 0
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		rules, ruled := allowed[name]
		if ruled {
			seen++
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/pingcap/tidb") && name != "sql" {
				t.Errorf("%s imports %s: only sql/ may use TiDB's parser", name, imp)
			}
			if !ruled || !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			ok := false
			for _, a := range rules {
				ok = ok || a == dep
			}
			if !ok {
				t.Errorf("%s imports %s; DESIGN.md allows only %v", name, dep, rules)
			}
		}
	}
	if seen != len(allowed) {
		t.Errorf("found %d of the %d packages the rules name", seen, len(allowed))
	}
}
