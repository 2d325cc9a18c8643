package exec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

var (
	_ Processor = (*topNOp)(nil)
	_ flusher   = (*topNOp)(nil)
	_ aborter   = (*topNOp)(nil)
)

// topNOp keeps, per partition, the partition's rows in order and emits
// the changes of its first N (physical.TopN).
//
// Over a stream, a partition's state, stored under its partition
// columns in JSON, is its first N rows in order, each an entry of three
// uvarint-prefixed parts: the row's sort key (its ORDER BY values, each
// encoded so that the bytes compare as the values do, inverted for DESC:
// see appendSortKey), an empty identity, and the row (all its columns
// in JSON); a row that does not enter costs a read and no write.
//
// Over a table every row is kept, so that a row taken out lets the next
// move in, each row in an entry of its own (so that a change writes one
// or two entries, however many rows the partition holds): its key is
// the partition key (uvarint length, then the bytes), the row's sort
// key, then its identity (the table's key columns, encoded as sort
// keys: rows that tie are in key order); its value the identity
// (uvarint-prefixed) and the row in JSON. The first N are a range scan
// of the partition's prefix; the old row of an update or deletion finds
// its entry from its own values.
//
// In the binary layout (physical.TopN.Binary, plans made since), the
// partition key and the rows are in the encoding of topNRows (a row:
// its kept columns only; none for a deduplication before a sink, whose
// entry is then its sort key), a stream's entry is two parts, the sort
// key and the row, and a table's value the identity and the row. A
// stream's Top-N of more than one row then keeps its hot partitions in
// a cache (topNCache) and writes a changed one once per transaction.
//
// Writes go to the store's overlay as they happen (at Flush from the
// cache); the changelog gets each changed key's latest value once, at
// Flush.
type topNOp struct {
	name      string
	n         int
	rank      bool
	fromTable bool
	part      []int
	order     []expr.Evaluator
	orderT    []types.Type
	desc      []bool
	// laterFirst puts a row that ties with earlier ones before them
	// (the first ORDER BY key is DESC: the last row wins).
	laterFirst bool
	rowKey     []int
	keyEnc     types.Encoder // the partition columns
	// idTypes are the types of a table's key columns (an identity);
	// idJSON, per column, its JSON encoder where its type has no sort
	// key (a STRUCT, an ARRAY, a wide DECIMAL).
	idTypes []types.Type
	idJSON  []types.Encoder
	rowEnc  types.Encoder
	decOld  types.Decoder
	decNew  types.Decoder
	// rows encodes the rows in the binary layout (nil: JSON), keyRows
	// the partition key.
	rows, keyRows *topNRows
	// timed: each stored row starts with its timestamp
	// (physical.TopNBinaryTimedRows), the time of the change that put
	// it in.
	timed bool
	// cache holds hot partitions of a stream (binary rows, N above 1).
	cache     *topNCache
	store     *taskStore
	out       *outbox
	changelog string
	next      Processor
	// skipOld leaves out the old row of a change that has a new one:
	// next does not read it (readsOldWithNew).
	skipOld bool
	// rowCheck, per column of the rows: how a value comes back from its
	// JSON in the stored state (see faithful). fresh is, over a stream,
	// the entry of t.after that holds the row being added (-1: none,
	// or one whose JSON may not give it back as it is), freshRow that
	// row.
	rowCheck []uint8
	fresh    int
	freshRow types.Row

	// Per change: the partition's stored key, its entries before and
	// after (views into cur and into the new row's parts), the new
	// state, and rows for the emitted changes.
	key, cur, state   []byte
	sortKey, id, row  []byte
	before, after     []topNEntry
	oldRow, newRow    types.Row
	change            Change
	ts                int64
	oldKey, oldPrefix []byte
	// A table's Top-N: the partition's key prefix, the range's end, an
	// entry's key, and the copies of the scanned entries.
	prefix, end, ekey, scratch []byte
	arena                      []byte
	spans                      []int
	// A pull query's view (emitStored): the partition of the table's
	// rows being scanned, and the rank of its last row.
	viewPrefix []byte
	viewRank   int
}

