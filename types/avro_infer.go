package types

import (
	"fmt"

	"github.com/hamba/avro/v2"
)

// AvroColumns returns the columns ksqlDB infers from a registered Avro
// schema: a record's fields in order, named as the schema names them (so
// lower-case names need quoting in SQL), or, for any other schema, one
// column named single (ksqlDB's ROWKEY or ROWVAL), unwrapped. The types
// map back what AvroSchema writes: int INT, long BIGINT, float and double
// DOUBLE, string and enum STRING, bytes and fixed BYTES, the logical types
// decimal, date, time-millis/-micros, timestamp-millis/-micros, arrays,
// maps, records as STRUCT, and a union of null with one type as that type.
// Other unions are refused.
func AvroColumns(rs RegisteredSchema, single string) (cols []Column, wrapped bool, err error) {
	return avroColumns(nil, rs, single)
}

// avroColumns is AvroColumns with references fetched from src.
func avroColumns(src SchemaSource, rs RegisteredSchema, single string) (cols []Column, wrapped bool, err error) {
	sch, err := parseAvroCached(src, rs)
	if err != nil {
		return nil, false, err
	}
	if u, ok := sch.(*avro.UnionSchema); ok {
		if b := unionValue(u); b != nil {
			sch = b
		}
	}
	if r, ok := sch.(*avro.RecordSchema); ok {
		for _, f := range r.Fields() {
			t, err := avroSQLType(f.Type(), 0)
			if err != nil {
				return nil, false, fmt.Errorf("field %s: %v", f.Name(), err)
			}
			cols = append(cols, Column{Name: f.Name(), Type: t})
		}
		return cols, true, nil
	}
	t, err := avroSQLType(sch, 0)
	if err != nil {
		return nil, false, err
	}
	return []Column{{Name: single, Type: t}}, false, nil
}

// unionValue returns the one non-null branch of a union, or nil.
func unionValue(u *avro.UnionSchema) avro.Schema {
	var v avro.Schema
	for _, b := range u.Types() {
		if b.Type() == avro.Null {
			continue
		}
		if v != nil {
			return nil
		}
		v = b
	}
	return v
}

func avroSQLType(s avro.Schema, depth int) (Type, error) {
	if depth > 32 {
		return Type{}, fmt.Errorf("the schema nests too deeply (a recursive record?)")
	}
	if r, ok := s.(*avro.RefSchema); ok {
		s = r.Schema()
	}
	lt := avro.LogicalType("")
	if l := logical(s); l != nil {
		lt = l.Type()
	}
	switch s.Type() {
	case avro.Union:
		v := unionValue(s.(*avro.UnionSchema))
		if v == nil {
			return Type{}, fmt.Errorf("union %s has no SQL type (only a union of null and one type has)", s)
		}
		return avroSQLType(v, depth+1)
	case avro.Boolean:
		return BooleanType, nil
	case avro.Int:
		switch lt {
		case avro.Date:
			return DateType, nil
		case avro.TimeMillis:
			return TimeType, nil
		}
		return IntType, nil
	case avro.Long:
		switch lt {
		case avro.TimestampMillis, avro.TimestampMicros, avro.LocalTimestampMillis, avro.LocalTimestampMicros:
			return TimestampType, nil
		case avro.TimeMicros:
			return TimeType, nil
		}
		return BigintType, nil
	case avro.Float, avro.Double:
		return DoubleType, nil
	case avro.String, avro.Enum:
		return StringType, nil
	case avro.Bytes, avro.Fixed:
		if lt == avro.Decimal {
			d := logical(s).(*avro.DecimalLogicalSchema)
			t := Type{Kind: Decimal, Precision: d.Precision(), Scale: d.Scale()}
			if err := checkType(t); err != nil {
				return Type{}, err
			}
			return t, nil
		}
		return BytesType, nil
	case avro.Array:
		e, err := avroSQLType(s.(*avro.ArraySchema).Items(), depth+1)
		if err != nil {
			return Type{}, err
		}
		return Type{Kind: Array, Elem: &e}, nil
	case avro.Map:
		e, err := avroSQLType(s.(*avro.MapSchema).Values(), depth+1)
		if err != nil {
			return Type{}, err
		}
		k := StringType
		return Type{Kind: Map, KeyType: &k, Elem: &e}, nil
	case avro.Record:
		t := Type{Kind: Struct}
		for _, f := range s.(*avro.RecordSchema).Fields() {
			ft, err := avroSQLType(f.Type(), depth+1)
			if err != nil {
				return Type{}, fmt.Errorf("field %s: %v", f.Name(), err)
			}
			t.Fields = append(t.Fields, Field{Name: f.Name(), Type: ft})
		}
		return t, nil
	}
	return Type{}, fmt.Errorf("Avro %s has no SQL type", s.Type())
}
