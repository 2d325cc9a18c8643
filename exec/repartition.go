package exec

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Processor = (*repartitionOp)(nil)

// repartitionOp writes each row to an internal topic keyed by the row's
// new key, so that the next sub-topology sees every row of one key in one
// partition. The value carries the row's columns unchanged. A change's
// old row goes first, under its own key, marked with physical.UndoHeader.
type repartitionOp struct {
	name   string
	topic  string
	keys   []expr.Evaluator
	keyRow types.Row
	key    types.Encoder
	value  types.Encoder
	// nullKeys writes a row whose key has a NULL with a null record
	// key (a join's); otherwise such a row is dropped (GROUP BY's).
	nullKeys bool
	out      *outbox
	// oldKey and newKey are a change's two keys, encoded.
	oldKey, newKey []byte
	// rec is the input record of the change being written, whose own
	// headers go along (outbox.userHeaders).
	rec *kgo.Record
	// window, for windowed rows (physical.Repartition.WindowType), is
	// appended to each key from the row's columns winCol (WINDOWSTART)
	// and winCol+1 (WINDOWEND).
	window types.WindowType
	winCol int
}

func newRepartition(name string, r *physical.Repartition, out *outbox) (*repartitionOp, error) {
	op := &repartitionOp{name: name, topic: r.Topic, keyRow: make(types.Row, len(r.KeyExprs)), nullKeys: r.NullKeys, out: out}
	for _, e := range r.KeyExprs {
		ev, err := expr.Compile(e)
		if err != nil {
			return nil, err
		}
		op.keys = append(op.keys, ev)
	}
	idx := make([]int, len(r.KeySchema.Columns))
	for i := range idx {
		idx[i] = i
	}
	var err error
	if op.key, err = latestKeyEncoder(r.KeyFormat, r.KeySchema, idx, r.KeyOptions, r.KeyLatestOf); err != nil {
		return nil, fmt.Errorf("%s key: %w", name, err)
	}
	if r.WindowType != types.NoWindow {
		if op.winCol = r.In.Index(types.WindowStart); op.winCol < 0 || op.winCol+1 >= r.In.Len() {
			return nil, fmt.Errorf("%s: windowed rows without WINDOWSTART and WINDOWEND", name)
		}
		op.window = r.WindowType
	}
	cols := r.Columns // those the next sub-topology reads
	if cols == nil {
		for i, c := range r.In.Columns {
			if !c.Pseudo {
				cols = append(cols, i)
			}
		}
	}
	// Repartition values are JSON objects (one column is wrapped too,
	// even a key column, which JSON would unwrap by default), so the next
	// sub-topology reads them by name.
	var opts types.FormatOptions
	if len(cols) == 1 {
		wrap := true
		opts.WrapSingleValue = &wrap
	}
	if op.value, err = types.NewEncoderOpts(types.FormatJSON, r.In, cols, opts); err != nil {
		return nil, fmt.Errorf("%s value: %w", name, err)
	}
	return op, nil
}

func (r *repartitionOp) Process(c *Change) error {
	r.rec = c.Record
	if c.Old != nil && c.New != nil {
		same, err := r.sameKey(c.Old, c.New)
		if err != nil {
			return err
		}
		if same {
			return r.writeBoth(c.Old, c.New, c.Timestamp)
		}
	}
	if c.Old != nil {
		// An old row that cannot be written (its key is NULL, or does not
		// evaluate) could not be written when it was new either: there is
		// nothing to take out.
		_ = r.write(c.Old, c.Timestamp, true)
	}
	if c.New != nil {
		return r.write(c.New, c.Timestamp, false)
	}
	return nil
}

