package conformance

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/types"
)

// Records go between the test files' spec form (JSON values) and Kafka
// bytes as ksqlDB's test runner moves them: JSON keys and values are
// written as the file's JSON and read back as JSON, without a schema;
// DELIMITED ones are the text itself; KAFKA and the schema registry
// formats go through the topic's columns and this repository's codecs.

// encode serializes one side (key or value) of a spec record for src.
//
// A single column given as an object holding it ({"F1": 1} for column
// F1) is that column's value when the format wraps it (PROTOBUF always
// does; ksqlDB's files write such keys so).
func encode(src *catalog.Source, key bool, spec any, schemaID int) ([]byte, error) {
	if spec == nil {
		return nil, nil
	}
	if src == nil {
		return rawBytes(spec)
	}
	format, opts, cols := side(src, key)
	switch format {
	case types.FormatJSON:
		return rawBytes(spec)
	case types.FormatDelimited:
		if s, ok := spec.(string); ok {
			return []byte(s), nil
		}
		return rawBytes(spec)
	case types.FormatNone:
		return nil, nil
	}
	if schemaID != 0 {
		opts.SchemaID = schemaID
	}
	if len(cols) == 1 && wrapped(format, opts, key) {
		// A record written with the source's schema, as ksqlDB's runner
		// writes it (the ksql-test-runner's JSON objects for an AVRO
		// value): the column is the object's field of its name, other
		// fields (a copy of the key) are not written.
		col := src.Schema.Columns[cols[0]]
		if m, ok := spec.(map[string]any); ok && len(m) > 1 && col.Type.Kind != types.Struct && col.Type.Kind != types.Map {
			if v, ok := lookupFold(m, col.Name); ok {
				spec = map[string]any{col.Name: v}
			}
		}
	}
	b, err := encodeCols(src.Schema, cols, format, opts, spec)
	if err != nil && schemaID != 0 && !key && types.InfersColumns(format) {
		// ksqlDB's runner writes a value with the registered schema
		// itself: when the source's columns cannot be written with it
		// (a column the schema lacks, a type it coerces), the schema's
		// own columns are.
		if wb, ok := encodeWriter(format, opts, spec, schemaID); ok {
			return wb, nil
		}
	}
	return b, err
}

// encodeWriter writes a spec value with the columns of the registered
// schema id; ok is false when that fails too.
func encodeWriter(format string, opts types.FormatOptions, spec any, id int) ([]byte, bool) {
	if opts.Schemas == nil {
		return nil, false
	}
	rs, err := opts.Schemas.SchemaByID(id)
	if err != nil {
		return nil, false
	}
	wcols, wrapped, err := types.SchemaColumnsNamed(opts.Schemas, format, rs, "ROWVAL", opts.FullName)
	if err != nil {
		return nil, false
	}
	idx := make([]int, len(wcols))
	for i := range idx {
		idx[i] = i
	}
	opts.WrapSingleValue = nil
	if !wrapped && format != types.FormatProtobuf {
		opts.WrapSingleValue = &wrapped
	}
	b, err := encodeCols(types.Schema{Columns: wcols}, idx, format, opts, spec)
	return b, err == nil
}

// encodeCols writes a spec value as the columns cols of schema.
func encodeCols(schema types.Schema, cols []int, format string, opts types.FormatOptions, spec any) ([]byte, error) {
	row := make(types.Row, schema.Len())
	for i := range row {
		row[i] = types.NullDatum
	}
	if len(cols) == 1 {
		if m, ok := spec.(map[string]any); ok && len(m) == 1 {
			col := schema.Columns[cols[0]]
			if v, ok := lookupFold(m, col.Name); ok && (col.Type.Kind != types.Struct || !hasField(col.Type, col.Name)) {
				spec = v
			}
		}
		if m, ok := spec.(map[string]any); ok && col1Scalar(schema.Columns[cols[0]].Type) {
			// An object for a single scalar column holds its fields:
			// the column is NULL when the object lacks it, as ksqlDB's
			// serializer writes {} or {"other": 1}.
			spec, _ = lookupFold(m, schema.Columns[cols[0]].Name)
		}
		d, err := specDatum(spec, schema.Columns[cols[0]].Type)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", schema.Columns[cols[0]].Name, err)
		}
		row[cols[0]] = d
	} else {
		obj, ok := spec.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("want a JSON object for the %s columns, got %s", format, show(spec))
		}
		for _, c := range cols {
			v, _ := lookupFold(obj, schema.Columns[c].Name)
			d, err := specDatum(v, schema.Columns[c].Type)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", schema.Columns[c].Name, err)
			}
			row[c] = d
		}
	}
	enc, err := types.NewEncoderOpts(format, schema, cols, opts)
	if err != nil {
		return nil, err
	}
	b, err := enc.Encode(nil, row)
	if b == nil && err == nil {
		b = []byte{} // an empty STRING key is not a null key
	}
	return b, err
}

