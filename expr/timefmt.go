package expr

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // time zones work without the system's tzdata
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/types"
)

// Date and time patterns as Java's DateTimeFormatter reads them, which is
// what ksqlDB's FORMAT_*, PARSE_*, TIMESTAMPTOSTRING and STRINGTO*
// functions take ('yyyy-MM-dd HH:mm:ss.SSS', 'dd/MMM/yyyy:HH:mm:ss Z').
// A pattern compiles once into tokens that both format and parse.
//
// Supported letters (count = repetitions):
//
//	G era (AD)         y u year (yy = two digits, 2000-2099 when parsing)
//	M L month (M, MM, MMM Jan, MMMM January, MMMMM J)
//	d day of month     D day of year        Q q quarter (Q, QQ, QQQ Q1, QQQQ 1st quarter)
//	E day of week (E-EEE Tue, EEEE Tuesday)  e c day of week (1 = Sunday) or text
//	a AM/PM            H hour 0-23  k 1-24  h 1-12  K 0-11
//	m minute           s second             S fraction of second (1-9 digits)
//	A milli of day     n nano of second     N nano of day
//	w week of week-based year, W week of month, Y week-based year, F
//	  aligned week of month (weeks start on Sunday, as in the US locale)
//	V time-zone id (VV)  z zone name (z-zzz short, zzzz long = the id)
//	O localized offset (O GMT+8, OOOO GMT+08:00)
//	X offset, Z for zero (X +08, XX +0800, XXX +08:00)
//	x offset (x +08, xx +0800, xxx +08:00)
//	Z offset (Z-ZZZ +0800, ZZZZ GMT+08:00, ZZZZZ +08:00 or Z)
//	'text' literal, '' a quote, [ ] optional section (when parsing)
//
// Other ASCII letters are errors, as in Java ("Unknown pattern letter").
// Parsing fills fields the pattern lacks from 1970-01-01T00:00:00.000; a
// day of month past the end of its month (June 31) becomes the last day,
// as Java's SMART resolver does; the text must be consumed entirely. A
// zone or offset in the text wins over the zone argument.

type tfKind uint8

const (
	tfLiteral tfKind = iota
	tfField
	tfOptStart
	tfOptEnd
)

type tfToken struct {
	kind   tfKind
	letter byte
	count  int
	lit    string
}

// timeFormat is a compiled pattern.
type timeFormat struct {
	pattern string
	toks    []tfToken
	// span is how long (ms) the formatted text of a UTC time stays the
	// same: the finest field's unit (a day for a date, an hour for
	// HH, …; 1 for fractions), the spans aligned to the epoch.
	span int64
}

var formatCache sync.Map // pattern string → *timeFormat

// compileTimeFormat compiles a pattern, sharing compiled patterns across
// the process (they are immutable).
func compileTimeFormat(p string) (*timeFormat, error) {
	if f, ok := formatCache.Load(p); ok {
		return f.(*timeFormat), nil
	}
	f, err := parseTimePattern(p)
	if err != nil {
		return nil, err
	}
	formatCache.Store(p, f)
	return f, nil
}

var maxLetterCount = map[byte]int{
	'G': 5, 'y': 19, 'u': 19, 'D': 3, 'M': 5, 'L': 5, 'd': 2, 'Q': 5, 'q': 5,
	'Y': 19, 'w': 2, 'W': 1, 'E': 5, 'e': 5, 'c': 5, 'F': 1, 'a': 1,
	'h': 2, 'K': 2, 'k': 2, 'H': 2, 'm': 2, 's': 2, 'S': 9, 'A': 19, 'n': 19,
	'N': 19, 'V': 2, 'v': 4, 'z': 4, 'O': 4, 'X': 5, 'x': 5, 'Z': 5,
}

