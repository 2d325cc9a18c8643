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
//	            as "NaN", "Infinity", "-Infinity"); reads also a string
//	            holding one
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
	// read says, per column, whether the reader wants it; a column it
	// does not want is stepped over and only its JSON kind checked (see
	// NewDecoderRead). nil reads every column.
	read []bool

	parser  fastjson.Parser   // unescapes strings and keys that hold escapes
	parsers []fastjson.Parser // per column: its nested values
	top     *jnode            // the columns, as the fields of one object (wrap)
	col     *jnode            // the one column (!wrap)
	frames  []jframe
	err     error
	scratch []byte // decoded base64, unescaped strings, JSON text read into STRING
	key     []byte // a field name that holds escapes, unescaped
	shape   []shapeField
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

// jframe is a nested object being visited: a STRUCT or a MAP.
type jframe struct {
	n *jnode
	l []Datum // STRUCT fields, MAP keys and values
	i int     // MAP: entries read so far
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
	c.parsers = make([]fastjson.Parser, len(cols))
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
			return nil, fmt.Errorf("JSON only supports MAP types with STRING keys, got %s", t)
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
	if data == nil {
		c.nullAll(row)
		return nil
	}
	if len(data) >= 5 && data[0] == 0 {
		data = data[5:]
	}
	c.scratch = c.scratch[:0]
	i := skipWS(data, 0)
	if !c.wrap {
		k, end, esc, err := scanValue(data, i, 0)
		if err == nil {
			err = trailing(data, end)
		}
		if err != nil {
			return badRecord("invalid JSON: %v", err)
		}
		setNull(&row[c.cols[0]])
		if err := c.raw(&row[c.cols[0]], c.col, 0, k, data[i:end], esc); err != nil {
			return jsonBad(inField(err, c.names[0]))
		}
		return nil
	}
	if i < len(data) && data[i] == '{' {
		return c.object(data, i, row)
	}
	k, end, _, err := scanValue(data, i, 0)
	if err == nil {
		err = trailing(data, end)
	}
	switch {
	case err != nil:
		return badRecord("invalid JSON: %v", err)
	case k == jNull:
		c.nullAll(row)
		return nil
	}
	return badRecord("JSON value is %s, not an object", k)
}

// nullAll sets every column NULL.
func (c *jsonCodec) nullAll(row Row) {
	for _, col := range c.cols {
		setNull(&row[col])
	}
}

// trailing checks that only white space follows the document's value.
func trailing(data []byte, end int) error {
	if i := skipWS(data, end); i < len(data) {
		return syntaxErr("unexpected data after the value", i)
	}
	return nil
}

