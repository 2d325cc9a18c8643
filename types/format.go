package types

import (
	"errors"
	"fmt"
	"strings"
)

// Format names, as written in WITH (KEY_FORMAT=…, VALUE_FORMAT=…).
const (
	FormatJSON  = "JSON"
	FormatKafka = "KAFKA"
	FormatNone  = "NONE"
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
	// from data are set to NULL. Errors wrap ErrBadRecord.
	Decode(data []byte, row Row) error
}

// Encoder appends the encoding of its columns of row to dst.
type Encoder interface {
	Encode(dst []byte, row Row) ([]byte, error)
}

// NormalizeFormat upper-cases a format name and checks it is known.
func NormalizeFormat(name string) (string, error) {
	f := strings.ToUpper(name)
	switch f {
	case FormatJSON, FormatKafka, FormatNone:
		return f, nil
	case "DELIMITED", "AVRO", "PROTOBUF", "JSON_SR", "PROTOBUF_NOSR":
		return "", fmt.Errorf("format %s is not supported yet", f)
	}
	return "", fmt.Errorf("unknown format %q", name)
}

// NewDecoder returns a decoder for format that fills the columns cols of a
// row laid out by s.
func NewDecoder(format string, s Schema, cols []int) (Decoder, error) {
	switch format {
	case FormatJSON:
		return newJSONDecoder(s, cols)
	case FormatKafka:
		return newKafkaCodec(s, cols)
	case FormatNone:
		if len(cols) > 0 {
			return nil, fmt.Errorf("format NONE cannot hold columns")
		}
		return noneCodec{}, nil
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

// NewEncoder returns an encoder for format that writes the columns cols of
// a row laid out by s.
func NewEncoder(format string, s Schema, cols []int) (Encoder, error) {
	switch format {
	case FormatJSON:
		return newJSONEncoder(s, cols)
	case FormatKafka:
		return newKafkaCodec(s, cols)
	case FormatNone:
		if len(cols) > 0 {
			return nil, fmt.Errorf("format NONE cannot hold columns")
		}
		return noneCodec{}, nil
	}
	return nil, fmt.Errorf("unknown format %q", format)
}

type noneCodec struct{}

func (noneCodec) Decode([]byte, Row) error                 { return nil }
func (noneCodec) Encode(dst []byte, _ Row) ([]byte, error) { return dst, nil }
