package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/metrics"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/state"
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
	// StateDir is where tasks keep their state stores (required for
	// topologies with stores).
	StateDir string
	// RocksResources is the server's shared RocksDB block cache,
	// write-buffer and value-cache budgets; nil gives each store private
	// resources.
	RocksResources *state.RocksResources
	// Metrics, when set, receives commit latencies, consumer lag and
	// restore progress.
	Metrics *metrics.Query
	// BadRecord, when set, also receives each bad record (after it is
	// counted and logged), e.g. to write it to the processing log topic.
	// It is called on the stream thread and must not block.
	BadRecord func(BadRecord)

	// clientOpts are more options for the stream threads' clients
	// (tests: hooks).
	clientOpts []kgo.Opt
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
	// Restored counts the changelog records read to restore stores.
	Restored int64
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

	in, out, bad, commits, aborts, restored atomic.Int64

	mu      sync.Mutex
	lastErr error
	// stores holds each store's committed state per partition, for pull
	// queries (guarded by mu).
	stores map[string]map[int32]state.Store
}

// Start launches the topology's stream threads. They run until Stop.
func Start(id string, topo *physical.Topology, cfg Config) (*Query, error) {
	cfg.defaults()
	if topo.AppID == "" {
		return nil, errors.New("exec: a persistent query needs an application ID")
	}
	for _, st := range topo.SubTopologies {
		if st.Sink == nil && st.Materialize == nil && st.Repartition == nil {
			return nil, fmt.Errorf("exec: sub-topology %d writes nowhere", st.ID)
		}
	}
	if len(topo.Stores()) > 0 && cfg.StateDir == "" {
		return nil, errors.New("exec: a query with state stores needs a state directory")
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
		Commits: q.commits.Load(), Aborts: q.aborts.Load(), Restored: q.restored.Load(),
	}}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.lastErr != nil {
		s.State, s.Err = StateFailed, q.lastErr.Error()
	}
	return s
}

func (q *Query) addStore(name string, p int32, s state.Store) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stores == nil {
		q.stores = map[string]map[int32]state.Store{}
	}
	if q.stores[name] == nil {
		q.stores[name] = map[int32]state.Store{}
	}
	q.stores[name][p] = s
}

func (q *Query) removeStore(s state.Store) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, byPart := range q.stores {
		for p, st := range byPart {
			if st == s {
				delete(byPart, p)
			}
		}
	}
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

// task is one (sub-topology, partition) of a thread: a compiled chain
// of operators and, for a stateful sub-topology, its store.
type task struct {
	partition int32
	src       *sourceOp      // the chain, or nil for a materialization
	mat       *materializeOp // a source table's materialization, or nil
	diff      *diffOp        // a table's changes as removals and additions, or nil
	store     *taskStore     // the task's store, or nil
	aggs      []*aggregateOp // the chain's aggregates, which write their groups at commit
}

func (t *task) process(r *kgo.Record) error {
	switch {
	case t.mat != nil:
		return t.mat.process(r)
	case t.diff != nil:
		return t.diff.process(r)
	}
	return t.src.process(r)
}

// topicPartition names an input partition, and so a task.
type topicPartition struct {
	topic     string
	partition int32
}