// object reads the top-level object whose '{' is data[i] into the row's
// columns: a field matches a column by name, exactly or else
// case-insensitively (the first exact match wins, then the first
// case-insensitive one); other fields are stepped over.
func (c *jsonCodec) object(data []byte, i int, row Row) error {
	seen := c.top.seen
	clear(seen)
	i = skipWS(data, i+1)
	if i < len(data) && data[i] == '}' {
		return c.end(data, i+1, row)
	}
	for nth := 0; ; nth++ {
		if i >= len(data) || data[i] != '"' {
			return badRecord("invalid JSON: %v", syntaxErr("expected a field name", i))
		}
		// The name this position held last time, when it was plain (no
		// escapes, so no backslash): equal bytes and a closing quote make
		// it the same name, with no scan or lookup.
		var idx int
		var state uint8
		kend := -1
		if nth < len(c.shape) {
			sh := &c.shape[nth]
			e := i + 1 + len(sh.key)
			if sh.plain && e < len(data) && data[e] == '"' && string(data[i+1:e]) == string(sh.key) {
				kend, idx, state = e+1, sh.idx, sh.state
			}
		}
		if kend < 0 {
			var kesc bool
			var err error
			if kend, kesc, err = scanString(data, i); err != nil {
				return badRecord("invalid JSON: %v", err)
			}
			key := data[i+1 : kend-1]
			if kesc {
				if key, err = c.unescape(c.key[:0], data[i:kend]); err != nil {
					return badRecord("invalid JSON: %v", err)
				}
				c.key = key
			}
			idx, state = c.lookup(key, nth, !kesc)
		}
		i = skipWS(data, kend)
		if i >= len(data) || data[i] != ':' {
			return badRecord("invalid JSON: %v", syntaxErr("expected ':'", i))
		}
		i = skipWS(data, i+1)
		// Strings and numbers, the common values, without scanValue's
		// dispatch.
		var k jkind
		var vend int
		var vesc bool
		var err error
		switch {
		case i < len(data) && data[i] == '"':
			k = jString
			vend, vesc, err = scanString(data, i)
		case i < len(data) && (data[i]-'0' <= 9 || data[i] == '-'):
			k = jNumber
			vend, err = scanNumber(data, i)
		default:
			k, vend, vesc, err = scanValue(data, i, 0)
		}
		if err != nil {
			return badRecord("invalid JSON: %v", err)
		}
		if idx >= 0 && seen[idx] < state {
			seen[idx] = state
			n := c.top.fields[idx].node
			if c.read != nil && !c.read[idx] {
				if !kindFits(n.t, k) {
					return jsonBad(inField(fmt.Errorf("want %s, got %s", n.t, k), c.names[idx]))
				}
			} else if d := &row[c.cols[idx]]; k == jString && !vesc && n.t.Kind == String {
				d.Null, d.B = false, data[i+1:vend-1] // the commonest reads: no dispatch
			} else if k == jNumber && n.t.Kind == Bigint {
				x, err := parseInteger(data[i:vend], Bigint)
				if err != nil {
					return jsonBad(inField(err, c.names[idx]))
				}
				d.Null, d.I = false, x
			} else if err := c.raw(d, n, idx, k, data[i:vend], vesc); err != nil {
				return jsonBad(inField(err, c.names[idx]))
			}
		}
		i = skipWS(data, vend)
		if i < len(data) && data[i] == ',' {
			i = skipWS(data, i+1)
			continue
		}
		if i < len(data) && data[i] == '}' {
			return c.end(data, i+1, row)
		}
		return badRecord("invalid JSON: %v", syntaxErr("expected ',' or '}'", i))
	}
}

// end checks the end of the document after the top-level object and
// sets the columns it did not fill NULL: those without a field and those
// the reader does not want. A column that is NULL already (most of the
// latter) is not written again.
func (c *jsonCodec) end(data []byte, end int, row Row) error {
	if err := trailing(data, end); err != nil {
		return badRecord("invalid JSON: %v", err)
	}
	for i, col := range c.cols {
		if d := &row[col]; !d.Null && (c.top.seen[i] == 0 || c.read != nil && !c.read[i]) {
			setNull(d)
		}
	}
	return nil
}

// lookup returns the column a top-level field name matches, and how: 2
// exactly, 1 case-insensitively, and remembers the answer for the name's
// position nth in its object (plain: the name was written without
// escapes). Records of a topic tend to list the same fields in the same
// order, so object finds the answer again by comparing the bytes at that
// position with the name remembered there.
func (c *jsonCodec) lookup(key []byte, nth int, plain bool) (int, uint8) {
	idx, state := -1, uint8(0)
	for i := range c.top.fields {
		name := c.top.fields[i].name
		if len(name) != len(key) {
			continue
		}
		if string(name) == string(key) {
			idx, state = i, 2
			break
		}
		if idx < 0 && bytes.EqualFold(name, key) {
			idx, state = i, 1
		}
	}
	if nth < maxShape {
		for len(c.shape) <= nth {
			c.shape = append(c.shape, shapeField{})
		}
		sh := &c.shape[nth]
		sh.key, sh.idx, sh.state, sh.plain = append(sh.key[:0], key...), idx, state, plain
	}
	return idx, state
}

// maxShape bounds how many field positions lookup remembers.
const maxShape = 64

// shapeField is what lookup found for the name at one position.
type shapeField struct {
	key   []byte
	idx   int
	state uint8
	plain bool
}

// unescape appends the contents of the JSON string quoted (quotes
// included) to dst, escapes decoded.
func (c *jsonCodec) unescape(dst, quoted []byte) ([]byte, error) {
	v, err := c.parser.ParseBytes(quoted)
	if err != nil {
		return dst, err
	}
	return append(dst, v.GetStringBytes()...), nil
}

