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

var (
	_ Processor   = (*aggregateOp)(nil)
	_ flusher     = (*aggregateOp)(nil)
	_ aborter     = (*aggregateOp)(nil)
	_ initializer = (*aggregateOp)(nil)
)

// Init schedules a windowed aggregation's idle advance.
func (a *aggregateOp) Init(tc *TaskContext) error {
	if a.win != nil {
		a.win.init(tc)
	}
	return nil
}

// aggregateOp folds each row into its group's state, kept in the task's
// store (writes pending in the overlay until the transaction commits) and
// written to the store's changelog in the same transaction. It then emits
// the group's new row, or its deletion when HAVING no longer holds. Of a
// table's change it first takes the old row out of its group, then adds
// the new one, emitting after each.
//
// A group's state is the event time of its last change (8 bytes, big
// endian milliseconds: the ROWTIME of its row), then, aggregating a table,
// its row count (8 bytes), then the states of its aggregates in order,
// each behind its length as a uvarint.
type aggregateOp struct {
	name    string
	groupBy []expr.Evaluator
	accs    []expr.Accumulator
	args    [][]expr.Evaluator
	argVals [][]types.Datum
	// copies says which Datum fields carry a value (see datumCopy): of
	// the group's row (key columns, then aggregates), of each argument.
	copies    []datumCopy
	argCopies [][]datumCopy
	// groupCols and argCols say, per grouping expression and argument,
	// the input column it is (copied with no call), or -1.
	groupCols []int
	argCols   [][]int
	having    expr.Evaluator
	keyEnc    types.Encoder
	keyDec    types.Decoder // reads stored keys back, for pull queries
	// win is the windowing of a windowed aggregation, or nil; aggAt is
	// where the aggregates start in row (after the window bounds).
	win       *windowing
	aggAt     int
	changelog string
	store     *taskStore
	out       *outbox
	ts        int64     // the change's event time
	row       types.Row // the group's row: key columns, then aggregates
	change    Change
	// fromTable marks a table's aggregation: rows are also taken back
	// out, and a group's state starts with its row count.
	fromTable bool
	undoers   []expr.Undoer
	checkers  []expr.Checker // per aggregate, or nil: see expr.Checker
	// dv keeps the distinct aggregates' values apart from the groups'
	// states (physical.Aggregate.DistinctStore), or is nil.
	dv *distinctValues
	// quiet holds back the emission of a fold: a table change that
	// stays in its group takes its old row out and its new row in, and
	// the group's row is emitted once, as Kafka Streams does when the
	// grouping key did not change.
	quiet  bool
	oldKey []byte
	// prevOut says whether the group's row before this change passed
	// HAVING (was in the result).
	prevOut bool
	// changes (physical.Aggregate.Changes) emits the group's previous
	// row, kept in oldRow (hasOld: there is one; captured: this change's
	// is taken), with its new one. dropEmpty deletes a group whose last
	// row leaves. See aggregate_sql.go.
	changes, dropEmpty bool
	// distinct (SELECT DISTINCT) emits a group's row only when the
	// group appears; existed says the group held rows before this fold.
	distinct, existed bool
	hasOld, captured  bool
	oldRow            types.Row
	oldBufs           [][]byte
	key               []byte
	state             []byte
	part              []byte
	parts             [][]byte
	next              Processor

	// The groups this transaction changed, with their latest state: reads
	// find them here first, and they reach the store's overlay and the
	// changelog once, at Flush before the transaction commits.
	groups  map[string]*group
	changed []*group // in order of first change; reused across transactions
	nextG   int      // changed[:nextG] are this transaction's
}

// group is a changed group: its stored key and new state (ts first), or
// its deletion.
type group struct {
	key     []byte
	state   []byte
	deleted bool
	// fresh: the store did not hold the key when the transaction began,
	// nor has it been spilled since (a session version made and replaced
	// within the transaction): its deletion needs no tombstone in the
	// changelog, which never had it.
	fresh bool
	ts    int64
}

