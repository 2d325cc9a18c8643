package pgwire

// This file maps SQL types to Postgres type OIDs and encodes datums in the
// text (format 0) and binary (format 1) wire forms.
//
//	SQL type           OID              binary form
//	BOOLEAN            bool (16)        1 byte, 0 or 1
//	INT                int4 (23)        4 bytes big-endian
//	BIGINT             int8 (20)        8 bytes big-endian
//	DOUBLE             float8 (701)     IEEE 754, big-endian
//	DECIMAL(p,s)       numeric (1700)   Postgres numeric (base-10000 digits)
//	STRING             text (25)        the bytes
//	BYTES              bytea (17)       the bytes
//	DATE               date (1082)      int32 days since 2000-01-01
//	TIME               time (1083)      int64 microseconds since midnight
//	TIMESTAMP          timestamp (1114) int64 microseconds since 2000-01-01
//	ARRAY, MAP, STRUCT json (114)       the JSON text
//	unknown (NULL)     text (25)        the text form
//
// DECIMAL datums hold their unscaled value in I (see types.Datum); ARRAY,
// MAP and STRUCT datums their elements in L, sent as JSON text.

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// Postgres type OIDs (pg_type.oid) of the types sqlstreams sends.
const (
	oidBool      = 16
	oidBytea     = 17
	oidInt8      = 20
	oidInt4      = 23
	oidText      = 25
	oidJSON      = 114
	oidFloat8    = 701
	oidDate      = 1082
	oidTime      = 1083
	oidTimestamp = 1114
	oidNumeric   = 1700
)

// Wire format codes.
const (
	formatText   int16 = 0
	formatBinary int16 = 1
)

const (
	// unixToPGDays is the number of days from 1970-01-01 to 2000-01-01,
	// the Postgres epoch.
	unixToPGDays = 10957
	// unixToPGMillis is the same distance in milliseconds.
	unixToPGMillis = unixToPGDays * 86400 * 1000
)

// typeOID returns the Postgres type OID that carries values of t.
func typeOID(t types.Type) uint32 {
	switch t.Kind {
	case types.Boolean:
		return oidBool
	case types.Int:
		return oidInt4
	case types.Bigint:
		return oidInt8
	case types.Double:
		return oidFloat8
	case types.Decimal:
		return oidNumeric
	case types.String:
		return oidText
	case types.Bytes:
		return oidBytea
	case types.Date:
		return oidDate
	case types.Time:
		return oidTime
	case types.Timestamp:
		return oidTimestamp
	case types.Array, types.Map, types.Struct:
		return oidJSON
	}
	return oidText
}

// typeSize returns pg_type.typlen for t's OID: the fixed size, or -1 for
// variable-length types.
func typeSize(t types.Type) int16 {
	switch t.Kind {
	case types.Boolean:
		return 1
	case types.Int, types.Date:
		return 4
	case types.Bigint, types.Double, types.Time, types.Timestamp:
		return 8
	}
	return -1
}

// typeMod returns the type modifier of t (numeric's precision and scale),
// or -1.
func typeMod(t types.Type) int32 {
	if t.Kind == types.Decimal && t.Precision > 0 {
		return int32(t.Precision<<16|t.Scale) + 4
	}
	return -1
}

// fieldDescriptions appends one RowDescription field per column to dst.
// formats holds one format code per column, or is nil for all text.
func fieldDescriptions(dst []pgproto3.FieldDescription, cols []types.Column, formats []int16) []pgproto3.FieldDescription {
	for i, c := range cols {
		f := formatText
		if formats != nil {
			f = formats[i]
		}
		dst = append(dst, pgproto3.FieldDescription{
			Name:         []byte(noNUL(c.Name)),
			DataTypeOID:  typeOID(c.Type),
			DataTypeSize: typeSize(c.Type),
			TypeModifier: typeMod(c.Type),
			Format:       f,
		})
	}
	return dst
}

// resolveFormats expands Bind's result format codes to one code per column
// into dst: no codes means all text, one code applies to every column,
// otherwise there must be one per column.
func resolveFormats(dst []int16, codes []int16, ncols int) ([]int16, error) {
	dst = dst[:0]
	if err := formatCount(codes, ncols); err != nil {
		return dst, err
	}
	for i := 0; i < ncols; i++ {
		f := formatText
		switch len(codes) {
		case 0:
		case 1:
			f = codes[0]
		default:
			f = codes[i]
		}
		dst = append(dst, f)
	}
	return dst, nil
}

// formatCount reports an error when Bind's result format codes are
// neither none, one, nor one per column.
func formatCount(codes []int16, ncols int) error {
	if len(codes) > 1 && len(codes) != ncols {
		return sql.Errorf(codeProtocolViolation, "bind message has %d result formats but query has %d columns", len(codes), ncols)
	}
	return nil
}

// checkFormats reports an error for a format code other than text or binary.
func checkFormats(codes []int16) error {
	for _, f := range codes {
		if f != formatText && f != formatBinary {
			return sql.Errorf(sql.CodeInvalidParameter, "unsupported format code: %d", f)
		}
	}
	return nil
}

// appendValue appends the wire form of the non-NULL datum d, read as type t,
// in format f.
func appendValue(dst []byte, d types.Datum, t types.Type, f int16) ([]byte, error) {
	if f == formatBinary {
		return appendBinary(dst, d, t)
	}
	return appendText(dst, d, t), nil
}

