package pgwire

// Helpers for the tests that run real clients (psql, pgx, node-postgres,
// psycopg2) against the real sqlstreams binary with its embedded broker,
// started by tests/testserver. Most tests share one server (sharedReal)
// and use their own stream names.

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/internal/testtool"
	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

var (
	sharedOnce sync.Once
	shared     *realServer
	sharedDir  string
	sharedErr  error
)

func TestMain(m *testing.M) {
	code := testserver.Main(m)
	if shared != nil {
		shared.Stop(syscall.SIGTERM)
		os.RemoveAll(sharedDir)
	}
	os.Exit(code)
}

// realServer is one sqlstreams process, logging at debug.
type realServer struct{ *testserver.Server }

// startReal starts a server of the test's own with args added to the
// usual flags; it is stopped when the test ends.
func startReal(t *testing.T, args ...string) *realServer {
	t.Helper()
	return &realServer{testserver.Start(t, testserver.Args(append([]string{"--log-level", "debug"}, args...)...))}
}

// sharedReal returns the server the package's tests share, started by the
// first test that asks and stopped by TestMain.
func sharedReal(t *testing.T) *realServer {
	t.Helper()
	sharedOnce.Do(func() {
		sharedDir, sharedErr = os.MkdirTemp("", "pgwire-shared-")
		if sharedErr != nil {
			return
		}
		var s *testserver.Server
		s, sharedErr = testserver.Launch(testserver.DataDir(sharedDir), testserver.Args("--log-level", "debug"))
		if sharedErr != nil {
			os.RemoveAll(sharedDir)
			return
		}
		shared = &realServer{s}
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("shared server log:\n%s", shared.LogTail(60))
		}
	})
	return shared
}

// url is a connection string for user on database db.
func (s *realServer) url(user string) string {
	return "postgres://" + user + "@" + s.PGAddr + "/db?sslmode=disable"
}

// pgxConn connects pgx to s.
func (s *realServer) pgxConn(t *testing.T, ctx context.Context) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, s.url("tester"))
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// sockets counts the open sockets of the server process: the Postgres
// connections and, in and out, the Kafka connections of its embedded
// broker, so a push query's consumer shows up in it.
func (s *realServer) sockets(t *testing.T) int {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", s.Pid())
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Skipf("cannot count sockets: %v", err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// rssKiB returns the server process's resident memory.
func (s *realServer) rssKiB(t *testing.T) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Pid()))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			var n int
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:")), "%d", &n)
			return n
		}
	}
	return 0
}

// runPsql runs psql against s with args and returns its output.
func (s *realServer) psql(t *testing.T, env []string, args ...string) (string, error) {
	t.Helper()
	path := testtool.Need(t, "psql", "apt-get install postgresql-client; scripts/deps.sh does")
	host, port, _ := net.SplitHostPort(s.PGAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"-h", host, "-p", port, "-X"}, args...)...)
	cmd.Env = append(append(os.Environ(), "PGUSER=tester", "PGDATABASE=db", "PGCONNECT_TIMEOUT=5", "LC_ALL=C.UTF-8", "PAGER=cat", "COLUMNS=200"), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
