package exec

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// windowing is the window part of a windowed aggregation (an
// aggregateOp with win set): which windows a row falls into, which of
// them are still open by stream time, EMIT FINAL's emission of closed
// windows, and the window store's layout and retention.
//
// The window store is time-ordered: a window's state is kept under
//
//	[8-byte window start, sign bit flipped][group key bytes]
//
// so that windows sort by start, the windows that close next are a range
// scan, and retention drops every expired window with one range delete.
// Its changelog keys are Kafka Streams' windowed keys instead: the group
// key bytes, then the start as a big-endian int64.
//
// The store (and its changelog) also holds the aggregation's progress
// under the 1-byte key markKey: its stream time (the largest event time
// it has seen) and, under EMIT FINAL, the start up to which every closed
// window was emitted, 8 bytes each. It is written with each transaction,
// so a restarted task judges late rows by the stream time its last
// commit saw and never emits a final window twice.
type windowing struct {
	name string
	typ  types.WindowType
	// size and advance are a time window's size and advance; grace and
	// retention as in planner.WindowSpec.
	size, advance, grace, retention int64
	loc                             *time.Location // nil: aligned to the epoch
	final                           bool
	// onClose (physical.Aggregate.FinalOnClose, time windows aligned to
	// the epoch) emits closed windows as the record closing them is
	// processed (emitOnClose); emitted is then the close time (stream
	// time - grace) of the last emission, Kafka Streams'
	// lastEmitWindowCloseTime.
	onClose bool
	store   *taskStore
	late    *lateCounter

	// streamTime is the largest event time seen (math.MinInt64 before
	// any); emitted is the start through which every window is closed
	// and (EMIT FINAL) emitted. Both as of the open transaction.
	streamTime, emitted int64
	// marked is what the store's mark says (as of the last Flush).
	marked [2]int64
	// gen is the store's abort count this state was read at; a new
	// abort (the transaction's work is dropped) reloads it.
	gen int64
	// expired is the start below which windows were deleted.
	expired int64
	// idleAdvance (ms, 0 for off) advances stream time by the wall clock
	// once no row has come for that long; lastWall is the wall time of
	// the last row or advance.
	idleAdvance int64
	lastWall    int64

	// Reused per row: the windows the row falls into.
	starts, ends []int64
	gkey, mark   []byte
	from, to     []byte
	session      sessionScratch
	// markGroup writes the mark to the changelog like a group.
	markGroup group
	// wall is the wall-clock time (ms) of the last spill of changed
	// windows: their changelog records' and the mark's timestamp when it
	// is later than their event time, so that the changelog's time
	// retention (compact,delete) counts from when they were written and
	// never deletes the mark before a window it covers.
	wall int64
}

// markKey is the window store's key for its progress mark: shorter than
// any window's key (8 bytes of start at least), in the store and in the
// changelog.
var markKey = []byte{0}

func newWindowing(name string, a *physical.Aggregate, store *taskStore) (*windowing, error) {
	w := a.Window
	wg := &windowing{name: name, typ: w.Type, size: w.SizeMs, advance: w.AdvanceMs, grace: w.GraceMs, retention: w.RetentionMs,
		final: a.EmitFinal, store: store, gen: -1, streamTime: math.MinInt64, emitted: math.MinInt64, expired: math.MinInt64}
	if w.Type == types.Session {
		for _, c := range a.Aggs {
			if _, ok := c.NewAccumulator().(expr.Merger); !ok {
				return nil, fmt.Errorf("%s: %s cannot aggregate session windows", name, c.Fn.Name)
			}
		}
	}
	if w.Zone != "" {
		loc, err := time.LoadLocation(w.Zone)
		if err != nil {
			return nil, fmt.Errorf("%s: TIME ZONE: %w", name, err)
		}
		wg.loc = loc
	}
	wg.onClose = a.EmitFinal && a.FinalOnClose && w.Type != types.Session && wg.loc == nil
	return wg, nil
}

// lateCounter counts the rows a query dropped as late and logs a line
// now and then, not per row.
type lateCounter struct {
	q      *Query
	logged time.Time
	since  int64
}

