package sqllogic

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

var (
	rewrite     = flag.Bool("rewrite", false, "rewrite the expected output of query records in place")
	binFlag     = flag.String("bin", "", "run this sqlstreams binary instead of building ./cmd/sqlstreams")
	stmtTimeout = flag.Duration("stmt-timeout", 30*time.Second, "default time a statement, query attempt, produce or wait-caught-up may take")
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

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
