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
	keys     [][]byte      // the merged sessions' store keys
	states   [][]byte      // and states
	spans    []sessionSpan // and bounds
	all      []sessionSpan // the sessions a scan found, for the cache
	merged   []byte
	parts    [][]byte
	idx      []byte
	newKey   []byte
	// open caches, per group key, the key's recent sessions, so that a
	// row of a busy key finds its session without a store scan.
	open openSessions
	// gen is the windowing's gen the cache is of; scans counts the rows
	// that scanned the store.
	gen, scans int64
	// swept is the cut below which retention dropped every session, in
	// the store as of windowing.gen sweptGen-1 (a dropped transaction may
	// bring expired sessions back; 0: none yet).
	swept, sweptGen int64
	// noCache runs the operator as it ran before the cache and
	// PutNew: every row scans the store, every write is a Put (tests
	// compare against it).
	noCache bool
}

// sessionSpan is a session's bounds.
type sessionSpan struct{ start, end int64 }

// openSessions caches, per group key, every session of the key that ends
// at or after a bound, as the store (through the overlay, uncommitted
// writes included) holds them. A session store's scan is slow exactly
// for busy keys: each extension of a session deletes its key and writes
// one with the new end, and RocksDB's seek from ts - gap walks over the
// tombstones of the versions written in the last gap until compaction
// drops them. The cache answers the busy keys' rows instead.
//
// It is exact: updateSession, which writes every session change to the
// store as it makes it (the aggregation's Flush writes the same again),
// keeps it up to date; retention's deletes forget the key; and it is
// emptied whenever the store drops a transaction (windowing.sync moves
// windowing.gen). It is built empty with its operator, after any restore
// of the store. The store's formats are unchanged: the cache is memory
// only.
type openSessions struct {
	m map[string]*sessionList
	// free holds dropped lists for reuse.
	free []*sessionList
}

// sessionList is a key's sessions that end at or after from, by end (so
// by start: a key's live sessions do not overlap).
type sessionList struct {
	from  int64
	spans []sessionSpan
}

const (
	// sessionCacheKeys bounds how many keys openSessions holds (about
	// a hundred bytes each: 4 MB at most per task); a full cache drops
	// one at random per new key.
	sessionCacheKeys = 1 << 15
	// sessionCacheSpans bounds the sessions it holds per key: beyond,
	// the oldest go (rows that old scan the store again).
	sessionCacheSpans = 4
)

// get returns the sessions of gkey that end at or after lo when the
// cache holds all of them, by end; false when it does not.
func (c *openSessions) get(gkey []byte, lo int64) ([]sessionSpan, bool) {
	l := c.m[string(gkey)]
	if l == nil || l.from > lo {
		return nil, false
	}
	i := 0
	for i < len(l.spans) && l.spans[i].end < lo {
		i++
	}
	return l.spans[i:], true
}

// set records spans, by end, as the sessions of gkey that end at or
// after from.
func (c *openSessions) set(gkey []byte, from int64, spans []sessionSpan) {
	l := c.m[string(gkey)]
	if l == nil {
		if c.m == nil {
			c.m = map[string]*sessionList{}
		}
		if len(c.m) >= sessionCacheKeys {
			for k, old := range c.m {
				delete(c.m, k)
				c.free = append(c.free, old)
				break
			}
		}
		if n := len(c.free); n > 0 {
			l, c.free = c.free[n-1], c.free[:n-1]
		} else {
			l = &sessionList{}
		}
		c.m[string(gkey)] = l
	}
	l.from, l.spans = from, append(l.spans[:0], spans...)
}

// merge records that the n sessions of gkey from the first that ends at
// or after lo (as get returned them) became s, and forgets the sessions
// that ended before keep.
func (c *openSessions) merge(gkey []byte, lo int64, n int, s sessionSpan, keep int64) {
	l := c.m[string(gkey)]
	if l == nil {
		return
	}
	i := 0
	for i < len(l.spans) && l.spans[i].end < lo {
		i++
	}
	if l.from > lo || i+n > len(l.spans) || s.end < lo || (i > 0 && l.spans[i-1].end >= s.end) ||
		(i+n < len(l.spans) && l.spans[i+n].end <= s.end) {
		c.forget(gkey) // not as get left it: scan again
		return
	}
	if n == 0 {
		l.spans = append(l.spans, sessionSpan{})
		copy(l.spans[i+1:], l.spans[i:])
	} else if n > 1 {
		l.spans = append(l.spans[:i+1], l.spans[i+n:]...)
	}
	l.spans[i] = s
	// Drop the sessions that ended before keep, and the oldest beyond
	// sessionCacheSpans: from moves past them.
	// (s, which ends at or after lo ≥ keep, stays.)
	j := 0
	for j < len(l.spans) && (l.spans[j].end < keep || len(l.spans)-j > sessionCacheSpans) {
		l.from = max(l.from, sat(l.spans[j].end, 1))
		j++
	}
	l.from = max(l.from, keep)
	if j > 0 {
		l.spans = append(l.spans[:0], l.spans[j:]...)
	}
}

