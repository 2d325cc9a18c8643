package exec

import "github.com/sqlstreams/sqlstreams/types"

// SQL's aggregation semantics (physical.Aggregate.Changes and DropEmpty),
// for queries in the SQL dialect.

// captureOld keeps the group's row before this change (its key columns
// in a.row, its state split into a.parts; rows, of a table's
// aggregation, its row count) in a.oldRow, for the change emitted: none
// when the group was empty, new, or failed HAVING. Bytes are copied into
// buffers of the operator's, as the state they point into is rewritten.
func (a *aggregateOp) captureOld(prev []byte, rows uint64) error {
	a.captured = true
	a.hasOld = len(prev) > 0 && (!a.fromTable || rows > 0)
	if !a.hasOld {
		return nil
	}
	if a.win != nil {
		a.win.setBounds(a) // the window's bounds, in the row's key columns
	}
	g := a.aggAt
	for i := 0; i < g; i++ {
		a.setOld(i, &a.row[i])
	}
	for j, acc := range a.accs {
		d := acc.Result(a.parts[j])
		a.setOld(g+j, &d)
	}
	if a.having != nil {
		d, err := a.having(a.oldRow)
		if err != nil {
			return &evalError{node: a.name, err: err}
		}
		a.hasOld = d.Bool()
	}
	return nil
}

// setOld copies d into column i of a.oldRow.
func (a *aggregateOp) setOld(i int, d *types.Datum) {
	switch a.copies[i] {
	case copyBytes:
		a.oldBufs[i] = append(a.oldBufs[i][:0], d.B...)
		a.oldRow[i].Null, a.oldRow[i].B = d.Null, a.oldBufs[i]
	case copyNumber:
		a.copies[i].set(&a.oldRow[i], d)
	default:
		a.oldRow[i] = d.Clone()
	}
}

// dropGroup deletes the group of a.key, whose last row left (SQL's
// semantics: no COUNT 0 row), and emits its deletion unless the new
// row's fold of the same change follows.
func (a *aggregateOp) dropGroup(gr *group) error {
	gr = a.changedGroup(gr)
	gr.deleted, gr.state = true, gr.state[:0]
	if a.quiet {
		return nil
	}
	if a.having != nil && !a.prevOut && !a.changes {
		return nil // not in the result
	}
	return a.emitDeletion()
}
