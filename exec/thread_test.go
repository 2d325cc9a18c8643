package exec

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/kafka"
)

// TestPollWaitsUntilTheCommitIsDue checks how long a stream thread's
// poll may wait: a commit interval with no transaction open, only until
// the open one is due to commit (a poll past it would hold the
// transaction's output back up to another interval), briefly while a
// store restores.
func TestPollWaitsUntilTheCommitIsDue(t *testing.T) {
	q := &Query{cfg: Config{CommitInterval: 100 * time.Millisecond}}
	th := &streamThread{q: q, tm: &taskManager{q: q, reader: &changelogReader{q: q}}}
	now := time.Now()
	for _, c := range []struct {
		name      string
		txn       txnState
		restoring bool
		want      time.Duration
	}{
		{"no transaction", txnState{}, false, 100 * time.Millisecond},
		{"transaction begun", txnState{open: true, start: now}, false, 100 * time.Millisecond},
		{"transaction 80 ms old", txnState{open: true, start: now.Add(-80 * time.Millisecond)}, false, 20 * time.Millisecond},
		{"transaction due", txnState{open: true, start: now.Add(-150 * time.Millisecond)}, false, time.Millisecond},
		{"restoring", txnState{open: true, start: now.Add(-50 * time.Millisecond)}, true, 5 * time.Millisecond},
		{"restoring, transaction due", txnState{open: true, start: now.Add(-99 * time.Millisecond)}, true, time.Millisecond},
	} {
		th.tm.txn = c.txn
		th.tm.reader.active = nil
		if c.restoring {
			th.tm.reader.active = map[topicPartition]*restoration{{"log", 0}: {}}
		}
		if got := th.pollWait(now); got != c.want {
			t.Errorf("%s: poll waits %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAssignmentEndsThePoll starts an aggregation whose commit interval
// is a minute: the thread's first poll is under way when the group
// assigns its partitions, and the assignment must end it (tasks created,
// stores restored and queryable) rather than wait out the poll.
func TestAssignmentEndsThePoll(t *testing.T) {
	topo := aggTopology(t, "app", "AUCTION")
	_, brokers := startAggCluster(t, topo)
	q, err := Start("CTAS_OUT_1", topo, Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", CommitInterval: time.Minute,
		StateDir: filepath.Join(t.TempDir(), "state")})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(q.Stores("AGGREGATE")) < 3 {
		select {
		case <-ctx.Done():
			t.Fatalf("%d of 3 stores running after 30 s: the assignment waited for the poll", len(q.Stores("AGGREGATE")))
		case <-time.After(10 * time.Millisecond):
		}
	}
}
