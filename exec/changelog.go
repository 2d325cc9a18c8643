package exec

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/state"
)

// restoreChunk is how many bytes of keys and values a store's restore
// collects before it writes them: enough for RocksDB to take them
// as one sorted file (state.Ingester) rather than a memtable write per
// record, which costs several times more for keys in random order. Under
// a memory limit it is twice the fetch size the budget gives, at least 4
// MiB (smaller files would pile up in RocksDB's level 0).
const restoreChunk = 32 << 20

// restoreChunkOps bounds a chunk's records as well, so that the batch's
// list of operations (which the garbage collector scans) stays small: at
// most this, and one per 64 bytes of the chunk.
const restoreChunkOps = 1 << 18

// chunkOps is the most records of a restore chunk for q's configuration.
func (q *Query) chunkOps() int { return min(restoreChunkOps, q.chunkBytes()/64) }

// chunkBytes is the restore chunk for q's configuration.
func (q *Query) chunkBytes() int {
	if n := int(q.cfg.FetchMaxBytes); n > 0 {
		return min(restoreChunk, max(2*n, 4<<20))
	}
	return restoreChunk
}

// restoreStep bounds how long one step of the changelog reader reads
// before the stream thread polls its inputs again.
const restoreStep = 200 * time.Millisecond

// restoration is one store being brought up to date from its changelog
// partition.
type restoration struct {
	task  *Task
	store *taskStore
	tp    topicPartition
	// until is where the restore ends (exclusive): the changelog's last
	// stable offset, or for a source table's store the group's committed
	// offset of the table's topic.
	until int64
	// logStart is the changelog's log start offset when the restore
	// began, for a changelog whose time retention deletes from its start
	// (0 otherwise): reading begins there at the earliest.
	logStart int64
	next     int64 // offset after the last one read
	from     int64 // where the restore began, for its progress
	// open holds transactional records until their producer's marker:
	// applied on commit, dropped on abort.
	open  map[int64][]*kgo.Record
	apply func(*kgo.Record) error
	// bulk is where apply writes: batches applied to the store without
	// the WAL, large ones as ingested files (Overlay.ApplyBulk).
	bulk *bulkWriter
	// n counts the records applied.
	n     int
	began time.Time
}

// changelogReader restores the stores of a thread's restoring tasks, a
// step at a time between the thread's polls, so that restoring never
// blocks other tasks nor holds a transaction open (Kafka Streams'
// StoreChangelogReader). It reads every offset read_uncommitted with
// control records, so it knows exactly when it reaches its end: a quiet
// broker is waited for, never taken as the end.
type changelogReader struct {
	q      *Query
	cl     *kgo.Client
	active map[topicPartition]*restoration
	// quiet is since when no step has read anything.
	quiet time.Time
}

// add starts restoring rs.store. It returns true when there is nothing
// to read (the store is up to date), having written the checkpoint.
func (r *changelogReader) add(rs *restoration) (bool, error) {
	ts := rs.store
	if ts.checkpoint > rs.until {
		r.q.log.Warn("store is ahead of the committed offsets; restoring it from the start",
			"store", ts.dir, "checkpoint", ts.checkpoint, "committed", rs.until)
		if err := ts.wipe(r.q.cfg.RocksResources); err != nil {
			return false, err
		}
	}
	if ts.checkpoint == rs.until {
		// A standby or a clean close left it at the changelog's end.
		r.q.log.Info("store up to date", "store", ts.dir, "records", 0, "until", rs.until)
		return true, nil
	}
	if rs.until <= 0 || rs.logStart >= rs.until {
		// Nothing was ever committed, or retention deleted all of it
		// (the store keeps what it has): nothing to restore.
		ts.next = max(rs.until, 0)
		if err := ts.commit(); err != nil {
			return false, err
		}
		return true, ts.writeCheckpoint()
	}
	if r.cl == nil {
		cl, err := r.q.cfg.Kafka.NewClient(
			kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
			kgo.KeepControlRecords(),
			kgo.FetchMaxWait(100*time.Millisecond),
		)
		if err != nil {
			return false, err
		}
		r.cl = cl
	}
	start := kgo.NewOffset().AtStart()
	if ts.checkpoint >= 0 || rs.logStart > 0 {
		// Past what retention deleted, if it reached the checkpoint.
		start = kgo.NewOffset().At(max(ts.checkpoint, rs.logStart))
	}
	rs.next = max(ts.checkpoint, 0, rs.logStart)
	rs.from = rs.next
	// Both batches sized for the first chunk at once: growing them
	// record by record copied them over and over.
	ops := int(min(rs.until-rs.from, int64(r.q.chunkOps())))
	rs.bulk.b.Grow(ops, min(ops*64, r.q.chunkBytes()))
	rs.bulk.spare.Grow(ops, min(ops*64, r.q.chunkBytes()))
	r.progress(rs)
	rs.open = map[int64][]*kgo.Record{}
	rs.began = time.Now()
	if r.active == nil {
		r.active = map[topicPartition]*restoration{}
	}
	r.active[rs.tp] = rs
	r.cl.AddConsumePartitions(map[string]map[int32]kgo.Offset{rs.tp.topic: {rs.tp.partition: start}})
	r.quiet = time.Now()
	return false, nil
}

