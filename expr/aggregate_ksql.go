package expr

import (
	"encoding/binary"
	"math"

	"github.com/sqlstreams/sqlstreams/types"
)

// ksqlDB's STDDEV_SAMP, STDDEV_SAMPLE and CORRELATION, computed as its
// UDAFs compute them so that results agree to the last bit: the
// Youngs-Cramer update over a running sum and count (INTEGER sums wrap at
// 32 bits and BIGINT sums at 64, as Java's do), and the single-pass
// correlation formula over five sums. All three can take a changed row
// back out (tables) and merge session windows.

var (
	_ Undoer = (*youngsCramerAcc)(nil)
	_ Merger = (*youngsCramerAcc)(nil)
	_ Undoer = (*correlationAcc)(nil)
	_ Merger = (*correlationAcc)(nil)
)

func stddevSample() *AggregateFunction {
	return youngsCramer("STDDEV_SAMPLE", "The sample standard deviation of the non-NULL values; 0.0 for fewer than two.", true)
}

// youngsCramer is an aggregate of the non-NULL numeric values' sample
// variance (Youngs and Cramer), or its square root with sqrt.
func youngsCramer(name, description string, sqrt bool) *AggregateFunction {
	return &AggregateFunction{
		Name:        name,
		Description: description,
		Signatures:  []string{name + "(INTEGER | BIGINT | DOUBLE | DECIMAL) -> DOUBLE"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 1 || !args[0].IsNumeric() {
				return types.Type{}, typeErrorf("function %s does not accept %s", name, describeArgs(args))
			}
			return types.DoubleType, nil
		},
		New: func(args []types.Type) Accumulator { return &youngsCramerAcc{t: args[0], sqrt: sqrt} },
	}
}

// youngsCramerAcc: state is the count, the sum (an int64, or a float64's
// bits for DOUBLE and DECIMAL arguments) and M2 (float64 bits), 8 bytes
// each; empty is the initial state. The result is M2/(count-1), or its
// square root (sqrt), and 0.0 below two values.
type youngsCramerAcc struct {
	t    types.Type
	sqrt bool
}

type ycState struct {
	n    int64
	isum int64
	fsum float64
	m2   float64
}

func (y *youngsCramerAcc) float() bool { return y.t.Kind == types.Double || y.t.Kind == types.Decimal }

func (y *youngsCramerAcc) load(st []byte) ycState {
	var s ycState
	if len(st) < 24 {
		return s
	}
	s.n = int64(binary.BigEndian.Uint64(st))
	if y.float() {
		s.fsum = math.Float64frombits(binary.BigEndian.Uint64(st[8:]))
	} else {
		s.isum = int64(binary.BigEndian.Uint64(st[8:]))
	}
	s.m2 = math.Float64frombits(binary.BigEndian.Uint64(st[16:]))
	return s
}

func (y *youngsCramerAcc) store(dst []byte, s ycState) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(s.n))
	if y.float() {
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(s.fsum))
	} else {
		dst = binary.BigEndian.AppendUint64(dst, uint64(s.isum))
	}
	return binary.BigEndian.AppendUint64(dst, math.Float64bits(s.m2))
}

// plus is sum + v in the argument's Java type (INTEGER wraps at 32 bits).
func (y *youngsCramerAcc) plus(s ycState, v int64, f float64, sign int64) ycState {
	switch y.t.Kind {
	case types.Int:
		s.isum = int64(int32(s.isum) + int32(sign*v))
	case types.Bigint:
		s.isum += sign * v
	default:
		s.fsum += float64(sign) * f
	}
	return s
}

// delta is ksqlDB's v*(count+1) - (sum+v), in Java's arithmetic.
func (y *youngsCramerAcc) delta(s ycState, v int64, f float64) float64 {
	switch y.t.Kind {
	case types.Int:
		return float64(v*(s.n+1) - int64(int32(s.isum)+int32(v)))
	case types.Bigint:
		return float64(v*(s.n+1) - (s.isum + v))
	}
	return f*float64(s.n+1) - (s.fsum + f)
}

func (y *youngsCramerAcc) arg(d types.Datum) (int64, float64) {
	switch y.t.Kind {
	case types.Double:
		return 0, d.F
	case types.Decimal:
		return 0, float64(d.I) / pow10f[y.t.Scale]
	}
	return d.I, 0
}

