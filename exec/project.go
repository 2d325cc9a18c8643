package exec

import (
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Processor = (*projectOp)(nil)

// projectOp computes its output rows, the new and the old, into reused
// buffers.
type projectOp struct {
	name   string
	exprs  []expr.Evaluator
	copies []datumCopy // per output column: which fields carry its value
	cols   []int       // per output column: the input column it is, or -1
	out    types.Row
	outOld types.Row
	change Change
	next   Processor
	// oldWithNew says whether next reads the old row of a change that
	// has a new one (0: not known yet, 1: it does, 2: it does not).
	oldWithNew uint8
}

// ignoresOldWithNew implements oldIgnorer: the old row is for next.
func (p *projectOp) ignoresOldWithNew() bool { return !p.nextReadsOld() }

func (p *projectOp) nextReadsOld() bool {
	if p.oldWithNew == 0 {
		p.oldWithNew = 2
		if readsOldWithNew(p.next) {
			p.oldWithNew = 1
		}
	}
	return p.oldWithNew == 1
}

func (p *projectOp) Process(c *Change) error {
	out := &p.change
	out.Timestamp, out.Record, out.New, out.Old = c.Timestamp, c.Record, nil, nil
	out.Windowed, out.WindowStart, out.WindowEnd = c.Windowed, c.WindowStart, c.WindowEnd
	out.NullValue, out.NewKey = c.NullValue, c.NewKey
	// The old row first: evaluators reuse their buffers, so its values
	// are copied before the new row's evaluation reuses them. Beside a
	// new row it is made only when next reads it.
	if c.Old != nil && (c.New == nil || p.nextReadsOld()) {
		for i, ev := range p.exprs {
			d, err := ev(c.Old)
			if err != nil {
				return &evalError{node: p.name, err: err}
			}
			if c.New != nil && p.cols[i] < 0 {
				// A column as it is lies in c.Old, which the new row's
				// evaluation leaves alone; a computed value may lie in
				// an evaluator's buffer.
				d = d.Clone()
			}
			p.outOld[i] = d
		}
		out.Old = p.outOld
	}
	if c.New != nil {
		row := c.New
		for i, ev := range p.exprs {
			if col := p.cols[i]; col >= 0 {
				p.copies[i].set(&p.out[i], &row[col]) // a column as it is: no call
				continue
			}
			d, err := ev(row)
			if err != nil {
				return &evalError{node: p.name, err: err}
			}
			p.copies[i].set(&p.out[i], &d)
		}
		out.New = p.out
	}
	return p.next.Process(out)
}

// datumCopy says which fields of a Datum carry a value of some type, so
// that a hot path copies those alone: a whole Datum holds two slices, and
// writing pointers while the garbage collector marks costs write
// barriers.
type datumCopy uint8

const (
	copyNumber datumCopy = iota // Null, I, F: BOOLEAN, numbers, temporal types
	copyBytes                   // Null, B: STRING, BYTES, wide DECIMAL
	copyAll                     // composites (and the untyped NULL)
)

func copyFor(t types.Type) datumCopy {
	if t.IsWideDecimal() {
		return copyBytes
	}
	switch t.Kind {
	case types.Boolean, types.Int, types.Bigint, types.Double, types.Decimal, types.Date, types.Time, types.Timestamp:
		return copyNumber
	case types.String, types.Bytes:
		return copyBytes
	}
	return copyAll
}

func (c datumCopy) set(dst, d *types.Datum) {
	switch c {
	case copyNumber:
		dst.Null, dst.I, dst.F = d.Null, d.I, d.F
	case copyBytes:
		dst.Null, dst.B = d.Null, d.B
	default:
		*dst = *d
	}
}
