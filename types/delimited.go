package types

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// delimitedCodec is the DELIMITED format: one line of RFC 4180 CSV with a
// configurable delimiter, one field per column in order, as ksqlDB's
// DELIMITED format reads and writes it.
//
//	BOOLEAN     true, false (any case on input)
//	INT, BIGINT 42
//	DOUBLE      3.25, 20.0, NaN, Infinity, -Infinity (Java's forms are read too)
//	DECIMAL     plain digits with the type's scale: 12.30 (never an exponent)
//	STRING      the text
//	BYTES       base64
//	DATE        days since 1970-01-01 (yyyy-MM-dd is read too)
//	TIME        milliseconds since midnight (HH:mm[:ss[.SSS]] is read too)
//	TIMESTAMP   milliseconds since the epoch (ISO-8601 is read too)
//
// ARRAY, MAP and STRUCT columns are refused when the codec is built. An
// empty field is NULL; a quoted empty field ("") is the empty STRING or
// BYTES, and NULL for other types (ksqlDB reads both as NULL). Fields
// holding the delimiter, a quote, CR or LF are quoted, with quotes
// doubled; the encoder also quotes an empty STRING. Surrounding spaces are
// ignored in fields of other types than STRING and BYTES. One trailing line break is allowed; a
// second line, a wrong number of fields or an unparsable field is a bad
// record. A single column is never wrapped.
type delimitedCodec struct {
	cols    []int
	names   []string
	types   []Type
	delim   []byte // the delimiter's UTF-8 bytes
	ksql    bool   // quote as ksqlDB does (FormatOptions.KsqlQuoting)
	scratch []byte // unescaped quoted fields and decoded base64 (decoding)
	qbuf    []byte // a field being quoted (encoding)
}

var (
	errUnterminated = errors.New("unterminated quoted field")
	errSecondLine   = errors.New("more than one line in a DELIMITED record")
	errAfterQuote   = errors.New("unexpected character after a quoted field")
)

func newDelimitedCodec(s Schema, cols []int, delim rune, ksql bool) (*delimitedCodec, error) {
	c := &delimitedCodec{cols: cols, delim: utf8.AppendRune(nil, delim), ksql: ksql}
	for _, col := range cols {
		sc := s.Columns[col]
		switch sc.Type.Kind {
		case Array, Map, Struct:
			return nil, fmt.Errorf("The 'DELIMITED' format does not support type '%s', column: `%s`", sc.Type.Kind, sc.Name)
		}
		c.names = append(c.names, sc.Name)
		c.types = append(c.types, sc.Type)
	}
	return c, nil
}

func (c *delimitedCodec) Decode(data []byte, row Row) error {
	for _, col := range c.cols {
		setNull(&row[col])
	}
	if data == nil || len(c.cols) == 0 {
		return nil
	}
	c.scratch = c.scratch[:0]
	var fieldErr error
	pos, n := 0, 0
	for {
		field, quoted, next, err := c.scan(data, pos)
		if err != nil {
			return badRecord("%v", err)
		}
		if n < len(c.cols) && fieldErr == nil {
			if err := c.set(&row[c.cols[n]], c.types[n], field, quoted); err != nil {
				fieldErr = badRecord("field %s: %v", c.names[n], err)
			}
		}
		n++
		if next < 0 {
			break
		}
		pos = next
	}
	if n != len(c.cols) {
		return badRecord("DELIMITED record has %d fields, want %d", n, len(c.cols))
	}
	return fieldErr
}

// scan reads the field starting at data[pos:]. next is where the next
// field starts, or -1 after the last one.
func (c *delimitedCodec) scan(data []byte, pos int) (field []byte, quoted bool, next int, err error) {
	if pos < len(data) && data[pos] == '"' {
		i := pos + 1
		start := -1 // where the unescaped field starts in scratch, if it has doubled quotes
		for {
			k := bytes.IndexByte(data[i:], '"')
			if k < 0 {
				return nil, true, 0, errUnterminated
			}
			q := i + k
			if q+1 < len(data) && data[q+1] == '"' {
				if start < 0 {
					start = len(c.scratch)
				}
				c.scratch = append(c.scratch, data[i:q+1]...)
				i = q + 2
				continue
			}
			if start < 0 {
				field = data[pos+1 : q]
			} else {
				c.scratch = append(c.scratch, data[i:q]...)
				field = c.scratch[start:len(c.scratch):len(c.scratch)]
			}
			next, err = c.after(data, q+1)
			return field, true, next, err
		}
	}
	i := pos
	for i < len(data) {
		b := data[i]
		if b == '\r' || b == '\n' || b == c.delim[0] && bytes.HasPrefix(data[i:], c.delim) {
			break
		}
		i++
	}
	next, err = c.after(data, i)
	return data[pos:i], false, next, err
}