// col1Scalar reports whether a column of type t cannot be written as a
// JSON object (not a STRUCT or MAP).
func col1Scalar(t types.Type) bool {
	return t.Kind != types.Struct && t.Kind != types.Map
}

func hasField(t types.Type, name string) bool {
	for _, f := range t.Fields {
		if strings.EqualFold(f.Name, name) {
			return true
		}
	}
	return false
}

// wrapped reports whether a single column is written inside a record
// (a JSON object, an Avro record) rather than alone.
func wrapped(format string, opts types.FormatOptions, key bool) bool {
	switch format {
	case types.FormatKafka:
		return false
	case types.FormatProtobuf, types.FormatProtobufNoSR:
		return true
	}
	if opts.WrapSingleValue != nil {
		return *opts.WrapSingleValue
	}
	return !key
}

func side(src *catalog.Source, key bool) (string, types.FormatOptions, []int) {
	if key {
		return src.KeyFormat, src.KeyOptions, src.Schema.KeyIndexes()
	}
	return src.ValueFormat, src.ValueOptions, src.Schema.ValueIndexes()
}

func rawBytes(spec any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(spec); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// decode reads one side of an output record into the values ksqlDB's
// runner compares: nil, bool, string, int64, float64, bigDec, []byte,
// []any and map[string]any.
//
// A registry format's record is read with the schema it was written with
// when that schema has fields beyond the source's columns (a sink written
// with a VALUE_SCHEMA_ID whose schema has more fields), as ksqlDB's runner
// reads it with the writer's schema: the extra fields are compared too.
func decode(src *catalog.Source, key bool, data []byte, exact bool, schemas types.SchemaSource) (any, error) {
	if data == nil {
		return nil, nil
	}
	format := types.FormatJSON
	if src != nil {
		format, _, _ = side(src, key)
	}
	switch format {
	case types.FormatJSON:
		return rawJSON(data, exact)
	case types.FormatDelimited:
		return string(data), nil
	case types.FormatNone:
		return nil, nil
	}
	_, opts, cols := side(src, key)
	if v, ok, err := decodeWriter(src, key, format, opts, cols, data, schemas); ok || err != nil {
		return v, err
	}
	row := make(types.Row, src.Schema.Len())
	dec, err := types.NewDecoderOpts(format, src.Schema, cols, opts)
	if err != nil {
		return nil, err
	}
	if err := dec.Decode(data, row); err != nil {
		return nil, err
	}
	if len(cols) == 1 && !wrapped(format, opts, key) {
		return datumValue(row[cols[0]], src.Schema.Columns[cols[0]].Type), nil
	}
	out := map[string]any{}
	for _, c := range cols {
		out[src.Schema.Columns[c].Name] = datumValue(row[c], src.Schema.Columns[c].Type)
	}
	return out, nil
}

// rawJSON parses JSON as Jackson does with USE_BIG_DECIMAL_FOR_FLOATS:
// integers as int64, other numbers as exact decimals (as doubles when
// exact is false: use.exact.numeric.comparison=false).
func rawJSON(data []byte, exact bool) (any, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w (%q)", err, data)
	}
	if d.More() {
		return nil, fmt.Errorf("not JSON: trailing data (%q)", data)
	}
	return numbers(v, exact), nil
}

func numbers(v any, exact bool) any {
	switch v := v.(type) {
	case json.Number:
		s := string(v)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i
			}
		}
		if !exact {
			f, _ := strconv.ParseFloat(s, 64)
			return f
		}
		b, _ := parseDec(s)
		return b
	case []any:
		for i := range v {
			v[i] = numbers(v[i], exact)
		}
	case map[string]any:
		for k := range v {
			v[k] = numbers(v[k], exact)
		}
	}
	return v
}

