package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
)

// Config configures a persistent query's runtime.
type Config struct {
	// Brokers are the Kafka seed brokers.
	Brokers []string
	// InstanceID names this server among the instances running the query;
	// it is part of each stream thread's transactional ID.
	InstanceID string
	// Threads is the number of stream threads (default 1).
	Threads int
	// CommitInterval is how often open transactions commit (default
	// 100 ms, Kafka Streams' default under exactly-once).
	CommitInterval time.Duration
	// OffsetReset is where the query starts on partitions without a
	// committed offset: "earliest" (default) or "latest".
	OffsetReset string
	// Logger receives lifecycle events and bad records (default
	// slog.Default()).
	Logger *slog.Logger
	// BadRecord, when set, also receives each bad record (after it is
	// counted and logged), e.g. to write it to the processing log topic.
	// It is called on the stream thread and must not block.
	BadRecord func(BadRecord)
}

// BadRecord describes a record a query skipped.
type BadRecord struct {
	Query     string
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (c *Config) defaults() {
	if c.Threads <= 0 {
		c.Threads = 1
	}
	if c.CommitInterval <= 0 {
		c.CommitInterval = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

func (c *Config) resetOffset() kgo.Offset {
	if c.OffsetReset == "latest" {
		return kgo.NewOffset().AtEnd()
	}
	return kgo.NewOffset().AtStart()
}

// Stats are a query's counters.
type Stats struct {
	RecordsIn  int64
	RecordsOut int64
	BadRecords int64
	Commits    int64
	Aborts     int64
}

// Query states, as SHOW QUERIES prints them.
const (
	StateRunning = "RUNNING"
	// StateFailed marks a query whose stream thread failed and is being
	// restarted with backoff; the state returns to RUNNING after its next
	// successful commit.
	StateFailed = "FAILED"
)

// Status is a query's state as SHOW QUERIES reports it.
type Status struct {
	// State is StateRunning or StateFailed.
	State string
	// Err is the last error, when State is FAILED.
	Err string
	Stats
}

// Query is a running persistent query.
type Query struct {
	id     string
	topo   *physical.Topology
	cfg    Config
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup

	in, out, bad, commits, aborts atomic.Int64

	mu      sync.Mutex
	lastErr error
}

// Start launches the topology's stream threads. They run until Stop.
func Start(id string, topo *physical.Topology, cfg Config) (*Query, error) {
	cfg.defaults()
	if topo.AppID == "" {
		return nil, errors.New("exec: a persistent query needs an application ID")
	}
	if len(topo.SubTopologies) != 1 || topo.SubTopologies[0].Sink == nil {
		return nil, errors.New("exec: only single sub-topology queries with a sink are supported yet")
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := &Query{id: id, topo: topo, cfg: cfg, cancel: cancel, log: cfg.Logger.With("query", id)}
	for i := 0; i < cfg.Threads; i++ {
		q.wg.Add(1)
		go q.runThread(ctx, i)
	}
	return q, nil
}

// ID returns the query's ID.
func (q *Query) ID() string { return q.id }

// Topology returns the topology the query runs.
func (q *Query) Topology() *physical.Topology { return q.topo }

// Stop stops the stream threads, committing what they have processed, and
// waits for them to leave the group.
func (q *Query) Stop() {
	q.cancel()
	q.wg.Wait()
}

// Status reports the query's state and counters.
func (q *Query) Status() Status {
	s := Status{State: StateRunning, Stats: Stats{
		RecordsIn: q.in.Load(), RecordsOut: q.out.Load(), BadRecords: q.bad.Load(),
		Commits: q.commits.Load(), Aborts: q.aborts.Load(),
	}}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.lastErr != nil {
		s.State, s.Err = StateFailed, q.lastErr.Error()
	}
	return s
}

func (q *Query) setErr(err error) {
	q.mu.Lock()
	q.lastErr = err
	q.mu.Unlock()
}

// runThread runs one stream thread, restarting it with backoff when it
// fails, until ctx ends.
func (q *Query) runThread(ctx context.Context, n int) {
	defer q.wg.Done()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := q.thread(ctx, n)
		if err == nil || ctx.Err() != nil {
			return
		}
		q.setErr(err)
		q.log.Error("stream thread failed; restarting", "thread", n, "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

// thread is one stream thread: a group member with its own transactional
// producer, processing every task assigned to it in one transaction per
// commit interval.
func (q *Query) thread(ctx context.Context, n int) error {
	st := q.topo.SubTopologies[0]
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(q.cfg.Brokers...),
		kgo.ConsumerGroup(q.topo.AppID),
		kgo.ConsumeTopics(q.topo.SourceTopics()...),
		kgo.TransactionalID(fmt.Sprintf("%s-%s-%d", q.topo.AppID, q.cfg.InstanceID, n)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(q.cfg.resetOffset()),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(10*time.Second),
		kgo.TransactionTimeout(60*time.Second),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return err
	}
	defer sess.Close()

	var ts time.Time
	out := &outbox{}
	var produceErr atomic.Pointer[error]
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			produceErr.CompareAndSwap(nil, &err)
		}
	}
	out.produce = func(r *kgo.Record) {
		q.out.Add(1)
		// Not ctx: records of a stopping thread must still reach its
		// final commit.
		sess.Produce(context.Background(), r, promise)
	}
	sink, err := newSink(st.Sink, out, &ts)
	if err != nil {
		return err
	}
	tasks := map[int32]*sourceOp{}
	task := func(p int32) (*sourceOp, error) {
		if t := tasks[p]; t != nil {
			return t, nil
		}
		// Each task compiles its own chain: evaluators keep scratch state.
		head, err := buildChain(st.Processors, sink)
		if err != nil {
			return nil, err
		}
		t, err := newSource(st.Source, &ts, head)
		if err != nil {
			return nil, err
		}
		tasks[p] = t
		return t, nil
	}

	inTxn := false
	var txnStart time.Time
	end := func(ctx context.Context, try kgo.TransactionEndTry) error {
		committed, err := sess.End(ctx, try)
		inTxn = false
		out.reset()
		if err != nil {
			return fmt.Errorf("ending transaction: %w", err)
		}
		if committed {
			q.commits.Add(1)
		} else {
			// A rebalance or fencing aborted the transaction; the session
			// rewound to the committed offsets, so the records come again.
			q.aborts.Add(1)
			q.log.Info("transaction aborted; records will be reprocessed", "thread", n)
		}
		if pe := produceErr.Swap(nil); pe != nil {
			q.log.Warn("produce failed; transaction aborted", "thread", n, "err", *pe)
		}
		return nil
	}
	defer func() {
		if inTxn {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = end(sctx, kgo.TryCommit)
			cancel()
		}
	}()

	for {
		pctx, cancel := context.WithTimeout(ctx, q.cfg.CommitInterval)
		fetches := sess.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if fetches.IsClientClosed() {
			return errors.New("client closed")
		}
		var fetchErr error
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				q.log.Warn("fetch error", "topic", t, "partition", p, "err", err)
				fetchErr = err
			}
		})
		if fetches.NumRecords() > 0 {
			if !inTxn {
				if err := sess.Begin(); err != nil {
					return fmt.Errorf("beginning transaction: %w", err)
				}
				inTxn, txnStart = true, time.Now()
			}
			var taskErr error
			fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
				if taskErr != nil {
					return
				}
				t, err := task(fp.Partition)
				if err != nil {
					taskErr = err
					return
				}
				for _, r := range fp.Records {
					q.in.Add(1)
					if err := t.process(r); err != nil {
						q.badRecord(r, err)
					}
				}
			})
			if taskErr != nil {
				return taskErr
			}
		}
		if inTxn && time.Since(txnStart) >= q.cfg.CommitInterval {
			if err := end(ctx, kgo.TryCommit); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			q.setErr(nil)
		}
		_ = fetchErr
	}
}

// badRecord counts and logs a record that could not be processed.
func (q *Query) badRecord(r *kgo.Record, err error) {
	q.bad.Add(1)
	q.log.Warn("skipping bad record", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
	if q.cfg.BadRecord != nil {
		q.cfg.BadRecord(BadRecord{Query: q.id, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err})
	}
}