func parseTimePattern(p string) (*timeFormat, error) {
	f := &timeFormat{pattern: p}
	depth := 0
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\'':
			j := i + 1
			var lit strings.Builder
			for {
				if j >= len(p) {
					return nil, fmt.Errorf("pattern %q: unterminated quote", p)
				}
				if p[j] == '\'' {
					if j+1 < len(p) && p[j+1] == '\'' {
						lit.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				lit.WriteByte(p[j])
				j++
			}
			if j == i+1 { // '' is a quote
				f.addLit("'")
			} else {
				f.addLit(lit.String())
			}
			i = j + 1
		case c == '[':
			depth++
			f.toks = append(f.toks, tfToken{kind: tfOptStart})
			i++
		case c == ']':
			if depth == 0 {
				return nil, fmt.Errorf("pattern %q: ] without [", p)
			}
			depth--
			f.toks = append(f.toks, tfToken{kind: tfOptEnd})
			i++
		case c == '{' || c == '}' || c == '#':
			return nil, fmt.Errorf("pattern %q: reserved character %q", p, c)
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i
			for j < len(p) && p[j] == c {
				j++
			}
			n := j - i
			limit, ok := maxLetterCount[c]
			if !ok {
				return nil, fmt.Errorf("pattern %q: unknown pattern letter %q", p, c)
			}
			if n > limit || c == 'V' && n != 2 || c == 'O' && n != 1 && n != 4 {
				return nil, fmt.Errorf("pattern %q: wrong number of pattern letters %q", p, strings.Repeat(string(c), n))
			}
			f.toks = append(f.toks, tfToken{kind: tfField, letter: c, count: n})
			i = j
		default:
			_, size := utf8.DecodeRuneInString(p[i:])
			f.addLit(p[i : i+size])
			i += size
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("pattern %q: [ without ]", p)
	}
	f.span = msPerDay
	for _, tk := range f.toks {
		if tk.kind == tfField {
			f.span = min(f.span, fieldSpan(tk.letter))
		}
	}
	return f, nil
}

// fieldSpan is the unit of a field letter in UTC, in milliseconds: the
// date's fields and the zone's (fixed in UTC) a day, AM/PM half of one,
// and so on; fractions and unknown letters 1.
func fieldSpan(c byte) int64 {
	switch c {
	case 'G', 'y', 'u', 'Y', 'M', 'L', 'd', 'D', 'Q', 'q', 'E', 'e', 'c', 'w', 'W', 'F',
		'V', 'v', 'z', 'O', 'X', 'x', 'Z':
		return msPerDay
	case 'a':
		return msPerDay / 2
	case 'H', 'k', 'h', 'K':
		return 3600 * 1000
	case 'm':
		return 60 * 1000
	case 's':
		return 1000
	}
	return 1
}

func (f *timeFormat) addLit(s string) {
	if n := len(f.toks); n > 0 && f.toks[n-1].kind == tfLiteral {
		f.toks[n-1].lit += s
		return
	}
	f.toks = append(f.toks, tfToken{kind: tfLiteral, lit: s})
}

var (
	monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"}
	dayNames   = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
	quarterLng = [...]string{"1st quarter", "2nd quarter", "3rd quarter", "4th quarter"}
)

// appendFormat formats t (already in its zone) with f.
func (f *timeFormat) appendFormat(dst []byte, t time.Time) []byte {
	for _, tk := range f.toks {
		switch tk.kind {
		case tfLiteral:
			dst = append(dst, tk.lit...)
		case tfField:
			dst = appendField(dst, tk.letter, tk.count, t)
		}
	}
	return dst
}

func appendNum(dst []byte, v int64, width int) []byte {
	if v < 0 {
		dst = append(dst, '-')
		v = -v
	}
	var buf [20]byte
	s := strconv.AppendInt(buf[:0], v, 10)
	for i := len(s); i < width; i++ {
		dst = append(dst, '0')
	}
	return append(dst, s...)
}

func appendText(dst []byte, full string, count int) []byte {
	switch {
	case count == 4:
		return append(dst, full...)
	case count == 5:
		return append(dst, full[0])
	}
	return append(dst, full[:3]...)
}

// usWeek returns the week-based year and week of year with weeks that
// start on Sunday and a first week holding January 1st (Locale.US).
func usWeek(t time.Time) (year, week int) {
	y := t.Year()
	yd := t.YearDay() - 1
	jan1 := (int(t.Weekday()) - yd%7 + 7) % 7 // weekday of Jan 1
	week = (yd+jan1)/7 + 1
	// the last days of December may belong to week 1 of the next year
	next := time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC)
	nextJan1 := int(next.Weekday())
	daysLeft := time.Date(y, 12, 31, 0, 0, 0, 0, time.UTC).YearDay() - 1 - yd
	if daysLeft < nextJan1 {
		return y + 1, 1
	}
	return y, week
}

