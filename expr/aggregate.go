package expr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// AggregateFunction is an aggregate (COUNT, SUM, …) in the registry.
// Aggregates keep their running state as bytes, so that state stores and
// changelogs hold it compactly; an empty state is the initial one.
type AggregateFunction struct {
	Name        string
	Description string
	Signatures  []string
	// Check returns the result type for the argument types (none for
	// COUNT(*)), or a *TypeError.
	Check func(args []types.Type) (types.Type, error)
	// New returns the accumulator for checked argument types.
	New func(args []types.Type) Accumulator
	// CompositeState: ksqlDB keeps this aggregate's intermediate value as
	// a STRUCT, ARRAY or MAP, which its DELIMITED format cannot store, so
	// it refuses the aggregate over a DELIMITED source.
	CompositeState bool
	// LiteralFrom, when above 0, is the position (0-based) from which
	// the arguments must be literal constants, as ksqlDB's UDAF
	// initialisation arguments are.
	LiteralFrom int
	// NewRetracting, when set, returns the accumulator the aggregate
	// uses over a table (ForTable): New's state, enough for a stream,
	// cannot take a row back out correctly. Its state format differs
	// from New's.
	NewRetracting func(args []types.Type) Accumulator
	// Variant names which definition of Name this is, so that a
	// persisted plan names it (ResolveAggregate finds it again): "" the
	// registry's, "ksql" KsqlSum, "ksql-zero" KsqlSumZero, "legacy"
	// LookupLegacyAggregate's, "limit=N" CollectWithLimit's.
	Variant string
	// Retracting marks the definition ForTable made (its accumulator is
	// the retracting one).
	Retracting bool
}

// ForTable returns the definition of f that aggregates a table: f, or a
// copy of it whose accumulator is NewRetracting's. The binder uses it for
// statements recorded since distinct aggregates kept a count per value
// over tables; those recorded before keep New's state, which their
// stores hold.
func (f *AggregateFunction) ForTable() *AggregateFunction {
	if f.NewRetracting == nil {
		return f
	}
	g := *f
	g.New, g.NewRetracting, g.Retracting = f.NewRetracting, nil, true
	return &g
}

// Accumulator folds rows into an aggregate's state. It may keep scratch
// state and is not safe for concurrent use.
type Accumulator interface {
	// Add folds one row's argument values into state (empty: the initial
	// state) and appends the new state to dst.
	Add(dst, state []byte, args []types.Datum) []byte
	// Result is the aggregate's value for state; its bytes are valid
	// until the next call.
	Result(state []byte) types.Datum
}

// Checker is an Accumulator whose fold can fail for a row: a DECIMAL SUM
// that no longer fits its type. The caller checks each state Add or Undo
// returned; an error makes the row a bad record, and the group keeps its
// previous state.
type Checker interface {
	Check(state []byte) error
}

// KsqlSum is SUM as ksqlDB types it: SUM(DECIMAL(p, s)) is DECIMAL(p, s)
// and a sum that does not fit p digits fails its row ("numeric field
// overflow", a Checker); other types as SUM. The binder uses it for new
// statements. SUM in the registry keeps DECIMAL(18, s) for short
// decimals, whose sum turns NULL on overflow, for statements recorded
// before (their output must not change).
var KsqlSum = ksqlSum(false)

// KsqlSumZero is KsqlSum that is 0, not NULL, for a group with no
// non-NULL values yet (INTEGER, BIGINT, DOUBLE and DECIMAL up to 18
// digits), as ksqlDB's SUM starts from 0: a LEFT join's missing values
// sum to 0. The binder uses it for statements recorded since; those
// recorded before keep KsqlSum.
var KsqlSumZero = ksqlSum(true)

func ksqlSum(zero bool) *AggregateFunction {
	variant := "ksql"
	if zero {
		variant = "ksql-zero"
	}
	return &AggregateFunction{
		Name:        "SUM",
		Variant:     variant,
		Description: baseAggregates["SUM"].Description,
		Signatures:  []string{"SUM(INTEGER) -> INTEGER", "SUM(BIGINT) -> BIGINT", "SUM(DOUBLE) -> DOUBLE", "SUM(DECIMAL(p, s)) -> DECIMAL(p, s)"},
		Check: func(args []types.Type) (types.Type, error) {
			t, err := baseAggregates["SUM"].Check(args)
			if err == nil && args[0].Kind == types.Decimal {
				t = args[0]
			}
			return t, err
		},
		New: func(args []types.Type) Accumulator {
			if args[0].Kind == types.Decimal && !isWide(args[0]) {
				return &checkedSumAcc{sumAcc{t: args[0], checked: true, zero: zero}}
			}
			if zero && !isWide(args[0]) {
				return &sumAcc{t: args[0], zero: true}
			}
			return baseAggregates["SUM"].New(args)
		},
	}
}

