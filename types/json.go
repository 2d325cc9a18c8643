package types

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// jsonDecoder extracts the declared columns from a JSON object. Field
// names match column names case-insensitively, as in ksqlDB; fields that
// are not declared are skipped without being converted.
type jsonDecoder struct {
	parser  fastjson.Parser
	cols    []int
	names   [][]byte
	types   []Type
	row     Row
	err     error
	scratch []byte // text of numbers read into STRING columns
	visit   func(key []byte, v *fastjson.Value)
}

func newJSONDecoder(s Schema, cols []int) (*jsonDecoder, error) {
	d := &jsonDecoder{cols: cols}
	for _, c := range cols {
		col := s.Columns[c]
		switch col.Type.Kind {
		case Boolean, Int, Bigint, Double, String, Bytes, Date, Time, Timestamp:
		default:
			return nil, fmt.Errorf("JSON column %s: type %s is not supported yet", col.Name, col.Type)
		}
		d.names = append(d.names, []byte(col.Name))
		d.types = append(d.types, col.Type)
	}
	d.visit = d.field
	return d, nil
}

func (d *jsonDecoder) Decode(data []byte, row Row) error {
	for _, c := range d.cols {
		row[c] = NullDatum
	}
	v, err := d.parser.ParseBytes(data)
	if err != nil {
		return badRecord("invalid JSON: %v", err)
	}
	if v.Type() != fastjson.TypeObject {
		return badRecord("JSON value is %s, not an object", v.Type())
	}
	o, _ := v.Object()
	d.row, d.err, d.scratch = row, nil, d.scratch[:0]
	o.Visit(d.visit)
	d.row = nil
	return d.err
}

func (d *jsonDecoder) field(key []byte, v *fastjson.Value) {
	if d.err != nil {
		return
	}
	for i, name := range d.names {
		if len(name) == len(key) && bytes.EqualFold(name, key) {
			if err := d.set(&d.row[d.cols[i]], d.types[i], v); err != nil {
				d.err = badRecord("field %s: %v", name, err)
			}
			return
		}
	}
}

func (dec *jsonDecoder) set(d *Datum, t Type, v *fastjson.Value) error {
	if v.Type() == fastjson.TypeNull {
		*d = NullDatum
		return nil
	}
	d.Null = false
	switch t.Kind {
	case Boolean:
		b, err := v.Bool()
		if err != nil {
			return fmt.Errorf("want BOOLEAN, got %s", v.Type())
		}
		d.I = 0
		if b {
			d.I = 1
		}
	case Int, Bigint, Date, Time, Timestamp:
		if v.Type() != fastjson.TypeNumber {
			return fmt.Errorf("want %s, got %s", t, v.Type())
		}
		n, err := v.Int64()
		if err != nil {
			return fmt.Errorf("want %s: %v", t, err)
		}
		if t.Kind == Int && (n < math.MinInt32 || n > math.MaxInt32) {
			return fmt.Errorf("%d overflows INTEGER", n)
		}
		d.I = n
	case Double:
		f, err := v.Float64()
		if err != nil {
			return fmt.Errorf("want DOUBLE, got %s", v.Type())
		}
		d.F = f
	case String:
		switch v.Type() {
		case fastjson.TypeString:
			d.B = v.GetStringBytes()
		case fastjson.TypeNumber, fastjson.TypeTrue, fastjson.TypeFalse:
			// ksqlDB reads a JSON number or boolean into a STRING column
			// as its text. Earlier slices of scratch stay valid when it grows.
			start := len(dec.scratch)
			dec.scratch = v.MarshalTo(dec.scratch)
			d.B = dec.scratch[start:len(dec.scratch):len(dec.scratch)]
		default:
			return fmt.Errorf("want STRING, got %s", v.Type())
		}
	case Bytes:
		return fmt.Errorf("BYTES in JSON is not supported yet")
	}
	return nil
}

// jsonEncoder writes the columns as a JSON object whose field names are the
// column names.
type jsonEncoder struct {
	cols     []int
	prefixes [][]byte // `{"NAME":` then `,"NAME":`
	types    []Type
}

func newJSONEncoder(s Schema, cols []int) (*jsonEncoder, error) {
	e := &jsonEncoder{cols: cols}
	for i, c := range cols {
		col := s.Columns[c]
		switch col.Type.Kind {
		case Boolean, Int, Bigint, Double, String, Bytes, Date, Time, Timestamp:
		default:
			return nil, fmt.Errorf("JSON column %s: type %s is not supported yet", col.Name, col.Type)
		}
		var p []byte
		if i == 0 {
			p = append(p, '{')
		} else {
			p = append(p, ',')
		}
		p = AppendJSONString(p, []byte(col.Name))
		p = append(p, ':')
		e.prefixes = append(e.prefixes, p)
		e.types = append(e.types, col.Type)
	}
	return e, nil
}

func (e *jsonEncoder) Encode(dst []byte, row Row) ([]byte, error) {
	if len(e.cols) == 0 {
		return append(dst, "{}"...), nil
	}
	for i, c := range e.cols {
		dst = append(dst, e.prefixes[i]...)
		dst = AppendJSONValue(dst, row[c], e.types[i])
	}
	return append(dst, '}'), nil
}

// AppendJSONValue appends d, read as type t, as a JSON value.
func AppendJSONValue(dst []byte, d Datum, t Type) []byte {
	if d.Null {
		return append(dst, "null"...)
	}
	switch t.Kind {
	case Boolean:
		if d.I != 0 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case Int, Bigint, Date, Time, Timestamp:
		return strconv.AppendInt(dst, d.I, 10)
	case Double:
		return AppendJSONDouble(dst, d.F)
	case String:
		return AppendJSONString(dst, d.B)
	case Bytes:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, d.B)
		return append(dst, '"')
	case Decimal:
		return AppendDecimal(dst, d.I, t.Scale)
	case Array:
		dst = append(dst, '[')
		for i, e := range d.L {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSONValue(dst, e, *t.Elem)
		}
		return append(dst, ']')
	case Map:
		dst = append(dst, '{')
		for i := 0; i+1 < len(d.L); i += 2 {
			if i > 0 {
				dst = append(dst, ',')
			}
			k := d.L[i]
			if t.KeyType.Kind == String {
				dst = AppendJSONString(dst, k.B)
			} else {
				dst = AppendJSONString(dst, AppendText(nil, k, *t.KeyType))
			}
			dst = append(dst, ':')
			dst = AppendJSONValue(dst, d.L[i+1], *t.Elem)
		}
		return append(dst, '}')
	case Struct:
		dst = append(dst, '{')
		for i, f := range t.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendJSONString(dst, []byte(f.Name))
			dst = append(dst, ':')
			if i < len(d.L) {
				dst = AppendJSONValue(dst, d.L[i], f.Type)
			} else {
				dst = append(dst, "null"...)
			}
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
}

// AppendJSONDouble appends f as a JSON number; whole values keep a ".0" as
// ksqlDB writes them, and NaN and infinities, which JSON cannot hold, are
// written as null.
func AppendJSONDouble(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	start := len(dst)
	dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
	if bytes.IndexAny(dst[start:], ".eE") < 0 {
		dst = append(dst, ".0"...)
	}
	return dst
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a quoted, escaped JSON string. Invalid
// UTF-8 is replaced with U+FFFD.
func AppendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&15])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
