package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/metrics"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// Config configures a persistent query's runtime.
type Config struct {
	// PropagateHeaders carries each input record's headers onto the
	// output and repartition records it causes, as Kafka Streams (and
	// ksqlDB) do. Queries recorded before it existed run without it, so
	// that their output does not change.
	PropagateHeaders bool
	// KsqlDelimited makes the query's sinks quote DELIMITED fields as
	// ksqlDB does (types.FormatOptions.KsqlQuoting). Queries recorded
	// before it existed run without it, so that their output does not
	// change.
	KsqlDelimited bool
	// Kafka is how the query's clients reach Kafka.
	Kafka kafka.Profile
	// InstanceID names this server among the instances running the query;
	// it is part of each stream thread's transactional ID.
	InstanceID string
	// Endpoint is this instance's internal REST address (host:port),
	// published to the query's group in each member's metadata so that
	// any instance can route a pull query to a partition's owner.
	Endpoint string
	// PGEndpoint is this instance's Postgres wire address, published
	// beside Endpoint.
	PGEndpoint string
	// Threads is the number of stream threads (default 1).
	Threads int
	// CommitInterval is how often open transactions commit (default
	// 100 ms, Kafka Streams' default under exactly-once).
	CommitInterval time.Duration
	// SyncStoreCommits applies each committed transaction's writes to a
	// running task's stores before the next transaction starts, instead
	// of in the background while it runs (the default: see
	// state.Overlay.SetAsyncCommit). For comparisons and tests.
	SyncStoreCommits bool
	// TransactionTimeout is transaction.timeout.ms under exactly-once
	// (default DefaultTransactionTimeout, 10 s, as Kafka Streams sets it):
	// how long the broker lets a stream thread's transaction stay open
	// before it aborts it. A crashed instance's open transaction blocks
	// read_committed readers of every partition it wrote (outputs,
	// repartition topics, changelogs) and the group's committed offsets
	// until it ends, so this bounds a failover unless the instance comes
	// back first (a restarted thread fences its transactional ID at
	// start). A commit must end within it: a commit's flush waits at most
	// half of it. The broker caps it (transaction.max.timeout.ms).
	TransactionTimeout time.Duration
	// OffsetReset is where the query starts on partitions without a
	// committed offset: "earliest" (default) or "latest".
	OffsetReset string
	// Logger receives lifecycle events and bad records (default
	// slog.Default()).
	Logger *slog.Logger
	// StateDir is where tasks keep their state stores (required for
	// topologies with stores).
	StateDir string
	// MemoryStores keeps the query's state stores in memory instead of
	// RocksDB (Kafka Streams' default.dsl.store=in_memory): less CPU per
	// record, but every store is restored from the start of its
	// changelog each time its task opens (a restart, a task moving
	// here), and all of its state is held in the heap. A scan by a pull
	// query may see a transaction applied in the middle of it.
	MemoryStores bool
	// RocksResources is the server's shared RocksDB block cache,
	// write-buffer and value-cache budgets; nil gives each store private
	// resources.
	RocksResources *state.RocksResources
	// Metrics, when set, receives commit latencies, consumer lag and
	// restore progress.
	Metrics *metrics.Query
	// FetchMaxBytes bounds what each stream thread's client fetches in one
	// request (and so what it buffers); 0 is franz-go's default (50 MiB).
	// A server with a memory limit sets it from its budget.
	FetchMaxBytes int32
	// AtLeastOnce runs the query under processing.guarantee=at_least_once
	// (see atLeastOnce): no transactions, output visible as soon as it is
	// written, records processed again after a failure. The default is
	// exactly-once.
	AtLeastOnce bool
	// MaxTxnRecords, when positive, bounds the records each stream thread
	// polls into one transaction: it commits when that many were polled,
	// before the commit interval is up. The buffers a transaction holds
	// (its output and changelog records, changed groups) grow with its
	// records, so a server with a memory limit sets it; 0 bounds a
	// transaction by the commit interval only.
	MaxTxnRecords int
	// Paused starts the query paused (see Query.SetPaused).
	Paused bool
	// LeaveGroupOnClose makes a stopping query's stream threads leave its
	// group (their static members removed, as Kafka Streams'
	// close(leaveGroup=true) does), so their tasks move at once rather
	// than after the session timeout: for an instance being removed for
	// good. By default a clean stop stays in the group, so a restart
	// within the session timeout moves no task.
	LeaveGroupOnClose bool
	// StandbyReplicas is num.standby.replicas: how many other instances
	// keep a hot copy of each stateful task's stores (standby.go).
	// Default 0.
	StandbyReplicas int
	// AcceptableRecoveryLag is acceptable.recovery.lag: a stateful task
	// moves to an instance only when that instance's copy of its state
	// is at most this many changelog offsets behind; otherwise the
	// instance warms up first. 0 means DefaultAcceptableRecoveryLag
	// (10,000); a negative value, 0 offsets.
	AcceptableRecoveryLag int64
	// MaxWarmupReplicas is max.warmup.replicas: how many warm-up
	// replicas one assignment may place (0: DefaultMaxWarmupReplicas).
	MaxWarmupReplicas int
	// ProbingRebalanceInterval is probing.rebalance.interval.ms: how
	// often a member holding warm-ups forces a rebalance to see whether
	// they caught up (0: DefaultProbingInterval, 10 min).
	ProbingRebalanceInterval time.Duration
	// BadRecord, when set, also receives each bad record (after it is
	// counted and logged), e.g. to write it to the processing log topic.
	// It is called on the stream thread and must not block.
	BadRecord func(BadRecord)

	// Emit, when set, receives the rows of the topology's last node when
	// it writes nowhere: a transient query (a push query that needs
	// state, run as a query of its own). It gets each change's new row
	// (deletions and tombstones are not passed), from the stream
	// threads, so it must be safe for concurrent use; the row is valid
	// only during the call.
	Emit func(types.Row)

	// clientOpts are more options for the stream threads' clients
	// (tests: hooks).
	clientOpts []kgo.Opt
	// extraNodes builds node kinds exec does not know (tests).
	extraNodes func(*physical.Node, Processor) (Processor, error)
}