// topNEntry is one row of a partition's state.
type topNEntry struct{ sort, id, row []byte }

func newTopN(name string, t *physical.TopN, store *taskStore, out *outbox, next Processor) (*topNOp, error) {
	in := t.Store.Schema
	if t.Binary {
		// The store's schema is the kept columns; the rows are Out's
		// but for the rank.
		if t.Out.Len() == 0 {
			return nil, fmt.Errorf("%s: no columns", name)
		}
		in = types.Schema{Columns: t.Out.Columns[:t.Out.Len()-1]}
	}
	cols := make([]types.Column, len(in.Columns))
	copy(cols, in.Columns)
	all := make([]int, len(cols))
	for i := range cols {
		cols[i].Key, cols[i].Pseudo, cols[i].Header = false, false, false
		all[i] = i
	}
	rows := types.Schema{Columns: cols}
	op := &topNOp{name: name, n: int(t.N), rank: t.Rank, fromTable: t.FromTable, part: t.Partition, desc: t.Desc,
		laterFirst: len(t.Desc) > 0 && t.Desc[0], rowKey: t.RowKey, store: store, out: out, changelog: t.Store.Changelog,
		next: next, skipOld: !readsOldWithNew(next),
		oldRow: make(types.Row, len(t.Out.Columns)), newRow: make(types.Row, len(t.Out.Columns))}
	for _, o := range t.Order {
		ev, err := expr.Compile(o)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		op.order, op.orderT = append(op.order, ev), append(op.orderT, o.Type())
	}
	var err error
	for _, p := range t.Partition {
		if p < 0 || p >= len(cols) {
			return nil, fmt.Errorf("%s: partition column %d of %d", name, p, len(cols))
		}
	}
	if t.Binary && len(t.Partition) > 0 {
		op.keyRows = newTopNRows(cols, t.Partition)
		op.keyRows.key = true
	} else if len(t.Partition) > 0 {
		if op.keyEnc, err = types.NewEncoder(types.FormatJSON, rows, t.Partition); err != nil {
			return nil, fmt.Errorf("%s key: %w", name, err)
		}
	}
	for _, k := range t.RowKey {
		typ := rows.Columns[k].Type
		var enc types.Encoder
		if !orderable(typ) {
			if enc, err = types.NewEncoder(types.FormatJSON, rows, []int{k}); err != nil {
				return nil, fmt.Errorf("%s row key: %w", name, err)
			}
		}
		op.idTypes, op.idJSON = append(op.idTypes, typ), append(op.idJSON, enc)
	}
	if t.Binary {
		for _, k := range t.Kept {
			if k < 0 || k >= len(cols) {
				return nil, fmt.Errorf("%s: kept column %d of %d", name, k, len(cols))
			}
		}
		op.rows = newTopNRows(cols, t.Kept)
		op.timed = t.Timed()
		if !t.FromTable && t.N > 1 {
			op.cache = &topNCache{parts: map[string]*topNPart{}}
		}
		return op, nil
	}
	for _, c := range rows.Columns {
		op.rowCheck = append(op.rowCheck, jsonCheck(c.Type))
	}
	if op.rowEnc, err = types.NewEncoder(types.FormatJSON, rows, all); err != nil {
		return nil, fmt.Errorf("%s rows: %w", name, err)
	}
	if op.decOld, err = types.NewDecoder(types.FormatJSON, rows, all); err != nil {
		return nil, fmt.Errorf("%s rows: %w", name, err)
	}
	if op.decNew, err = types.NewDecoder(types.FormatJSON, rows, all); err != nil {
		return nil, fmt.Errorf("%s rows: %w", name, err)
	}
	return op, nil
}

