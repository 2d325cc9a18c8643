package exec

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/state"
)

// TestCheckpointWrittenBehind commits a running store's transactions
// past checkpointEvery changelog offsets: the checkpoint is then written
// in the background (the commit does not wait for RocksDB's flush and
// the file's fsyncs), taken by a later commit, and the file holds an
// offset the store had applied; closing the store waits for it and
// checkpoints the rest, so that a reopen finds every committed write and
// restores from the last one.
func TestCheckpointWrittenBehind(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	ts, err := openTaskStore(dir, "S", "log", 0, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.setAsync(true); err != nil {
		t.Fatal(err)
	}
	const perTxn = 1000
	offset, behind := int64(0), false
	for txn := 0; txn < 3*checkpointEvery/perTxn; txn++ {
		for i := 0; i < perTxn; i++ {
			if err := ts.ov.Put(fmt.Appendf(nil, "k%06d", offset), []byte("v")); err != nil {
				t.Fatal(err)
			}
			ts.last = &kgo.Record{Offset: offset}
			offset++
		}
		if err := ts.commit(); err != nil {
			t.Fatal(err)
		}
		if ts.ckpt != nil {
			behind = true
			if ts.checkpoint >= ts.applied {
				t.Fatalf("a checkpoint in flight while the file holds %d of %d applied", ts.checkpoint, ts.applied)
			}
		}
		if ts.checkpoint > ts.applied {
			t.Fatalf("checkpoint %d past applied %d", ts.checkpoint, ts.applied)
		}
	}
	if !behind {
		t.Fatal("no checkpoint was written in the background")
	}
	if err := ts.checkpointed(true); err != nil {
		t.Fatal(err)
	}
	cp, err := state.ReadCheckpoint(ts.checkpointPath())
	if err != nil {
		t.Fatal(err)
	}
	if got := cp[ts.checkpointKey()]; got != ts.checkpoint || got < checkpointEvery {
		t.Fatalf("checkpoint file holds %d, the store %d", got, ts.checkpoint)
	}
	if err := ts.close(); err != nil {
		t.Fatal(err)
	}

	if ts, err = openTaskStore(dir, "S", "log", 0, nil, false); err != nil {
		t.Fatal(err)
	}
	defer ts.close()
	if ts.checkpoint != offset {
		t.Fatalf("reopened at checkpoint %d, want %d (every committed offset)", ts.checkpoint, offset)
	}
	for _, k := range []int64{0, offset / 2, offset - 1} {
		if v, err := ts.ov.Get(fmt.Appendf(nil, "k%06d", k)); err != nil || string(v) != "v" {
			t.Fatalf("key %d after reopen: %q, %v", k, v, err)
		}
	}
}
