package expr

import (
	"math"
	"strconv"

	"github.com/cockroachdb/apd/v3"
	"github.com/sqlstreams/sqlstreams/types"
)

// Wide DECIMAL arithmetic: precision above types.ShortDecimalPrecision,
// held as two's-complement bytes (types/decimal.go) and computed with
// apd. Short operands and INT/BIGINT convert into apd values, so one
// path serves every mix in which an operand or the result is wide. The
// short, int64 path in decimal.go is untouched: queries without wide
// types never come here.

// isWide reports whether t is a wide DECIMAL.
func isWide(t types.Type) bool { return t.IsWideDecimal() }

// wideResult is ksqlDB's result type of a op b, one of them a wide
// DECIMAL: the rules in decimal.go without the cap at 18 digits (ksqlDB
// has none); above types.MaxDecimalPrecision the integer digits are kept
// and the scale shrinks, as SQL Server caps at 38.
func wideResult(op Op, a, b types.Type) types.Type {
	p1, s1 := asDecimal(a)
	p2, s2 := asDecimal(b)
	var p, s int
	switch op {
	case OpMul:
		p, s = p1+p2+1, s1+s2
	case OpDiv:
		s = max(6, s1+p2+1)
		p = p1 - s1 + s2 + s
	case OpMod:
		s = max(s1, s2)
		p = min(p1-s1, p2-s2) + s
	default:
		s = max(s1, s2)
		p = max(p1-s1, p2-s2) + s + 1
	}
	if p > types.MaxDecimalPrecision {
		s = max(min(s, 6), types.MaxDecimalPrecision-(p-s))
		s = min(max(s, 0), types.MaxDecimalPrecision)
		p = types.MaxDecimalPrecision
	}
	p = max(p, s, 1)
	return types.Type{Kind: types.Decimal, Precision: p, Scale: s}
}

// setDec sets z to the non-NULL numeric datum d of type t (INT, BIGINT
// or DECIMAL).
func setDec(z *apd.Decimal, d types.Datum, t types.Type) *apd.Decimal {
	if t.Kind == types.Decimal {
		return types.DecimalValue(z, d, t)
	}
	return z.SetFinite(d.I, 0)
}

// wideScratch is the reusable state of one wide evaluator: its operands,
// result and the bytes of the value it last returned.
type wideScratch struct {
	x, y, r apd.Decimal
	n, q, m apd.BigInt
	buf     []byte
}

// datum fits w.r into t; ok false for overflow.
func (w *wideScratch) datum(t types.Type) (types.Datum, bool) {
	d, buf, ok := types.DecimalDatum(&w.r, t, w.buf[:0])
	w.buf = buf
	return d, ok
}

var ten = apd.NewBigInt(10)

// arith sets w.r to w.x op w.y, exact for + - * and %, and for / rounded
// HALF_UP at scale s. ok is false for division by zero.
func (w *wideScratch) arith(op Op, s int) bool {
	ctx := &types.DecimalContext
	var err error
	switch op {
	case OpAdd:
		_, err = ctx.Add(&w.r, &w.x, &w.y)
	case OpSub:
		_, err = ctx.Sub(&w.r, &w.x, &w.y)
	case OpMul:
		_, err = ctx.Mul(&w.r, &w.x, &w.y)
	case OpMod:
		if w.y.IsZero() {
			return false
		}
		_, err = ctx.Rem(&w.r, &w.x, &w.y)
	case OpDiv:
		if w.y.IsZero() {
			return false
		}
		// unscaled = round(cx × 10^(ex - ey + s) / cy)
		k := int64(w.x.Exponent) - int64(w.y.Exponent) + int64(s)
		w.n.Set(&w.x.Coeff)
		w.m.Set(&w.y.Coeff)
		if k >= 0 {
			w.q.Exp(ten, apd.NewBigInt(k), nil)
			w.n.Mul(&w.n, &w.q)
		} else {
			w.q.Exp(ten, apd.NewBigInt(-k), nil)
			w.m.Mul(&w.m, &w.q)
		}
		var rem apd.BigInt
		w.q.QuoRem(&w.n, &w.m, &rem)
		rem.Lsh(&rem, 1)
		if rem.Cmp(&w.m) >= 0 {
			w.q.Add(&w.q, bigOne)
		}
		w.r.Coeff.Set(&w.q)
		w.r.Form = apd.Finite
		w.r.Exponent = int32(-s)
		w.r.Negative = w.x.Negative != w.y.Negative && w.q.Sign() != 0
	}
	return err == nil
}

var bigOne = apd.NewBigInt(1)

// compileWideArith compiles l op r into the DECIMAL type t, where an
// operand or t is wide.
func compileWideArith(op Op, lt, rt, t types.Type, l, r Evaluator) Evaluator {
	var w wideScratch
	return func(row types.Row) (types.Datum, error) {
		x, err := l(row)
		if err != nil || x.Null {
			return types.NullDatum, err
		}
		y, err := r(row)
		if err != nil || y.Null {
			return types.NullDatum, err
		}
		setDec(&w.x, x, lt)
		setDec(&w.y, y, rt)
		if !w.arith(op, t.Scale) {
			return types.NullDatum, nil
		}
		d, ok := w.datum(t)
		if !ok {
			return types.NullDatum, nil
		}
		return d, nil
	}
}

// wideCompare compares non-NULL numeric datums of types a and b (INT,
// BIGINT or DECIMAL, at least one wide).
func wideCompare(a, b types.Type) func(x, y types.Datum) int {
	return func(x, y types.Datum) int {
		var p, q apd.Decimal
		return setDec(&p, x, a).Cmp(setDec(&q, y, b))
	}
}

