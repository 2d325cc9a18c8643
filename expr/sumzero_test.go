package expr

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/types"
)

// TestKsqlSumZero checks that ksqlDB's SUM is 0 for a group whose values
// are all NULL (a LEFT join's missing side), for each type it sums that
// way, while KsqlSum, which commands recorded before use, stays NULL.
func TestKsqlSumZero(t *testing.T) {
	null := []types.Datum{types.NullDatum}
	for _, c := range []struct {
		t    types.Type
		five types.Datum
		zero types.Datum
	}{
		{types.IntType, types.IntDatum(5), types.IntDatum(0)},
		{types.BigintType, types.IntDatum(5), types.IntDatum(0)},
		{types.DoubleType, types.DoubleDatum(5), types.DoubleDatum(0)},
		{types.Type{Kind: types.Decimal, Precision: 10, Scale: 2}, types.IntDatum(500), types.IntDatum(0)},
	} {
		acc := KsqlSumZero.New([]types.Type{c.t})
		st := acc.Add(nil, nil, null)
		if got := acc.Result(st); got.Null || got.I != c.zero.I || got.F != c.zero.F {
			t.Errorf("SUM(%s) of NULL = %+v, want 0", c.t, got)
		}
		st = acc.Add(nil, st, []types.Datum{c.five})
		st = acc.(Undoer).Undo(nil, st, []types.Datum{c.five})
		if got := acc.Result(st); got.Null || got.I != 0 || got.F != 0 {
			t.Errorf("SUM(%s) after 5 was taken back = %+v, want 0", c.t, got)
		}
		old := KsqlSum.New([]types.Type{c.t})
		if got := old.Result(old.Add(nil, nil, null)); !got.Null {
			t.Errorf("KsqlSum(%s) of NULL = %+v, want NULL (commands recorded before)", c.t, got)
		}
	}
}
