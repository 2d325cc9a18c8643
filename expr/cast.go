package expr

import (
	"bytes"
	"fmt"
	"math"
	"strconv"

	"github.com/sqlstreams/sqlstreams/types"
)

// converter turns a non-NULL value into another type, writing any bytes
// or elements it builds into a. ok false means the value does not convert
// (the result is NULL).
type converter func(a *arena, d types.Datum) (types.Datum, bool)

func compileCast(c *Cast, sc *scope) (Evaluator, error) {
	x, err := compile(c.X, sc)
	if err != nil {
		return nil, err
	}
	from := c.X.Type()
	if from.Kind == types.Unknown || from.Equal(c.T) {
		return x, nil
	}
	conv, err := newConverter(from, c.T)
	if err != nil {
		return nil, err
	}
	var a arena
	return func(row types.Row) (types.Datum, error) {
		d, err := x(row)
		if err != nil || d.Null {
			return types.NullDatum, err
		}
		a.reset()
		v, ok := conv(&a, d)
		if !ok {
			return types.NullDatum, nil
		}
		return v, nil
	}, nil
}

func identity(_ *arena, d types.Datum) (types.Datum, bool) { return d, true }

// newConverter builds the conversion from one type to another; castable
// has said it exists.
func newConverter(from, to types.Type) (converter, error) {
	if from.Equal(to) || from.Kind == types.Unknown {
		return identity, nil
	}
	if to.Kind == types.String {
		return toStringConverter(from), nil
	}
	switch {
	case from.IsNumeric() && to.IsNumeric():
		return numericConverter(from, to), nil
	case from.Kind == types.String:
		return fromStringConverter(to), nil
	case from.Kind == types.Timestamp && to.Kind == types.Date:
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			return types.IntDatum(floorDiv(d.I, msPerDay)), true
		}, nil
	case from.Kind == types.Timestamp && to.Kind == types.Time:
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			return types.IntDatum(floorMod(d.I, msPerDay)), true
		}, nil
	case from.Kind == types.Date && to.Kind == types.Timestamp:
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			return types.IntDatum(d.I * msPerDay), true
		}, nil
	case from.Kind == types.Array && to.Kind == types.Array:
		ec, err := newConverter(*from.Elem, *to.Elem)
		if err != nil {
			return nil, err
		}
		return func(a *arena, d types.Datum) (types.Datum, bool) {
			n := len(d.L)
			start := a.list(n)
			for i, e := range d.L {
				a.l[start+i] = convertOrNull(ec, a, e)
			}
			return types.Datum{L: a.done(start, n)}, true
		}, nil
	case from.Kind == types.Map && to.Kind == types.Map:
		kc, err := newConverter(*from.KeyType, *to.KeyType)
		if err != nil {
			return nil, err
		}
		vc, err := newConverter(*from.Elem, *to.Elem)
		if err != nil {
			return nil, err
		}
		kt := *to.KeyType
		return func(a *arena, d types.Datum) (types.Datum, bool) {
			start := a.list(len(d.L))
			n := 0
			for i := 0; i+1 < len(d.L); i += 2 {
				k := convertOrNull(kc, a, d.L[i])
				if k.Null {
					continue
				}
				v := convertOrNull(vc, a, d.L[i+1])
				if j := mapFind(a.l[start:start+n], k, kt); j >= 0 {
					a.l[start+j+1] = v
					continue
				}
				a.l[start+n], a.l[start+n+1] = k, v
				n += 2
			}
			return types.Datum{L: a.done(start, n)}, true
		}, nil
	case from.Kind == types.Struct && to.Kind == types.Struct:
		src := make([]int, len(to.Fields))
		convs := make([]converter, len(to.Fields))
		for i, tf := range to.Fields {
			src[i] = -1
			for j, ff := range from.Fields {
				if ff.Name == tf.Name {
					c, err := newConverter(ff.Type, tf.Type)
					if err != nil {
						return nil, err
					}
					src[i], convs[i] = j, c
					break
				}
			}
		}
		return func(a *arena, d types.Datum) (types.Datum, bool) {
			n := len(src)
			start := a.list(n)
			for i, j := range src {
				v := types.NullDatum
				if j >= 0 && j < len(d.L) {
					v = convertOrNull(convs[i], a, d.L[j])
				}
				a.l[start+i] = v
			}
			return types.Datum{L: a.done(start, n)}, true
		}, nil
	}
	return nil, fmt.Errorf("cannot cast %s to %s", from, to)
}

func convertOrNull(c converter, a *arena, d types.Datum) types.Datum {
	if d.Null {
		return types.NullDatum
	}
	v, ok := c(a, d)
	if !ok {
		return types.NullDatum
	}
	return v
}

func toStringConverter(from types.Type) converter {
	switch from.Kind {
	case types.String:
		return identity
	}
	return func(a *arena, d types.Datum) (types.Datum, bool) {
		start := len(a.b)
		a.b = appendJava(a.b, d, from)
		return types.Datum{B: a.since(start)}, true
	}
}

