package types

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Text parsing shared by the JSON and DELIMITED formats. Every function
// here reads a []byte without allocating; errors are small sentinels the
// caller turns into a message that names the field.

var (
	errNotNumber = errors.New("not a number")
	errRounding  = errors.New("needs rounding")
	errRange     = errors.New("out of range")
)

// parseDecimal reads a decimal number — optional sign, digits with an
// optional point, optional exponent ("-12.5", "1.25e3", ".5") — and
// returns its value times 10^scale, which must be a whole number that fits
// an int64. Trailing zeros beyond the scale are fine ("1.50" at scale 1);
// other digits beyond it are errRounding, as ksqlDB refuses to round.
func parseDecimal(s []byte, scale int) (int64, error) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intEnd := i
	fracStart, fracEnd := i, i
	if i < len(s) && s[i] == '.' {
		i++
		fracStart = i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		fracEnd = i
	}
	if intEnd == intStart && fracEnd == fracStart {
		return 0, errNotNumber
	}
	exp := 0
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			eneg = s[i] == '-'
			i++
		}
		if i == len(s) {
			return 0, errNotNumber
		}
		for i < len(s) && isDigit(s[i]) {
			if exp < 100000 {
				exp = exp*10 + int(s[i]-'0')
			}
			i++
		}
		if eneg {
			exp = -exp
		}
	}
	if i != len(s) {
		return 0, errNotNumber
	}

	// The digits, int part then fraction, without leading zeros; their
	// value is digits × 10^shift.
	shift := exp - (fracEnd - fracStart) + scale
	digit := func(k int) byte { // k-th digit of int part ++ fraction
		if k < intEnd-intStart {
			return s[intStart+k]
		}
		return s[fracStart+k-(intEnd-intStart)]
	}
	n := (intEnd - intStart) + (fracEnd - fracStart)
	first := 0
	for first < n && digit(first) == '0' {
		first++
	}
	last := n
	for last > first && digit(last-1) == '0' {
		last--
		shift++
	}
	if first == last {
		return 0, nil
	}
	if shift < 0 {
		return 0, errRounding
	}
	if last-first+shift > 19 {
		return 0, errRange
	}
	var u uint64
	for k := first; k < last; k++ {
		u = u*10 + uint64(digit(k)-'0')
	}
	for ; shift > 0; shift-- {
		if u > math.MaxUint64/10 {
			return 0, errRange
		}
		u *= 10
	}
	if neg {
		if u > 1<<63 {
			return 0, errRange
		}
		return -int64(u), nil
	}
	if u > math.MaxInt64 {
		return 0, errRange
	}
	return int64(u), nil
}

// clip shortens text quoted in an error message: bad records are logged,
// and a message should not carry a whole payload.
func clip(text []byte) []byte {
	const max = 40
	if len(text) <= max {
		return text
	}
	return append(text[:max:max], "…"...)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// pow10 holds 10^0 … 10^18.
var pow10 = func() (p [19]int64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// fitsPrecision reports whether the unscaled value v has at most
// precision digits.
func fitsPrecision(v int64, precision int) bool {
	if precision >= len(pow10) {
		return true
	}
	return v < pow10[precision] && v > -pow10[precision]
}

// decimalError explains why text does not fit t.
func decimalError(text []byte, t Type, err error) error {
	switch err {
	case errRounding:
		return fmt.Errorf("cannot fit %s into %s without rounding", clip(text), t)
	case errRange:
		return fmt.Errorf("%s does not fit %s", clip(text), t)
	}
	return fmt.Errorf("want %s, got %q", t, clip(text))
}

// parseDecimalFor parses text as a value of the DECIMAL type t.
func parseDecimalFor(text []byte, t Type) (int64, error) {
	v, err := parseDecimal(text, t.Scale)
	if err == nil && !fitsPrecision(v, t.Precision) {
		err = errRange
	}
	if err != nil {
		return 0, decimalError(text, t, err)
	}
	return v, nil
}

// parseInteger parses text as an INT or BIGINT. A fraction of zeros or an
// exponent is fine as long as the value is whole ("3.0", "1e3").
func parseInteger(text []byte, k Kind) (int64, error) {
	// Most are plain digits that fit: read them without parseDecimal.
	if n := len(text); n > 0 && n <= 18 {
		i, neg := 0, text[0] == '-'
		if neg {
			i = 1
		}
		v := int64(0)
		for ; i < n; i++ {
			d := text[i] - '0'
			if d > 9 {
				break
			}
			v = v*10 + int64(d)
		}
		if i == n && n > 0 && !(neg && n == 1) {
			if neg {
				v = -v
			}
			if k != Int || v >= math.MinInt32 && v <= math.MaxInt32 {
				return v, nil
			}
		}
	}
	v, err := parseDecimal(text, 0)
	switch {
	case err == errRounding:
		return 0, fmt.Errorf("want %s, got %s", k, clip(text))
	case err == errRange || err == nil && k == Int && (v < math.MinInt32 || v > math.MaxInt32):
		return 0, fmt.Errorf("%s overflows %s", clip(text), k)
	case err != nil:
		return 0, fmt.Errorf("want %s, got %q", k, clip(text))
	}
	return v, nil
}

// parseDouble parses text as a DOUBLE, as Java's Double.parseDouble does
// (NaN and Infinity included).
func parseDouble(text []byte) (float64, error) {
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, nil // ±Inf or 0, as Java gives
		}
		return 0, fmt.Errorf("want DOUBLE, got %q", clip(text))
	}
	return f, nil
}