func (l *lateCounter) add(name string, ts, streamTime int64) {
	if l == nil || l.q == nil {
		return
	}
	l.q.late.Add(1)
	l.since++
	if now := time.Now(); now.Sub(l.logged) >= 10*time.Second {
		l.q.log.Warn("dropping records that arrive after their windows closed (stream time past window end + grace)",
			"node", name, "dropped", l.since, "latest event time", ts, "stream time", streamTime)
		l.logged, l.since = now, 0
	}
}

// init schedules the idle advance, when it is on.
func (w *windowing) init(tc *TaskContext) {
	if w.idleAdvance <= 0 {
		return
	}
	w.lastWall = time.Now().UnixMilli()
	every := time.Duration(max(min(w.idleAdvance/2, 1000), 50)) * time.Millisecond
	tc.Schedule(every, WallClockTime, func(now int64) error {
		if w.streamTime == math.MinInt64 || now-w.lastWall < w.idleAdvance {
			return nil
		}
		// Idle: stream time moves with the wall clock from here.
		w.streamTime += now - w.lastWall
		w.lastWall = now
		return nil
	})
}

// sync reloads the progress from the store when the task's store dropped
// the transaction it was computed in (or on first use, after restore).
func (w *windowing) sync(a *aggregateOp) error {
	if w.store == nil || w.gen == w.store.aborts {
		return nil
	}
	w.gen = w.store.aborts
	a.Abort()
	v, err := w.store.ov.Get(markKey)
	if err != nil {
		return err
	}
	w.streamTime, w.emitted = math.MinInt64, math.MinInt64
	if len(v) == 16 {
		w.streamTime = int64(binary.BigEndian.Uint64(v))
		w.emitted = int64(binary.BigEndian.Uint64(v[8:]))
	}
	w.marked = [2]int64{w.streamTime, w.emitted}
	return nil
}

// windowsFor sets w.starts and w.ends to the windows holding ts, oldest
// first: tumbling and hopping windows aligned to the epoch (or to local
// time in w.loc), starting at 0 or later as in Kafka Streams.
func (w *windowing) windowsFor(ts int64) {
	w.starts, w.ends = w.starts[:0], w.ends[:0]
	if w.loc == nil {
		first := max(0, ts-w.size+w.advance) / w.advance * w.advance
		for s := first; s <= ts; s += w.advance {
			w.starts, w.ends = append(w.starts, s), append(w.ends, s+w.size)
		}
		return
	}
	// Align in the zone's wall-clock time, then map wall times back to
	// instants (a wall time in a daylight-saving gap moves forward).
	wall := ts + w.offset(ts)
	first := floorDiv(wall-w.size+w.advance, w.advance) * w.advance
	for s := first; s <= wall; s += w.advance {
		start, end := w.instant(s), w.instant(s+w.size)
		if start <= ts && ts < end && start >= 0 {
			w.starts, w.ends = append(w.starts, start), append(w.ends, end)
		}
	}
}

// offset is the zone's offset from UTC at instant ms, in milliseconds.
func (w *windowing) offset(ms int64) int64 {
	_, off := time.UnixMilli(ms).In(w.loc).Zone()
	return int64(off) * 1000
}

// instant is the instant of the zone's wall-clock time wall (ms since
// the epoch as if the zone were UTC).
func (w *windowing) instant(wall int64) int64 {
	t := time.UnixMilli(wall).UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), w.loc).UnixMilli()
}

