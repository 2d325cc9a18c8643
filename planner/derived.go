package planner

import "github.com/sqlstreams/sqlstreams/types"

var _ Node = (*Derived)(nil)

// Derived is a derived table (FROM (SELECT …) alias), a common table
// expression's reference (WITH a AS (…) … FROM a) or a view's: the rows
// of Input under Alias. It is an identity over its input, kept in the
// bound plan so that EXPLAIN and the planner's rules see where the
// query's parts came from; the FlattenDerived rule removes it.
type Derived struct {
	Input Node
	Alias string
	// Kind says what the name is: "SUBQUERY", "CTE" or "VIEW".
	Kind string
}

func (d *Derived) Schema() types.Schema { return d.Input.Schema() }
func (d *Derived) Children() []Node     { return []Node{d.Input} }
func (d *Derived) String() string       { return "Derived " + d.Kind + " " + d.Alias }

// IsTable reports whether n's rows are a table's (each a change of its
// key's row): a table's scan, an aggregation, or a filter or projection
// of one. A join's is its own decision (Join.OfTables).
func IsTable(n Node) bool {
	for {
		switch x := n.(type) {
		case *Scan:
			return x.OfTable()
		case *Aggregate:
			return true
		case *Join:
			return x.OfTables()
		case *Union:
			return x.Tables
		}
		ch := n.Children()
		if len(ch) != 1 {
			return false
		}
		n = ch[0]
	}
}

// overGlobal reports whether n is a global aggregation, or its HAVING.
func overGlobal(n Node) bool {
	for {
		switch x := n.(type) {
		case *Aggregate:
			return x.Global
		case *Filter:
			n = x.Input
		default:
			return false
		}
	}
}