// LookupAggregate finds an aggregate function by name, case-insensitively.
func LookupAggregate(name string) (*AggregateFunction, bool) {
	f, ok := aggregates[strings.ToUpper(name)]
	return f, ok
}

// Aggregates returns every aggregate function, sorted by name.
func Aggregates() []*AggregateFunction {
	out := make([]*AggregateFunction, 0, len(aggregates))
	for _, f := range aggregates {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

var aggregates = func() map[string]*AggregateFunction {
	m := baseAggregates
	for _, f := range moreAggregates() {
		m[f.Name] = f
	}
	m["STDDEV_SAMPLE"] = stddevSample()
	m["SUM_LIST"] = sumList()
	m["EARLIEST_BY_OFFSET"].LiteralFrom, m["LATEST_BY_OFFSET"].LiteralFrom = 1, 1
	for _, name := range []string{"AVG", "STDDEV_SAMP", "STDDEV_SAMPLE", "CORRELATION", "COLLECT_LIST", "COLLECT_SET",
		"TOPK", "TOPKDISTINCT", "HISTOGRAM", "COUNT_DISTINCT", "LATEST_BY_OFFSET", "EARLIEST_BY_OFFSET"} {
		m[name].CompositeState = true
	}
	return m
}()

// ResolveAggregate returns the definition of aggregate name that variant
// (AggregateFunction.Variant) names, made retracting (ForTable) when
// retracting is set: what a persisted plan recorded.
func ResolveAggregate(name, variant string, retracting bool) (*AggregateFunction, error) {
	var f *AggregateFunction
	var ok bool
	switch {
	case variant == "":
		f, ok = LookupAggregate(name)
	case variant == "ksql" && name == "SUM":
		f, ok = KsqlSum, true
	case variant == "ksql-zero" && name == "SUM":
		f, ok = KsqlSumZero, true
	case variant == "distinct":
		f, ok = DistinctAggregate(name)
	case variant == "legacy":
		f, ok = LookupLegacyAggregate(name)
	case strings.HasPrefix(variant, "limit="):
		n, err := strconv.Atoi(strings.TrimPrefix(variant, "limit="))
		if err == nil {
			f, ok = CollectWithLimit(name, n)
		}
	}
	if !ok {
		return nil, fmt.Errorf("no aggregate function %s (variant %q)", name, variant)
	}
	if retracting {
		if f.NewRetracting == nil {
			return nil, fmt.Errorf("aggregate function %s (variant %q) has no retracting form", name, variant)
		}
		f = f.ForTable()
	}
	return f, nil
}

// LookupLegacyAggregate finds the definition an aggregate had before it
// followed ksqlDB's results (STDDEV_SAMP and STDDEV_SAMPLE both the
// standard deviation by Welford's method, CORRELATION NULL when undefined
// and refusing tables, COLLECT_SET leaving NULL out), for queries
// recorded before; false when name has not changed.
func LookupLegacyAggregate(name string) (*AggregateFunction, bool) {
	f, ok := legacyAggregates[strings.ToUpper(name)]
	return f, ok
}

var legacyAggregates = func() map[string]*AggregateFunction {
	std := &AggregateFunction{
		Name:        "STDDEV_SAMP",
		Description: "The sample standard deviation of the non-NULL values.",
		Signatures:  []string{"STDDEV_SAMP(INTEGER | BIGINT | DOUBLE | DECIMAL) -> DOUBLE"},
		Check:       aggregates["STDDEV_SAMP"].Check,
		New:         func(args []types.Type) Accumulator { return &momentsAcc{ts: args} },
	}
	sample := *std
	sample.Name = "STDDEV_SAMPLE"
	corr := *aggregates["CORRELATION"]
	corr.Description = "The Pearson correlation of the pairs where both values are non-NULL."
	corr.New = func(args []types.Type) Accumulator { return &momentsAcc{ts: args} }
	set := *aggregates["COLLECT_SET"]
	set.Description = "Collects the distinct non-NULL values into an ARRAY (in the order first seen, at most 1,000)."
	set.New = func(args []types.Type) Accumulator { return &setAcc{t: args[0], limit: CollectLimit, ordered: true} }
	m := map[string]*AggregateFunction{std.Name: std, sample.Name: &sample, corr.Name: &corr, set.Name: &set}
	for _, f := range m {
		f.Variant = "legacy"
	}
	return m
}()

var baseAggregates = map[string]*AggregateFunction{
	"COUNT": {
		Name:        "COUNT",
		Description: "Counts rows (COUNT(*)) or the rows where the argument is not NULL.",
		Signatures:  []string{"COUNT(*) -> BIGINT", "COUNT(T) -> BIGINT"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) > 1 {
				return types.Type{}, typeErrorf("function COUNT takes at most one argument")
			}
			return types.BigintType, nil
		},
		New: func(args []types.Type) Accumulator { return countAcc{star: len(args) == 0} },
	},
	"SUM": {
		Name:        "SUM",
		Description: "Sums the non-NULL values; NULL when there are none.",
		Signatures:  []string{"SUM(INTEGER) -> INTEGER", "SUM(BIGINT) -> BIGINT", "SUM(DOUBLE) -> DOUBLE", "SUM(DECIMAL(p, s)) -> DECIMAL(18, s) for p up to 18, DECIMAL(p, s) above"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 1 || !args[0].IsNumeric() {
				return types.Type{}, typeErrorf("function SUM does not accept %s", describeArgs(args))
			}
			if args[0].Kind == types.Decimal && !isWide(args[0]) {
				return types.Type{Kind: types.Decimal, Precision: types.ShortDecimalPrecision, Scale: args[0].Scale}, nil
			}
			return args[0], nil
		},
		New: func(args []types.Type) Accumulator {
			if isWide(args[0]) {
				return &wideSumAcc{t: args[0]}
			}
			return &sumAcc{t: args[0]}
		},
	},
	"AVG": {
		Name:        "AVG",
		Description: "Averages the non-NULL values, as a DOUBLE; NULL when there are none.",
		Signatures:  []string{"AVG(INTEGER | BIGINT | DOUBLE | DECIMAL) -> DOUBLE"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 1 || !args[0].IsNumeric() {
				return types.Type{}, typeErrorf("function AVG does not accept %s", describeArgs(args))
			}
			return types.DoubleType, nil
		},
		New: func(args []types.Type) Accumulator { return &avgAcc{t: args[0]} },
	},
	"MIN": minMax("MIN", -1),
	"MAX": minMax("MAX", 1),
}

func minMax(name string, sign int) *AggregateFunction {
	return &AggregateFunction{
		Name:        name,
		Description: "The " + strings.ToLower(name) + "imum of the non-NULL values; NULL when there are none.",
		Signatures:  []string{name + "(T) -> T for numeric, STRING, BYTES, DATE, TIME and TIMESTAMP T"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 1 {
				return types.Type{}, typeErrorf("function %s takes one argument", name)
			}
			switch args[0].Kind {
			case types.Int, types.Bigint, types.Double, types.Decimal, types.String, types.Bytes, types.Date, types.Time, types.Timestamp:
				return args[0], nil
			}
			return types.Type{}, typeErrorf("function %s does not accept %s", name, describeArgs(args))
		},
		New: func(args []types.Type) Accumulator { return &minMaxAcc{t: args[0], sign: sign} },
		// Over a table (SQL dialect only: ksqlDB refuses MIN and MAX
		// there), the group keeps every value with its row count.
		NewRetracting: func(args []types.Type) Accumulator {
			return &retractMinMaxAcc{countedAcc: countedAcc{attrAcc: attrAcc{t: args[0]}, count: true}, sign: sign}
		},
	}
}

// RetractsOnlyInSQL reports whether the aggregate fn retracts over a
// table in the SQL dialect only (ksqlDB refuses it there).
func RetractsOnlyInSQL(fn string) bool { return fn == "MIN" || fn == "MAX" }

// retractMinMaxAcc is MIN or MAX over a table: countedAcc's state (the
// group's distinct non-NULL values, each with the number of its rows
// holding it, without a limit), so that when the extreme value's last
// row leaves, the next one is the result.
type retractMinMaxAcc struct {
	countedAcc
	sign int
}

func (m *retractMinMaxAcc) Result(st []byte) types.Datum {
	found := false
	best := types.NullDatum
	for b := st; ; {
		e, _, rest, ok := m.entry(b)
		if !ok {
			break
		}
		if e[0] == 1 {
			d, _ := readValue(e[1:], m.t)
			if !found || compareDatum(d, best, m.t)*m.sign > 0 {
				best, found = d, true
			}
		}
		b = rest
	}
	return best
}

// countAcc: state is 8 bytes, the count.
type countAcc struct{ star bool }

func (c countAcc) Add(dst, st []byte, args []types.Datum) []byte {
	n := uint64(0)
	if len(st) == 8 {
		n = binary.BigEndian.Uint64(st)
	}
	if c.star || !args[0].Null {
		n++
	}
	return binary.BigEndian.AppendUint64(dst, n)
}

func (countAcc) Result(st []byte) types.Datum {
	if len(st) != 8 {
		return types.IntDatum(0)
	}
	return types.IntDatum(int64(binary.BigEndian.Uint64(st)))
}

// sumAcc: state is empty (no value yet) or 8 bytes: the sum as int64
// (INT, BIGINT, DECIMAL unscaled) or float64 bits (DOUBLE). Integer sums
// wrap as Java's do; a DECIMAL sum that overflows 18 digits (checked: the
// type's precision) becomes the one-byte state 0x00: NULL from then on,
// or, checked, an error for the row (see Checker).
type sumAcc struct {
	t       types.Type
	checked bool
	// zero makes the sum of no values 0 (KsqlSumZero), not NULL.
	zero bool
}

var (
	_ Checker = (*checkedSumAcc)(nil)
	_ Checker = (*wideSumAcc)(nil)
	_ Undoer  = (*checkedSumAcc)(nil)
	_ Merger  = (*checkedSumAcc)(nil)
)

// checkedSumAcc is KsqlSum's short DECIMAL sum: a sumAcc (checked) whose
// overflow fails the row. Only it is a Checker, so other sums cost no
// check per row.
type checkedSumAcc struct{ sumAcc }

// Check fails a sum that overflowed.
func (s *checkedSumAcc) Check(st []byte) error {
	if len(st) == 1 {
		return sumOverflow(s.t)
	}
	return nil
}

func sumOverflow(t types.Type) error {
	return fmt.Errorf("function SUM: %w: the sum does not fit %s", types.ErrDecimalOverflow, t)
}

func (s *sumAcc) Add(dst, st []byte, args []types.Datum) []byte {
	d := args[0]
	if d.Null {
		return append(dst, st...)
	}
	switch {
	case s.t.Kind == types.Double:
		v := d.F
		if len(st) == 8 {
			v += math.Float64frombits(binary.BigEndian.Uint64(st))
		}
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
	case len(st) == 1: // an overflowed DECIMAL sum
		return append(dst, st...)
	}
	v := d.I
	if len(st) == 8 {
		prev := int64(binary.BigEndian.Uint64(st))
		v = prev + d.I
		if s.t.Kind == types.Int {
			v = int64(int32(v))
		}
		if s.t.Kind == types.Decimal {
			limit := pow10[types.ShortDecimalPrecision] - 1
			if s.checked {
				limit = pow10[s.t.Precision] - 1
			}
			if v > limit || v < -limit || (d.I > 0 && v < prev) || (d.I < 0 && v > prev) {
				return append(dst, 0)
			}
		}
	}
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

func (s *sumAcc) Result(st []byte) types.Datum {
	if len(st) == 0 && s.zero {
		if s.t.Kind == types.Double {
			return types.DoubleDatum(0)
		}
		return types.IntDatum(0)
	}
	if len(st) != 8 {
		return types.NullDatum
	}
	if s.t.Kind == types.Double {
		return types.DoubleDatum(math.Float64frombits(binary.BigEndian.Uint64(st)))
	}
	return types.IntDatum(int64(binary.BigEndian.Uint64(st)))
}

// avgAcc: state is 16 bytes, the float64 sum and the count, or empty.
type avgAcc struct{ t types.Type }

func (a *avgAcc) Add(dst, st []byte, args []types.Datum) []byte {
	d := args[0]
	if d.Null {
		return append(dst, st...)
	}
	var sum float64
	var n uint64
	if len(st) == 16 {
		sum = math.Float64frombits(binary.BigEndian.Uint64(st))
		n = binary.BigEndian.Uint64(st[8:])
	}
	switch a.t.Kind {
	case types.Double:
		sum += d.F
	case types.Decimal:
		if isWide(a.t) {
			sum += wideToFloat(d, a.t)
			break
		}
		sum += float64(d.I) / pow10f[a.t.Scale]
	default:
		sum += float64(d.I)
	}
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(sum))
	return binary.BigEndian.AppendUint64(dst, n+1)
}

func (a *avgAcc) Result(st []byte) types.Datum {
	if len(st) != 16 {
		return types.NullDatum
	}
	sum := math.Float64frombits(binary.BigEndian.Uint64(st))
	return types.DoubleDatum(sum / float64(binary.BigEndian.Uint64(st[8:])))
}

// minMaxAcc: state is empty (no value yet), 8 bytes (the int64 or the
// float64 bits) or, for STRING, the string's bytes behind a 0x01 marker.
type minMaxAcc struct {
	t    types.Type
	sign int
}

func (m *minMaxAcc) Add(dst, st []byte, args []types.Datum) []byte {
	d := args[0]
	if d.Null {
		return append(dst, st...)
	}
	if m.t.Kind == types.String || m.t.Kind == types.Bytes {
		if len(st) > 0 && bytes.Compare(d.B, st[1:])*m.sign <= 0 {
			return append(dst, st...)
		}
		return append(append(dst, 1), d.B...)
	}
	if isWide(m.t) { // the bytes behind 0x01, as a STRING's
		if len(st) > 0 && compareDatum(d, types.Datum{B: st[1:]}, m.t)*m.sign <= 0 {
			return append(dst, st...)
		}
		return append(append(dst, 1), d.B...)
	}
	if len(st) == 8 {
		prev := binary.BigEndian.Uint64(st)
		var c int
		if m.t.Kind == types.Double {
			c = cmpFloat(d.F, math.Float64frombits(prev))
		} else {
			c = cmpInt(d.I, int64(prev))
		}
		if c*m.sign <= 0 {
			return append(dst, st...)
		}
	}
	if m.t.Kind == types.Double {
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(d.F))
	}
	return binary.BigEndian.AppendUint64(dst, uint64(d.I))
}