// after checks what follows a field at data[i:]: the delimiter, the end,
// or a final line break. Anything else can only follow a quoted field.
func (c *delimitedCodec) after(data []byte, i int) (int, error) {
	rest := data[i:]
	switch {
	case len(rest) == 0:
		return -1, nil
	case bytes.HasPrefix(rest, c.delim):
		return i + len(c.delim), nil
	case string(rest) == "\n" || string(rest) == "\r\n" || string(rest) == "\r":
		return -1, nil
	case rest[0] == '\r' || rest[0] == '\n':
		return 0, errSecondLine
	}
	return 0, errAfterQuote
}

// set reads one field into d.
func (c *delimitedCodec) set(d *Datum, t Type, field []byte, quoted bool) error {
	if len(field) == 0 {
		if quoted && (t.Kind == String || t.Kind == Bytes) {
			d.Null, d.B = false, field
			return nil
		}
		setNull(d)
		return nil
	}
	d.Null = false
	k := t.Kind
	switch k {
	case String:
		d.B = field
		return nil
	case Bytes:
		start := len(c.scratch)
		var err error
		c.scratch, err = appendBase64(c.scratch, field)
		if err != nil {
			c.scratch = c.scratch[:start]
			return fmt.Errorf("invalid base64 for BYTES: %v", err)
		}
		d.B = c.scratch[start:len(c.scratch):len(c.scratch)]
		return nil
	}
	text := bytes.TrimSpace(field)
	var err error
	switch k {
	case Boolean:
		b, ok := parseBool(text)
		if !ok {
			return fmt.Errorf("want BOOLEAN, got %q", clip(field))
		}
		d.I = 0
		if b {
			d.I = 1
		}
	case Int, Bigint:
		d.I, err = parseInteger(text, k)
	case Double:
		d.F, err = parseDouble(text)
	case Decimal:
		if t.IsWideDecimal() {
			var v Datum
			v, c.scratch, err = ParseDecimalDatum(text, t, c.scratch)
			d.B = v.B
			break
		}
		d.I, err = parseDecimalFor(text, t)
	case Date, Time, Timestamp:
		d.I, err = parseTemporal(text, k)
	}
	return err
}

// Encode writes the columns as one CSV line without a line break.
func (c *delimitedCodec) Encode(dst []byte, row Row) ([]byte, error) {
	for i, col := range c.cols {
		if i > 0 {
			dst = append(dst, c.delim...)
		}
		d := row[col]
		if d.Null {
			continue
		}
		start := len(dst)
		switch c.types[i].Kind {
		case String:
			dst = append(dst, d.B...)
		case Bytes:
			dst = base64.StdEncoding.AppendEncode(dst, d.B)
		case Boolean:
			if d.I != 0 {
				dst = append(dst, "true"...)
			} else {
				dst = append(dst, "false"...)
			}
		case Int, Bigint, Date, Time, Timestamp:
			dst = strconv.AppendInt(dst, d.I, 10)
		case Double:
			// As ksqlDB writes it: Java's Double.toString.
			dst = AppendJavaDouble(dst, d.F)
		case Decimal:
			dst = AppendDecimalDatum(dst, d, c.types[i])
		}
		if c.ksql {
			if c.ksqlQuotes(dst[start:], i == 0) {
				dst = c.quote(dst, start)
			}
		} else if len(dst) == start || c.needsQuotes(dst[start:]) {
			dst = c.quote(dst, start)
		}
	}
	return dst, nil
}

func (c *delimitedCodec) needsQuotes(f []byte) bool {
	return bytes.IndexByte(f, '"') >= 0 || bytes.IndexByte(f, '\n') >= 0 ||
		bytes.IndexByte(f, '\r') >= 0 || bytes.Contains(f, c.delim)
}

// ksqlQuotes says whether ksqlDB's CSV printer (Commons CSV 1.4, quote
// mode MINIMAL) quotes field f; first is true for the record's first field.
func (c *delimitedCodec) ksqlQuotes(f []byte, first bool) bool {
	if len(f) == 0 {
		return first
	}
	b := f[0]
	alnum := b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z'
	switch {
	case first && !alnum, b <= '#':
		return true
	case c.needsQuotes(f):
		return true
	}
	return f[len(f)-1] <= ' '
}

// quote rewrites dst[start:] as a quoted field with its quotes doubled.
func (c *delimitedCodec) quote(dst []byte, start int) []byte {
	c.qbuf = append(c.qbuf[:0], dst[start:]...)
	dst = append(dst[:start], '"')
	for _, b := range c.qbuf {
		if b == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, b)
	}
	return append(dst, '"')
}