// wideToFloat converts a wide DECIMAL datum of type t to float64 (the
// nearest double, as BigDecimal.doubleValue).
func wideToFloat(d types.Datum, t types.Type) float64 {
	var buf [64]byte
	b := types.AppendDecimalDatum(buf[:0], d, t)
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil && !math.IsInf(f, 0) {
		return math.NaN()
	}
	return f
}

// wideConverter converts between numeric types where the source or
// target is a wide DECIMAL; ok false when the value does not fit.
func wideConverter(from, to types.Type) converter {
	switch to.Kind {
	case types.Double:
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			return types.DoubleDatum(wideToFloat(d, from)), true
		}
	case types.Int, types.Bigint:
		narrow := to.Kind == types.Int
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			// Java's BigDecimal.longValue/intValue: truncate, keep the
			// low bits.
			var z, i, f apd.Decimal
			setDec(&z, d, from)
			z.Modf(&i, &f)
			return types.IntDatum(lowBits(&i, narrow)), true
		}
	case types.Decimal:
		if from.Kind == types.Double {
			return func(a *arena, d types.Datum) (types.Datum, bool) {
				if math.IsNaN(d.F) || math.IsInf(d.F, 0) {
					return types.NullDatum, false
				}
				var buf [32]byte
				return decimalFromText(a, strconv.AppendFloat(buf[:0], d.F, 'e', -1, 64), to)
			}
		}
		return func(a *arena, d types.Datum) (types.Datum, bool) {
			var z apd.Decimal
			setDec(&z, d, from)
			v, buf, ok := types.DecimalDatum(&z, to, a.b)
			a.b = buf
			return v, ok
		}
	}
	return nil
}

// decimalFromText parses text into the DECIMAL type t (either form),
// its bytes in a.
func decimalFromText(a *arena, text []byte, t types.Type) (types.Datum, bool) {
	if !isWide(t) {
		v, ok := decFromText(text, t.Precision, t.Scale)
		return types.IntDatum(v), ok
	}
	v, buf, err := types.ParseDecimalDatum(text, t, a.b)
	a.b = buf
	return v, err == nil
}

// lowBits is the integer i's value modulo 2^64 (or 2^32 when narrow), as
// Java's BigInteger.longValue and intValue give.
func lowBits(i *apd.Decimal, narrow bool) int64 {
	var c apd.BigInt
	c.Set(&i.Coeff)
	if i.Exponent > 0 {
		var e apd.BigInt
		e.Exp(ten, apd.NewBigInt(int64(i.Exponent)), nil)
		c.Mul(&c, &e)
	}
	b := c.Bytes()
	var u uint64
	for _, x := range b[max(0, len(b)-8):] {
		u = u<<8 | uint64(x)
	}
	v := int64(u)
	if i.Negative {
		v = -v
	}
	if narrow {
		v = int64(int32(v))
	}
	return v
}

// wideRounding returns an Impl rounding a wide DECIMAL of type t to a
// number of places (the second argument, or 0) and returning it as out.
// mode picks the rounding: 'R' ROUND (ties toward positive infinity, as
// ksqlDB's HALF_UP for positive and HALF_DOWN for other values), 'T'
// TRUNC, 'C' CEIL, 'F' FLOOR.
func wideRounding(t, out types.Type, mode byte) Impl {
	var w wideScratch
	return strict(func(a []types.Datum) (types.Datum, error) {
		places := int64(0)
		if len(a) > 1 {
			places = a[1].I
		}
		types.DecimalValue(&w.x, a[0], t)
		if places >= int64(t.Scale) {
			w.r.Set(&w.x)
		} else {
			ctx := types.DecimalContext
			switch mode {
			case 'R':
				ctx.Rounding = apd.RoundHalfUp
				if w.x.Sign() <= 0 {
					ctx.Rounding = apd.RoundHalfDown
				}
			case 'T':
				ctx.Rounding = apd.RoundDown
			case 'C':
				ctx.Rounding = apd.RoundCeiling
			case 'F':
				ctx.Rounding = apd.RoundFloor
			}
			places = max(places, -int64(types.MaxDecimalPrecision))
			if _, err := ctx.Quantize(&w.r, &w.x, int32(-places)); err != nil {
				return types.NullDatum, nil
			}
		}
		d, ok := w.datum(out)
		if !ok {
			return types.NullDatum, nil
		}
		return d, nil
	})
}

// wideAbs is ABS of a wide DECIMAL of type t.
func wideAbs(t types.Type) Impl {
	var w wideScratch
	return strict(func(a []types.Datum) (types.Datum, error) {
		types.DecimalValue(&w.r, a[0], t).Negative = false
		d, _ := w.datum(t)
		return d, nil
	})
}

// wideSign is SIGN of a wide DECIMAL: -1, 0 or 1.
func wideSign(a []types.Datum) (types.Datum, error) {
	b := a[0].B
	switch {
	case len(b) > 0 && b[0]&0x80 != 0:
		return types.IntDatum(-1), nil
	case len(b) == 1 && b[0] == 0:
		return types.IntDatum(0), nil
	}
	return types.IntDatum(1), nil
}

// NegLiteral returns the literal -l of l's type (l not NULL): what the
// binder folds a minus sign before a number into.
func NegLiteral(l *Literal) *Literal {
	v := l.V
	if isWide(l.T) {
		var z apd.Decimal
		types.DecimalValue(&z, v, l.T).Negative = !z.Negative
		v, _, _ = types.DecimalDatum(&z, l.T, nil)
		return &Literal{V: v, T: l.T}
	}
	v.I, v.F = -v.I, -v.F
	return &Literal{V: v, T: l.T}
}
