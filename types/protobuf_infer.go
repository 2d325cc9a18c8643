package types

import (
	"fmt"
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// ProtobufColumns returns the columns ksqlDB infers from a registered
// .proto (its first message, or the one index picks): a field each, a
// oneof as a STRUCT column <oneof>_0, with the types the format reads
// (int32, sint32, sfixed32 INT; uint32 and the 64-bit integers BIGINT;
// float, double DOUBLE; enum STRING; repeated ARRAY; map<string, V> MAP;
// wrappers their scalar; Timestamp, Date, TimeOfDay; messages STRUCT).
func ProtobufColumns(rs RegisteredSchema) ([]Column, error) {
	return protobufColumns(nil, rs, "")
}

// protobufColumns is ProtobufColumns with imports fetched from src.
func protobufColumns(src SchemaSource, rs RegisteredSchema, fullName string) ([]Column, error) {
	idx, err := protoIndex(src, rs, fullName)
	if err != nil {
		return nil, err
	}
	md, err := compileProto(src, rs, idx)
	if err != nil {
		return nil, err
	}
	fs, err := protoFields(md, 0)
	if err != nil {
		return nil, err
	}
	cols := make([]Column, len(fs))
	for i, f := range fs {
		cols[i] = Column{Name: f.Name, Type: f.Type}
	}
	return cols, nil
}

func protoFields(md protoreflect.MessageDescriptor, depth int) ([]Field, error) {
	if depth > 32 {
		return nil, fmt.Errorf("messages nest too deeply (a recursive message?)")
	}
	var out []Field
	oneofs := map[protoreflect.FullName]int{}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		t, err := protoFieldType(fd, depth)
		if err != nil {
			return nil, fmt.Errorf("field %s: %v", fd.Name(), err)
		}
		if oo := fd.ContainingOneof(); oo != nil && !oo.IsSynthetic() {
			at, ok := oneofs[oo.FullName()]
			if !ok {
				at = len(out)
				oneofs[oo.FullName()] = at
				out = append(out, Field{Name: string(oo.Name()) + "_0", Type: Type{Kind: Struct}})
			}
			out[at].Type.Fields = append(out[at].Type.Fields, Field{Name: string(fd.Name()), Type: t})
			continue
		}
		out = append(out, Field{Name: string(fd.Name()), Type: t})
	}
	return out, nil
}

func protoFieldType(fd protoreflect.FieldDescriptor, depth int) (Type, error) {
	if fd.IsMap() {
		if fd.MapKey().Kind() != protoreflect.StringKind {
			return Type{}, fmt.Errorf("map keys of %s have no SQL type here (STRING only)", fd.MapKey().Kind())
		}
		v, err := protoFieldType(fd.MapValue(), depth+1)
		if err != nil {
			return Type{}, err
		}
		k := StringType
		return Type{Kind: Map, KeyType: &k, Elem: &v}, nil
	}
	var t Type
	switch fd.Kind() {
	case protoreflect.BoolKind:
		t = BooleanType
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		t = IntType
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Int64Kind, protoreflect.Sint64Kind,
		protoreflect.Sfixed64Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		t = BigintType
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		t = DoubleType
	case protoreflect.StringKind, protoreflect.EnumKind:
		t = StringType
	case protoreflect.BytesKind:
		t = BytesType
	case protoreflect.MessageKind:
		md := fd.Message()
		switch name := md.FullName(); {
		case name == "google.protobuf.Timestamp":
			t = TimestampType
		case name == "google.type.Date":
			t = DateType
		case name == "google.type.TimeOfDay":
			t = TimeType
		case name == "confluent.type.Decimal":
			p, s, ok := decimalMeta(fd)
			if !ok {
				return Type{}, fmt.Errorf("inferring DECIMAL from confluent.type.Decimal needs its precision and scale in (confluent.field_meta) params: declare the columns")
			}
			t = Type{Kind: Decimal, Precision: p, Scale: s}
		case isWrapper(name):
			inner, err := protoFieldType(md.Fields().ByNumber(1), depth+1)
			if err != nil {
				return Type{}, err
			}
			t = inner
		default:
			fs, err := protoFields(md, depth+1)
			if err != nil {
				return Type{}, err
			}
			t = Type{Kind: Struct, Fields: fs}
		}
	default:
		return Type{}, fmt.Errorf("protobuf %s has no SQL type", fd.Kind())
	}
	if fd.IsList() {
		return Type{Kind: Array, Elem: &t}, nil
	}
	return t, nil
}

// decimalMeta reads the precision and scale of a confluent.type.Decimal
// field from its (confluent.field_meta) option's params, as Confluent's
// converter writes them.
func decimalMeta(fd protoreflect.FieldDescriptor) (precision, scale int, ok bool) {
	opts := fd.Options()
	if opts == nil {
		return 0, 0, false
	}
	m, isMsg := opts.(interface{ ProtoReflect() protoreflect.Message })
	if !isMsg {
		return 0, 0, false
	}
	var params protoreflect.Map
	m.ProtoReflect().Range(func(xd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if xd.IsExtension() && xd.FullName() == "confluent.field_meta" {
			if pf := xd.Message().Fields().ByName("params"); pf != nil {
				params = v.Message().Get(pf).Map()
			}
			return false
		}
		return true
	})
	if params == nil {
		return 0, 0, false
	}
	get := func(k string) (int, bool) {
		v := params.Get(protoreflect.ValueOfString(k).MapKey())
		if !v.IsValid() {
			return 0, false
		}
		n, err := strconv.Atoi(v.String())
		return n, err == nil
	}
	p, ok1 := get("precision")
	s, ok2 := get("scale")
	return p, s, ok1 && ok2 && p > 0 && s >= 0 && s <= p
}
