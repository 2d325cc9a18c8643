package types

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Format names, as written in WITH (KEY_FORMAT=…, VALUE_FORMAT=…).
const (
	FormatJSON      = "JSON"
	FormatKafka     = "KAFKA"
	FormatNone      = "NONE"
	FormatDelimited = "DELIMITED"
	FormatAvro      = "AVRO"
)

// ErrBadRecord wraps every error a decoder returns for bytes that do not fit
// the declared schema. Such records are skipped, counted and logged; they
// never stop a query.
var ErrBadRecord = errors.New("bad record")

func badRecord(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRecord, fmt.Sprintf(format, args...))
}

// Decoder fills the columns it was built for from a record key or value.
// A Decoder keeps scratch state and is not safe for concurrent use.
type Decoder interface {
	// Decode sets the decoder's columns of row from data. Columns absent
	// from data are set to NULL, and a nil data (a Kafka null) sets them
	// all to NULL. Errors wrap ErrBadRecord, except that the registry
	// formats return errors wrapping ErrRegistry when the schema registry
	// cannot be asked (the record is not at fault). STRING and BYTES values, and
	// the elements of composite values, may alias data or the decoder's
	// buffers: they are valid until the next Decode. Decode reuses the
	// element slices (Datum.L) it finds in row for composite values.
	Decode(data []byte, row Row) error
}

// Encoder appends the encoding of its columns of row to dst.
type Encoder interface {
	Encode(dst []byte, row Row) ([]byte, error)
}

// FormatOptions are the per-source settings of a format. The zero value
// gives ksqlDB's defaults.
type FormatOptions struct {
	// Delimiter separates DELIMITED fields (ksqlDB's KEY_DELIMITER and
	// VALUE_DELIMITER); 0 means ','. Other formats refuse a delimiter.
	// It may not be '"', '\r' or '\n'. See ParseDelimiter.
	Delimiter rune

	// KsqlQuoting makes the DELIMITED encoder quote fields as ksqlDB's CSV
	// printer (Apache Commons CSV 1.4, quote mode MINIMAL) does: also a
	// first field that starts with other than a letter or digit ("-10"), a
	// field that starts with a character up to '#' (" x", "!") or ends
	// with one up to ' ', and an empty first field; an empty STRING that
	// is not the first field is written bare, as NULL is. Without it the
	// encoder quotes only fields that need it and every empty STRING, as
	// queries recorded before it did. Decoders ignore it.
	KsqlQuoting bool

	// WrapSingleValue is ksqlDB's WRAP_SINGLE_VALUE. nil keeps the
	// default: a value with one column is wrapped in a JSON object
	// ({"ID":42}), while a key with one column is not (42); a key or
	// value with several columns is always an object. false reads and
	// writes a value's one column as the whole JSON document (42, "x",
	// [1,2], or null for NULL); true asks for the object explicitly.
	// Setting it with other than one column is an error, as in ksqlDB.
	// DELIMITED and KAFKA never wrap: they accept false and refuse
	// true; NONE refuses both.
	WrapSingleValue *bool

	// Schemas is the schema registry the AVRO format reads writer
	// schemas from and registers its schemas in. A codec is built without
	// it (to check the columns); Decode and Encode then fail. See
	// SchemaSource.
	Schemas SchemaSource
	// Subject is the registry subject the encoder registers its schema
	// under, ksqlDB's "<topic>-value" or "<topic>-key".
	Subject string
	// SchemaID is ksqlDB's VALUE_SCHEMA_ID / KEY_SCHEMA_ID: write with this
	// existing schema instead of registering one made from the columns.
	// 0 means none.
	SchemaID int
	// ReaderSchemaID, for columns inferred from the registry, is the
	// schema they came from: an AVRO field the writer's schema lacks reads
	// as that schema's default for it (Avro schema resolution) instead of
	// NULL, and encoders write with it (as with SchemaID). 0 means none.
	ReaderSchemaID int
	// FullName is ksqlDB's VALUE_AVRO_SCHEMA_FULL_NAME (AVRO) or
	// VALUE_SCHEMA_FULL_NAME (AVRO, PROTOBUF): the full name of the record
	// the encoder registers (default
	// io.confluent.ksql.avro_schemas.KsqlDataSourceSchema; PROTOBUF
	// ConnectDefault1), and for PROTOBUF the message of a registered
	// schema (SchemaID, ReaderSchemaID) the columns are read and written
	// as (default the first).
	FullName string
}

