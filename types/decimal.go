package types

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/apd/v3"
)

// DECIMAL values come in two forms, chosen by the type's precision:
//
//   - short, precision 1 to ShortDecimalPrecision: the unscaled value in
//     Datum.I (12.34 in DECIMAL(4,2) is 1234). Every path that existed
//     before wide decimals uses it, and it never allocates.
//   - wide, precision above ShortDecimalPrecision up to
//     MaxDecimalPrecision: the unscaled value in Datum.B as the shortest
//     big-endian two's-complement bytes (Java's BigInteger.toByteArray,
//     which is also Avro's and Connect's decimal encoding; zero is one
//     0x00 byte, so B is never nil). The form is canonical, so two wide
//     values of one type are equal exactly when their bytes are.
//
// Arithmetic on the wide form goes through github.com/cockroachdb/apd,
// an arbitrary-precision decimal with explicit rounding contexts.

// ShortDecimalPrecision is the largest DECIMAL precision held in Datum.I.
const ShortDecimalPrecision = 18

// MaxDecimalPrecision is the largest DECIMAL precision accepted. ksqlDB
// sets no limit; arithmetic types grow with their operands (a product's
// precision is the sum of its operands' plus one), so the bound is wide.
const MaxDecimalPrecision = 1000

// ErrDecimalOverflow is returned for a value that does not fit its
// DECIMAL type's precision ("Numeric field overflow", as ksqlDB says).
var ErrDecimalOverflow = errors.New("numeric field overflow")

// IsWideDecimal reports whether t is a DECIMAL held in the wide form.
func (t Type) IsWideDecimal() bool {
	return t.Kind == Decimal && t.Precision > ShortDecimalPrecision
}

// DecimalValue sets z to d, a non-NULL value of the DECIMAL type t, and
// returns z.
func DecimalValue(z *apd.Decimal, d Datum, t Type) *apd.Decimal {
	if !t.IsWideDecimal() {
		return z.SetFinite(d.I, int32(-t.Scale))
	}
	z.Form = apd.Finite
	z.Exponent = int32(-t.Scale)
	z.Negative = readTwos(&z.Coeff, d.B)
	return z
}

// DecimalContext is the rounding used to fit values into DECIMAL types:
// HALF_UP, as Java's BigDecimal.setScale(s, HALF_UP) that ksqlDB uses.
var DecimalContext = apd.Context{
	Precision:   2*MaxDecimalPrecision + 2,
	MaxExponent: apd.MaxExponent,
	MinExponent: apd.MinExponent,
	Rounding:    apd.RoundHalfUp,
	Traps:       apd.DefaultTraps,
}

// DecimalDatum rounds x (HALF_UP) to the scale of the DECIMAL type t and
// returns it as a datum of t. A wide value's bytes are appended to buf,
// which is returned grown. ok is false when the value does not fit t's
// precision (or x is not finite).
func DecimalDatum(x *apd.Decimal, t Type, buf []byte) (d Datum, out []byte, ok bool) {
	if x.Form != apd.Finite {
		return NullDatum, buf, false
	}
	var r apd.Decimal
	if !x.IsZero() {
		// The place of the leading digit bounds the work: text such as
		// 1e999999999 must fail (or 1e-999999999 round to zero) before
		// Quantize writes out its digits.
		lead := int64(x.Exponent) + x.NumDigits() - 1
		if lead >= int64(t.Precision-t.Scale) {
			return NullDatum, buf, false
		}
		if lead < -int64(t.Scale)-1 { // below half a unit of the last place
			x = &r
		}
	}
	if _, err := DecimalContext.Quantize(&r, x, int32(-t.Scale)); err != nil {
		return NullDatum, buf, false
	}
	if r.IsZero() {
		r.Negative = false
	}
	if r.NumDigits() > int64(t.Precision) && !r.IsZero() {
		return NullDatum, buf, false
	}
	if !t.IsWideDecimal() {
		v := r.Coeff.Int64()
		if r.Negative {
			v = -v
		}
		return Datum{I: v}, buf, true
	}
	start := len(buf)
	buf = appendTwos(buf, r.Negative, &r.Coeff)
	return Datum{B: buf[start:len(buf):len(buf)]}, buf, true
}

