// Package testserver runs real sqlstreams server processes for tests: the
// e2e and sqllogic suites, pgwire's real-client tests and the shell tests.
//
//	func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }
//
//	s := testserver.Start(t, testserver.Args("--log-level", "debug"))
//	conn, err := pgx.Connect(ctx, "postgres://u@"+s.PGAddr+"/db")
//	...
//	s.Kill()                        // SIGKILL: a crash
//	if err := s.Restart(); err != nil { t.Fatal(err) } // same data dir and ports
//
// A server runs `sqlstreams server` on four free loopback ports (Postgres
// wire, HTTP, embedded Kafka broker, embedded schema registry) with its data in one directory, kept
// across restarts. Its stdout and stderr go to a log file, appended to on
// each start; a start is done when the log has the Postgres listening line.
//
// Hazards: the free ports are only free when picked, and another process
// may take one before the server listens (its start then fails, it does
// not hang); a restart reuses them. They are picked below the kernel's
// ephemeral range, so that processes listening on port 0 (which the
// machine's other tests do all the time) cannot take them while a killed
// server restarts. The server inherits the test's
// environment, so SQLSTREAMS_* variables set there change the defaults of
// flags not given. The binary is built without -race, whatever the test's
// own flags.
//
// This is a non-test package so that other packages' tests can import it;
// nothing outside tests should.
package testserver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// readyLine is what the server logs once it accepts pgwire clients.
	readyLine = "Postgres wire protocol listening"
	// brokerReadyLine is what `sqlstreams broker` logs once it serves.
	brokerReadyLine = "Kafka broker listening"
	// startTimeout bounds a start, replay of the command topic included.
	startTimeout = 90 * time.Second
	// stopTimeout is how long Stop waits after its signal before SIGKILL.
	stopTimeout = 30 * time.Second
	// failTail is how many log lines Start's cleanup logs on failure.
	failTail = 80
)

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// Binary returns the path of a sqlstreams binary built from this module's
// cmd/sqlstreams, building it on the first call in the test process (later
// calls, concurrent ones included, wait for and reuse that build, or its
// error). It fails tb if the build fails. The build runs `go build` with
// the import path, so the test must run inside the module, as `go test`
// does. The binary lives in a temporary directory that Main removes; a
// package that calls Binary without Main leaves it behind.
func Binary(tb testing.TB) string {
	tb.Helper()
	bin, err := build()
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

func build() (string, error) {
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "testserver-bin-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "sqlstreams")
		cmd := exec.Command("go", "build", "-o", buildBin, "github.com/sqlstreams/sqlstreams/cmd/sqlstreams")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("building sqlstreams: %v\n%s", err, out)
		}
	})
	return buildBin, buildErr
}

// Main runs m's tests and then removes the binary Binary built, if any,
// and returns m.Run's exit code. Call it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }
//
// Servers still running when it returns keep running (their binary is
// unlinked, which Linux allows); stop them before or after, as you like.
func Main(m *testing.M) int {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	return code
}

// FreeAddr returns a loopback address ("127.0.0.1:port") whose port was
// free a moment ago (see freeAddrs). Another process may take it before
// the caller listens; that is rare, and the server's start then fails
// rather than hangs.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	addrs, err := freeAddrs(1)
	if err != nil {
		tb.Fatal(err)
	}
	return addrs[0]
}

// Ports are picked from [portsFrom, the start of the kernel's ephemeral
// range), ports the kernel never hands out itself. A port from the
// ephemeral range (a listen on port 0) is free again the moment a killed
// server's listeners close, and any process on the machine that listens on
// port 0 meanwhile (an in-process test broker, another test's server) may
// get it, so the restart fails with "address already in use". Below the
// range, only a process that picks port numbers itself, as this one does,
// can take it.
const portsFrom = 10000

// freeAddrs returns n distinct free loopback addresses: all n are held
// open at once, so none repeats. The ports are below the kernel's
// ephemeral range (see portsFrom), picked at random and tried until one
// listens; where that range is unknown or small, the kernel picks.
func freeAddrs(n int) ([]string, error) {
	var addrs []string
	lo, hi := portsFrom, ephemeralStart()
	for range n {
		var ln net.Listener
		var err error
		for try := 0; ln == nil && hi-lo >= 1000 && try < 100; try++ {
			ln, err = net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo)))
		}
		if ln == nil {
			if ln, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
				return nil, err
			}
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs, nil
}

