package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

// Session windows. A session of a key is the span [start, end] of its
// rows (both inclusive) in which no two consecutive rows are more than
// the gap apart. A row within the gap of one or more sessions of its key
// joins them into one: their states merge (expr.Merger), the merged-away
// sessions are deleted (a tombstone under their windowed key, as Kafka
// Streams emits), and the joined session's row is emitted.
//
// The session store holds, besides the progress mark:
//
//	's' [group key][end][start]  → the session's state (key-first: the
//	                                sessions of a key, by end)
//	't' [end][group key][start]  → nothing: the sessions by end, for
//	                                EMIT FINAL and retention
//
// (end and start 8 bytes each, sign bit flipped). Its changelog keys are
// Kafka Streams' session keys: group key bytes, then the end and the
// start as big-endian int64s; a restore writes both entries.
const (
	sessionPrefix = 's'
	sessionIndex  = 't'
)

// appendSessionKey appends a session's store key.
func appendSessionKey(dst []byte, gkey []byte, start, end int64) []byte {
	dst = append(dst, sessionPrefix)
	dst = append(dst, gkey...)
	dst = binary.BigEndian.AppendUint64(dst, uint64(end)^(1<<63))
	return binary.BigEndian.AppendUint64(dst, uint64(start)^(1<<63))
}

// appendSessionIndex appends a session's index key.
func appendSessionIndex(dst []byte, gkey []byte, start, end int64) []byte {
	dst = append(dst, sessionIndex)
	dst = binary.BigEndian.AppendUint64(dst, uint64(end)^(1<<63))
	dst = append(dst, gkey...)
	return binary.BigEndian.AppendUint64(dst, uint64(start)^(1<<63))
}

// sessionBounds reads a session store key's start and end.
func sessionBounds(k []byte) (start, end int64) {
	n := len(k)
	end = int64(binary.BigEndian.Uint64(k[n-16:]) ^ (1 << 63))
	start = int64(binary.BigEndian.Uint64(k[n-8:]) ^ (1 << 63))
	return start, end
}

// sessionScratch is what updateSession reuses per row.
type sessionScratch struct {
	from, to []byte
	keys     [][]byte // the merged sessions' store keys
	states   [][]byte // and states
	merged   []byte
	parts    [][]byte
	idx      []byte
}

