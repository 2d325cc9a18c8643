package expr

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"

	"github.com/sqlstreams/sqlstreams/types"
)

// arena holds the bytes and element lists an evaluator builds for its
// result. It is reset at the start of each evaluation, so a result that
// points into it is valid until the next call, as Evaluator promises.
// Slices handed out stay valid when the arena grows: growing moves later
// appends to a new array and leaves the old one to the slices that refer
// to it.
type arena struct {
	b []byte
	l []types.Datum
}

func (a *arena) reset() {
	a.b = a.b[:0]
	a.l = a.l[:0]
}

// bytes copies p into the arena.
func (a *arena) bytes(p []byte) []byte {
	start := len(a.b)
	a.b = append(a.b, p...)
	return a.b[start:len(a.b):len(a.b)]
}

// since returns the bytes appended to a.b from start on.
func (a *arena) since(start int) []byte { return a.b[start:len(a.b):len(a.b)] }

// list reserves n datums and returns the index of the first; fill them
// through a.l[start+i] (a.l may move while filling) and take the slice
// with a.done.
func (a *arena) list(n int) int {
	start := len(a.l)
	a.l = append(a.l, make([]types.Datum, n)...)
	return start
}

func (a *arena) done(start, n int) []types.Datum {
	return a.l[start : start+n : start+n]
}

// clone deep-copies d into the arena.
func (a *arena) clone(d types.Datum) types.Datum {
	if d.Null {
		return types.NullDatum
	}
	if d.B != nil {
		d.B = a.bytes(d.B)
	}
	if d.L != nil {
		n := len(d.L)
		start := a.list(n)
		for i, e := range d.L {
			c := a.clone(e)
			a.l[start+i] = c
		}
		d.L = a.done(start, n)
	}
	return d
}

// fixedWidth reports whether values of t live entirely in I or F, so a
// copy of the datum never aliases anyone's buffer.
func fixedWidth(t types.Type) bool {
	if isWide(t) {
		return false
	}
	switch t.Kind {
	case types.String, types.Bytes, types.Array, types.Map, types.Struct:
		return false
	}
	return true
}

// equalDatum reports whether a and b, both of type t, hold the same value.
// Two NULLs are equal here (Java's equals, which collection functions
// use); SQL's = handles NULL before it gets this far. MAP equality ignores
// entry order.
func equalDatum(a, b types.Datum, t types.Type) bool {
	if a.Null || b.Null {
		return a.Null == b.Null
	}
	switch t.Kind {
	case types.Double:
		return a.F == b.F || (math.IsNaN(a.F) && math.IsNaN(b.F))
	case types.String, types.Bytes:
		return bytes.Equal(a.B, b.B)
	case types.Decimal:
		if isWide(t) {
			return bytes.Equal(a.B, b.B) // canonical bytes
		}
	case types.Array:
		if len(a.L) != len(b.L) {
			return false
		}
		for i := range a.L {
			if !equalDatum(a.L[i], b.L[i], *t.Elem) {
				return false
			}
		}
		return true
	case types.Map:
		if len(a.L) != len(b.L) {
			return false
		}
		for i := 0; i+1 < len(a.L); i += 2 {
			j := mapFind(b.L, a.L[i], *t.KeyType)
			if j < 0 || !equalDatum(a.L[i+1], b.L[j+1], *t.Elem) {
				return false
			}
		}
		return true
	case types.Struct:
		if len(a.L) != len(b.L) {
			return false
		}
		for i, f := range t.Fields {
			if i < len(a.L) && !equalDatum(a.L[i], b.L[i], f.Type) {
				return false
			}
		}
		return true
	}
	return a.I == b.I
}

// mapFind returns the index of key k in the interleaved map entries l, or
// -1.
func mapFind(l []types.Datum, k types.Datum, kt types.Type) int {
	for i := 0; i+1 < len(l); i += 2 {
		if equalDatum(l[i], k, kt) {
			return i
		}
	}
	return -1
}

// compareDatum orders two non-NULL values of the same primitive type t:
// numbers numerically, strings and bytes bytewise, booleans false first.
// Composite values compare elementwise, which gives a stable if arbitrary
// order for sorting.
func compareDatum(a, b types.Datum, t types.Type) int {
	switch t.Kind {
	case types.Double:
		return cmpFloat(a.F, b.F)
	case types.Decimal:
		if isWide(t) {
			return wideCompare(t, t)(a, b)
		}
	case types.String, types.Bytes:
		return bytes.Compare(a.B, b.B)
	case types.Array, types.Struct, types.Map:
		for i := 0; i < len(a.L) && i < len(b.L); i++ {
			et := elemTypeAt(t, i)
			x, y := a.L[i], b.L[i]
			switch {
			case x.Null && y.Null:
				continue
			case x.Null:
				return 1
			case y.Null:
				return -1
			}
			if c := compareDatum(x, y, et); c != 0 {
				return c
			}
		}
		return cmpInt(int64(len(a.L)), int64(len(b.L)))
	}
	return cmpInt(a.I, b.I)
}

