package exec

import (
	"fmt"
	"time"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Operator = (*repartitionOp)(nil)

// repartitionOp writes each row to an internal topic keyed by the row's
// new key, so that the next sub-topology sees every row of one key in one
// partition. The value carries the row's columns unchanged.
type repartitionOp struct {
	name   string
	topic  string
	keys   []expr.Evaluator
	keyRow types.Row
	key    types.Encoder
	value  types.Encoder
	out    *outbox
	ts     *time.Time
	undo   *bool // set while a table row's removal runs through the chain
}

func newRepartition(r *physical.Repartition, out *outbox, ts *time.Time, undo *bool) (*repartitionOp, error) {
	op := &repartitionOp{name: r.Name, topic: r.Topic, keyRow: make(types.Row, len(r.KeyExprs)), out: out, ts: ts, undo: undo}
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
	if op.key, err = types.NewEncoder(r.KeyFormat, r.KeySchema, idx); err != nil {
		return nil, fmt.Errorf("%s key: %w", r.Name, err)
	}
	var cols []int
	for i, c := range r.Schema.Columns {
		if !c.Pseudo {
			cols = append(cols, i)
		}
	}
	// Repartition values are JSON objects (one column is wrapped too, by
	// default), so the next sub-topology reads them by name.
	if op.value, err = types.NewEncoder(types.FormatJSON, r.Schema, cols); err != nil {
		return nil, fmt.Errorf("%s value: %w", r.Name, err)
	}
	return op, nil
}

func (r *repartitionOp) Process(row types.Row) error {
	for i, ev := range r.keys {
		d, err := ev(row)
		if err != nil {
			return &evalError{node: r.name, err: err}
		}
		r.keyRow[i] = d
	}
	rec := r.out.record()
	start := len(r.out.arena)
	var err error
	if !allNullRow(r.keyRow) {
		if r.out.arena, err = r.key.Encode(r.out.arena, r.keyRow); err != nil {
			return err
		}
	} else {
		// ksqlDB drops rows whose GROUP BY key is NULL.
		r.out.used--
		return fmt.Errorf("%w: the GROUP BY key is NULL", types.ErrBadRecord)
	}
	keyEnd := len(r.out.arena)
	if r.out.arena, err = r.value.Encode(r.out.arena, row); err != nil {
		return err
	}
	a := r.out.arena
	rec.Key = a[start:keyEnd:keyEnd]
	rec.Value = a[keyEnd:len(a):len(a)]
	rec.Topic = r.topic
	rec.Timestamp = *r.ts
	if *r.undo {
		rec.Headers = undoHeaders
	}
	r.out.produce(rec)
	return nil
}

func allNullRow(r types.Row) bool {
	for _, d := range r {
		if !d.Null {
			return false
		}
	}
	return true
}