func (t *topNOp) Process(c *Change) error {
	t.ts = c.Timestamp
	t.change.Record = c.Record
	if c.Old != nil && !t.fromTable {
		return fmt.Errorf("%s: a stream's Top-N got a removal", t.name)
	}
	if c.Old != nil && t.nullPartition(c.Old) {
		// Its addition was refused (a bad record): nothing to take out.
		if c.New == nil {
			return nil
		}
		c = &Change{New: c.New, Timestamp: c.Timestamp, Record: c.Record}
	}
	if c.Old != nil {
		if err := t.partitionKey(c.Old); err != nil {
			return err
		}
		if c.New != nil && !t.nullPartition(c.New) {
			// An update within one partition is one change of it.
			t.oldKey = append(t.oldKey[:0], t.key...)
			if err := t.partitionKey(c.New); err != nil {
				return err
			}
			if bytes.Equal(t.oldKey, t.key) {
				return t.update(c.Old, c.New)
			}
			t.key = append(t.key[:0], t.oldKey...)
		}
		if err := t.update(c.Old, nil); err != nil {
			return err
		}
	}
	if c.New != nil {
		if err := t.partitionKey(c.New); err != nil {
			return err
		}
		return t.update(nil, c.New)
	}
	return nil
}

// nullPartition reports whether one of row's partition columns is NULL.
func (t *topNOp) nullPartition(row types.Row) bool {
	for _, p := range t.part {
		if row[p].Null {
			return true
		}
	}
	return false
}

// partitionKey encodes row's partition columns into t.key.
func (t *topNOp) partitionKey(row types.Row) error {
	if t.nullPartition(row) {
		return fmt.Errorf("%w: the PARTITION BY column of ROW_NUMBER() is NULL", types.ErrBadRecord)
	}
	if len(t.part) == 0 {
		t.key = append(t.key[:0], topNAll...) // a Top-N of all rows
		return nil
	}
	if t.keyRows != nil {
		t.key = t.keyRows.encode(t.key[:0], row)
		return nil
	}
	var err error
	t.key, err = t.keyEnc.Encode(t.key[:0], row)
	return err
}

// topNAll is the stored key of a Top-N of all rows (no PARTITION BY).
const topNAll = "[]"

// update changes the partition under t.key: takes old out and puts new
// in (either may be nil), stores its state and emits the changes of its
// first N rows.
func (t *topNOp) update(old, new types.Row) error {
	t.fresh = -1
	if t.fromTable {
		return t.updateRows(old, new)
	}
	if t.cache != nil && new != nil {
		return t.updateCached(new)
	}
	v, err := t.store.ov.Get(t.key)
	if err != nil {
		return fatal(err)
	}
	t.cur = append(t.cur[:0], v...)
	if t.before, err = parseTopN(t.before[:0], t.cur, t.rows != nil); err != nil {
		return fatal(fmt.Errorf("%s: stored state of %s: %w", t.name, t.key, err))
	}
	t.after = append(t.after[:0], t.before...)
	if new != nil {
		if err := t.sortKeyOf(new); err != nil {
			return err
		}
		t.id = t.id[:0]
		if t.row, err = t.encodeRow(t.row[:0], new); err != nil {
			return err
		}
		at := len(t.after)
		for i, e := range t.after {
			c := bytes.Compare(e.sort, t.sortKey)
			if c > 0 || c == 0 && t.laterFirst {
				at = i
				break
			}
		}
		if at >= t.n {
			return nil // not among the first N: nothing changes
		}
		t.after = append(t.after, topNEntry{})
		copy(t.after[at+1:], t.after[at:])
		t.after[at] = topNEntry{sort: t.sortKey, id: t.id, row: t.row}
		if t.faithful(new) {
			t.fresh, t.freshRow = at, new
		}
		if len(t.after) > t.n {
			t.after = t.after[:t.n]
		}
	}
	t.state = t.state[:0]
	for _, e := range t.after {
		t.state = appendPart(t.state, e.sort)
		if t.rows == nil {
			t.state = appendPart(t.state, e.id)
		}
		t.state = appendPart(t.state, e.row)
	}
	if len(t.after) == 0 {
		err = t.store.ov.Delete(t.key)
	} else {
		err = t.store.ov.Put(t.key, t.state)
	}
	if err != nil {
		return fatal(err)
	}
	return t.emit()
}

// sortKeyOf encodes row's ORDER BY values into t.sortKey.
func (t *topNOp) sortKeyOf(row types.Row) error {
	t.sortKey = t.sortKey[:0]
	for i, ev := range t.order {
		d, err := ev(row)
		if err != nil {
			return &evalError{node: t.name, err: err}
		}
		t.sortKey = appendSortKey(t.sortKey, d, t.orderT[i], t.desc[i])
	}
	return nil
}