// BadRecord describes a record a query skipped, or (Offset -1, no topic)
// a failure of the query itself.
type BadRecord struct {
	Query     string
	Topic     string
	Partition int32
	Offset    int64
	Err       error
	// Key and Value are copies of the record's bytes.
	Key, Value []byte
}

func (c *Config) defaults() {
	if c.Threads <= 0 {
		c.Threads = 1
	}
	if c.CommitInterval <= 0 {
		c.CommitInterval = 100 * time.Millisecond
	}
	if c.TransactionTimeout <= 0 {
		c.TransactionTimeout = DefaultTransactionTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	switch {
	case c.AcceptableRecoveryLag == 0:
		c.AcceptableRecoveryLag = DefaultAcceptableRecoveryLag
	case c.AcceptableRecoveryLag < 0:
		c.AcceptableRecoveryLag = 0
	}
	if c.MaxWarmupReplicas <= 0 {
		c.MaxWarmupReplicas = DefaultMaxWarmupReplicas
	}
	if c.ProbingRebalanceInterval <= 0 {
		c.ProbingRebalanceInterval = DefaultProbingInterval
	}
}

// DefaultTransactionTimeout is Config.TransactionTimeout's default:
// Kafka Streams' transaction.timeout.ms under exactly-once.
const DefaultTransactionTimeout = 10 * time.Second

// flushTimeout bounds how long a commit waits for its records to be
// written: half the transaction timeout, so that the commit ends well
// inside it.
func (c *Config) flushTimeout() time.Duration { return c.TransactionTimeout / 2 }

// aheadWait bounds how long a task waits for a changelog whose last
// stable offset is behind its store's checkpoint before it takes the
// store as lost and restores it from the changelog's start: three
// transaction timeouts (30 s by default), longer than another producer's
// transaction may stay open.
func (c *Config) aheadWait() time.Duration { return 3 * c.TransactionTimeout }

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
	// Restarts counts the stream threads restarted after a failure.
	Restarts int64
	// LateRecords counts the rows windowed aggregations dropped because
	// every window they fall into had closed (stream time past the
	// window's end plus its grace period).
	LateRecords int64
}

// Query states, as SHOW QUERIES prints them.
const (
	StateRunning = "RUNNING"
	// StateFailed marks a query whose stream thread failed (an error or
	// a panic in a processor) and is being restarted with backoff (1 s,
	// doubling to 60 s); the state returns to RUNNING after its next
	// successful commit.
	StateFailed = "FAILED"
	// StatePaused marks a query PAUSEd: its threads keep their group
	// membership and state, poll nothing, and go on where they stopped
	// when it is resumed.
	StatePaused = "PAUSED"
	// StateCreated marks a query built (New) and not run: it has no
	// stream thread, as Kafka Streams' CREATED before start().
	StateCreated = "CREATED"
)

