package e2e

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// startServer starts a server of the test's own; extra are more server
// flags. It is stopped when the test ends.
func startServer(t *testing.T, extra ...string) *testserver.Server {
	t.Helper()
	return testserver.Start(t, testserver.Args(extra...))
}

// stopAndRestart stops s with SIGTERM and starts it again on the same data
// dir and ports.
func stopAndRestart(t *testing.T, s *testserver.Server) {
	t.Helper()
	if err := s.Stop(syscall.SIGTERM); err != nil {
		t.Error(err)
	}
	restart(t, s)
}

// crashAndRestart kills s with SIGKILL and starts it again on the same
// data dir and ports.
func crashAndRestart(t *testing.T, s *testserver.Server) {
	t.Helper()
	s.Kill()
	restart(t, s)
}

func restart(t *testing.T, s *testserver.Server) {
	t.Helper()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
}

// connect opens a pgx connection to s, closed when the test ends.
func connect(t *testing.T, ctx context.Context, s *testserver.Server) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, "postgres://sqlstreams@"+s.PGAddr+"/sqlstreams?sslmode=disable")
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