func elemTypeAt(t types.Type, i int) types.Type {
	switch t.Kind {
	case types.Array:
		return *t.Elem
	case types.Map:
		if i%2 == 0 {
			return *t.KeyType
		}
		return *t.Elem
	case types.Struct:
		if i < len(t.Fields) {
			return t.Fields[i].Type
		}
	}
	return types.UnknownType
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpFloat orders floats as Java's Double.compare does: NaN is above
// everything, -0.0 below 0.0.
func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	sa, sb := math.Signbit(a), math.Signbit(b)
	switch {
	case sa && !sb:
		return -1
	case !sa && sb:
		return 1
	}
	return 0
}

// appendKey appends an encoding of d (type t) such that two values have
// the same encoding exactly when equalDatum holds (MAP entry order aside).
func appendKey(dst []byte, d types.Datum, t types.Type) []byte {
	if d.Null {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	switch t.Kind {
	case types.Double:
		f := d.F
		if math.IsNaN(f) {
			f = math.NaN()
		}
		return binary.LittleEndian.AppendUint64(dst, math.Float64bits(f))
	case types.String, types.Bytes, types.Decimal:
		if t.Kind == types.Decimal && !isWide(t) {
			break
		}
		dst = binary.AppendUvarint(dst, uint64(len(d.B)))
		return append(dst, d.B...)
	case types.Array, types.Map, types.Struct:
		dst = binary.AppendUvarint(dst, uint64(len(d.L)))
		for i, e := range d.L {
			dst = appendKey(dst, e, elemTypeAt(t, i))
		}
		return dst
	}
	return binary.LittleEndian.AppendUint64(dst, uint64(d.I))
}

// distinctSet remembers values already seen, for ARRAY_DISTINCT and
// friends. Small inputs are compared pairwise without allocating; larger
// ones go through a hash map of encoded keys (reused between calls).
type distinctSet struct {
	t     types.Type
	small []types.Datum
	m     map[string]struct{}
	key   []byte
	big   bool
}

const distinctSmall = 16

func (s *distinctSet) reset(n int) {
	s.small = s.small[:0]
	s.big = n > distinctSmall
	if s.big {
		if s.m == nil {
			s.m = make(map[string]struct{}, n)
		} else {
			clear(s.m)
		}
	}
}

// has reports whether d was added.
func (s *distinctSet) has(d types.Datum) bool {
	if !s.big {
		for _, e := range s.small {
			if equalDatum(e, d, s.t) {
				return true
			}
		}
		return false
	}
	s.key = appendKey(s.key[:0], d, s.t)
	_, ok := s.m[string(s.key)]
	return ok
}

// add adds d and reports whether it was new.
func (s *distinctSet) add(d types.Datum) bool {
	if s.has(d) {
		return false
	}
	if !s.big {
		s.small = append(s.small, d)
	} else {
		s.m[string(s.key)] = struct{}{}
	}
	return true
}

// appendJavaDouble appends f as Java's Double.toString writes it
// (types.AppendJavaDouble).
func appendJavaDouble(dst []byte, f float64) []byte { return types.AppendJavaDouble(dst, f) }

// appendDate appends days since the epoch as yyyy-MM-dd.
func appendDate(dst []byte, days int64) []byte {
	y, m, d := types.CivilFromDays(days)
	dst = appendYear(dst, y)
	dst = append(dst, '-')
	dst = append2(dst, m)
	dst = append(dst, '-')
	return append2(dst, d)
}

func appendYear(dst []byte, y int64) []byte {
	if y < 0 {
		dst = append(dst, '-')
		y = -y
	}
	if y > 9999 {
		return strconv.AppendInt(dst, y, 10)
	}
	return append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10))
}

func append2(dst []byte, v int64) []byte { return append(dst, byte('0'+v/10%10), byte('0'+v%10)) }

func append3(dst []byte, v int64) []byte {
	return append(dst, byte('0'+v/100%10), byte('0'+v/10%10), byte('0'+v%10))
}

// appendTimeISO appends milliseconds of the day as ISO_LOCAL_TIME does:
// HH:mm:ss, then a fraction only when it is not zero, without trailing
// zeros ("10:15:30", "10:15:30.5").
func appendTimeISO(dst []byte, ms int64) []byte {
	dst = appendHMS(dst, ms)
	if f := ms % 1000; f != 0 {
		dst = append(dst, '.')
		dst = append3(dst, f)
		for dst[len(dst)-1] == '0' {
			dst = dst[:len(dst)-1]
		}
	}
	return dst
}

func appendHMS(dst []byte, ms int64) []byte {
	s := ms / 1000
	dst = append2(dst, s/3600)
	dst = append(dst, ':')
	dst = append2(dst, s/60%60)
	dst = append(dst, ':')
	return append2(dst, s%60)
}

