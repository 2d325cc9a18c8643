package exec

import (
	"testing"
	"time"
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
