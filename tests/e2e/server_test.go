package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sqlstreams-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "sqlstreams")
	build := exec.Command("go", "build", "-o", binary, "github.com/sqlstreams/sqlstreams/cmd/sqlstreams")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building sqlstreams:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is one sqlstreams process; restarting keeps its data dir and ports.
type server struct {
	t                         *testing.T
	dataDir                   string
	pgAddr, httpAddr, kafAddr string
	cmd                       *exec.Cmd
	logPath                   string
	exited                    chan struct{}
	extra                     []string // more server flags
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startServer(t *testing.T, extra ...string) *server {
	t.Helper()
	s := &server{
		t: t, dataDir: t.TempDir(),
		pgAddr: freeAddr(t), httpAddr: freeAddr(t), kafAddr: freeAddr(t), extra: extra,
	}
	s.logPath = filepath.Join(s.dataDir, "server.log")
	s.start()
	t.Cleanup(func() {
		s.stop(syscall.SIGTERM)
		if t.Failed() {
			if b, err := os.ReadFile(s.logPath); err == nil {
				t.Logf("server log:\n%s", tail(string(b), 80))
			}
		}
	})
	return s
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func (s *server) start() {
	s.t.Helper()
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	s.cmd = exec.Command(binary, append([]string{"server",
		"--data-dir", s.dataDir, "--pg-addr", s.pgAddr, "--http-addr", s.httpAddr,
		"--embedded-kafka-addr", s.kafAddr}, s.extra...)...)
	s.cmd.Stdout = logf
	pr, pw, _ := os.Pipe()
	s.cmd.Stderr = pw
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	pw.Close()
	ready := make(chan struct{})
	s.exited = make(chan struct{})
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
	case <-s.exited:
		s.t.Fatalf("server exited during start; log:\n%s", s.log())
	case <-time.After(60 * time.Second):
		s.t.Fatalf("server did not start within 60s; log:\n%s", s.log())
	}
}

func (s *server) log() string {
	b, _ := os.ReadFile(s.logPath)
	return tail(string(b), 60)
}

// stop sends sig and waits for the process to end.
func (s *server) stop(sig syscall.Signal) {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		s.t.Errorf("server did not stop within 30s after %v", sig)
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
}

func (s *server) restart(sig syscall.Signal) {
	s.t.Helper()
	s.stop(sig)
	s.start()
}

func (s *server) connect(ctx context.Context) *pgx.Conn {
	s.t.Helper()
	conn, err := pgx.Connect(ctx, "postgres://sqlstreams@"+s.pgAddr+"/sqlstreams?sslmode=disable")
	if err != nil {
		s.t.Fatalf("connecting: %v", err)
	}
	s.t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
