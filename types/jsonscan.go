package types

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
)

// A scanner for the top level of a JSON document. It checks the syntax of
// the whole document but builds nothing: the codec reads the raw text of
// the fields it wants and steps over the others, so a long field no query
// reads costs one pass over its bytes. Values nested in a field that is
// read go through fastjson (see jsonCodec.raw).

// jkind is the kind of a JSON value, told by its first byte.
type jkind uint8

const (
	jNull jkind = iota
	jFalse
	jTrue
	jNumber
	jString
	jObject
	jArray
)

var jkindNames = [...]string{"null", "boolean", "boolean", "number", "string", "object", "array"}

func (k jkind) String() string { return jkindNames[k] }

// jsonMaxDepth bounds nesting, as fastjson does.
const jsonMaxDepth = 300

// jsonSyntaxError is malformed JSON at a byte offset of the document.
type jsonSyntaxError struct {
	msg string
	off int
}

func (e *jsonSyntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

func syntaxErr(msg string, off int) error { return &jsonSyntaxError{msg: msg, off: off} }

func skipWS(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanValue scans the value starting at b[i] (no leading space). It returns
// its kind, the offset just past it, and for a string whether it holds
// escapes.
func scanValue(b []byte, i, depth int) (k jkind, end int, esc bool, err error) {
	if i >= len(b) {
		return 0, i, false, syntaxErr("unexpected end", i)
	}
	switch c := b[i]; {
	case c == '"':
		end, esc, err = scanString(b, i)
		return jString, end, esc, err
	case c == '{':
		end, err = scanObject(b, i, depth+1)
		return jObject, end, false, err
	case c == '[':
		end, err = scanArray(b, i, depth+1)
		return jArray, end, false, err
	case c == '-' || c >= '0' && c <= '9':
		end, err = scanNumber(b, i)
		return jNumber, end, false, err
	case c == 't':
		return jTrue, i + 4, false, literal(b, i, "true")
	case c == 'f':
		return jFalse, i + 5, false, literal(b, i, "false")
	case c == 'n':
		return jNull, i + 4, false, literal(b, i, "null")
	}
	return 0, i, false, syntaxErr(fmt.Sprintf("unexpected %q", b[i]), i)
}

func literal(b []byte, i int, lit string) error {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return syntaxErr("invalid literal", i)
	}
	return nil
}

// Masks for looking at eight bytes at once: a byte of x^quotes is zero
// where x holds '"'; for a word v, (v-ones)&^v&highs has the high bit of
// its lowest zero byte set (and maybe of later ones: the borrow), so its
// lowest set bit marks the first match exactly.
const (
	ones        = 0x0101010101010101
	highs       = 0x8080808080808080
	quotes      = ones * '"'
	backslashes = ones * '\\'
)

// stringStop returns the index of the first '"' or '\\' at or after i in
// a string's contents, or len(b). Field names and most values are short:
// it looks at the first 32 bytes eight at a time, then lets IndexByte run.
func stringStop(b []byte, i int) int {
	j := i
	for ; j+8 <= len(b) && j < i+32; j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		q, s := x^quotes, x^backslashes
		if m := ((q-ones)&^q | (s-ones)&^s) & highs; m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	if j+8 > len(b) {
		for ; j < len(b); j++ {
			if b[j] == '"' || b[j] == '\\' {
				return j
			}
		}
		return j
	}
	q := bytes.IndexByte(b[j:], '"')
	if q < 0 {
		q = len(b) - j
	}
	if bs := bytes.IndexByte(b[j:j+q], '\\'); bs >= 0 {
		return j + bs
	}
	return j + q
}

// scanString scans the string whose opening quote is b[i]. Like fastjson
// it lets control characters through unescaped.
func scanString(b []byte, i int) (end int, esc bool, err error) {
	start := i
	i++
	for {
		j := stringStop(b, i)
		if j >= len(b) {
			return len(b), esc, syntaxErr("unterminated string", start)
		}
		if b[j] == '"' {
			return j + 1, esc, nil
		}
		esc = true
		if j+1 >= len(b) {
			return j, esc, syntaxErr("unterminated string", start)
		}
		switch b[j+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i = j + 2
		case 'u':
			if len(b)-j < 6 || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
				return j, esc, syntaxErr(`invalid \u escape`, j)
			}
			i = j + 6
		default:
			return j, esc, syntaxErr("invalid escape", j)
		}
	}
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// digitsEnd returns the index of the first byte at or after i that is not
// an ASCII digit, looking at eight bytes at a time: a byte is a digit when
// its high nibble is 3 both as it is and plus 6. (A carry out of a
// non-digit byte only disturbs later bytes, so the lowest flagged byte is
// the first non-digit.)
func digitsEnd(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		m := (x&0xF0F0F0F0F0F0F0F0 ^ 0x3030303030303030) | ((x+0x0606060606060606)&0xF0F0F0F0F0F0F0F0 ^ 0x3030303030303030)
		if m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for i < len(b) && b[i]-'0' <= 9 {
		i++
	}
	return i
}

// scanNumber scans a number: -?int(.digits)?([eE][+-]?digits)?
func scanNumber(b []byte, i int) (int, error) {
	start := i
	if b[i] == '-' {
		i++
	}
	d := i
	i = digitsEnd(b, i)
	if i == d || b[d] == '0' && i-d > 1 {
		return i, syntaxErr("invalid number", start)
	}
	if i < len(b) && b[i] == '.' {
		i++
		d = i
		if i = digitsEnd(b, i); i == d {
			return i, syntaxErr("invalid number", start)
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d = i
		if i = digitsEnd(b, i); i == d {
			return i, syntaxErr("invalid number", start)
		}
	}
	return i, nil
}

// scanObject scans the object whose '{' is b[i].
func scanObject(b []byte, i, depth int) (int, error) {
	if depth > jsonMaxDepth {
		return i, syntaxErr("too deeply nested", i)
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, syntaxErr("expected a field name", i)
		}
		end, _, err := scanString(b, i)
		if err != nil {
			return end, err
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return i, syntaxErr("expected ':'", i)
		}
		i = skipWS(b, i+1)
		if _, i, _, err = scanValue(b, i, depth); err != nil {
			return i, err
		}
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		return i, syntaxErr("expected ',' or '}'", i)
	}
}

// scanArray scans the array whose '[' is b[i].
func scanArray(b []byte, i, depth int) (int, error) {
	if depth > jsonMaxDepth {
		return i, syntaxErr("too deeply nested", i)
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		var err error
		if _, i, _, err = scanValue(b, i, depth); err != nil {
			return i, err
		}
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		return i, syntaxErr("expected ',' or ']'", i)
	}
}

// kindFits reports whether a JSON value of kind k can be read into type t
// (jsonCodec.raw may still refuse its contents). The codec checks the
// fields it does not convert with it.
func kindFits(t Type, k jkind) bool {
	if k == jNull {
		return true
	}
	switch t.Kind {
	case Boolean:
		return k == jTrue || k == jFalse
	case Int, Bigint, Double, Decimal, Date, Time, Timestamp:
		return k == jNumber || k == jString
	case String:
		return true
	case Bytes:
		return k == jString
	case Array:
		return k == jArray
	case Map, Struct:
		return k == jObject
	}
	return true
}