// raw reads the JSON value text (of kind k; esc: a string with escapes),
// typed by n, into d; col is the column it belongs to.
func (c *jsonCodec) raw(d *Datum, n *jnode, col int, k jkind, text []byte, esc bool) error {
	switch k {
	case jNull:
		setNull(d)
		return nil
	case jString:
		if !esc {
			return c.scalar(d, n, k, text[1:len(text)-1])
		}
		start := len(c.scratch)
		var err error
		if c.scratch, err = c.unescape(c.scratch, text); err != nil {
			return err
		}
		return c.scalar(d, n, k, c.scratch[start:len(c.scratch):len(c.scratch)])
	case jObject, jArray:
		switch n.t.Kind {
		case Array, Map, Struct, String:
			// Values of this column's parser stay valid until the
			// next record.
			v, err := c.parsers[col].ParseBytes(text)
			if err != nil {
				return err
			}
			return c.value(d, n, v)
		}
	}
	return c.scalar(d, n, k, text)
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
	if err := c.value(&f.l[idx], n.fields[idx].node, v); err != nil {
		c.err = inField(err, n.fields[idx].path)
	}
}

// value reads v, typed by n, into d.
func (c *jsonCodec) value(d *Datum, n *jnode, v *fastjson.Value) error {
	switch v.Type() {
	case fastjson.TypeNull:
		setNull(d)
		return nil
	case fastjson.TypeTrue:
		return c.scalar(d, n, jTrue, nil)
	case fastjson.TypeFalse:
		return c.scalar(d, n, jFalse, nil)
	case fastjson.TypeNumber:
		c.num = v.MarshalTo(c.num[:0])
		return c.scalar(d, n, jNumber, c.num)
	case fastjson.TypeString:
		return c.scalar(d, n, jString, v.GetStringBytes())
	}
	d.Null = false
	switch n.t.Kind {
	case String:
		// ksqlDB reads any other JSON value into a STRING as its text.
		// Earlier slices of scratch stay valid when it grows.
		start := len(c.scratch)
		c.scratch = v.MarshalTo(c.scratch)
		d.B = c.scratch[start:len(c.scratch):len(c.scratch)]
	case Array:
		a, err := v.Array()
		if err != nil {
			return wantJSON(n.t, v.Type())
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
			return wantJSON(n.t, v.Type())
		}
		d.L = growDatums(d.L, 2*o.Len())
		return c.visitObject(jframe{n: n, l: d.L}, o)
	case Struct:
		o, err := v.Object()
		if err != nil {
			return wantJSON(n.t, v.Type())
		}
		d.L = growDatums(d.L, len(n.fields))
		for i := range d.L {
			setNull(&d.L[i])
		}
		clear(n.seen)
		return c.visitObject(jframe{n: n, l: d.L}, o)
	default:
		return wantJSON(n.t, v.Type())
	}
	return nil
}

