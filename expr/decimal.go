package expr

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"

	"github.com/sqlstreams/sqlstreams/types"
)

// DECIMAL arithmetic.
//
// A DECIMAL(p, s) value with p ≤ 18 is its unscaled integer in Datum.I;
// wider ones are bytes, computed in decimal_wide.go.
// Result types follow ksqlDB (which follows SQL Server), with INT read as
// DECIMAL(10, 0) and BIGINT as DECIMAL(19, 0):
//
//	a + b, a - b   scale max(s1, s2), precision max(p1-s1, p2-s2) + scale + 1
//	a * b          scale s1 + s2,      precision p1 + p2 + 1
//	a / b          scale max(6, s1 + p2 + 1), precision p1 - s1 + s2 + scale
//	a % b          scale max(s1, s2), precision min(p1-s1, p2-s2) + scale
//
// When both operands are short (or INT/BIGINT), a precision above 18 is
// capped the way SQL Server caps at 38: the integer digits are kept and
// the scale shrinks, but not below min(scale, 6); the precision becomes
// 18. (Running queries depend on these types; ksqlDB does not cap.) When
// an operand is a wide DECIMAL the result follows ksqlDB uncapped
// (wideResult).
// Results are rounded HALF_UP to the result scale. A value that does not
// fit the result precision (overflow) is NULL, as is division or modulo
// by zero: ksqlDB fails the expression there, which leaves the column NULL
// in its output; we give the same NULL without a bad-record error.

var pow10 = [...]int64{
	1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
	1000000000, 10000000000, 100000000000, 1000000000000, 10000000000000,
	100000000000000, 1000000000000000, 10000000000000000, 100000000000000000,
	1000000000000000000,
}

var pow10f = [...]float64{
	1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
	1e14, 1e15, 1e16, 1e17, 1e18,
}

// DecimalType returns DECIMAL(precision, scale), or an error when the
// parameters are out of range (1 ≤ precision ≤ types.MaxDecimalPrecision,
// 0 ≤ scale ≤ precision).
func DecimalType(precision, scale int) (types.Type, error) {
	if precision < 1 || precision > types.MaxDecimalPrecision || scale < 0 || scale > precision {
		return types.Type{}, typeErrorf("DECIMAL(%d, %d) is not supported: precision must be 1 to %d and scale 0 to precision", precision, scale, types.MaxDecimalPrecision)
	}
	return types.Type{Kind: types.Decimal, Precision: precision, Scale: scale}, nil
}

// DecimalLiteral parses a numeric literal with a decimal point ("1.50",
// "-0.05") into a DECIMAL literal whose precision and scale are those of
// the text, as ksqlDB types such literals: 1.50 is DECIMAL(3, 2), 0.05 is
// DECIMAL(2, 2). Text with more than 18 digits is a wide DECIMAL.
func DecimalLiteral(s string) (*Literal, error) {
	neg := false
	t := s
	if t != "" && (t[0] == '-' || t[0] == '+') {
		neg = t[0] == '-'
		t = t[1:]
	}
	var v int64
	digits, scale, seenPoint, any := 0, 0, false, false
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case c == '.' && !seenPoint:
			seenPoint = true
		case c >= '0' && c <= '9':
			any = true
			if digits > 0 || c != '0' {
				digits++
			}
			if seenPoint {
				scale++
			}
			if digits > types.MaxDecimalPrecision {
				return nil, fmt.Errorf("decimal literal %s has more than %d digits", s, types.MaxDecimalPrecision)
			}
			if digits <= types.ShortDecimalPrecision {
				v = v*10 + int64(c-'0')
			}
		default:
			return nil, fmt.Errorf("bad decimal literal %q", s)
		}
	}
	if !any {
		return nil, fmt.Errorf("bad decimal literal %q", s)
	}
	p := max(digits, scale, 1)
	if p > types.ShortDecimalPrecision {
		t := types.Type{Kind: types.Decimal, Precision: p, Scale: scale}
		d, _, err := types.ParseDecimalDatum([]byte(s), t, nil)
		if err != nil {
			return nil, fmt.Errorf("bad decimal literal %q: %v", s, err)
		}
		return &Literal{V: d, T: t}, nil
	}
	if neg {
		v = -v
	}
	return &Literal{V: types.IntDatum(v), T: types.Type{Kind: types.Decimal, Precision: p, Scale: scale}}, nil
}