func (m *minMaxAcc) Result(st []byte) types.Datum {
	switch {
	case len(st) == 0:
		return types.NullDatum
	case m.t.Kind == types.String || m.t.Kind == types.Bytes || isWide(m.t):
		return types.Datum{B: st[1:]}
	case m.t.Kind == types.Double:
		return types.DoubleDatum(math.Float64frombits(binary.BigEndian.Uint64(st)))
	}
	return types.IntDatum(int64(binary.BigEndian.Uint64(st)))
}

// Undoer is an Accumulator that can also take a row back out of a state:
// what aggregating a table needs when a row changes or goes away. Only
// aggregates that implement it aggregate tables.
type Undoer interface {
	Undo(dst, state []byte, args []types.Datum) []byte
}

func (c countAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	n := uint64(0)
	if len(st) == 8 {
		n = binary.BigEndian.Uint64(st)
	}
	if (c.star || !args[0].Null) && n > 0 {
		n--
	}
	return binary.BigEndian.AppendUint64(dst, n)
}

func (s *sumAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	d := args[0]
	if d.Null || len(st) != 8 {
		return append(dst, st...)
	}
	if s.t.Kind == types.Double {
		v := math.Float64frombits(binary.BigEndian.Uint64(st)) - d.F
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
	}
	prev := int64(binary.BigEndian.Uint64(st))
	v := prev - d.I
	if s.t.Kind == types.Int {
		v = int64(int32(v))
	}
	if s.checked {
		limit := pow10[s.t.Precision] - 1
		if v > limit || v < -limit || (d.I < 0 && v < prev) || (d.I > 0 && v > prev) {
			return append(dst, 0)
		}
	}
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}