// Status is a query's state as SHOW QUERIES reports it.
type Status struct {
	// State is StateRunning, StateFailed, StatePaused or StateCreated.
	State string
	// Err is the last error, when State is FAILED.
	Err string
	// Since is when the query entered State (started, failed, recovered,
	// paused or resumed).
	Since time.Time
	// LastErr and LastErrAt are the latest failure of a stream thread and
	// when it came, kept after the query recovers; "" when none.
	LastErr   string
	LastErrAt time.Time
	Stats
	// Partitioning is Query.Partitioning.
	Partitioning []PartitionStats
}

// Query is a running persistent query.
type Query struct {
	id     string
	topo   *physical.Topology
	cfg    Config
	log    *slog.Logger
	ctx    context.Context // the threads' (New to Run)
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// started says Run was called.
	started atomic.Bool

	in, out, bad, commits, aborts, restored, restarts, late atomic.Int64
	paused                                                  atomic.Bool
	// threadStates holds, per stream thread, threadStopped,
	// threadRunning or threadPaused: how far it has followed paused.
	threadStates []atomic.Int32

	mu      sync.Mutex
	lastErr error
	// everErr is the latest failure, and when, kept after a recovery.
	everErr   string
	everErrAt time.Time
	// since is when the query entered its current state.
	since time.Time
	// badLogged is when a bad record was last logged.
	badLogged time.Time
	// stores holds each store's committed state per partition, for pull
	// queries (guarded by mu).
	stores map[string]map[int32]state.Store
	// storeLists are stores' partitions as Stores returns them, sorted,
	// kept until a store's partitions change (mu).
	storeLists map[string][]Partition
	// standbys holds the standby copies of stores, per partition (mu).
	standbys map[string]map[int32]*standbyStore
	// positions are the tasks this instance runs or keeps standbys of,
	// reported to the group (mu).
	positions map[TaskID]taskPosition
	// ownChangelogs are the topology's stores' own changelogs (not source
	// tables' topics); changelogsBySub the same per stateful sub-topology.
	ownChangelogs   map[string]bool
	changelogsBySub map[int][]string
	// admin lists changelog end offsets for the group leader (adminMu).
	adminMu sync.Mutex
	admin   *kgo.Client
	// checks are the declared murmur2 sources whose records' partitions
	// are checked (partitioncheck.go), by source name and in order;
	// made at Start, never changed.
	checks    map[string]*partitionCheck
	checkList []*partitionCheck
}

// Start launches the topology's stream threads (New, then Run). They
// run until Stop.
func Start(id string, topo *physical.Topology, cfg Config) (*Query, error) {
	q, err := New(id, topo, cfg)
	if err != nil {
		return nil, err
	}
	q.Run()
	return q, nil
}

// New builds a query without running it: its status is StateCreated,
// Stop does nothing, and it reads and writes nothing until Run. An
// engine that plans and records queries without Kafka (engine tests)
// stops there.
func New(id string, topo *physical.Topology, cfg Config) (*Query, error) {
	cfg.defaults()
	if topo.AppID == "" {
		return nil, errors.New("exec: a persistent query needs an application ID")
	}
	if len(topo.Stores) > 0 && cfg.StateDir == "" {
		return nil, errors.New("exec: a query with state stores needs a state directory")
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := &Query{id: id, topo: topo, cfg: cfg, cancel: cancel, log: cfg.Logger.With("query", id), since: time.Now(),
		threadStates: make([]atomic.Int32, cfg.Threads)}
	q.ownChangelogs, q.changelogsBySub = map[string]bool{}, map[int][]string{}
	for _, st := range topo.SubTopologies {
		seen := map[string]bool{}
		for _, n := range st.Nodes {
			for _, spec := range physical.StoresOf(n) {
				if spec.SourceTopicChangelog || seen[spec.Changelog] {
					continue
				}
				seen[spec.Changelog] = true
				q.ownChangelogs[spec.Changelog] = true
				q.changelogsBySub[st.ID] = append(q.changelogsBySub[st.ID], spec.Changelog)
			}
		}
	}
	q.newPartitionChecks()
	// A query paused before it starts fetches nothing at all.
	q.paused.Store(cfg.Paused)
	q.ctx = ctx
	return q, nil
}

// Run launches the query's stream threads, once.
func (q *Query) Run() {
	if q.started.Swap(true) {
		return
	}
	for i := 0; i < q.cfg.Threads; i++ {
		q.wg.Add(1)
		go q.runThread(q.ctx, i)
	}
}

// ID returns the query's ID.
func (q *Query) ID() string { return q.id }

// Topology returns the topology the query runs.
func (q *Query) Topology() *physical.Topology { return q.topo }

// Config returns the settings the query runs with, defaults filled in.
func (q *Query) Config() Config { return q.cfg }

// Stop stops the stream threads, committing what they have processed, and
// waits for them to leave the group.
func (q *Query) Stop() {
	q.cancel()
	q.wg.Wait()
	q.adminMu.Lock()
	if q.admin != nil {
		q.admin.Close()
		q.admin = nil
	}
	q.adminMu.Unlock()
}

// adminClient returns the query's admin client, made at first use.
func (q *Query) adminClient() (*kgo.Client, error) {
	q.adminMu.Lock()
	defer q.adminMu.Unlock()
	if q.admin == nil {
		cl, err := q.cfg.Kafka.NewClient()
		if err != nil {
			return nil, err
		}
		q.admin = cl
	}
	return q.admin, nil
}

// leaveGroup removes stream thread n's static member from the query's
// group.
func (q *Query) leaveGroup(n int) {
	cl, err := q.adminClient()
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var resp kadm.LeaveGroupResponses
		resp, err = kadm.NewClient(cl).LeaveGroup(ctx, kadm.LeaveGroup(q.topo.AppID).InstanceIDs(q.memberID(n)))
		if err == nil {
			err = resp.Error()
		}
	}
	if err != nil {
		q.log.Warn("leaving the group on close", "thread", n, "err", err)
		return
	}
	q.log.Info("left the group (--leave-group-on-close): its tasks move now", "thread", n)
}

