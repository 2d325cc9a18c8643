package layers

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestSuiteCoversEveryPackage: scripts/test (what CI runs) names every
// top-level directory that holds Go code, so a new package's tests run
// in CI (kafka/ and internal/ once did not).
func TestSuiteCoversEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	script, err := os.ReadFile(filepath.Join(root, "scripts", "test"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile(`\./([a-z0-9_]+)/\.\.\.`).FindAllStringSubmatch(string(script), -1) {
		listed[m[1]] = true
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.IsDir() || e.Name()[0] == '.' || e.Name() == "testdata" {
			continue
		}
		var hasGo bool
		filepath.WalkDir(filepath.Join(root, e.Name()), func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && filepath.Ext(path) == ".go" {
				hasGo = true
				return filepath.SkipAll
			}
			return nil
		})
		if hasGo && !listed[e.Name()] {
			t.Errorf("scripts/test does not run ./%s/...", e.Name())
		}
	}
}
