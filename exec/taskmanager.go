package exec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/physical"
)

// taskManager owns a stream thread's tasks (Kafka Streams' TaskManager):
// it creates them for assigned partitions, has their stores restored
// before they process anything, commits them (their state, output and
// input offsets in one transaction: commit) when the thread says, and
// closes them when their partitions are revoked. Standby tasks (hot
// copies of other members' stores) are kept beside it by the thread's
// standbyRunner (standby.go).
type taskManager struct {
	q      *Query
	thread int
	topo   *physical.Topology
	subs   map[string]*physical.SubTopology // by source topic
	out    *outbox
	reader *changelogReader
	tasks  map[TaskID]*Task
	inputs map[topicPartition]*Task
	// extra builds node kinds exec does not know (tests).
	extra func(*physical.Node, Processor) (Processor, error)

	// sess is the thread's transactional producer (set by the thread
	// once made): the task manager begins and commits its tasks'
	// transactions (commit). txn is the open one.
	sess txnSession
	txn  txnState
	// produceErr is the first failure of a record produced in the open
	// transaction (its promise sets it): the commit aborts instead.
	produceErr atomic.Pointer[error]
	// produceFails counts the transactions in a row whose records could
	// not all be written.
	produceFails int
	// selfAborts sees the client abort a transaction it then reports
	// committed.
	selfAborts selfAborts
}

func newTaskManager(q *Query, thread int, out *outbox) *taskManager {
	tm := &taskManager{q: q, thread: thread, topo: q.topo, subs: map[string]*physical.SubTopology{}, out: out,
		reader: &changelogReader{q: q}, tasks: map[TaskID]*Task{}, inputs: map[topicPartition]*Task{}, extra: q.cfg.extraNodes}
	for _, st := range q.topo.SubTopologies {
		for _, s := range st.Sources {
			tm.subs[s.Op.(*physical.Source).Topic] = st
		}
	}
	return tm
}

// stateful reports whether a task of st keeps stores.
func stateful(st *physical.SubTopology) bool {
	for _, n := range st.Nodes {
		if len(physical.StoresOf(n)) > 0 {
			return true
		}
	}
	return false
}

// statefulTopic reports whether topic feeds a stateful sub-topology: its
// partitions are paused when assigned until their task has restored.
func (tm *taskManager) statefulTopic(topic string) bool {
	st := tm.subs[topic]
	return st != nil && stateful(st)
}

// handleAssignment closes the tasks whose partitions were all revoked
// and creates the tasks of newly assigned partitions. A task's
// partitions come and go together under a task-aware balancer; under
// another one a task runs with the partitions it has.
func (tm *taskManager) handleAssignment(ctx context.Context, cl *kgo.Client, assigned, revoked []topicPartition) error {
	for _, tp := range revoked {
		t := tm.inputs[tp]
		if t == nil {
			continue
		}
		delete(tm.inputs, tp)
		for i, q := range t.queues {
			if q.tp == tp {
				q.reset()
				t.queues = append(t.queues[:i], t.queues[i+1:]...)
				break
			}
		}
		if len(t.queues) == 0 {
			tm.closeTask(t)
		}
	}
	var created []*Task
	for _, tp := range assigned {
		st := tm.subs[tp.topic]
		if st == nil || tm.inputs[tp] != nil {
			continue
		}
		id := TaskID{Sub: st.ID, Partition: tp.partition}
		t := tm.tasks[id]
		if t == nil {
			t = &Task{id: id, sub: st, state: taskCreated, streamTime: noStreamTime}
			tm.tasks[id] = t
			created = append(created, t)
		}
		t.queues = append(t.queues, &partitionQueue{tp: tp})
		tm.inputs[tp] = t
		if t.graph != nil {
			t.queues[len(t.queues)-1].src = t.graph.sources[tp.topic]
		}
	}
	if len(created) > 0 {
		tm.q.refreshPartitionCounts(ctx, cl)
	}
	return tm.initialize(ctx, cl, created)
}

