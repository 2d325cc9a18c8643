package exec

import (
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Operator = (*projectOp)(nil)

// projectOp computes its output row into a reused buffer.
type projectOp struct {
	name  string
	exprs []expr.Evaluator
	out   types.Row
	next  Operator
}

// Delete passes a deletion on with the projected key columns.
func (p *projectOp) Delete(row types.Row) error {
	for i, ev := range p.exprs {
		d, err := ev(row)
		if err != nil {
			return &evalError{node: p.name, err: err}
		}
		p.out[i] = d
	}
	return p.next.(deleter).Delete(p.out)
}

func (p *projectOp) Process(row types.Row) error {
	for i, ev := range p.exprs {
		d, err := ev(row)
		if err != nil {
			return &evalError{node: p.name, err: err}
		}
		p.out[i] = d
	}
	return p.next.Process(p.out)
}
