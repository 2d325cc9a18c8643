package exec

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/state"
)

// standbyRunner keeps a stream thread's standby tasks (Kafka Streams'
// StandbyTask): hot copies of other members' stores, each read from its
// changelog with read_committed and applied as the restore does,
// between the thread's polls on a goroutine of its own, so a standby
// never slows the thread's transactions. A standby never produces and
// never processes input. Its position (the offsets it has applied) is
// reported in the thread's member metadata; when its task becomes
// active here, the standby closes (checkpointing) and the active task
// restores only what the standby had not read yet.
//
// Stores whose changelog is a source table's topic are not kept: their
// topic may hold records past the group's committed offset that the
// table must not have yet; the active restores them from their own
// checkpoint.
type standbyRunner struct {
	q      *Query
	thread int

	mu   sync.Mutex
	want map[TaskID]bool
	wake chan struct{}

	cancel context.CancelFunc
	done   chan struct{}

	// Owned by the runner's goroutine.
	cl    *kgo.Client
	tasks map[TaskID]*standbyTask
	byTP  map[topicPartition]*standbyStore
	// waitLogged notes the tasks whose directory was locked, logged once.
	waitLogged map[TaskID]bool
}

// standbyTask is one standby task: its locked directory and stores.
type standbyTask struct {
	id     TaskID
	lock   *dirLock
	stores []*standbyStore
	lastCP time.Time
}

// standbyStore is one store a standby task keeps up to date.
type standbyStore struct {
	task  *standbyTask
	ts    *taskStore
	tp    topicPartition
	apply func(*kgo.Record) error
	bulk  *bulkWriter // nil: apply writes through the overlay
	// stable is the changelog's last stable offset as last fetched;
	// target, the one it had when the copy opened (-1 until known).
	// Until the copy has applied the changelog up to target,
	// it may hold any part of the store, even none of it: pull queries
	// do not read it, however small the changelog (ksqlDB's lag alone
	// would let a copy that has not read a 500-record changelog answer
	// under a max.allowed.offset.lag of 1,000 — an empty answer).
	mu      sync.Mutex
	stable  int64
	target  int64
	applied int64
	pending int
}

// lag is how many changelog offsets the store is behind its changelog's
// last stable offset as last fetched, and whether it has caught up with
// the changelog it opened on (only then may pull queries read it).
func (s *standbyStore) lag() (int64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.stable-max(s.applied, 0), 0), s.target >= 0 && max(s.applied, 0) >= s.target
}

// readable reports whether a pull query allowing maxLag (negative: any)
// may read the copy.
func (s *standbyStore) readable(maxLag int64) bool {
	lag, caughtUp := s.lag()
	return caughtUp && (maxLag < 0 || lag <= maxLag)
}

// standbyCheckpointEvery is how often a standby writes its stores'
// checkpoints, so that the position it reports after a restart, and
// where the active starts when the task moves here, stay close.
const standbyCheckpointEvery = 5 * time.Second

func newStandbyRunner(q *Query, thread int) *standbyRunner {
	return &standbyRunner{q: q, thread: thread, want: map[TaskID]bool{}, wake: make(chan struct{}, 1),
		tasks: map[TaskID]*standbyTask{}, byTP: map[topicPartition]*standbyStore{}, waitLogged: map[TaskID]bool{}}
}