// newAggregate builds the aggregation a over store, and distinct, the
// store of a.DistinctStore (both nil for a pull query's view).
func newAggregate(name string, a *physical.Aggregate, store, distinct *taskStore, out *outbox, next Processor) (*aggregateOp, error) {
	op := &aggregateOp{name: name, changelog: a.Store.Changelog, store: store, out: out, fromTable: a.FromTable,
		changes: a.Changes, dropEmpty: a.DropEmpty && a.FromTable, distinct: a.Distinct,
		oldRow: make(types.Row, len(a.Out.Columns)), oldBufs: make([][]byte, len(a.Out.Columns)),
		row: make(types.Row, len(a.Out.Columns)), parts: make([][]byte, len(a.Aggs)), next: next, groups: map[string]*group{}}
	for _, g := range a.GroupBy {
		ev, err := expr.Compile(g)
		if err != nil {
			return nil, err
		}
		op.groupBy = append(op.groupBy, ev)
		op.groupCols = append(op.groupCols, columnIndex(g))
	}
	for _, c := range a.Out.Columns {
		op.copies = append(op.copies, copyFor(c.Type))
	}
	var argTypes [][]types.Type
	for _, c := range a.Aggs {
		ts := make([]types.Type, len(c.Args))
		argTypes = append(argTypes, ts)
		var evs []expr.Evaluator
		var copies []datumCopy
		var cols []int
		for i, e := range c.Args {
			ev, err := expr.Compile(e)
			if err != nil {
				return nil, err
			}
			evs = append(evs, ev)
			cols = append(cols, columnIndex(e))
			ts[i] = e.Type()
			copies = append(copies, copyFor(e.Type()))
		}
		op.argCopies = append(op.argCopies, copies)
		op.argCols = append(op.argCols, cols)
		acc := c.Fn.New(ts)
		op.accs = append(op.accs, acc)
		ck, _ := acc.(expr.Checker)
		op.checkers = append(op.checkers, ck)
		if a.FromTable {
			u, ok := acc.(expr.Undoer)
			if !ok {
				return nil, fmt.Errorf("%s: %s cannot aggregate a table", name, c.Fn.Name)
			}
			op.undoers = append(op.undoers, u)
		}
		op.args = append(op.args, evs)
		op.argVals = append(op.argVals, make([]types.Datum, len(evs)))
	}
	if a.DistinctStore != nil {
		if store != nil && distinct == nil {
			return nil, fmt.Errorf("%s needs store %s", name, a.DistinctStore.Name)
		}
		dv, err := newDistinctValues(name, a, op.accs, argTypes, distinct)
		if err != nil {
			return nil, err
		}
		op.dv = dv
		if a.FromTable {
			for j, acc := range dv.accs {
				if acc != nil {
					op.undoers[j] = acc
				}
			}
		}
		for j, acc := range dv.accs {
			if acc != nil {
				op.checkers[j] = nil
			}
		}
	}
	op.aggAt = len(a.GroupBy)
	if a.Window != nil {
		w, err := newWindowing(name, a, store)
		if err != nil {
			return nil, err
		}
		op.win, op.aggAt = w, len(a.GroupBy)+len(types.WindowColumns)
	}
	if a.Having != nil {
		ev, err := expr.Compile(a.Having)
		if err != nil {
			return nil, err
		}
		op.having = ev
	}
	var err error
	if op.keyEnc, err = types.NewEncoderOpts(a.Store.KeyFormat, a.Out, a.Out.KeyIndexes(), a.Store.KeyOptions); err != nil {
		return nil, fmt.Errorf("%s key: %w", name, err)
	}
	if op.keyDec, err = types.NewDecoderOpts(a.Store.KeyFormat, a.Out, a.Out.KeyIndexes(), a.Store.KeyOptions); err != nil {
		return nil, fmt.Errorf("%s key: %w", name, err)
	}
	return op, nil
}

func (a *aggregateOp) Process(c *Change) error {
	if a.win != nil {
		if err := a.win.sync(a); err != nil {
			return fatal(err)
		}
	}
	a.ts = c.Timestamp
	a.change.Record = c.Record
	if c.Old != nil {
		if !a.fromTable {
			return fmt.Errorf("%s: a stream's aggregation got a removal", a.name)
		}
		same := false
		if c.New != nil && a.win == nil {
			var err error
			if same, err = a.sameGroup(c.Old, c.New); err != nil {
				return err
			}
		}
		a.quiet = same
		a.captured = false
		err := a.update(c.Old, true)
		a.quiet = false
		if err != nil {
			return err
		}
		// The new row's fold emits the group's row before the old row
		// left it, when both are of one group.
		a.captured = same && a.captured
	} else {
		a.captured = false
	}
	if c.New != nil {
		return a.update(c.New, false)
	}
	return nil
}