func (y *youngsCramerAcc) Add(dst, st []byte, args []types.Datum) []byte {
	s := y.load(st)
	if args[0].Null {
		return y.store(dst, s)
	}
	v, f := y.arg(args[0])
	n := s.n + 1
	m2 := 0.0
	if n-1 > 0 {
		d := y.delta(s, v, f)
		m2 = d * d / float64(n*(n-1))
	}
	s = y.plus(s, v, f, 1)
	s.n, s.m2 = n, m2+s.m2
	return y.store(dst, s)
}

func (y *youngsCramerAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	s := y.load(st)
	if args[0].Null {
		return y.store(dst, s)
	}
	v, f := y.arg(args[0])
	n := s.n - 1
	m2 := 0.0
	if n > 0 {
		d := y.delta(s, v, f)
		m2 = d * d / float64(n*(n+1))
	}
	s = y.plus(s, v, f, -1)
	s.n, s.m2 = n, s.m2-m2
	return y.store(dst, s)
}

func (y *youngsCramerAcc) Merge(dst, a, b []byte) []byte {
	x, z := y.load(a), y.load(b)
	n := x.n + z.n
	m2 := x.m2 + z.m2
	if x.n != 0 && z.n != 0 {
		var inner float64
		switch {
		case y.float():
			inner = x.fsum/float64(x.n) - z.fsum/float64(z.n)
		case y.sqrt: // STDDEV_SAMPLE divides as doubles
			inner = float64(x.isum)/float64(x.n) - float64(z.isum)/float64(z.n)
		case y.t.Kind == types.Int: // STDDEV_SAMP divides as integers
			inner = float64(int64(int32(x.isum))/x.n - int64(int32(z.isum))/z.n)
		default:
			inner = float64(x.isum/x.n - z.isum/z.n)
		}
		m2 += float64(x.n*z.n) * inner * inner / float64(n)
	}
	s := ycState{n: n, m2: m2}
	s.isum, s.fsum = x.isum+z.isum, x.fsum+z.fsum
	if y.t.Kind == types.Int {
		s.isum = int64(int32(x.isum) + int32(z.isum))
	}
	return y.store(dst, s)
}

func (y *youngsCramerAcc) Result(st []byte) types.Datum {
	s := y.load(st)
	if s.n < 2 {
		return types.DoubleDatum(0)
	}
	v := s.m2 / float64(s.n-1)
	if y.sqrt {
		v = math.Sqrt(v)
	}
	return types.DoubleDatum(v)
}

// correlationAcc: state is the sums of x, y, x², y² and xy (float64 bits)
// and the count (int64), 8 bytes each; empty is the initial state. The
// result is NaN when the correlation is undefined (fewer than two pairs,
// or a constant side), as ksqlDB's is.
type correlationAcc struct {
	ts []types.Type
	f  [5]float64
}

func (c *correlationAcc) load(st []byte) int64 {
	c.f = [5]float64{}
	if len(st) < 48 {
		return 0
	}
	for i := range c.f {
		c.f[i] = math.Float64frombits(binary.BigEndian.Uint64(st[8*i:]))
	}
	return int64(binary.BigEndian.Uint64(st[40:]))
}

func (c *correlationAcc) store(dst []byte, n int64) []byte {
	for _, v := range c.f {
		dst = binary.BigEndian.AppendUint64(dst, math.Float64bits(v))
	}
	return binary.BigEndian.AppendUint64(dst, uint64(n))
}

func (c *correlationAcc) num(d types.Datum, t types.Type) float64 {
	switch t.Kind {
	case types.Double:
		return d.F
	case types.Decimal:
		return float64(d.I) / pow10f[t.Scale]
	}
	return float64(d.I)
}

func (c *correlationAcc) fold(dst, st []byte, args []types.Datum, sign float64) []byte {
	n := c.load(st)
	if args[0].Null || args[1].Null {
		return c.store(dst, n)
	}
	x, y := c.num(args[0], c.ts[0]), c.num(args[1], c.ts[1])
	c.f[0] += sign * x
	c.f[1] += sign * y
	c.f[2] += sign * (x * x)
	c.f[3] += sign * (y * y)
	c.f[4] += sign * (x * y)
	return c.store(dst, n+int64(sign))
}

