package types

import (
	"encoding/binary"
	"fmt"
	"math"
)

// kafkaCodec is the KAFKA format: one primitive column in the byte layout
// of Kafka's own Java serializers (STRING as UTF-8, INT as 4 and BIGINT as
// 8 big-endian bytes, DOUBLE as 8 big-endian IEEE-754 bytes). A nil key or
// value is NULL.
type kafkaCodec struct {
	col int
	t   Type
}

func newKafkaCodec(s Schema, cols []int) (*kafkaCodec, error) {
	if len(cols) != 1 {
		return nil, fmt.Errorf("format KAFKA holds exactly one column, got %d", len(cols))
	}
	t := s.Columns[cols[0]].Type
	switch t.Kind {
	case String, Int, Bigint, Double, Bytes:
	default:
		return nil, fmt.Errorf("format KAFKA does not support type %s", t)
	}
	return &kafkaCodec{col: cols[0], t: t}, nil
}

func (c *kafkaCodec) Decode(data []byte, row Row) error {
	d := &row[c.col]
	if data == nil {
		*d = NullDatum
		return nil
	}
	d.Null = false
	switch c.t.Kind {
	case String, Bytes:
		d.B = data
	case Int:
		if len(data) != 4 {
			return badRecord("KAFKA INT needs 4 bytes, got %d", len(data))
		}
		d.I = int64(int32(binary.BigEndian.Uint32(data)))
	case Bigint:
		if len(data) != 8 {
			return badRecord("KAFKA BIGINT needs 8 bytes, got %d", len(data))
		}
		d.I = int64(binary.BigEndian.Uint64(data))
	case Double:
		if len(data) != 8 {
			return badRecord("KAFKA DOUBLE needs 8 bytes, got %d", len(data))
		}
		d.F = math.Float64frombits(binary.BigEndian.Uint64(data))
	}
	return nil
}

// Encode appends the column's bytes. A NULL appends nothing; callers that
// must send a Kafka null check the datum first (see IsNullKey).
func (c *kafkaCodec) Encode(dst []byte, row Row) ([]byte, error) {
	d := row[c.col]
	if d.Null {
		return dst, nil
	}
	switch c.t.Kind {
	case String, Bytes:
		return append(dst, d.B...), nil
	case Int:
		return binary.BigEndian.AppendUint32(dst, uint32(int32(d.I))), nil
	case Bigint:
		return binary.BigEndian.AppendUint64(dst, uint64(d.I)), nil
	case Double:
		return binary.BigEndian.AppendUint64(dst, math.Float64bits(d.F)), nil
	}
	return dst, nil
}