// asDecimal is the DECIMAL shape of a numeric type for arithmetic.
func asDecimal(t types.Type) (p, s int) {
	switch t.Kind {
	case types.Int:
		return 10, 0
	case types.Bigint:
		return 19, 0
	case types.Decimal:
		return t.Precision, t.Scale
	}
	return 0, 0
}

// capDecimal fits a derived (precision, scale) into 18 digits.
func capDecimal(p, s int) types.Type {
	if p > types.ShortDecimalPrecision {
		intDigits := p - s
		s = max(min(s, 6), types.ShortDecimalPrecision-intDigits)
		s = min(max(s, 0), types.ShortDecimalPrecision)
		p = types.ShortDecimalPrecision
	}
	if p < 1 {
		p = 1
	}
	if s > p {
		p = s
	}
	return types.Type{Kind: types.Decimal, Precision: p, Scale: s}
}

// decimalResult is the type of a op b where at least one side is DECIMAL
// and neither is DOUBLE.
func decimalResult(op Op, a, b types.Type) types.Type {
	if isWide(a) || isWide(b) {
		return wideResult(op, a, b)
	}
	p1, s1 := asDecimal(a)
	p2, s2 := asDecimal(b)
	switch op {
	case OpMul:
		return capDecimal(p1+p2+1, s1+s2)
	case OpDiv:
		s := max(6, s1+p2+1)
		return capDecimal(p1-s1+s2+s, s)
	case OpMod:
		s := max(s1, s2)
		return capDecimal(min(p1-s1, p2-s2)+s, s)
	}
	s := max(s1, s2)
	return capDecimal(max(p1-s1, p2-s2)+s+1, s)
}

// u128 is an unsigned 128-bit integer; d128 a signed one as sign and
// magnitude. They keep DECIMAL arithmetic exact without math/big on the
// common paths.
type u128 struct{ hi, lo uint64 }

type d128 struct {
	neg bool
	m   u128
}

func d128of(v int64) d128 {
	if v < 0 {
		return d128{neg: true, m: u128{lo: uint64(-v)}} // -MinInt64 wraps to 1<<63, which is right as unsigned
	}
	return d128{m: u128{lo: uint64(v)}}
}

func (u u128) mul64(v uint64) (u128, bool) {
	hi1, lo := bits.Mul64(u.lo, v)
	hi2, mid := bits.Mul64(u.hi, v)
	hi, c := bits.Add64(hi1, mid, 0)
	return u128{hi: hi, lo: lo}, hi2 == 0 && c == 0
}

func (u u128) add(v u128) (u128, bool) {
	lo, c := bits.Add64(u.lo, v.lo, 0)
	hi, c2 := bits.Add64(u.hi, v.hi, c)
	return u128{hi, lo}, c2 == 0
}

func (u u128) sub(v u128) u128 { // u >= v
	lo, b := bits.Sub64(u.lo, v.lo, 0)
	hi, _ := bits.Sub64(u.hi, v.hi, b)
	return u128{hi, lo}
}

func (u u128) cmp(v u128) int {
	switch {
	case u.hi < v.hi:
		return -1
	case u.hi > v.hi:
		return 1
	case u.lo < v.lo:
		return -1
	case u.lo > v.lo:
		return 1
	}
	return 0
}

func (u u128) isZero() bool { return u.hi == 0 && u.lo == 0 }

// divmod64 divides u by v (v > 0).
func (u u128) divmod64(v uint64) (u128, uint64) {
	qhi := u.hi / v
	r := u.hi % v
	qlo, r := bits.Div64(r, u.lo, v)
	return u128{qhi, qlo}, r
}

// scaleUp multiplies by 10^k.
func (d d128) scaleUp(k int) (d128, bool) {
	for k > 0 {
		step := min(k, 18)
		m, ok := d.m.mul64(uint64(pow10[step]))
		if !ok {
			return d, false
		}
		d.m = m
		k -= step
	}
	return d, true
}

// scaleDown divides by 10^k rounding HALF_UP (away from zero on ties).
func (d d128) scaleDown(k int) d128 {
	for k > 18 {
		d.m, _ = d.m.divmod64(uint64(pow10[18]))
		k -= 18
	}
	if k == 0 {
		return d
	}
	div := uint64(pow10[k])
	q, r := d.m.divmod64(div)
	if r >= div-r { // 2r >= div
		q, _ = q.add(u128{lo: 1})
	}
	d.m = q
	return d
}