// sameGroup reports whether two rows have the same grouping key.
func (a *aggregateOp) sameGroup(x, y types.Row) (bool, error) {
	var err error
	if err = a.groupKey(x); err != nil {
		return false, err
	}
	a.oldKey = append(a.oldKey[:0], a.key...)
	if err = a.groupKey(y); err != nil {
		return false, err
	}
	return string(a.oldKey) == string(a.key), nil
}

// groupKey evaluates row's grouping key into a.row and a.key.
func (a *aggregateOp) groupKey(row types.Row) error {
	for i, ev := range a.groupBy {
		d, err := ev(row)
		if err != nil {
			return &evalError{node: a.name, err: err}
		}
		a.copies[i].set(&a.row[i], &d)
	}
	var err error
	a.key, err = a.keyEnc.Encode(a.key[:0], a.row)
	return err
}

// update folds row into its group (undo: takes it back out) and emits
// the group's new row.
func (a *aggregateOp) update(row types.Row, undo bool) error {
	g := len(a.groupBy)
	for i, ev := range a.groupBy {
		if col := a.groupCols[i]; col >= 0 {
			a.copies[i].set(&a.row[i], &row[col]) // a column as it is: no call
			continue
		}
		d, err := ev(row)
		if err != nil {
			return &evalError{node: a.name, err: err}
		}
		a.copies[i].set(&a.row[i], &d)
	}
	if anyNullRow(a.row[:g]) {
		return fmt.Errorf("%w: the GROUP BY key is NULL", types.ErrBadRecord)
	}
	for j, evs := range a.args {
		cols := a.argCols[j]
		for k, ev := range evs {
			if col := cols[k]; col >= 0 {
				a.argCopies[j][k].set(&a.argVals[j][k], &row[col])
				continue
			}
			d, err := ev(row)
			if err != nil {
				return &evalError{node: a.name, err: err}
			}
			a.argCopies[j][k].set(&a.argVals[j][k], &d)
		}
	}
	var err error
	if a.key, err = a.keyEnc.Encode(a.key[:0], a.row); err != nil {
		return err
	}
	if a.win != nil {
		return a.win.update(a)
	}
	return a.fold(undo)
}

// fold updates the group stored under a.key with the row whose
// aggregate arguments are in a.argVals (undo: takes it back out), and
// emits the group's new row.
func (a *aggregateOp) fold(undo bool) error {
	var err error
	gr := a.groups[string(a.key)]
	var prev []byte
	switch {
	case gr == nil:
		if prev, err = a.store.ov.Get(a.key); err != nil {
			return err
		}
	case !gr.deleted:
		prev = gr.state
	}
	ts := a.ts
	a.existed = len(prev) >= tsLen
	if len(prev) >= tsLen {
		if a.win != nil {
			// A window's ROWTIME is the latest of its rows'.
			ts = max(ts, int64(binary.BigEndian.Uint64(prev)))
		}
		prev = prev[tsLen:]
	}
	// A table's group state starts with how many rows it holds.
	var rows uint64
	if a.fromTable {
		if len(prev) >= 8 {
			rows, prev = binary.BigEndian.Uint64(prev), prev[8:]
		}
		if undo && rows == 0 {
			return nil // nothing to take out (its addition was filtered)
		}
		a.existed = a.existed && rows > 0
	}
	if err := splitState(prev, a.parts); err != nil {
		return fmt.Errorf("%s: stored state of key %x: %w", a.name, a.key, err)
	}
	if a.changes && (!a.captured || a.win != nil) {
		// (A windowed aggregation's input is a stream: each window a
		// row lands in is a group of its own, with its own old row.)
		if err := a.captureOld(prev, rows); err != nil {
			return err
		}
	}
	if a.having != nil {
		// A group failing HAVING is deleted from the result only if its
		// previous row was in it, as ksqlDB's filter of the aggregate's
		// changes does.
		a.prevOut = false
		if len(prev) > 0 && (a.win == nil || !a.win.final) {
			var err error
			if a.prevOut, err = a.passes(); err != nil {
				return err
			}
		}
	}
	if a.dv != nil {
		if err := a.dv.prepare(a.key, a.argVals, undo, a.ts); err != nil {
			return err
		}
	}
	a.state = binary.BigEndian.AppendUint64(a.state[:0], uint64(ts))
	if a.fromTable {
		if undo {
			rows--
		} else {
			rows++
		}
		// A group whose last row left stays, with the aggregates of no
		// rows (COUNT 0), as in ksqlDB (Kafka Streams' table
		// aggregations never delete a group).
		a.state = binary.BigEndian.AppendUint64(a.state, rows)
		if rows == 0 && a.dropEmpty {
			if a.dv != nil {
				a.dv.apply(a.ts)
			}
			return a.dropGroup(gr)
		}
	}
	for j, acc := range a.accs {
		if a.dv != nil && a.dv.accs[j] != nil {
			switch a.dv.action[j] {
			case dvAdd:
				a.part = acc.Add(a.part[:0], a.parts[j], a.argVals[j])
			case dvUndo:
				a.part = a.dv.accs[j].Undo(a.part[:0], a.parts[j], a.argVals[j])
			default:
				a.part = append(a.part[:0], a.parts[j]...)
			}
		} else if undo {
			a.part = a.undoers[j].Undo(a.part[:0], a.parts[j], a.argVals[j])
		} else {
			a.part = acc.Add(a.part[:0], a.parts[j], a.argVals[j])
		}
		if ck := a.checkers[j]; ck != nil {
			if err := ck.Check(a.part); err != nil {
				return &evalError{node: a.name, err: err}
			}
		}
		a.state = binary.AppendUvarint(a.state, uint64(len(a.part)))
		a.state = append(a.state, a.part...)
	}
	if a.dv != nil {
		a.dv.apply(a.ts)
	}
	// prev (and a.parts) may point into gr.state: a.state is complete
	// before it is copied there.
	gr = a.changedGroup(gr)
	gr.deleted, gr.state, gr.ts = false, append(gr.state[:0], a.state...), ts
	if a.win != nil && a.win.final {
		return nil // emitted when the window closes
	}
	if a.quiet {
		return nil // the new row's fold emits the group
	}
	if a.distinct && a.existed {
		return nil // SELECT DISTINCT: the row is out already
	}
	a.ts = ts
	return a.emit(a.state[tsLen:])
}

