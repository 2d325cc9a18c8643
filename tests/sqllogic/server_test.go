package sqllogic

// This file runs a sqlstreams server process for one .slt file: its own
// data directory and ports, kept across restarts, and its log.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	// readyLine is what the server logs once it accepts pgwire clients.
	readyLine = "Postgres wire protocol listening"
	// startTimeout bounds a start, replay of the command topic included.
	startTimeout = 90 * time.Second
	// stopTimeout is how long a SIGTERM may take before SIGKILL follows.
	stopTimeout = 30 * time.Second
)

// server is a sqlstreams process and what it keeps across restarts.
type server struct {
	bin, dataDir, logPath       string
	pgAddr, httpAddr, kafkaAddr string

	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
	err    error         // cmd's exit error, once exited is closed
}

// newServer prepares a server in dir, on free ports; start runs it.
func newServer(bin, dir string) (*server, error) {
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	return &server{
		bin:       bin,
		dataDir:   filepath.Join(dir, "data"),
		logPath:   filepath.Join(dir, "server.log"),
		pgAddr:    ports[0],
		httpAddr:  ports[1],
		kafkaAddr: ports[2],
	}, nil
}

// freePorts returns n loopback addresses whose ports were free a moment
// ago: each was listened on with port 0, then closed.
func freePorts(n int) ([]string, error) {
	var addrs []string
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// start runs the server and waits until it serves pgwire. Its output is
// appended to the log file.
func (s *server) start(ctx context.Context) error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(logf, "=== sqllogic: starting %s at %s\n", s.bin, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.bin,
		"--data-dir", s.dataDir,
		"--pg-addr", s.pgAddr,
		"--http-addr", s.httpAddr,
		"--embedded-kafka-addr", s.kafkaAddr,
	)
	cmd.Env = append(os.Environ(), "SQLSTREAMS_LOG_LEVEL=info")
	cmd.Stdout = logf
	stderr, err := cmd.StderrPipe()
	if err != nil {
		logf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	s.cmd, s.exited, s.err = cmd, make(chan struct{}), nil

	ready := make(chan struct{})
	var copied sync.WaitGroup
	copied.Add(1)
	go func() {
		defer copied.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		signalled := false
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if !signalled && strings.Contains(sc.Text(), readyLine) {
				signalled = true
				close(ready)
			}
		}
		io.Copy(logf, stderr) // an over-long line: keep the rest anyway
	}()
	go func() {
		copied.Wait() // Wait closes the pipe; read it all first
		err := cmd.Wait()
		fmt.Fprintf(logf, "=== sqllogic: server exited: %v\n", err)
		logf.Close()
		s.err = err
		close(s.exited)
	}()

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	select {
	case <-ready:
		return nil
	case <-s.exited:
		return fmt.Errorf("server exited before it was ready (%v); log:\n%s", s.err, s.logTail(40))
	case <-ctx.Done():
		s.kill()
		return fmt.Errorf("server not ready within %v; log:\n%s", startTimeout, s.logTail(40))
	}
}

// running reports whether the process is alive.
func (s *server) running() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits for the process to end; after stopTimeout
// it kills it and reports that the server did not stop cleanly. A clean
// stop exits with status 0.
func (s *server) stop() error {
	if !s.running() {
		return nil
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-s.exited:
		if s.err != nil {
			return fmt.Errorf("server exited with %v after SIGTERM", s.err)
		}
		return nil
	case <-time.After(stopTimeout):
		s.kill()
		return fmt.Errorf("server still running %v after SIGTERM; killed it", stopTimeout)
	}
}

// kill ends the process with SIGKILL and waits for it.
func (s *server) kill() {
	if !s.running() {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
}

// logTail returns the last n lines of the server's log.
func (s *server) logTail(n int) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