// forget drops gkey's sessions from the cache.
func (c *openSessions) forget(gkey []byte) {
	if l := c.m[string(gkey)]; l != nil {
		delete(c.m, string(gkey))
		c.free = append(c.free, l)
	}
}

// reset empties the cache.
func (c *openSessions) reset() {
	for k, l := range c.m {
		delete(c.m, k)
		c.free = append(c.free, l)
	}
}

// updateSession folds the row (group key bytes in a.key) into its
// session, merging the sessions it bridges.
func (w *windowing) updateSession(a *aggregateOp) error {
	ts, gap := a.ts, w.size
	if ts > w.streamTime {
		w.streamTime = ts
	}
	sc := &w.session
	if sc.gen != w.gen {
		// The store dropped a transaction (or this is the first row):
		// the cache may hold its writes.
		sc.open.reset()
		sc.gen = w.gen
	}
	w.gkey = append(w.gkey[:0], a.key...)
	// The key's sessions that end at or after ts - gap and start at or
	// before ts + gap. A session that ended RETENTION or more before
	// stream time has expired: it joins nothing (Kafka Streams' session
	// store hides it as exactly, whether or not its segment is gone
	// yet).
	lo := max(sat(ts, -gap), sat(sat(w.streamTime, -w.retention), 1))
	n, err := w.findSessions(a.name, lo, sat(ts, gap))
	if err != nil {
		return err
	}
	start, end := ts, ts
	for _, sp := range sc.spans[:n] {
		start, end = min(start, sp.start), max(end, sp.end)
	}
	// Kafka Streams: late when the joined session ends before stream time
	// less grace and gap.
	if end < sat(sat(w.streamTime, -w.grace), -gap) {
		w.late.add(a.name, ts, w.streamTime)
		return nil
	}
	// The joined session's key is in the range just read (it ends at or
	// after lo), so unless it is one of the sessions found, the store
	// lacks it: it may be written as new (state.Overlay.PutNew).
	if err := w.joinSessions(a, n, start, end, end >= lo); err != nil {
		// The store may hold part of the row's writes: scan it again.
		sc.open.forget(w.gkey)
		return err
	}
	if !sc.noCache {
		// Sessions that ended a gap before the row's are kept for rows
		// a little out of order.
		sc.open.merge(w.gkey, lo, n, sessionSpan{start, end}, sat(lo, -gap))
	}
	return nil
}

// findSessions sets sc.keys, sc.states and sc.spans[:n] to the sessions
// of the group key w.gkey that end at or after lo and start at or before
// hi, by end (so by start: a key's live sessions do not overlap), from
// the cache when it holds them, else from the store.
func (w *windowing) findSessions(name string, lo, hi int64) (int, error) {
	sc := &w.session
	if !sc.noCache {
		if spans, ok := sc.open.get(w.gkey, lo); ok {
			n := 0
			for _, sp := range spans {
				if sp.start > hi {
					break
				}
				w.grow(n)
				sc.keys[n] = appendSessionKey(sc.keys[n][:0], w.gkey, sp.start, sp.end)
				v, err := w.store.ov.Get(sc.keys[n])
				if err != nil {
					return 0, fatal(err)
				}
				if v == nil {
					// Not as the cache says (a bug): the store is the
					// truth.
					sc.open.forget(w.gkey)
					return w.scanSessions(name, lo, hi)
				}
				sc.states[n] = append(sc.states[n][:0], v...)
				sc.spans[n] = sp
				n++
			}
			return n, nil
		}
	}
	return w.scanSessions(name, lo, hi)
}

// grow makes room for the n+1st found session.
func (w *windowing) grow(n int) {
	sc := &w.session
	if n == len(sc.keys) {
		sc.keys, sc.states, sc.spans = append(sc.keys, nil), append(sc.states, nil), append(sc.spans, sessionSpan{})
	}
}