// changedGroup returns gr, or when it is nil the group of a.key, noted as
// changed in this transaction.
func (a *aggregateOp) changedGroup(gr *group) *group {
	if gr == nil {
		if a.nextG == len(a.changed) {
			a.changed = append(a.changed, &group{})
		}
		gr = a.changed[a.nextG]
		a.nextG++
		gr.fresh = false
		gr.key = append(gr.key[:0], a.key...)
		a.groups[unsafe.String(unsafe.SliceData(gr.key), len(gr.key))] = gr
	}
	gr.ts = a.ts
	return gr
}

// Flush writes the groups this transaction changed to the store's
// overlay and their latest states (or deletions) to the changelog: once
// per group, however often it changed. The thread calls it before it
// commits the transaction.
func (a *aggregateOp) Flush() error {
	if a.win != nil {
		if err := a.win.sync(a); err != nil {
			return err
		}
	}
	if err := a.spill(); err != nil {
		return err
	}
	if a.dv != nil {
		if err := a.dv.spill(a.out); err != nil {
			return err
		}
	}
	if a.win != nil {
		return a.win.flush(a)
	}
	return nil
}

// spill writes the groups changed since the last spill to the store's
// overlay and the changelog, and forgets them: at Flush, and before an
// EMIT FINAL emission reads the store in the middle of a transaction.
func (a *aggregateOp) spill() error {
	if a.win != nil && a.nextG > 0 {
		a.win.wall = time.Now().UnixMilli()
	}
	for _, gr := range a.changed[:a.nextG] {
		var err error
		if gr.deleted {
			err = a.store.ov.Delete(gr.key)
		} else {
			err = a.store.ov.Put(gr.key, gr.state)
		}
		if err != nil {
			return err
		}
		if gr.deleted && gr.fresh {
			continue
		}
		a.writeChangelog(gr)
	}
	clear(a.groups)
	a.nextG = 0
	return nil
}

// Abort forgets the transaction's changed groups (after Flush, or when
// the transaction aborts).
func (a *aggregateOp) Abort() {
	clear(a.groups)
	a.nextG = 0
	if a.dv != nil {
		a.dv.abort()
	}
}

