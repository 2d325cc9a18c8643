package types

import (
	"fmt"

	"github.com/twmb/avro"
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
	tree, err := parseAvroCached(src, rs)
	if err != nil {
		return nil, false, err
	}
	sch := tree.node(tree.root)
	if sch.Type == "union" {
		if b := unionValue(sch); b != nil {
			sch = tree.node(b)
		}
	}
	if sch.Type == "record" || sch.Type == "error" {
		for i := range sch.Fields {
			f := &sch.Fields[i]
			t, err := avroSQLType(tree, &f.Type, 0)
			if err != nil {
				return nil, false, fmt.Errorf("field %s: %v", f.Name, err)
			}
			cols = append(cols, Column{Name: f.Name, Type: t})
		}
		return cols, true, nil
	}
	t, err := avroSQLType(tree, sch, 0)
	if err != nil {
		return nil, false, err
	}
	return []Column{{Name: single, Type: t}}, false, nil
}

func avroSQLType(tree *avroTree, s *avro.SchemaNode, depth int) (Type, error) {
	if depth > 32 {
		return Type{}, fmt.Errorf("the schema nests too deeply (a recursive record?)")
	}
	s = tree.node(s)
	lt := avroLogical(s)
	switch s.Type {
	case "union":
		v := unionValue(s)
		if v == nil {
			return Type{}, fmt.Errorf("union %s has no SQL type (only a union of null and one type has)", avroTypeName(s))
		}
		return avroSQLType(tree, v, depth+1)
	case "boolean":
		return BooleanType, nil
	case "int":
		switch lt {
		case "date":
			return DateType, nil
		case "time-millis":
			return TimeType, nil
		}
		return IntType, nil
	case "long":
		switch lt {
		case "timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros":
			return TimestampType, nil
		case "time-micros":
			return TimeType, nil
		}
		return BigintType, nil
	case "float", "double":
		return DoubleType, nil
	case "string", "enum":
		return StringType, nil
	case "bytes", "fixed":
		if lt == "decimal" {
			t := Type{Kind: Decimal, Precision: s.Precision, Scale: s.Scale}
			if err := checkType(t); err != nil {
				return Type{}, err
			}
			return t, nil
		}
		return BytesType, nil
	case "array":
		e, err := avroSQLType(tree, s.Items, depth+1)
		if err != nil {
			return Type{}, err
		}
		return Type{Kind: Array, Elem: &e}, nil
	case "map":
		e, err := avroSQLType(tree, s.Values, depth+1)
		if err != nil {
			return Type{}, err
		}
		k := StringType
		return Type{Kind: Map, KeyType: &k, Elem: &e}, nil
	case "record", "error":
		t := Type{Kind: Struct}
		for i := range s.Fields {
			f := &s.Fields[i]
			ft, err := avroSQLType(tree, &f.Type, depth+1)
			if err != nil {
				return Type{}, fmt.Errorf("field %s: %v", f.Name, err)
			}
			t.Fields = append(t.Fields, Field{Name: f.Name, Type: ft})
		}
		return t, nil
	}
	return Type{}, fmt.Errorf("Avro %s has no SQL type", s.Type)
}