// parseBool accepts true and false in any case.
func parseBool(text []byte) (bool, bool) {
	switch len(text) {
	case 4:
		return true, (text[0]|0x20) == 't' && (text[1]|0x20) == 'r' && (text[2]|0x20) == 'u' && (text[3]|0x20) == 'e'
	case 5:
		return false, (text[0]|0x20) == 'f' && (text[1]|0x20) == 'a' && (text[2]|0x20) == 'l' && (text[3]|0x20) == 's' && (text[4]|0x20) == 'e'
	}
	return false, false
}

// isIntegerText reports whether text is an optionally signed run of digits.
func isIntegerText(text []byte) bool {
	i := 0
	if len(text) > 0 && (text[0] == '-' || text[0] == '+') {
		i++
	}
	if i == len(text) {
		return false
	}
	for ; i < len(text); i++ {
		if !isDigit(text[i]) {
			return false
		}
	}
	return true
}

const (
	msPerDay = 86400000
	// DATE values are days that fit an int32, as in ksqlDB.
	minDate = math.MinInt32
	maxDate = math.MaxInt32
)

// parseTemporal parses text as a DATE (days), TIME (milliseconds of day)
// or TIMESTAMP (epoch milliseconds): either the number itself, or the ISO
// form (yyyy-MM-dd; HH:mm[:ss[.fff]]; yyyy-MM-dd['T'|' 'HH:mm[:ss[.fff]]][Z|±HH[:mm]]).
func parseTemporal(text []byte, k Kind) (int64, error) {
	if isIntegerText(text) {
		v, err := parseDecimal(text, 0)
		if err != nil {
			return 0, fmt.Errorf("%s overflows %s", clip(text), k)
		}
		return checkTemporal(v, k, text)
	}
	var v int64
	var ok bool
	switch k {
	case Date:
		var n int
		v, n, ok = scanDate(text)
		ok = ok && n == len(text)
	case Time:
		var n int
		v, n, ok = scanTime(text)
		ok = ok && n == len(text)
	case Timestamp:
		v, ok = parseTimestampText(text)
	}
	if !ok {
		return 0, fmt.Errorf("want %s, got %q", k, clip(text))
	}
	return checkTemporal(v, k, text)
}

// checkTemporal checks the range of a DATE or TIME number.
func checkTemporal(v int64, k Kind, text []byte) (int64, error) {
	switch {
	case k == Date && (v < minDate || v > maxDate):
		return 0, fmt.Errorf("%s overflows DATE", clip(text))
	case k == Time && (v < 0 || v >= msPerDay):
		return 0, fmt.Errorf("TIME %s is not within a day", clip(text))
	}
	return v, nil
}

// scanDate reads yyyy-MM-dd at the start of s and returns the days since
// the epoch and the bytes read.
func scanDate(s []byte) (days int64, n int, ok bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return 0, 0, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m) {
		return 0, 0, false
	}
	return DaysFromCivil(y, m, d), 10, true
}

