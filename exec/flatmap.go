package exec

import (
	"fmt"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Processor = (*flatMapOp)(nil)

// flatMapOp applies table functions (EXPLODE): one output row per element
// of the longest result; shorter results give NULL in the later rows.
// It reads streams: a change with an old row is refused.
type flatMapOp struct {
	name    string
	in      int // input row length
	fns     []func([]types.Datum) []types.Datum
	args    [][]expr.Evaluator
	vals    [][]types.Datum // reused argument buffers
	results [][]types.Datum
	out     types.Row
	change  Change
	next    Processor
}

func (f *flatMapOp) Process(c *Change) error {
	if c.Old != nil {
		return fmt.Errorf("%s: table functions apply to streams, not to a table's changes", f.name)
	}
	row := c.New
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
	out := &f.change
	*out = Change{New: f.out, Timestamp: c.Timestamp, Record: c.Record}
	for k := 0; k < n; k++ {
		for i, r := range f.results {
			if k < len(r) {
				f.out[f.in+i] = r[k]
			} else {
				f.out[f.in+i] = types.NullDatum
			}
		}
		if err := f.next.Process(out); err != nil {
			return err
		}
	}
	return nil
}
