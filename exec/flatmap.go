package exec

import (
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Operator = (*flatMapOp)(nil)

// flatMapOp applies table functions (EXPLODE): one output row per element
// of the longest result; shorter results give NULL in the later rows.
type flatMapOp struct {
	name    string
	in      int // input row length
	fns     []func([]types.Datum) []types.Datum
	args    [][]expr.Evaluator
	vals    [][]types.Datum // reused argument buffers
	results [][]types.Datum
	out     types.Row
	next    Operator
}

func (f *flatMapOp) Process(row types.Row) error {
	n := 0
	for i, fn := range f.fns {
		for j, ev := range f.args[i] {
			d, err := ev(row)
			if err != nil {
				return &evalError{node: f.name, err: err}
			}
			f.vals[i][j] = d
		}
		f.results[i] = fn(f.vals[i])
		n = max(n, len(f.results[i]))
	}
	copy(f.out[:f.in], row)
	for k := 0; k < n; k++ {
		for i, r := range f.results {
			if k < len(r) {
				f.out[f.in+i] = r[k]
			} else {
				f.out[f.in+i] = types.NullDatum
			}
		}
		if err := f.next.Process(f.out); err != nil {
			return err
		}
	}
	return nil
}