// restoring reports whether any store is being restored.
func (r *changelogReader) restoring() bool { return len(r.active) > 0 }

// remove stops restoring task's stores (the task was revoked).
func (r *changelogReader) remove(t *Task) {
	for tp, rs := range r.active {
		if rs.task == t {
			r.stop(tp)
		}
	}
}

func (r *changelogReader) stop(tp topicPartition) {
	if rs := r.active[tp]; rs != nil {
		_ = rs.bulk.wait() // the store may close next; the restore is abandoned
	}
	delete(r.active, tp)
	r.cl.RemoveConsumePartitions(map[string][]int32{tp.topic: {tp.partition}})
}

// step reads changelog records for up to restoreStep and returns the
// restorations that reached their end, their stores committed and
// checkpointed.
func (r *changelogReader) step(ctx context.Context) ([]*restoration, error) {
	var done []*restoration
	deadline := time.Now().Add(restoreStep)
	for len(r.active) > 0 && time.Now().Before(deadline) {
		pctx, cancel := context.WithDeadline(ctx, deadline)
		fs := r.cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return done, err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				return
			}
			// Retried: the client keeps fetching.
			r.q.log.Warn("changelog fetch error; retrying", "topic", t, "partition", p, "err", err)
			if errors.Is(err, kgo.ErrClientClosed) {
				ferr = err
			}
		})
		if ferr != nil {
			return done, ferr
		}
		if fs.Empty() {
			if time.Since(r.quiet) > 10*time.Second {
				for _, rs := range r.active {
					r.q.log.Warn("restore waiting for the changelog", "store", rs.store.dir, "at", rs.next, "until", rs.until)
				}
				r.quiet = time.Now()
			}
			continue
		}
		r.quiet = time.Now()
		var aerr error
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			rs := r.active[topicPartition{fp.Topic, fp.Partition}]
			if rs == nil || aerr != nil {
				return
			}
			for _, rec := range fp.Records {
				if rec.Offset < rs.next {
					continue
				}
				past := rec.Offset >= rs.until
				if past && len(rs.open) == 0 {
					rs.next = max(rs.next, rs.until)
					break
				}
				// Past the end, only the markers of transactions still
				// open are read: a source table's topic restores up to
				// the group's committed offset, which a transaction's
				// last records can reach before its marker.
				rs.next = rec.Offset + 1
				switch {
				case rec.Attrs.IsControl():
					if isCommitMarker(rec) {
						for _, rr := range rs.open[rec.ProducerID] {
							_ = rs.apply(rr) // bad records were skipped when first processed
							rs.n++
						}
					}
					delete(rs.open, rec.ProducerID)
				case past:
				case rec.Attrs.IsTransactional():
					rs.open[rec.ProducerID] = append(rs.open[rec.ProducerID], rec)
				default:
					_ = rs.apply(rec)
					rs.n++
				}
			}
			end := rs.next >= rs.until && len(rs.open) == 0
			if !end {
				r.progress(rs)
			}
			if rs.full(r.q) || end {
				// Without RocksDB's WAL, or as an ingested file: finish
				// flushes the memtables before the checkpoint; a crash
				// before it replays the changelog from the previous
				// checkpoint, which rewrites the same values in order.
				if err := rs.writeBehind(); err != nil {
					aerr = err
					return
				}
			}
			if end {
				if err := r.finish(rs); err != nil {
					aerr = err
					return
				}
				done = append(done, rs)
			}
		})
		if aerr != nil {
			return done, aerr
		}
	}
	return done, nil
}

