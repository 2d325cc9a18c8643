package exec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// streamThread is one group member of a query with its own
// transactional producer (Kafka Streams' StreamThread under EOSv2). Its
// loop reads: poll → handle rebalances → restore → process → punctuate
// → maybe commit. All its tasks' output, repartition and changelog
// records and their input offsets go in one transaction per commit
// interval. The thread decides when a transaction ends (maybeCommit,
// handleRebalance, process, endOnExit); its task manager ends it
// (taskManager.commit and abort), as Kafka Streams' StreamThread calls
// TaskManager.commit.
type streamThread struct {
	q    *Query
	n    int
	sess txnSession
	cl   *kgo.Client
	tm   *taskManager
	out  *outbox

	// The group callbacks run outside the loop; they only note the
	// partitions (and pause those of stateful tasks, which resume when
	// their stores are restored), and the loop acts on them.
	assignMu          sync.Mutex
	assigned, revoked []topicPartition
	// synced is the member's latest assignment, whole, as the group
	// sent it (nil before the first). franz-go's transactional session
	// calls OnPartitionsRevoked (and OnPartitionsLost) only for the
	// first revocation between two ends of a transaction, so the loop
	// checks its tasks against it too (taskManager.reconcile).
	synced map[topicPartition]bool

	// ready is reused by process: the tasks of a poll's records.
	ready []*Task

	// The session counts records as consumed when PollFetches returns
	// them, and End commits their offsets: a transaction may commit only
	// once every polled record has been processed. unprocessed is set
	// while some may not have been; leaving then aborts.
	unprocessed bool
	// paused is whether the thread has paused fetching its inputs.
	paused bool

	// bal is the thread's group balancer; sb runs its standby tasks.
	bal *taskBalancer
	sb  *standbyRunner
	// info is the assignment info the thread last followed; probeAt,
	// when set, is when to force a probing rebalance (it holds warm-ups).
	info    *AssignmentInfo
	probeAt time.Time
}