// numericConverter converts between INT, BIGINT, DOUBLE and DECIMAL.
func numericConverter(from, to types.Type) converter {
	if isWide(from) || isWide(to) {
		return wideConverter(from, to)
	}
	switch to.Kind {
	case types.Int, types.Bigint:
		narrow := to.Kind == types.Int
		switch from.Kind {
		case types.Double:
			return func(_ *arena, d types.Datum) (types.Datum, bool) {
				if narrow {
					return types.IntDatum(int64(javaF2I(d.F))), true
				}
				return types.IntDatum(javaF2L(d.F)), true
			}
		case types.Decimal:
			div := pow10[from.Scale]
			return func(_ *arena, d types.Datum) (types.Datum, bool) {
				v := d.I / div
				if narrow {
					v = int64(int32(v))
				}
				return types.IntDatum(v), true
			}
		}
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			v := d.I
			if narrow {
				v = int64(int32(v))
			}
			return types.IntDatum(v), true
		}
	case types.Double:
		f := asFloat(from)
		return func(_ *arena, d types.Datum) (types.Datum, bool) { return types.DoubleDatum(f(d)), true }
	case types.Decimal:
		p, s := to.Precision, to.Scale
		switch from.Kind {
		case types.Double:
			return func(_ *arena, d types.Datum) (types.Datum, bool) {
				v, ok := decFromFloat(d.F, p, s)
				return types.IntDatum(v), ok
			}
		}
		_, fs := asDecimal(from)
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			v, ok := rescale(d.I, fs, s, p)
			return types.IntDatum(v), ok
		}
	}
	return identity
}

// javaF2I is Java's (int) cast of a double: truncation, NaN to 0,
// saturation at the ends.
func javaF2I(f float64) int32 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(f)
}

// javaF2L is Java's (long) cast of a double.
func javaF2L(f float64) int64 {
	switch {
	case math.IsNaN(f):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

// javaTrim trims as Java's String.trim: every character at or below
// U+0020.
func javaTrim(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && b[i] <= ' ' {
		i++
	}
	for j > i && b[j-1] <= ' ' {
		j--
	}
	return b[i:j]
}

func fromStringConverter(to types.Type) converter {
	switch to.Kind {
	case types.Boolean:
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			return types.BoolDatum(parseJavaBool(javaTrim(d.B))), true
		}
	case types.Int, types.Bigint:
		bitSize := 64
		if to.Kind == types.Int {
			bitSize = 32
		}
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			v, ok := parseInt(javaTrim(d.B), bitSize)
			return types.IntDatum(v), ok
		}
	case types.Double:
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			f, ok := parseJavaDouble(javaTrim(d.B))
			return types.DoubleDatum(f), ok
		}
	case types.Decimal:
		if isWide(to) {
			return func(a *arena, d types.Datum) (types.Datum, bool) {
				return decimalFromText(a, javaTrim(d.B), to)
			}
		}
		p, s := to.Precision, to.Scale
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			v, ok := decFromText(javaTrim(d.B), p, s)
			return types.IntDatum(v), ok
		}
	case types.Date:
		var buf []byte
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			buf = completeDate(buf[:0], javaTrim(d.B))
			v, ok := parseISODate(buf)
			return types.IntDatum(v), ok
		}
	case types.Time:
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			v, ok := parseISOTime(javaTrim(d.B))
			return types.IntDatum(v), ok
		}
	case types.Timestamp:
		return func(_ *arena, d types.Datum) (types.Datum, bool) {
			v, ok := parseISOTimestamp(javaTrim(d.B))
			return types.IntDatum(v), ok
		}
	}
	return func(*arena, types.Datum) (types.Datum, bool) { return types.NullDatum, false }
}

// parseJavaBool is ksqlDB's lenient boolean (SqlBooleans.parseBoolean):
// a non-empty prefix of true or yes, in any case; anything else is false.
func parseJavaBool(b []byte) bool {
	v, ok := parseBoolPrefix(string(b))
	return ok && v
}

// parseInt parses a decimal integer as Java's Integer.parseInt and
// Long.parseLong do (optional sign, digits only).
func parseInt(b []byte, bitSize int) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var buf [24]byte
	v, err := strconv.ParseInt(string(append(buf[:0], b...)), 10, bitSize)
	return v, err == nil
}

