package types

import "strconv"

// Datum is one typed SQL value. Which field holds the value depends on the
// column's Type, which the datum does not repeat:
//
//	BOOLEAN            I (0 or 1)
//	INT, BIGINT        I
//	DATE               I (days since 1970-01-01)
//	TIME               I (milliseconds since midnight)
//	TIMESTAMP          I (milliseconds since the Unix epoch, UTC)
//	DECIMAL(p, s)      I (the unscaled value: 12.34 in DECIMAL(4,2) is 1234)
//	                   for p up to 18; B (the unscaled value as two's-
//	                   complement bytes) above: see decimal.go
//	DOUBLE             F
//	STRING, BYTES      B
//	ARRAY              L (the elements)
//	MAP                L (keys and values interleaved: k0, v0, k1, v1, …)
//	STRUCT             L (one datum per field, in the type's field order)
//
// Null marks SQL NULL; the other fields are then meaningless. B and L may
// alias memory owned by a decoder or evaluator (see the package doc).
type Datum struct {
	Null bool
	I    int64
	F    float64
	B    []byte
	L    []Datum
}

// Row is a reusable slice of datums laid out by a Schema.
type Row []Datum

// NullDatum is the SQL NULL.
var NullDatum = Datum{Null: true}

// BoolDatum returns a BOOLEAN datum.
func BoolDatum(v bool) Datum {
	if v {
		return Datum{I: 1}
	}
	return Datum{}
}

// IntDatum returns an INT or BIGINT datum.
func IntDatum(v int64) Datum { return Datum{I: v} }

// DoubleDatum returns a DOUBLE datum.
func DoubleDatum(v float64) Datum { return Datum{F: v} }

// StringDatum returns a STRING datum holding s's bytes (one copy).
func StringDatum(s string) Datum { return Datum{B: []byte(s)} }

// Bool reports a BOOLEAN datum's value; NULL is false.
func (d Datum) Bool() bool { return !d.Null && d.I != 0 }

// Clone returns d with its bytes and elements copied, safe to keep past
// the next record.
func (d Datum) Clone() Datum {
	if d.Null {
		return NullDatum
	}
	if d.B != nil {
		d.B = append([]byte(nil), d.B...)
	}
	if d.L != nil {
		l := make([]Datum, len(d.L))
		for i, e := range d.L {
			l[i] = e.Clone()
		}
		d.L = l
	}
	return d
}

// CloneRow copies r and all the bytes it references.
func CloneRow(r Row) Row {
	out := make(Row, len(r))
	for i, d := range r {
		out[i] = d.Clone()
	}
	return out
}

// AppendText appends the text form of d, read as type t, to dst: the form
// psql prints and ksqlDB's CLI shows. NULL appends nothing; callers that
// must tell NULL apart check d.Null first.
//
//	BOOLEAN     true, false
//	INT, BIGINT 42
//	DOUBLE      shortest form that reads back exactly: 3.25, 20, 1e+21, NaN, +Inf
//	DECIMAL     the type's scale, never an exponent: 12.30, -0.05
//	STRING      the bytes as they are
//	BYTES       \x then lower-case hex, as Postgres prints bytea
//	DATE        2024-02-29
//	TIME        13:14:15.123
//	TIMESTAMP   2024-02-29T13:14:15.123 (UTC)
//	ARRAY, MAP, STRUCT  their JSON form (AppendJSONValue)
func AppendText(dst []byte, d Datum, t Type) []byte {
	if d.Null {
		return dst
	}
	switch t.Kind {
	case Boolean:
		if d.I != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Int, Bigint:
		return strconv.AppendInt(dst, d.I, 10)
	case Double:
		return strconv.AppendFloat(dst, d.F, 'g', -1, 64)
	case String:
		return append(dst, d.B...)
	case Bytes:
		dst = append(dst, `\x`...)
		for _, c := range d.B {
			dst = append(dst, hexDigits[c>>4], hexDigits[c&15])
		}
		return dst
	case Date:
		return appendDate(dst, d.I)
	case Time:
		return appendClock(dst, d.I)
	case Timestamp:
		return appendTimestamp(dst, d.I)
	case Decimal:
		return AppendDecimalDatum(dst, d, t)
	case Array, Map, Struct:
		return AppendJSONValue(dst, d, t)
	}
	return append(dst, '?')
}

// AppendDecimal appends the unscaled value v with scale digits after the
// point: (1234, 2) is "12.34", (-5, 2) is "-0.05", (7, 0) is "7". It never
// writes an exponent.
func AppendDecimal(dst []byte, v int64, scale int) []byte {
	if scale <= 0 {
		return strconv.AppendInt(dst, v, 10)
	}
	u := uint64(v)
	if v < 0 {
		dst = append(dst, '-')
		u = -u
	}
	var buf [20]byte
	digits := strconv.AppendUint(buf[:0], u, 10)
	if len(digits) <= scale {
		dst = append(dst, '0', '.')
		for i := len(digits); i < scale; i++ {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
	dst = append(dst, digits[:len(digits)-scale]...)
	dst = append(dst, '.')
	return append(dst, digits[len(digits)-scale:]...)
}

// Text returns the text form of d as a string ("NULL" for NULL), for
// messages and tests.
func Text(d Datum, t Type) string {
	if d.Null {
		return "NULL"
	}
	return string(AppendText(nil, d, t))
}

// setNull makes d NULL but keeps its element slice, so that a decoder can
// reuse it for the next composite value.
func setNull(d *Datum) {
	*d = Datum{Null: true, L: d.L[:0]}
}

// growDatums returns l with length n, reusing its backing array (and the
// element slices of the datums in it) when it is large enough.
func growDatums(l []Datum, n int) []Datum {
	if cap(l) >= n {
		return l[:n]
	}
	nl := make([]Datum, n)
	copy(nl, l[:cap(l)])
	return nl
}