// memberID is stream thread n's static member ID (group.instance.id).
func (q *Query) memberID(n int) string { return fmt.Sprintf("%s-%d", q.cfg.InstanceID, n) }

// changelogEnds lists the last stable offsets of topics' partitions, for
// the group leader placing standbys (a client of its own: the leader's
// group client is busy balancing).
func (q *Query) changelogEnds(topics []string) (map[topicPartition]int64, error) {
	cl, err := q.adminClient()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := map[topicPartition]int64{}
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err == nil {
			out[topicPartition{o.Topic, o.Partition}] = o.Offset
		}
	})
	return out, nil
}

// Status reports the query's state and counters.
func (q *Query) Status() Status {
	s := Status{State: StateRunning, Stats: Stats{
		RecordsIn: q.in.Load(), RecordsOut: q.out.Load(), BadRecords: q.bad.Load(),
		Commits: q.commits.Load(), Aborts: q.aborts.Load(), Restored: q.restored.Load(), Restarts: q.restarts.Load(),
		LateRecords: q.late.Load(),
	}}
	if len(q.checkList) > 0 {
		s.Partitioning = q.Partitioning()
	}
	if q.paused.Load() {
		s.State = StatePaused
	}
	if !q.started.Load() {
		s.State = StateCreated
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.lastErr != nil {
		s.State, s.Err = StateFailed, q.lastErr.Error()
	}
	s.Since = q.since
	s.LastErr, s.LastErrAt = q.everErr, q.everErrAt
	return s
}

// SetPaused pauses or resumes the query. A paused query's stream threads
// stop fetching its input topics (what they polled before is processed
// and committed) and fire no wall-clock punctuation; they stay in the
// group with their tasks and state, and fetch again from where they
// stopped when resumed.
//
// It returns once every running stream thread has followed (records it
// polled before are processed; none it polls after are), or after
// pauseWait when a thread does not get to it (one restarting after a
// failure follows when it starts).
func (q *Query) SetPaused(p bool) {
	if q.paused.Swap(p) != p {
		q.mu.Lock()
		q.since = time.Now()
		q.mu.Unlock()
	}
	want := threadRunning
	if p {
		want = threadPaused
	}
	deadline := time.Now().Add(pauseWait)
	for i := range q.threadStates {
		st := &q.threadStates[i]
		for s := st.Load(); s != want && s != threadStopped && time.Now().Before(deadline); s = st.Load() {
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// pauseWait bounds how long SetPaused waits for the stream threads.
const pauseWait = 10 * time.Second

// What a stream thread last did about pausing (Query.threadStates).
const (
	threadStopped int32 = iota // not in its loop (starting, failed, stopped)
	threadRunning              // fetching its inputs
	threadPaused               // its inputs paused
)

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
	delete(q.storeLists, name)
}

func (q *Query) removeStore(s state.Store) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for name, byPart := range q.stores {
		for p, st := range byPart {
			if st == s {
				delete(byPart, p)
				delete(q.storeLists, name)
			}
		}
	}
}

func (q *Query) setErr(err error) {
	q.mu.Lock()
	if (err == nil) != (q.lastErr == nil) {
		q.since = time.Now()
	}
	q.lastErr = err
	if err != nil {
		q.everErr, q.everErrAt = err.Error(), time.Now()
	}
	q.mu.Unlock()
}

// Restart backoff of a failed stream thread.
const (
	minRestartBackoff = time.Second
	maxRestartBackoff = time.Minute
)

// runThread runs one stream thread, restarting it with backoff when it
// fails, until ctx ends. The backoff starts again after a thread ran a
// minute without failing.
func (q *Query) runThread(ctx context.Context, n int) {
	defer q.wg.Done()
	// CPU profiles tell the queries apart (the goroutines the thread
	// starts, its clients' included, inherit the label).
	pprof.SetGoroutineLabels(pprof.WithLabels(ctx, pprof.Labels("query", q.id)))
	backoff := minRestartBackoff
	for ctx.Err() == nil {
		began := time.Now()
		err := q.thread(ctx, n)
		if err == nil || ctx.Err() != nil {
			return
		}
		if time.Since(began) > maxRestartBackoff {
			backoff = minRestartBackoff
		}
		q.setErr(err)
		q.log.Error("stream thread failed; restarting", "thread", n, "err", err, "backoff", backoff)
		if q.cfg.BadRecord != nil {
			// A query failure goes to the processing log too, as an entry
			// without a record (partition and offset -1).
			q.cfg.BadRecord(BadRecord{Query: q.id, Partition: -1, Offset: -1, Err: err})
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		q.restarts.Add(1)
		backoff = min(backoff*2, maxRestartBackoff)
	}
}

// thread runs one stream thread until ctx ends or it fails. A refusal of
// the broker comes back explained (operation, resource, principal).
func (q *Query) thread(ctx context.Context, n int) error {
	t, err := newStreamThread(q, n)
	if err != nil {
		return q.cfg.Kafka.Explain(err, q.needs(n)...)
	}
	return q.cfg.Kafka.Explain(t.run(ctx), q.needs(n)...)
}

// needs are the permissions stream thread n needs: READ on the query's
// group and input topics, WRITE on its output and internal topics and,
// under exactly-once, on its transactional id. (The order puts the
// resources whose refusal is the likelier first.)
func (q *Query) needs(n int) []kafka.Permission {
	perm := func(op kafka.Operation, t kafka.ResourceType, name string) kafka.Permission {
		return kafka.Permission{Operation: op, Resource: kafka.Resource{Type: t, Name: name}}
	}
	out := []kafka.Permission{perm(kafka.Read, kafka.Group, q.topo.AppID)}
	if !q.cfg.AtLeastOnce {
		out = append(out, perm(kafka.Write, kafka.TransactionalID, q.transactionalID(n)))
	}
	seen := map[string]bool{}
	for _, t := range q.topo.SourceTopics() {
		if !seen[t] {
			seen[t] = true
			out = append(out, perm(kafka.Read, kafka.Topic, t))
		}
	}
	for _, nd := range q.topo.Nodes {
		if s, ok := nd.Op.(*physical.Sink); ok && !seen[s.Topic] {
			seen[s.Topic] = true
			out = append(out, perm(kafka.Write, kafka.Topic, s.Topic))
		}
	}
	for _, it := range q.topo.InternalTopics() {
		if !seen[it.Name] {
			seen[it.Name] = true
			out = append(out, perm(kafka.Write, kafka.Topic, it.Name))
		}
	}
	return out
}

// transactionalID is stream thread n's transactional id under
// exactly-once: <application id>-<instance>-<thread>.
func (q *Query) transactionalID(n int) string {
	return fmt.Sprintf("%s-%s-%d", q.topo.AppID, q.cfg.InstanceID, n)
}

// badRecord counts and logs a record that could not be processed.
//
// The server log gets the first bad record and then at most a line every
// 10 s per query with the count since; every one goes to cfg.BadRecord
// (the processing log).
func (q *Query) badRecord(r *kgo.Record, err error) {
	n := q.bad.Add(1)
	q.mu.Lock()
	now := time.Now()
	logIt := now.Sub(q.badLogged) >= 10*time.Second
	if logIt {
		q.badLogged = now
	}
	q.mu.Unlock()
	if logIt {
		q.log.Warn("skipping bad record (all of them go to the processing log; this line at most every 10 s)",
			"topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err, "bad records so far", n)
	}
	if q.cfg.BadRecord != nil {
		q.cfg.BadRecord(BadRecord{Query: q.id, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err,
			Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)})
	}
}