func (d d128) add(e d128) (d128, bool) {
	if d.neg == e.neg {
		m, ok := d.m.add(e.m)
		return d128{neg: d.neg, m: m}, ok
	}
	if d.m.cmp(e.m) >= 0 {
		return d128{neg: d.neg, m: d.m.sub(e.m)}, true
	}
	return d128{neg: e.neg, m: e.m.sub(d.m)}, true
}

// fit returns d as an int64 if it has at most p digits.
func (d d128) fit(p int) (int64, bool) {
	if d.m.hi != 0 || d.m.lo >= uint64(pow10[min(p, 18)]) {
		return 0, false
	}
	if d.neg {
		return -int64(d.m.lo), true
	}
	return int64(d.m.lo), true
}

func (d d128) cmp(e d128) int {
	if d.m.isZero() && e.m.isZero() {
		return 0
	}
	switch {
	case d.neg && !e.neg:
		return -1
	case !d.neg && e.neg:
		return 1
	case d.neg:
		return -d.m.cmp(e.m)
	}
	return d.m.cmp(e.m)
}

// rescale converts unscaled v from scale from to scale to (HALF_UP), and
// checks that it fits precision p.
func rescale(v int64, from, to, p int) (int64, bool) {
	d := d128of(v)
	if to >= from {
		var ok bool
		if d, ok = d.scaleUp(to - from); !ok {
			return 0, false
		}
	} else {
		d = d.scaleDown(from - to)
	}
	return d.fit(p)
}

// decArith computes x op y for unscaled values with scales sx and sy into
// DECIMAL(p, s). ok is false for overflow and division by zero.
func decArith(op Op, x int64, sx int, y int64, sy int, p, s int) (int64, bool) {
	a, b := d128of(x), d128of(y)
	switch op {
	case OpAdd, OpSub, OpMod:
		t := max(sx, sy)
		var ok1, ok2 bool
		a, ok1 = a.scaleUp(t - sx)
		b, ok2 = b.scaleUp(t - sy)
		if !ok1 || !ok2 {
			return decArithBig(op, x, sx, y, sy, p, s)
		}
		var r d128
		switch op {
		case OpAdd:
			var ok bool
			if r, ok = a.add(b); !ok {
				return 0, false
			}
		case OpSub:
			b.neg = !b.neg
			var ok bool
			if r, ok = a.add(b); !ok {
				return 0, false
			}
		case OpMod:
			if b.m.isZero() {
				return 0, false
			}
			if b.m.hi != 0 || a.m.hi != 0 {
				return decArithBig(op, x, sx, y, sy, p, s)
			}
			r = d128{neg: a.neg, m: u128{lo: a.m.lo % b.m.lo}}
		}
		if t < s {
			var ok bool
			if r, ok = r.scaleUp(s - t); !ok {
				return 0, false
			}
		} else {
			r = r.scaleDown(t - s)
		}
		return r.fit(p)
	case OpMul:
		hi, lo := bits.Mul64(a.m.lo, b.m.lo)
		r := d128{neg: a.neg != b.neg, m: u128{hi, lo}}
		t := sx + sy
		if t < s {
			var ok bool
			if r, ok = r.scaleUp(s - t); !ok {
				return 0, false
			}
		} else {
			r = r.scaleDown(t - s)
		}
		return r.fit(p)
	case OpDiv:
		if y == 0 {
			return 0, false
		}
		// r = x * 10^(s + sy - sx) / y
		k := s + sy - sx
		if k < 0 || b.m.hi != 0 {
			return decArithBig(op, x, sx, y, sy, p, s)
		}
		n, ok := a.scaleUp(k)
		if !ok {
			return decArithBig(op, x, sx, y, sy, p, s)
		}
		q, rem := n.m.divmod64(b.m.lo)
		if rem >= b.m.lo-rem {
			q, _ = q.add(u128{lo: 1})
		}
		return d128{neg: a.neg != b.neg, m: q}.fit(p)
	}
	return 0, false
}