func (a *avgAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	d := args[0]
	if d.Null || len(st) != 16 {
		return append(dst, st...)
	}
	sum := math.Float64frombits(binary.BigEndian.Uint64(st))
	n := binary.BigEndian.Uint64(st[8:])
	if n <= 1 {
		return dst // back to the initial (empty) state
	}
	switch a.t.Kind {
	case types.Double:
		sum -= d.F
	case types.Decimal:
		if isWide(a.t) {
			sum -= wideToFloat(d, a.t)
			break
		}
		sum -= float64(d.I) / pow10f[a.t.Scale]
	default:
		sum -= float64(d.I)
	}
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(sum))
	return binary.BigEndian.AppendUint64(dst, n-1)
}

// Merger is an Accumulator that can combine two states into the state of
// all their rows: what session windows need when a row bridges two
// sessions. Only aggregates that implement it aggregate session windows.
type Merger interface {
	// Merge appends the state of a's rows and b's rows to dst.
	Merge(dst, a, b []byte) []byte
}

var (
	_ Merger = countAcc{}
	_ Merger = (*sumAcc)(nil)
	_ Merger = (*avgAcc)(nil)
	_ Merger = (*minMaxAcc)(nil)
	_ Merger = (*wideSumAcc)(nil)
	_ Undoer = (*wideSumAcc)(nil)
)