// scanSessions is findSessions from the store; it caches what it found.
func (w *windowing) scanSessions(name string, lo, hi int64) (int, error) {
	sc := &w.session
	sc.scans++
	sc.from = append(append(sc.from[:0], sessionPrefix), w.gkey...)
	sc.to = append(sc.to[:0], sc.from...)
	sc.from = binary.BigEndian.AppendUint64(sc.from, uint64(lo)^(1<<63))
	sc.to = append(sc.to, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	it, err := w.store.ov.Range(sc.from, sc.to)
	if err != nil {
		return 0, fatal(err)
	}
	n := 0
	sc.all = sc.all[:0]
	want := 1 + len(w.gkey) + 16
	for it.Next() {
		k := it.Key()
		if len(k) != want || !bytes.Equal(k[1:1+len(w.gkey)], w.gkey) {
			continue // a longer key that starts with this one
		}
		s, e := sessionBounds(k)
		sc.all = append(sc.all, sessionSpan{s, e})
		if s > hi {
			if sc.noCache {
				break
			}
			continue // for the cache: the key's later sessions too
		}
		w.grow(n)
		sc.keys[n] = append(sc.keys[n][:0], k...)
		sc.states[n] = append(sc.states[n][:0], it.Value()...)
		sc.spans[n] = sessionSpan{s, e}
		n++
	}
	if err := it.Close(); err != nil {
		return 0, fatal(err)
	}
	if !sc.noCache {
		sc.open.set(w.gkey, lo, sc.all)
	}
	return n, nil
}

// joinSessions merges the n sessions found into the session [start,
// end], deleting the merged-away ones, and folds the row into it. read
// says the key of [start, end] is in the range the sessions were found
// in.
func (w *windowing) joinSessions(a *aggregateOp, n int, start, end int64, read bool) error {
	sc := &w.session
	ts := a.ts
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
			if a.dv != nil && a.dv.accs[j] != nil {
				// Values kept apart: the first session's part, which
				// mergeSessions adds the others' new values to.
				if i == 0 {
					parts[j] = append(parts[j][:0], a.parts[j]...)
				}
				continue
			}
			a.part = acc.(expr.Merger).Merge(a.part[:0], parts[j], a.parts[j])
			parts[j] = append(parts[j][:0], a.part...)
		}
	}
	if n > 0 && a.dv != nil {
		if err := a.dv.mergeSessions(a.out, w.gkey, sc.spans[:n], start, parts, ts); err != nil {
			return err
		}
	}
	// The merged-away sessions go: store, index, changelog (at Flush) and
	// a tombstone downstream under their windowed key.
	sc.newKey = appendSessionKey(sc.newKey[:0], w.gkey, start, end)
	newKey := sc.newKey
	isNew := read
	for i := 0; i < n; i++ {
		k := sc.keys[i]
		if bytes.Equal(k, newKey) {
			isNew = false
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
	prior := a.groups[string(a.key)] // this transaction's group of the key, if any
	if n > 0 {
		merged = binary.BigEndian.AppendUint64(merged, uint64(mergedTs))
		for _, p := range parts {
			merged = binary.AppendUvarint(merged, uint64(len(p)))
			merged = append(merged, p...)
		}
		gr := a.changedGroup(prior)
		gr.deleted, gr.state = false, append(gr.state[:0], merged...)
	} else if prior != nil {
		// A new session: forget any state a deleted one left under the
		// same key in this transaction.
		prior.deleted, prior.state = true, prior.state[:0]
	}
	sc.merged = merged
	a.ts = ts
	if err := a.fold(false); err != nil {
		return err
	}
	// Write the session through to the store now, so that the next row's
	// scan sees it (fold keeps it in the transaction's groups too). A new
	// key, deleted again in this transaction when a later row extends
	// the session, then never reaches RocksDB: neither it nor a
	// tombstone for it (one per bid of a busy key otherwise).
	gr := a.groups[string(a.key)]
	// A new key whose group this transaction had not touched: neither the
	// store nor the changelog has it, so if a later row of the
	// transaction replaces it, its deletion writes no tombstone.
	gr.fresh = gr.fresh || isNew && prior == nil
	put := w.store.ov.Put
	if isNew && !sc.noCache {
		put = w.store.ov.PutNew
	}
	if err := put(a.key, gr.state); err != nil {
		return fatal(err)
	}
	sc.idx = appendSessionIndex(sc.idx[:0], w.gkey, start, end)
	return fatal(put(sc.idx, nil))
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
		// From the last cut when no transaction was dropped since: the
		// sessions that ended before it went then, and no later row
		// made one (a session ending before stream time - grace - gap
		// is late, and RETENTION is at least gap + grace). The index's
		// range below the cut holds the tombstones of every version of
		// every session since compaction last dropped them: seeking
		// over them all at each expiry is what this saves.
		from := int64(math.MinInt64)
		if sc := &w.session; sc.sweptGen == w.gen+1 && w.retention >= sat(w.size, w.grace) && !sc.noCache {
			from = sc.swept
		}
		keys, err := w.sessionsEnding(from, exp)
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := w.dropSession(k); err != nil {
				return err
			}
			w.session.open.forget(k[1 : len(k)-16])
			if a.dv != nil {
				// Its distinct values go with it.
				start, _ := sessionBounds(k)
				if err := a.dv.dropSession(a.out, k[1:len(k)-16], start, w.streamTime); err != nil {
					return err
				}
			}
		}
		w.expired = exp
		w.session.swept, w.session.sweptGen = exp, w.gen+1
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
