package broker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runHalfCommit leaves topic h (3 partitions) as a crash in the middle of
// two producers' commits leaves it, with a third producer's transaction
// open:
//
//	t1: t1-0 t1-1 t1-2 on p0-p2; asked to commit, with group g-t1's
//	    offset 42 on topic in; commit marker on p0 only
//	t2: t2-0 t2-1 t2-2 on p0-p2; asked to commit (g-t2 likewise);
//	    markers on p0 and p1
//	t3: t3-1 t3-2 on p1, p2; open, never asked to commit
//	t4: t4-0 on p0; the same
//
// kfake writes a commit's markers one partition at a time; the markers
// here are written the same way (WriteTxnMarkers, one partition each), and
// the commit requests are journaled as the journal does before kfake
// handles an EndTxn.
func runHalfCommit(dir, addr string) error {
	ctx := context.Background()
	b, err := Start(ctx, Config{Addr: addr, DataDir: dir, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		return err
	}
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopic(ctx, 3, 1, nil, "h"); err != nil || resp.Err != nil {
		return fmt.Errorf("creating h: %v %v", err, resp.Err)
	}
	if resp, err := adm.CreateTopic(ctx, 1, 1, nil, "in"); err != nil || resp.Err != nil {
		return fmt.Errorf("creating in: %v %v", err, resp.Err)
	}
	open := func(txid string, parts ...int32) (int64, int16, error) {
		p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID(txid), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			return 0, 0, err
		}
		if err := p.BeginTransaction(); err != nil {
			return 0, 0, err
		}
		for _, part := range parts {
			if err := p.ProduceSync(ctx, rec("h", part, fmt.Sprintf("%s-%d", txid, part))).FirstErr(); err != nil {
				return 0, 0, err
			}
		}
		d, err := adm.DescribeTransactions(ctx, txid)
		if err != nil {
			return 0, 0, err
		}
		t, err := d.On(txid, nil)
		return t.ProducerID, t.ProducerEpoch, err
	}
	for _, tx := range []struct {
		txid   string
		marked []int32
	}{{"t1", []int32{0}}, {"t2", []int32{0, 1}}} {
		pid, epoch, err := open(tx.txid, 0, 1, 2)
		if err != nil {
			return err
		}
		// The offsets the transaction commits for its input, as
		// TxnOffsetCommit journals them; kfake applies them only after
		// all markers, so the crash lost them.
		b.journal.append(journalEntry{Type: "offsets", PID: pid, Epoch: epoch, Group: "g-" + tx.txid,
			Offsets: []journalOffset{{Topic: "in", Partition: 0, Offset: 42}}})
		b.journal.append(journalEntry{Type: "commit", PID: pid, Epoch: epoch})
		for _, part := range tx.marked {
			resp, err := adm.WriteTxnMarkers(ctx, kadm.TxnMarkers{ProducerID: pid, ProducerEpoch: epoch, Commit: true,
				Topics: kadm.TopicsSet{"h": {part: {}}}})
			if err != nil {
				return err
			}
			resp.EachPartition(func(p kadm.TxnMarkersPartitionResponse) {
				if p.Err != nil && err == nil {
					err = p.Err
				}
			})
			if err != nil {
				return err
			}
		}
	}
	if _, _, err := open("t3", 1, 2); err != nil {
		return err
	}
	if _, _, err := open("t4", 0); err != nil {
		return err
	}
	return nil
}

// TestCrashBetweenCommitMarkers: SIGKILL in the middle of two producers'
// multi-partition commits (some markers written, others not) with a third
// transaction open. After a restart every record of the two committing
// transactions is visible to read_committed readers, the open one's are
// not, on every partition; also when the broker dies again in the middle
// of the repair itself. Without the commit journal the repair aborts the
// unmarked rest and the committed transactions are lost on those
// partitions.
func TestCrashBetweenCommitMarkers(t *testing.T) {
	want := []string{"t1-0", "t2-0", "n-0", "t1-1", "t2-1", "t1-2", "t2-2"} // partition, offset order
	for _, tc := range []string{"repaired", "crash during the repair", "without the journal"} {
		t.Run(tc, func(t *testing.T) {
			dir := t.TempDir()
			addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
			half := newBrokerProcess(t, dir, addr, helperModeEnv+"=halfcommit")
			half.start()
			half.kill()

			switch tc {
			case "crash during the repair":
				logs := half.runToExit(helperCrashRepairEnv + "=1")
				if !strings.Contains(logs, "log scan done") {
					t.Fatalf("the broker did not reach the repair:\n%s", logs)
				}
			case "without the journal":
				if err := os.Remove(filepath.Join(dir, journalFile)); err != nil {
					t.Fatal(err)
				}
			}

			b := startBroker(t, Config{Addr: addr, DataDir: dir})
			defer b.Close()
			t.Logf("scan completed %d commits; repair aborted %d", b.logScan.Completed, len(b.repair.Aborted))
			switch tc {
			case "repaired":
				if b.logScan.Completed != 3 || len(b.repair.Aborted) != 3 {
					t.Errorf("completed %d commits and aborted %d; want 3 (t1 on p1, p2; t2 on p2) and 3 (t3 on p1, p2; t4 on p0)", b.logScan.Completed, len(b.repair.Aborted))
				}
			case "crash during the repair":
				// The first start completed the commits and died
				// after aborting one of t3 and t4; this one aborts
				// the other.
				if b.logScan.Completed != 0 || len(b.repair.Aborted) == 0 || len(b.repair.Aborted) == 3 {
					t.Errorf("completed %d commits and aborted %d; want 0 and the rest of t3's and t4's 3", b.logScan.Completed, len(b.repair.Aborted))
				}
			}
			produceTxn(t, addr, "t3", true, rec("h", 0, "n-0")) // the open producer goes on
			got := consume(t, addr, "h", kgo.ReadCommitted(), len(want), 5*time.Second)
			if tc == "without the journal" {
				if slices.Equal(got, want) {
					t.Fatalf("without the journal read_committed saw every committed record: the journal may be unnecessary")
				}
				t.Logf("without the journal read_committed saw %v", got)
				return
			}
			if !slices.Equal(got, want) {
				t.Fatalf("read_committed after the crash: %v, want %v", got, want)
			}
			// The committed transactions' input offsets are the
			// groups' committed offsets: the input is not read again.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			adm := kadm.NewClient(newClient(t, addr))
			for _, g := range []string{"g-t1", "g-t2"} {
				offs, err := adm.FetchOffsets(ctx, g)
				if err != nil {
					t.Fatal(err)
				}
				if o, ok := offs.Lookup("in", 0); !ok || o.At != 42 {
					t.Errorf("group %s committed %+v on in[0], want 42", g, o)
				}
			}
		})
	}
}