// sameKey reports whether two rows go under the same non-NULL key.
func (r *repartitionOp) sameKey(x, y types.Row) (bool, error) {
	if err := r.evalKey(x); err != nil || anyNullRow(r.keyRow) {
		return false, nil // written as before: x's removal is skipped
	}
	var err error
	if r.oldKey, err = r.encodeKey(r.oldKey[:0], x); err != nil {
		return false, err
	}
	if err := r.evalKey(y); err != nil || anyNullRow(r.keyRow) {
		return false, nil
	}
	if r.newKey, err = r.encodeKey(r.newKey[:0], y); err != nil {
		return false, err
	}
	return string(r.oldKey) == string(r.newKey), nil
}

func (r *repartitionOp) evalKey(row types.Row) error {
	for i, ev := range r.keys {
		d, err := ev(row)
		if err != nil {
			return &evalError{node: r.name, err: err}
		}
		r.keyRow[i] = d
	}
	return nil
}

// writeBoth writes one record with the new row as its value and the old
// row in physical.OldValueHeader; r.newKey holds their key.
func (r *repartitionOp) writeBoth(old, row types.Row, ts int64) error {
	rec := r.out.record()
	start := len(r.out.arena)
	r.out.arena = append(r.out.arena, r.newKey...)
	keyEnd := len(r.out.arena)
	var err error
	if r.out.arena, err = r.value.Encode(r.out.arena, row); err != nil {
		return err
	}
	valueEnd := len(r.out.arena)
	if r.out.arena, err = r.value.Encode(r.out.arena, old); err != nil {
		return err
	}
	a := r.out.arena
	rec.Key = a[start:keyEnd:keyEnd]
	rec.Value = a[keyEnd:valueEnd:valueEnd]
	rec.Headers = []kgo.RecordHeader{{Key: physical.OldValueHeader, Value: a[valueEnd:len(a):len(a)]}}
	rec.Headers = r.out.userHeaders(rec.Headers, r.rec)
	rec.Topic = r.topic
	rec.Timestamp = time.UnixMilli(ts)
	r.out.produce(rec)
	return nil
}

func (r *repartitionOp) write(row types.Row, ts int64, undo bool) error {
	for i, ev := range r.keys {
		d, err := ev(row)
		if err != nil {
			return &evalError{node: r.name, err: err}
		}
		r.keyRow[i] = d
	}
	nullKey := anyNullRow(r.keyRow)
	if nullKey && !r.nullKeys {
		// ksqlDB drops rows whose GROUP BY key has a NULL.
		return fmt.Errorf("%w: the GROUP BY key is NULL", types.ErrBadRecord)
	}
	rec := r.out.record()
	start := len(r.out.arena)
	var err error
	if !nullKey {
		if r.out.arena, err = r.encodeKey(r.out.arena, row); err != nil {
			return err
		}
	}
	keyEnd := len(r.out.arena)
	if r.out.arena, err = r.value.Encode(r.out.arena, row); err != nil {
		return err
	}
	a := r.out.arena
	rec.Key = a[start:keyEnd:keyEnd]
	if nullKey {
		rec.Key = nil
	}
	rec.Value = a[keyEnd:len(a):len(a)]
	rec.Topic = r.topic
	rec.Timestamp = time.UnixMilli(ts)
	if undo {
		rec.Headers = undoHeaders
	}
	if user := r.out.userHeaders(nil, r.rec); len(user) > 0 {
		rec.Headers = append(append([]kgo.RecordHeader(nil), rec.Headers...), user...)
	}
	r.out.produce(rec)
	return nil
}

// encodeKey appends the key of row (evaluated into r.keyRow): the key
// columns, then for windowed rows the row's window.
func (r *repartitionOp) encodeKey(dst []byte, row types.Row) ([]byte, error) {
	out, err := r.key.Encode(dst, r.keyRow)
	if err != nil || r.window == types.NoWindow {
		return out, err
	}
	return r.window.AppendWindowKey(out, row[r.winCol].I, row[r.winCol+1].I), nil
}

// anyNullRow reports whether a GROUP BY key has a NULL column: ksqlDB
// drops such rows.
func anyNullRow(r types.Row) bool {
	for _, d := range r {
		if d.Null {
			return true
		}
	}
	return false
}
