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

// The JSON format, as ksqlDB reads and writes it.
//
//	BOOLEAN     true/false
//	INT, BIGINT number; reads also a string holding one ("42"), and a
//	            whole number written with a fraction or exponent (4.0, 1e3)
//	DOUBLE      number (whole values keep ".0"; NaN and ±Inf are written
//	            as null); reads also a string holding one
//	DECIMAL     number with the type's scale (12.30); reads also a string
//	            holding one; more digits after the point than the scale
//	            allows (unless zeros), or too many before it, is a bad record
//	STRING      string; reads numbers, booleans, objects and arrays as
//	            their JSON text, as ksqlDB does
//	BYTES       base64 string (padding optional on input)
//	DATE        number of days since 1970-01-01; reads also "yyyy-MM-dd"
//	TIME        milliseconds since midnight; reads also "HH:mm[:ss[.SSS]]"
//	TIMESTAMP   milliseconds since the epoch; reads also ISO-8601 strings
//	            ("2024-02-29T13:14:15.123Z", "2024-02-29 13:14:15+01:00";
//	            no zone means UTC)
//	ARRAY       array
//	MAP         object; keys are STRING (other key types are refused when
//	            the codec is built)
//	STRUCT      object; field names match case-insensitively (an exact
//	            match wins, then the first case-insensitive one), missing
//	            fields are NULL, unknown fields are ignored
//
// null is NULL everywhere. The columns of a key or value are the fields of
// one object unless there is one column and it is unwrapped (see
// FormatOptions.WrapSingleValue); a top-level null then is that column's
// NULL, and for an object it makes every column NULL. Data starting with a
// zero byte is taken as written by ksqlDB's JSON_SR format: the 5-byte
// schema registry header is skipped.
type jsonCodec struct {
	cols  []int
	names []string
	types []Type
	wrap  bool

	parser  fastjson.Parser
	top     *jnode // the columns, as the fields of one object (wrap)
	col     *jnode // the one column (!wrap)
	frames  []jframe
	err     error
	scratch []byte // decoded base64 and JSON text read into STRING
	num     []byte // the text of the number being read
	visit   func(key []byte, v *fastjson.Value)

	prefixes [][]byte // `{"NAME":` then `,"NAME":`
}

// jnode is the decoding plan for one type; a codec owns its nodes, so
// their scratch state (seen) is safe to use while decoding.
type jnode struct {
	t      Type
	elem   *jnode   // ARRAY element, MAP value
	fields []jfield // STRUCT fields, or the columns at the top
	seen   []uint8  // per field: 0 not seen, 1 seen by a case-insensitive match, 2 by an exact one
}

type jfield struct {
	name []byte
	path string
	node *jnode
}

// jframe is an object being visited: the top-level columns, a STRUCT or a
// MAP.
type jframe struct {
	n    *jnode
	l    []Datum // STRUCT fields, MAP keys and values
	row  Row     // top level: the row and the columns' positions
	cols []int
	top  bool
	i    int // MAP: entries read so far
}

func newJSONCodec(s Schema, cols []int, wrap bool) (*jsonCodec, error) {
	c := &jsonCodec{cols: cols, wrap: wrap, top: &jnode{t: Type{Kind: Struct}}}
	for i, col := range cols {
		sc := s.Columns[col]
		n, err := newJNode(sc.Type)
		if err != nil {
			return nil, fmt.Errorf("JSON column %s: %v", sc.Name, err)
		}
		c.names = append(c.names, sc.Name)
		c.types = append(c.types, sc.Type)
		c.top.fields = append(c.top.fields, jfield{name: []byte(sc.Name), path: sc.Name, node: n})
		if !wrap {
			c.col = n
		}
		p := []byte{','}
		if i == 0 {
			p[0] = '{'
		}
		p = appendJSONString(p, sc.Name)
		p = append(p, ':')
		c.prefixes = append(c.prefixes, p)
	}
	c.top.seen = make([]uint8, len(cols))
	c.visit = c.field
	return c, nil
}