// entryKey sets t.ekey to the store key of a table's row in the
// partition t.prefix, and t.id to its identity.
func (t *topNOp) entryKey(row types.Row) error {
	if err := t.sortKeyOf(row); err != nil {
		return err
	}
	t.id = t.id[:0]
	for i, k := range t.rowKey {
		if enc := t.idJSON[i]; enc != nil {
			var err error
			if t.scratch, err = enc.Encode(t.scratch[:0], row); err != nil {
				return err
			}
			t.id = appendSortKey(t.id, types.Datum{B: t.scratch}, types.BytesType, false)
			continue
		}
		t.id = appendSortKey(t.id, row[k], t.idTypes[i], false)
	}
	t.ekey = append(append(append(t.ekey[:0], t.prefix...), t.sortKey...), t.id...)
	return nil
}

// updateRows is update for a table's Top-N, whose rows are entries of
// their own. One scan reads the first N+1 entries before the change;
// the first N after it follow from them: the old row's entry taken out
// (the N+1th moves in), the new one put in its place by key.
func (t *topNOp) updateRows(old, new types.Row) error {
	t.prefix = appendPart(t.prefix[:0], t.key)
	t.end = prefixEnd(append(t.end[:0], t.prefix...))
	if err := t.scan(); err != nil {
		return err
	}
	// The entries, now that the arena no longer moves (sort holds an
	// entry's store key here).
	t.before = t.before[:0]
	for i := 0; i < len(t.spans); i += 3 {
		e := topNEntry{sort: t.arena[t.spans[i]:t.spans[i+1]]}
		if err := t.splitValue(&e, t.arena[t.spans[i+1]:t.spans[i+2]]); err != nil {
			return err
		}
		t.before = append(t.before, e)
	}
	t.after = append(t.after[:0], t.before...)
	t.before = t.before[:min(len(t.before), t.n)]
	if old != nil {
		if err := t.entryKey(old); err != nil {
			return err
		}
		if err := t.store.ov.Delete(t.ekey); err != nil {
			return fatal(err)
		}
		for i, e := range t.after {
			if bytes.Equal(e.sort, t.ekey) {
				t.after = append(t.after[:i], t.after[i+1:]...)
				break
			}
		}
	}
	if new != nil {
		if err := t.entryKey(new); err != nil {
			return err
		}
		t.row = appendPart(t.row[:0], t.id)
		var err error
		if t.row, err = t.encodeRow(t.row, new); err != nil {
			return err
		}
		if err := t.store.ov.Put(t.ekey, t.row); err != nil {
			return fatal(err)
		}
		at := len(t.after)
		for i, e := range t.after {
			if bytes.Compare(e.sort, t.ekey) > 0 {
				at = i
				break
			}
		}
		if at < t.n {
			e := topNEntry{sort: t.ekey}
			if err := t.splitValue(&e, t.row); err != nil {
				return err
			}
			t.after = append(t.after, topNEntry{})
			copy(t.after[at+1:], t.after[at:])
			t.after[at] = e
		}
	}
	t.after = t.after[:min(len(t.after), t.n)]
	return t.emit()
}

// splitValue sets e's identity and row from a table entry's value.
func (t *topNOp) splitValue(e *topNEntry, v []byte) error {
	n, w := binary.Uvarint(v)
	if w <= 0 || uint64(len(v)-w) < n {
		return fatal(fmt.Errorf("%s: corrupt stored row", t.name))
	}
	e.id, e.row = v[w:w+int(n)], v[w+int(n):]
	return nil
}

// scan copies the keys and values of the partition's first N+1 entries
// to the arena, noting in t.spans where each key starts, where its
// value starts and where it ends.
func (t *topNOp) scan() error {
	t.arena, t.spans = t.arena[:0], t.spans[:0]
	it, err := t.store.ov.Range(t.prefix, t.end)
	if err != nil {
		return fatal(err)
	}
	for n := 0; n <= t.n && it.Next(); n++ {
		start := len(t.arena)
		t.arena = append(t.arena, it.Key()...)
		mid := len(t.arena)
		t.arena = append(t.arena, it.Value()...)
		t.spans = append(t.spans, start, mid, len(t.arena))
	}
	if err := it.Close(); err != nil {
		return fatal(err)
	}
	return nil
}

