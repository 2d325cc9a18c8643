package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/kafka/kafkatest"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// probe is a node kind of the tests' own, built through Config's
// extraNodes: it calls onChange per change (then forwards it), and its
// processor schedules the punctuations it lists.
type probe struct {
	Out      types.Schema
	onChange func(*Change) error
	stream   time.Duration // stream-time punctuation interval, or 0
	wall     time.Duration // wall-clock punctuation interval, or 0
	punct    func(kind PunctuationType, now int64)
}

func (p *probe) Explain(name string) string { return "  --> " + name + "  Probe\n" }
func (p *probe) Schema() types.Schema       { return p.Out }

type probeOp struct {
	p    *probe
	next Processor
}

func (o *probeOp) Process(c *Change) error {
	if o.p.onChange != nil {
		if err := o.p.onChange(c); err != nil {
			return err
		}
	}
	return o.next.Process(c)
}

func (o *probeOp) Init(tc *TaskContext) error {
	if o.p.stream > 0 {
		tc.Schedule(o.p.stream, StreamTime, func(now int64) error { o.p.punct(StreamTime, now); return nil })
	}
	if o.p.wall > 0 {
		tc.Schedule(o.p.wall, WallClockTime, func(now int64) error { o.p.punct(WallClockTime, now); return nil })
	}
	return nil
}

func buildProbe(n *physical.Node, next Processor) (Processor, error) {
	p, ok := n.Op.(*probe)
	if !ok {
		return nil, fmt.Errorf("unknown node kind %T", n.Op)
	}
	return &probeOp{p: p, next: next}, nil
}

