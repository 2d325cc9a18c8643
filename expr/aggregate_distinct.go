package expr

import "github.com/sqlstreams/sqlstreams/types"

// SQL's distinct aggregates: COUNT(DISTINCT x) and SUM(DISTINCT x),
// exact. Their state per group is each distinct non-NULL value with the
// number of the group's rows that hold it (countedAcc's), so that taking
// a row of a table back out forgets its value only when no other row of
// the group holds it. COUNT(DISTINCT x) is COUNT_DISTINCT (exact here, up
// to 1,000,000 values a group); SUM(DISTINCT x) is SUM's "distinct"
// variant (AggregateFunction.Variant), which plans record.

// DistinctAggregate returns the definition of name(DISTINCT x): false
// for an aggregate that has none.
func DistinctAggregate(name string) (*AggregateFunction, bool) {
	switch name {
	case "COUNT":
		return LookupAggregate("COUNT_DISTINCT")
	case "SUM":
		return sumDistinct, true
	}
	return nil, false
}

var sumDistinct = &AggregateFunction{
	Name:        "SUM",
	Variant:     "distinct",
	Description: "SUM(DISTINCT x): the sum of the distinct non-NULL values (NULL when none).",
	Signatures:  []string{"SUM(DISTINCT INT|BIGINT|DOUBLE) -> the argument's type"},
	Check: func(args []types.Type) (types.Type, error) {
		if len(args) != 1 {
			return types.Type{}, typeErrorf("function SUM(DISTINCT …) takes one argument")
		}
		switch args[0].Kind {
		case types.Int, types.Bigint, types.Double:
			return args[0], nil
		}
		return types.Type{}, typeErrorf("function SUM(DISTINCT …) does not accept %s", describeArgs(args))
	},
	New:           newSumDistinct,
	NewRetracting: newSumDistinct,
}

func newSumDistinct(args []types.Type) Accumulator {
	return &sumDistinctAcc{countedAcc: countedAcc{attrAcc: attrAcc{t: args[0], limit: 1_000_000}, count: true}}
}

// sumDistinctAcc sums the values of a countedAcc's state.
type sumDistinctAcc struct {
	countedAcc
}

var (
	_ Undoer = (*sumDistinctAcc)(nil)
	_ Merger = (*sumDistinctAcc)(nil)
)

func (s *sumDistinctAcc) Result(st []byte) types.Datum {
	var i int64
	var f float64
	n := 0
	for b := st; ; {
		e, _, rest, ok := s.entry(b)
		if !ok {
			break
		}
		if e[0] == 1 {
			d, _ := readValue(e[1:], s.t)
			i += d.I
			f += d.F
			n++
		}
		b = rest
	}
	if n == 0 {
		return types.NullDatum
	}
	if s.t.Kind == types.Double {
		return types.DoubleDatum(f)
	}
	return types.IntDatum(i)
}