// scanTime reads HH:mm[:ss[.f…]] at the start of s and returns the
// milliseconds since midnight (digits past the millisecond are dropped)
// and the bytes read.
func scanTime(s []byte) (ms int64, n int, ok bool) {
	if len(s) < 5 || s[2] != ':' {
		return 0, 0, false
	}
	h, ok1 := digits(s[0:2])
	m, ok2 := digits(s[3:5])
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return 0, 0, false
	}
	ms = (h*60 + m) * 60000
	n = 5
	if len(s) >= 8 && s[5] == ':' {
		sec, ok := digits(s[6:8])
		if !ok || sec > 59 {
			return 0, 0, false
		}
		ms += sec * 1000
		n = 8
		if n < len(s) && s[n] == '.' {
			n++
			start := n
			var frac, scale int64 = 0, 100
			for n < len(s) && isDigit(s[n]) {
				frac += int64(s[n]-'0') * scale
				scale /= 10
				n++
			}
			if n == start || n-start > 9 {
				return 0, 0, false
			}
			ms += frac
		}
	}
	return ms, n, true
}

// parseTimestampText reads an ISO-8601 timestamp; without a zone it is UTC.
func parseTimestampText(s []byte) (int64, bool) {
	days, n, ok := scanDate(s)
	if !ok {
		return 0, false
	}
	ms := days * msPerDay
	if n == len(s) {
		return ms, true
	}
	if s[n] != 'T' && s[n] != ' ' {
		return 0, false
	}
	n++
	t, m, ok := scanTime(s[n:])
	if !ok {
		return 0, false
	}
	ms += t
	n += m
	if n == len(s) {
		return ms, true
	}
	switch s[n] {
	case 'Z', 'z':
		return ms, n+1 == len(s)
	case '+', '-':
		sign := int64(1)
		if s[n] == '-' {
			sign = -1
		}
		z := s[n+1:]
		var h, mi int64
		var ok1, ok2 bool
		switch {
		case len(z) == 2:
			h, ok1 = digits(z)
			ok2 = true
		case len(z) == 4:
			h, ok1 = digits(z[:2])
			mi, ok2 = digits(z[2:])
		case len(z) == 5 && z[2] == ':':
			h, ok1 = digits(z[:2])
			mi, ok2 = digits(z[3:])
		}
		if !ok1 || !ok2 || h > 18 || mi > 59 {
			return 0, false
		}
		return ms - sign*(h*60+mi)*60000, true
	}
	return 0, false
}

// digits parses a short run of decimal digits.
func digits(s []byte) (int64, bool) {
	var v int64
	for _, c := range s {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// DaysFromCivil returns the days since 1970-01-01 of a proleptic
// Gregorian date (Howard Hinnant's algorithm).
func DaysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// CivilFromDays is the inverse of DaysFromCivil.
func CivilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// appendDate appends days since the epoch as yyyy-MM-dd.
func appendDate(dst []byte, days int64) []byte {
	y, m, d := CivilFromDays(days)
	if y < 0 {
		dst = append(dst, '-')
		y = -y
	}
	dst = appendPadded(dst, y, 4)
	dst = append(dst, '-')
	dst = appendPadded(dst, m, 2)
	dst = append(dst, '-')
	return appendPadded(dst, d, 2)
}

// appendClock appends milliseconds of day as HH:mm:ss.SSS.
func appendClock(dst []byte, ms int64) []byte {
	ms = ms - floorDiv(ms, msPerDay)*msPerDay
	dst = appendPadded(dst, ms/3600000, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, ms/60000%60, 2)
	dst = append(dst, ':')
	dst = appendPadded(dst, ms/1000%60, 2)
	dst = append(dst, '.')
	return appendPadded(dst, ms%1000, 3)
}

// appendTimestamp appends epoch milliseconds as yyyy-MM-ddTHH:mm:ss.SSS
// (UTC), ksqlDB's form.
func appendTimestamp(dst []byte, ms int64) []byte {
	days := floorDiv(ms, msPerDay)
	dst = appendDate(dst, days)
	dst = append(dst, 'T')
	return appendClock(dst, ms-days*msPerDay)
}

func appendPadded(dst []byte, v int64, width int) []byte {
	var buf [20]byte
	b := strconv.AppendInt(buf[:0], v, 10)
	for i := len(b); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, b...)
}
