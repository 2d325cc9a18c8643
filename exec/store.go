package exec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/state"
)

// taskStore is one task's state store: the RocksDB store, the overlay of
// the open transaction, and the checkpoint of how far the store has
// applied its changelog.
type taskStore struct {
	name      string
	dir       string
	changelog string
	partition int32
	base      state.Store // *state.Rocks, or *state.Memory (memory)
	ov        *state.Overlay
	// memory: the store is held in memory (Config.MemoryStores); it has
	// no checkpoint and is restored from its changelog at every open.
	memory     bool
	next       int64 // changelog offset after the last record written (in the overlay)
	applied    int64 // changelog offset the store has applied up to (committed)
	checkpoint int64 // applied, as of the checkpoint file
	// ckpt, when set, delivers the checkpoint being written in the
	// background (checkpointBehind).
	ckpt chan ckptDone
	// async: the overlay applies each committed transaction in the
	// background (state.Overlay.SetAsyncCommit; a running task's
	// stores); flight is next as of the last commit, which applied
	// reaches once that transaction is applied (the next commit, sync).
	async  bool
	flight int64
	// last is the newest changelog record this task produced in the open
	// transaction (stores with their own changelog); its offset, known
	// once the transaction is flushed, sets next.
	last *kgo.Record
	// aborts counts the transactions whose writes the store dropped, so
	// that operators keeping state beside the store know to reload it.
	aborts int64
	// expireBelow, when set, deletes every key below it once the open
	// transaction commits (a window store's retention).
	expireBelow []byte
	// uncached: the overlay keeps no cache of committed values
	// (cacheNothing).
	uncached bool
	// filtered: the overlay keeps a filter of the keys the store holds
	// (filterKeys).
	filtered bool
}

func (t *taskStore) checkpointPath() string { return filepath.Join(t.dir, "checkpoint") }

func (t *taskStore) checkpointKey() string {
	return t.changelog + "/" + strconv.Itoa(int(t.partition))
}

// openTaskStore opens the store of a task in dir and reads its checkpoint.
// A store whose checkpoint is missing or cannot be trusted is wiped: it
// will be restored from the start of its changelog. A memory store has
// none: it is restored from the start every time (and a RocksDB store
// left in dir by an earlier run is removed).
func openTaskStore(dir, name, changelog string, partition int32, res *state.RocksResources, memory bool) (*taskStore, error) {
	t := &taskStore{name: name, dir: dir, changelog: changelog, partition: partition, checkpoint: -1, flight: -1, memory: memory}
	if !memory {
		cp, err := state.ReadCheckpoint(t.checkpointPath())
		if off, ok := cp[t.checkpointKey()]; err == nil && ok {
			t.checkpoint = off
		} else if err != nil && !errors.Is(err, state.ErrCheckpointInvalid) {
			return nil, err
		}
	}
	t.applied = t.checkpoint
	if t.checkpoint < 0 {
		if err := os.RemoveAll(dir); err != nil {
			return nil, err
		}
	}
	if err := t.open(res); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *taskStore) open(res *state.RocksResources) error {
	if t.memory {
		// Reads of a memory store cost what a cache lookup would: no
		// cache. The key filter still saves a seek per absent key.
		m := state.NewMemory()
		t.base, t.ov = m, state.NewOverlay(m)
		t.ov.SetCacheEntries(0)
		if t.filtered {
			return t.ov.FilterKeys(0)
		}
		return nil
	}
	if err := os.MkdirAll(t.dir, 0o755); err != nil {
		return err
	}
	db, err := state.OpenRocks(filepath.Join(t.dir, "rocksdb"), state.RocksOptions{Resources: res})
	if err != nil {
		return err
	}
	t.base, t.ov = db, state.NewOverlay(db)
	if t.uncached {
		t.ov.SetCacheEntries(0)
	} else if res != nil {
		t.ov.ShareCache(res.ValueCache())
	}
	if t.filtered {
		return t.ov.FilterKeys(0)
	}
	return nil
}

// filterKeys makes the overlay keep a filter of the keys the store
// holds, now and after a wipe (state.Overlay.FilterKeys), so that a
// lookup of a key it never held costs no RocksDB read: for a store whose
// lookups are mostly of new keys (distinct values).
func (t *taskStore) filterKeys() error {
	t.filtered = true
	return t.ov.FilterKeys(0)
}

// cacheNothing turns the store's cache of committed values off, now and
// after a wipe, leaving the server's value cache to the other stores:
// for a store its task only writes (a table materialized for pull
// queries, which read it committed) or whose keys it reads about once
// (distinct values).
func (t *taskStore) cacheNothing() {
	if t.memory {
		return
	}
	t.uncached = true
	t.ov.SetCacheEntries(0)
}

// wipe empties the store, for a restore from the changelog's start.
func (t *taskStore) wipe(res *state.RocksResources) error {
	// A checkpoint written in the background must not land after it.
	_ = t.checkpointed(true)
	if err := t.ov.Close(); err != nil { // and the base under it
		return err
	}
	if err := os.RemoveAll(t.dir); err != nil {
		return err
	}
	t.checkpoint, t.applied = -1, -1
	return t.open(res)
}

