package exec

import (
	"context"
	"errors"
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
		return 0, ts.commit()
	}
	start := kgo.NewOffset().AtStart()
	if ts.checkpoint >= 0 {
		start = kgo.NewOffset().At(ts.checkpoint)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(q.cfg.Brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{ts.changelog: {ts.partition: start}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
	)
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	began := time.Now()
	n, pending := 0, 0
	last := ts.checkpoint - 1 // offset of the last record read
	empty := 0
	for last+1 < until {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return n, err
		}
		if fs.Empty() {
			// read_committed hides control records and aborted data, so
			// the last offsets before until may never arrive: one
			// commit marker is expected; a longer silence after the
			// first records means an aborted tail. Before any record, give
			// a slow broker more time.
			empty++
			if (last >= 0 && last+2 >= until) || (n > 0 && empty >= 3) || empty >= 10 {
				break
			}
			continue
		}
		empty = 0
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
				last = until
				return
			}
			// Bad records were skipped when first processed; skip them again.
			_ = apply(r)
			n++
			pending++
			last = r.Offset
		})
		if pending >= restoreBatch {
			if err := ts.ov.Commit(); err != nil {
				return n, err
			}
			pending = 0
		}
	}
	q.restored.Add(int64(n))
	ts.next = until
	if err := ts.commit(); err != nil {
		return n, err
	}
	q.log.Info("store restored", "store", ts.dir, "records", n, "until", until, "elapsed", time.Since(began))
	return n, nil
}
