package types

import (
	"encoding/binary"
	"fmt"
	"math"
)

// kafkaCodec is the KAFKA format: one primitive column in the byte layout
// of Kafka's own Java serializers, as ksqlDB uses them:
//
//	INT     IntegerSerializer: 4 bytes, big-endian two's complement
//	BIGINT  LongSerializer: 8 bytes, big-endian two's complement
//	DOUBLE  DoubleSerializer: 8 bytes, big-endian IEEE-754
//	STRING  StringSerializer: the UTF-8 bytes
//	BYTES   ByteBufferSerializer: the bytes
//
// A nil key or value is NULL, and NULL encodes as nothing (callers that
// must send a Kafka null check the datum first). Data of the wrong length
// for INT, BIGINT or DOUBLE is a bad record; an empty STRING or BYTES is
// the empty value, not NULL. With no columns the codec reads and writes
// nothing, like ksqlDB's void serde.
type kafkaCodec struct {
	col  int
	t    Type
	none bool
}

func newKafkaCodec(s Schema, cols []int) (*kafkaCodec, error) {
	switch len(cols) {
	case 0:
		return &kafkaCodec{none: true}, nil
	case 1:
	default:
		return nil, fmt.Errorf("The 'KAFKA' format only supports a single field. Got: [%s]", ColumnsText(s, cols))
	}
	t := s.Columns[cols[0]].Type
	switch t.Kind {
	case String, Int, Bigint, Double, Bytes:
	default:
		return nil, fmt.Errorf("The 'KAFKA' format does not support type '%s', column: `%s`; it supports INT, BIGINT, DOUBLE, STRING and BYTES", t.Kind, s.Columns[cols[0]].Name)
	}
	return &kafkaCodec{col: cols[0], t: t}, nil
}

func (c *kafkaCodec) Decode(data []byte, row Row) error {
	if c.none {
		return nil
	}
	d := &row[c.col]
	if data == nil {
		setNull(d)
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

// Encode appends the column's bytes. A NULL appends nothing.
func (c *kafkaCodec) Encode(dst []byte, row Row) ([]byte, error) {
	if c.none {
		return dst, nil
	}
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