// prefixEnd turns p into the least key above every key that starts with
// p (nil: none).
func prefixEnd(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] != 0xff {
			p[i]++
			return p[:i+1]
		}
	}
	return nil
}

// orderable reports whether appendSortKey encodes values of t.
func orderable(t types.Type) bool {
	switch t.Kind {
	case types.Boolean, types.Int, types.Bigint, types.Double, types.String, types.Bytes,
		types.Date, types.Time, types.Timestamp:
		return true
	case types.Decimal:
		return !t.IsWideDecimal()
	}
	return false
}

func appendPart(dst, p []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(p)))
	return append(dst, p...)
}

// encodeRow appends row as the state keeps it (timed: after the
// change's timestamp).
func (t *topNOp) encodeRow(dst []byte, row types.Row) ([]byte, error) {
	if t.timed {
		dst = binary.BigEndian.AppendUint64(dst, uint64(t.ts))
	}
	if t.rows != nil {
		return t.rows.encode(dst, row), nil
	}
	return t.rowEnc.Encode(dst, row)
}

// decodeRow sets row (but its last column, the rank) from a stored row.
func (t *topNOp) decodeRow(dec types.Decoder, b []byte, row types.Row) error {
	if t.timed {
		if len(b) < tsLen {
			return fmt.Errorf("truncated row")
		}
		b = b[tsLen:]
	}
	if t.rows != nil {
		return t.rows.decode(b, row[:len(row)-1])
	}
	return dec.Decode(b, row[:len(row)-1])
}

// sameRow reports whether two stored rows hold the same values
// (whatever their times).
func (t *topNOp) sameRow(a, b []byte) bool {
	if t.timed && len(a) >= tsLen && len(b) >= tsLen {
		a, b = a[tsLen:], b[tsLen:]
	}
	return bytes.Equal(a, b)
}

// parseTopN appends the entries of a partition's state to dst; bin:
// of the binary layout (no identities).
func parseTopN(dst []topNEntry, st []byte, bin bool) ([]topNEntry, error) {
	for len(st) > 0 {
		var e topNEntry
		var ok bool
		if e.sort, st, ok = cutPart(st); !ok {
			return nil, fmt.Errorf("truncated Top-N state")
		}
		if !bin {
			if e.id, st, ok = cutPart(st); !ok {
				return nil, fmt.Errorf("truncated Top-N state")
			}
		}
		if e.row, st, ok = cutPart(st); !ok {
			return nil, fmt.Errorf("truncated Top-N state")
		}
		dst = append(dst, e)
	}
	return dst, nil
}

// cutPart splits a uvarint-prefixed part off st.
func cutPart(st []byte) (part, rest []byte, ok bool) {
	n, w := binary.Uvarint(st)
	if w <= 0 || uint64(len(st)-w) < n {
		return nil, nil, false
	}
	return st[w : w+int(n)], st[w+int(n):], true
}

// emit passes on the changes between the partition's first N rows
// before (t.before) and after (t.after): by rank, or (without the rank
// and N > 1: a table's rows keyed by their own key) by row.
func (t *topNOp) emit() error {
	nb, na := min(len(t.before), t.n), min(len(t.after), t.n)
	if t.rank || t.n == 1 {
		for i := range max(nb, na) {
			var b, a *topNEntry
			if i < nb {
				b = &t.before[i]
			}
			if i < na {
				a = &t.after[i]
			}
			if b != nil && a != nil && bytes.Equal(b.id, a.id) && t.sameRow(b.row, a.row) && !t.freshAt(i) {
				continue
			}
			if err := t.emitPair(b, a, i+1); err != nil {
				return err
			}
		}
		return nil
	}
	// Rows that left, then rows that came or changed.
	for i := range nb {
		b := &t.before[i]
		if indexByID(t.after[:na], b.id) < 0 {
			if err := t.emitPair(b, nil, i+1); err != nil {
				return err
			}
		}
	}
	for i := range na {
		a := &t.after[i]
		j := indexByID(t.before[:nb], a.id)
		var b *topNEntry
		if j >= 0 {
			b = &t.before[j]
			if t.sameRow(b.row, a.row) && j == i && !t.freshAt(i) {
				continue
			}
		}
		if err := t.emitPair(b, a, i+1); err != nil {
			return err
		}
	}
	return nil
}

