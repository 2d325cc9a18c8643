package exec

import (
	"fmt"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Processor = (*rekeyOp)(nil)

// rekeyOp (PARTITION BY) copies its input row and computes the key columns
// that are not plain input columns into the slots after it. The sink then
// writes the new key columns into the record key. It reads streams.
type rekeyOp struct {
	name   string
	in     int // input row length
	exprs  []expr.Evaluator
	slots  []int
	out    types.Row
	change Change
	next   Processor
}

func (r *rekeyOp) Process(c *Change) error {
	if c.Old != nil {
		return fmt.Errorf("%s: PARTITION BY applies to streams, not to a table's changes", r.name)
	}
	copy(r.out[:r.in], c.New)
	for i, ev := range r.exprs {
		d, err := ev(c.New)
		if err != nil {
			return &evalError{node: r.name, err: err}
		}
		r.out[r.slots[i]] = d
	}
	out := &r.change
	*out = Change{New: r.out, Timestamp: c.Timestamp, Record: c.Record, NullValue: c.NullValue, NewKey: true}
	return r.next.Process(out)
}
