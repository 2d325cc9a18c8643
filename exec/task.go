package exec

import (
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// TaskID names a task: a sub-topology and the partition it works on.
type TaskID struct {
	Sub       int
	Partition int32
}

// String is the task's name as in its state directory: <sub>_<partition>.
func (id TaskID) String() string { return strconv.Itoa(id.Sub) + "_" + strconv.Itoa(int(id.Partition)) }

// taskState is where a task is in its life.
type taskState int

const (
	taskCreated   taskState = iota // built; waiting for its state directory
	taskRestoring                  // its stores are being restored; its inputs are paused
	taskRunning                    // processing records
	taskSuspended                  // revoked, its work committed or aborted; not processing
	taskClosed                     // its stores closed and its directory released
)

var taskStateNames = [...]string{"CREATED", "RESTORING", "RUNNING", "SUSPENDED", "CLOSED"}

func (s taskState) String() string { return taskStateNames[s] }

// topicPartition names an input partition of a task.
type topicPartition struct {
	topic     string
	partition int32
}

// Task is one (sub-topology, partition) of a query: the graph of
// processors built for it, its partition group (one queue per input
// topic-partition, records taken in timestamp order across them), its
// stream time, its stores and its punctuations.
type Task struct {
	id     TaskID
	sub    *physical.SubTopology
	state  taskState
	graph  *taskGraph
	queues []*partitionQueue
	stores []*taskStore
	// streamTime is the largest event time the task has processed, or
	// math.MinInt64 before its first record.
	streamTime int64
	punct      punctuationQueue
	lock       *dirLock
	// restoring counts the task's stores still being restored.
	restoring int
	// aheadSince is since when the task has waited for a changelog whose
	// last stable offset is behind its store's checkpoint (zero: not).
	aheadSince time.Time
}

// TaskContext is what a processor's Init sees of its task.
type TaskContext struct{ task *Task }

// Partition is the task's partition.
func (tc *TaskContext) Partition() int32 { return tc.task.id.Partition }

// StreamTime is the task's stream time in milliseconds (math.MinInt64
// before its first record).
func (tc *TaskContext) StreamTime() int64 { return tc.task.streamTime }

// Schedule calls fn every interval of the given clock, between records,
// with the clock's time in milliseconds. An error from fn fails the task.
func (tc *TaskContext) Schedule(interval time.Duration, kind PunctuationType, fn func(now int64) error) {
	tc.task.punct.schedule(kind, interval, fn)
}

// partitionQueue holds the polled records of one input partition of a
// task, until the task processes them.
type partitionQueue struct {
	tp   topicPartition
	src  *sourceOp
	recs []*kgo.Record
	head int
}

func (q *partitionQueue) empty() bool { return q.head == len(q.recs) }

func (q *partitionQueue) reset() {
	clear(q.recs)
	q.recs, q.head = q.recs[:0], 0
}

// queued reports whether any of the task's queues holds records.
func (t *Task) queued() bool {
	for _, q := range t.queues {
		if !q.empty() {
			return true
		}
	}
	return false
}

// queue returns the task's queue of tp, or nil.
func (t *Task) queue(tp topicPartition) *partitionQueue {
	for _, q := range t.queues {
		if q.tp == tp {
			return q
		}
	}
	return nil
}

// nextQueue returns the queue whose first record has the lowest
// timestamp, or nil when all are empty. A task does not wait for an
// empty partition to fill (Kafka Streams' max.task.idle.ms of 0).
func (t *Task) nextQueue() *partitionQueue {
	if len(t.queues) == 1 {
		if q := t.queues[0]; !q.empty() {
			return q
		}
		return nil
	}
	var best *partitionQueue
	for _, q := range t.queues {
		if q.empty() {
			continue
		}
		if best == nil || q.recs[q.head].Timestamp.Before(best.recs[best.head].Timestamp) {
			best = q
		}
	}
	return best
}

// errTaskPanic marks a panic in a task's processors, turned into an
// error at the task's boundary.
var errTaskPanic = errors.New("panic in a processor")

// process runs the task's queued records through its graph, in
// timestamp order, firing stream-time punctuations between records. A
// bad record is passed to bad and skipped; any other failure (a panic, a
// store that fails, a punctuation's error) is returned and fails the
// task.
func (t *Task) process(bad func(*kgo.Record, error)) (n int, err error) {
	var cur *kgo.Record
	defer func() {
		if p := recover(); p != nil {
			at := ""
			if cur != nil {
				at = fmt.Sprintf(" at %s/%d offset %d", cur.Topic, cur.Partition, cur.Offset)
			}
			err = fmt.Errorf("task %s: %w%s: %v\n%s", t.id, errTaskPanic, at, p, debug.Stack())
		}
	}()
	stream := t.punct.has(StreamTime)
	for {
		q := t.nextQueue()
		if q == nil {
			return n, nil
		}
		cur = q.recs[q.head] // the slot is cleared when the queue empties
		q.head++
		n++
		if err := q.src.process(cur); err != nil {
			var fe *fatalError
			if errors.As(err, &fe) || errors.Is(err, types.ErrRegistry) {
				// Not the record's fault (e.g. the schema registry is
				// down): fail, and reprocess it after the restart.
				return n, fmt.Errorf("task %s: %w", t.id, err)
			}
			bad(cur, err)
		} else if ts := q.src.change.Timestamp; ts > t.streamTime {
			t.streamTime = ts
			if stream {
				if err := t.punct.fire(StreamTime, ts); err != nil {
					return n, fmt.Errorf("task %s: stream-time punctuation: %w", t.id, err)
				}
			}
		}
		// Nothing keeps the record itself: rows copy what they keep, or
		// point into the fetch response.
		cur.Recycle()
		cur = nil
		if q.empty() {
			q.reset()
		}
	}
}

// punctuateWallClock fires the task's due wall-clock punctuations.
func (t *Task) punctuateWallClock(now int64) error {
	if err := t.punct.fire(WallClockTime, now); err != nil {
		return fmt.Errorf("task %s: wall-clock punctuation: %w", t.id, err)
	}
	return nil
}

// dropQueued forgets the task's queued records (the transaction they
// were polled in aborted: they come again).
func (t *Task) dropQueued() {
	for _, q := range t.queues {
		for _, r := range q.recs[q.head:] {
			r.Recycle()
		}
		q.reset()
	}
}

// flush writes what the task's processors buffered, before a commit.
func (t *Task) flush() error {
	for _, f := range t.graph.flushers {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("task %s: %w", t.id, err)
		}
	}
	return nil
}

// abort forgets what the task's processors buffered.
func (t *Task) abort() {
	for _, a := range t.graph.aborters {
		a.Abort()
	}
}

// noStreamTime is a task's stream time before its first record.
const noStreamTime = math.MinInt64