// bigDec is a Java BigDecimal: equal only with the same scale.
type bigDec struct {
	unscaled *big.Int
	scale    int
}

func parseDec(s string) (bigDec, bool) {
	s = strings.TrimSpace(s)
	exp := 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(strings.TrimPrefix(s[i+1:], "+"))
		if err != nil {
			return bigDec{}, false
		}
		exp, s = e, s[:i]
	}
	scale := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		scale = len(s) - i - 1
		s = s[:i] + s[i+1:]
	}
	u, ok := new(big.Int).SetString(s, 10)
	if !ok {
		return bigDec{}, false
	}
	return bigDec{u, scale - exp}, true
}

func (d bigDec) equal(o bigDec) bool { return d.scale == o.scale && d.unscaled.Cmp(o.unscaled) == 0 }

func (d bigDec) String() string {
	s := d.unscaled.String()
	if d.scale <= 0 {
		if d.scale == 0 {
			return s
		}
		return s + "E+" + strconv.Itoa(-d.scale)
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for len(s) <= d.scale {
		s = "0" + s
	}
	s = s[:len(s)-d.scale] + "." + s[len(s)-d.scale:]
	if neg {
		s = "-" + s
	}
	return s
}

// specDatum converts a spec value to a datum of type t, leniently as
// ksqlDB's spec serializers do (numbers from strings and the reverse).
func specDatum(v any, t types.Type) (types.Datum, error) {
	if v == nil {
		return types.NullDatum, nil
	}
	bad := func() (types.Datum, error) {
		return types.Datum{}, fmt.Errorf("cannot write %s as %s", show(v), t)
	}
	text := func() (string, bool) {
		switch v := v.(type) {
		case json.Number:
			return string(v), true
		case string:
			return v, true
		case bool:
			return strconv.FormatBool(v), true
		}
		return "", false
	}
	switch t.Kind {
	case types.Boolean:
		s, ok := text()
		b, err := strconv.ParseBool(strings.ToLower(s))
		if !ok || err != nil {
			return bad()
		}
		return types.BoolDatum(b), nil
	case types.Int, types.Bigint, types.Date, types.Time, types.Timestamp:
		s, ok := text()
		if !ok {
			return bad()
		}
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return types.IntDatum(i), nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return bad()
		}
		return types.IntDatum(int64(f)), nil
	case types.Double:
		s, ok := text()
		f, err := strconv.ParseFloat(s, 64)
		if !ok || err != nil {
			return bad()
		}
		return types.DoubleDatum(f), nil
	case types.Decimal:
		s, ok := text()
		if ok && t.IsWideDecimal() {
			d, _, err := types.ParseDecimalDatum([]byte(s), t, nil)
			if err != nil {
				return bad()
			}
			return d, nil
		}
		r, ok2 := new(big.Rat).SetString(s)
		if !ok || !ok2 {
			return bad()
		}
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Scale)), nil)))
		q := new(big.Int).Quo(r.Num(), r.Denom())
		if !q.IsInt64() {
			return bad()
		}
		return types.IntDatum(q.Int64()), nil
	case types.String:
		if s, ok := text(); ok {
			return types.StringDatum(s), nil
		}
		b, err := rawBytes(v)
		if err != nil {
			return bad()
		}
		return types.Datum{B: b}, nil
	case types.Bytes:
		s, ok := v.(string)
		if !ok {
			return bad()
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return bad()
		}
		return types.Datum{B: b}, nil
	case types.Array:
		l, ok := v.([]any)
		if !ok {
			return bad()
		}
		d := types.Datum{L: make([]types.Datum, len(l))}
		for i, e := range l {
			var err error
			if d.L[i], err = specDatum(e, *t.Elem); err != nil {
				return d, err
			}
		}
		return d, nil
	case types.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := types.Datum{L: make([]types.Datum, 0, 2*len(m))}
		for _, k := range keys {
			kd, err := specDatum(k, *t.KeyType)
			if err != nil {
				return d, err
			}
			vd, err := specDatum(m[k], *t.Elem)
			if err != nil {
				return d, err
			}
			d.L = append(d.L, kd, vd)
		}
		return d, nil
	case types.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		d := types.Datum{L: make([]types.Datum, len(t.Fields))}
		for i, f := range t.Fields {
			fv, _ := lookupFold(m, f.Name)
			var err error
			if d.L[i], err = specDatum(fv, f.Type); err != nil {
				return d, err
			}
		}
		return d, nil
	}
	return bad()
}

