package types

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/sr"
)

// The JSON_SR format, as ksqlDB reads and writes it: the JSON format's
// text behind the Confluent wire header (a zero byte, the 4-byte schema
// ID), with a JSON Schema registered under the subject. Values are read as
// the JSON format reads them, fields matched by name, so a writer schema
// that adds or drops fields needs no resolution; the schema ID is checked
// to exist only through the header's shape. A record without the header
// is a bad record. The schema sqlstreams registers (JSONSchema) follows
// Kafka Connect's JSON Schema converter, as ksqlDB's does: every value is
// {"oneOf":[{"type":"null"},T]}, integers carry "connect.type" (int32,
// int64), DATE, TIME and TIMESTAMP their Connect logical names in "title",
// BYTES is a base64 string, MAP an object with additionalProperties.
type jsonSRCodec struct {
	*jsonCodec
	opts  FormatOptions
	own   string
	encID int
	hdr   sr.ConfluentHeader
}

// FormatJSONSR is ksqlDB's JSON_SR.
const FormatJSONSR = "JSON_SR"

func newJSONSRCodec(s Schema, cols []int, wrap bool, o FormatOptions) (*jsonSRCodec, error) {
	j, err := newJSONCodec(s, cols, wrap)
	if err != nil {
		return nil, err
	}
	c := &jsonSRCodec{jsonCodec: j, opts: o}
	c.own = JSONSchema(j.names, j.types, wrap)
	return c, nil
}

// Decode checks the wire header and reads the JSON after it.
func (c *jsonSRCodec) Decode(data []byte, row Row) error {
	if data == nil {
		return c.jsonCodec.Decode(nil, row)
	}
	if _, _, err := c.hdr.DecodeID(data); err != nil {
		return badRecord("not in the schema registry's wire format: %d bytes, first %s", len(data), firstByte(data))
	}
	return c.jsonCodec.Decode(data, row)
}

// Encode appends the header and the JSON text; the first call registers
// the columns' JSON Schema under the subject (or uses SchemaID).
func (c *jsonSRCodec) Encode(dst []byte, row Row) ([]byte, error) {
	if c.encID == 0 {
		switch {
		case c.opts.Schemas == nil:
			return dst, errNoRegistry
		case c.opts.writeSchemaID() != 0:
			rs, err := c.opts.Schemas.SchemaByID(c.opts.writeSchemaID())
			if err != nil {
				return dst, registryErr(fmt.Errorf("schema ID %d: %w", c.opts.writeSchemaID(), err))
			}
			if rs.Type != SchemaTypeJSON {
				return dst, registryErr(fmt.Errorf("schema ID %d is %s, not a JSON schema", c.opts.writeSchemaID(), rs.Type))
			}
			c.encID = c.opts.writeSchemaID()
		case c.opts.Subject == "":
			return dst, registryErr(fmt.Errorf("the JSON_SR encoder has no registry subject"))
		default:
			id, err := c.opts.Schemas.Register(c.opts.Subject, RegisteredSchema{Type: SchemaTypeJSON, Text: c.own})
			if err != nil {
				return dst, registryErr(fmt.Errorf("registering the schema under %s: %w", c.opts.Subject, err))
			}
			c.encID = id
		}
	}
	dst, _ = c.hdr.AppendEncode(dst, c.encID, nil)
	return c.jsonCodec.Encode(dst, row)
}

// JSONSchema returns the JSON Schema ksqlDB's JSON_SR format registers for
// columns with these names and types: an object with one property per
// column, or, when wrap is false, the one column's schema.
func JSONSchema(names []string, types []Type, wrap bool) string {
	var b bytes.Buffer
	if wrap {
		appendJSONSchemaObject(&b, names, types)
	} else {
		appendJSONSchemaType(&b, types[0])
	}
	return b.String()
}

func appendJSONSchemaObject(b *bytes.Buffer, names []string, types []Type) {
	b.WriteString(`{"type":"object","properties":{`)
	for i, n := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(appendJSONString(nil, n))
		b.WriteByte(':')
		appendJSONSchemaType(b, types[i])
		// Connect's converter keeps the field order in connect.index.
		b.Truncate(b.Len() - 1)
		fmt.Fprintf(b, `,"connect.index":%d}`, i)
	}
	b.WriteString(`}}`)
}