// thread is one stream thread: a group member with its own transactional
// producer, processing every task assigned to it in one transaction per
// commit interval.
func (q *Query) thread(ctx context.Context, n int) error {
	subs := map[string]*physical.SubTopology{}
	changelogs := map[string]bool{}
	for _, st := range q.topo.SubTopologies {
		subs[st.Source.Topic] = st
	}
	for _, s := range q.topo.Stores() {
		if !s.SourceTopicChangelog {
			changelogs[s.Changelog] = true
		}
	}
	// The group callbacks run outside the poll loop; they only note the
	// partitions, and the loop opens and closes tasks.
	var assignMu sync.Mutex
	var assigned, revoked []topicPartition
	note := func(to *[]topicPartition) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			assignMu.Lock()
			for t, ps := range m {
				for _, p := range ps {
					*to = append(*to, topicPartition{t, p})
				}
			}
			assignMu.Unlock()
		}
	}
	sess, err := kgo.NewGroupTransactSession(append([]kgo.Opt{
		kgo.SeedBrokers(q.cfg.Brokers...),
		kgo.ConsumerGroup(q.topo.AppID),
		kgo.ConsumeTopics(q.topo.SourceTopics()...),
		kgo.TransactionalID(fmt.Sprintf("%s-%s-%d", q.topo.AppID, q.cfg.InstanceID, n)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(q.cfg.resetOffset()),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(10 * time.Second),
		kgo.TransactionTimeout(60 * time.Second),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(taskPartitioner{changelogs: changelogs, def: kgo.StickyKeyPartitioner(nil)}),
		kgo.WithPools(&recordPool{}),
		kgo.OnPartitionsAssigned(note(&assigned)),
		kgo.OnPartitionsRevoked(note(&revoked)),
		kgo.OnPartitionsLost(note(&revoked)),
	}, q.cfg.clientOpts...)...)
	if err != nil {
		return err
	}
	defer sess.Close()

	var ts time.Time
	var undo bool // set while a table row's removal runs through a chain
	out := &outbox{}
	var produceErr atomic.Pointer[error]
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			e := err // only a failure's error escapes to the heap
			produceErr.CompareAndSwap(nil, &e)
		}
	}
	out.send = func(r *kgo.Record) {
		q.out.Add(1)
		// Not ctx: records of a stopping thread must still reach its
		// final commit.
		sess.Produce(context.Background(), r, promise)
	}
	// Each sub-topology's last operator (a sink or a repartition) is
	// shared by its tasks: it keeps no per-task state.
	terminals := map[*physical.SubTopology]Operator{}
	terminal := func(st *physical.SubTopology) (Operator, error) {
		if op := terminals[st]; op != nil {
			return op, nil
		}
		var op Operator
		var err error
		switch {
		case st.Sink != nil:
			op, err = newSink(st.Sink, out, &ts)
		case st.Repartition != nil:
			op, err = newRepartition(st.Repartition, out, &ts, &undo)
		default:
			err = fmt.Errorf("sub-topology %d has no sink", st.ID)
		}
		if err != nil {
			return nil, err
		}
		terminals[st] = op
		return op, nil
	}
	tasks := map[topicPartition]*task{}
	defer func() {
		for tp, t := range tasks {
			q.closeTask(t)
			delete(tasks, tp)
		}
	}()
	// newTask builds the task of partition p of st. until is, for a store
	// restored from its input topic (a source table), the group's
	// committed offset; stores with their own changelog are restored to
	// its end.
	newTask := func(st *physical.SubTopology, p int32, until int64) (*task, error) {
		t := &task{partition: p}
		open := func(s *physical.Store) (*taskStore, error) {
			dir := filepath.Join(q.cfg.StateDir, q.topo.AppID, fmt.Sprintf("%d_%d", st.ID, p), s.Name)
			store, err := openTaskStore(dir, s.Changelog, p, q.cfg.RocksResources)
			if err != nil {
				return nil, fmt.Errorf("opening store %s: %w", dir, err)
			}
			return store, nil
		}
		if m := st.Materialize; m != nil {
			store, err := open(m.Store)
			if err != nil {
				return nil, err
			}
			t.store = store
			if t.mat, err = newMaterialize(st.Source, store); err != nil {
				store.close()
				return nil, err
			}
			apply := func(r *kgo.Record) error { return apply(t.mat.check, store.ov, r, &t.mat.buf) }
			if _, err := q.restore(ctx, store, until, apply); err != nil {
				store.close()
				return nil, fmt.Errorf("restoring store %s: %w", store.dir, err)
			}
			q.addStore(m.Store.Name, p, store.base)
			return t, nil
		}
		last, err := terminal(st)
		if err != nil {
			return nil, err
		}
		stateful := func(pp physical.Processor, next Operator) (Operator, error) {
			a := pp.(*physical.Aggregate)
			store, err := open(a.Store)
			if err != nil {
				return nil, err
			}
			t.store = store
			end, err := q.changelogEnd(ctx, sess.Client(), a.Store.Changelog, p)
			if err != nil {
				store.close()
				return nil, err
			}
			apply := func(r *kgo.Record) error { return restoreAggregate(store.ov, r) }
			if _, err := q.restore(ctx, store, end, apply); err != nil {
				store.close()
				return nil, fmt.Errorf("restoring store %s: %w", store.dir, err)
			}
			q.addStore(a.Store.Name, p, store.base)
			op, err := newAggregate(a, store, out, &ts, next)
			if err != nil {
				return nil, err
			}
			t.aggs = append(t.aggs, op)
			return op, nil
		}
		// Each task compiles its own chain: evaluators keep scratch state.
		head, err := buildChainWith(st.Processors, last, stateful)
		if err != nil {
			if t.store != nil {
				t.store.close()
			}
			return nil, err
		}
		if t.src, err = newSource(st.Source, &ts, head); err != nil {
			return nil, err
		}
		if st.Diff != nil {
			store, err := open(st.Diff)
			if err != nil {
				return nil, err
			}
			t.store = store
			d := &diffOp{add: t.src, store: store, undo: &undo, ts: &ts}
			if d.check, err = newSource(st.Source, nil, nopOperator{}); err == nil {
				d.sub, err = newSource(st.Source, &ts, head)
			}
			if err != nil {
				store.close()
				return nil, err
			}
			// The store follows the table's topic: restore it up to the
			// group's committed offset, keeping the latest value per key.
			var buf []byte
			apply := func(r *kgo.Record) error { return apply(d.check, store.ov, r, &buf) }
			if _, err := q.restore(ctx, store, until, apply); err != nil {
				store.close()
				return nil, fmt.Errorf("restoring store %s: %w", store.dir, err)
			}
			t.diff = d
		}
		return t, nil
	}

	inTxn := false
	var txnStart time.Time
	end := func(ctx context.Context, try kgo.TransactionEndTry) error {
		for _, t := range tasks {
			for _, a := range t.aggs {
				if try != kgo.TryCommit {
					a.dropGroups()
				} else if err := a.flushGroups(); err != nil {
					a.dropGroups()
					try = kgo.TryAbort // the transaction would miss state
					q.log.Error("writing aggregate state; aborting the transaction", "thread", n, "err", err)
				}
			}
		}
		if try == kgo.TryCommit {
			out.flush()
		}
		began := time.Now()
		committed, err := sess.End(ctx, try)
		if q.cfg.Metrics != nil && committed && err == nil {
			q.cfg.Metrics.ObserveCommit(time.Since(began))
		}
		inTxn = false
		// Stores follow the transaction: its writes are applied when it
		// committed, dropped when it aborted. (Offsets of the changelog
		// records are known here; the outbox is reset after.)
		for _, t := range tasks {
			if t.store == nil {
				continue
			}
			if committed && err == nil {
				if cerr := t.store.commit(); cerr != nil {
					out.reset()
					return fmt.Errorf("applying committed state: %w", cerr)
				}
			} else {
				t.store.abort()
			}
		}
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
	// The session counts records as consumed when PollFetches returns
	// them, and End commits their offsets: a transaction may commit only
	// once every polled record has been processed. unprocessed is set
	// while some may not have been; leaving then aborts.
	unprocessed := false
	defer func() {
		if inTxn {
			try := kgo.TryCommit
			if unprocessed {
				try = kgo.TryAbort
			}
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = end(sctx, try)
			cancel()
		}
	}()

	for {
		pctx, cancel := context.WithTimeout(ctx, q.cfg.CommitInterval)
		fetches := sess.PollFetches(pctx)
		cancel()
		// Stopping: records polled as the stop came are processed (and
		// committed on the way out), but no more are polled.
		stopping, polled := ctx.Err() != nil, fetches.NumRecords() > 0
		if stopping && !polled {
			return nil
		}
		unprocessed = polled
		if fetches.IsClientClosed() {
			return errors.New("client closed")
		}
		fetches.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				q.log.Warn("fetch error", "topic", t, "partition", p, "err", err)
			}
		})
		// Tasks of partitions this member lost are closed; their open
		// writes were in a transaction the session aborts. Stores of newly
		// assigned partitions are restored now, not at their first record,
		// so that pull queries see them at once.
		assignMu.Lock()
		gone, gained := revoked, assigned
		revoked, assigned = nil, nil
		assignMu.Unlock()
		for _, tp := range gone {
			if t := tasks[tp]; t != nil {
				if inTxn {
					if err := end(ctx, kgo.TryAbort); err != nil {
						return err
					}
				}
				q.closeTask(t)
				delete(tasks, tp)
			}
		}
		if len(gained) > 0 && len(q.topo.Stores()) > 0 {
			if err := q.openAssigned(ctx, sess.Client(), gained, subs, tasks, newTask); err != nil {
				return err
			}
		}
		if polled {
			if !inTxn {
				if err := sess.Begin(); err != nil {
					return fmt.Errorf("beginning transaction: %w", err)
				}
				inTxn, txnStart = true, time.Now()
			}
			var taskErr error
			fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
				if taskErr != nil || len(fp.Records) == 0 {
					return
				}
				tp := topicPartition{fp.Topic, fp.Partition}
				if q.cfg.Metrics != nil && fp.HighWatermark >= 0 {
					q.cfg.Metrics.SetLag(fp.Topic, fp.Partition, fp.HighWatermark-(fp.Records[len(fp.Records)-1].Offset+1))
				}
				t := tasks[tp]
				if t == nil {
					st := subs[fp.Topic]
					if st == nil {
						taskErr = fmt.Errorf("records from unexpected topic %s", fp.Topic)
						return
					}
					if t, taskErr = newTask(st, fp.Partition, fp.Records[0].Offset); taskErr != nil {
						return
					}
					tasks[tp] = t
				}
				q.in.Add(int64(len(fp.Records)))
				for _, r := range fp.Records {
					if err := t.process(r); err != nil {
						q.badRecord(r, err)
					}
					// Nothing keeps the record itself: rows copy what
					// they keep, or point into the fetch response.
					r.Recycle()
				}
			})
			if taskErr != nil {
				return taskErr
			}
			out.flush()
			unprocessed = false
		}
		if stopping {
			return nil // the deferred end commits
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
	}
}

