package testserver

import (
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestKillRestartStop crashes a server, starts it again on its data dir
// and stops it cleanly.
func TestKillRestartStop(t *testing.T) {
	s := Start(t)
	pid := s.Pid()
	if !s.Running() || pid == 0 {
		t.Fatalf("started: running %v, pid %d", s.Running(), pid)
	}
	s.Kill()
	if s.Running() || s.ExitErr() == nil {
		t.Fatalf("killed: running %v, exit %v", s.Running(), s.ExitErr())
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err == nil {
		t.Error("Restart of a running server did not fail")
	}
	if s.Pid() == pid {
		t.Errorf("the restarted server has the old pid %d", pid)
	}
	if err := s.Stop(syscall.SIGTERM); err != nil || s.ExitErr() != nil {
		t.Fatalf("stop: %v, exit %v", err, s.ExitErr())
	}
	if !s.WaitLog(time.Second, "sqlstreams stopped cleanly") {
		t.Error("the log lacks the clean stop")
	}
	if n := strings.Count(s.Log(), readyLine); n != 2 {
		t.Errorf("the log has %d starts, want 2:\n%s", n, s.Log())
	}
}

// TestLaunchFails reports a server that exits during its start.
func TestLaunchFails(t *testing.T) {
	s, err := Launch(DataDir(t.TempDir()), Args("--no-such-flag"))
	if err == nil {
		s.Kill()
		t.Fatal("a server with a bad flag started")
	}
	if !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "exit status 2") {
		t.Errorf("error: %v", err)
	}
}

// TestRestartWhileOthersListen: while a killed server is down, other
// processes on the machine listen on port 0 all the time (in-process test
// brokers, other tests' servers). The server's ports are outside the range
// the kernel hands them, so its restart finds them free. With ports from
// that range, this test's 2,000 listeners took one of the four in about
// half the runs, and the restart failed with "address already in use".
func TestRestartWhileOthersListen(t *testing.T) {
	s := Start(t)
	eph := ephemeralStart()
	for _, a := range []string{s.PGAddr, s.HTTPAddr, s.KafkaAddr, s.RegistryAddr} {
		_, p, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(p)
		if eph-portsFrom >= 1000 && (port < portsFrom || port >= eph) {
			t.Errorf("port %d is not in [%d, %d), below the kernel's ephemeral range", port, portsFrom, eph)
		}
	}
	s.Kill()
	var squat []net.Listener
	defer func() {
		for _, l := range squat {
			l.Close()
		}
	}()
	for range 2000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			break // out of file descriptors: enough
		}
		squat = append(squat, l)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("restart while %d other listeners took ports: %v", len(squat), err)
	}
}