func newStreamThread(q *Query, n int) (*streamThread, error) {
	t := &streamThread{q: q, n: n, out: &outbox{headers: q.cfg.PropagateHeaders}, sb: newStandbyRunner(q, n)}
	t.tm = newTaskManager(q, n, t.out)
	t.bal = newTaskBalancer(q.topo, func() MemberInfo {
		return MemberInfo{Instance: q.cfg.InstanceID, Thread: n, Endpoint: q.cfg.Endpoint, PG: q.cfg.PGEndpoint,
			Offsets: q.offsets()}
	})
	t.bal.synced = func(m map[string][]int32) {
		set := map[topicPartition]bool{}
		for topic, ps := range m {
			for _, p := range ps {
				set[topicPartition{topic, p}] = true
			}
		}
		t.assignMu.Lock()
		t.synced = set
		t.assignMu.Unlock()
	}
	t.bal.ha = haConfig{changelogs: q.changelogsBySub, standbys: q.cfg.StandbyReplicas, acceptableLag: q.cfg.AcceptableRecoveryLag,
		maxWarmups: q.cfg.MaxWarmupReplicas, probe: q.cfg.ProbingRebalanceInterval, ends: q.changelogEnds}
	changelogs := map[string]bool{}
	for _, s := range q.topo.Stores {
		if !s.SourceTopicChangelog {
			changelogs[s.Changelog] = true
		}
	}
	for _, n := range q.topo.Nodes {
		if s, ok := n.Op.(*physical.ForeignKeySubscriptions); ok {
			changelogs[s.Response] = true // each response to its subscriber's partition
		}
		if s, ok := n.Op.(*physical.Sink); ok && s.SinglePartition {
			changelogs[s.Topic] = true // partition 0, the records' zero value
		}
	}
	windowed := map[string]int{}
	for _, n := range q.topo.Nodes {
		if s, ok := n.Op.(*physical.Sink); ok && s.WindowType != types.NoWindow {
			windowed[s.Topic] = s.WindowType.WindowKeyLen()
		}
		if r, ok := n.Op.(*physical.Repartition); ok && r.WindowType != types.NoWindow {
			windowed[r.Topic] = r.WindowType.WindowKeyLen()
		}
	}
	crc := crc32Topics(q.topo)
	note := func(to *[]topicPartition, pause bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, cl *kgo.Client, m map[string][]int32) {
			t.assignMu.Lock()
			defer t.assignMu.Unlock()
			paused := map[string][]int32{}
			for topic, ps := range m {
				for _, p := range ps {
					tp := topicPartition{topic, p}
					*to = append(*to, tp)
					if !pause {
						// Revoked before the loop took its assignment
						// (rebalances in quick succession): the loop must
						// not create its task (revocations are applied
						// first, so the task would outlive its partition).
						t.assigned = slices.DeleteFunc(t.assigned, func(a topicPartition) bool { return a == tp })
					}
				}
				if pause && t.tm.statefulTopic(topic) {
					paused[topic] = ps
				}
			}
			if len(paused) > 0 {
				cl.PauseFetchPartitions(paused) // before fetching starts
			}
		}
	}
	opts := q.cfg.clientOpts
	if n := q.cfg.FetchMaxBytes; n > 0 {
		opts = append([]kgo.Opt{kgo.FetchMaxBytes(n)}, opts...)
	}
	opts = append([]kgo.Opt{
		kgo.ConsumerGroup(q.topo.AppID),
		kgo.ConsumeTopics(q.topo.SourceTopics()...),
		// Static membership (KIP-345): a thread restarted within the
		// session timeout takes its place back with no rebalance, and a
		// clean stop does not leave the group (kgo leaves only a static
		// member that owes a rejoin), so a rolling restart moves no task.
		kgo.InstanceID(q.memberID(n)),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// The Java consumer's fetch.max.wait.ms, as Kafka Streams runs:
		// partitions resumed when their task has restored are fetched
		// only after the fetch in flight returns (franz-go's default
		// wait is 5 s when there is nothing new).
		kgo.FetchMaxWait(500 * time.Millisecond),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(q.cfg.resetOffset()),
		kgo.Balancers(t.bal),
		kgo.SessionTimeout(10 * time.Second),
		// How long a rebalance waits for members to rejoin, a static
		// member that is down included (default 60 s).
		kgo.RebalanceTimeout(20 * time.Second),
		kgo.ProducerLinger(0),
		kgo.RecordPartitioner(taskPartitioner{changelogs: changelogs, windowed: windowed, crc32: crc, def: kgo.StickyKeyPartitioner(nil)}),
		kgo.WithPools(&recordPool{}),
		kgo.OnPartitionsAssigned(note(&t.assigned, true)),
		kgo.OnPartitionsRevoked(note(&t.revoked, false)),
		kgo.OnPartitionsLost(note(&t.revoked, false)),
	}, opts...)
	var sess txnSession
	var err error
	if q.cfg.AtLeastOnce {
		var a *atLeastOnce
		if a, err = newAtLeastOnce(q.cfg.Kafka, opts...); err == nil {
			a.produceFailed = func() bool { return t.tm.produceErr.Load() != nil }
			sess = a
		}
	} else {
		sess, err = kgo.NewGroupTransactSession(q.cfg.Kafka.Opts(append(opts,
			kgo.WithLogger(&t.tm.selfAborts),
			kgo.TransactionalID(q.transactionalID(n)),
			kgo.TransactionTimeout(q.cfg.TransactionTimeout))...)...)
	}
	if err != nil {
		return nil, err
	}
	t.sess, t.cl = sess, sess.Client()
	t.tm.sess = sess
	promise := func(r *kgo.Record, err error) {
		if err != nil {
			e := err // only a failure's error escapes to the heap
			if kafka.Denied(err) {
				e = q.cfg.Kafka.Explain(err, kafka.Permission{Operation: kafka.Write, Resource: kafka.Resource{Type: kafka.Topic, Name: r.Topic}})
			}
			t.tm.produceErr.CompareAndSwap(nil, &e)
		}
	}
	t.out.send = func(r *kgo.Record) {
		q.out.Add(1)
		// Not ctx: records of a stopping thread must still reach its
		// final commit.
		sess.Produce(context.Background(), r, promise)
	}
	return t, nil
}