// appendJSONSchemaType appends {"oneOf":[{"type":"null"},T]}.
func appendJSONSchemaType(b *bytes.Buffer, t Type) {
	b.WriteString(`{"oneOf":[{"type":"null"},`)
	switch t.Kind {
	case Boolean:
		b.WriteString(`{"type":"boolean"}`)
	case Int:
		b.WriteString(`{"type":"integer","connect.type":"int32"}`)
	case Bigint:
		b.WriteString(`{"type":"integer","connect.type":"int64"}`)
	case Double:
		b.WriteString(`{"type":"number","connect.type":"float64"}`)
	case Decimal:
		fmt.Fprintf(b, `{"type":"number","title":"org.apache.kafka.connect.data.Decimal","connect.type":"bytes","connect.version":1,"connect.parameters":{"scale":"%d","connect.decimal.precision":"%d"}}`, t.Scale, t.Precision)
	case String:
		b.WriteString(`{"type":"string"}`)
	case Bytes:
		b.WriteString(`{"type":"string","connect.type":"bytes"}`)
	case Date:
		b.WriteString(`{"type":"integer","title":"org.apache.kafka.connect.data.Date","connect.type":"int32","connect.version":1}`)
	case Time:
		b.WriteString(`{"type":"integer","title":"org.apache.kafka.connect.data.Time","connect.type":"int32","connect.version":1}`)
	case Timestamp:
		b.WriteString(`{"type":"integer","title":"org.apache.kafka.connect.data.Timestamp","connect.type":"int64","connect.version":1}`)
	case Array:
		b.WriteString(`{"type":"array","items":`)
		appendJSONSchemaType(b, *t.Elem)
		b.WriteByte('}')
	case Map:
		b.WriteString(`{"type":"object","additionalProperties":`)
		appendJSONSchemaType(b, *t.Elem)
		b.WriteByte('}')
	case Struct:
		names := make([]string, len(t.Fields))
		types := make([]Type, len(t.Fields))
		for i, f := range t.Fields {
			names[i], types[i] = f.Name, f.Type
		}
		appendJSONSchemaObject(b, names, types)
	}
	b.WriteString(`]}`)
}

// JSONSchemaColumns returns the columns ksqlDB infers from a registered
// JSON Schema: an object's properties (in "connect.index" order when
// given, else in the order the schema lists them), or one column named
// single for any other schema. integer is BIGINT unless connect.type says
// int32 (INT); number is DOUBLE (DECIMAL with Connect's Decimal title);
// Connect's Date, Time and Timestamp titles give those types; an object
// with additionalProperties is a MAP with STRING keys; oneOf/anyOf of
// null and one schema is that schema.
func JSONSchemaColumns(rs RegisteredSchema, single string) (cols []Column, wrapped bool, err error) {
	var root jsNode
	if err := json.Unmarshal([]byte(rs.Text), &root); err != nil {
		return nil, false, fmt.Errorf("JSON schema: %v", err)
	}
	n := root.nonNull()
	if n.typ() == "object" && n.AdditionalProperties == nil {
		fields, err := n.fields(0)
		if err != nil {
			return nil, false, err
		}
		for _, f := range fields {
			cols = append(cols, Column{Name: f.Name, Type: f.Type})
		}
		return cols, true, nil
	}
	t, err := n.sqlType(0)
	if err != nil {
		return nil, false, err
	}
	return []Column{{Name: single, Type: t}}, false, nil
}

// jsNode is the part of a JSON Schema inference reads.
type jsNode struct {
	Type                 any               `json:"type"`
	Title                string            `json:"title"`
	ConnectType          string            `json:"connect.type"`
	ConnectIndex         *int              `json:"connect.index"`
	ConnectParameters    map[string]string `json:"connect.parameters"`
	Properties           orderedProps      `json:"properties"`
	AdditionalProperties *jsNode           `json:"additionalProperties"`
	Items                *jsNode           `json:"items"`
	OneOf                []jsNode          `json:"oneOf"`
	AnyOf                []jsNode          `json:"anyOf"`
}

