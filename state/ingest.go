//go:build cgo

package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/linxGnu/grocksdb"
)

// maxIngestL0 is how many files RocksDB's level 0 may hold for IngestBatch
// to add one more (RocksDB's own level0_slowdown_writes_trigger): an
// ingested file of random keys overlaps everything and lands there, and
// ingestion is not slowed as writes are, so past it a batch goes through
// the memtable instead and waits for compaction like any write.
const maxIngestL0 = 20

var _ Ingester = (*Rocks)(nil)

// ingestFile names the file the nth IngestBatch of a process writes in the
// store's directory before RocksDB takes it in (a leftover from a crash is
// overwritten by a later ingest; RocksDB ignores it).
func ingestFile(n uint64) string { return fmt.Sprintf("ingest-%d.sst.tmp", n) }

// IngestBatch implements Ingester: it sorts b's operations by key, keeps
// the last one per key, writes them to an SST file with the database's own
// table options and ingests the file (moved, not copied). RocksDB gives the
// file a sequence number above every earlier write, so it overrides them
// as a write batch would; keys the memtable holds are flushed first. When
// level 0 already holds maxIngestL0 files, it is ApplyBatchUnlogged.
func (r *Rocks) IngestBatch(b *Batch) error {
	if r.level0Files() >= maxIngestL0 {
		return r.ApplyBatchUnlogged(b)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return ErrClosed
	}
	if len(b.ops) == 0 {
		return nil
	}
	defer r.reads.wrote()

	order := ingestOrder(b)
	path := filepath.Join(r.dir, ingestFile(r.ingests.Add(1)))
	eo := grocksdb.NewDefaultEnvOptions()
	defer eo.Destroy()
	w := grocksdb.NewSSTFileWriter(eo, r.opts)
	defer w.Destroy()
	if err := w.Open(path); err != nil {
		return fmt.Errorf("state: rocks ingest: %w", err)
	}
	for _, i := range order {
		op := &b.ops[i]
		var err error
		if op.del {
			err = w.Delete(op.key)
		} else {
			err = w.Add(op.key, op.value)
		}
		if err != nil {
			w.Finish()
			os.Remove(path)
			return fmt.Errorf("state: rocks ingest: %w", err)
		}
	}
	if err := w.Finish(); err != nil {
		os.Remove(path)
		return fmt.Errorf("state: rocks ingest: %w", err)
	}
	io := grocksdb.NewDefaultIngestExternalFileOptions()
	defer io.Destroy()
	io.SetMoveFiles(true)
	err := r.db.IngestExternalFile([]string{path}, io)
	if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("state: rocks ingest: %w", err)
	}
	return nil
}

// ingestOrder returns the indexes of b's operations in key order, one per
// key: the last operation on it.
func ingestOrder(b *Batch) []int32 {
	order := make([]int32, len(b.ops))
	for i := range order {
		order[i] = int32(i)
	}
	// Equal keys keep the batch's order, so the last of a run is the
	// operation that wins.
	slices.SortFunc(order, func(x, y int32) int {
		if c := bytes.Compare(b.ops[x].key, b.ops[y].key); c != 0 {
			return c
		}
		return int(x - y)
	})
	out := order[:0]
	for n, i := range order {
		if n+1 < len(order) && bytes.Equal(b.ops[i].key, b.ops[order[n+1]].key) {
			continue
		}
		out = append(out, i)
	}
	return out
}

// level0Files returns how many files level 0 holds (0 when unknown).
func (r *Rocks) level0Files() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return 0
	}
	n, _ := strconv.Atoi(r.db.GetProperty("rocksdb.num-files-at-level0"))
	return n
}
