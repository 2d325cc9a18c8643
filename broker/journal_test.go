package broker

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestFoldJournal: what the journal's entries say of each (producer ID,
// epoch), for clients that bump the epoch at every EndTxn (one pair, one
// transaction) and for older ones (one pair, many transactions, told apart
// by the begin entries).
func TestFoldJournal(t *testing.T) {
	off := func(pid int64, epoch int16, at int64) journalEntry {
		return journalEntry{Type: "offsets", PID: pid, Epoch: epoch, Group: "g", Offsets: []journalOffset{{Topic: "in", Offset: at}}}
	}
	commit := func(pid int64, epoch int16) journalEntry { return journalEntry{Type: "commit", PID: pid, Epoch: epoch} }
	begin := func(pid int64, epoch int16) journalEntry { return journalEntry{Type: "begin", PID: pid, Epoch: epoch} }
	for _, c := range []struct {
		name       string
		entries    []journalEntry
		committing []pidEpoch
		offsets    []int64
	}{
		{"epoch per transaction, the last one committing",
			[]journalEntry{off(1, 0, 5), commit(1, 0), off(1, 1, 9), commit(1, 1)},
			[]pidEpoch{{1, 0}, {1, 1}}, []int64{5, 9}},
		{"epoch per transaction, the last one open",
			[]journalEntry{off(1, 0, 5), commit(1, 0), off(1, 1, 9)},
			[]pidEpoch{{1, 0}}, []int64{5}},
		{"one epoch, the second transaction open with offsets sent",
			[]journalEntry{off(1, 3, 5), commit(1, 3), begin(1, 3), off(1, 3, 9)},
			nil, []int64{5}},
		{"one epoch, the second transaction committing",
			[]journalEntry{off(1, 3, 5), commit(1, 3), begin(1, 3), off(1, 3, 9), commit(1, 3)},
			[]pidEpoch{{1, 3}}, []int64{5, 9}},
		{"two producers",
			[]journalEntry{off(1, 3, 5), off(2, 0, 7), commit(2, 0), commit(1, 3), begin(1, 3)},
			[]pidEpoch{{2, 0}}, []int64{5, 7}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := foldJournal(c.entries)
			var committing []pidEpoch
			for k, v := range st.committing {
				if v {
					committing = append(committing, k)
				}
			}
			slices.SortFunc(committing, func(a, b pidEpoch) int { return int(a.pid-b.pid)*100 + int(a.epoch-b.epoch) })
			if !slices.Equal(committing, c.committing) {
				t.Errorf("committing %v, want %v", committing, c.committing)
			}
			var offsets []int64
			for _, e := range st.offsets {
				offsets = append(offsets, e.Offsets[0].Offset)
			}
			if !slices.Equal(offsets, c.offsets) {
				t.Errorf("offsets %v, want %v", offsets, c.offsets)
			}
		})
	}
}

// TestCrashAfterCommitOlderClient: a client before KIP-890 (EndTxn v4)
// keeps one producer epoch for all its transactions. The broker dies
// while its second transaction is open, never asked to commit: the
// journal's commit of the first, at the same epoch, must not complete
// the second (it did, before the journal had begin entries: its records
// became visible to read_committed readers).
func TestCrashAfterCommitOlderClient(t *testing.T) {
	dir, addr, bp := startBrokerProcess(t, "y")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := newClient(t, addr, kgo.TransactionalID("old"), kgo.DefaultProduceTopic("y"), kgo.MaxVersions(kversion.V3_9_0()))
	for i, end := range []bool{true, false} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "t%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if end {
			if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
				t.Fatal(err)
			}
		}
	}
	bp.kill()
	cl.Close()

	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	defer b.Close()
	if b.logScan.Completed != 0 {
		t.Errorf("the scan completed %d commits, want none", b.logScan.Completed)
	}
	if len(b.repair.Aborted) != 1 {
		t.Errorf("repair aborted %+v, want the open transaction", b.repair.Aborted)
	}
	want := []string{"t0"}
	if got := consume(t, b.Addr(), "y", kgo.ReadCommitted(), 2, 3*time.Second); !slices.Equal(got, want) {
		t.Fatalf("read_committed after the crash: got %v, want %v", got, want)
	}
}