// TestPunctuation checks that a task fires its stream-time punctuations
// between records, when a record moves stream time past their due time
// (the first at the first record), and its wall-clock punctuations by
// the clock.
func TestPunctuation(t *testing.T) {
	var events []string
	p := &probe{Out: bidSchema, stream: 10 * time.Millisecond, wall: time.Hour,
		onChange: func(c *Change) error { events = append(events, fmt.Sprintf("record %d", c.Timestamp)); return nil },
		punct: func(kind PunctuationType, now int64) {
			if kind == StreamTime {
				events = append(events, fmt.Sprintf("stream %d", now))
			} else {
				events = append(events, "wall")
			}
		}}
	g := physical.NewGraph("app")
	g.Add("PROBE", p, g.Add("SOURCE-BIDS", &physical.Source{Topic: "bids", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Out: bidSchema}))
	task := newTestTask(t, g.Topology(), 0, Config{extraNodes: buildProbe}, func(*kgo.Record) {})
	for _, ts := range []int64{0, 5, 10, 3, 25, 26, 60} {
		if err := task.feed(&kgo.Record{Key: bidKey, Value: []byte(`{"bidder":1}`), Timestamp: time.UnixMilli(ts)}); err != nil {
			t.Fatal(err)
		}
	}
	want := "record 0,stream 0,record 5,record 10,stream 10,record 3,record 25,stream 25,record 26,record 60,stream 60"
	if got := strings.Join(events, ","); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}
	if task.streamTime != 60 {
		t.Errorf("stream time %d, want 60 (the largest event time; record 3 came late)", task.streamTime)
	}
	// The wall-clock punctuation is due an hour from its scheduling.
	events = nil
	now := time.Now().UnixMilli()
	for _, at := range []int64{now, now + time.Hour.Milliseconds() + 1, now + time.Hour.Milliseconds() + 2} {
		if task.punct.due(WallClockTime, at) {
			if err := task.punctuateWallClock(at); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := strings.Join(events, ","); got != "wall" {
		t.Errorf("wall-clock punctuations: %q, want one, an hour on", got)
	}
}

// TestPartitionGroupOrder checks that a task reading two co-partitioned
// topics processes their records in timestamp order across both.
func TestPartitionGroupOrder(t *testing.T) {
	var order []string
	p := &probe{Out: bidSchema, onChange: func(c *Change) error {
		order = append(order, fmt.Sprintf("%s@%d", c.Record.Topic, c.Timestamp))
		return nil
	}}
	g := physical.NewGraph("app")
	a := g.Add("SOURCE-A", &physical.Source{Topic: "a", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Out: bidSchema})
	b := g.Add("SOURCE-B", &physical.Source{Topic: "b", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Out: bidSchema})
	g.Add("PROBE", p, a, b)
	topo := g.Topology()
	if len(topo.SubTopologies) != 1 || len(topo.SubTopologies[0].Sources) != 2 {
		t.Fatalf("want one sub-topology with two sources:\n%s", topo)
	}
	task := newTestTask(t, topo, 0, Config{extraNodes: buildProbe}, func(*kgo.Record) {})
	rec := func(topic string, ts int64) *kgo.Record {
		return &kgo.Record{Topic: topic, Key: bidKey, Value: []byte(`{"bidder":1}`), Timestamp: time.UnixMilli(ts)}
	}
	task.queue(topicPartition{"a", 0}).recs = []*kgo.Record{rec("a", 1), rec("a", 4), rec("a", 6)}
	task.queue(topicPartition{"b", 0}).recs = []*kgo.Record{rec("b", 2), rec("b", 3), rec("b", 7)}
	if _, err := task.process(func(_ *kgo.Record, err error) { t.Fatal(err) }); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(order, " "), "a@1 b@2 b@3 a@4 a@6 b@7"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

// TestPanicFailsQuery runs a query whose operator panics on one record:
// the query goes to FAILED with the panic in its status, its thread
// restarts with backoff, and nothing else (this test's process) dies.
func TestPanicFailsQuery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers := bidCluster(t).ListenAddrs()
	var seen atomic.Int64
	var panicked atomic.Bool
	p := &probe{Out: bidSchema, onChange: func(c *Change) error {
		seen.Add(1)
		if c.New[1].I == 13 && !panicked.Swap(true) {
			panic("bidder 13")
		}
		return nil
	}}
	g := physical.NewGraph("app")
	g.Add("PROBE", p, g.Add("SOURCE-BIDS", &physical.Source{Topic: "bids", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Out: bidSchema}))
	var logged atomic.Pointer[BadRecord]
	q, err := Start("Q", g.Topology(), Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", CommitInterval: 20 * time.Millisecond, extraNodes: buildProbe,
		BadRecord: func(b BadRecord) {
			if b.Offset < 0 {
				logged.Store(&b)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Stop()
	produceBids(t, ctx, brokers, 0, 100)
	var failedAt time.Time
	for {
		st := q.Status()
		if st.State == StateFailed && st.Restarts >= 1 {
			if !strings.Contains(st.Err, "panic") || !strings.Contains(st.Err, "bidder 13") {
				t.Fatalf("status error %q does not name the panic", st.Err)
			}
			// The failure is in the processing log too.
			if b := logged.Load(); b == nil || b.Query != "Q" || !strings.Contains(b.Err.Error(), "bidder 13") {
				t.Fatalf("processing log entry for the failure: %+v", b)
			}
			failedAt = st.Since
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("query never failed and restarted: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The restarted thread gets past the record (it panics once): the
	// query runs again, since later, and keeps the failure as its last
	// error.
	for {
		st := q.Status()
		if st.State == StateRunning {
			if !st.Since.After(failedAt) || !strings.Contains(st.LastErr, "bidder 13") || st.LastErrAt.IsZero() {
				t.Fatalf("recovered status %+v: want since after %v and the panic as the last error", st, failedAt)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("query never recovered: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if seen.Load() == 0 {
		t.Fatal("no record reached the operator")
	}
}

// TestRestoreWaitsForBroker restores a table from its changelog while
// the broker fails every changelog fetch for seconds: the restore waits
// and retries, and the store ends complete, never truncated at the quiet
// spell.
func TestRestoreWaitsForBroker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := testCluster(t, 2, "users")
	brokers := c.ListenAddrs()
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	defer res.Close()
	dir := t.TempDir()
	cfg := Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", CommitInterval: 20 * time.Millisecond, StateDir: dir, RocksResources: res}
	want := map[string]string{}
	produceUsers(t, ctx, brokers, 0, 6000, 500, want)
	q, err := Start("CST_USERS_1", usersTopology("app"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitTable(t, ctx, q, want)
	waitCommitted(t, ctx, brokers, "app", "users")
	q.Stop()
	cps, _ := filepath.Glob(filepath.Join(dir, "app", "*", "USERS", "checkpoint"))
	for _, cp := range cps {
		os.Remove(cp) // restore everything
	}

	// The changelog reader fetches read_uncommitted; the stream thread
	// read_committed. Fail the reader's fetches for the first 4 s.
	const outage = 4 * time.Second
	var first time.Time
	var mu sync.Mutex
	var failed atomic.Int32
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		fr := req.(*kmsg.FetchRequest)
		if fr.IsolationLevel != 0 {
			return nil, nil, false
		}
		mu.Lock()
		if first.IsZero() {
			first = time.Now()
		}
		inOutage := time.Since(first) < outage
		mu.Unlock()
		if !inOutage {
			return nil, nil, false
		}
		failed.Add(1)
		return kafkatest.ErrorResponse(fr, kerr.NotLeaderForPartition.Code), nil, true
	})
	began := time.Now()
	if q, err = Start("CST_USERS_1", usersTopology("app"), cfg); err != nil {
		t.Fatal(err)
	}
	defer q.Stop()
	for len(q.Stores("USERS")) < 2 {
		if ctx.Err() != nil {
			t.Fatal("the restore never finished")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if failed.Load() == 0 {
		t.Fatal("no changelog fetch was failed")
	}
	if took := time.Since(began); took < outage {
		t.Fatalf("the stores opened after %v, during the outage", took)
	}
	if got := tableContents(t, ctx, q); !equalTables(got, want) {
		t.Fatalf("restored table has %d rows, want %d", len(got), len(want))
	}
	if r := q.Status().Restored; r < 6000-10 {
		t.Errorf("restored %d of 6000 changelog records", r)
	}
}

// TestTaskDirectoryLock checks that a task's state directory is held by
// one owner at a time, in one process too.
func TestTaskDirectoryLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "app", "0_1")
	l, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDir(dir); !errors.Is(err, errDirLocked) {
		t.Fatalf("second lock: %v, want errDirLocked", err)
	}
	l.unlock()
	l2, err := lockDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	l2.unlock()
}

// TestQueryStateSince: the query's state (RUNNING, PAUSED, FAILED) and
// since when it has held it.
func TestQueryStateSince(t *testing.T) {
	t0 := time.Now().Add(-time.Hour)
	q := &Query{since: t0}
	if s := q.Status(); s.State != StateCreated {
		t.Fatalf("built, not run: %s", s.State)
	}
	q.started.Store(true) // as Run does
	if s := q.Status(); s.State != StateRunning || !s.Since.Equal(t0) {
		t.Fatalf("new: %s since %v", s.State, s.Since)
	}
	q.SetPaused(true)
	s := q.Status()
	if s.State != StatePaused || !s.Since.After(t0) {
		t.Fatalf("paused: %s since %v", s.State, s.Since)
	}
	q.SetPaused(true) // no change
	if s2 := q.Status(); !s2.Since.Equal(s.Since) {
		t.Fatalf("pausing again moved since from %v to %v", s.Since, s2.Since)
	}
	q.SetPaused(false)
	q.setErr(errors.New("boom"))
	if s3 := q.Status(); s3.State != StateFailed || s3.Err != "boom" || s3.Since.Before(s.Since) {
		t.Fatalf("failed: %+v", s3)
	}
	failedAt := q.Status().Since
	q.setErr(errors.New("boom again")) // still failed
	if got := q.Status().Since; !got.Equal(failedAt) {
		t.Fatalf("a second error moved since from %v to %v", failedAt, got)
	}
	q.setErr(nil)
	if s4 := q.Status(); s4.State != StateRunning || s4.Since.Before(failedAt) {
		t.Fatalf("recovered: %+v", s4)
	}
}