// ephemeralStart returns the first port of the kernel's ephemeral range
// (Linux's net.ipv4.ip_local_port_range), or 0 where it cannot tell.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0
	}
	n, err := strconv.Atoi(f[0])
	if err != nil {
		return 0
	}
	return n
}

// An Option changes how Start and Launch run the server.
type Option func(*Server)

// Args adds flags after the usual ones (--data-dir, --pg-addr, --http-addr,
// --embedded-kafka-addr), so a later duplicate of one of those overrides
// it. The flags are used again on every Restart. Default: none, so the
// server logs at info.
func Args(args ...string) Option {
	return func(s *Server) { s.args = append(s.args, args...) }
}

// DataDir sets the server's data directory, created if missing; the log
// file goes into it too. Default: tb.TempDir() for Start; Launch requires
// it, and its caller removes it.
func DataDir(dir string) Option {
	return func(s *Server) { s.DataDir = dir }
}

// Bin runs the binary at path instead of Binary's build. Default: Binary.
func Bin(path string) Option {
	return func(s *Server) { s.bin = path }
}

// Server is one sqlstreams server process, and what it keeps across
// restarts: its data directory, addresses, flags and log. Restart, Stop
// and Kill must not run concurrently with any other method; between them,
// the fields and the other methods may be used from many goroutines.
type Server struct {
	// PGAddr, HTTPAddr, KafkaAddr and RegistryAddr are the Postgres wire,
	// REST/metrics, embedded broker and embedded schema registry
	// addresses, the same across restarts.
	PGAddr, HTTPAddr, KafkaAddr, RegistryAddr string
	// DataDir is the data directory, the same across restarts.
	DataDir string
	// LogPath is the log file: <DataDir>/server.log.
	LogPath string

	bin  string
	args []string
	// brokerOnly runs `sqlstreams broker` (StartBroker) instead of a
	// server; KafkaAddr is then its address.
	brokerOnly bool

	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd has ended and its output is in the log
	exitErr error         // cmd.Wait's error, set before exited is closed
}

// Start starts a server and waits until it serves pgwire, failing tb if
// it does not within 90s (or exits first). When the test ends, the server
// is stopped with SIGTERM (tb.Errorf if it takes over 30s) and, if the test
// failed, the last 80 lines of its log are logged. Data directory default:
// tb.TempDir().
func Start(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	s := newServer(opts)
	if s.DataDir == "" {
		s.DataDir = tb.TempDir()
	}
	if err := s.launch(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(syscall.SIGTERM); err != nil {
			tb.Errorf("stopping the server: %v", err)
		}
		if tb.Failed() {
			tb.Logf("server log, last %d lines (%s):\n%s", failTail, s.LogPath, s.LogTail(failTail))
		}
	})
	return s
}

// StartBroker starts `sqlstreams broker`, the embedded broker alone, with
// its data under DataDir/kafka, and waits until it serves, as Start does
// for a server (same cleanup). KafkaAddr is its address and RegistryAddr
// its schema registry's; servers share it with Bootstrap(b.KafkaAddr).
func StartBroker(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	return Start(tb, append([]Option{func(s *Server) { s.brokerOnly = true }}, opts...)...)
}

// Bootstrap makes the server use the Kafka cluster at addr (a StartBroker
// broker) instead of starting its embedded broker.
func Bootstrap(addr string) Option {
	return Args("--bootstrap-servers", addr)
}

// Launch starts a server like Start but without a test: nothing stops it
// or removes its files; the caller calls Stop, and removes the DataDir it
// must pass. It is for a server shared by a package's tests, stopped in
// TestMain. It builds the binary like Binary unless Bin is given.
func Launch(opts ...Option) (*Server, error) {
	s := newServer(opts)
	if s.DataDir == "" {
		return nil, errors.New("testserver: Launch needs a DataDir")
	}
	if err := s.launch(); err != nil {
		return nil, err
	}
	return s, nil
}

func newServer(opts []Option) *Server {
	s := &Server{}
	for _, o := range opts {
		o(s)
	}
	return s
}

// launch picks the addresses and starts the server the first time.
func (s *Server) launch() error {
	if s.bin == "" {
		bin, err := build()
		if err != nil {
			return err
		}
		s.bin = bin
	}
	addrs, err := freeAddrs(4)
	if err != nil {
		return err
	}
	s.PGAddr, s.HTTPAddr, s.KafkaAddr, s.RegistryAddr = addrs[0], addrs[1], addrs[2], addrs[3]
	if err := os.MkdirAll(s.DataDir, 0o755); err != nil {
		return err
	}
	s.LogPath = filepath.Join(s.DataDir, "server.log")
	return s.Restart()
}

