package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/broker"
)

// The embedded broker runs in a child process: this binary again, with
// brokerEnv set to its data dir (or brokerMemory). The system under test
// then has this process, its CPU accounting and its garbage collector to
// itself, as it would against a real Kafka cluster. In one process the
// broker made about three quarters of all garbage (it copies every fetched
// batch), so how often the GC ran was set by the live heap of whichever
// system was running, not by that system's own work.
const (
	brokerEnv    = "SQLSTREAMS_BENCH_BROKER"
	brokerMemory = "memory"
)

// A scenario's broker: a child process, or with -broker-in-process one in
// this process.
type benchBroker struct {
	addr   string
	cmd    *osexec.Cmd    // nil in process
	stdin  io.WriteCloser // the child exits when this closes
	inProc *broker.Broker
}

func startBroker(ctx context.Context, dataDir string) (*benchBroker, error) {
	if *brokerInProcess {
		b, err := broker.Start(ctx, broker.Config{Addr: "127.0.0.1:0", DataDir: dataDir})
		if err != nil {
			return nil, err
		}
		return &benchBroker{addr: b.Addr(), inProc: b}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	spec := dataDir
	if spec == "" {
		spec = brokerMemory
	}
	cmd := osexec.Command(exe)
	cmd.Env = append(os.Environ(), brokerEnv+"="+spec)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stdin.Close()
		_ = cmd.Wait()
		return nil, fmt.Errorf("broker process: %w", err)
	}
	return &benchBroker{addr: strings.TrimSpace(line), cmd: cmd, stdin: stdin}, nil
}

func (b *benchBroker) Close() {
	if b.inProc != nil {
		b.inProc.Close()
		return
	}
	b.stdin.Close()
	done := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
}

// cpu is the broker process's CPU time so far (0 in process: it is in
// this process's own).
func (b *benchBroker) cpu() time.Duration {
	if b == nil || b.cmd == nil {
		return 0
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", b.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name (which may hold spaces): state is
	// the first, utime and stime the 12th and 13th, in clock ticks
	// (USER_HZ, 100 on Linux).
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

// serveBroker is the child: it runs the broker, prints its address and
// serves until its stdin closes (the parent closed it or exited).
func serveBroker(spec string) {
	dir := spec
	if spec == brokerMemory {
		dir = ""
	}
	b, err := broker.Start(context.Background(), broker.Config{Addr: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench broker:", err)
		os.Exit(1)
	}
	fmt.Println(b.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	b.Close()
}