// writeSchemaID is the registered schema an encoder writes with instead of
// registering its own: SchemaID, else the schema inferred columns came
// from (ReaderSchemaID), so that writes to an inferred source use the
// subject's schema. 0: register the columns' own.
func (o FormatOptions) writeSchemaID() int {
	if o.SchemaID != 0 {
		return o.SchemaID
	}
	return o.ReaderSchemaID
}

// NormalizeFormat upper-cases a format name and checks it is known.
func NormalizeFormat(name string) (string, error) {
	f := strings.ToUpper(name)
	switch f {
	case FormatJSON, FormatKafka, FormatNone, FormatDelimited, FormatAvro, FormatJSONSR, FormatProtobuf, FormatProtobufNoSR:
		return f, nil
	}
	return "", fmt.Errorf("Unknown format: %s", name)
}

// ParseDelimiter reads a DELIMITED delimiter as ksqlDB's KEY_DELIMITER and
// VALUE_DELIMITER properties write it: one character, or the names TAB and
// SPACE (any case) for the characters that are hard to quote.
func ParseDelimiter(s string) (rune, error) {
	if strings.TrimSpace(s) == "" {
		return 0, fmt.Errorf("Delimiter cannot be empty, if you meant to have a tab or space for delimiter, please use the special values 'TAB' or 'SPACE'")
	}
	if r, n := utf8.DecodeRuneInString(s); n == len(s) && r != utf8.RuneError {
		if err := checkDelimiter(r); err != nil {
			return 0, err
		}
		return r, nil
	}
	switch strings.ToUpper(s) {
	case "TAB":
		return '\t', nil
	case "SPACE":
		return ' ', nil
	}
	return 0, fmt.Errorf("Invalid delimiter value: '%s'. Delimiter must be a single character or TAB,SPACE", s)
}

func checkDelimiter(r rune) error {
	switch {
	case r == '"' || r == '\r' || r == '\n':
		return fmt.Errorf("invalid delimiter %q: it would be ambiguous with CSV quoting or line breaks", r)
	case !utf8.ValidRune(r) || r == 0:
		return fmt.Errorf("invalid delimiter %q", r)
	}
	return nil
}

// NewDecoder returns a decoder for format that fills the columns cols of a
// row laid out by s, with default options.
func NewDecoder(format string, s Schema, cols []int) (Decoder, error) {
	return NewDecoderOpts(format, s, cols, FormatOptions{})
}

// NewEncoder returns an encoder for format that writes the columns cols of
// a row laid out by s, with default options.
func NewEncoder(format string, s Schema, cols []int) (Encoder, error) {
	return NewEncoderOpts(format, s, cols, FormatOptions{})
}

// NewDecoderOpts returns a decoder for format that fills the columns cols
// of a row laid out by s. cols are key columns when every one of them has
// Column.Key set; that decides the default wrapping (see FormatOptions).
// Errors name what the format cannot hold, before any record is read.
func NewDecoderOpts(format string, s Schema, cols []int, o FormatOptions) (Decoder, error) {
	c, err := newCodec(format, s, cols, o)
	if err != nil {
		return nil, err
	}
	return c.(Decoder), nil
}

// NewDecoderRead is NewDecoderOpts for a reader that wants only the
// columns col with read[col] set (read is indexed like s.Columns; nil
// wants every column). A JSON decoder steps over the fields of the other
// columns, leaving them NULL, and checks only that their JSON kind fits
// the column's type (a number or string for a numeric column, an object
// for a STRUCT or MAP…); a record whose unwanted field is of a fitting
// kind but unreadable (a number too large for an INT column, say) is not
// a bad record then. Other formats decode every column.
func NewDecoderRead(format string, s Schema, cols []int, read []bool, o FormatOptions) (Decoder, error) {
	d, err := NewDecoderOpts(format, s, cols, o)
	if err != nil || read == nil {
		return d, err
	}
	j, ok := d.(*jsonCodec)
	if sr, isSR := d.(*jsonSRCodec); isSR {
		j, ok = sr.jsonCodec, true
	}
	if ok && j.wrap {
		j.read = make([]bool, len(cols))
		for i, col := range cols {
			j.read[i] = col < len(read) && read[col]
		}
	}
	return d, nil
}