// reconcile completes the revocations the group callbacks noted (gone)
// with those they missed: franz-go's GroupTransactSession calls
// OnPartitionsRevoked and OnPartitionsLost only for the first
// revocation between two ends of a transaction, so a second one (the
// group rebalancing twice while the thread polls, or with no transaction
// open) never reaches the thread. A task left open on a partition the
// member no longer has keeps its state directory locked (a standby of
// it here never starts) and its stale stores answer pull queries. So
// every partition a task reads that synced (the member's latest
// assignment, whole; nil: none yet) does not have is revoked too, and
// so is one assigned again while its task still reads it (lost or
// revoked unseen in between: its task starts again from the committed
// offset). Partitions noted as assigned that synced no longer has are
// dropped (revoked since, maybe unseen). missed lists the revocations
// added.
func (tm *taskManager) reconcile(gone, gained []topicPartition, synced map[topicPartition]bool) (_, _, missed []topicPartition) {
	leaving := map[topicPartition]bool{}
	for _, tp := range gone {
		leaving[tp] = true
	}
	if synced != nil {
		for tp := range tm.inputs {
			if !synced[tp] && !leaving[tp] {
				leaving[tp] = true
				missed = append(missed, tp)
			}
		}
		gained = slices.DeleteFunc(gained, func(tp topicPartition) bool { return !synced[tp] })
	}
	for _, tp := range gained {
		if tm.inputs[tp] != nil && !leaving[tp] {
			leaving[tp] = true
			missed = append(missed, tp)
		}
	}
	slices.SortFunc(missed, func(a, b topicPartition) int {
		return cmp.Or(strings.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	return append(gone, missed...), gained, missed
}

// abortLeaving drops the uncommitted state of the running tasks all of
// whose partitions are in revoked (at-least-once: the thread goes on
// without aborting, and those tasks close).
func (tm *taskManager) abortLeaving(revoked []topicPartition) {
	gone := map[topicPartition]bool{}
	for _, tp := range revoked {
		gone[tp] = true
	}
	for _, t := range tm.tasks {
		if t.graph == nil || t.state != taskRunning {
			continue
		}
		all := len(t.queues) > 0
		for _, q := range t.queues {
			all = all && gone[q.tp]
		}
		if all {
			t.abort()
		}
	}
}

// initialize builds created tasks: it locks their state directories,
// opens their stores and starts restoring them. A task whose directory
// another thread still holds stays created and is tried again at the
// next loop.
func (tm *taskManager) initialize(ctx context.Context, cl *kgo.Client, tasks []*Task) error {
	var committed kadm.OffsetResponses
	var opening []*Task
	for _, t := range tasks {
		if t.state != taskCreated {
			continue
		}
		// A source table's store restores up to the group's committed
		// offset of the table's topic. An offset another member's open
		// transaction is still committing is not known yet: the task
		// waits (taking it as "nothing committed" would wipe its store).
		waitOffsets := false
		for _, n := range t.sub.Nodes {
			for _, spec := range physical.StoresOf(n) {
				if !spec.SourceTopicChangelog {
					continue
				}
				if committed == nil {
					var err error
					if committed, err = kadm.NewClient(cl).FetchOffsets(kadm.RequireStable(ctx), tm.topo.AppID); err != nil {
						return fmt.Errorf("fetching committed offsets: %w", err)
					}
				}
				if o, ok := committed.Lookup(spec.Changelog, t.id.Partition); ok && o.Err != nil {
					tm.q.log.Info("task waits for its committed offset", "thread", tm.thread, "task", t.id.String(), "err", o.Err)
					waitOffsets = true
				}
			}
		}
		if !waitOffsets {
			opening = append(opening, t)
		}
	}
	errs := tm.openStores(opening)
	for i, t := range opening {
		if err := errs[i]; errors.Is(err, errDirLocked) {
			tm.q.log.Info("task waits for its state directory", "thread", tm.thread, "task", t.id.String(), "err", err)
			continue
		} else if err != nil {
			return err
		}
		if err := tm.open(t); err != nil {
			return err
		}
		if len(t.stores) == 0 {
			tm.run(cl, t)
			continue
		}
		t.state = taskRestoring
		if tm.changelogBehind(ctx, cl, t) {
			// Released; tried again at the next loop.
			continue
		}
		for _, ts := range t.stores {
			spec := tm.topo.Store(ts.name)
			until := int64(0)
			// Every store restores into batches written without the WAL,
			// large ones as ingested files (changelog.go).
			bulk := &bulkWriter{}
			apply := func(r *kgo.Record) error { return restoreAggregate(bulk, r) }
			switch spec.Kind {
			case physical.WindowStore:
				var buf []byte
				apply = func(r *kgo.Record) error { return restoreWindow(bulk, r, &buf) }
			case physical.SessionStore:
				var buf []byte
				apply = func(r *kgo.Record) error { return restoreSession(bulk, r, &buf) }
			}
			if spec.SourceTopicChangelog {
				// The table's topic is the changelog: restore up to the
				// group's committed offset, what processing resumes from
				// (fetched above).
				if o, ok := committed.Lookup(spec.Changelog, t.id.Partition); ok && o.Err == nil && o.At >= 0 {
					until = o.At
				}
				dec, err := newRecordDecoder(ts.name, tm.sourceOf(t.sub, spec.Changelog))
				if err != nil {
					return err
				}
				bulk = &bulkWriter{}
				apply = tableRecordApplier(dec, bulk)
			} else {
				end, err := changelogEnd(ctx, cl, spec.Changelog, t.id.Partition)
				if err != nil {
					return err
				}
				until = end
			}
			rs := &restoration{task: t, store: ts, tp: topicPartition{spec.Changelog, t.id.Partition}, until: until, apply: apply, bulk: bulk}
			if spec.RetentionMs > 0 && !spec.SourceTopicChangelog {
				// A window changelog's retention deletes from its start,
				// maybe past the checkpoint, maybe everything.
				start, err := changelogStart(ctx, cl, spec.Changelog, t.id.Partition)
				if err != nil {
					return err
				}
				rs.logStart = start
			}
			done, err := tm.reader.add(rs)
			if err != nil {
				return fmt.Errorf("restoring store %s: %w", ts.dir, err)
			}
			if !done {
				t.restoring++
			}
		}
		if t.restoring == 0 {
			tm.run(cl, t)
		}
	}
	return nil
}

// sourceOf returns st's source of topic.
func (tm *taskManager) sourceOf(st *physical.SubTopology, topic string) *physical.Source {
	for _, s := range st.Sources {
		if src := s.Op.(*physical.Source); src.Topic == topic {
			return src
		}
	}
	return st.Source()
}

// openStores locks the state directories of tasks (the stateful ones)
// and opens their stores, the tasks at once: opening a RocksDB store
// takes several milliseconds, most of them the kernel's making its
// files, and a thread given four tasks of two stores each started in
// two-thirds of the time opening them one after another took. It
// returns each task's error; a task that failed holds nothing.
func (tm *taskManager) openStores(tasks []*Task) []error {
	errs := make([]error, len(tasks))
	var wg sync.WaitGroup
	for i, t := range tasks {
		if !stateful(t.sub) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = tm.openTaskStores(t); errs[i] != nil {
				tm.release(t)
			}
		}()
	}
	wg.Wait()
	return errs
}

// openTaskStores locks t's state directory and opens its stores.
func (tm *taskManager) openTaskStores(t *Task) error {
	if tm.q.cfg.StateDir == "" {
		return errors.New("a query with state stores needs a state directory")
	}
	dir := filepath.Join(tm.q.cfg.StateDir, tm.topo.AppID, t.id.String())
	lock, err := lockDir(dir)
	if err != nil {
		return err
	}
	t.lock = lock
	for _, n := range t.sub.Nodes {
		for _, s := range physical.StoresOf(n) {
			if slices.ContainsFunc(t.stores, func(ts *taskStore) bool { return ts.name == s.Name }) {
				continue
			}
			ts, err := openTaskStore(filepath.Join(dir, s.Name), s.Name, s.Changelog, t.id.Partition, tm.q.cfg.RocksResources, tm.q.cfg.MemoryStores)
			if err != nil {
				return fmt.Errorf("opening store %s: %w", filepath.Join(dir, s.Name), err)
			}
			t.stores = append(t.stores, ts)
		}
	}
	return nil
}

// open builds the graph of a task whose stores openStores opened.
func (tm *taskManager) open(t *Task) error {
	env := &taskEnv{out: tm.out, stores: map[string]*taskStore{}, extra: tm.extra, late: &lateCounter{q: tm.q}, q: tm.q,
		ksqlDelimited: tm.q.cfg.KsqlDelimited}
	if emit := tm.q.cfg.Emit; emit != nil {
		env.terminal = emitOp(emit)
	}
	for _, ts := range t.stores {
		env.stores[ts.name] = ts
	}
	g, err := buildGraph(tm.topo, t.sub, env)
	if err != nil {
		tm.release(t)
		return fmt.Errorf("task %s: %w", t.id, err)
	}
	t.graph = g
	for _, q := range t.queues {
		q.src = g.sources[q.tp.topic]
	}
	tc := &TaskContext{task: t}
	for _, h := range g.initers {
		if err := h.Init(tc); err != nil {
			tm.release(t)
			return fmt.Errorf("task %s: %w", t.id, err)
		}
	}
	return nil
}

// run marks a task running: its stores are restored, so pull queries
// may read them and its paused inputs resume.
func (tm *taskManager) run(cl *kgo.Client, t *Task) {
	t.state = taskRunning
	if len(t.stores) > 0 {
		tm.q.setPosition(t.id, tm.thread, caughtUp, false)
	}
	for _, ts := range t.stores {
		// Restored: each transaction's writes are applied to the store
		// while the next one runs; pull queries read the store through
		// a view that waits for them.
		if err := ts.setAsync(!tm.q.cfg.SyncStoreCommits); err != nil {
			tm.q.log.Warn("store commit mode", "store", ts.name, "err", err)
		}
		tm.q.addStore(ts.name, t.id.Partition, ts.ov.Committed())
	}
	resume := map[string][]int32{}
	for _, q := range t.queues {
		resume[q.tp.topic] = append(resume[q.tp.topic], q.tp.partition)
	}
	cl.ResumeFetchPartitions(resume)
}

// restore runs a step of the changelog reader and the tasks whose
// stores are all restored start running.
func (tm *taskManager) restore(ctx context.Context, cl *kgo.Client) error {
	// Tasks that waited for their directory try again.
	var waiting []*Task
	for _, t := range tm.tasks {
		if t.state == taskCreated {
			waiting = append(waiting, t)
		}
	}
	if len(waiting) > 0 {
		if err := tm.initialize(ctx, cl, waiting); err != nil {
			return err
		}
	}
	if !tm.reader.restoring() {
		return nil
	}
	done, err := tm.reader.step(ctx)
	for _, rs := range done {
		if rs.task.restoring--; rs.task.restoring == 0 && rs.task.state == taskRestoring {
			tm.run(cl, rs.task)
		}
	}
	return err
}

// closeTask closes a task whose partitions are gone: its open
// transaction's writes were aborted or committed before; its stores
// write their checkpoints and its directory is released.
func (tm *taskManager) closeTask(t *Task) {
	tm.reader.remove(t)
	if t.graph != nil {
		for _, c := range t.graph.closers {
			if err := c.Close(); err != nil {
				tm.q.log.Warn("closing processor", "task", t.id.String(), "err", err)
			}
		}
	}
	t.state = taskSuspended
	tm.q.clearPosition(t.id, tm.thread, false)
	tm.release(t)
	t.state = taskClosed
	delete(tm.tasks, t.id)
	for _, q := range t.queues {
		delete(tm.inputs, q.tp)
	}
}

// release closes a task's stores and unlocks its directory.
func (tm *taskManager) release(t *Task) {
	for _, ts := range t.stores {
		tm.q.removeStore(ts.ov.Committed())
		if err := ts.close(); err != nil {
			tm.q.log.Warn("closing store", "dir", ts.dir, "err", err)
		}
	}
	t.stores = nil
	t.lock.unlock()
	t.lock = nil
}

// closeAll closes every task (the thread is stopping).
func (tm *taskManager) closeAll() {
	for _, t := range tm.tasks {
		tm.closeTask(t)
	}
	tm.reader.close()
}

// changelogBehind reports whether a changelog of t's stores ends (by its
// last stable offset) before the offset the store's checkpoint says it
// applied, committed. That happens while another producer's transaction
// that began earlier is still open (a thread that had the task, failing
// to end its transaction): the checkpointed offsets are committed but not
// yet stable. The task is then released and waits, up to three
// transaction timeouts (Config.aheadWait); restoring now would take the
// store for ahead of its changelog and wipe it, losing every update past
// the open transaction.
func (tm *taskManager) changelogBehind(ctx context.Context, cl *kgo.Client, t *Task) bool {
	if !t.aheadSince.IsZero() && time.Since(t.aheadSince) > tm.q.cfg.aheadWait() {
		return false // waited enough: a lost changelog; restore from the start
	}
	for _, ts := range t.stores {
		spec := tm.topo.Store(ts.name)
		if spec.SourceTopicChangelog || ts.checkpoint < 0 {
			continue
		}
		end, err := changelogEnd(ctx, cl, spec.Changelog, t.id.Partition)
		if err != nil || ts.checkpoint <= end {
			continue
		}
		if t.aheadSince.IsZero() {
			t.aheadSince = time.Now()
			tm.q.log.Info("task waits: its changelog's last stable offset is behind its store's checkpoint (a transaction is still open)",
				"thread", tm.thread, "task", t.id.String(), "store", ts.name, "checkpoint", ts.checkpoint, "stable", end)
		}
		tm.release(t)
		t.state = taskCreated
		return true
	}
	t.aheadSince = time.Time{}
	return false
}

// changelogEnd returns the last stable offset of a changelog partition:
// where a restore of it ends.
func changelogEnd(ctx context.Context, cl *kgo.Client, topic string, p int32) (int64, error) {
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

// changelogStart returns a changelog partition's log start offset.
func changelogStart(ctx context.Context, cl *kgo.Client, topic string, p int32) (int64, error) {
	offs, err := kadm.NewClient(cl).ListStartOffsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("listing %s's start: %w", topic, err)
	}
	o, ok := offs.Lookup(topic, p)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("start of %s/%d: %v", topic, p, o.Err)
	}
	return o.Offset, nil
}

// restoreAggregate applies one changelog record to a store being
// restored: the record is the group's latest state.
func restoreAggregate(st kvWriter, r *kgo.Record) error {
	if r.Value == nil {
		return st.Delete(r.Key)
	}
	return st.Put(r.Key, r.Value)
}

// The transaction is the task manager's, as Kafka Streams' TaskManager
// owns committing its tasks (TaskManager.commit: each task's
// prepareCommit, the producer's commitTransaction with the tasks'
// offsets, each task's postCommit). The stream thread decides when: a
// commit interval is up (maybeCommit), a rebalance revokes partitions or
// records came for a partition without a running task (abort), the
// thread leaves (endOnExit).

// txnState is the open transaction of a stream thread's task manager.
type txnState struct {
	open  bool
	start time.Time
	// records counts the input records polled into it.
	records int
}

// commitResult is what an ended transaction did.
type commitResult struct {
	// committed: the transaction committed; false: it was aborted, or no
	// transaction was open (ended false).
	committed bool
	// ended: a transaction was open and was ended (committed or
	// aborted).
	ended bool
	// tasks counts the running tasks whose state went with it.
	tasks int
	// records counts the input records it covered.
	records int
	// reason, for a commit the thread asked for that aborted instead, is
	// why: a task's state could not be written (a flush failed), or a
	// record could not.
	reason error
}

// begin opens a transaction unless one is open: before records are
// processed or punctuations fire.
func (tm *taskManager) begin() error {
	if tm.txn.open {
		return nil
	}
	if err := tm.sess.Begin(); err != nil {
		return fmt.Errorf("beginning transaction: %w", err)
	}
	tm.txn = txnState{open: true, start: time.Now()}
	return nil
}

// commit commits the open transaction: what every running task buffered
// is written into it (prepareCommit), every record produced is flushed,
// and the transaction ends with the polled records' offsets. When a
// task's state or a record could not be written, the transaction is
// aborted instead (the result says why) and its records come again.
// With no transaction open it does nothing: no transaction is opened to
// commit nothing.
func (tm *taskManager) commit(ctx context.Context) (commitResult, error) {
	return tm.end(ctx, kgo.TryCommit)
}

// abort aborts the open transaction, as the thread chose (a rebalance,
// records without a running task, leaving with records unprocessed):
// every task drops what it processed in it and its records come again.
func (tm *taskManager) abort(ctx context.Context) (commitResult, error) {
	return tm.end(ctx, kgo.TryAbort)
}

// end ends the open transaction, committing when try says so and every
// task could write what it buffered. Stores follow the transaction:
// its writes are applied when it committed, dropped when it aborted.
func (tm *taskManager) end(ctx context.Context, try kgo.TransactionEndTry) (commitResult, error) {
	q := tm.q
	if !tm.txn.open {
		return commitResult{}, nil
	}
	res := commitResult{ended: true, records: tm.txn.records}
	// An abort the thread chose (a rebalance, records without a task)
	// fails the records still buffered ("client is aborting buffered
	// records"): no produce failure of the query's.
	chosenAbort := try != kgo.TryCommit
	if try == kgo.TryCommit {
		if err := tm.prepareCommit(); err != nil {
			try = kgo.TryAbort // the transaction would miss state
			res.reason = err
			q.log.Error("writing task state; aborting the transaction", "thread", tm.thread, "err", err)
		} else {
			tm.out.flush()
		}
	}
	// Every record flushed is with the client before it flushes (a
	// commit) or ends the transaction (an abort too: none may land in
	// the next one).
	tm.out.settle()
	if try == kgo.TryCommit {
		// Every record must be written before the offsets commit with
		// them: a record that failed (its topic deleted, a delivery
		// timeout) aborts the transaction, whatever the session would
		// make of it, so that its input comes again.
		// A record that cannot be written (its topic deleted: franz-go
		// may hold it waiting for the topic) is given up after the
		// flush timeout, half the transaction timeout. (Not
		// kgo.RecordDeliveryTimeout: it counts from the record's
		// timestamp, which is its input's, so reprocessing old input
		// would time out at once.)
		fctx, cancel := context.WithTimeout(ctx, q.cfg.flushTimeout())
		err := tm.sess.Client().Flush(fctx)
		cancel()
		if err != nil {
			e := fmt.Errorf("records not written within %v: %w", q.cfg.flushTimeout(), err)
			tm.produceErr.CompareAndSwap(nil, &e)
		}
		if pe := tm.produceErr.Load(); pe != nil {
			try = kgo.TryAbort
			res.reason = *pe
		}
	}
	if try != kgo.TryCommit {
		tm.abortTasks()
	}
	for _, task := range tm.tasks {
		if task.state == taskRunning {
			res.tasks++
		}
	}
	began := time.Now()
	tm.selfAborts.seen.Store(false)
	committed, err := tm.sess.End(ctx, try)
	if tm.selfAborts.seen.Swap(false) && committed && err == nil {
		// The client aborted it (selfAborts): its work is dropped and
		// done again, as for any abort.
		q.log.Warn("the Kafka client aborted a transaction of output only that it reports committed; its work is done again", "thread", tm.thread)
		tm.abortTasks()
		committed = false
	}
	if q.cfg.Metrics != nil && committed && err == nil {
		q.cfg.Metrics.ObserveCommit(time.Since(began))
	}
	tm.txn = txnState{}
	res.committed = committed && err == nil
	// (Offsets of the changelog records are known here; the outbox is
	// reset after.)
	if cerr := tm.postCommit(res.committed); cerr != nil {
		tm.out.reset()
		return res, cerr
	}
	tm.out.reset()
	if err != nil {
		// The commit sends the group's offsets (READ on the group and
		// the input topics) and ends the transaction (WRITE on the
		// transactional id); a refused write of a record came through
		// its promise.
		var need []kafka.Permission
		for _, p := range q.needs(tm.thread) {
			if p.Type != kafka.Topic || p.Operation == kafka.Read {
				need = append(need, p)
			}
		}
		return res, fmt.Errorf("ending transaction: %w", q.cfg.Kafka.Explain(err, need...))
	}
	if committed {
		q.commits.Add(1)
	} else {
		// A rebalance or fencing aborted the transaction; the session
		// rewound to the committed offsets, so the records come again.
		q.aborts.Add(1)
		q.log.Info("transaction aborted; records will be reprocessed", "thread", tm.thread)
	}
	if pe := tm.produceErr.Swap(nil); pe != nil && !chosenAbort {
		if kafka.Denied(*pe) {
			// Retrying cannot cure a refusal: fail now, explained.
			return res, *pe
		}
		q.log.Warn("produce failed; transaction aborted", "thread", tm.thread, "err", *pe)
		// A produce that keeps failing (its topic deleted, say) fails
		// the thread, so the query shows FAILED with the error and
		// restarts with backoff, instead of aborting forever.
		if tm.produceFails++; tm.produceFails >= maxProduceFailures {
			tm.produceFails = 0
			return res, fmt.Errorf("writing records failed in %d transactions in a row: %w", maxProduceFailures, *pe)
		}
	} else if committed {
		tm.produceFails = 0
	}
	return res, nil
}

// maxProduceFailures is how many transactions in a row may fail to write
// their records before the stream thread fails.
const maxProduceFailures = 3

// prepareCommit writes what each running task buffered (its stores'
// changelog records) into the open transaction. An error means the
// transaction would miss state: it is aborted.
func (tm *taskManager) prepareCommit() error {
	for _, task := range tm.tasks {
		if task.state != taskRunning {
			continue
		}
		if err := task.flush(); err != nil {
			return err
		}
	}
	return nil
}

// abortTasks drops what each task processed in the transaction being
// aborted.
func (tm *taskManager) abortTasks() {
	for _, task := range tm.tasks {
		if task.graph != nil {
			task.abort()
		}
	}
}

// postCommit follows the ended transaction in each running task's
// stores: their writes are applied when it committed, dropped when it
// aborted.
func (tm *taskManager) postCommit(committed bool) error {
	for _, task := range tm.tasks {
		if task.state != taskRunning {
			continue
		}
		for _, ts := range task.stores {
			if !committed {
				ts.abort()
				continue
			}
			if err := ts.commit(); err != nil {
				return fmt.Errorf("applying committed state: %w", err)
			}
		}
	}
	return nil
}