// freshAt reports whether the ith row after the change is the row being
// added, and rows keep no column (a deduplication before a sink): its
// stored form, empty, tells nothing of whether it differs from the row
// it replaces.
func (t *topNOp) freshAt(i int) bool {
	return t.fresh == i && t.rows != nil && len(t.rows.kept) == 0
}

func indexByID(es []topNEntry, id []byte) int {
	for i, e := range es {
		if bytes.Equal(e.id, id) {
			return i
		}
	}
	return -1
}

// emitPair passes on the change from b to a (either may be nil) at rank.
func (t *topNOp) emitPair(b, a *topNEntry, rank int) error {
	out := &t.change
	out.Old, out.New, out.Timestamp = nil, nil, t.ts
	last := len(t.oldRow) - 1
	if b != nil && (a == nil || !t.skipOld) {
		if err := t.decodeRow(t.decOld, b.row, t.oldRow); err != nil {
			return fatal(fmt.Errorf("%s: stored row: %w", t.name, err))
		}
		t.oldRow[last] = types.IntDatum(int64(rank))
		out.Old = t.oldRow
	}
	if a != nil && t.fresh >= 0 && a == &t.after[t.fresh] {
		// The row being added, as its stored JSON would give it back.
		copy(t.newRow[:last], t.freshRow)
		t.newRow[last] = types.IntDatum(int64(rank))
		out.New = t.newRow
	} else if a != nil {
		if err := t.decodeRow(t.decNew, a.row, t.newRow); err != nil {
			return fatal(fmt.Errorf("%s: stored row: %w", t.name, err))
		}
		t.newRow[last] = types.IntDatum(int64(rank))
		out.New = t.newRow
	}
	return t.next.Process(out)
}

// How a column's values come back from the JSON of the stored state:
// as they were, as they were when valid UTF-8 (a STRING: JSON replaces
// invalid bytes), or not surely so (composites, wide decimals).
const (
	jsonExact uint8 = iota
	jsonUTF8
	jsonNotExact
)

func jsonCheck(t types.Type) uint8 {
	switch t.Kind {
	case types.String:
		return jsonUTF8
	case types.Array, types.Map, types.Struct, types.Unknown:
		return jsonNotExact
	case types.Decimal:
		if t.IsWideDecimal() {
			return jsonNotExact
		}
	}
	return jsonExact
}

// faithful reports whether row's stored JSON decodes into row's values
// as they are, so that the row itself can be emitted instead.
func (t *topNOp) faithful(row types.Row) bool {
	if t.rows != nil {
		return len(row) >= t.rows.width // binary rows come back as they are
	}
	if len(row) < len(t.rowCheck) {
		return false
	}
	for i, c := range t.rowCheck {
		switch c {
		case jsonUTF8:
			if !row[i].Null && !utf8.Valid(row[i].B) {
				return false
			}
		case jsonNotExact:
			if !row[i].Null {
				return false
			}
		}
	}
	return true
}

// Flush writes the keys this transaction changed to the changelog, each
// with its latest value or its deletion: the store's pending writes,
// which the Top-N alone makes (the cache's changed partitions written
// to the store first). The thread calls it before it commits the
// transaction.
func (t *topNOp) Flush() error {
	if t.cache != nil {
		if err := t.writeBackChanged(); err != nil {
			return err
		}
	}
	return t.store.ov.Pending(func(k, v []byte, deleted bool) error {
		// The pending writes' bytes stay valid after the transaction.
		rec := t.out.record()
		rec.Key = k[:len(k):len(k)]
		if !deleted {
			rec.Value = v[:len(v):len(v)]
			if rec.Value == nil {
				rec.Value = []byte{}
			}
		}
		rec.Topic, rec.Partition = t.changelog, t.store.partition
		rec.Timestamp = time.UnixMilli(t.ts)
		t.store.last = rec
		t.out.produce(rec)
		return nil
	})
}

