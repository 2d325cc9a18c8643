package main

// This file drives the real interactive shell, under tmux, against a real
// server: both are the binary built from this package by tests/testserver.
// It is skipped when tmux is not installed, or with -short.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

func TestShellUnderTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server; skipped with -short")
	}
	tmuxBin := testtool.Need(t, "tmux", "it gives the interactive shell a terminal: apt-get install tmux; scripts/deps.sh does")
	dir := t.TempDir()
	bin := testserver.Binary(t)
	srv := testserver.Start(t)
	pgAddr := srv.PGAddr

	// A server of its own for tmux, so the test neither sees nor touches
	// any other tmux session.
	sock := filepath.Join(dir, "tmux.sock")
	tm := &tmuxPane{t: t, bin: tmuxBin, sock: sock, name: "shelltest"}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "more.sql")
	if err := os.WriteFile(script, []byte("INSERT INTO pageviews (userid, pageid, viewtime)\n  VALUES ('u2', 'script', 2);\nSHOW STREAMS;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmdline := fmt.Sprintf("env HOME=%s TERM=xterm %s shell --server %s --http %s; echo SHELL-EXITED $?; sleep 30", home, bin, pgAddr, srv.HTTPAddr)
	tm.run("new-session", "-d", "-s", tm.name, "-x", "200", "-y", "50", cmdline)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("SQLSTREAMS_SHELL_SCREEN") != "" {
			t.Logf("screen:\n%s", tm.capture())
		}
		exec.Command(tmuxBin, "-S", sock, "kill-server").Run()
	})
	tm.waitFor("Connected to sqlstreams", nil)

	// A statement over two lines: the continuation prompt, then the result.
	tm.send("CREATE STREAM pageviews (userid VARCHAR KEY, pageid VARCHAR, viewtime BIGINT)", "Enter")
	tm.waitFor("      -> ", nil)
	tm.send("  WITH (KAFKA_TOPIC='pageviews', VALUE_FORMAT='JSON', PARTITIONS=1);", "Enter")
	tm.waitFor("CREATE STREAM", func(s string) bool { return strings.Count(s, "CREATE STREAM") >= 2 })

	tm.send("SET 'auto.offset.reset' = 'earliest';", "Enter")
	tm.waitFor("SET", func(s string) bool { return strings.Count(s, "\nSET") >= 1 })
	tm.send("INSERT INTO pageviews (userid, pageid, viewtime) VALUES ('u1', 'home', 1);", "Enter")
	tm.waitFor("INSERT 0 1", nil)

	// Tab completes the stream name the shell learned after CREATE.
	tm.send("DESCRIBE PAGEV")
	tm.send("Tab")
	tm.waitFor("DESCRIBE PAGEVIEWS", nil)
	tm.send(";", "Enter")
	tm.waitFor("VIEWTIME", nil)

	// The words come from the server's completion endpoint (--http),
	// aggregates included.
	tm.send("SELECT HISTOG")
	tm.send("Tab")
	tm.waitFor("SELECT HISTOGRAM", nil)
	tm.send("C-c")

	// A push query prints its row as it arrives; Ctrl-C ends the query,
	// not the shell.
	tm.send("SELECT * FROM pageviews EMIT CHANGES;", "Enter")
	tm.waitFor("home", func(s string) bool { return strings.Contains(s, "u1") && strings.Contains(s, "home") })
	tm.send("C-c")
	tm.waitFor("Query cancelled.", nil)

	// The shell goes on: RUN SCRIPT without a semicolon, then an error.
	tm.send("RUN SCRIPT '"+script+"'", "Enter")
	tm.waitFor("more.sql ran", func(s string) bool {
		return strings.Count(s, "INSERT 0 1") >= 2 && strings.Contains(s, "Stream Name")
	})
	tm.send("SELECT nosuchcol FROM pageviews;", "Enter")
	tm.waitFor("caret under the error", func(s string) bool {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "LINE 1: SELECT nosuchcol") && i+1 < len(lines) &&
				strings.TrimSpace(lines[i+1]) == "^" {
				return true
			}
		}
		return false
	})
	tm.send("SHOW STREAMS;", "Enter")
	tm.waitFor("PAGEVIEWS listed again", func(s string) bool { return strings.Count(s, "Stream Name") >= 2 })

	tm.send("C-d")
	tm.waitFor("SHELL-EXITED 0", nil)
	if strings.Contains(tm.capture(), "SHELL-EXITED 1") {
		t.Error("shell exited with an error")
	}
}

// TestShellScriptAgainstServer runs -f and piped stdin against a real
// server: RUN SCRIPT inside a script, and the exit code at an error.
func TestShellScriptAgainstServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server; skipped with -short")
	}
	dir := t.TempDir()
	bin := testserver.Binary(t)
	pgAddr := testserver.Start(t).PGAddr
	inner := filepath.Join(dir, "inner.sql")
	os.WriteFile(inner, []byte("CREATE STREAM s1 (a INT) WITH (KAFKA_TOPIC='s1', VALUE_FORMAT='JSON', PARTITIONS=1);\nSELECT nosuch FROM s1;\nCREATE STREAM never (a INT) WITH (KAFKA_TOPIC='never', VALUE_FORMAT='JSON', PARTITIONS=1);\n"), 0o644)
	outer := filepath.Join(dir, "outer.sql")
	os.WriteFile(outer, []byte("run script '"+inner+"'\nSHOW TOPICS;\n"), 0o644)

	cmd := exec.Command(bin, "shell", "--server", pgAddr, "-f", outer)
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Fatalf("exit code %d (%v), want 1; output:\n%s", code, err, out)
	}
	s := string(out)
	if !strings.Contains(s, "CREATE STREAM") || !strings.Contains(s, "ERROR:") || strings.Contains(s, "Kafka Topic") {
		t.Errorf("output:\n%s", s)
	}

	cmd = exec.Command(bin, "shell", "--server", pgAddr)
	cmd.Stdin = strings.NewReader("SHOW STREAMS;\nDESCRIBE s1;\n")
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "S1") || !strings.Contains(string(out), "Field") {
		t.Errorf("piped: %v\n%s", err, out)
	}
}

// tmuxPane is one pane of a private tmux server.
type tmuxPane struct {
	t               *testing.T
	bin, sock, name string
}

func (p *tmuxPane) run(args ...string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, p.bin, append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// send types keys: literal text, or a key name such as Enter, Tab, C-c.
func (p *tmuxPane) send(keys ...string) {
	p.t.Helper()
	for _, k := range keys {
		switch k {
		case "Enter", "Tab", "C-c", "C-d":
			p.run("send-keys", "-t", p.name, k)
		default:
			// tmux reads an argument ending in ';' as a command separator,
			// so a trailing semicolon goes as a key code.
			text := strings.TrimRight(k, ";")
			if text != "" {
				p.run("send-keys", "-t", p.name, "-l", text)
			}
			for range len(k) - len(text) {
				p.run("send-keys", "-t", p.name, "-H", "3b")
			}
		}
	}
}

func (p *tmuxPane) capture() string {
	out, _ := exec.Command(p.bin, "-S", p.sock, "capture-pane", "-p", "-J", "-S", "-", "-t", p.name).Output()
	return string(out)
}

// waitFor polls the screen until ok holds (or, with ok nil, until it
// shows what) and fails the test after a deadline.
func (p *tmuxPane) waitFor(what string, ok func(string) bool) {
	p.t.Helper()
	if ok == nil {
		ok = func(s string) bool { return strings.Contains(s, what) }
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		s := p.capture()
		if ok(s) {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("screen never showed %q; screen:\n%s", what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