func (countAcc) Merge(dst, a, b []byte) []byte {
	var n uint64
	if len(a) == 8 {
		n = binary.BigEndian.Uint64(a)
	}
	if len(b) == 8 {
		n += binary.BigEndian.Uint64(b)
	}
	return binary.BigEndian.AppendUint64(dst, n)
}

func (s *sumAcc) Merge(dst, a, b []byte) []byte {
	switch {
	case len(b) == 0:
		return append(dst, a...)
	case len(a) == 0:
		return append(dst, b...)
	case len(a) == 1 || len(b) == 1: // an overflowed DECIMAL sum
		return append(dst, 0)
	}
	// b's sum is one more value added to a's.
	d := types.Datum{I: int64(binary.BigEndian.Uint64(b)), F: math.Float64frombits(binary.BigEndian.Uint64(b))}
	return s.Add(dst, a, []types.Datum{d})
}

func (a *avgAcc) Merge(dst, x, y []byte) []byte {
	switch {
	case len(y) != 16:
		return append(dst, x...)
	case len(x) != 16:
		return append(dst, y...)
	}
	sum := math.Float64frombits(binary.BigEndian.Uint64(x)) + math.Float64frombits(binary.BigEndian.Uint64(y))
	n := binary.BigEndian.Uint64(x[8:]) + binary.BigEndian.Uint64(y[8:])
	dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(sum))
	return binary.BigEndian.AppendUint64(dst, n)
}

