package pgwire

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
)

// clientEnv is the environment that points libpq-style clients at s.
func clientEnv(s *realServer) []string {
	host, port, _ := net.SplitHostPort(s.PGAddr)
	return append(os.Environ(), "PGHOST="+host, "PGPORT="+port, "PGUSER=tester", "PGDATABASE=db",
		"PGSSLMODE=disable", "TZ=UTC", "LC_ALL=C.UTF-8")
}

// node-postgres (npm pg, pinned in testdata/node/package-lock.json): text
// parameters without types, type parsing of results, rows of a push query
// as they arrive, and closing during a push query.
func TestRealNodePostgres(t *testing.T) {
	node := testtool.Need(t, "node", "apt-get install nodejs; scripts/deps.sh does")
	npm := testtool.Need(t, "npm", "apt-get install npm; scripts/deps.sh does")
	dir, _ := filepath.Abs(filepath.Join("testdata", "node"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "pg", "package.json")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			testtool.Missing(t, "npm ci could not install node-postgres (no registry access?; scripts/deps.sh runs it): %v\n%s", err, out)
		}
	}
	s := sharedReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client_test.js")
	cmd.Dir = dir
	cmd.Env = clientEnv(s)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	for _, want := range []string{"ok version", "ok insert", "ok select with parameter", "ok json array", "ok push rows stream", "ok closed during push"} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("node output lacks %q:\n%s", want, out)
		}
	}
	if !s.WaitLog(10*time.Second, "statement ended", "SELECT ID FROM NODE_S WHERE ID >= 10 EMIT CHANGES", "canceled") {
		t.Errorf("the push query did not end when node closed its connection")
	}
}

// psycopg2 (Debian python3-psycopg2, through libpq): its implicit
// transactions (BEGIN … COMMIT), client-side parameter interpolation, type
// conversion of results, SET/SHOW and errors inside a transaction.
func TestRealPsycopg2(t *testing.T) {
	python := "/usr/bin/python3"
	testtool.Probe(t, "apt-get install python3-psycopg2; scripts/deps.sh does", python, "-c", "import psycopg2")
	s := sharedReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join("testdata", "psycopg2_test.py"))
	cmd.Env = clientEnv(s)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	for _, want := range []string{"ok version", "ok transaction status", "ok insert", "ok select", "ok types", "ok failed transaction", "ok set show"} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("psycopg2 output lacks %q:\n%s", want, out)
		}
	}
}
