package exec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// fakeSession is a txnSession that records how its transactions begin
// and end; its client has no broker and is only flushed (with nothing
// buffered).
type fakeSession struct {
	cl    *kgo.Client
	calls []string
	// endErr fails End.
	endErr error
}

func newFakeSession(t *testing.T) *fakeSession {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &fakeSession{cl: cl}
}

func (s *fakeSession) Client() *kgo.Client                                            { return s.cl }
func (s *fakeSession) PollFetches(context.Context) kgo.Fetches                        { return nil }
func (s *fakeSession) PollRecords(context.Context, int) kgo.Fetches                   { return nil }
func (s *fakeSession) Produce(context.Context, *kgo.Record, func(*kgo.Record, error)) {}
func (s *fakeSession) Close()                                                         {}
func (s *fakeSession) Begin() error {
	s.calls = append(s.calls, "begin")
	return nil
}
func (s *fakeSession) End(_ context.Context, try kgo.TransactionEndTry) (bool, error) {
	if try == kgo.TryCommit {
		s.calls = append(s.calls, "commit")
	} else {
		s.calls = append(s.calls, "abort")
	}
	return try == kgo.TryCommit && s.endErr == nil, s.endErr
}

// flushProbe is a node kind whose processor buffers changes until the
// commit's Flush writes them (or fails, when failFlush is set), and
// drops them on Abort.
type flushProbe struct {
	Out       types.Schema
	failFlush error
	log       *[]string
}

func (p *flushProbe) Explain(name string) string { return "  --> " + name + "  FlushProbe\n" }
func (p *flushProbe) Schema() types.Schema       { return p.Out }

type flushProbeOp struct {
	p        *flushProbe
	buffered int
}

func (o *flushProbeOp) Process(*Change) error { o.buffered++; return nil }
func (o *flushProbeOp) Flush() error {
	if o.p.failFlush != nil {
		return o.p.failFlush
	}
	*o.p.log = append(*o.p.log, fmt.Sprintf("flush %d", o.buffered))
	o.buffered = 0
	return nil
}
func (o *flushProbeOp) Abort() {
	*o.p.log = append(*o.p.log, fmt.Sprintf("abort %d", o.buffered))
	o.buffered = 0
}

// newCommitTask is a running task of SOURCE-BIDS → FLUSHPROBE in a task
// manager whose transactions go to a fake session.
func newCommitTask(t *testing.T) (*testTask, *flushProbe, *fakeSession) {
	var log []string
	p := &flushProbe{Out: bidSchema, log: &log}
	g := physical.NewGraph("app")
	g.Add("FLUSHPROBE", p, g.Add("SOURCE-BIDS", &physical.Source{Topic: "bids", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Out: bidSchema}))
	build := func(n *physical.Node, next Processor) (Processor, error) {
		if fp, ok := n.Op.(*flushProbe); ok {
			return &flushProbeOp{p: fp}, nil
		}
		return nil, fmt.Errorf("unknown node kind %T", n.Op)
	}
	task := newTestTask(t, g.Topology(), 0, Config{extraNodes: build}, func(*kgo.Record) {})
	sess := newFakeSession(t)
	task.tm.sess = sess
	return task, p, sess
}

// TestTaskManagerCommitNothing: with no transaction open, a commit (or
// an abort) does nothing: it opens no transaction to end it.
func TestTaskManagerCommitNothing(t *testing.T) {
	task, p, sess := newCommitTask(t)
	for _, end := range []func(context.Context) (commitResult, error){task.tm.commit, task.tm.abort} {
		res, err := end(context.Background())
		if err != nil || res != (commitResult{}) {
			t.Fatalf("got %+v, %v; want nothing done", res, err)
		}
	}
	if len(sess.calls) > 0 || len(*p.log) > 0 {
		t.Errorf("session calls %v, tasks %v; want none", sess.calls, *p.log)
	}
	if c, a := task.tm.q.commits.Load(), task.tm.q.aborts.Load(); c != 0 || a != 0 {
		t.Errorf("commits %d, aborts %d; want none", c, a)
	}
}