// NewEncoderOpts returns an encoder for format that writes the columns cols
// of a row laid out by s; see NewDecoderOpts.
func NewEncoderOpts(format string, s Schema, cols []int, o FormatOptions) (Encoder, error) {
	c, err := newCodec(format, s, cols, o)
	if err != nil {
		return nil, err
	}
	return c.(Encoder), nil
}

func newCodec(format string, s Schema, cols []int, o FormatOptions) (any, error) {
	for _, c := range cols {
		if c < 0 || c >= len(s.Columns) {
			return nil, fmt.Errorf("column index %d out of range", c)
		}
		if err := checkType(s.Columns[c].Type); err != nil {
			return nil, fmt.Errorf("column %s: %v", s.Columns[c].Name, err)
		}
	}
	if o.Delimiter != 0 {
		if format != FormatDelimited {
			return nil, fmt.Errorf("%s does not support the following configs: [delimiter]; only DELIMITED takes a delimiter", format)
		}
		if err := checkDelimiter(o.Delimiter); err != nil {
			return nil, err
		}
	}
	if o.SchemaID != 0 && !InfersColumns(format) {
		return nil, fmt.Errorf("format %s does not take a schema ID; AVRO, JSON_SR and PROTOBUF do", format)
	}
	if o.FullName != "" && format != FormatAvro && format != FormatProtobuf {
		return nil, fmt.Errorf("%s does not support the following configs: [fullSchemaName]; AVRO and PROTOBUF take a schema full name", format)
	}
	if o.WrapSingleValue != nil {
		switch format {
		case FormatJSON, FormatJSONSR:
			if len(cols) != 1 {
				return nil, fmt.Errorf("'WRAP_SINGLE_VALUE' is only valid for single-field value schemas: got %d columns", len(cols))
			}
		case FormatAvro:
			if len(cols) != 1 {
				return nil, fmt.Errorf("'WRAP_SINGLE_VALUE' is only valid for single-field value schemas: got %d columns", len(cols))
			}
		case FormatKafka, FormatDelimited:
			if *o.WrapSingleValue {
				return nil, fmt.Errorf("Format '%s' does not support 'WRAP_SINGLE_VALUE' set to 'true'.", format)
			}
		case FormatProtobuf, FormatProtobufNoSR:
			// A message always wraps its fields: true says so, false
			// asks for what the format cannot do.
			if !*o.WrapSingleValue {
				return nil, fmt.Errorf("Format '%s' does not support 'WRAP_SINGLE_VALUE' set to 'false'.", format)
			}
			if len(cols) != 1 {
				return nil, fmt.Errorf("'WRAP_SINGLE_VALUE' is only valid for single-field value schemas: got %d columns", len(cols))
			}
		default:
			return nil, fmt.Errorf("format %s does not support WRAP_SINGLE_VALUE", format)
		}
	}
	switch format {
	case FormatJSON:
		wrap := len(cols) != 1 || !isKey(s, cols)
		if o.WrapSingleValue != nil {
			wrap = *o.WrapSingleValue
		}
		return newJSONCodec(s, cols, wrap)
	case FormatKafka:
		return newKafkaCodec(s, cols)
	case FormatDelimited:
		d := o.Delimiter
		if d == 0 {
			d = ','
		}
		return newDelimitedCodec(s, cols, d, o.KsqlQuoting)
	case FormatProtobuf, FormatProtobufNoSR:
		return newProtoCodec(format, s, cols, o)
	case FormatJSONSR:
		wrap := len(cols) != 1 || !isKey(s, cols)
		if o.WrapSingleValue != nil {
			wrap = *o.WrapSingleValue
		}
		return newJSONSRCodec(s, cols, wrap, o)
	case FormatAvro:
		wrap := len(cols) != 1 || !isKey(s, cols)
		if o.WrapSingleValue != nil {
			wrap = *o.WrapSingleValue
		}
		return newAvroCodec(s, cols, wrap, o)
	case FormatNone:
		if len(cols) > 0 {
			return nil, fmt.Errorf("The 'NONE' format can only be used when no columns are defined. Got: [%s]", ColumnsText(s, cols))
		}
		return noneCodec{}, nil
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

// SchemaColumns returns the columns ksqlDB infers from a registered schema
// for format (AVRO: AvroColumns, JSON_SR: JSONSchemaColumns, PROTOBUF:
// ProtobufColumns), fetching the schemas it references from src. wrapped
// is false when the schema is not a record or object and gives one column
// named single.
func SchemaColumns(src SchemaSource, format string, rs RegisteredSchema, single string) (cols []Column, wrapped bool, err error) {
	return SchemaColumnsNamed(src, format, rs, single, "")
}

// SchemaColumnsNamed is SchemaColumns of the PROTOBUF message named
// fullName (KEY_SCHEMA_FULL_NAME, VALUE_SCHEMA_FULL_NAME; "" the first).
func SchemaColumnsNamed(src SchemaSource, format string, rs RegisteredSchema, single, fullName string) (cols []Column, wrapped bool, err error) {
	switch format {
	case FormatAvro:
		if rs.Type != "" && rs.Type != SchemaTypeAvro {
			return nil, false, fmt.Errorf("the schema is %s, not AVRO", rs.Type)
		}
		return avroColumns(src, rs, single)
	case FormatJSONSR:
		if rs.Type != SchemaTypeJSON {
			return nil, false, fmt.Errorf("the schema is %s, not JSON", rs.Type)
		}
		return JSONSchemaColumns(rs, single)
	case FormatProtobuf:
		if rs.Type != SchemaTypeProtobuf {
			return nil, false, fmt.Errorf("the schema is %s, not PROTOBUF", rs.Type)
		}
		cols, err := protobufColumns(src, rs, fullName)
		return cols, true, err
	}
	return nil, false, fmt.Errorf("format %s has no registered schemas", format)
}

// InfersColumns reports whether format's columns can come from the schema
// registry.
func InfersColumns(format string) bool {
	return format == FormatAvro || format == FormatJSONSR || format == FormatProtobuf
}

// isKey reports whether cols are all key columns.
func isKey(s Schema, cols []int) bool {
	for _, c := range cols {
		if !s.Columns[c].Key {
			return false
		}
	}
	return len(cols) > 0
}

// checkType checks that t is well formed and that a Datum can hold its
// values.
func checkType(t Type) error {
	switch t.Kind {
	case Boolean, Int, Bigint, Double, String, Bytes, Date, Time, Timestamp:
		return nil
	case Decimal:
		if t.Precision < 1 || t.Precision > MaxDecimalPrecision || t.Scale < 0 || t.Scale > t.Precision {
			return fmt.Errorf("%s is not supported: precision must be 1 to %d and scale 0 to the precision", t, MaxDecimalPrecision)
		}
		return nil
	case Array:
		if t.Elem == nil {
			return fmt.Errorf("ARRAY without an element type")
		}
		return checkType(*t.Elem)
	case Map:
		if t.Elem == nil || t.KeyType == nil {
			return fmt.Errorf("MAP without a key or value type")
		}
		if err := checkType(*t.KeyType); err != nil {
			return err
		}
		return checkType(*t.Elem)
	case Struct:
		for _, f := range t.Fields {
			if err := checkType(f.Type); err != nil {
				return fmt.Errorf("field %s: %v", f.Name, err)
			}
		}
		return nil
	}
	return fmt.Errorf("type %s has no serialized form", t)
}

type noneCodec struct{}

func (noneCodec) Decode([]byte, Row) error                 { return nil }
func (noneCodec) Encode(dst []byte, _ Row) ([]byte, error) { return dst, nil }

// fieldError is a decoding error inside a column, with the path to the
// value that failed, built innermost first as the error returns.
type fieldError struct {
	segs []string // innermost first: "ZIP", "[2]", "['k']"
	err  error
}

func (e *fieldError) Error() string { return e.path() + ": " + e.err.Error() }

func (e *fieldError) path() string {
	var b strings.Builder
	for i := len(e.segs) - 1; i >= 0; i-- {
		s := e.segs[i]
		if i < len(e.segs)-1 && s[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// inField returns err with seg added outside the path it already has.
func inField(err error, seg string) error {
	fe, ok := err.(*fieldError)
	if !ok {
		fe = &fieldError{err: err}
	}
	fe.segs = append(fe.segs, seg)
	return fe
}

// columnError turns an error decoding column name into a bad record.
func columnError(name string, err error) error {
	fe := inField(err, name).(*fieldError)
	return badRecord("field %s: %v", fe.path(), fe.err)
}
