package pgwire

// Helpers for the tests that run real clients (psql, pgx, node-postgres,
// psycopg2) against the real sqlstreams binary with its embedded broker.
// The binary is built once per test run; most tests share one server
// (sharedReal) and use their own stream names.

import (
	"bufio"
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
)

var (
	buildOnce sync.Once
	buildDir  string
	binPath   string
	buildErr  error

	sharedOnce sync.Once
	shared     *realServer
	sharedErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if shared != nil {
		shared.stop()
	}
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// sqlstreamsBinary builds cmd/sqlstreams once and returns its path.
func sqlstreamsBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "pgwire-real-")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(buildDir, "sqlstreams")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/sqlstreams/sqlstreams/cmd/sqlstreams")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building sqlstreams: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// realServer is one sqlstreams process.
type realServer struct {
	pgAddr  string
	dataDir string
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// launch starts sqlstreams with args added to the usual ones and waits
// until the Postgres endpoint listens.
func launch(t testing.TB, dataDir string, args ...string) (*realServer, error) {
	bin := sqlstreamsBinary(t)
	s := &realServer{pgAddr: freePort(t), dataDir: dataDir, logPath: filepath.Join(dataDir, "server.log"), exited: make(chan struct{})}
	logf, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, append([]string{"server",
		"--data-dir", dataDir, "--pg-addr", s.pgAddr, "--http-addr", freePort(t),
		"--embedded-kafka-addr", freePort(t), "--log-level", "debug"}, args...)...)
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.cmd.Stdout, s.cmd.Stderr = logf, pw
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	pw.Close()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := false
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if !once && strings.Contains(sc.Text(), "Postgres wire protocol listening") {
				once = true
				close(ready)
			}
		}
		logf.Close()
	}()
	go func() { s.cmd.Wait(); close(s.exited) }()
	select {
	case <-ready:
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("sqlstreams exited during start:\n%s", s.logTail(40))
	case <-time.After(60 * time.Second):
		s.stop()
		return nil, fmt.Errorf("sqlstreams did not start within 60s:\n%s", s.logTail(40))
	}
}

// startReal starts a server of the test's own, stopped when it ends.
func startReal(t *testing.T, args ...string) *realServer {
	t.Helper()
	s, err := launch(t, t.TempDir(), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.stop()
		if t.Failed() {
			t.Logf("server log:\n%s", s.logTail(60))
		}
	})
	return s
}

// sharedReal returns the server the package's tests share.
func sharedReal(t *testing.T) *realServer {
	t.Helper()
	sharedOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pgwire-shared-")
		if err != nil {
			sharedErr = err
			return
		}
		shared, sharedErr = launch(t, dir)
	})
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("shared server log:\n%s", shared.logTail(60))
		}
	})
	return shared
}

func (s *realServer) logTail(n int) string {
	b, _ := os.ReadFile(s.logPath)
	lines := strings.Split(string(b), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stop ends the process with SIGTERM (SIGKILL after 30s).
func (s *realServer) stop() {
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.exited
	}
	if strings.HasPrefix(filepath.Base(s.dataDir), "pgwire-shared-") {
		os.RemoveAll(s.dataDir)
	}
}

// url is a connection string for user on database db.
func (s *realServer) url(user string) string {
	return "postgres://" + user + "@" + s.pgAddr + "/db?sslmode=disable"
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
	dir := fmt.Sprintf("/proc/%d/fd", s.cmd.Process.Pid)
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

// waitLog waits until the server log has a line holding every one of
// parts, and reports whether it came.
func (s *realServer) waitLog(d time.Duration, parts ...string) bool {
	return waitFor(d, func() bool {
		b, _ := os.ReadFile(s.logPath)
		for _, line := range strings.Split(string(b), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(line, p)
			}
			if all {
				return true
			}
		}
		return false
	})
}

// rssKiB returns the server process's resident memory.
func (s *realServer) rssKiB(t *testing.T) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
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
	path, err := exec.LookPath("psql")
	if err != nil {
		t.Skip("psql not installed")
	}
	host, port, _ := net.SplitHostPort(s.pgAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"-h", host, "-p", port, "-X"}, args...)...)
	cmd.Env = append(append(os.Environ(), "PGUSER=tester", "PGDATABASE=db", "PGCONNECT_TIMEOUT=5", "LC_ALL=C.UTF-8", "PAGER=cat", "COLUMNS=200"), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// waitFor polls cond every 50ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}