// emit passes on the group's row (its key columns in a.row) computed from
// st, its state after the timestamp: the row, or its deletion when HAVING
// does not hold.
func (a *aggregateOp) emit(st []byte) error {
	g := a.aggAt
	if a.fromTable {
		if len(st) < 8 {
			return fmt.Errorf("%s: truncated aggregate state", a.name)
		}
		st = st[8:]
	}
	if err := splitState(st, a.parts); err != nil {
		return err
	}
	for j, acc := range a.accs {
		d := acc.Result(a.parts[j])
		a.copies[g+j].set(&a.row[g+j], &d)
	}
	if a.win != nil {
		a.win.setBounds(a)
	}
	if a.having != nil {
		d, err := a.having(a.row)
		if err != nil {
			return &evalError{node: a.name, err: err}
		}
		if !d.Bool() {
			if !a.prevOut {
				return nil
			}
			return a.emitDeletion()
		}
	}
	out := &a.change
	out.Old, out.New, out.Timestamp = nil, a.row, a.ts
	if a.changes && a.hasOld {
		out.Old = a.oldRow
	}
	return a.next.Process(out)
}

// passes reports whether the group state split into a.parts gives a row
// HAVING keeps.
func (a *aggregateOp) passes() (bool, error) {
	g := a.aggAt
	for j, acc := range a.accs {
		d := acc.Result(a.parts[j])
		a.copies[g+j].set(&a.row[g+j], &d)
	}
	if a.win != nil {
		a.win.setBounds(a)
	}
	d, err := a.having(a.row)
	if err != nil {
		return false, &evalError{node: a.name, err: err}
	}
	return d.Bool(), nil
}

// emitDeletion passes on the deletion of the group whose key columns are
// in a.row.
func (a *aggregateOp) emitDeletion() error {
	out := &a.change
	out.Old, out.New, out.Timestamp = a.row, nil, a.ts
	if a.changes {
		if !a.hasOld {
			return nil
		}
		out.Old = a.oldRow
	}
	return a.next.Process(out)
}

// emitStored passes on the row of a stored group (key and state as in
// the store), for pull queries, with the group's ROWTIME.
func (a *aggregateOp) emitStored(key, state []byte) error {
	if a.win != nil {
		gkey, ok := a.win.storedGroupKey(key)
		if !ok {
			return nil // the store's progress mark or an index entry
		}
		a.key = append(a.key[:0], key...)
		key = gkey
	}
	if len(state) < tsLen {
		return fmt.Errorf("%s: corrupt stored state for key %x", a.name, key)
	}
	if err := a.keyDec.Decode(key, a.row); err != nil {
		return fmt.Errorf("%s: stored key %x: %w", a.name, key, err)
	}
	a.ts = int64(binary.BigEndian.Uint64(state))
	a.hasOld = false // a stored row alone, no change
	return a.emit(state[tsLen:])
}

// writeChangelog produces a group's state (or its deletion) to the
// changelog, in the task's partition.
func (a *aggregateOp) writeChangelog(gr *group) {
	rec := a.out.record()
	start := len(a.out.arena)
	if a.win != nil {
		a.out.arena = a.win.changelogKey(a.out.arena, gr.key)
	} else {
		a.out.arena = append(a.out.arena, gr.key...)
	}
	keyEnd := len(a.out.arena)
	if !gr.deleted {
		a.out.arena = append(a.out.arena, gr.state...)
	}
	buf := a.out.arena
	rec.Key = buf[start:keyEnd:keyEnd]
	if !gr.deleted {
		rec.Value = buf[keyEnd:len(buf):len(buf)]
	}
	rec.Topic = a.changelog
	rec.Partition = a.store.partition
	ts := gr.ts
	if a.win != nil {
		// Window changelogs delete by record time (compact,delete):
		// stamped with the time they were written, as Kafka Streams'
		// are for live input, a window of replayed input stays for its
		// retention too instead of going at once.
		ts = max(ts, a.win.wall)
	}
	rec.Timestamp = time.UnixMilli(ts)
	a.store.last = rec
	a.out.produce(rec)
}

// columnIndex is the input column e is, or -1 when e computes a value.
func columnIndex(e expr.Expr) int {
	if c, ok := e.(*expr.Column); ok {
		return c.Index
	}
	return -1
}

// splitState cuts a group's state into its aggregates' states; an empty
// state gives empty (initial) parts.
func splitState(st []byte, parts [][]byte) error {
	for j := range parts {
		if len(st) == 0 {
			parts[j] = nil
			continue
		}
		n, w := binary.Uvarint(st)
		if w <= 0 || uint64(len(st)-w) < n {
			return fmt.Errorf("truncated aggregate state")
		}
		parts[j] = st[w : w+int(n)]
		st = st[w+int(n):]
	}
	return nil
}