func appendField(dst []byte, c byte, n int, t time.Time) []byte {
	switch c {
	case 'G':
		if t.Year() <= 0 {
			if n == 4 {
				return append(dst, "Before Christ"...)
			}
			return append(dst, "BC"...)
		}
		if n == 4 {
			return append(dst, "Anno Domini"...)
		}
		return append(dst, "AD"...)
	case 'y', 'u', 'Y':
		y := int64(t.Year())
		if c == 'Y' {
			wy, _ := usWeek(t)
			y = int64(wy)
		}
		if c == 'y' && y <= 0 {
			y = 1 - y
		}
		if n == 2 {
			return appendNum(dst, floorMod(y, 100), 2)
		}
		return appendNum(dst, y, n)
	case 'M', 'L':
		m := int(t.Month())
		if n >= 3 {
			return appendText(dst, monthNames[m-1], n)
		}
		return appendNum(dst, int64(m), n)
	case 'd':
		return appendNum(dst, int64(t.Day()), n)
	case 'D':
		return appendNum(dst, int64(t.YearDay()), n)
	case 'Q', 'q':
		q := (int(t.Month())-1)/3 + 1
		switch n {
		case 3:
			return append(append(dst, 'Q'), byte('0'+q))
		case 4:
			return append(dst, quarterLng[q-1]...)
		}
		return appendNum(dst, int64(q), n)
	case 'E':
		return appendText(dst, dayNames[t.Weekday()], max(n, 3))
	case 'e', 'c':
		if n >= 3 {
			return appendText(dst, dayNames[t.Weekday()], n)
		}
		return appendNum(dst, int64(t.Weekday())+1, n)
	case 'w':
		_, w := usWeek(t)
		return appendNum(dst, int64(w), n)
	case 'W':
		first := (int(t.Weekday()) - (t.Day()-1)%7 + 7) % 7
		return appendNum(dst, int64((t.Day()-1+first)/7+1), n)
	case 'F':
		return appendNum(dst, int64((t.Day()-1)/7+1), n)
	case 'a':
		if t.Hour() < 12 {
			return append(dst, "AM"...)
		}
		return append(dst, "PM"...)
	case 'H':
		return appendNum(dst, int64(t.Hour()), n)
	case 'k':
		h := t.Hour()
		if h == 0 {
			h = 24
		}
		return appendNum(dst, int64(h), n)
	case 'h':
		h := t.Hour() % 12
		if h == 0 {
			h = 12
		}
		return appendNum(dst, int64(h), n)
	case 'K':
		return appendNum(dst, int64(t.Hour()%12), n)
	case 'm':
		return appendNum(dst, int64(t.Minute()), n)
	case 's':
		return appendNum(dst, int64(t.Second()), n)
	case 'S':
		var buf [9]byte
		ns := t.Nanosecond()
		for i := 8; i >= 0; i-- {
			buf[i] = byte('0' + ns%10)
			ns /= 10
		}
		return append(dst, buf[:n]...)
	case 'A':
		ms := int64(((t.Hour()*60+t.Minute())*60+t.Second())*1000 + t.Nanosecond()/1e6)
		return appendNum(dst, ms, n)
	case 'n':
		return appendNum(dst, int64(t.Nanosecond()), n)
	case 'N':
		ns := int64((t.Hour()*60+t.Minute())*60+t.Second())*1e9 + int64(t.Nanosecond())
		return appendNum(dst, ns, n)
	case 'V':
		return append(dst, t.Location().String()...)
	case 'v':
		return append(dst, t.Location().String()...)
	case 'z':
		if n == 4 {
			return append(dst, t.Location().String()...)
		}
		name, _ := t.Zone()
		return append(dst, name...)
	case 'O':
		_, off := t.Zone()
		return appendGMTOffset(dst, off, n == 4)
	case 'X', 'x', 'Z':
		_, off := t.Zone()
		switch {
		case c == 'Z' && n <= 3:
			return appendOffset(dst, off, 2, false, false)
		case c == 'Z' && n == 4:
			return appendGMTOffset(dst, off, true)
		case c == 'Z':
			return appendOffset(dst, off, 3, true, true)
		}
		if c == 'X' && off == 0 {
			return append(dst, 'Z')
		}
		return appendOffset(dst, off, n, n == 3 || n == 5, false)
	}
	return dst
}