// updateSession folds the row (group key bytes in a.key) into its
// session, merging the sessions it bridges.
func (w *windowing) updateSession(a *aggregateOp) error {
	ts, gap := a.ts, w.size
	if ts > w.streamTime {
		w.streamTime = ts
	}
	sc := &w.session
	w.gkey = append(w.gkey[:0], a.key...)
	// The key's sessions that end at or after ts - gap and start at or
	// before ts + gap, by end (so by start too: a key's sessions do not
	// overlap).
	sc.from = append(append(sc.from[:0], sessionPrefix), w.gkey...)
	sc.to = append(sc.to[:0], sc.from...)
	// A session that ended RETENTION or more before stream time has
	// expired: it joins nothing (Kafka Streams' session store hides it
	// as exactly, whether or not its segment is gone yet).
	sc.from = binary.BigEndian.AppendUint64(sc.from, uint64(max(sat(ts, -gap), sat(sat(w.streamTime, -w.retention), 1)))^(1<<63))
	sc.to = append(sc.to, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	it, err := w.store.ov.Range(sc.from, sc.to)
	if err != nil {
		return fatal(err)
	}
	n := 0
	start, end := ts, ts
	want := 1 + len(w.gkey) + 16
	for it.Next() {
		k := it.Key()
		if len(k) != want || !bytes.Equal(k[1:1+len(w.gkey)], w.gkey) {
			continue // a longer key that starts with this one
		}
		s, e := sessionBounds(k)
		if s > sat(ts, gap) {
			break
		}
		if n == len(sc.keys) {
			sc.keys, sc.states = append(sc.keys, nil), append(sc.states, nil)
		}
		sc.keys[n] = append(sc.keys[n][:0], k...)
		sc.states[n] = append(sc.states[n][:0], it.Value()...)
		n++
		start, end = min(start, s), max(end, e)
	}
	if err := it.Close(); err != nil {
		return fatal(err)
	}
	// Kafka Streams: late when the joined session ends before stream time
	// less grace and gap.
	if end < sat(sat(w.streamTime, -w.grace), -gap) {
		w.late.add(a.name, ts, w.streamTime)
		return nil
	}
	// The merged sessions' states, combined.
	merged := sc.merged[:0]
	mergedTs := int64(math.MinInt64)
	if cap(sc.parts) < len(a.accs) {
		sc.parts = make([][]byte, len(a.accs))
	}
	parts := sc.parts[:len(a.accs)]
	for i := range parts {
		parts[i] = parts[i][:0]
	}
	for i := 0; i < n; i++ {
		st := sc.states[i]
		if len(st) < tsLen {
			return fmt.Errorf("%s: corrupt stored state for key %x", a.name, sc.keys[i])
		}
		mergedTs = max(mergedTs, int64(binary.BigEndian.Uint64(st)))
		if err := splitState(st[tsLen:], a.parts); err != nil {
			return err
		}
		for j, acc := range a.accs {
			a.part = acc.(expr.Merger).Merge(a.part[:0], parts[j], a.parts[j])
			parts[j] = append(parts[j][:0], a.part...)
		}
	}
	// The merged-away sessions go: store, index, changelog (at Flush) and
	// a tombstone downstream under their windowed key.
	newKey := appendSessionKey(nil, w.gkey, start, end)
	for i := 0; i < n; i++ {
		k := sc.keys[i]
		if bytes.Equal(k, newKey) {
			continue
		}
		a.key = append(a.key[:0], k...)
		gr := a.changedGroup(a.groups[string(a.key)])
		gr.deleted, gr.state = true, gr.state[:0]
		if err := w.dropSession(k); err != nil {
			return fatal(err)
		}
		if !w.final {
			// The row's key columns are the group's (a.row[:g]).
			_, a.ts = sessionBounds(k)
			w.setBounds(a)
			if err := a.emitDeletion(); err != nil {
				return err
			}
		}
	}
	// The joined session starts from the merged state, then takes the row.
	a.key = append(a.key[:0], newKey...)
	if n > 0 {
		merged = binary.BigEndian.AppendUint64(merged, uint64(mergedTs))
		for _, p := range parts {
			merged = binary.AppendUvarint(merged, uint64(len(p)))
			merged = append(merged, p...)
		}
		gr := a.changedGroup(a.groups[string(a.key)])
		gr.deleted, gr.state = false, append(gr.state[:0], merged...)
	} else {
		// A new session: forget any state a deleted one left under the
		// same key in this transaction.
		if gr := a.groups[string(a.key)]; gr != nil {
			gr.deleted, gr.state = true, gr.state[:0]
		}
	}
	sc.merged = merged
	a.ts = ts
	if err := a.fold(false); err != nil {
		return err
	}
	// Write the session through to the store now, so that the next row's
	// scan sees it (fold keeps it in the transaction's groups too).
	gr := a.groups[string(a.key)]
	if err := w.store.ov.Put(a.key, gr.state); err != nil {
		return fatal(err)
	}
	sc.idx = appendSessionIndex(sc.idx[:0], w.gkey, start, end)
	return fatal(w.store.ov.Put(sc.idx, nil))
}

// dropSession deletes a session's store and index entries.
func (w *windowing) dropSession(k []byte) error {
	if err := w.store.ov.Delete(k); err != nil {
		return err
	}
	s, e := sessionBounds(k)
	w.session.idx = appendSessionIndex(w.session.idx[:0], k[1:len(k)-16], s, e)
	return w.store.ov.Delete(w.session.idx)
}

// sat adds d to t, saturating at the int64 bounds.
func sat(t, d int64) int64 {
	switch {
	case d > 0 && t > math.MaxInt64-d:
		return math.MaxInt64
	case d < 0 && t < math.MinInt64-d:
		return math.MinInt64
	}
	return t + d
}

// flushSessions emits (EMIT FINAL) the sessions that closed since the
// last flush, by end, and drops expired sessions.
//
// A session is final once it has expired: it ended more than RETENTION
// (at least gap + grace) before stream time, so no row can join it any
// more (see updateSession). With the default retention that is when
// stream time passes its end + gap + grace, as in Kafka Streams.
func (w *windowing) flushSessions(a *aggregateOp) error {
	cut := sat(w.streamTime, -w.retention) // a session ending before cut is final
	if w.final && cut-1 > w.emitted {
		keys, err := w.sessionsEnding(sat(w.emitted, 1), cut)
		if err != nil {
			return err
		}
		for _, k := range keys {
			v, err := w.store.ov.Get(k)
			if err != nil {
				return err
			}
			if v == nil {
				return fmt.Errorf("%s: session %x has no state", a.name, k)
			}
			if err := a.emitStored(k, v); err != nil {
				return err
			}
		}
		w.emitted = cut - 1
	}
	// Retention: sessions that ended before stream time - retention,
	// every quarter retention (emitted above first, under EMIT FINAL).
	if exp := cut; exp > w.expired+max(w.retention/4, 1000) {
		keys, err := w.sessionsEnding(math.MinInt64, exp)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := w.dropSession(k); err != nil {
				return err
			}
		}
		w.expired = exp
	}
	return nil
}

// sessionsEnding returns the store keys of the sessions that end in
// [from, to), by end, from the index.
func (w *windowing) sessionsEnding(from, to int64) ([][]byte, error) {
	lo := binary.BigEndian.AppendUint64([]byte{sessionIndex}, uint64(from)^(1<<63))
	hi := binary.BigEndian.AppendUint64([]byte{sessionIndex}, uint64(to)^(1<<63))
	it, err := w.store.ov.Range(lo, hi)
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for it.Next() {
		k := it.Key()
		e := int64(binary.BigEndian.Uint64(k[1:9]) ^ (1 << 63))
		s := int64(binary.BigEndian.Uint64(k[len(k)-8:]) ^ (1 << 63))
		keys = append(keys, appendSessionKey(nil, k[9:len(k)-8], s, e))
	}
	return keys, it.Close()
}

// restoreSession applies a session store's changelog record: the session
// and its index entry (the mark as it is).
func restoreSession(st kvWriter, r *kgo.Record, buf *[]byte) error {
	k := r.Key
	if len(k) < 16 {
		if r.Value == nil {
			return st.Delete(k)
		}
		return st.Put(k, r.Value)
	}
	gkey, start, end, err := types.Session.SplitWindowKey(k, 0)
	if err != nil {
		return err
	}
	*buf = appendSessionKey((*buf)[:0], gkey, start, end)
	n := len(*buf)
	*buf = appendSessionIndex(*buf, gkey, start, end)
	key, idx := (*buf)[:n], (*buf)[n:]
	if r.Value == nil {
		if err := st.Delete(key); err != nil {
			return err
		}
		return st.Delete(idx)
	}
	if err := st.Put(key, r.Value); err != nil {
		return err
	}
	return st.Put(idx, nil)
}