func (c *correlationAcc) Add(dst, st []byte, args []types.Datum) []byte {
	return c.fold(dst, st, args, 1)
}

func (c *correlationAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	return c.fold(dst, st, args, -1)
}

func (c *correlationAcc) Merge(dst, a, b []byte) []byte {
	nb := c.load(b)
	fb := c.f
	na := c.load(a)
	for i := range c.f {
		c.f[i] += fb[i]
	}
	return c.store(dst, na+nb)
}

func (c *correlationAcc) Result(st []byte) types.Datum {
	n := float64(c.load(st))
	sx, sy, sxx, syy, sxy := c.f[0], c.f[1], c.f[2], c.f[3], c.f[4]
	num := n*sxy - sx*sy
	dx := n*sxx - sx*sx
	dy := n*syy - sy*sy
	return types.DoubleDatum(num / math.Sqrt(dx*dy))
}

func sumList() *AggregateFunction {
	return &AggregateFunction{
		Name:        "SUM_LIST",
		Description: "Sums the non-NULL elements of every row's ARRAY; 0 when there are none.",
		Signatures:  []string{"SUM_LIST(ARRAY<INTEGER>) -> INTEGER", "SUM_LIST(ARRAY<BIGINT>) -> BIGINT", "SUM_LIST(ARRAY<DOUBLE>) -> DOUBLE"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) == 1 && args[0].Kind == types.Array && args[0].Elem != nil {
				switch e := *args[0].Elem; e.Kind {
				case types.Int, types.Bigint, types.Double:
					return e, nil
				}
			}
			return types.Type{}, typeErrorf("function SUM_LIST does not accept %s", describeArgs(args))
		},
		New: func(args []types.Type) Accumulator { return &sumListAcc{t: *args[0].Elem} },
	}
}

var (
	_ Undoer = (*sumListAcc)(nil)
	_ Merger = (*sumListAcc)(nil)
)

// sumListAcc is SUM_LIST: state is the running sum, 8 bytes (an int64, or
// a float64's bits for DOUBLE); empty is 0. INTEGER sums wrap at 32 bits
// as ksqlDB's do.
type sumListAcc struct{ t types.Type }

func (s *sumListAcc) load(st []byte) uint64 {
	if len(st) < 8 {
		return 0 // 0 and 0.0 alike
	}
	return binary.BigEndian.Uint64(st)
}

// add returns a+b in the element type, over the state's encoding.
func (s *sumListAcc) add(a, b uint64) uint64 {
	switch s.t.Kind {
	case types.Double:
		return math.Float64bits(math.Float64frombits(a) + math.Float64frombits(b))
	case types.Int:
		return uint64(int64(int32(a) + int32(b)))
	}
	return a + b
}

func (s *sumListAcc) list(d types.Datum, sign int) uint64 {
	var sum uint64
	for _, e := range d.L {
		if e.Null {
			continue
		}
		v := uint64(e.I)
		if s.t.Kind == types.Double {
			v = math.Float64bits(e.F)
		}
		sum = s.add(sum, v)
	}
	if sign < 0 {
		if s.t.Kind == types.Double {
			return math.Float64bits(-math.Float64frombits(sum))
		}
		return -sum
	}
	return sum
}

func (s *sumListAcc) Add(dst, st []byte, args []types.Datum) []byte {
	v := s.load(st)
	if !args[0].Null {
		v = s.add(v, s.list(args[0], 1))
	}
	return binary.BigEndian.AppendUint64(dst, v)
}

func (s *sumListAcc) Undo(dst, st []byte, args []types.Datum) []byte {
	v := s.load(st)
	if !args[0].Null {
		v = s.add(v, s.list(args[0], -1))
	}
	return binary.BigEndian.AppendUint64(dst, v)
}

func (s *sumListAcc) Merge(dst, a, b []byte) []byte {
	return binary.BigEndian.AppendUint64(dst, s.add(s.load(a), s.load(b)))
}

func (s *sumListAcc) Result(st []byte) types.Datum {
	v := s.load(st)
	if s.t.Kind == types.Double {
		return types.DoubleDatum(math.Float64frombits(v))
	}
	if s.t.Kind == types.Int {
		return types.IntDatum(int64(int32(v)))
	}
	return types.IntDatum(int64(v))
}