// appendOffset writes ±HH[MM[SS]]: style 1 is +HH (plus MM when not
// zero), 2 +HHMM, 3 +HH:MM, 4 +HHMM[SS], 5 +HH:MM[:SS].
func appendOffset(dst []byte, off, style int, colon, zForZero bool) []byte {
	if zForZero && off == 0 {
		return append(dst, 'Z')
	}
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	h, m, s := off/3600, off/60%60, off%60
	dst = append(dst, sign)
	dst = append2(dst, int64(h))
	if style == 1 && m == 0 && s == 0 {
		return dst
	}
	if colon {
		dst = append(dst, ':')
	}
	dst = append2(dst, int64(m))
	if style >= 4 && s != 0 {
		if colon {
			dst = append(dst, ':')
		}
		dst = append2(dst, int64(s))
	}
	return dst
}

func appendGMTOffset(dst []byte, off int, long bool) []byte {
	dst = append(dst, "GMT"...)
	if off == 0 {
		return dst
	}
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	dst = append(dst, sign)
	h, m := off/3600, off/60%60
	if long {
		dst = append2(dst, int64(h))
		dst = append(dst, ':')
		return append2(dst, int64(m))
	}
	dst = strconv.AppendInt(dst, int64(h), 10)
	if m != 0 {
		dst = append(dst, ':')
		dst = append2(dst, int64(m))
	}
	return dst
}

// parsed collects the fields a parse found.
type parsed struct {
	year, month, day, doy     int64
	hour24, hour12, ampm      int64
	minute, second, nanos     int64
	milliOfDay, nanoOfDay     int64
	hasYear, twoDigitYear     bool
	hasMonth, hasDay, hasDoy  bool
	hasH24, hasH12, hasAmpm   bool
	hasMilliDay, hasNanoDay   bool
	bc                        bool
	loc                       *time.Location
	offset                    int
	hasOffset                 bool
	weekYear, week, dayOfWeek int64
}

// parsePrefix reads the start of s with f and ignores what follows, as
// java.text.SimpleDateFormat.parse does (ksqlDB's PARSE_DATE).
func (f *timeFormat) parsePrefix(s string) (parsed, error) {
	var p parsed
	_, err := f.parseSeq(f.toks, s, 0, &p)
	return p, err
}

// parse reads s with f. It returns the fields found.
func (f *timeFormat) parse(s string) (parsed, error) {
	var p parsed
	n, err := f.parseSeq(f.toks, s, 0, &p)
	if err != nil {
		return p, err
	}
	if n != len(s) {
		return p, fmt.Errorf("text %q has unparsed text at %d for pattern %q", s, n, f.pattern)
	}
	return p, nil
}