// Abort forgets the cache, which holds the transaction's changes.
func (t *topNOp) Abort() {
	if t.cache != nil {
		t.cache.reset(nil)
		t.cache.ov = nil // filled again from the store's committed state
	}
}

// appendSortKey appends d, of type typ, encoded so that encodings compare
// bytewise as the values do, NULL first; desc inverts the bytes (NULL
// last), as SQLite and PostgreSQL order.
func appendSortKey(dst []byte, d types.Datum, typ types.Type, desc bool) []byte {
	start := len(dst)
	if d.Null {
		dst = append(dst, 0)
	} else {
		dst = append(dst, 1)
		switch typ.Kind {
		case types.Double:
			bits := math.Float64bits(d.F)
			if d.F == 0 {
				bits = 0 // -0 and 0 tie
			}
			if bits>>63 == 0 {
				bits ^= 1 << 63
			} else {
				bits = ^bits
			}
			dst = binary.BigEndian.AppendUint64(dst, bits)
		case types.String, types.Bytes:
			for _, c := range d.B {
				if c == 0 {
					dst = append(dst, 0, 0xff)
				} else {
					dst = append(dst, c)
				}
			}
			dst = append(dst, 0, 0)
		default: // BOOLEAN, integers, DECIMAL up to 18 digits, DATE, TIME, TIMESTAMP
			dst = binary.BigEndian.AppendUint64(dst, uint64(d.I)^(1<<63))
		}
	}
	if desc {
		for i := start; i < len(dst); i++ {
			dst[i] = ^dst[i]
		}
	}
	return dst
}

// emitStored passes on the rows of a stored entry as the changes that
// put them in, each at its rank and with its stored time: a pull
// query's view of the result table (Query.PullWith; timed rows only).
// A stream's entry is a partition, its first N rows in order; a table's
// is one row, ranked by its place among its partition's entries, which
// a scan of one store partition reads in key order (see viewReset). A
// row the nodes after the Top-N cannot evaluate is left out, as the
// query leaves it out.
func (t *topNOp) emitStored(key, v []byte) error {
	t.fresh = -1
	t.change.Record = nil
	if !t.fromTable {
		var err error
		if t.after, err = parseTopN(t.after[:0], v, true); err != nil {
			return fmt.Errorf("%s: stored state of %x: %w", t.name, key, err)
		}
		for i := range min(len(t.after), t.n) {
			if err := t.emitStoredRow(&t.after[i], i+1); err != nil {
				return err
			}
		}
		return nil
	}
	n, w := binary.Uvarint(key)
	if w <= 0 || uint64(len(key)-w) < n {
		return fmt.Errorf("%s: corrupt stored key %x", t.name, key)
	}
	if prefix := key[:w+int(n)]; !bytes.Equal(prefix, t.viewPrefix) {
		t.viewPrefix = append(t.viewPrefix[:0], prefix...)
		t.viewRank = 0
	}
	if t.viewRank++; t.viewRank > t.n {
		return nil
	}
	var e topNEntry
	if err := t.splitValue(&e, v); err != nil {
		return err
	}
	return t.emitStoredRow(&e, t.viewRank)
}

// viewReset starts the view of another store partition.
func (t *topNOp) viewReset() { t.viewPrefix, t.viewRank = t.viewPrefix[:0], 0 }

// emitStoredRow passes on e's row at rank, at its stored time.
func (t *topNOp) emitStoredRow(e *topNEntry, rank int) error {
	if len(e.row) < tsLen {
		return fmt.Errorf("%s: stored row without its time", t.name)
	}
	t.ts = int64(binary.BigEndian.Uint64(e.row))
	err := t.emitPair(nil, e, rank)
	var ee *evalError
	if errors.As(err, &ee) {
		return nil
	}
	return err
}
