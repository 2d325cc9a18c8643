package types

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/sr"
)

// The AVRO format, as ksqlDB reads and writes it: the Confluent wire
// format (a zero byte, the 4-byte big-endian schema ID, the Avro binary
// encoding) with schemas kept in a schema registry (FormatOptions.Schemas).
//
// The schema sqlstreams writes (AvroSchema) maps SQL types as ksqlDB does:
//
//	BOOLEAN    boolean          DOUBLE     double
//	INT        int              STRING     string
//	BIGINT     long             BYTES      bytes
//	DECIMAL    bytes, logicalType decimal with the precision and scale
//	DATE       int, date        TIME       int, time-millis
//	TIMESTAMP  long, timestamp-millis
//	ARRAY      array            MAP        map (STRING keys only)
//	STRUCT     record named <parent's full name>_<FIELD>
//
// Every column, array element, map value and struct field is a union
// ["null", T] with default null. The columns of a value are the fields of a
// record named io.confluent.ksql.avro_schemas.KsqlDataSourceSchema
// (FormatOptions.FullName) unless there is one column and it is unwrapped
// (FormatOptions.WrapSingleValue; a single key column is unwrapped by
// default): the schema is then that column's union.
//
// Reading is driven by the writer's schema, fetched by the ID in each
// record's header, and resolved against the columns as Avro schema
// resolution does: fields match columns by name (an exact match first, then
// case-insensitively, then by the writer field's aliases); writer fields
// without a column are skipped; columns without a writer field are NULL;
// int widens to BIGINT and DOUBLE, long and float to DOUBLE, string and
// bytes read as each other, an enum reads as its symbol's STRING, fixed as
// BYTES, time-micros and timestamp-micros are truncated to milliseconds and
// a decimal is rescaled to the column's scale when that loses nothing. A
// writer schema that cannot be resolved (a long field for an INT column,
// say) makes each of its records a bad record naming the schema ID, as do
// an unknown schema ID, a missing or wrong header and a truncated payload.
//
// Schemas are parsed with twmb/avro (avro_schema.go); the resolution above
// is the codec's own plan per writer schema ID (avro_decode.go,
// avro_encode.go), not twmb/avro's Resolve: that returns a schema that
// decodes into Go values through reflection, where the codec fills typed
// rows in place without allocating, and ksqlDB's rules go beyond Avro's
// (names matched ignoring case, int and long read as STRING, the reader
// aliases of an inferred schema). The primitives are read and written by
// avro_wire.go: twmb/avro exports no reader or writer of single values.
type avroCodec struct {
	cols  []int
	names []string
	types []Type
	wrap  bool
	opts  FormatOptions

	// own is the schema made from the columns (AvroSchema).
	own     string
	ownPlan *aenc

	// encoding, prepared on the first Encode
	encID   int
	enc     *aenc
	encErr  error
	w       avroWriter
	hdr     sr.ConfluentHeader
	scratch []byte

	// decoding
	r       avroReader
	plans   map[int]*adec // by writer schema ID
	lastID  int
	last    *adec
	payload int        // length of the record being read: no string is longer
	aliases [][]string // see readerAliases
	buf     []byte     // STRING and BYTES values of the record being read
}

// maxBadPlans bounds the schema IDs a decoder remembers as unreadable:
// records with random IDs must not grow its memory without limit (past it,
// each such record asks the registry again).
const maxBadPlans = 1024

// avroDefaultName is the full name ksqlDB gives a value's record schema.
const avroDefaultName = "io.confluent.ksql.avro_schemas.KsqlDataSourceSchema"

// errNoRegistry is returned by registry-format codecs built without a
// registry.
var errNoRegistry = fmt.Errorf("%w: AVRO, PROTOBUF and JSON_SR need a schema registry: start sqlstreams with its embedded broker (which serves one) or --schema-registry-url", ErrRegistry)

