package exec

import (
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Operator = (*filterOp)(nil)

// filterOp passes a row on when its predicate is true (not NULL, not false).
type filterOp struct {
	name string
	pred expr.Evaluator
	next Operator
}

func (f *filterOp) Process(row types.Row) error {
	d, err := f.pred(row)
	if err != nil {
		return &evalError{node: f.name, err: err}
	}
	if d.Null || d.I == 0 {
		return nil
	}
	return f.next.Process(row)
}