// parseJavaDouble parses as Double.parseDouble: also "NaN", "Infinity"
// and a trailing d or f.
func parseJavaDouble(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 64 {
		return 0, false
	}
	if c := b[len(b)-1]; c == 'd' || c == 'D' || c == 'f' || c == 'F' {
		b = b[:len(b)-1]
	}
	s := b
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	switch string(s) {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if b[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' || c == 'x' || c == 'X' || c == 'p' || c == 'P' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return 0, false
		}
	}
	var buf [64]byte
	f, err := strconv.ParseFloat(string(append(buf[:0], b...)), 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return f, true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// digitsAt reads exactly n digits at b[i:].
func digitsAt(b []byte, i, n int) (int64, bool) {
	if i+n > len(b) {
		return 0, false
	}
	var v int64
	for _, c := range b[i : i+n] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// completeDate appends b to dst with the parts of yyyy-MM-dd it lacks
// (yyyy gets -01-01, yyyy-MM -01), as ksqlDB completes a date before
// parsing it.
func completeDate(dst, b []byte) []byte {
	dst = append(dst, b...)
	parts := 1 + bytes.Count(bytes.TrimRight(b, "-"), []byte("-"))
	switch parts {
	case 1:
		dst = append(dst, "-01-01"...)
	case 2:
		dst = append(dst, "-01"...)
	}
	return dst
}

// parseISODate parses yyyy-MM-dd into days since the epoch.
func parseISODate(b []byte) (int64, bool) {
	days, n, ok := scanISODate(b)
	return days, ok && n == len(b)
}

func scanISODate(b []byte) (days int64, n int, ok bool) {
	i := 0
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	j := i
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j-i < 4 || j-i > 9 {
		return 0, 0, false
	}
	y, _ := digitsAt(b, i, j-i)
	if neg {
		y = -y
	}
	if j >= len(b) || b[j] != '-' {
		return 0, 0, false
	}
	m, ok1 := digitsAt(b, j+1, 2)
	if !ok1 || j+3 >= len(b) || b[j+3] != '-' {
		return 0, 0, false
	}
	d, ok2 := digitsAt(b, j+4, 2)
	if !ok2 || m < 1 || m > 12 || d < 1 || d > monthDays(y, m) {
		return 0, 0, false
	}
	return types.DaysFromCivil(y, m, d), j + 6, true
}

// parseISOTime parses HH:mm[:ss[.fraction]] into milliseconds of the day.
func parseISOTime(b []byte) (int64, bool) {
	ms, n, ok := scanISOTime(b)
	return ms, ok && n == len(b)
}

func scanISOTime(b []byte) (ms int64, n int, ok bool) {
	h, ok1 := digitsAt(b, 0, 2)
	if !ok1 || len(b) < 5 || b[2] != ':' {
		return 0, 0, false
	}
	m, ok2 := digitsAt(b, 3, 2)
	if !ok2 || h > 23 || m > 59 {
		return 0, 0, false
	}
	ms = (h*3600 + m*60) * 1000
	i := 5
	if i < len(b) && b[i] == ':' {
		s, ok := digitsAt(b, i+1, 2)
		if !ok || s > 59 {
			return 0, 0, false
		}
		ms += s * 1000
		i += 3
		if i < len(b) && b[i] == '.' {
			i++
			start := i
			var frac int64
			for i < len(b) && b[i] >= '0' && b[i] <= '9' {
				if i-start < 3 {
					frac = frac*10 + int64(b[i]-'0')
				}
				i++
			}
			if i == start || i-start > 9 {
				return 0, 0, false
			}
			for k := i - start; k < 3; k++ {
				frac *= 10
			}
			ms += frac
		}
	}
	return ms, i, true
}

// parseISOTimestamp parses an ISO 8601 timestamp as ksqlDB's CAST does: a
// date, optionally followed by T (or a space) and HH[:mm[:ss[.fff]]],
// optionally followed by Z or an offset (+hh, +hhmm, +hh:mm). Without an
// offset the time is UTC.
func parseISOTimestamp(b []byte) (int64, bool) {
	days, i, ok := scanISODate(b)
	if !ok {
		return 0, false
	}
	ms := days * msPerDay
	if i == len(b) {
		return ms, true
	}
	if b[i] != 'T' && b[i] != ' ' {
		return 0, false
	}
	i++
	rest := b[i:]
	var tod int64
	var n int
	if len(rest) >= 5 && rest[2] == ':' {
		if tod, n, ok = scanISOTime(rest); !ok {
			return 0, false
		}
	} else {
		h, ok := digitsAt(rest, 0, 2)
		if !ok || h > 23 {
			return 0, false
		}
		tod, n = h*3600000, 2
	}
	ms += tod
	rest = rest[n:]
	off, ok := parseOffset(rest)
	if !ok {
		return 0, false
	}
	return ms - off*1000, true
}

// parseOffset parses "", Z, +hh, +hhmm, +hh:mm into seconds east of UTC.
func parseOffset(b []byte) (int64, bool) {
	switch {
	case len(b) == 0:
		return 0, true
	case len(b) == 1 && (b[0] == 'Z' || b[0] == 'z'):
		return 0, true
	case b[0] != '+' && b[0] != '-':
		return 0, false
	}
	sign := int64(1)
	if b[0] == '-' {
		sign = -1
	}
	h, ok := digitsAt(b, 1, 2)
	if !ok || h > 18 {
		return 0, false
	}
	var m int64
	switch rest := b[3:]; {
	case len(rest) == 0:
	case len(rest) == 2:
		m, ok = digitsAt(rest, 0, 2)
	case len(rest) == 3 && rest[0] == ':':
		m, ok = digitsAt(rest, 1, 2)
	default:
		ok = false
	}
	if !ok || m > 59 {
		return 0, false
	}
	return sign * (h*3600 + m*60), true
}
