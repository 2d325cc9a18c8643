package exec

import (
	"context"
	"errors"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// restoreBatch is how many changelog records a restore writes per batch.
const restoreBatch = 10000

// restore brings a task's store up to offset until (exclusive) of its
// changelog partition, writing each record with apply, reading read_committed from its checkpoint, or from
// the start when it has none or the checkpoint is past until (a store
// ahead of the committed offsets cannot be trusted). It returns how many
// records it read.
func (q *Query) restore(ctx context.Context, ts *taskStore, until int64, apply func(*kgo.Record) error) (int, error) {
	if ts.checkpoint > until {
		q.log.Warn("store is ahead of the committed offsets; restoring it from the start",
			"store", ts.dir, "checkpoint", ts.checkpoint, "committed", until)
		if err := ts.wipe(q.cfg.RocksResources); err != nil {
			return 0, err
		}
	}
	if ts.checkpoint == until {
		return 0, nil
	}
	if until <= 0 {
		// Nothing was ever committed: nothing to restore.
		ts.next = 0
		if err := ts.commit(); err != nil {
			return 0, err
		}
		return 0, ts.writeCheckpoint()
	}
	start := kgo.NewOffset().AtStart()
	if ts.checkpoint >= 0 {
		start = kgo.NewOffset().At(ts.checkpoint)
	}
	// Read every offset, control records and aborted data included, so
	// the restore knows exactly when it reaches until; transactional
	// records wait for their producer's marker: applied on commit,
	// dropped on abort. Everything below until (the last stable offset)
	// is decided.
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(q.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{ts.changelog: {ts.partition: start}}),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	began := time.Now()
	n, pending := 0, 0
	next := max(ts.checkpoint, 0) // offset after the last one read
	open := map[int64][]*kgo.Record{}
	for quiet := 0; next < until; {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if fs.Empty() {
			// Offsets below until that compaction removed never come.
			if quiet++; quiet >= 3 {
				q.log.Warn("restore ended before its end offset: the rest of the changelog is gone", "store", ts.dir, "at", next, "until", until)
				break
			}
			continue
		}
		quiet = 0
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = err
			}
		})
		if ferr != nil {
			return n, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= until {
				next = until
				return
			}
			next = r.Offset + 1
			switch {
			case r.Attrs.IsControl():
				if isCommitMarker(r) {
					for _, rr := range open[r.ProducerID] {
						_ = apply(rr) // bad records were skipped when first processed
						n++
						pending++
					}
				}
				delete(open, r.ProducerID)
			case r.Attrs.IsTransactional():
				open[r.ProducerID] = append(open[r.ProducerID], r)
			default:
				_ = apply(r)
				n++
				pending++
			}
		})
		if pending >= restoreBatch {
			if err := ts.ov.Commit(); err != nil {
				return n, err
			}
			pending = 0
		}
	}
	q.restored.Add(int64(n))
	if q.cfg.Metrics != nil {
		q.cfg.Metrics.SetRestore(filepath.Base(ts.dir), ts.partition, int64(n), int64(n))
	}
	ts.next = until
	if err := ts.commit(); err != nil {
		return n, err
	}
	if err := ts.writeCheckpoint(); err != nil {
		return n, err
	}
	q.log.Info("store restored", "store", ts.dir, "records", n, "until", until, "elapsed", time.Since(began))
	return n, nil
}

// isCommitMarker reports whether a control record is a commit marker (key:
// version int16, type int16 with 1 for commit).
func isCommitMarker(r *kgo.Record) bool {
	return len(r.Key) >= 4 && r.Key[2] == 0 && r.Key[3] == 1
}
