package sqllogic

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	rewrite     = flag.Bool("rewrite", false, "rewrite the expected output of query records in place")
	binFlag     = flag.String("bin", "", "run this sqlstreams binary instead of building ./cmd/sqlstreams")
	stmtTimeout = flag.Duration("stmt-timeout", 30*time.Second, "default time a statement, query attempt, produce or wait-caught-up may take")
)

// binary is the sqlstreams executable the tests run.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // the tests skip themselves
	}
	tmp, err := os.MkdirTemp("", "sqllogic-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sqllogic:", err)
		os.Exit(1)
	}
	binary = *binFlag
	if binary == "" {
		binary = filepath.Join(tmp, "sqlstreams")
		if err := build(binary); err != nil {
			fmt.Fprintln(os.Stderr, "sqllogic:", err)
			os.RemoveAll(tmp)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// build compiles ./cmd/sqlstreams of this module into bin.
func build(bin string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/sqlstreams")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building sqlstreams: %v\n%s", err, out)
	}
	return nil
}

// moduleRoot is the directory of this module's go.mod: from `go env
// GOMOD`, or two levels up from this package.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if gomod := strings.TrimSpace(string(out)); err == nil && gomod != "" && gomod != os.DevNull {
		return filepath.Dir(gomod), nil
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("cannot find the module root: %v", err)
	}
	return root, nil
}

// TestSQLLogic runs every testdata/*.slt file, each against its own server.
func TestSQLLogic(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real servers; skipped in -short mode")
	}
	files, err := filepath.Glob(filepath.Join("testdata", "*.slt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no testdata/*.slt files")
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".slt")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runFile(t, path)
		})
	}
}