// set replaces the thread's standby tasks (from its latest assignment).
func (s *standbyRunner) set(ids []TaskID) {
	s.mu.Lock()
	s.want = map[TaskID]bool{}
	for _, id := range ids {
		s.want[id] = true
	}
	start := s.done == nil && len(ids) > 0
	if start {
		ctx, cancel := context.WithCancel(context.Background())
		s.cancel, s.done = cancel, make(chan struct{})
		go s.run(ctx)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// stop closes every standby task and waits for the runner to end.
func (s *standbyRunner) stop() {
	s.mu.Lock()
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

func (s *standbyRunner) run(ctx context.Context) {
	defer close(s.done)
	defer s.closeAll()
	for ctx.Err() == nil {
		if err := s.sync(ctx); err != nil {
			s.q.log.Warn("standby tasks", "thread", s.thread, "err", err)
		}
		if len(s.byTP) == 0 {
			select {
			case <-ctx.Done():
			case <-s.wake:
			case <-time.After(time.Second):
			}
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, 250*time.Millisecond)
		fs := s.cl.PollFetches(pctx)
		cancel()
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				s.q.log.Warn("standby changelog fetch error; retrying", "topic", topic, "partition", p, "err", err)
			}
		})
		fs.EachPartition(func(fp kgo.FetchTopicPartition) {
			ss := s.byTP[topicPartition{fp.Topic, fp.Partition}]
			if ss == nil {
				return
			}
			for _, r := range fp.Records {
				if r.Attrs.IsControl() {
					// A transaction's marker: nothing to apply, but the
					// copy's position passes it, so a copy that read
					// everything is 0 behind the last stable offset.
					ss.ts.applied = r.Offset + 1
					continue
				}
				if err := ss.apply(r); err != nil && !errors.Is(err, errNullKey) {
					s.q.log.Warn("standby: skipping a changelog record", "topic", r.Topic, "partition", r.Partition, "offset", r.Offset, "err", err)
				}
				ss.pending++
				ss.ts.applied = r.Offset + 1
			}
			if fp.LastStableOffset >= 0 {
				ss.mu.Lock()
				ss.stable = fp.LastStableOffset
				if ss.target < 0 {
					ss.target = fp.LastStableOffset
				}
				ss.mu.Unlock()
			}
		})
		for _, t := range s.tasks {
			if err := s.commit(t, false); err != nil {
				s.q.log.Warn("standby task failed; it is closed and opened again", "thread", s.thread, "task", t.id.String(), "err", err)
				s.closeTask(t)
			}
		}
	}
}

// commit writes what a standby task's stores applied, reports its
// position, and checkpoints them every standbyCheckpointEvery (or when
// final).
func (s *standbyRunner) commit(t *standbyTask, final bool) error {
	sum := int64(0)
	for _, ss := range t.stores {
		if ss.pending > 0 {
			if ss.bulk != nil {
				err := ss.ts.ov.ApplyBulk(&ss.bulk.b)
				ss.bulk.b.Reset()
				if err != nil {
					return err
				}
			} else if err := ss.ts.ov.CommitBulk(); err != nil {
				return err
			}
			ss.pending = 0
		}
		// Only now, the writes in the store, do standby reads see the
		// new position.
		ss.mu.Lock()
		ss.applied = ss.ts.applied
		ss.mu.Unlock()
		sum += max(ss.ts.applied, 0)
	}
	s.q.setPosition(t.id, s.thread, sum, true)
	if !final && time.Since(t.lastCP) < standbyCheckpointEvery {
		return nil
	}
	t.lastCP = time.Now()
	for _, ss := range t.stores {
		if ss.ts.applied <= ss.ts.checkpoint {
			continue
		}
		if err := ss.ts.ov.FlushBulk(); err != nil {
			return err
		}
		if err := ss.ts.writeCheckpoint(); err != nil {
			return err
		}
	}
	return nil
}

// sync opens the standby tasks wanted and not yet kept, and closes those
// no longer wanted. A task whose directory is locked (its active task
// here has not closed yet) is tried again at the next call.
func (s *standbyRunner) sync(ctx context.Context) error {
	s.mu.Lock()
	want := make(map[TaskID]bool, len(s.want))
	for id := range s.want {
		want[id] = true
	}
	s.mu.Unlock()
	for id, t := range s.tasks {
		if !want[id] {
			s.closeTask(t)
		}
	}
	for id := range s.waitLogged {
		if !want[id] {
			delete(s.waitLogged, id)
		}
	}
	for id := range want {
		if s.tasks[id] != nil || !s.wanted(id) {
			// Opening takes a while: the assignment may have changed
			// since (the task become active here, waiting for this
			// directory).
			continue
		}
		if err := s.open(ctx, id); err != nil {
			if errors.Is(err, errDirLocked) {
				if !s.waitLogged[id] {
					s.waitLogged[id] = true
					s.q.log.Info("standby task waits for its state directory", "thread", s.thread, "task", id.String())
				}
				continue
			}
			return fmt.Errorf("opening standby task %s: %w", id, err)
		}
		delete(s.waitLogged, id)
	}
	return nil
}

// wanted reports whether the latest assignment still has standby id.
func (s *standbyRunner) wanted(id TaskID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.want[id]
}