// appendText appends the Postgres text form of the non-NULL datum d. It
// follows types.AppendText except where Postgres spells a value differently:
// booleans are t/f, timestamps have a space between date and time, and
// floats use Infinity and NaN.
func appendText(dst []byte, d types.Datum, t types.Type) []byte {
	switch t.Kind {
	case types.Boolean:
		if d.I != 0 {
			return append(dst, 't')
		}
		return append(dst, 'f')
	case types.Double:
		switch {
		case math.IsInf(d.F, 1):
			return append(dst, "Infinity"...)
		case math.IsInf(d.F, -1):
			return append(dst, "-Infinity"...)
		case math.IsNaN(d.F):
			return append(dst, "NaN"...)
		}
		return strconv.AppendFloat(dst, d.F, 'g', -1, 64)
	case types.Timestamp:
		return time.UnixMilli(d.I).UTC().AppendFormat(dst, "2006-01-02 15:04:05.000")
	}
	return types.AppendText(dst, d, t)
}

// appendBinary appends the Postgres binary form of the non-NULL datum d.
func appendBinary(dst []byte, d types.Datum, t types.Type) ([]byte, error) {
	switch t.Kind {
	case types.Boolean:
		if d.I != 0 {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	case types.Int:
		return binary.BigEndian.AppendUint32(dst, uint32(int32(d.I))), nil
	case types.Bigint:
		return binary.BigEndian.AppendUint64(dst, uint64(d.I)), nil
	case types.Double:
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(d.F)), nil
	case types.String, types.Bytes:
		return append(dst, d.B...), nil
	case types.Date:
		return binary.BigEndian.AppendUint32(dst, uint32(int32(d.I-unixToPGDays))), nil
	case types.Time:
		return binary.BigEndian.AppendUint64(dst, uint64(d.I*1000)), nil
	case types.Timestamp:
		return binary.BigEndian.AppendUint64(dst, uint64((d.I-unixToPGMillis)*1000)), nil
	case types.Decimal:
		var buf [32]byte
		return appendNumeric(dst, types.AppendDecimalDatum(buf[:0], d, t))
	}
	// json and text: the binary form is the text form.
	return appendText(dst, d, t), nil
}

// Numeric sign words.
const (
	numericPos    = 0x0000
	numericNeg    = 0x4000
	numericNaN    = 0xC000
	numericPosInf = 0xD000
	numericNegInf = 0xF000
)

// appendNumeric appends the binary numeric form of a decimal number written
// as text ("-123.4500", "1.5e3", "NaN", "Infinity"): int16 ndigits, int16
// weight, uint16 sign, int16 dscale, then ndigits base-10000 digits, most
// significant first, the first worth 10000^weight. It allocates nothing.
func appendNumeric(dst []byte, text []byte) ([]byte, error) {
	bad := func() ([]byte, error) {
		return dst, sql.Errorf(sql.CodeInternal, "invalid DECIMAL text %q", string(text))
	}
	special := func(sign uint16) ([]byte, error) {
		dst = binary.BigEndian.AppendUint16(dst, 0)
		dst = binary.BigEndian.AppendUint16(dst, 0)
		dst = binary.BigEndian.AppendUint16(dst, sign)
		return binary.BigEndian.AppendUint16(dst, 0), nil
	}
	s := text
	switch string(s) { // no allocation: the compiler compares in place
	case "NaN", "nan", "NAN":
		return special(numericNaN)
	case "Infinity", "+Infinity", "infinity", "+infinity", "inf", "+inf":
		return special(numericPosInf)
	case "-Infinity", "-infinity", "-inf":
		return special(numericNegInf)
	}
	neg := false
	if len(s) > 0 && (s[0] == '-' || s[0] == '+') {
		neg = s[0] == '-'
		s = s[1:]
	}
	// Split mantissa digits (integer part ip, fraction fp) and exponent.
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	ip := s[:i]
	var fp []byte
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		fp = s[i+1 : j]
		i = j
	}
	if len(ip)+len(fp) == 0 {
		return bad()
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		e, err := strconv.Atoi(string(s[i+1:]))
		if err != nil || e > 1<<20 || e < -(1<<20) {
			return bad()
		}
		exp = e
		i = len(s)
	}
	if i != len(s) {
		return bad()
	}
	total := len(ip) + len(fp)
	digit := func(k int) int {
		if k < len(ip) {
			return int(ip[k] - '0')
		}
		return int(fp[k-len(ip)] - '0')
	}
	// Digit k is worth 10^(point-1-k); a base-10000 group w covers the
	// powers 4w .. 4w+3.
	point := len(ip) + exp
	group := func(w int) int {
		v := 0
		for e := 4*w + 3; e >= 4*w; e-- {
			v *= 10
			if k := point - 1 - e; k >= 0 && k < total {
				v += digit(k)
			}
		}
		return v
	}
	hi, lo := floorDiv(point-1, 4), floorDiv(point-total, 4)
	for hi >= lo && group(hi) == 0 {
		hi--
	}
	for lo <= hi && group(lo) == 0 {
		lo++
	}
	dscale := len(fp) - exp
	if dscale < 0 {
		dscale = 0
	}
	ndigits, weight, sign := hi-lo+1, hi, numericPos
	if hi < lo {
		ndigits, weight = 0, 0
	} else if neg {
		sign = numericNeg
	}
	if ndigits > math.MaxInt16 || weight > math.MaxInt16 || weight < math.MinInt16 || dscale > 0x3FFF {
		return dst, sql.Errorf(sql.CodeInternal, "DECIMAL value %q out of range", string(text))
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(ndigits))
	dst = binary.BigEndian.AppendUint16(dst, uint16(int16(weight)))
	dst = binary.BigEndian.AppendUint16(dst, uint16(sign))
	dst = binary.BigEndian.AppendUint16(dst, uint16(dscale))
	for w := hi; w >= lo; w-- {
		dst = binary.BigEndian.AppendUint16(dst, uint16(group(w)))
	}
	return dst, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// floorDiv is a/b rounded toward negative infinity, for b > 0.
func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}