type jsProp struct {
	name string
	node jsNode
}

// orderedProps keeps the properties in the order the schema lists them.
type orderedProps []jsProp

func (o *orderedProps) UnmarshalJSON(b []byte) error {
	d := json.NewDecoder(bytes.NewReader(b))
	if _, err := d.Token(); err != nil { // {
		return err
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return err
		}
		var n jsNode
		if err := d.Decode(&n); err != nil {
			return err
		}
		*o = append(*o, jsProp{name: k.(string), node: n})
	}
	return nil
}

func (n *jsNode) typ() string {
	switch t := n.Type.(type) {
	case string:
		return t
	case []any: // ["null","string"]
		var v string
		for _, e := range t {
			if s, ok := e.(string); ok && s != "null" {
				v = s
			}
		}
		return v
	}
	return ""
}

// nonNull returns the one non-null schema of a oneOf/anyOf, or n.
func (n *jsNode) nonNull() *jsNode {
	alts := n.OneOf
	if len(alts) == 0 {
		alts = n.AnyOf
	}
	var v *jsNode
	for i := range alts {
		if alts[i].typ() == "null" {
			continue
		}
		if v != nil {
			return n
		}
		v = &alts[i]
	}
	if v == nil {
		return n
	}
	return v.nonNull()
}

func (n *jsNode) fields(depth int) ([]Field, error) {
	props := append(orderedProps{}, n.Properties...)
	indexed := true
	for _, p := range props {
		indexed = indexed && p.node.ConnectIndex != nil
	}
	if indexed {
		for i := 1; i < len(props); i++ {
			for j := i; j > 0 && *props[j].node.ConnectIndex < *props[j-1].node.ConnectIndex; j-- {
				props[j], props[j-1] = props[j-1], props[j]
			}
		}
	}
	var out []Field
	for _, p := range props {
		t, err := p.node.sqlType(depth + 1)
		if err != nil {
			return nil, fmt.Errorf("property %s: %v", p.name, err)
		}
		out = append(out, Field{Name: p.name, Type: t})
	}
	return out, nil
}

func (n *jsNode) sqlType(depth int) (Type, error) {
	if depth > 32 {
		return Type{}, fmt.Errorf("the schema nests too deeply")
	}
	n = n.nonNull()
	switch n.typ() {
	case "boolean":
		return BooleanType, nil
	case "integer":
		switch {
		case strings.HasSuffix(n.Title, "connect.data.Date"):
			return DateType, nil
		case strings.HasSuffix(n.Title, "connect.data.Time"):
			return TimeType, nil
		case strings.HasSuffix(n.Title, "connect.data.Timestamp"):
			return TimestampType, nil
		case n.ConnectType == "int32" || n.ConnectType == "int16" || n.ConnectType == "int8":
			return IntType, nil
		}
		return BigintType, nil
	case "number":
		if strings.HasSuffix(n.Title, "connect.data.Decimal") {
			var p, s int
			fmt.Sscan(n.ConnectParameters["connect.decimal.precision"], &p)
			fmt.Sscan(n.ConnectParameters["scale"], &s)
			t := Type{Kind: Decimal, Precision: p, Scale: s}
			if err := checkType(t); err != nil {
				return Type{}, err
			}
			return t, nil
		}
		return DoubleType, nil
	case "string":
		if n.ConnectType == "bytes" {
			return BytesType, nil
		}
		return StringType, nil
	case "array":
		if n.Items == nil {
			return Type{}, fmt.Errorf("an array without items")
		}
		e, err := n.Items.sqlType(depth + 1)
		if err != nil {
			return Type{}, err
		}
		return Type{Kind: Array, Elem: &e}, nil
	case "object":
		if n.AdditionalProperties != nil {
			e, err := n.AdditionalProperties.sqlType(depth + 1)
			if err != nil {
				return Type{}, err
			}
			k := StringType
			return Type{Kind: Map, KeyType: &k, Elem: &e}, nil
		}
		fs, err := n.fields(depth)
		if err != nil {
			return Type{}, err
		}
		return Type{Kind: Struct, Fields: fs}, nil
	}
	return Type{}, fmt.Errorf("JSON schema type %v has no SQL type", n.Type)
}