// open starts keeping standby task id.
func (s *standbyRunner) open(ctx context.Context, id TaskID) error {
	q := s.q
	var sub *physical.SubTopology
	for _, st := range q.topo.SubTopologies {
		if st.ID == id.Sub {
			sub = st
		}
	}
	if sub == nil || q.cfg.StateDir == "" {
		return fmt.Errorf("no stateful sub-topology %d", id.Sub)
	}
	if s.cl == nil {
		cl, err := q.cfg.Kafka.NewClient(
			kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.KeepControlRecords(),
			kgo.FetchMaxWait(200*time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		)
		if err != nil {
			return err
		}
		s.cl = cl
	}
	dir := filepath.Join(q.cfg.StateDir, q.topo.AppID, id.String())
	lock, err := lockDir(dir)
	if err != nil {
		return err
	}
	t := &standbyTask{id: id, lock: lock, lastCP: time.Now()}
	seen := map[string]bool{}
	for _, n := range sub.Nodes {
		for _, spec := range physical.StoresOf(n) {
			if seen[spec.Name] || spec.SourceTopicChangelog {
				continue
			}
			seen[spec.Name] = true
			ts, err := openTaskStore(filepath.Join(dir, spec.Name), spec.Name, spec.Changelog, id.Partition, q.cfg.RocksResources, q.cfg.MemoryStores)
			if err != nil {
				s.release(t)
				return fmt.Errorf("opening store %s: %w", spec.Name, err)
			}
			ss := &standbyStore{task: t, ts: ts, tp: topicPartition{spec.Changelog, id.Partition}, applied: ts.applied, target: -1}
			switch spec.Kind {
			case physical.WindowStore:
				var buf []byte
				ss.apply = func(r *kgo.Record) error { return restoreWindow(ts.ov, r, &buf) }
			case physical.SessionStore:
				var buf []byte
				ss.apply = func(r *kgo.Record) error { return restoreSession(ts.ov, r, &buf) }
			default:
				ss.bulk = &bulkWriter{}
				bulk := ss.bulk
				ss.apply = func(r *kgo.Record) error { return restoreAggregate(bulk, r) }
			}
			if end, err := changelogEnd(ctx, s.cl, spec.Changelog, id.Partition); err == nil {
				if ts.checkpoint > end {
					// Written from another changelog (one deleted and made
					// again): read this one from its start.
					q.log.Warn("standby store is ahead of its changelog; reading it from the start", "store", ts.dir, "checkpoint", ts.checkpoint, "end", end)
					if err := ts.wipe(q.cfg.RocksResources); err != nil {
						_ = ts.ov.Close() // closed once already: a no-op
						s.release(t)
						return fmt.Errorf("wiping store %s: %w", spec.Name, err)
					}
					ss.applied = -1
				}
				ss.stable, ss.target = end, end
			} else {
				// Unknown until the first fetch tells: not readable.
				ss.stable = max(ts.applied, 0)
			}
			t.stores = append(t.stores, ss)
		}
	}
	if len(t.stores) == 0 {
		s.release(t)
		return fmt.Errorf("sub-topology %d keeps no changelogged store", id.Sub)
	}
	add := map[string]map[int32]kgo.Offset{}
	sum := int64(0)
	for _, ss := range t.stores {
		start := kgo.NewOffset().AtStart()
		if ss.ts.checkpoint >= 0 {
			start = kgo.NewOffset().At(ss.ts.checkpoint)
		}
		if add[ss.tp.topic] == nil {
			add[ss.tp.topic] = map[int32]kgo.Offset{}
		}
		add[ss.tp.topic][ss.tp.partition] = start
		s.byTP[ss.tp] = ss
		sum += max(ss.ts.applied, 0)
		q.addStandbyStore(ss.ts.name, id.Partition, ss)
	}
	s.cl.AddConsumePartitions(add)
	s.tasks[id] = t
	q.setPosition(id, s.thread, sum, true)
	q.log.Info("standby task started", "thread", s.thread, "task", id.String(), "position", sum)
	return nil
}

// closeTask checkpoints a standby task's stores, closes them and
// releases its directory.
func (s *standbyRunner) closeTask(t *standbyTask) {
	if err := s.commit(t, true); err != nil {
		s.q.log.Warn("standby task: final checkpoint", "task", t.id.String(), "err", err)
	}
	rm := map[string][]int32{}
	for _, ss := range t.stores {
		delete(s.byTP, ss.tp)
		rm[ss.tp.topic] = append(rm[ss.tp.topic], ss.tp.partition)
	}
	if s.cl != nil {
		s.cl.RemoveConsumePartitions(rm)
	}
	s.release(t)
	delete(s.tasks, t.id)
	s.q.clearPosition(t.id, s.thread, true)
	s.q.log.Info("standby task closed", "thread", s.thread, "task", t.id.String())
}

// release closes a standby task's stores and unlocks its directory.
func (s *standbyRunner) release(t *standbyTask) {
	for _, ss := range t.stores {
		s.q.removeStandbyStore(ss)
		if err := ss.ts.ov.FlushBulk(); err != nil && !errors.Is(err, state.ErrClosed) {
			s.q.log.Warn("standby store flush", "dir", ss.ts.dir, "err", err)
		}
		if err := ss.ts.close(); err != nil {
			s.q.log.Warn("closing standby store", "dir", ss.ts.dir, "err", err)
		}
	}
	t.stores = nil
	t.lock.unlock()
	t.lock = nil
}

func (s *standbyRunner) closeAll() {
	for _, t := range s.tasks {
		s.closeTask(t)
	}
	if s.cl != nil {
		s.cl.Close()
		s.cl = nil
	}
}

// parseTaskIDs reads task names ("<sub>_<partition>"), skipping bad ones.
func parseTaskIDs(names []string) []TaskID {
	var out []TaskID
	for _, n := range names {
		a, b, ok := strings.Cut(n, "_")
		sub, err1 := strconv.Atoi(a)
		p, err2 := strconv.Atoi(b)
		if ok && err1 == nil && err2 == nil {
			out = append(out, TaskID{Sub: sub, Partition: int32(p)})
		}
	}
	return out
}

// taskPosition is what an instance reports of a task it keeps: the offset
// sum of its stores (caughtUp for a running active task), and the thread
// that keeps it.
type taskPosition struct {
	thread  int
	standby bool
	sum     int64
}

// setPosition records the position of a task this instance keeps.
func (q *Query) setPosition(id TaskID, thread int, sum int64, standby bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.positions == nil {
		q.positions = map[TaskID]taskPosition{}
	}
	q.positions[id] = taskPosition{thread: thread, standby: standby, sum: sum}
}

// clearPosition forgets a task's position, unless another thread (or the
// other role) has recorded one since.
func (q *Query) clearPosition(id TaskID, thread int, standby bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p, ok := q.positions[id]; ok && p.thread == thread && p.standby == standby {
		delete(q.positions, id)
	}
}

// offsets is what the instance reports of the tasks whose state it keeps
// (MemberInfo.Offsets): their checkpoints, and the positions of the
// tasks it runs or keeps as standbys.
func (q *Query) offsets() map[string]int64 {
	out := localOffsets(q.cfg.StateDir, q.topo.AppID, q.ownChangelogs)
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.positions) > 0 && out == nil {
		out = map[string]int64{}
	}
	for id, p := range q.positions {
		out[id.String()] = p.sum
	}
	return out
}