// openAssigned creates the stateful tasks of newly assigned partitions,
// restoring their stores before any record is processed.
func (q *Query) openAssigned(ctx context.Context, cl *kgo.Client, parts []topicPartition, subs map[string]*physical.SubTopology,
	tasks map[topicPartition]*task, newTask func(*physical.SubTopology, int32, int64) (*task, error)) error {
	var offs kadm.OffsetResponses
	for _, tp := range parts {
		st := subs[tp.topic]
		if st == nil || tasks[tp] != nil || !stateful(st) {
			continue
		}
		if offs == nil {
			var err error
			if offs, err = kadm.NewClient(cl).FetchOffsets(ctx, q.topo.AppID); err != nil {
				return fmt.Errorf("fetching committed offsets: %w", err)
			}
		}
		at := int64(0)
		if o, ok := offs.Lookup(tp.topic, tp.partition); ok && o.Err == nil && o.At >= 0 {
			at = o.At
		}
		t, err := newTask(st, tp.partition, at)
		if err != nil {
			return err
		}
		tasks[tp] = t
	}
	return nil
}

func stateful(st *physical.SubTopology) bool {
	if st.Materialize != nil || st.Diff != nil {
		return true
	}
	for _, p := range st.Processors {
		if _, ok := p.(*physical.Aggregate); ok {
			return true
		}
	}
	return false
}

// changelogEnd returns the last stable offset of a changelog partition:
// where a restore of it ends.
func (q *Query) changelogEnd(ctx context.Context, cl *kgo.Client, topic string, p int32) (int64, error) {
	offs, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("listing %s's end: %w", topic, err)
	}
	o, ok := offs.Lookup(topic, p)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("end of %s/%d: %v", topic, p, o.Err)
	}
	return o.Offset, nil
}

// taskPartitioner sends changelog records to the partition their task
// chose (the task's own partition) and everything else by key, as Kafka's
// Java clients do.
type taskPartitioner struct {
	changelogs map[string]bool
	def        kgo.Partitioner
}

func (p taskPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if p.changelogs[topic] {
		return kgo.ManualPartitioner().ForTopic(topic)
	}
	return p.def.ForTopic(topic)
}

// closeTask releases a task's store.
func (q *Query) closeTask(t *task) {
	if t.store == nil {
		return
	}
	q.removeStore(t.store.base)
	if err := t.store.close(); err != nil {
		q.log.Warn("closing store", "dir", t.store.dir, "err", err)
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
