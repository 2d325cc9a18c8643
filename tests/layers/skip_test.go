package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// missingTool matches a skip message about a tool that is not there.
var missingTool = regexp.MustCompile(`(?i)not installed|unavailable|install |cannot mount|no registry|could not install`)

// TestToolSkipsGoThroughTesttool: a test that needs a real tool (psql,
// node, tmux, Chromium, sqlite3, curl, a Python module, a tmpfs mount)
// asks internal/testtool for it, which fails instead of skipping under
// CI=true, so a CI run cannot pass by skipping. It flags a t.Skip in an
// if whose condition looks for a program (exec.LookPath, exec.Command)
// and a t.Skip whose message says a tool is missing.
func TestToolSkipsGoThroughTesttool(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			if rel != "." && (rel == filepath.Join("internal", "testtool") || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		checked++
		flagged := map[token.Pos]bool{}
		flag := func(call *ast.CallExpr, why string) {
			if flagged[call.Pos()] {
				return
			}
			flagged[call.Pos()] = true
			t.Errorf("%s: %s: use testtool.Need, NeedAny, Probe or Missing (internal/testtool), which fail under CI=true", fset.Position(call.Pos()), why)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.IfStmt:
				if looksForTool(n.Init) || looksForTool(n.Cond) {
					ast.Inspect(n.Body, func(m ast.Node) bool {
						if call, ok := m.(*ast.CallExpr); ok && isSkip(call) {
							flag(call, "a skip when a program is missing")
						}
						return true
					})
				}
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Getenv" || sel.Sel.Name == "LookupEnv") && len(n.Args) == 1 {
					if lit, ok := n.Args[0].(*ast.BasicLit); ok && lit.Value == `"CI"` {
						flag(n, "reading CI (testtool.Strict says whether a missing tool fails)")
					}
				}
				if isSkip(n) && len(n.Args) > 0 {
					if lit, ok := n.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if msg, _ := strconv.Unquote(lit.Value); missingTool.MatchString(msg) {
							flag(n, "a skip for a missing tool")
						}
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d test files: is the walk rooted at the repository?", checked)
	}
}

// isSkip reports whether call is x.Skip(…), x.Skipf(…) or x.SkipNow().
func isSkip(call *ast.CallExpr) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && (sel.Sel.Name == "Skip" || sel.Sel.Name == "Skipf" || sel.Sel.Name == "SkipNow")
}

// looksForTool reports whether n calls exec.LookPath or runs a command
// (exec.Command, exec.CommandContext), under any import name.
func looksForTool(n ast.Node) bool {
	if n == nil {
		return false
	}
	found := false
	ast.Inspect(n, func(m ast.Node) bool {
		if sel, ok := m.(*ast.SelectorExpr); ok {
			switch sel.Sel.Name {
			case "LookPath", "Command", "CommandContext":
				found = true
			}
		}
		return !found
	})
	return found
}