// run is the thread's loop, until ctx ends (nil) or the thread fails.
func (t *streamThread) run(ctx context.Context) error {
	defer t.q.threadStates[t.n].Store(threadStopped)
	defer func() {
		t.close()
		if ctx.Err() != nil && t.q.cfg.LeaveGroupOnClose {
			t.q.leaveGroup(t.n)
		}
	}()
	defer t.tm.closeAll()
	defer t.sb.stop()
	t.out.hand = newHandOff(t.out.send)
	defer t.out.hand.close() // after the last transaction ended
	defer t.endOnExit()
	if err := t.fence(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	for {
		t.followPause()
		fetches, stopping, err := t.poll(ctx)
		if err != nil {
			return err
		}
		if fetches == nil {
			return nil
		}
		if fetches.IsClientClosed() {
			return errors.New("client closed")
		}
		rewound, err := t.handleRebalance(ctx)
		if err != nil {
			return err
		}
		if rewound {
			// The transaction aborted: the polled records come again.
			dropFetches(fetches)
			t.unprocessed = false
		}
		t.followStandbys()
		if err := t.tm.restore(ctx, t.cl); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if err := t.process(ctx, fetches); err != nil {
			return err
		}
		if stopping {
			return nil // endOnExit commits
		}
		if err := t.punctuate(); err != nil {
			return err
		}
		if err := t.maybeCommit(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// fence initializes the thread's transactional producer as the thread
// starts, as Kafka Streams' threads do: InitProducerID with
// the thread's transactional ID fences its earlier producer and aborts
// the transaction that producer left open (a crashed instance restarted
// on its data dir, or this thread failing and starting again). franz-go
// sends it only before the first record or offset commit, so without
// this a restarted instance with nothing to process would leave that
// transaction open, holding back read_committed readers of everything it
// wrote, and the group's offsets, until the transaction timeout.
func (t *streamThread) fence(ctx context.Context) error {
	if t.q.cfg.AtLeastOnce {
		return nil
	}
	if _, _, err := t.cl.ProducerID(ctx); err != nil {
		return fmt.Errorf("initializing the transactional producer: %w", err)
	}
	return nil
}

// closeWait bounds how long a stopping thread waits for its client to
// close. A static member in the middle of a rebalance that waits for
// another static member (down, not left) cannot close until the broker
// ends that round (the rebalance timeout); the thread's transaction is
// already ended by then, so it does not wait for that.
const closeWait = 5 * time.Second

// close closes the thread's client, waiting at most closeWait.
func (t *streamThread) close() {
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.sess.Close()
	}()
	select {
	case <-done:
	case <-time.After(closeWait):
		t.q.log.Warn("stream thread's client still closing (its group is in a rebalance that waits for another member); leaving it to finish", "thread", t.n)
	}
}

// followStandbys hands the standby tasks of the thread's latest
// assignment to its standby runner, and forces a probing rebalance every
// probing interval while the assignment holds warm-ups.
func (t *streamThread) followStandbys() {
	now := time.Now()
	if ai := t.bal.got.Load(); ai != nil && ai != t.info {
		t.info = ai
		t.sb.set(parseTaskIDs(ai.Standby))
		t.probeAt = time.Time{}
		if len(ai.Warmup) > 0 && ai.ProbeMs > 0 {
			t.probeAt = now.Add(time.Duration(ai.ProbeMs) * time.Millisecond)
		}
		if len(ai.Standby) > 0 {
			t.q.log.Info("standby tasks assigned", "thread", t.n, "standby", ai.Standby, "warmup", ai.Warmup)
		}
	}
	if !t.probeAt.IsZero() && now.After(t.probeAt) {
		t.q.log.Info("probing rebalance: warm-up replicas may have caught up", "thread", t.n, "warmup", t.info.Warmup)
		t.probeAt = now.Add(time.Duration(t.info.ProbeMs) * time.Millisecond)
		t.cl.ForceRebalance()
	}
}

// followPause pauses or resumes fetching the query's input topics when
// the query was paused or resumed since the last loop.
func (t *streamThread) followPause() {
	p := t.q.paused.Load()
	state := threadRunning
	if p {
		state = threadPaused
	}
	defer t.q.threadStates[t.n].Store(state)
	if p == t.paused {
		return
	}
	if p {
		t.cl.PauseFetchTopics(t.q.topo.SourceTopics()...)
		t.q.log.Info("query paused", "thread", t.n)
	} else {
		t.cl.ResumeFetchTopics(t.q.topo.SourceTopics()...)
		t.q.log.Info("query resumed", "thread", t.n)
	}
	t.paused = p
}

// poll fetches the next records: until the open transaction is due to
// commit (for a commit interval when none is open), or briefly while
// stores are being restored (restoring takes the rest of the loop). It
// returns nil fetches when the thread should stop with nothing polled;
// stopping says that ctx ended — records polled as the stop came are
// processed (and committed on the way out), but no more are polled. A
// refusal of the broker (an ACL revoked from the query's topic or group)
// fails the thread, explained, as retrying cannot cure it; what it polled
// is then aborted.
func (t *streamThread) poll(ctx context.Context) (kgo.Fetches, bool, error) {
	pctx, cancel := context.WithTimeout(ctx, t.pollWait(time.Now()))
	var fetches kgo.Fetches
	if limit := t.q.cfg.MaxTxnRecords; limit > 0 {
		fetches = t.sess.PollRecords(pctx, max(limit-t.tm.txn.records, 1))
	} else {
		fetches = t.sess.PollFetches(pctx)
	}
	cancel()
	stopping, polled := ctx.Err() != nil, fetches.NumRecords() > 0
	if stopping && !polled {
		return nil, true, nil
	}
	t.unprocessed = polled
	var denied error
	fetches.EachError(func(topic string, p int32, err error) {
		switch {
		case kafka.Denied(err) && denied == nil:
			var need []kafka.Permission
			if topic != "" {
				need = append(need, kafka.Permission{Operation: kafka.Read, Resource: kafka.Resource{Type: kafka.Topic, Name: topic}})
			}
			denied = t.q.cfg.Kafka.Explain(err, append(need, t.q.needs(t.n)...)...)
		case !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled):
			t.q.log.Warn("fetch error", "topic", topic, "partition", p, "err", err)
		}
	})
	if denied != nil {
		dropFetches(fetches) // unprocessed (when polled): leaving aborts
		return nil, stopping, denied
	}
	return fetches, stopping, nil
}

// pollWait is how long a poll starting at now may wait for records.
func (t *streamThread) pollWait(now time.Time) time.Duration {
	wait := t.q.cfg.CommitInterval
	if txn := t.tm.txn; txn.open {
		// A poll past the commit's time would hold the transaction, and
		// the output it makes visible, up to another interval.
		wait = max(txn.start.Add(wait).Sub(now), time.Millisecond)
	}
	if t.tm.reader.restoring() {
		wait = min(wait, 5*time.Millisecond)
	}
	return wait
}

// handleRebalance applies the partitions the group callbacks noted:
// tasks of revoked partitions are closed (their writes in the open
// transaction, which is aborted first, are dropped), tasks of assigned
// ones created. It reports whether it aborted the transaction.
func (t *streamThread) handleRebalance(ctx context.Context) (bool, error) {
	t.assignMu.Lock()
	gone, gained, synced := t.revoked, t.assigned, t.synced
	t.revoked, t.assigned = nil, nil
	t.assignMu.Unlock()
	gone, gained, missed := t.tm.reconcile(gone, gained, synced)
	if len(missed) > 0 {
		t.q.log.Info("partitions revoked without the group's callback (the transactional session reports one revocation per transaction); closing their tasks", "thread", t.n, "partitions", missed)
	}
	if len(gone) == 0 && len(gained) == 0 {
		return false, nil
	}
	aborted := false
	switch {
	case t.tm.txn.open && len(gone) > 0 && t.q.cfg.AtLeastOnce:
		// Nothing to abort: what was produced is out. A task that goes
		// drops its uncommitted state; the partitions' new owner
		// processes their uncommitted records again.
		t.tm.abortLeaving(gone)
	case t.tm.txn.open && len(gone) > 0:
		if _, err := t.tm.abort(ctx); err != nil {
			return false, err
		}
		aborted = true
	}
	return aborted, t.tm.handleAssignment(ctx, t.cl, gained, gone)
}

// process hands the polled records to their tasks' partition groups and
// runs each task. Records of a partition with no running task (revoked
// in the same poll, or not yet restored) are never processed: the
// transaction is aborted so that they come again once their task runs.
func (t *streamThread) process(ctx context.Context, fetches kgo.Fetches) error {
	if !t.unprocessed {
		return nil
	}
	if err := t.tm.begin(); err != nil {
		return err
	}
	orphans, polled := false, 0
	ready := t.ready[:0] // tasks with records, in the order the poll returned them
	m := t.q.cfg.Metrics
	fetches.EachPartition(func(fp kgo.FetchTopicPartition) {
		if len(fp.Records) == 0 {
			return
		}
		task := t.tm.inputs[topicPartition{fp.Topic, fp.Partition}]
		if task == nil || task.state != taskRunning {
			if t.q.cfg.AtLeastOnce {
				// No abort to rewind with: fetch a partition still ours
				// again from its first dropped record; one no longer
				// ours goes to its new owner from its committed offset.
				if task != nil {
					first := fp.Records[0]
					t.cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{fp.Topic: {fp.Partition: {Epoch: first.LeaderEpoch, Offset: first.Offset}}})
				}
			} else {
				orphans = true
			}
			for _, r := range fp.Records {
				r.Recycle()
			}
			return
		}
		if m != nil && fp.HighWatermark >= 0 {
			m.SetLag(fp.Topic, fp.Partition, fp.HighWatermark-(fp.Records[len(fp.Records)-1].Offset+1))
		}
		polled += len(fp.Records)
		q := task.queue(topicPartition{fp.Topic, fp.Partition})
		if !task.queued() {
			ready = append(ready, task)
		}
		q.recs = append(q.recs, fp.Records...)
	})
	t.ready = ready
	if orphans {
		t.q.log.Info("records polled for a partition without a running task; aborting so that they come again", "thread", t.n)
		for _, task := range t.tm.tasks {
			task.dropQueued()
		}
		clear(ready)
		t.unprocessed = false
		_, err := t.tm.abort(ctx)
		return err
	}
	t.q.in.Add(int64(polled))
	t.tm.txn.records += polled
	for i, task := range ready {
		ready[i] = nil
		if _, err := task.process(t.q.badRecord); err != nil {
			return err
		}
	}
	t.out.flush()
	t.unprocessed = false
	return nil
}

// punctuate fires the running tasks' due wall-clock punctuations, in the
// open transaction (one is begun if needed).
func (t *streamThread) punctuate() error {
	if t.paused {
		return nil
	}
	now := time.Now().UnixMilli()
	for _, task := range t.tm.tasks {
		if task.state != taskRunning || !task.punct.due(WallClockTime, now) {
			continue
		}
		if err := t.tm.begin(); err != nil {
			return err
		}
		if err := task.punctuateWallClock(now); err != nil {
			return err
		}
	}
	t.out.flush()
	return nil
}

// maybeCommit has the task manager commit the open transaction once it
// is a commit interval old (or holds MaxTxnRecords input records).
func (t *streamThread) maybeCommit(ctx context.Context) error {
	txn := t.tm.txn
	full := t.q.cfg.MaxTxnRecords > 0 && txn.records >= t.q.cfg.MaxTxnRecords
	if !txn.open || !full && time.Since(txn.start) < t.q.cfg.CommitInterval {
		return nil
	}
	if _, err := t.tm.commit(ctx); err != nil {
		return err
	}
	t.q.setErr(nil)
	return nil
}

// endOnExit ends a transaction still open as the thread leaves:
// committed when everything polled was processed, aborted otherwise.
func (t *streamThread) endOnExit() {
	if !t.tm.txn.open {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if t.unprocessed {
		_, _ = t.tm.abort(ctx)
	} else {
		_, _ = t.tm.commit(ctx)
	}
}

// dropFetches recycles polled records that will not be processed.
func dropFetches(fs kgo.Fetches) {
	fs.EachRecord(func(r *kgo.Record) { r.Recycle() })
}

// taskPartitioner sends changelog records to the partition their task
// chose (the task's own partition) and everything else by key, as Kafka's
// Java clients do; a windowed result by its key without the window, as
// Kafka Streams' WindowedStreamPartitioner does, so that every window of
// a key lands in one partition.
type taskPartitioner struct {
	changelogs map[string]bool
	// windowed maps a windowed result topic to its keys' window length.
	windowed map[string]int
	// crc32 are the topics whose keyed records go to the partition of
	// their key's CRC32, as librdkafka's default partitioner puts them
	// (a repartition, foreign-key subscription or sink toward a topic
	// declared PARTITIONER='crc32').
	crc32 map[string]bool
	def   kgo.Partitioner
}

func (p taskPartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	if p.changelogs[topic] {
		return kgo.ManualPartitioner().ForTopic(topic)
	}
	base := p.def.ForTopic(topic)
	if p.crc32[topic] {
		base = crc32Partitioner{base}
	}
	if n := p.windowed[topic]; n > 0 {
		return windowedPartitioner{base, n}
	}
	return base
}

// crc32Topics returns the topics topo writes by crc32 (the Partitioner
// of its repartitions, foreign-key registrations and sinks).
func crc32Topics(topo *physical.Topology) map[string]bool {
	out := map[string]bool{}
	for _, n := range topo.Nodes {
		switch op := n.Op.(type) {
		case *physical.Repartition:
			out[op.Topic] = out[op.Topic] || op.Partitioner == types.CRC32
		case *physical.ForeignKeyJoin:
			out[op.Registration] = out[op.Registration] || op.Partitioner == types.CRC32
		case *physical.Sink:
			out[op.Topic] = out[op.Topic] || op.Partitioner == types.CRC32
		}
	}
	return out
}

// crc32Partitioner puts a keyed record in the partition of its key's
// CRC32 (types.CRC32Partition), as librdkafka's consistent_random does;
// a record without a key goes where the default partitioner sends it.
type crc32Partitioner struct {
	kgo.TopicPartitioner
}

func (p crc32Partitioner) Partition(r *kgo.Record, n int) int {
	if len(r.Key) == 0 {
		return p.TopicPartitioner.Partition(r, n)
	}
	return int(types.CRC32Partition(r.Key, int32(n)))
}

// windowedPartitioner partitions a windowed key by its key bytes alone.
type windowedPartitioner struct {
	kgo.TopicPartitioner
	window int
}

func (p windowedPartitioner) Partition(r *kgo.Record, n int) int {
	k := r.Key
	if len(k) < p.window {
		return p.TopicPartitioner.Partition(r, n)
	}
	// The client calls the partitioner before the record is shared.
	r.Key = k[:len(k)-p.window]
	part := p.TopicPartitioner.Partition(r, n)
	r.Key = k
	return part
}