// Restart starts the server again after Stop or Kill, on the same data
// directory, addresses and flags, and waits until it serves pgwire, as
// Start does; it returns an error, with the log's tail, if the server
// exits first or is not ready within 90s (it is killed then). It is an
// error to call it while the server runs.
func (s *Server) Restart() error {
	if s.Running() {
		return errors.New("testserver: Restart while the server runs")
	}
	logf, err := os.OpenFile(s.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := append([]string{"server",
		"--data-dir", s.DataDir,
		"--pg-addr", s.PGAddr,
		"--http-addr", s.HTTPAddr,
		"--embedded-kafka-addr", s.KafkaAddr,
		"--schema-registry-addr", s.RegistryAddr,
	}, s.args...)
	ready := readyLine
	if s.brokerOnly {
		args = append([]string{"broker",
			"--data-dir", filepath.Join(s.DataDir, "kafka"),
			"--addr", s.KafkaAddr,
			"--schema-registry-addr", s.RegistryAddr,
		}, s.args...)
		ready = brokerReadyLine
	}
	fmt.Fprintf(logf, "=== testserver: starting %s %s at %s\n", s.bin, strings.Join(args, " "), time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(s.bin, args...)
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
	exited := make(chan struct{})
	s.cmd, s.exited, s.exitErr = cmd, exited, nil

	readyc := make(chan struct{})
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		signalled := false
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if !signalled && strings.Contains(sc.Text(), ready) {
				signalled = true
				close(readyc)
			}
		}
		io.Copy(logf, stderr) // after an over-long line: keep the rest anyway
	}()
	go func() {
		<-copied // Wait closes the pipe: read it all first
		err := cmd.Wait()
		fmt.Fprintf(logf, "=== testserver: server exited: %v\n", err)
		logf.Close()
		s.exitErr = err
		close(exited)
	}()

	select {
	case <-readyc:
		return nil
	case <-exited:
		return fmt.Errorf("the server exited before it was ready (%v); log:\n%s", s.exitErr, s.LogTail(40))
	case <-time.After(startTimeout):
		s.Kill()
		return fmt.Errorf("the server was not ready within %v; log:\n%s", startTimeout, s.LogTail(40))
	}
}

// Running reports whether the server process is alive.
func (s *Server) Running() bool {
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

// ExitErr is how the last process ended, as exec.Cmd.Wait reports it (nil
// for exit status 0); nil while it runs.
func (s *Server) ExitErr() error {
	if s.Running() {
		return nil
	}
	return s.exitErr
}

// Pid is the process ID of the current (or last) server process, 0 before
// one started.
func (s *Server) Pid() int {
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Stop sends sig (syscall.SIGTERM for a clean stop) and waits for the
// process to end. If it has not ended after 30s, Stop kills it and returns
// an error saying so (after SIGQUIT, so that the log has every goroutine's
// stack). It does nothing if the server is not running. It
// does not judge the exit status; see ExitErr.
func (s *Server) Stop(sig os.Signal) error {
	if !s.Running() {
		return nil
	}
	if err := s.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopTimeout):
		// SIGQUIT first: the Go runtime writes every goroutine's stack
		// to the log, which shows where the stop hung.
		_ = s.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-s.exited:
		case <-time.After(2 * time.Second):
		}
		s.Kill()
		return fmt.Errorf("the server still ran %v after %v; killed it (its goroutines' stacks are in the log)", stopTimeout, sig)
	}
}

// Kill ends the process with SIGKILL, a crash, and waits for it to end.
func (s *Server) Kill() {
	if !s.Running() {
		return
	}
	s.cmd.Process.Kill()
	<-s.exited
}

// Log returns the whole log, of every start so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.LogPath)
	return string(b)
}

// LogTail returns the last n lines of the log.
func (s *Server) LogTail(n int) string {
	b, err := os.ReadFile(s.LogPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// WaitLog waits up to d for a log line holding every one of parts, and
// reports whether one came. It rereads the whole log every 50ms.
func (s *Server) WaitLog(d time.Duration, parts ...string) bool {
	return WaitFor(d, func() bool {
		for _, line := range strings.Split(s.Log(), "\n") {
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

// WaitFor calls cond every 50ms until it returns true or d has passed,
// and reports whether it did; cond gets one last call at the deadline.
// It does not fail the test: the caller says what did not happen.
func WaitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return cond()
}
