package expr

import (
	"strconv"

	"github.com/sqlstreams/sqlstreams/types"
)

var _ Expr = (*Param)(nil)

// Params holds the values bound to a prepared statement's placeholders,
// Values[n-1] for $n. The statement's Param nodes read it when they are
// evaluated, so one compiled plan runs with each new set of values: a
// caller writes Values, then runs the plan; it must not write them while
// the plan runs.
type Params struct {
	Values []types.Datum
}

// Param is a placeholder ($N, or the N-th ?) of a prepared statement.
// Its type is inferred from where it stands (compared with a column, it
// has the column's type) or STRING, as Postgres takes an unknown
// parameter as text. It evaluates to the value bound to it, converted to
// its type by whoever binds it; NULL while none is.
type Param struct {
	N     int // 1-based
	T     types.Type
	Bound *Params
}

func (p *Param) Type() types.Type { return p.T }
func (p *Param) Children() []Expr { return nil }
func (p *Param) String() string   { return "$" + strconv.Itoa(p.N) }

// value is the bound value of p.
func (p *Param) value() types.Datum {
	if p.Bound == nil || p.N > len(p.Bound.Values) {
		return types.NullDatum
	}
	return p.Bound.Values[p.N-1]
}
