package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// brokerProcess is a broker running in a child process (the test binary
// in TestHelperProcess's "serve" mode) on a fixed address and data
// directory, so tests can SIGKILL it and start it again.
type brokerProcess struct {
	t    testing.TB
	dir  string
	addr string
	env  []string

	mu  sync.Mutex
	cmd *exec.Cmd
	log strings.Builder
}

func newBrokerProcess(t testing.TB, dir, addr string, env ...string) *brokerProcess {
	p := &brokerProcess{t: t, dir: dir, addr: addr, env: env}
	t.Cleanup(p.kill)
	return p
}

// startBrokerProcess starts a broker process on a data directory and a
// port of its own, with topic (one partition) created.
func startBrokerProcess(t testing.TB, topic string) (dir, addr string, p *brokerProcess) {
	t.Helper()
	dir = t.TempDir()
	addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	p = newBrokerProcess(t, dir, addr)
	p.start()
	createTopic(t, addr, topic, 1)
	return dir, addr, p
}

// start starts the broker process and waits until it serves clients.
func (p *brokerProcess) start() {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(append(os.Environ(), helperEnv+"=1", helperModeEnv+"=serve",
		helperDirEnv+"="+p.dir, helperAddrEnv+"="+p.addr), p.env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == helperReady {
				ready <- true
				io.Copy(io.Discard, stdout)
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Wait()
			p.t.Fatalf("broker process exited before it was ready:\n%s", p.logs())
		}
	case <-ctx.Done():
		cmd.Process.Kill()
		cmd.Wait()
		p.t.Fatalf("broker process not ready: %v\n%s", ctx.Err(), p.logs())
	}
	p.mu.Lock()
	p.cmd = cmd
	p.mu.Unlock()
}

// kill SIGKILLs the broker process, if running, and waits for it to exit.
func (p *brokerProcess) kill() {
	p.mu.Lock()
	cmd := p.cmd
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	cmd.Wait()
}

// logs returns everything the broker processes have logged so far.
func (p *brokerProcess) logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// runToExit starts the broker process and waits for it to exit by itself
// (tests that make it die during start); it returns its logs.
func (p *brokerProcess) runToExit(extraEnv ...string) string {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
	cmd.Env = append(append(append(os.Environ(), helperEnv+"=1", helperModeEnv+"=serve",
		helperDirEnv+"="+p.dir, helperAddrEnv+"="+p.addr), p.env...), extraEnv...)
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), helperReady+"\n") {
		p.t.Fatalf("broker process started, want it to die during start:\n%s", out)
	}
	return string(out)
}