// progress reports how far a restoration is, in changelog offsets, to
// the metrics (the console shows it); finish reports the end.
func (r *changelogReader) progress(rs *restoration) {
	if r.q.cfg.Metrics != nil {
		r.q.cfg.Metrics.SetRestore(filepath.Base(rs.store.dir), rs.store.partition, rs.next-rs.from, rs.until-rs.from)
	}
}

// finish ends a restoration that reached its end: the store has applied
// its changelog up to until, durably.
func (r *changelogReader) finish(rs *restoration) error {
	r.stop(rs.tp)
	ts := rs.store
	r.q.restored.Add(int64(rs.n))
	if r.q.cfg.Metrics != nil {
		r.q.cfg.Metrics.SetRestore(filepath.Base(ts.dir), ts.partition, int64(rs.n), int64(rs.n))
	}
	ts.next = rs.until
	if err := rs.commitBulk(); err != nil {
		return fmt.Errorf("restoring %s: %w", ts.dir, err)
	}
	if err := ts.ov.FlushBulk(); err != nil {
		return fmt.Errorf("restoring %s: %w", ts.dir, err)
	}
	if err := ts.commit(); err != nil {
		return fmt.Errorf("restoring %s: %w", ts.dir, err)
	}
	if err := ts.writeCheckpoint(); err != nil {
		return fmt.Errorf("restoring %s: %w", ts.dir, err)
	}
	r.q.log.Info("store restored", "store", ts.dir, "records", rs.n, "until", rs.until, "elapsed", time.Since(rs.began))
	return nil
}

// full reports whether the restore has collected enough to write.
func (rs *restoration) full(q *Query) bool {
	return rs.bulk.b.Len() >= q.chunkOps() || rs.bulk.b.Size() >= q.chunkBytes()
}

// commitBulk writes what the restore applied since the last call to the
// store, and waits for it: without RocksDB's WAL, a large chunk as an
// ingested file.
func (rs *restoration) commitBulk() error {
	if err := rs.bulk.wait(); err != nil {
		return err
	}
	err := rs.store.ov.ApplyBulk(&rs.bulk.b)
	rs.bulk.b.Reset()
	return err
}

// writeBehind is commitBulk without the wait: the chunk is sorted and
// written to the store in the background while the reader fills the next
// one (the previous chunk's write is waited for first, so chunks reach
// the store in changelog order).
func (rs *restoration) writeBehind() error {
	return rs.bulk.writeBehind(rs.store.ov)
}

// kvWriter is what restoring a store writes to.
type kvWriter interface {
	Put(key, value []byte) error
	Delete(key []byte) error
}

// bulkWriter collects a restore's writes in a batch, b, while the batch
// before it, spare, may be being written to the store in the background.
type bulkWriter struct {
	b     state.Batch
	spare state.Batch
	// done carries the background write's result; nil when none runs.
	done chan error
}

// wait waits for the background write, if any, and returns its error.
func (w *bulkWriter) wait() error {
	if w.done == nil {
		return nil
	}
	err := <-w.done
	w.done = nil
	return err
}

// writeBehind starts writing b to ov in the background (after the previous
// background write ends) and gives b the spare batch to fill.
func (w *bulkWriter) writeBehind(ov *state.Overlay) error {
	if err := w.wait(); err != nil {
		return err
	}
	w.b, w.spare = w.spare, w.b
	done := make(chan error, 1)
	w.done = done
	go func() {
		err := ov.ApplyBulk(&w.spare)
		w.spare.Reset()
		done <- err
	}()
	return nil
}

func (w *bulkWriter) Put(key, value []byte) error { w.b.Put(key, value); return nil }
func (w *bulkWriter) Delete(key []byte) error     { w.b.Delete(key); return nil }

func (r *changelogReader) close() {
	for tp := range r.active {
		r.stop(tp)
	}
	if r.cl != nil {
		r.cl.Close()
	}
}

// isCommitMarker reports whether a control record is a commit marker (key:
// version int16, type int16 with 1 for commit).
func isCommitMarker(r *kgo.Record) bool {
	return len(r.Key) >= 4 && r.Key[2] == 0 && r.Key[3] == 1
}