func (m *minMaxAcc) Merge(dst, a, b []byte) []byte {
	if len(b) == 0 {
		return append(dst, a...)
	}
	// b's extreme is one more value compared with a's.
	return m.Add(dst, a, []types.Datum{m.Result(b)})
}

// wideSumAcc sums a wide DECIMAL(p, s) into DECIMAL(p, s), as ksqlDB
// does. Its state is empty (no value yet), 0x02 and the sum's unscaled
// two's-complement bytes, or a single 0x00 once the sum overflowed p
// digits: the sum is then NULL and stays so (ksqlDB fails the query).
type wideSumAcc struct {
	t types.Type
	w wideScratch
}

// fold adds (sign 1) or subtracts (-1) d to the sum in st.
func (s *wideSumAcc) fold(dst, st []byte, d types.Datum, sign int) []byte {
	switch {
	case d.Null || len(st) == 1:
		return append(dst, st...)
	case len(st) == 0 && sign > 0:
		return append(append(dst, 2), d.B...)
	case len(st) == 0:
		return dst
	}
	types.DecimalValue(&s.w.x, types.Datum{B: st[1:]}, s.t)
	types.DecimalValue(&s.w.y, d, s.t)
	op := OpAdd
	if sign < 0 {
		op = OpSub
	}
	s.w.arith(op, s.t.Scale)
	r, ok := s.w.datum(s.t)
	if !ok {
		return append(dst, 0)
	}
	return append(append(dst, 2), r.B...)
}

func (s *wideSumAcc) Add(dst, st []byte, args []types.Datum) []byte {
	return s.fold(dst, st, args[0], 1)
}

func (s *wideSumAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	return s.fold(dst, st, args[0], -1)
}

func (s *wideSumAcc) Merge(dst, a, b []byte) []byte {
	switch {
	case len(b) == 0:
		return append(dst, a...)
	case len(a) == 0:
		return append(dst, b...)
	case len(a) == 1 || len(b) == 1:
		return append(dst, 0)
	}
	return s.fold(dst, a, types.Datum{B: b[1:]}, 1)
}

// Check fails a sum that overflowed.
func (s *wideSumAcc) Check(st []byte) error {
	if len(st) == 1 {
		return sumOverflow(s.t)
	}
	return nil
}

func (s *wideSumAcc) Result(st []byte) types.Datum {
	if len(st) < 2 {
		return types.NullDatum
	}
	return types.Datum{B: st[1:]}
}
