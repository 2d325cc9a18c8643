package exec

import (
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Processor = (*filterOp)(nil)

// filterOp passes a row on when its predicate is true (not NULL, not
// false). Of a table change it passes each side that holds: a new row
// that fails becomes the old row's deletion, and a change neither side
// of which holds is dropped.
type filterOp struct {
	name   string
	pred   expr.Evaluator
	change Change
	next   Processor
}

func (f *filterOp) holds(row types.Row) (bool, error) {
	d, err := f.pred(row)
	if err != nil {
		return false, &evalError{node: f.name, err: err}
	}
	return !d.Null && d.I != 0, nil
}

func (f *filterOp) Process(c *Change) error {
	if c.NullValue {
		return nil // ksqlDB's filters drop null values
	}
	if c.Old == nil { // a stream's row, or a row of a new key
		if c.New == nil {
			return f.next.Process(c)
		}
		d, err := f.pred(c.New)
		if err != nil {
			return &evalError{node: f.name, err: err}
		}
		if d.Null || d.I == 0 {
			return nil
		}
		return f.next.Process(c)
	}
	out := &f.change
	*out = *c
	if ok, err := f.holds(c.Old); err != nil {
		return err
	} else if !ok {
		out.Old = nil
	}
	if c.New != nil {
		if ok, err := f.holds(c.New); err != nil {
			return err
		} else if !ok {
			out.New = nil
		}
	}
	if out.Old == nil && out.New == nil {
		return nil
	}
	return f.next.Process(out)
}
