package planner

import (
	"fmt"

	"github.com/sqlstreams/sqlstreams/types"
)

var _ Node = (*Union)(nil)

// Union is UNION ALL: every row of every input, as it comes. The inputs'
// rows have the same layout (column types, key columns at the same
// positions); the result takes the first input's column names. The
// binder checks them (NewUnion too).
//
// A union of tables (Tables) is the input of an aggregation: each
// branch's changes (a row's old and new value) feed the aggregation as
// they come. Its rows have no key (their tables' keys may collide): its
// columns are all value columns, and only their types must match.
type Union struct {
	Inputs []Node
	Tables bool
	out    types.Schema
}

// NewTableUnion checks that inputs, each of a table, have one layout of
// column types and returns their union, whose columns are all values.
func NewTableUnion(inputs []Node) (*Union, error) {
	first := inputs[0].Schema()
	for i, in := range inputs {
		if !IsTable(in) {
			return nil, fmt.Errorf("UNION ALL of tables: input %d is not a table", i+1)
		}
		s := in.Schema()
		if len(s.Columns) != len(first.Columns) {
			return nil, fmt.Errorf("UNION ALL: input %d has %d columns, input 1 has %d", i+1, len(s.Columns), len(first.Columns))
		}
		for j, c := range s.Columns {
			if f := first.Columns[j]; c.Type.String() != f.Type.String() {
				return nil, fmt.Errorf("UNION ALL: column %d of input %d (%s) does not match input 1's (%s)", j+1, i+1, c.Name, f.Name)
			}
		}
	}
	cols := make([]types.Column, len(first.Columns))
	copy(cols, first.Columns)
	for i := range cols {
		cols[i].Key = false
	}
	return &Union{Inputs: inputs, Tables: true, out: types.Schema{Columns: cols}}, nil
}

// NewUnion checks that inputs have one layout and returns their union.
func NewUnion(inputs []Node) (*Union, error) {
	first := inputs[0].Schema()
	for i, in := range inputs[1:] {
		s := in.Schema()
		if len(s.Columns) != len(first.Columns) {
			return nil, fmt.Errorf("UNION ALL: input %d has %d columns, input 1 has %d", i+2, len(s.Columns), len(first.Columns))
		}
		for j, c := range s.Columns {
			f := first.Columns[j]
			if c.Type.String() != f.Type.String() || c.Key != f.Key {
				return nil, fmt.Errorf("UNION ALL: column %d of input %d (%s) does not match input 1's (%s)", j+1, i+2, c.Name, f.Name)
			}
		}
	}
	return &Union{Inputs: inputs, out: first}, nil
}

func (u *Union) Schema() types.Schema { return u.out }
func (u *Union) Children() []Node     { return u.Inputs }
func (u *Union) String() string {
	if u.Tables {
		return fmt.Sprintf("Union ALL of %d tables' changes", len(u.Inputs))
	}
	return fmt.Sprintf("Union ALL of %d inputs", len(u.Inputs))
}