// TestTaskManagerCommit: a commit writes each running task's state and
// commits; one whose task cannot write its state aborts instead, every
// task dropping what it processed, reports why, and leaves the thread
// running (its records come again); the next commit commits.
func TestTaskManagerCommit(t *testing.T) {
	task, p, sess := newCommitTask(t)
	tm := task.tm
	ctx := context.Background()
	feed := func(n int) {
		t.Helper()
		if err := tm.begin(); err != nil {
			t.Fatal(err)
		}
		for range n {
			if err := task.feed(&kgo.Record{Topic: "bids", Key: bidKey, Value: []byte(`{"bidder":1}`)}); err != nil {
				t.Fatal(err)
			}
		}
		tm.txn.records += n
	}

	feed(2)
	res, err := tm.commit(ctx)
	if err != nil || !res.committed || !res.ended || res.tasks != 1 || res.records != 2 || res.reason != nil {
		t.Fatalf("commit: %+v, %v; want committed, 1 task, 2 records", res, err)
	}

	feed(3)
	p.failFlush = errors.New("disk full")
	res, err = tm.commit(ctx)
	if err != nil {
		t.Fatalf("a failed flush fails the thread: %v", err)
	}
	if res.committed || !res.ended || res.reason == nil || !strings.Contains(res.reason.Error(), "disk full") {
		t.Fatalf("commit with a failing flush: %+v; want aborted, reporting the flush's error", res)
	}

	p.failFlush = nil
	feed(1)
	if res, err = tm.commit(ctx); err != nil || !res.committed {
		t.Fatalf("commit after: %+v, %v", res, err)
	}

	if got, want := strings.Join(sess.calls, " "), "begin commit begin abort begin commit"; got != want {
		t.Errorf("session: %s, want %s", got, want)
	}
	if got, want := strings.Join(*p.log, " "), "flush 2 abort 3 flush 1"; got != want {
		t.Errorf("task: %s, want %s", got, want)
	}
	if c, a := tm.q.commits.Load(), tm.q.aborts.Load(); c != 2 || a != 1 {
		t.Errorf("commits %d, aborts %d; want 2 and 1", c, a)
	}
	if tm.txn.open {
		t.Error("a transaction is still open")
	}
}

// TestTaskManagerCommitProduceFailure: a record that could not be
// written aborts the commit; maxProduceFailures such transactions in a
// row fail the thread; an abort the thread chose never counts.
func TestTaskManagerCommitProduceFailure(t *testing.T) {
	task, _, sess := newCommitTask(t)
	tm := task.tm
	ctx := context.Background()
	fail := func() error {
		e := errors.New("topic deleted")
		tm.produceErr.Store(&e)
		return e
	}
	for i := 1; i <= maxProduceFailures; i++ {
		if err := tm.begin(); err != nil {
			t.Fatal(err)
		}
		fail()
		res, err := tm.commit(ctx)
		if res.committed || res.reason == nil {
			t.Fatalf("commit %d: %+v; want aborted with the produce failure", i, res)
		}
		if i < maxProduceFailures && err != nil {
			t.Fatalf("commit %d failed the thread: %v", i, err)
		}
		if i == maxProduceFailures && (err == nil || !strings.Contains(err.Error(), "topic deleted")) {
			t.Fatalf("commit %d: %v; want the thread failed", i, err)
		}
	}
	// A chosen abort with a failed record: not a produce failure.
	if err := tm.begin(); err != nil {
		t.Fatal(err)
	}
	fail()
	if _, err := tm.abort(ctx); err != nil || tm.produceFails != 0 || tm.produceErr.Load() != nil {
		t.Fatalf("chosen abort: %v, %d failures", err, tm.produceFails)
	}
	// End failing (fenced): the error, explained, and the tasks' state
	// dropped.
	if err := tm.begin(); err != nil {
		t.Fatal(err)
	}
	sess.endErr = errors.New("producer fenced")
	if res, err := tm.commit(ctx); err == nil || res.committed || !strings.Contains(err.Error(), "ending transaction") {
		t.Fatalf("fenced commit: %+v, %v", res, err)
	}
}