// datumValue is the inverse of specDatum, into the compared form.
func datumValue(d types.Datum, t types.Type) any {
	if d.Null {
		return nil
	}
	switch t.Kind {
	case types.Boolean:
		return d.I != 0
	case types.Int, types.Bigint, types.Date, types.Time, types.Timestamp:
		return d.I
	case types.Double:
		return d.F
	case types.Decimal:
		if t.IsWideDecimal() {
			u, _ := new(big.Int).SetString(strings.Replace(types.Text(d, t), ".", "", 1), 10)
			return bigDec{u, t.Scale}
		}
		return bigDec{big.NewInt(d.I), t.Scale}
	case types.String:
		return string(d.B)
	case types.Bytes:
		return append([]byte{}, d.B...)
	case types.Array:
		out := make([]any, len(d.L))
		for i, e := range d.L {
			out[i] = datumValue(e, *t.Elem)
		}
		return out
	case types.Map:
		out := map[string]any{}
		for i := 0; i+1 < len(d.L); i += 2 {
			out[types.Text(d.L[i], *t.KeyType)] = datumValue(d.L[i+1], *t.Elem)
		}
		return out
	case types.Struct:
		out := map[string]any{}
		for i, f := range t.Fields {
			if i < len(d.L) {
				out[f.Name] = datumValue(d.L[i], f.Type)
			}
		}
		return out
	}
	return types.Text(d, t)
}

func lookupFold(m map[string]any, name string) (any, bool) {
	if v, ok := m[name]; ok {
		return v, true
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
}

// show prints a compared value compactly for diffs.
func show(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return strconv.Quote(v)
	case bigDec:
		return v.String()
	case float64:
		if v == math.Trunc(v) && math.Abs(v) < 1e15 {
			return strconv.FormatFloat(v, 'f', 1, 64)
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []byte:
		return "bytes:" + base64.StdEncoding.EncodeToString(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = show(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = strconv.Quote(k) + ":" + show(v[k])
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprint(v)
}

// decodeWriter decodes data with the columns of the registered schema it
// was written with when those are a superset of the source's columns cols;
// ok is false when they are not (decode then uses the source's columns).
func decodeWriter(src *catalog.Source, key bool, format string, opts types.FormatOptions, cols []int, data []byte, schemas types.SchemaSource) (any, bool, error) {
	if schemas == nil || !types.InfersColumns(format) || len(data) < 5 || data[0] != 0 {
		return nil, false, nil
	}
	id := int(binary.BigEndian.Uint32(data[1:5]))
	rs, err := schemas.SchemaByID(id)
	if err != nil {
		return nil, false, nil
	}
	single := "ROWVAL"
	if key {
		single = "ROWKEY"
	}
	wcols, wrapped, err := types.SchemaColumnsNamed(schemas, format, rs, single, opts.FullName)
	if err != nil || !wrapped || len(wcols) <= len(cols) {
		return nil, false, nil
	}
	ws := types.Schema{Columns: wcols}
	for _, c := range cols {
		if ws.IndexFold(src.Schema.Columns[c].Name) < 0 {
			return nil, false, nil
		}
	}
	idx := make([]int, len(wcols))
	for i := range wcols {
		wcols[i].Key = key
		idx[i] = i
	}
	opts.SchemaID, opts.ReaderSchemaID, opts.WrapSingleValue = 0, id, nil
	dec, err := types.NewDecoderOpts(format, ws, idx, opts)
	if err != nil {
		return nil, false, nil
	}
	row := make(types.Row, len(wcols))
	if err := dec.Decode(data, row); err != nil {
		return nil, true, err
	}
	out := map[string]any{}
	for i, c := range wcols {
		out[c.Name] = datumValue(row[i], c.Type)
	}
	return out, true, nil
}
