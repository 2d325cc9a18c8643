package exec

import (
	"fmt"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// Operator receives rows one at a time and passes them on. The row is
// valid only during the call.
type Operator interface {
	Process(row types.Row) error
}

// evalError marks an expression that failed on a record: the record is
// bad, the query goes on.
type evalError struct {
	node string
	err  error
}

func (e *evalError) Error() string { return fmt.Sprintf("%s: %v", e.node, e.err) }
func (e *evalError) Unwrap() error { return e.err }

// buildChain compiles a sub-topology's processors in front of last.
func buildChain(procs []physical.Processor, last Operator) (Operator, error) {
	return buildChainWith(procs, last, nil)
}

// buildChainWith is buildChain for chains with stateful processors:
// stateful makes the operator of each (an aggregate, given its task's
// store).
func buildChainWith(procs []physical.Processor, last Operator, stateful func(physical.Processor, Operator) (Operator, error)) (Operator, error) {
	next := last
	for i := len(procs) - 1; i >= 0; i-- {
		switch p := procs[i].(type) {
		case *physical.Aggregate:
			if stateful == nil {
				return nil, fmt.Errorf("%s needs a state store", p.Name)
			}
			op, err := stateful(p, next)
			if err != nil {
				return nil, err
			}
			next = op
		case *physical.Filter:
			ev, err := expr.Compile(p.Predicate)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.Name, err)
			}
			next = &filterOp{name: p.Name, pred: ev, next: next}
		case *physical.Project:
			op := &projectOp{name: p.Name, out: make(types.Row, len(p.Exprs)), next: next}
			for _, e := range p.Exprs {
				ev, err := expr.Compile(e)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", p.Name, err)
				}
				op.exprs = append(op.exprs, ev)
				op.copies = append(op.copies, copyFor(e.Type()))
				col := -1
				if c, ok := e.(*expr.Column); ok {
					col = c.Index
				}
				op.cols = append(op.cols, col)
			}
			next = op
		case *physical.FlatMap:
			op := &flatMapOp{name: p.Name, in: len(p.Out.Columns) - len(p.Fns), out: make(types.Row, len(p.Out.Columns)), next: next}
			for i, fn := range p.Fns {
				var evs []expr.Evaluator
				for _, a := range p.Args[i] {
					ev, err := expr.Compile(a)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", p.Name, err)
					}
					evs = append(evs, ev)
				}
				op.fns = append(op.fns, fn.Expand)
				op.args = append(op.args, evs)
				op.vals = append(op.vals, make([]types.Datum, len(evs)))
			}
			op.results = make([][]types.Datum, len(p.Fns))
			next = op
		case *physical.Rekey:
			in := len(p.Out.Columns)
			op := &rekeyOp{name: p.Name, out: make(types.Row, in), next: next}
			for i, e := range p.Exprs {
				if c, ok := e.(*expr.Column); ok && c.Index == p.Keys[i] {
					continue // the key is an existing column
				}
				ev, err := expr.Compile(e)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", p.Name, err)
				}
				op.exprs = append(op.exprs, ev)
				op.slots = append(op.slots, p.Keys[i])
				in--
			}
			op.in = in
			next = op
		default:
			return nil, fmt.Errorf("processor %T is not supported", p)
		}
	}
	return next, nil
}