// end is the end of the window starting at start.
func (w *windowing) end(start int64) int64 {
	if w.loc == nil {
		return start + w.size
	}
	return w.instant(start + w.offset(start) + w.size)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// update folds the row (group key bytes in a.key, arguments in
// a.argVals) into each of its windows that is still open by stream time.
func (w *windowing) update(a *aggregateOp) error {
	ts := a.ts
	if w.idleAdvance > 0 {
		w.lastWall = time.Now().UnixMilli()
	}
	if w.typ == types.Session {
		return w.updateSession(a)
	}
	if ts > w.streamTime {
		w.streamTime = ts
	}
	w.windowsFor(ts)
	w.gkey = append(w.gkey[:0], a.key...)
	open := false
	for i, start := range w.starts {
		if w.ends[i]+w.grace <= w.streamTime {
			continue // closed: Kafka Streams accepts a row while end > stream time - grace
		}
		open = true
		a.key = appendWindowKey(a.key[:0], start, w.gkey)
		a.ts = ts
		if err := a.fold(false); err != nil {
			return err
		}
	}
	if !open {
		w.late.add(a.name, ts, w.streamTime)
	}
	if w.onClose {
		return w.emitOnClose(a)
	}
	return nil
}

// emitOnClose emits the windows that closed since the last emission, as
// Kafka Streams' window aggregation with EmitStrategy.onWindowClose does
// (KStreamWindowAggregate, KIP-825) after each record: when the close
// time (stream time - grace) has moved past the end of a window not yet
// emitted, it emits, in order of start and key, the stored windows that
// start after the last emission's range and end by the close time.
//
// Unlike Kafka Streams, it emits every one of them, however far stream
// time jumped: Kafka Streams fetches only the windows that start no
// earlier than the latest window start minus the retention, so that with
// the default retention (size + grace) a window whose close stream time
// jumps over by more than a window is never emitted. Here such a window
// is emitted by the record that closes it, in the transaction whose
// commit also expires it (flush: retention ≥ size + grace, so every
// window below the expiry cut has closed and been emitted by then).
func (w *windowing) emitOnClose(a *aggregateOp) error {
	closeTime := w.streamTime - w.grace
	if w.emitted != math.MinInt64 && w.emitted >= closeTime {
		return nil
	}
	hi := closeTime - w.size // the last start of a closed window
	if hi < 0 {
		return nil
	}
	lo := int64(0)
	if w.emitted != math.MinInt64 {
		lo = max(0, w.emitted-w.size) + 1
		if w.span(hi) == w.span(lo-1) {
			return nil // no window closed since the last emission
		}
	}
	if lo <= hi {
		if err := a.spill(); err != nil {
			return err
		}
		w.from = appendWindowKey(w.from[:0], lo, nil)
		w.to = appendWindowKey(w.to[:0], hi+1, nil)
		it, err := w.store.ov.Range(w.from, w.to)
		if err != nil {
			return err
		}
		for it.Next() {
			k, v := it.Key(), it.Value()
			if len(k) < 8 {
				continue
			}
			if len(v) < tsLen {
				it.Close()
				return fmt.Errorf("%s: corrupt stored state for key %x", a.name, k)
			}
			if err := a.emitStored(k, v); err != nil {
				it.Close()
				return err
			}
		}
		err = it.Err()
		it.Close()
		if err != nil {
			return err
		}
	}
	w.emitted = closeTime
	return nil
}

// span is the first and last start of the windows holding ts ≥ 0.
func (w *windowing) span(ts int64) [2]int64 {
	return [2]int64{max(0, ts-w.size+w.advance) / w.advance * w.advance, ts / w.advance * w.advance}
}

// setBounds puts the window of the group in a.key into the row being
// emitted and its change.
func (w *windowing) setBounds(a *aggregateOp) {
	var start, end int64
	if w.typ == types.Session {
		start, end = sessionBounds(a.key)
	} else {
		start = storedStart(a.key)
		end = w.end(start)
	}
	g := len(a.groupBy)
	a.row[g].Null, a.row[g].I = false, start
	a.row[g+1].Null, a.row[g+1].I = false, end
	a.change.Windowed, a.change.WindowStart, a.change.WindowEnd = true, start, end
}

// flush runs at the end of the aggregation's Flush, its changed windows
// in the overlay: under EMIT FINAL it emits the windows that closed, then
// it records the progress mark and drops expired windows.
func (w *windowing) flush(a *aggregateOp) error {
	if w.streamTime == math.MinInt64 {
		return nil
	}
	if w.typ == types.Session {
		if err := w.flushSessions(a); err != nil {
			return err
		}
	} else if w.final && w.onClose {
		if w.idleAdvance > 0 { // stream time may have moved without a row
			if err := w.emitOnClose(a); err != nil {
				return err
			}
		}
	} else if w.final {
		if err := w.emitClosed(a); err != nil {
			return err
		}
	}
	if m := [2]int64{w.streamTime, w.emitted}; m != w.marked {
		w.mark = binary.BigEndian.AppendUint64(w.mark[:0], uint64(m[0]))
		w.mark = binary.BigEndian.AppendUint64(w.mark, uint64(m[1]))
		if err := w.store.ov.Put(markKey, w.mark); err != nil {
			return err
		}
		if a.out != nil {
			w.markGroup.key, w.markGroup.state, w.markGroup.ts = markKey, w.mark, max(w.streamTime, 0, w.wall)
			a.writeChangelog(&w.markGroup)
		}
		w.marked = m
	}
	// Windows that started before stream time - retention are gone: one
	// range delete when the store commits, every quarter retention.
	if cut := w.streamTime - w.retention; cut > w.expired+max(w.retention/4, 1000) && w.typ != types.Session {
		w.store.expireBelow = appendWindowKey(w.store.expireBelow[:0], cut, nil)
		if a.dv != nil && a.dv.store != nil {
			// The windows' distinct values go with them (their keys
			// start with the window's: aggregate_distinct.go).
			a.dv.store.expireBelow = append(a.dv.store.expireBelow[:0], w.store.expireBelow...)
		}
		w.expired = cut
	}
	return nil
}

// emitClosed emits, in order of their start, the windows that stream
// time has closed (end + grace ≤ stream time) since the last emission.
func (w *windowing) emitClosed(a *aggregateOp) error {
	from := appendWindowKey(nil, w.emitted+1, nil)
	if w.emitted == math.MinInt64 {
		from = appendWindowKey(nil, math.MinInt64, nil)
	}
	it, err := w.store.ov.Range(from, nil)
	if err != nil {
		return err
	}
	defer it.Close()
	for it.Next() {
		k, v := it.Key(), it.Value()
		start := storedStart(k)
		if w.end(start)+w.grace > w.streamTime {
			break // this window, and every later one, is still open
		}
		if len(v) < tsLen {
			return fmt.Errorf("%s: corrupt stored state for key %x", a.name, k)
		}
		if err := a.emitStored(k, v); err != nil {
			return err
		}
		w.emitted = start
	}
	if err := it.Err(); err != nil {
		return err
	}
	// Every window starting at or before this is closed, stored or not.
	if w.loc == nil {
		w.emitted = max(w.emitted, w.streamTime-w.grace-w.size)
	}
	return nil
}

// appendWindowKey appends a window store key: the start with its sign
// bit flipped (so that negative starts sort first), then the group key.
func appendWindowKey(dst []byte, start int64, gkey []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(start)^(1<<63))
	return append(dst, gkey...)
}