func (f *timeFormat) parseSeq(toks []tfToken, s string, i int, p *parsed) (int, error) {
	for k := 0; k < len(toks); k++ {
		tk := toks[k]
		switch tk.kind {
		case tfLiteral:
			if !strings.HasPrefix(s[i:], tk.lit) {
				return i, fmt.Errorf("text %q does not match pattern %q at %d", s, f.pattern, i)
			}
			i += len(tk.lit)
		case tfOptStart:
			end := matchingOptEnd(toks, k)
			save := *p
			if j, err := f.parseSeq(toks[k+1:end], s, i, p); err == nil {
				i = j
			} else {
				*p = save
			}
			k = end
		case tfOptEnd:
		case tfField:
			j, err := f.parseField(toks, k, s, i, p)
			if err != nil {
				return i, err
			}
			i = j
		}
	}
	return i, nil
}

func matchingOptEnd(toks []tfToken, start int) int {
	depth := 0
	for k := start; k < len(toks); k++ {
		switch toks[k].kind {
		case tfOptStart:
			depth++
		case tfOptEnd:
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return len(toks)
}

// numeric reports whether a token parses as digits, and its fixed width
// (0 when variable).
func (tk tfToken) numeric() (bool, int) {
	if tk.kind != tfField {
		return false, 0
	}
	switch tk.letter {
	case 'M', 'L', 'Q', 'q', 'e', 'c':
		if tk.count >= 3 {
			return false, 0
		}
	case 'y', 'u', 'Y':
		if tk.count == 2 {
			return true, 2
		}
		return true, 0
	case 'S':
		return true, tk.count
	case 'A', 'n', 'N':
		return true, 0
	case 'G', 'E', 'a', 'V', 'v', 'z', 'O', 'X', 'x', 'Z':
		return false, 0
	}
	if tk.count >= 2 {
		return true, tk.count
	}
	return true, 0
}

func maxDigits(letter byte) int {
	switch letter {
	case 'y', 'u', 'Y':
		return 9
	case 'D':
		return 3
	case 'A':
		return 8
	case 'n':
		return 9
	case 'N':
		return 14
	}
	return 2
}

func (f *timeFormat) parseField(toks []tfToken, k int, s string, i int, p *parsed) (int, error) {
	tk := toks[k]
	bad := func() (int, error) {
		return i, fmt.Errorf("text %q does not match pattern %q at %d", s, f.pattern, i)
	}
	if isNum, width := tk.numeric(); isNum {
		run := 0
		for i+run < len(s) && s[i+run] >= '0' && s[i+run] <= '9' {
			run++
		}
		take := width
		if width == 0 {
			// reserve digits for the fixed-width numeric fields that follow
			reserve := 0
			for _, nt := range toks[k+1:] {
				isN, w := nt.numeric()
				if !isN || w == 0 {
					break
				}
				reserve += w
			}
			take = min(run-reserve, maxDigits(tk.letter))
			if take < max(tk.count, 1) {
				take = max(tk.count, 1)
			}
		}
		if take > run || take <= 0 {
			return bad()
		}
		v, _ := strconv.ParseInt(s[i:i+take], 10, 64)
		setNumField(p, tk, v)
		return i + take, nil
	}
	rest := s[i:]
	switch tk.letter {
	case 'M', 'L':
		for m, name := range monthNames {
			cand := name
			if tk.count == 3 {
				cand = name[:3]
			} else if tk.count == 5 {
				cand = name[:1]
			}
			if hasPrefixFold(rest, cand) {
				p.month, p.hasMonth = int64(m+1), true
				return i + len(cand), nil
			}
		}
	case 'E', 'e', 'c':
		for d, name := range dayNames {
			cand := name
			if tk.count <= 3 {
				cand = name[:3]
			} else if tk.count == 5 {
				cand = name[:1]
			}
			if hasPrefixFold(rest, cand) {
				p.dayOfWeek = int64(d + 1)
				return i + len(cand), nil
			}
		}
	case 'Q', 'q':
		if tk.count == 3 && len(rest) >= 2 && (rest[0] == 'Q' || rest[0] == 'q') && rest[1] >= '1' && rest[1] <= '4' {
			return i + 2, nil
		}
		for _, name := range quarterLng {
			if hasPrefixFold(rest, name) {
				return i + len(name), nil
			}
		}
	case 'a':
		switch {
		case hasPrefixFold(rest, "AM"):
			p.ampm, p.hasAmpm = 0, true
			return i + 2, nil
		case hasPrefixFold(rest, "PM"):
			p.ampm, p.hasAmpm = 1, true
			return i + 2, nil
		}
	case 'G':
		for _, era := range [...]struct {
			s  string
			bc bool
		}{{"Anno Domini", false}, {"Before Christ", true}, {"AD", false}, {"BC", true}} {
			if hasPrefixFold(rest, era.s) {
				p.bc = era.bc
				return i + len(era.s), nil
			}
		}
	case 'V', 'v', 'z':
		j := 0
		for j < len(rest) {
			c := rest[j]
			if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '/' || c == '_' || c == '-' && j > 0 || c == '+' || c >= '0' && c <= '9' && j > 0 || c == ':' && j > 0 {
				j++
				continue
			}
			break
		}
		for ; j > 0; j-- {
			if loc, err := loadZone(rest[:j]); err == nil {
				p.loc, p.hasOffset = loc, false
				return i + j, nil
			}
		}
	case 'O':
		if !hasPrefixFold(rest, "GMT") {
			break
		}
		j := 3
		if j < len(rest) && (rest[j] == '+' || rest[j] == '-') {
			off, n, ok := scanOffset(rest[j:], true)
			if !ok {
				break
			}
			p.offset, p.hasOffset, p.loc = off, true, nil
			return i + j + n, nil
		}
		p.offset, p.hasOffset, p.loc = 0, true, nil
		return i + 3, nil
	case 'X', 'x', 'Z':
		if (tk.letter == 'X' || tk.letter == 'Z' && tk.count == 5) && hasPrefixFold(rest, "Z") {
			p.offset, p.hasOffset, p.loc = 0, true, nil
			return i + 1, nil
		}
		if tk.letter == 'Z' && tk.count == 4 && hasPrefixFold(rest, "GMT") {
			j := 3
			off, n, ok := scanOffset(rest[j:], true)
			if !ok {
				p.offset, p.hasOffset, p.loc = 0, true, nil
				return i + 3, nil
			}
			p.offset, p.hasOffset, p.loc = off, true, nil
			return i + j + n, nil
		}
		off, n, ok := scanOffset(rest, true)
		if ok {
			p.offset, p.hasOffset, p.loc = off, true, nil
			return i + n, nil
		}
	}
	return bad()
}

// scanOffset reads ±HH, ±HHMM, ±HH:MM (and seconds) or ±H.
func scanOffset(s string, lenient bool) (off, n int, ok bool) {
	if len(s) < 2 || s[0] != '+' && s[0] != '-' {
		return 0, 0, false
	}
	sign := 1
	if s[0] == '-' {
		sign = -1
	}
	i := 1
	digits := func(max int) (int, int) {
		v, k := 0, 0
		for k < max && i+k < len(s) && s[i+k] >= '0' && s[i+k] <= '9' {
			v = v*10 + int(s[i+k]-'0')
			k++
		}
		return v, k
	}
	h, k := digits(2)
	if k == 0 || k == 1 && !lenient {
		return 0, 0, false
	}
	i += k
	m, sec := 0, 0
	if i < len(s) && s[i] == ':' {
		i++
		var k2 int
		if m, k2 = digits(2); k2 != 2 {
			return 0, 0, false
		}
		i += 2
		if i < len(s) && s[i] == ':' {
			i++
			if sec, k2 = digits(2); k2 != 2 {
				return 0, 0, false
			}
			i += 2
		}
	} else if k == 2 {
		if v, k2 := digits(2); k2 == 2 {
			m = v
			i += 2
			if v2, k3 := digits(2); k3 == 2 {
				sec = v2
				i += 2
			}
		}
	}
	if h > 18 || m > 59 || sec > 59 {
		return 0, 0, false
	}
	return sign * (h*3600 + m*60 + sec), i, true
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

func setNumField(p *parsed, tk tfToken, v int64) {
	switch tk.letter {
	case 'y', 'u':
		p.year, p.hasYear, p.twoDigitYear = v, true, tk.count == 2
	case 'Y':
		p.weekYear = v
	case 'M', 'L':
		p.month, p.hasMonth = v, true
	case 'd':
		p.day, p.hasDay = v, true
	case 'D':
		p.doy, p.hasDoy = v, true
	case 'H':
		p.hour24, p.hasH24 = v, true
	case 'k':
		if v == 24 {
			v = 0
		}
		p.hour24, p.hasH24 = v, true
	case 'h':
		if v == 12 {
			v = 0
		}
		p.hour12, p.hasH12 = v, true
	case 'K':
		p.hour12, p.hasH12 = v, true
	case 'm':
		p.minute = v
	case 's':
		p.second = v
	case 'S':
		for i := tk.count; i < 9; i++ {
			v *= 10
		}
		p.nanos = v
	case 'n':
		p.nanos = v
	case 'A':
		p.milliOfDay, p.hasMilliDay = v, true
	case 'N':
		p.nanoOfDay, p.hasNanoDay = v, true
	case 'w':
		p.week = v
	case 'e', 'c':
		p.dayOfWeek = v
	}
}

// date resolves the date fields into days since the epoch.
func (p *parsed) date() (int64, error) {
	y := int64(1970)
	if p.hasYear {
		y = p.year
		if p.twoDigitYear {
			y += 2000
		}
		if p.bc {
			y = 1 - y
		}
	}
	if p.hasDoy && !p.hasMonth && !p.hasDay {
		maxDoy := int64(365)
		if isLeap(y) {
			maxDoy = 366
		}
		if p.doy < 1 || p.doy > maxDoy {
			return 0, fmt.Errorf("day of year %d out of range", p.doy)
		}
		return types.DaysFromCivil(y, 1, 1) + p.doy - 1, nil
	}
	m, d := int64(1), int64(1)
	if p.hasMonth {
		m = p.month
	}
	if p.hasDay {
		d = p.day
	}
	if m < 1 || m > 12 {
		return 0, fmt.Errorf("month %d out of range", m)
	}
	if d < 1 || d > 31 {
		return 0, fmt.Errorf("day of month %d out of range", d)
	}
	d = min(d, monthDays(y, m))
	return types.DaysFromCivil(y, m, d), nil
}

// timeOfDay resolves the time fields into nanoseconds since midnight.
func (p *parsed) timeOfDay() (int64, error) {
	if p.hasNanoDay {
		return p.nanoOfDay, nil
	}
	if p.hasMilliDay {
		return p.milliOfDay * 1e6, nil
	}
	h := int64(0)
	switch {
	case p.hasH24:
		h = p.hour24
	case p.hasH12:
		h = p.hour12
		if p.hasAmpm && p.ampm == 1 {
			h += 12
		}
	}
	if h > 23 || p.minute > 59 || p.second > 59 {
		return 0, fmt.Errorf("time %02d:%02d:%02d out of range", h, p.minute, p.second)
	}
	return ((h*60+p.minute)*60+p.second)*1e9 + p.nanos, nil
}

// instant resolves the parsed fields into epoch milliseconds, reading the
// local time in loc unless the text had its own zone or offset.
func (p *parsed) instant(loc *time.Location) (int64, error) {
	days, err := p.date()
	if err != nil {
		return 0, err
	}
	ns, err := p.timeOfDay()
	if err != nil {
		return 0, err
	}
	local := days*msPerDay + ns/1e6
	switch {
	case p.hasOffset:
		return local - int64(p.offset)*1000, nil
	case p.loc != nil:
		loc = p.loc
	}
	if loc == time.UTC || loc == nil {
		return local, nil
	}
	return localToInstant(local, loc), nil
}

// localToInstant reads local milliseconds (a wall clock) in loc as Java's
// ZonedDateTime.of does: a time in a DST gap moves forward by the gap, an
// ambiguous time takes the earlier offset.
func localToInstant(local int64, loc *time.Location) int64 {
	offAt := func(ms int64) int64 {
		_, o := time.UnixMilli(ms).In(loc).Zone()
		return int64(o) * 1000
	}
	early := offAt(local - msPerDay)
	if cand := local - early; offAt(cand) == early {
		return cand
	}
	late := offAt(local + msPerDay)
	if cand := local - late; offAt(cand) == late {
		return cand
	}
	return local - early
}

// Time zones. ksqlDB takes java.util.TimeZone ids: region ids
// (America/Los_Angeles), UTC, GMT, offsets (+05:00, UTC+5, GMT-08:00) and
// Java's three-letter short ids (PST, EST, IST …).

var zoneCache sync.Map // string → *time.Location

var shortZoneIDs = map[string]string{
	"ACT": "Australia/Darwin", "AET": "Australia/Sydney", "AGT": "America/Argentina/Buenos_Aires",
	"ART": "Africa/Cairo", "AST": "America/Anchorage", "BET": "America/Sao_Paulo",
	"BST": "Asia/Dhaka", "CAT": "Africa/Harare", "CNT": "America/St_Johns",
	"CST": "America/Chicago", "CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa",
	"ECT": "Europe/Paris", "IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata",
	"JST": "Asia/Tokyo", "MIT": "Pacific/Apia", "NET": "Asia/Yerevan",
	"NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix",
	"PRT": "America/Puerto_Rico", "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal",
	"VST": "Asia/Ho_Chi_Minh", "PDT": "America/Los_Angeles", "EDT": "America/New_York",
	"CDT": "America/Chicago", "MDT": "America/Denver",
}

var fixedShortZones = map[string]int{"EST": -5 * 3600, "MST": -7 * 3600, "HST": -10 * 3600}

// loadZone resolves a time-zone id.
func loadZone(id string) (*time.Location, error) {
	if l, ok := zoneCache.Load(id); ok {
		return l.(*time.Location), nil
	}
	loc, err := resolveZone(id)
	if err != nil {
		return nil, err
	}
	zoneCache.Store(id, loc)
	return loc, nil
}

func resolveZone(id string) (*time.Location, error) {
	switch id {
	case "", "Z", "UTC", "GMT", "UT", "Etc/UTC", "Etc/GMT":
		return time.UTC, nil
	}
	for _, prefix := range []string{"UTC", "GMT", "UT", ""} {
		rest, ok := strings.CutPrefix(id, prefix)
		if !ok || rest == "" || rest[0] != '+' && rest[0] != '-' {
			continue
		}
		off, n, ok := scanOffset(rest, true)
		if !ok || n != len(rest) {
			return nil, fmt.Errorf("unknown time zone %q", id)
		}
		return time.FixedZone(id, off), nil
	}
	if off, ok := fixedShortZones[id]; ok {
		return time.FixedZone(id, off), nil
	}
	if full, ok := shortZoneIDs[id]; ok {
		id = full
	}
	if strings.ContainsAny(id, " .\\") || strings.HasPrefix(id, "/") || id == "Local" {
		return nil, fmt.Errorf("unknown time zone %q", id)
	}
	loc, err := time.LoadLocation(id)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q", id)
	}
	return loc, nil
}

// TimestampParser returns a function that reads text in the Java
// DateTimeFormatter pattern (as ksqlDB's TIMESTAMP_FORMAT gives it) into
// epoch milliseconds, taking a wall-clock time as UTC unless the text has
// its own zone or offset. The pattern is compiled once here.
func TimestampParser(pattern string) (func([]byte) (int64, error), error) {
	f, err := compileTimeFormat(pattern)
	if err != nil {
		return nil, err
	}
	return func(b []byte) (int64, error) {
		p, err := f.parse(string(b))
		if err != nil {
			return 0, err
		}
		return p.instant(time.UTC)
	}, nil
}
