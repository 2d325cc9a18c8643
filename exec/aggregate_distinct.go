package exec

import (
	"encoding/binary"
	"fmt"
	"time"
	"unsafe"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// An aggregation's distinct values (physical.Aggregate.DistinctStore):
// exact COUNT(DISTINCT x) and SUM(DISTINCT x) keep one entry per group
// and value, with the number of the group's rows holding the value for
// each aggregate of x (each FILTER), as Flink's distinct views and
// RisingWave's dedup tables do. A value whose count goes from 0 to 1 is
// added to the aggregate's small state in the group (expr.DistinctValues:
// a count, a sum); one whose count drops to 0 (a table's row taken out)
// is taken out of it. A row thus reads and writes a few short entries,
// not every value its group has seen.
//
// Like the groups, the entries a transaction reads or changes are kept
// in memory until Flush writes the changed ones to the store's overlay
// and changelog, once each.
//
// Of a windowed aggregation (time windows) an entry is per group,
// window and value, and the store is a window store: its key starts
// with the window's start as the window store's keys do,
//
//	[8-byte window start, sign bit flipped][uvarint len(group key)][group key][uvarint share][value]
//
// so that the window's retention drops a window's entries with the same
// range delete as the window (windowing.flush), and its changelog key
// ends with the start instead (Kafka Streams' windowed key, which
// restoreWindow turns back), in a changelog deleted by time as the
// window store's is. A row in several hopping windows is a value in
// each.
//
// Of session windows an entry is per group, session and value, keyed
// the same way by the session's start (its identity while it lives:
// the session store's key also holds its end, which moves with every
// extension), so that one prefix scan, [start][len][group key], finds
// a session's entries. When a row bridges sessions (or moves a
// session's start earlier), the joined session's entries become the
// union of the merged sessions' with their counts added, under its
// start (mergeSessions): the entries of the session that starts there
// stay, the others move, and each value the first session lacked is
// added to the joined state. A session's expiry deletes its entries
// (dropSession). The store is then a window store without retention:
// a long session's first entries are never written again, so its
// changelog is compacted only, and every entry leaves it through a
// tombstone (merged away, expired).

// dvAction is what a fold does to a distinct aggregate's group state.
type dvAction uint8

const (
	dvKeep dvAction = iota // the value was there (or is still): no change
	dvAdd                  // the value's first row
	dvUndo                 // the value's last row left
)

// distinctValues is an aggregateOp's distinct-value store.
type distinctValues struct {
	store     *taskStore
	changelog string
	fromTable bool
	// windowed: entries per window (keys start with the window's);
	// session: per session (the key's start is the session's).
	windowed, session bool
	// accs are the aggregates' DistinctValues accumulators, nil for the
	// aggregates kept whole in the group's state; action is what the
	// current fold does to each. shares are the aggregates that share an
	// entry (physical.Aggregate.DistinctAggs).
	accs   []expr.DistinctValues
	action []dvAction
	shares [][]int
	// entries are the entries read or changed in this transaction, by
	// stored key; all[:used] hold them (reused across transactions).
	entries map[string]*dvEntry
	all     []*dvEntry
	used    int
	// pending are the current fold's new counts, applied when the fold
	// succeeds.
	pending []dvChange
	key     []byte
	val     []byte
	// Reused by mergeSessions and dropSession.
	from, to, part []byte
	moved          []byte
	movedAt        []int
}

// dvEntry is one (group, value)'s counts, one per aggregate of its
// share, as this transaction sees them; dirty when the transaction
// changed them.
type dvEntry struct {
	key    []byte
	counts []uint64
	dirty  bool
	ts     int64
}

// dvChange is a new count of an entry's m-th aggregate.
type dvChange struct {
	e     *dvEntry
	m     int
	count uint64
}

func newDistinctValues(name string, a *physical.Aggregate, accs []expr.Accumulator, argTypes [][]types.Type, store *taskStore) (*distinctValues, error) {
	if a.Window != nil && a.DistinctStore.Kind != physical.WindowStore {
		return nil, fmt.Errorf("%s: the distinct values of a windowed aggregation in a %s store", name, a.DistinctStore.Kind)
	}
	dv := &distinctValues{store: store, changelog: a.DistinctStore.Changelog, fromTable: a.FromTable, windowed: a.Window != nil,
		session: a.Window != nil && a.Window.Type == types.Session, shares: a.DistinctAggs,
		accs: make([]expr.DistinctValues, len(accs)), action: make([]dvAction, len(accs)), entries: map[string]*dvEntry{}}
	for _, share := range a.DistinctAggs {
		if len(share) == 0 {
			return nil, fmt.Errorf("%s: an empty list of distinct aggregates", name)
		}
		for _, j := range share {
			if j < 0 || j >= len(accs) || dv.accs[j] != nil {
				return nil, fmt.Errorf("%s: distinct values of aggregate %d, which it does not have or lists twice", name, j)
			}
			acc, ok := expr.NewDistinctValues(a.Aggs[j].Fn, argTypes[j])
			if !ok {
				return nil, fmt.Errorf("%s: %s cannot keep its distinct values apart", name, a.Aggs[j])
			}
			dv.accs[j] = acc
			accs[j] = acc
		}
	}
	return dv, nil
}

// prepare decides, for the row whose aggregate arguments are in args
// folded into (undo: taken out of) the group of key, what each distinct
// aggregate does, and notes the new counts (apply writes them). The
// aggregates of a share count one value: each one's argument is that
// value or NULL (its FILTER failed). A windowed aggregation's key is
// the window store's (the window's start, then the group key), a
// session window's the session store's.
func (dv *distinctValues) prepare(key []byte, args [][]types.Datum, undo bool, ts int64) error {
	dv.pending = dv.pending[:0]
	for s, share := range dv.shares {
		found := false
		for _, j := range share {
			dv.action[j] = dvKeep
			if !found {
				dv.val, found = dv.accs[j].Value(dv.val[:0], args[j])
			}
		}
		if !found {
			continue // NULL for all: not a value
		}
		dv.key = dv.key[:0]
		gkey := key
		if dv.session {
			if len(key) < 17 || key[0] != sessionPrefix {
				return fmt.Errorf("session key %x without bounds", key)
			}
			start, _ := sessionBounds(key)
			dv.key, gkey = appendWindowKey(dv.key, start, nil), key[1:len(key)-16]
		} else if dv.windowed {
			if len(key) < 8 {
				return fmt.Errorf("window key %x without a start", key)
			}
			dv.key, gkey = append(dv.key, key[:8]...), key[8:]
		}
		dv.key = binary.AppendUvarint(dv.key, uint64(len(gkey)))
		dv.key = append(dv.key, gkey...)
		dv.key = binary.AppendUvarint(dv.key, uint64(s))
		dv.key = append(dv.key, dv.val...)
		e, err := dv.entry(dv.key, len(share), ts)
		if err != nil {
			return err
		}
		for m, j := range share {
			if args[j][0].Null {
				continue // its FILTER failed
			}
			n := e.counts[m]
			switch {
			case undo && n == 0:
				// Not there (a row whose addition was not counted).
			case undo:
				dv.pending = append(dv.pending, dvChange{e, m, n - 1})
				if n == 1 {
					dv.action[j] = dvUndo
				}
			case n == 0:
				dv.pending = append(dv.pending, dvChange{e, m, 1})
				dv.action[j] = dvAdd
			case dv.fromTable:
				dv.pending = append(dv.pending, dvChange{e, m, n + 1})
			}
			// A stream's value seen before needs no write: nothing
			// takes it back out.
		}
	}
	return nil
}

// apply makes the prepared fold's counts this transaction's.
func (dv *distinctValues) apply(ts int64) {
	for _, c := range dv.pending {
		c.e.counts[c.m], c.e.dirty, c.e.ts = c.count, true, ts
	}
	dv.pending = dv.pending[:0]
}

// entry returns the entry of key, with n counts, read from the store
// when this transaction has not seen it yet.
func (dv *distinctValues) entry(key []byte, n int, ts int64) (*dvEntry, error) {
	if e := dv.entries[string(key)]; e != nil {
		return e, nil
	}
	e := dv.slot()
	if dv.store != nil {
		v, err := dv.store.ov.Get(key)
		if err != nil {
			return nil, err
		}
		if err := e.read(v, key, n); err != nil {
			return nil, err
		}
	}
	for len(e.counts) < n {
		e.counts = append(e.counts, 0)
	}
	dv.keep(e, key, ts)
	return e, nil
}

// slot returns an unused entry, without counts.
func (dv *distinctValues) slot() *dvEntry {
	if dv.used == len(dv.all) {
		dv.all = append(dv.all, &dvEntry{})
	}
	e := dv.all[dv.used]
	e.counts = e.counts[:0]
	return e
}

// keep makes e, from slot, the transaction's entry of key.
func (dv *distinctValues) keep(e *dvEntry, key []byte, ts int64) {
	dv.used++
	e.key = append(e.key[:0], key...)
	e.dirty, e.ts = false, ts
	dv.entries[unsafe.String(unsafe.SliceData(e.key), len(e.key))] = e
}

// read sets e's counts from v, the stored value of key: n of them, or
// none (no entry).
func (e *dvEntry) read(v, key []byte, n int) error {
	for b := v; len(b) > 0; {
		c, w := binary.Uvarint(b)
		if w <= 0 {
			return fmt.Errorf("distinct value counts %x of key %x are corrupt", v, key)
		}
		e.counts = append(e.counts, c)
		b = b[w:]
	}
	if len(e.counts) != 0 && len(e.counts) != n {
		return fmt.Errorf("distinct value counts %x of key %x: %d counts, not %d", v, key, len(e.counts), n)
	}
	return nil
}

// appendSessionEntries appends the prefix of the entries of the session
// of gkey starting at start.
func appendSessionEntries(dst []byte, start int64, gkey []byte) []byte {
	dst = appendWindowKey(dst, start, nil)
	dst = binary.AppendUvarint(dst, uint64(len(gkey)))
	return append(dst, gkey...)
}

// sessionEntries reads the stored entries of the session of gkey that
// starts at start into dv.moved: key, value, key, value…, their ends in
// dv.movedAt. The transaction's entries must be spilled.
func (dv *distinctValues) sessionEntries(gkey []byte, start int64) error {
	dv.moved, dv.movedAt = dv.moved[:0], dv.movedAt[:0]
	dv.from = appendSessionEntries(dv.from[:0], start, gkey)
	dv.to = prefixEnd(append(dv.to[:0], dv.from...))
	it, err := dv.store.ov.Range(dv.from, dv.to)
	if err != nil {
		return err
	}
	for it.Next() {
		dv.moved = append(dv.moved, it.Key()...)
		dv.movedAt = append(dv.movedAt, len(dv.moved))
		dv.moved = append(dv.moved, it.Value()...)
		dv.movedAt = append(dv.movedAt, len(dv.moved))
	}
	return it.Close()
}

// mergeSessions joins the distinct entries of the sessions of gkey in
// spans (by start) into those of the session starting at start (the
// first one's start or earlier): each session not starting there has
// its entries moved, their counts added to the joined session's
// entries of the same values and deleted. parts are the joined state's
// aggregate parts, for the distinct aggregates those of the first
// session: each value a later session brings that the joined session
// lacked is added to them. The joined session's entries stay in the
// transaction (the row is folded into it next); the rest is spilled
// first, so that the store holds every entry to move.
//
// It costs a prefix scan and a write per entry moved: nothing when the
// row falls into one session that keeps its start, the entries of the
// later sessions when it bridges sessions, and all of them when it
// moves a session's start earlier.
func (dv *distinctValues) mergeSessions(out *outbox, gkey []byte, spans []sessionSpan, start int64, parts [][]byte, ts int64) error {
	if dv.store == nil {
		return nil
	}
	spilled := false
	for i, sp := range spans {
		if sp.start == start {
			continue // the joined session's entries: in place
		}
		if !spilled {
			if err := dv.spill(out); err != nil {
				return err
			}
			spilled = true
		}
		if err := dv.sessionEntries(gkey, sp.start); err != nil {
			return err
		}
		prefix := len(appendSessionEntries(dv.key[:0], sp.start, gkey))
		for at := 0; at < len(dv.movedAt); at += 2 {
			from := 0
			if at > 0 {
				from = dv.movedAt[at-1]
			}
			k, v := dv.moved[from:dv.movedAt[at]], dv.moved[dv.movedAt[at]:dv.movedAt[at+1]]
			rest := k[prefix:]
			s, w := binary.Uvarint(rest)
			if w <= 0 || s >= uint64(len(dv.shares)) {
				return fmt.Errorf("distinct value key %x: no aggregates", k)
			}
			share, val := dv.shares[s], rest[w:]
			src := dv.slot()
			if err := src.read(v, k, len(share)); err != nil {
				return err
			}
			dv.keep(src, k, ts)
			dv.key = appendSessionEntries(dv.key[:0], start, gkey)
			dv.key = append(dv.key, rest...)
			dst, err := dv.entry(dv.key, len(share), ts)
			if err != nil {
				return err
			}
			for m, c := range src.counts {
				if c == 0 {
					continue
				}
				if dst.counts[m] == 0 && i > 0 {
					j := share[m]
					dv.part = dv.accs[j].AddValue(dv.part[:0], parts[j], val)
					parts[j] = append(parts[j][:0], dv.part...)
				}
				dst.counts[m] += c
				src.counts[m] = 0
			}
			src.dirty, dst.dirty, dst.ts = true, true, ts
		}
	}
	return nil
}

// dropSession deletes the entries of the session of gkey starting at
// start (expired) from the store and, with tombstones, its changelog.
func (dv *distinctValues) dropSession(out *outbox, gkey []byte, start int64, ts int64) error {
	if dv.store == nil {
		return nil
	}
	if dv.used > 0 {
		if err := dv.spill(out); err != nil {
			return err
		}
	}
	if err := dv.sessionEntries(gkey, start); err != nil {
		return err
	}
	for at := 0; at < len(dv.movedAt); at += 2 {
		from := 0
		if at > 0 {
			from = dv.movedAt[at-1]
		}
		e := dv.slot()
		dv.keep(e, dv.moved[from:dv.movedAt[at]], ts)
		e.dirty = true // no counts: a deletion
	}
	return dv.spill(out)
}

// spill writes the entries this transaction changed to the store's
// overlay and changelog (all counts 0: a deletion), and forgets the
// entries it read.
func (dv *distinctValues) spill(out *outbox) error {
	var wall int64
	if dv.windowed && dv.used > 0 {
		// Stamped with the time they were written when later than
		// their event time, as the window store's changelog records
		// are (windowing.wall): the changelog's time retention counts
		// from then.
		wall = time.Now().UnixMilli()
	}
	for _, e := range dv.all[:dv.used] {
		if !e.dirty {
			continue
		}
		rec := out.record()
		start := len(out.arena)
		if dv.windowed {
			// Kafka Streams' windowed key: the rest, then the start.
			out.arena = append(out.arena, e.key[8:]...)
			out.arena = binary.BigEndian.AppendUint64(out.arena, uint64(storedStart(e.key)))
		} else {
			out.arena = append(out.arena, e.key...)
		}
		keyEnd := len(out.arena)
		live := false
		for _, c := range e.counts {
			live = live || c > 0
		}
		var err error
		if live {
			for _, c := range e.counts {
				out.arena = binary.AppendUvarint(out.arena, c)
			}
			err = dv.store.ov.Put(e.key, out.arena[keyEnd:])
		} else {
			err = dv.store.ov.Delete(e.key)
		}
		if err != nil {
			return err
		}
		buf := out.arena
		rec.Key = buf[start:keyEnd:keyEnd]
		if live {
			rec.Value = buf[keyEnd:len(buf):len(buf)]
		}
		rec.Topic = dv.changelog
		rec.Partition = dv.store.partition
		rec.Timestamp = time.UnixMilli(max(e.ts, wall))
		dv.store.last = rec
		out.produce(rec)
	}
	dv.abort()
	return nil
}

// abort forgets the transaction's entries.
func (dv *distinctValues) abort() {
	clear(dv.entries)
	dv.used = 0
	dv.pending = dv.pending[:0]
}