// checkpointEvery is how far the changelog may run ahead of the store's
// checkpoint file, in offsets (Kafka Streams' threshold under
// exactly-once). A lagging checkpoint is safe: the store holds committed
// state only, and a restore from the checkpoint replays changelog records
// that each set a key's latest value, so replaying some twice changes
// nothing. Writing it less often saves two fsyncs per task per commit.
// A running store writes it in the background (checkpointBehind).
const checkpointEvery = 10_000

// commit applies the committed transaction's writes to the store and,
// every checkpointEvery offsets, records how far it has applied the
// changelog. With async, the writes are applied in the background: the
// previous transaction's are applied first (the overlay's Commit waits
// for them), and the checkpoint covers up to there only.
func (t *taskStore) commit() error {
	if t.last != nil {
		t.next = t.last.Offset + 1
		t.last = nil
	}
	if t.ov.Len() > 0 || t.async {
		if err := t.ov.Commit(); err != nil {
			return err
		}
	}
	t.applied = max(t.applied, t.flight)
	t.flight = t.next
	if !t.async {
		t.applied = max(t.applied, t.next)
	}
	if len(t.expireBelow) > 0 {
		// Expired windows: from the first window key (8 bytes) up. The
		// changelog keeps them until its own retention; a restore brings
		// them back until the next expiry. (After the transaction's
		// writes: DeleteRange waits for them.)
		if err := t.ov.DeleteRange(make([]byte, 8), t.expireBelow); err != nil {
			return err
		}
		t.expireBelow = t.expireBelow[:0]
		t.applied = max(t.applied, t.next)
	}
	if err := t.checkpointed(false); err != nil {
		return err
	}
	if t.ckpt == nil && t.applied-t.checkpoint >= checkpointEvery && !t.memory {
		t.checkpointBehind()
	}
	return nil
}

// ckptDone is the end of a checkpoint written in the background.
type ckptDone struct {
	off int64
	err error
}

// checkpointBehind writes the checkpoint of what the store has applied
// in the background: RocksDB's memtables flushed, then the file written
// and synced (a few milliseconds the thread used to wait for every
// checkpointEvery changelog offsets, each store apart). The next commit
// takes its result (checkpointed); a synchronous checkpoint (close, a
// restore's end), a wipe and the next background one wait for it, so
// that checkpoints reach the file in order and none after a wipe.
func (t *taskStore) checkpointBehind() {
	ov, path, key, off := t.ov, t.checkpointPath(), t.checkpointKey(), t.applied
	done := make(chan ckptDone, 1)
	t.ckpt = done
	go func() {
		// The flush covers every transaction applied before it began,
		// so at least those up to off.
		err := ov.FlushApplied()
		if err == nil {
			err = state.WriteCheckpoint(path, map[string]int64{key: off})
		}
		done <- ckptDone{off, err}
	}()
}

// checkpointed takes the result of the checkpoint being written in the
// background, if any: when it is done, or with wait by waiting for it.
func (t *taskStore) checkpointed(wait bool) error {
	if t.ckpt == nil {
		return nil
	}
	var d ckptDone
	if wait {
		d = <-t.ckpt
	} else {
		select {
		case d = <-t.ckpt:
		default:
			return nil
		}
	}
	t.ckpt = nil
	if d.err != nil {
		return fmt.Errorf("checkpointing %s: %w", t.dir, d.err)
	}
	t.checkpoint = max(t.checkpoint, d.off)
	return nil
}

// setAsync turns the background apply of committed transactions on or
// off (off waits for the one in flight).
func (t *taskStore) setAsync(on bool) error {
	if !on {
		if err := t.sync(); err != nil {
			return err
		}
	}
	if err := t.ov.SetAsyncCommit(on); err != nil {
		return err
	}
	t.async = on
	return nil
}

// sync waits until the store holds every committed transaction.
func (t *taskStore) sync() error {
	if err := t.ov.Sync(); err != nil {
		return err
	}
	t.applied = max(t.applied, t.flight)
	return nil
}

// writeCheckpoint makes the store's applied writes durable, then records
// how far it has applied the changelog (a transaction still being
// applied is not covered: see commit).
func (t *taskStore) writeCheckpoint() error {
	if err := t.checkpointed(true); err != nil {
		return err
	}
	if t.applied <= t.checkpoint || t.memory {
		return nil
	}
	if err := t.ov.FlushApplied(); err != nil {
		return err
	}
	if err := state.WriteCheckpoint(t.checkpointPath(), map[string]int64{t.checkpointKey(): t.applied}); err != nil {
		return err
	}
	t.checkpoint = t.applied
	return nil
}

// abort drops the open transaction's writes.
func (t *taskStore) abort() {
	t.ov.Abort()
	t.last = nil
	t.aborts++
	t.expireBelow = t.expireBelow[:0]
}

// close drops the open transaction's writes, checkpoints what was
// committed, and closes the store.
func (t *taskStore) close() error {
	t.ov.Abort()
	err := t.checkpointed(true) // not left writing under the close
	if err == nil {
		err = t.sync()
	}
	if err == nil {
		err = t.writeCheckpoint()
	}
	if cerr := t.ov.Close(); err == nil { // and the base under it
		err = cerr
	}
	return err
}
