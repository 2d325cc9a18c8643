// Package testtool is how a test finds the real tools it drives (psql,
// node, tmux, Chromium, a Python module, a tmpfs mount): when one is
// missing the test is skipped on a developer's machine, and fails when the
// environment has CI=true, so a CI run cannot pass by skipping. scripts/test
// sets CI=true unless it is set, after scripts/deps.sh has installed every
// tool these tests need.
//
// Skips for other reasons (-short, soak tests behind a variable) do not go
// through here; tests/layers checks that no test skips for a missing tool
// any other way.
package testtool

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Strict reports whether a missing tool fails a test: the environment
// variable CI is "true" (as GitHub Actions, GitLab CI and scripts/test set
// it).
func Strict() bool { return os.Getenv("CI") == "true" }

// Need returns the path of the program name, looked up in PATH. When there
// is none it calls Missing with hint, which should say how to install it
// (e.g. "apt-get install tmux; scripts/deps.sh installs it").
func Need(t testing.TB, name, hint string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not installed (%s)", name, hint)
	}
	return p
}

// NeedAny is Need for a tool known by several names (chromium,
// chromium-browser, …): it returns the path of the first one found.
func NeedAny(t testing.TB, names []string, hint string) string {
	t.Helper()
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	Missing(t, "none of %v is installed (%s)", names, hint)
	return ""
}

// Probe runs the program name with args (e.g. python3 -c "import
// psycopg2") and calls Missing with hint when it cannot run or fails: for
// a library or module rather than a program.
func Probe(t testing.TB, hint, name string, args ...string) {
	t.Helper()
	if err := exec.Command(name, args...).Run(); err != nil {
		Missing(t, "%s %q failed (%v): %s", name, args, err, hint)
	}
}

// Missing ends the test for a missing requirement described by format and
// args: it skips, or under CI=true fails, the test.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Strict() {
		t.Fatalf("%s; CI=true, so this fails instead of skipping", msg)
	} else {
		t.Skip(msg)
	}
}
