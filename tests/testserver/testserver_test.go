package testserver

import (
	"os"
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
