package exec

import (
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Operator = (*rekeyOp)(nil)

// rekeyOp (PARTITION BY) copies its input row and computes the key columns
// that are not plain input columns into the slots after it. The sink then
// writes the new key columns into the record key.
type rekeyOp struct {
	name  string
	in    int // input row length
	exprs []expr.Evaluator
	slots []int
	out   types.Row
	next  Operator
}

func (r *rekeyOp) Process(row types.Row) error {
	copy(r.out[:r.in], row)
	for i, ev := range r.exprs {
		d, err := ev(row)
		if err != nil {
			return &evalError{node: r.name, err: err}
		}
		r.out[r.slots[i]] = d
	}
	return r.next.Process(r.out)
}
