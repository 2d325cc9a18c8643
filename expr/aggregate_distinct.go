package expr

import (
	"encoding/binary"
	"math"

	"github.com/sqlstreams/sqlstreams/types"
)

// SQL's distinct aggregates: COUNT(DISTINCT x) and SUM(DISTINCT x),
// exact. COUNT(DISTINCT x) is COUNT_DISTINCT; SUM(DISTINCT x) is SUM's
// "distinct" variant (AggregateFunction.Variant), which plans record.
//
// Their state takes one of two layouts, which plans record
// (physical.Aggregate.DistinctStore):
//   - Values apart (DistinctValues; aggregations planned since it, time
//     windows' per window, sessions' per session): each distinct value
//     of a group is an entry of a store of its own with the number of
//     the group's rows holding it, and the group's state is only a
//     count (and a sum). A record costs the same however many values
//     its group has (but a row merging sessions, which moves entries).
//   - Values in the group's state (plans recorded before): each
//     distinct non-NULL value with the number of the
//     group's rows that hold it (countedAcc's; setAcc's over a stream),
//     so that taking a row of a table back out forgets its value only
//     when no other row of the group holds it; up to 1,000,000 values a
//     group, and each record rewrites them all.

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

// DistinctValues is the accumulator of a distinct aggregate whose
// distinct values are kept apart from its group's state, one entry per
// group and value holding how many of the group's rows hold it (exec's
// distinct-value store, physical.Aggregate.DistinctStore), as Flink's
// distinct views and RisingWave's dedup tables keep them. The group's
// state is then only what its distinct values add up to: a count (and a
// sum), a few bytes however many values the group has. Add is given a
// value when its first row arrives in the group, Undo when its last row
// leaves; the caller keeps the counts per value.
type DistinctValues interface {
	Accumulator
	Undoer
	// Value appends the encoding of the row's value to dst (equal bytes
	// for equal values), or reports false for NULL, which the aggregate
	// leaves out.
	Value(dst []byte, args []types.Datum) ([]byte, bool)
	// AddValue is Add of the value Value encoded as v: a session that
	// merges into another adds the values the other lacks.
	AddValue(dst, st, v []byte) []byte
}

// NewDistinctValues returns the DistinctValues accumulator of fn for
// the argument types: false when fn is not an exact distinct aggregate
// (COUNT(DISTINCT x) and COUNT_DISTINCT, SUM(DISTINCT x)).
func NewDistinctValues(fn *AggregateFunction, args []types.Type) (DistinctValues, bool) {
	if len(args) != 1 {
		return nil, false
	}
	switch {
	case fn.Name == "COUNT_DISTINCT" && fn.Variant == "":
		return &distinctCountAcc{t: args[0]}, true
	case fn.Name == "SUM" && fn.Variant == "distinct":
		return &distinctSumAcc{distinctCountAcc{t: args[0]}}, true
	}
	return nil, false
}

// IsDistinctValues reports whether fn has a DistinctValues accumulator.
func IsDistinctValues(fn *AggregateFunction) bool {
	return (fn.Name == "COUNT_DISTINCT" && fn.Variant == "") || (fn.Name == "SUM" && fn.Variant == "distinct")
}

// distinctCountAcc is COUNT(DISTINCT x) over values kept apart: its
// state is the number of distinct values, 8 bytes big endian (none: 0).
type distinctCountAcc struct{ t types.Type }

var _ DistinctValues = (*distinctCountAcc)(nil)

func (c *distinctCountAcc) Value(dst []byte, args []types.Datum) ([]byte, bool) {
	if args[0].Null {
		return dst, false
	}
	return appendValue(dst, args[0], c.t), true
}

func distinctCount(st []byte) uint64 {
	if len(st) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(st)
}

func (c *distinctCountAcc) Add(dst, st []byte, args []types.Datum) []byte {
	return binary.BigEndian.AppendUint64(dst, distinctCount(st)+1)
}

func (c *distinctCountAcc) AddValue(dst, st, v []byte) []byte {
	return binary.BigEndian.AppendUint64(dst, distinctCount(st)+1)
}

func (c *distinctCountAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	n := distinctCount(st)
	if n > 0 {
		n--
	}
	return binary.BigEndian.AppendUint64(dst, n)
}

func (c *distinctCountAcc) Result(st []byte) types.Datum {
	return types.IntDatum(int64(distinctCount(st)))
}

// distinctSumAcc is SUM(DISTINCT x) over values kept apart: its state is
// the number of distinct values, then their sum (an int64, or a float64
// for DOUBLE), 8 bytes each big endian; NULL when there are none.
type distinctSumAcc struct{ distinctCountAcc }

func (s *distinctSumAcc) fold(dst, st []byte, d types.Datum, sign int64) []byte {
	n := distinctCount(st)
	var sum uint64
	if len(st) >= 16 {
		sum = binary.BigEndian.Uint64(st[8:])
	}
	switch {
	case sign < 0 && n == 0:
	case s.t.Kind == types.Double:
		sum = math.Float64bits(math.Float64frombits(sum) + float64(sign)*d.F)
		n = uint64(int64(n) + sign)
	default:
		sum = uint64(int64(sum) + sign*d.I)
		n = uint64(int64(n) + sign)
	}
	if n == 0 {
		sum = 0 // no float residue once the last value is gone
	}
	dst = binary.BigEndian.AppendUint64(dst, n)
	return binary.BigEndian.AppendUint64(dst, sum)
}

func (s *distinctSumAcc) Add(dst, st []byte, args []types.Datum) []byte {
	return s.fold(dst, st, args[0], 1)
}

func (s *distinctSumAcc) AddValue(dst, st, v []byte) []byte {
	d, _ := readValue(v, s.t)
	return s.fold(dst, st, d, 1)
}

func (s *distinctSumAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	return s.fold(dst, st, args[0], -1)
}

func (s *distinctSumAcc) Result(st []byte) types.Datum {
	if distinctCount(st) == 0 || len(st) < 16 {
		return types.NullDatum
	}
	v := binary.BigEndian.Uint64(st[8:])
	if s.t.Kind == types.Double {
		return types.DoubleDatum(math.Float64frombits(v))
	}
	return types.IntDatum(int64(v))
}