func newJNode(t Type) (*jnode, error) {
	n := &jnode{t: t}
	var err error
	switch t.Kind {
	case Array:
		n.elem, err = newJNode(*t.Elem)
	case Map:
		if t.KeyType.Kind != String {
			return nil, fmt.Errorf("only MAPs with STRING keys are supported, got %s", t)
		}
		n.elem, err = newJNode(*t.Elem)
	case Struct:
		for _, f := range t.Fields {
			fn, ferr := newJNode(f.Type)
			if ferr != nil {
				return nil, fmt.Errorf("field %s: %v", f.Name, ferr)
			}
			n.fields = append(n.fields, jfield{name: []byte(f.Name), path: f.Name, node: fn})
		}
		n.seen = make([]uint8, len(t.Fields))
	}
	if err != nil {
		return nil, err
	}
	return n, nil
}

func (c *jsonCodec) Decode(data []byte, row Row) error {
	for _, col := range c.cols {
		setNull(&row[col])
	}
	if data == nil {
		return nil
	}
	if len(data) >= 5 && data[0] == 0 {
		data = data[5:]
	}
	c.scratch = c.scratch[:0]
	v, err := c.parser.ParseBytes(data)
	if err != nil {
		return badRecord("invalid JSON: %v", err)
	}
	if !c.wrap {
		if err := c.value(&row[c.cols[0]], c.col, v); err != nil {
			return jsonBad(inField(err, c.names[0]))
		}
		return nil
	}
	switch v.Type() {
	case fastjson.TypeNull:
		return nil
	case fastjson.TypeObject:
	default:
		return badRecord("JSON value is %s, not an object", jsonTypeName(v.Type()))
	}
	o, _ := v.Object()
	clear(c.top.seen)
	if err := c.visitObject(jframe{n: c.top, row: row, cols: c.cols, top: true}, o); err != nil {
		return jsonBad(err)
	}
	return nil
}

func jsonBad(err error) error {
	if fe, ok := err.(*fieldError); ok {
		return badRecord("field %s: %v", fe.path(), fe.err)
	}
	return badRecord("%v", err)
}

// visitObject reads o's fields into the frame's datums. Visit takes one
// callback, bound once; it finds what to fill on the frame stack.
func (c *jsonCodec) visitObject(f jframe, o *fastjson.Object) error {
	c.frames = append(c.frames, f)
	o.Visit(c.visit)
	c.frames = c.frames[:len(c.frames)-1]
	err := c.err
	c.err = nil
	return err
}

func (c *jsonCodec) field(key []byte, v *fastjson.Value) {
	if c.err != nil {
		return
	}
	f := &c.frames[len(c.frames)-1]
	n := f.n
	if n.t.Kind == Map {
		i := f.i
		f.i++
		k, val := &f.l[2*i], &f.l[2*i+1]
		k.Null, k.B = false, key
		if err := c.value(val, n.elem, v); err != nil {
			c.err = inField(err, "['"+string(clip(key))+"']")
		}
		return
	}
	idx, state := -1, uint8(0)
	for i := range n.fields {
		name := n.fields[i].name
		if len(name) != len(key) {
			continue
		}
		if bytes.Equal(name, key) {
			idx, state = i, 2
			break
		}
		if idx < 0 && bytes.EqualFold(name, key) {
			idx, state = i, 1
		}
	}
	if idx < 0 || n.seen[idx] >= state {
		return
	}
	n.seen[idx] = state
	var dst *Datum
	if f.top {
		dst = &f.row[f.cols[idx]]
	} else {
		dst = &f.l[idx]
	}
	if err := c.value(dst, n.fields[idx].node, v); err != nil {
		c.err = inField(err, n.fields[idx].path)
	}
}