// AppendDecimalDatum appends the text of a DECIMAL datum of type t: its
// scale's digits after the point, never an exponent.
func AppendDecimalDatum(dst []byte, d Datum, t Type) []byte {
	if !t.IsWideDecimal() {
		return AppendDecimal(dst, d.I, t.Scale)
	}
	var z apd.Decimal
	return DecimalValue(&z, d, t).Append(dst, 'f')
}

// ParseDecimalDatum parses decimal text ("-12.5", "1e3") into the
// DECIMAL type t, rounding HALF_UP to its scale; wide bytes are appended
// to buf. It fails for text that is not a number and for a value that
// does not fit t's precision.
func ParseDecimalDatum(text []byte, t Type, buf []byte) (Datum, []byte, error) {
	var z apd.Decimal
	if _, _, err := z.SetString(string(text)); err != nil || z.Form != apd.Finite {
		return NullDatum, buf, fmt.Errorf("%q is not a decimal number", text)
	}
	d, buf, ok := DecimalDatum(&z, t, buf)
	if !ok {
		return NullDatum, buf, fmt.Errorf("%s does not fit %s: %w", text, t, ErrDecimalOverflow)
	}
	return d, buf, nil
}

// WideDecimalFromUnscaled makes a wide DECIMAL datum of type t from
// big-endian two's-complement unscaled bytes at scale (Avro's and
// Protobuf's decimal encoding), rescaling HALF_UP to t's scale; the
// canonical bytes are appended to buf.
func WideDecimalFromUnscaled(unscaled []byte, scale int, t Type, buf []byte) (Datum, []byte, bool) {
	var z apd.Decimal
	z.Negative = readTwos(&z.Coeff, unscaled)
	z.Exponent = int32(-scale)
	return DecimalDatum(&z, t, buf)
}

// AppendUnscaled appends the unscaled value of a DECIMAL datum of type t
// as shortest big-endian two's-complement bytes.
func AppendUnscaled(dst []byte, d Datum, t Type) []byte {
	if t.IsWideDecimal() {
		return append(dst, d.B...)
	}
	var c apd.BigInt
	v := d.I
	neg := v < 0
	if neg {
		c.SetUint64(uint64(-v)) // -MinInt64 wraps to 1<<63, right as unsigned
	} else {
		c.SetInt64(v)
	}
	return appendTwos(dst, neg, &c)
}

var bigOne = apd.NewBigInt(1)

// appendTwos appends -m (neg) or m as shortest two's-complement bytes.
func appendTwos(dst []byte, neg bool, m *apd.BigInt) []byte {
	if m.Sign() == 0 {
		return append(dst, 0)
	}
	if !neg {
		b := m.Bytes()
		if b[0]&0x80 != 0 {
			dst = append(dst, 0)
		}
		return append(dst, b...)
	}
	// n bytes hold -m when m ≤ 2^(8n-1), that is when (m-1) has fewer
	// than 8n bits; the bytes are 2^(8n) - m.
	var t apd.BigInt
	t.Sub(m, bigOne)
	n := t.BitLen()/8 + 1
	t.Lsh(bigOne, uint(8*n))
	t.Sub(&t, m)
	start := len(dst)
	dst = append(dst, make([]byte, n)...)
	t.FillBytes(dst[start:])
	return dst
}

// readTwos sets m to the magnitude of the two's-complement bytes b and
// reports whether they are negative. Empty b is zero.
func readTwos(m *apd.BigInt, b []byte) bool {
	m.SetBytes(b)
	if len(b) == 0 || b[0]&0x80 == 0 {
		return false
	}
	var t apd.BigInt
	t.Lsh(bigOne, uint(8*len(b)))
	m.Sub(&t, m)
	return true
}