// scalar reads a JSON scalar of kind k (not null), typed by n, into d.
// text is a number's text or a string's contents (unescaped); it may be
// reused once scalar returns.
func (c *jsonCodec) scalar(d *Datum, n *jnode, k jkind, text []byte) error {
	d.Null = false
	t := n.t
	switch t.Kind {
	case Boolean:
		switch k {
		case jTrue:
			d.I = 1
		case jFalse:
			d.I = 0
		default:
			return fmt.Errorf("want %s, got %s", t, k)
		}
	case Int, Bigint:
		if k != jNumber && k != jString {
			return fmt.Errorf("want %s, got %s", t, k)
		}
		x, err := parseInteger(text, t.Kind)
		if err != nil {
			return err
		}
		d.I = x
	case Double:
		if k != jNumber && k != jString {
			return fmt.Errorf("want %s, got %s", t, k)
		}
		f, err := parseDouble(text)
		if err != nil {
			return err
		}
		d.F = f
	case Decimal:
		if k != jNumber && k != jString {
			return fmt.Errorf("want %s, got %s", t, k)
		}
		if t.IsWideDecimal() {
			v, scratch, err := ParseDecimalDatum(text, t, c.scratch)
			c.scratch = scratch
			if err != nil {
				return err
			}
			d.B = v.B
			break
		}
		x, err := parseDecimalFor(text, t)
		if err != nil {
			return err
		}
		d.I = x
	case String:
		if k == jString {
			d.B = text
			break
		}
		// ksqlDB reads a number or boolean into a STRING as its text.
		start := len(c.scratch)
		switch k {
		case jTrue:
			c.scratch = append(c.scratch, "true"...)
		case jFalse:
			c.scratch = append(c.scratch, "false"...)
		default:
			c.scratch = append(c.scratch, text...)
		}
		d.B = c.scratch[start:len(c.scratch):len(c.scratch)]
	case Bytes:
		if k != jString {
			return fmt.Errorf("want %s, got %s", t, k)
		}
		start := len(c.scratch)
		var err error
		c.scratch, err = appendBase64(c.scratch, text)
		if err != nil {
			c.scratch = c.scratch[:start]
			return fmt.Errorf("invalid base64 for BYTES: %v", err)
		}
		d.B = c.scratch[start:len(c.scratch):len(c.scratch)]
	case Date, Time, Timestamp:
		var x int64
		var err error
		switch k {
		case jNumber:
			if x, err = parseDecimal(text, 0); err != nil {
				return fmt.Errorf("want %s, got %s", t.Kind, clip(text))
			}
			x, err = checkTemporal(x, t.Kind, text)
		case jString:
			x, err = parseTemporal(text, t.Kind)
		default:
			return fmt.Errorf("want %s, got %s", t, k)
		}
		if err != nil {
			return err
		}
		d.I = x
	default:
		return fmt.Errorf("want %s, got %s", t, k)
	}
	return nil
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
		// The common scalars inline; the rest through AppendJSONValue.
		switch d := &row[col]; {
		case d.Null:
			dst = append(dst, "null"...)
		case c.types[i].Kind == Bigint || c.types[i].Kind == Int:
			dst = strconv.AppendInt(dst, d.I, 10)
		case c.types[i].Kind == String:
			dst = AppendJSONString(dst, d.B)
		default:
			dst = AppendJSONValue(dst, *d, c.types[i])
		}
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
		return AppendDecimalDatum(dst, d, t)
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
// ksqlDB writes them, and NaN and infinities, which JSON numbers cannot
// hold, are written as the strings "NaN", "Infinity" and "-Infinity", as
// ksqlDB's Jackson writes them (and this format reads them back).
func AppendJSONDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
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
func AppendJSONString(dst, s []byte) []byte {
	// Most strings are printable ASCII with nothing to escape: one copy.
	for _, c := range s {
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return appendJSONString(dst, s)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

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

// AppendJavaDouble appends f as Java's Double.toString writes it, which is
// what ksqlDB shows for a DOUBLE turned into a STRING or written as
// DELIMITED: "1.0", "0.001",
// "1.0E7", "1.5E-5", "NaN", "Infinity".
func AppendJavaDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
		start := len(dst)
		dst = strconv.AppendFloat(dst, f, 'f', -1, 64)
		if bytes.IndexByte(dst[start:], '.') < 0 {
			dst = append(dst, ".0"...)
		}
		return dst
	}
	var buf [32]byte
	s := strconv.AppendFloat(buf[:0], f, 'e', -1, 64)
	if s[1] == 'e' || s[0] == '-' && s[2] == 'e' {
		// One significant digit: Java writes two, the second one
		// correctly rounded (4.9E-324 for the smallest double, where
		// the shortest form is 5e-324; 1.0E10).
		s = strconv.AppendFloat(buf[:0], f, 'e', 1, 64)
	}
	e := bytes.IndexByte(s, 'e')
	mant, exp := s[:e], s[e+1:]
	dst = append(dst, mant...)
	if bytes.IndexByte(mant, '.') < 0 {
		dst = append(dst, ".0"...)
	}
	dst = append(dst, 'E')
	if exp[0] == '-' {
		dst = append(dst, '-')
	}
	exp = exp[1:]
	for len(exp) > 1 && exp[0] == '0' {
		exp = exp[1:]
	}
	return append(dst, exp...)
}