// value reads v, typed by n, into d.
func (c *jsonCodec) value(d *Datum, n *jnode, v *fastjson.Value) error {
	jt := v.Type()
	if jt == fastjson.TypeNull {
		setNull(d)
		return nil
	}
	d.Null = false
	k := n.t.Kind
	switch k {
	case Boolean:
		switch jt {
		case fastjson.TypeTrue:
			d.I = 1
		case fastjson.TypeFalse:
			d.I = 0
		default:
			return wantJSON(n.t, jt)
		}
	case Int, Bigint:
		text, ok := c.numberText(v, jt)
		if !ok {
			return wantJSON(n.t, jt)
		}
		x, err := parseInteger(text, k)
		if err != nil {
			return err
		}
		d.I = x
	case Double:
		switch jt {
		case fastjson.TypeNumber:
			f, err := v.Float64()
			if err != nil {
				return fmt.Errorf("want DOUBLE: %v", err)
			}
			d.F = f
		case fastjson.TypeString:
			f, err := parseDouble(v.GetStringBytes())
			if err != nil {
				return err
			}
			d.F = f
		default:
			return wantJSON(n.t, jt)
		}
	case Decimal:
		text, ok := c.numberText(v, jt)
		if !ok {
			return wantJSON(n.t, jt)
		}
		x, err := parseDecimalFor(text, n.t)
		if err != nil {
			return err
		}
		d.I = x
	case String:
		if jt == fastjson.TypeString {
			d.B = v.GetStringBytes()
			break
		}
		// ksqlDB reads any other JSON value into a STRING as its text.
		// Earlier slices of scratch stay valid when it grows.
		start := len(c.scratch)
		c.scratch = v.MarshalTo(c.scratch)
		d.B = c.scratch[start:len(c.scratch):len(c.scratch)]
	case Bytes:
		if jt != fastjson.TypeString {
			return wantJSON(n.t, jt)
		}
		start := len(c.scratch)
		var err error
		c.scratch, err = appendBase64(c.scratch, v.GetStringBytes())
		if err != nil {
			c.scratch = c.scratch[:start]
			return fmt.Errorf("invalid base64 for BYTES: %v", err)
		}
		d.B = c.scratch[start:len(c.scratch):len(c.scratch)]
	case Date, Time, Timestamp:
		var x int64
		var err error
		switch jt {
		case fastjson.TypeNumber:
			c.num = v.MarshalTo(c.num[:0])
			if x, err = parseDecimal(c.num, 0); err != nil {
				return fmt.Errorf("want %s, got %s", k, clip(c.num))
			}
			x, err = checkTemporal(x, k, c.num)
		case fastjson.TypeString:
			x, err = parseTemporal(v.GetStringBytes(), k)
		default:
			return wantJSON(n.t, jt)
		}
		if err != nil {
			return err
		}
		d.I = x
	case Array:
		a, err := v.Array()
		if err != nil {
			return wantJSON(n.t, jt)
		}
		d.L = growDatums(d.L, len(a))
		for i, e := range a {
			if err := c.value(&d.L[i], n.elem, e); err != nil {
				return inField(err, "["+strconv.Itoa(i)+"]")
			}
		}
	case Map:
		o, err := v.Object()
		if err != nil {
			return wantJSON(n.t, jt)
		}
		d.L = growDatums(d.L, 2*o.Len())
		return c.visitObject(jframe{n: n, l: d.L}, o)
	case Struct:
		o, err := v.Object()
		if err != nil {
			return wantJSON(n.t, jt)
		}
		d.L = growDatums(d.L, len(n.fields))
		for i := range d.L {
			setNull(&d.L[i])
		}
		clear(n.seen)
		return c.visitObject(jframe{n: n, l: d.L}, o)
	}
	return nil
}

