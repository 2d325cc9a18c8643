package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestScanRules: which (producer ID, epoch) pairs a read of one partition
// leaves open.
func TestScanRules(t *testing.T) {
	type r struct {
		pid   int64
		epoch int16
		kind  recordKind
	}
	for _, tc := range []struct {
		name string
		recs []r
		want []int64 // first offsets of the pairs left open
	}{
		{"committed", []r{{1, 0, recordTxnData}, {1, 0, recordTxnData}, {1, 0, recordMarker}}, nil},
		{"open", []r{{1, 0, recordTxnData}, {1, 0, recordMarker}, {1, 1, recordTxnData}}, []int64{2}},
		{"plain records never open anything", []r{{-1, -1, recordPlain}, {5, 0, recordPlain}}, nil},
		// kfake's transaction timeout bumps the epoch, then writes
		// the abort marker: epoch 0 data, epoch 1 marker.
		{"timeout marker carries epoch+1", []r{{1, 0, recordTxnData}, {1, 1, recordMarker}}, nil},
		{"older marker does not close a newer epoch", []r{{1, 3, recordTxnData}, {1, 2, recordMarker}}, []int64{0}},
		{"another producer's marker does not close", []r{{1, 0, recordTxnData}, {2, 0, recordTxnData}, {2, 0, recordMarker}}, []int64{0}},
		{"other control records do not close", []r{{1, 0, recordTxnData}, {1, 0, recordOther}}, []int64{0}},
		// A crash left epoch 0 open; kfake bumped the epoch in memory
		// and the restarted producer wrote epoch 1 without a repair.
		{"two dangling epochs of one producer", []r{{1, 0, recordTxnData}, {1, 1, recordTxnData}}, []int64{0, 1}},
		{"marker only (data below the clean point)", []r{{1, 0, recordMarker}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newPartScan(topicPartition{"t", 0}, "", 0, int64(len(tc.recs)))
			for off, rec := range tc.recs {
				s.add(int64(off), rec.pid, rec.epoch, rec.kind)
			}
			var got []int64
			for _, d := range s.dangling() {
				got = append(got, d.First)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("open pairs start at %v, want %v", got, tc.want)
			}
			if !s.done() {
				t.Fatalf("scan not done after reading [0, %d)", s.to)
			}
		})
	}
}

// TestTimedOutTxnIsNotRepaired: a transaction the broker aborted on its
// timeout is closed (its marker carries the bumped epoch); restarts read it
// and write nothing.
func TestTimedOutTxnIsNotRepaired(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	createTopic(t, b.Addr(), "out", 1)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p := newClient(t, b.Addr(), kgo.TransactionalID("slow"), kgo.TransactionTimeout(time.Second))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, rec("out", 0, "late")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Wait for the broker to abort it: the last stable offset moves past
	// the record and the marker.
	for {
		if e := endOffsets(t, b.Addr(), "out"); e[0] == 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the broker never timed the transaction out")
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.Close()
	produceTxn(t, b.Addr(), "fast", true, rec("out", 0, "ok"))
	b.Close()
	if err := removeCheckpoint(dir); err != nil {
		t.Fatal(err)
	}

	b = startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	defer b.Close()
	if rep := b.repair; len(rep.Aborted) != 0 || len(rep.Live) != 0 || rep.Records != 4 {
		t.Fatalf("repair: %+v; want 4 records read and nothing aborted", rep)
	}
	want := []string{"ok"}
	if got := consume(t, b.Addr(), "out", kgo.ReadCommitted(), len(want), 10*time.Second); !slices.Equal(got, want) {
		t.Fatalf("read_committed got %v, want %v", got, want)
	}
}