// addStandbyStore makes a standby's store readable by pull queries that
// accept standby reads.
func (q *Query) addStandbyStore(name string, p int32, ss *standbyStore) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.standbys == nil {
		q.standbys = map[string]map[int32]*standbyStore{}
	}
	if q.standbys[name] == nil {
		q.standbys[name] = map[int32]*standbyStore{}
	}
	q.standbys[name][p] = ss
}

func (q *Query) removeStandbyStore(ss *standbyStore) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if m := q.standbys[ss.ts.name]; m[ss.tp.partition] == ss {
		delete(m, ss.tp.partition)
	}
}

// StandbyPartition reports whether this instance keeps a standby copy of
// partition p of store, how many changelog offsets it is behind, and
// whether it has caught up with the changelog it opened on (a copy that
// has not is never read).
func (q *Query) StandbyPartition(store string, p int32) (lag int64, caughtUp, ok bool) {
	q.mu.Lock()
	ss := q.standbys[store][p]
	q.mu.Unlock()
	if ss == nil {
		return 0, false, false
	}
	lag, caughtUp = ss.lag()
	return lag, caughtUp, true
}

// StandbyStores returns the standby copies of store's partitions parts
// that have caught up and whose lag is at most maxLag (negative: any),
// as Stores does for active ones; a partition missing from the answer
// is not kept here, still catching up, or too far behind.
func (q *Query) StandbyStores(store string, parts []int32, maxLag int64) []Partition {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []Partition
	for _, p := range parts {
		ss := q.standbys[store][p]
		if ss == nil || !ss.readable(maxLag) {
			continue
		}
		out = append(out, Partition{ID: p, Store: ss.ts.base})
	}
	return out
}

// StoreSub returns the sub-topology that keeps store: a task of it with
// partition p keeps partition p of the store.
func (q *Query) StoreSub(store string) (int, bool) {
	for _, st := range q.topo.SubTopologies {
		for _, n := range st.Nodes {
			for _, spec := range physical.StoresOf(n) {
				if spec.Name == store {
					return st.ID, true
				}
			}
		}
	}
	return 0, false
}
