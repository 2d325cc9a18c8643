package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestKafkaClientsFromProfile: every Kafka client the server and its
// commands create is built from the one connection profile (kafka.Profile),
// so that TLS, SASL and the user's client settings reach all of them. No
// code outside kafka/ calls kgo.NewClient or names seed brokers itself;
// tests and the benchmark harness (bench/, whose hand-written pipelines
// are the baseline) may.
func TestKafkaClientsFromProfile(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (rel == "kafka" || rel == "bench" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		kgo := ""
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "github.com/twmb/franz-go/pkg/kgo" {
				kgo = "kgo"
				if imp.Name != nil {
					kgo = imp.Name.Name
				}
			}
		}
		if kgo == "" {
			return nil
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == kgo && (sel.Sel.Name == "NewClient" || sel.Sel.Name == "SeedBrokers") {
				t.Errorf("%s: kgo.%s: build Kafka clients from the connection profile (kafka.Profile.NewClient / Opts)", fset.Position(sel.Pos()), sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("checked only %d files that import kgo: is the walk rooted at the repository?", checked)
	}
}