// numberText returns the text of a JSON number, or the contents of a JSON
// string (which ksqlDB accepts for numeric columns).
func (c *jsonCodec) numberText(v *fastjson.Value, jt fastjson.Type) ([]byte, bool) {
	switch jt {
	case fastjson.TypeNumber:
		c.num = v.MarshalTo(c.num[:0])
		return c.num, true
	case fastjson.TypeString:
		return v.GetStringBytes(), true
	}
	return nil, false
}

func wantJSON(t Type, jt fastjson.Type) error {
	return fmt.Errorf("want %s, got %s", t, jsonTypeName(jt))
}

func jsonTypeName(jt fastjson.Type) string {
	if jt == fastjson.TypeTrue || jt == fastjson.TypeFalse {
		return "boolean"
	}
	return jt.String()
}

// appendBase64 decodes standard base64, with or without padding.
func appendBase64(dst, src []byte) ([]byte, error) {
	for len(src) > 0 && src[len(src)-1] == '=' {
		src = src[:len(src)-1]
	}
	return base64.RawStdEncoding.AppendDecode(dst, src)
}

// Encode writes the columns as one JSON object whose field names are the
// column names, or, unwrapped, as the one column's JSON value.
func (c *jsonCodec) Encode(dst []byte, row Row) ([]byte, error) {
	if !c.wrap {
		return AppendJSONValue(dst, row[c.cols[0]], c.types[0]), nil
	}
	if len(c.cols) == 0 {
		return append(dst, "{}"...), nil
	}
	for i, col := range c.cols {
		dst = append(dst, c.prefixes[i]...)
		dst = AppendJSONValue(dst, row[col], c.types[i])
	}
	return append(dst, '}'), nil
}

// AppendJSONValue appends d, read as type t, as a JSON value, the way the
// JSON format writes it (see above). MAP keys of other types than STRING,
// which the JSON format refuses but expressions may build, are written as
// strings holding their text form.
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
	case Array, Map, Struct:
		return AppendJSONComposite(dst, d, t, AppendJSONValue, AppendText)
	}
	return append(dst, "null"...)
}

// AppendJSONComposite appends the ARRAY, MAP or STRUCT d, read as type t,
// as JSON: the one walker behind every JSON writer (the JSON format,
// TO_JSON_STRING, the REST API). elem writes each element, MAP value and
// STRUCT field, nulls included; a MAP key that is not a STRING is written as
// a JSON string holding keyText's form of it, a null key as "null".
func AppendJSONComposite(dst []byte, d Datum, t Type, elem, keyText func([]byte, Datum, Type) []byte) []byte {
	switch t.Kind {
	case Array:
		dst = append(dst, '[')
		for i, e := range d.L {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = elem(dst, e, *t.Elem)
		}
		return append(dst, ']')
	case Map:
		dst = append(dst, '{')
		for i := 0; i+1 < len(d.L); i += 2 {
			if i > 0 {
				dst = append(dst, ',')
			}
			switch k := d.L[i]; {
			case k.Null:
				dst = append(dst, `"null"`...)
			case t.KeyType.Kind == String:
				dst = AppendJSONString(dst, k.B)
			default:
				dst = AppendJSONString(dst, keyText(nil, k, *t.KeyType))
			}
			dst = append(dst, ':')
			dst = elem(dst, d.L[i+1], *t.Elem)
		}
		return append(dst, '}')
	case Struct:
		dst = append(dst, '{')
		for i, f := range t.Fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, f.Name)
			dst = append(dst, ':')
			if i < len(d.L) {
				dst = elem(dst, d.L[i], f.Type)
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
	return appendDouble(dst, f)
}

// appendDouble appends a finite f in its shortest exact form, with ".0"
// on whole values.
func appendDouble(dst []byte, f float64) []byte {
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
func AppendJSONString(dst, s []byte) []byte { return appendJSONString(dst, s) }

func appendJSONString[S string | []byte](dst []byte, s S) []byte {
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
		r, size := utf8.DecodeRune([]byte(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, string(utf8.RuneError)...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