// storedStart reads a window store key's start.
func storedStart(key []byte) int64 {
	return int64(binary.BigEndian.Uint64(key) ^ (1 << 63))
}

// changelogKey appends the changelog key of stored key k: Kafka Streams'
// windowed key (group key bytes, then the start), or the mark as it is.
func (w *windowing) changelogKey(dst, k []byte) []byte {
	if len(k) < 8 {
		return append(dst, k...)
	}
	if w.typ == types.Session {
		start, end := sessionBounds(k)
		dst = append(dst, k[1:len(k)-16]...)
		return types.Session.AppendWindowKey(dst, start, end)
	}
	dst = append(dst, k[8:]...)
	return binary.BigEndian.AppendUint64(dst, uint64(storedStart(k)))
}

// restoreWindow applies a window store's changelog record to the store,
// turning its windowed key back into the store's time-ordered key.
func restoreWindow(st kvWriter, r *kgo.Record, buf *[]byte) error {
	k := r.Key
	if len(k) >= 8 {
		start := int64(binary.BigEndian.Uint64(k[len(k)-8:]))
		*buf = appendWindowKey((*buf)[:0], start, k[:len(k)-8])
		k = *buf
	}
	if r.Value == nil {
		return st.Delete(k)
	}
	return st.Put(k, r.Value)
}

// storedGroupKey returns the group key bytes of a stored window's key;
// false for the progress mark and (sessions) index entries.
func (w *windowing) storedGroupKey(key []byte) ([]byte, bool) {
	if w.typ == types.Session {
		if len(key) < 17 || key[0] != sessionPrefix {
			return nil, false
		}
		return key[1 : len(key)-16], true
	}
	if len(key) < 8 {
		return nil, false
	}
	return key[8:], true
}