func newAvroCodec(s Schema, cols []int, wrap bool, o FormatOptions) (*avroCodec, error) {
	c := &avroCodec{cols: cols, wrap: wrap, opts: o, plans: map[int]*adec{}}
	for _, col := range cols {
		sc := s.Columns[col]
		if err := avroCheck(sc.Type); err != nil {
			return nil, fmt.Errorf("AVRO column %s: %v", sc.Name, err)
		}
		c.names = append(c.names, sc.Name)
		c.types = append(c.types, sc.Type)
	}
	if !wrap && len(cols) != 1 {
		return nil, fmt.Errorf("an unwrapped AVRO value needs exactly one column, got %d", len(cols))
	}
	name := o.FullName
	if name == "" {
		name = avroDefaultName
		if isKey(s, cols) {
			name = "io.confluent.ksql.avro_schemas.KsqlDataSourceSchemaKey"
		}
	}
	c.own = AvroSchema(c.names, c.types, wrap, name)
	sch, err := avro.Parse(c.own)
	if err != nil {
		if o.FullName != "" && strings.TrimSpace(o.FullName) == "" {
			return nil, fmt.Errorf("fullSchemaName cannot be empty. Format configuration: {fullSchemaName=}")
		}
		for _, n := range c.names {
			if n != "" && !(n[0] == '_' || n[0] >= 'A' && n[0] <= 'Z' || n[0] >= 'a' && n[0] <= 'z') {
				return nil, fmt.Errorf("Schema is not compatible with Avro: Illegal initial character: %s", n)
			}
		}
		return nil, fmt.Errorf("AVRO schema of the columns: %v", err)
	}
	if c.ownPlan, err = c.encPlan(newAvroTree(sch)); err != nil {
		return nil, err
	}
	return c, nil
}

// avroCheck refuses types the AVRO format cannot hold.
func avroCheck(t Type) error {
	switch t.Kind {
	case Map:
		if t.KeyType.Kind != String {
			return fmt.Errorf("Avro only supports MAPs with STRING keys, not %s", t.KeyType)
		}
		return avroCheck(*t.Elem)
	case Array:
		return avroCheck(*t.Elem)
	case Struct:
		for _, f := range t.Fields {
			if err := avroCheck(f.Type); err != nil {
				return err
			}
		}
	}
	return nil
}

// AvroSchema returns the Avro schema ksqlDB would register for columns
// with these names and types: a record named fullName whose fields are the
// columns, or, when wrap is false, the one column's type. Every value is
// nullable (see the format's doc).
func AvroSchema(names []string, types []Type, wrap bool, fullName string) string {
	var v any
	if wrap {
		v = avroRecord(fullName, names, types)
	} else {
		v = avroType(types[0], fullName)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

type avroFieldJSON struct {
	Name    string `json:"name"`
	Type    any    `json:"type"`
	Default any    `json:"default"`
}

type avroRecordJSON struct {
	Type   string          `json:"type"`
	Name   string          `json:"name"`
	Fields []avroFieldJSON `json:"fields"`
}

func avroRecord(fullName string, names []string, types []Type) avroRecordJSON {
	r := avroRecordJSON{Type: "record", Name: fullName, Fields: []avroFieldJSON{}}
	for i, n := range names {
		r.Fields = append(r.Fields, avroFieldJSON{Name: n, Type: avroType(types[i], fullName+"_"+n)})
	}
	return r
}

// avroType is the nullable Avro type of t; name names a record.
func avroType(t Type, name string) any {
	var v any
	switch t.Kind {
	case Boolean:
		v = "boolean"
	case Int:
		v = "int"
	case Bigint:
		v = "long"
	case Double:
		v = "double"
	case String:
		v = "string"
	case Bytes:
		v = "bytes"
	case Decimal:
		v = map[string]any{"type": "bytes", "logicalType": "decimal", "precision": t.Precision, "scale": t.Scale}
	case Date:
		v = map[string]any{"type": "int", "logicalType": "date"}
	case Time:
		v = map[string]any{"type": "int", "logicalType": "time-millis"}
	case Timestamp:
		v = map[string]any{"type": "long", "logicalType": "timestamp-millis"}
	case Array:
		v = map[string]any{"type": "array", "items": avroType(*t.Elem, name)}
	case Map:
		v = map[string]any{"type": "map", "values": avroType(*t.Elem, name)}
	case Struct:
		names := make([]string, len(t.Fields))
		types := make([]Type, len(t.Fields))
		for i, f := range t.Fields {
			names[i], types[i] = f.Name, f.Type
		}
		v = avroRecord(name, names, types)
	}
	return []any{"null", v}
}