// decArithBig is decArith through math/big, for the rare operands whose
// intermediate values do not fit 128 bits.
func decArithBig(op Op, x int64, sx int, y int64, sy int, p, s int) (int64, bool) {
	a := new(big.Rat).SetFrac(big.NewInt(x), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(sx)), nil))
	b := new(big.Rat).SetFrac(big.NewInt(y), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(sy)), nil))
	r := new(big.Rat)
	switch op {
	case OpAdd:
		r.Add(a, b)
	case OpSub:
		r.Sub(a, b)
	case OpMul:
		r.Mul(a, b)
	case OpDiv:
		if b.Sign() == 0 {
			return 0, false
		}
		r.Quo(a, b)
	case OpMod:
		if b.Sign() == 0 {
			return 0, false
		}
		q := new(big.Rat).Quo(a, b)
		qi := new(big.Int).Quo(q.Num(), q.Denom()) // truncates toward zero
		r.Sub(a, new(big.Rat).Mul(new(big.Rat).SetInt(qi), b))
	}
	// unscaled = round_half_up(r * 10^s)
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(s)), nil)))
	num, den := new(big.Int).Abs(r.Num()), r.Denom()
	q, m := new(big.Int).QuoRem(num, den, new(big.Int))
	if m.Lsh(m, 1).Cmp(den) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() || q.Int64() >= pow10[min(p, 18)] {
		return 0, false
	}
	v := q.Int64()
	if r.Sign() < 0 {
		v = -v
	}
	return v, true
}

// decCompare compares unscaled x (scale sx) with y (scale sy).
func decCompare(x int64, sx int, y int64, sy int) int {
	a, b := d128of(x), d128of(y)
	t := max(sx, sy)
	a, _ = a.scaleUp(t - sx) // at most 18 digits times 10^18: fits 128 bits
	b, _ = b.scaleUp(t - sy)
	return a.cmp(b)
}

// decToFloat converts an unscaled value to float64.
func decToFloat(v int64, s int) float64 {
	if s == 0 {
		return float64(v)
	}
	if v > -1<<53 && v < 1<<53 {
		return float64(v) / pow10f[s]
	}
	var buf [32]byte
	b := types.AppendDecimal(buf[:0], v, s)
	f, _ := strconv.ParseFloat(string(b), 64)
	return f
}

// decFromFloat converts f to DECIMAL(p, s) as BigDecimal.valueOf(f)
// .setScale(s, HALF_UP) does: from f's shortest decimal digits.
func decFromFloat(f float64, p, s int) (int64, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	return decFromText(b, p, s)
}

// decFromText parses decimal text ("-12.5", "1e3", " 7 " is not accepted:
// callers trim) into DECIMAL(p, s), rounding HALF_UP.
func decFromText(b []byte, p, s int) (int64, bool) {
	neg := false
	i := 0
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	// collect significant digits and the decimal exponent of the last one
	var digits [40]byte
	nd := 0
	exp := 0 // value = digits × 10^exp
	seenPoint, any := false, false
	dropped := 0 // digits beyond our buffer (before the point) add to exp
	for ; i < len(b); i++ {
		c := b[i]
		if c == '.' && !seenPoint {
			seenPoint = true
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		any = true
		if nd == 0 && c == '0' {
			if seenPoint {
				exp--
			}
			continue
		}
		if nd < len(digits) {
			digits[nd] = c
			nd++
			if seenPoint {
				exp--
			}
		} else if !seenPoint {
			dropped++
		}
	}
	if !any {
		return 0, false
	}
	exp += dropped
	if i < len(b) {
		if b[i] != 'e' && b[i] != 'E' {
			return 0, false
		}
		e, err := strconv.Atoi(string(b[i+1:]))
		if err != nil {
			return 0, false
		}
		exp += e
	}
	// unscaled = digits × 10^(exp+s)
	k := exp + s
	n := nd
	roundUp := false
	if k < 0 {
		cut := nd + k // digits kept
		if cut < 0 {
			return 0, true
		}
		roundUp = cut < nd && digits[cut] >= '5'
		n = cut
		k = 0
	}
	var d d128
	for j := 0; j < n; j++ {
		m, ok := d.m.mul64(10)
		if !ok {
			return 0, false
		}
		d.m, ok = m.add(u128{lo: uint64(digits[j] - '0')})
		if !ok {
			return 0, false
		}
	}
	if roundUp {
		d.m, _ = d.m.add(u128{lo: 1})
	}
	if k > 40 {
		if d.m.isZero() {
			return 0, true
		}
		return 0, false
	}
	d, ok := d.scaleUp(k)
	if !ok {
		return 0, false
	}
	d.neg = neg
	return d.fit(p)
}