// appendLocalTime appends a TIME as Java's LocalTime.toString does, which
// is how ksqlDB writes TIME into JSON: "13:25", "13:25:01", "13:25:01.500".
func appendLocalTime(dst []byte, ms int64) []byte {
	s := ms / 1000
	dst = append2(dst, s/3600)
	dst = append(dst, ':')
	dst = append2(dst, s/60%60)
	if ms%60000 == 0 {
		return dst
	}
	dst = append(dst, ':')
	dst = append2(dst, s%60)
	if f := ms % 1000; f != 0 {
		dst = append(dst, '.')
		dst = append3(dst, f)
	}
	return dst
}

// appendTimestamp appends epoch milliseconds as yyyy-MM-ddTHH:mm:ss.SSS in
// UTC, ksqlDB's text form of a TIMESTAMP.
func appendTimestamp(dst []byte, ms int64) []byte {
	days := floorDiv(ms, msPerDay)
	dst = appendDate(dst, days)
	dst = append(dst, 'T')
	tod := ms - days*msPerDay
	dst = appendHMS(dst, tod)
	dst = append(dst, '.')
	return append3(dst, tod%1000)
}

const msPerDay = 86400000

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func monthDays(y, m int64) int64 {
	switch m {
	case 2:
		if isLeap(y) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// appendJava appends d as the text ksqlDB produces for CAST(x AS STRING):
// Java's toString of the value. Top-level and nested scalars print the
// same way; ARRAY prints as [a, b], MAP as {k=v, k2=v2}, STRUCT as
// Struct{A=1,B=x} with NULL fields left out (Kafka Connect's Struct), and
// NULL elements as null. BYTES, which ksqlDB cannot cast, print as base64.
func appendJava(dst []byte, d types.Datum, t types.Type) []byte {
	if d.Null {
		return append(dst, "null"...)
	}
	switch t.Kind {
	case types.Boolean:
		if d.I != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case types.Int, types.Bigint:
		return strconv.AppendInt(dst, d.I, 10)
	case types.Double:
		return appendJavaDouble(dst, d.F)
	case types.Decimal:
		return types.AppendDecimalDatum(dst, d, t)
	case types.String:
		return append(dst, d.B...)
	case types.Bytes:
		return base64.StdEncoding.AppendEncode(dst, d.B)
	case types.Date:
		return appendDate(dst, d.I)
	case types.Time:
		return appendTimeISO(dst, d.I)
	case types.Timestamp:
		return appendTimestamp(dst, d.I)
	case types.Array:
		dst = append(dst, '[')
		for i, e := range d.L {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendJava(dst, e, *t.Elem)
		}
		return append(dst, ']')
	case types.Map:
		dst = append(dst, '{')
		for i := 0; i+1 < len(d.L); i += 2 {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			dst = appendJava(dst, d.L[i], *t.KeyType)
			dst = append(dst, '=')
			dst = appendJava(dst, d.L[i+1], *t.Elem)
		}
		return append(dst, '}')
	case types.Struct:
		dst = append(dst, "Struct{"...)
		first := true
		for i, f := range t.Fields {
			if i >= len(d.L) || d.L[i].Null {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, f.Name...)
			dst = append(dst, '=')
			dst = appendJava(dst, d.L[i], f.Type)
		}
		return append(dst, '}')
	}
	return dst
}

// appendJSON appends d as ksqlDB's TO_JSON_STRING writes it: DATE, TIME
// and TIMESTAMP as ISO strings, DECIMAL as a plain number, BYTES as a
// base64 string, MAP keys as strings.
func appendJSON(dst []byte, d types.Datum, t types.Type) []byte {
	if d.Null {
		return append(dst, "null"...)
	}
	switch t.Kind {
	case types.Boolean, types.Int, types.Bigint, types.Decimal:
		return appendJava(dst, d, t)
	case types.Double:
		if math.IsNaN(d.F) || math.IsInf(d.F, 0) {
			dst = append(dst, '"')
			dst = appendJavaDouble(dst, d.F)
			return append(dst, '"')
		}
		return appendJavaDouble(dst, d.F)
	case types.String:
		return types.AppendJSONString(dst, d.B)
	case types.Bytes:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, d.B)
		return append(dst, '"')
	case types.Date:
		dst = append(dst, '"')
		dst = appendDate(dst, d.I)
		return append(dst, '"')
	case types.Time:
		dst = append(dst, '"')
		dst = appendLocalTime(dst, d.I)
		return append(dst, '"')
	case types.Timestamp:
		dst = append(dst, '"')
		dst = appendTimestamp(dst, d.I)
		return append(dst, '"')
	case types.Array, types.Map, types.Struct:
		return types.AppendJSONComposite(dst, d, t, appendJSON, appendJava)
	}
	return append(dst, "null"...)
}
