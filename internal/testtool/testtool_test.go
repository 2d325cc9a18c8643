package testtool

import (
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test would end.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                           {}
func (r *recorder) Skip(args ...any)                  { r.skipped = args[0].(string) }
func (r *recorder) Fatalf(format string, args ...any) { r.failed = format }

func TestNeedMissingTool(t *testing.T) {
	for _, ci := range []string{"", "false", "true"} {
		t.Setenv("CI", ci)
		var r recorder
		Need(&r, "sqlstreams-no-such-tool", "apt-get install nothing")
		if ci == "true" {
			if r.failed == "" || r.skipped != "" {
				t.Errorf("CI=%q: a missing tool skipped (%q) instead of failing", ci, r.skipped)
			}
		} else if !strings.Contains(r.skipped, "sqlstreams-no-such-tool is not installed (apt-get install nothing)") || r.failed != "" {
			t.Errorf("CI=%q: skipped %q, failed %q", ci, r.skipped, r.failed)
		}
	}
}

func TestNeedFindsTool(t *testing.T) {
	t.Setenv("CI", "true")
	var r recorder
	if p := Need(&r, "go", "the Go toolchain"); p == "" || r.failed != "" || r.skipped != "" {
		t.Errorf("Need(go) = %q, skipped %q, failed %q", p, r.skipped, r.failed)
	}
	Probe(&r, "sh", "sh", "-c", "exit 1")
	if r.failed == "" {
		t.Error("a failing probe did not fail under CI=true")
	}
}
