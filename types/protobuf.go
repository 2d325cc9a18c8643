package types

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// The PROTOBUF and PROTOBUF_NOSR formats, as ksqlDB reads and writes them.
// PROTOBUF is the Confluent wire format (a zero byte, the 4-byte schema
// ID, the message indexes that pick the message in the .proto file, the
// protobuf binary encoding) with the .proto registered in a schema
// registry; PROTOBUF_NOSR is the bare protobuf encoding of the schema the
// columns give.
//
// Schemas are compiled with bufbuild/protocompile into Google's protobuf
// descriptors; records are read and written by plans made from those
// descriptors with the protobuf runtime's wire primitives (protowire),
// filling rows in place without allocating. The schema sqlstreams writes
// (ProtobufSchema) maps SQL types as ksqlDB does (through Kafka Connect's
// converter):
//
//	BOOLEAN bool      INT int32      BIGINT int64    DOUBLE double
//	STRING string     BYTES bytes    ARRAY repeated  MAP map<string, V>
//	STRUCT a nested message          DECIMAL confluent.type.Decimal
//	DATE google.type.Date            TIME google.type.TimeOfDay
//	TIMESTAMP google.protobuf.Timestamp
//
// Reading resolves the writer's message against the columns by field name
// (exactly, then ignoring case); proto3 scalars that are absent read as
// their defaults (0, "", false), absent messages as NULL, as ksqlDB does.
// google.protobuf wrapper messages (StringValue, Int64Value, …) read as
// their scalar, NULL when absent; proto3 optional fields read NULL when
// absent; an enum reads as its value's name (STRING); a oneof reads as a
// STRUCT column named <oneof>_0 with a field per case (Connect's
// mapping). int32 kinds widen to BIGINT and DOUBLE, int64 kinds and float
// to DOUBLE. A writer whose fields cannot be read as the columns makes its
// records bad records naming the schema ID. SQL NULLs of proto3 scalars
// cannot be written: they are written as absent (read back as defaults),
// as ksqlDB does; a NULL array element or map value is an error.
type protoCodec struct {
	format string
	cols   []int
	names  []string
	types  []Type
	opts   FormatOptions

	own     string
	ownDesc protoreflect.MessageDescriptor
	enc     *penc
	encID   int
	encIdx  []int
	encErr  error
	bufs    [][]byte // per nesting depth: a message being written
	dbuf    []byte   // wide DECIMAL values of the record being read

	plans   map[pkey]*pdec
	lastKey pkey
	last    *pdec
	own1    *pdec                            // PROTOBUF_NOSR: the plan for the own schema
	nums    map[protoreflect.FieldNumber]int // see readerNums
	hdr     sr.ConfluentHeader
}

// Protobuf format names.
const (
	FormatProtobuf     = "PROTOBUF"
	FormatProtobufNoSR = "PROTOBUF_NOSR"
)

const protoDefaultName = "ConnectDefault1"

func newProtoCodec(format string, s Schema, cols []int, o FormatOptions) (*protoCodec, error) {
	c := &protoCodec{format: format, cols: cols, opts: o, plans: map[pkey]*pdec{}}
	for _, col := range cols {
		sc := s.Columns[col]
		if err := protoCheck(sc.Type, false); err != nil {
			return nil, fmt.Errorf("%s column %s: %v", format, sc.Name, err)
		}
		c.names = append(c.names, sc.Name)
		c.types = append(c.types, sc.Type)
	}
	c.own = ProtobufSchema(c.names, c.types)
	if o.FullName != "" {
		c.own = protoRename(c.own, o.FullName)
	}
	md, err := compileProto(nil, RegisteredSchema{Type: SchemaTypeProtobuf, Text: c.own}, []int{0})
	if err != nil {
		return nil, fmt.Errorf("%s schema of the columns: %v", format, err)
	}
	c.ownDesc = md
	if c.enc, err = encMessage(md, c.names, c.types); err != nil {
		return nil, err
	}
	if format == FormatProtobufNoSR {
		if c.own1, err = decMessage(md, c.names, c.types, 0); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// protoCheck refuses what a protobuf message cannot hold: arrays of arrays
// or maps, maps in arrays or maps, non-STRING map keys.
func protoCheck(t Type, inRepeated bool) error {
	switch t.Kind {
	case Array:
		if inRepeated {
			return fmt.Errorf("PROTOBUF cannot hold an ARRAY or MAP directly inside an ARRAY or MAP")
		}
		return protoCheck(*t.Elem, true)
	case Map:
		if inRepeated {
			return fmt.Errorf("PROTOBUF cannot hold an ARRAY or MAP directly inside an ARRAY or MAP")
		}
		if t.KeyType.Kind != String {
			return fmt.Errorf("PROTOBUF format only supports MAP types with STRING keys, not %s", t.KeyType)
		}
		return protoCheck(*t.Elem, true)
	case Struct:
		for _, f := range t.Fields {
			if err := protoCheck(f.Type, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// ---- schemas ----

// Sources of the non-standard imports ksqlDB's schemas use; Confluent's
// registry knows them without references.
var protoBuiltins = map[string]string{
	"google/type/date.proto":       "syntax = \"proto3\";\npackage google.type;\nmessage Date {\n  int32 year = 1;\n  int32 month = 2;\n  int32 day = 3;\n}\n",
	"google/type/timeofday.proto":  "syntax = \"proto3\";\npackage google.type;\nmessage TimeOfDay {\n  int32 hours = 1;\n  int32 minutes = 2;\n  int32 seconds = 3;\n  int32 nanos = 4;\n}\n",
	"confluent/type/decimal.proto": "syntax = \"proto3\";\npackage confluent.type;\nimport public \"confluent/meta.proto\";\nmessage Decimal {\n  bytes value = 1;\n  uint32 precision = 2;\n  int32 scale = 3;\n}\n",
	"confluent/meta.proto":         "syntax = \"proto3\";\npackage confluent;\nimport \"google/protobuf/descriptor.proto\";\nmessage Meta {\n  string doc = 1;\n  map<string, string> params = 2;\n  repeated string tags = 3;\n}\nextend google.protobuf.FileOptions {\n  Meta file_meta = 1088;\n}\nextend google.protobuf.MessageOptions {\n  Meta message_meta = 1088;\n}\nextend google.protobuf.FieldOptions {\n  Meta field_meta = 1088;\n}\nextend google.protobuf.EnumOptions {\n  Meta enum_meta = 1088;\n}\nextend google.protobuf.EnumValueOptions {\n  Meta enum_value_meta = 1088;\n}\n",
}

// ProtobufSchema returns the .proto ksqlDB would register for columns with
// these names and types: one proto3 message ConnectDefault1 whose fields
// are the columns, numbered from 1, structs as nested messages
// ConnectDefault2, 3, ….
func ProtobufSchema(names []string, types []Type) string {
	var body strings.Builder
	imports := map[string]bool{}
	n := 1
	writeProtoMessage(&body, "", protoDefaultName, names, types, &n, imports)
	var b strings.Builder
	b.WriteString("syntax = \"proto3\";\n\n")
	for _, imp := range []string{"confluent/type/decimal.proto", "google/protobuf/timestamp.proto", "google/type/date.proto", "google/type/timeofday.proto"} {
		if imports[imp] {
			fmt.Fprintf(&b, "import %q;\n", imp)
		}
	}
	if len(imports) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString(body.String())
	return b.String()
}

// protoRename gives the schema ProtobufSchema writes the message name
// full (ksqlDB's VALUE_SCHEMA_FULL_NAME): its last part names the
// message, what comes before it the package.
func protoRename(schema, full string) string {
	pkg, name := "", full
	if i := strings.LastIndexByte(full, '.'); i >= 0 {
		pkg, name = full[:i], full[i+1:]
	}
	schema = strings.Replace(schema, "message "+protoDefaultName+" {", "message "+name+" {", 1)
	if pkg != "" {
		schema = strings.Replace(schema, "syntax = \"proto3\";\n", "syntax = \"proto3\";\npackage "+pkg+";\n", 1)
	}
	return schema
}

func writeProtoMessage(b *strings.Builder, indent, name string, names []string, types []Type, n *int, imports map[string]bool) {
	fmt.Fprintf(b, "%smessage %s {\n", indent, name)
	for i, fn := range names {
		t := types[i]
		label := ""
		if t.Kind == Array {
			label, t = "repeated ", *t.Elem
		}
		var typ string
		switch t.Kind {
		case Map:
			typ = "map<string, " + protoScalar(*t.Elem, b, indent+"  ", n, imports) + ">"
		default:
			typ = protoScalar(t, b, indent+"  ", n, imports)
		}
		fmt.Fprintf(b, "%s  %s%s %s = %d;\n", indent, label, typ, fn, i+1)
	}
	fmt.Fprintf(b, "%s}\n", indent)
}

// protoScalar returns the proto type of a non-repeated t, writing a nested
// message definition for a STRUCT.
func protoScalar(t Type, b *strings.Builder, indent string, n *int, imports map[string]bool) string {
	switch t.Kind {
	case Boolean:
		return "bool"
	case Int:
		return "int32"
	case Bigint:
		return "int64"
	case Double:
		return "double"
	case String:
		return "string"
	case Bytes:
		return "bytes"
	case Decimal:
		imports["confluent/type/decimal.proto"] = true
		return "confluent.type.Decimal"
	case Date:
		imports["google/type/date.proto"] = true
		return "google.type.Date"
	case Time:
		imports["google/type/timeofday.proto"] = true
		return "google.type.TimeOfDay"
	case Timestamp:
		imports["google/protobuf/timestamp.proto"] = true
		return "google.protobuf.Timestamp"
	case Struct:
		*n++
		name := fmt.Sprintf("ConnectDefault%d", *n)
		names := make([]string, len(t.Fields))
		types := make([]Type, len(t.Fields))
		for i, f := range t.Fields {
			names[i], types[i] = f.Name, f.Type
		}
		writeProtoMessage(b, indent, name, names, types, n, imports)
		return name
	}
	return "bytes"
}

var protoCompiled sync.Map // depsKey → protoreflect.FileDescriptor

// compileProto compiles a registered .proto, its imports being the
// schemas it references (fetched from src), Google's well-known files and
// protoBuiltins, and returns the message the indexes pick ([0]: the first
// top-level message; [1, 0]: the first message nested in the second).
func compileProto(src SchemaSource, rs RegisteredSchema, index []int) (protoreflect.MessageDescriptor, error) {
	fd, err := compileProtoFile(src, rs)
	if err != nil {
		return nil, err
	}
	return protoMessage(fd, index)
}

// compileProtoFile compiles a registered .proto with its references.
func compileProtoFile(src SchemaSource, rs RegisteredSchema) (protoreflect.FileDescriptor, error) {
	var refs []SchemaRef
	for _, r := range rs.References {
		if _, ok := protoBuiltins[r.Name]; !ok && !strings.HasPrefix(r.Name, "google/protobuf/") {
			refs = append(refs, r)
		}
	}
	deps, err := resolveRefs(src, RegisteredSchema{References: refs})
	if err != nil {
		return nil, err
	}
	key := depsKey(rs.Text, deps)
	var fd protoreflect.FileDescriptor
	if v, ok := protoCompiled.Load(key); ok {
		fd = v.(protoreflect.FileDescriptor)
	} else {
		srcs := map[string]string{"registered.proto": rs.Text}
		for k, v := range protoBuiltins {
			srcs[k] = v
		}
		for _, d := range deps {
			srcs[d.name] = d.text
		}
		comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: protocompile.SourceAccessorFromMap(srcs)})}
		files, err := comp.Compile(context.Background(), "registered.proto")
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errParse, err)
		}
		fd = files[0]
		protoCompiled.Store(key, fd)
	}
	return fd, nil
}

// protoMessage returns the message of fd that index picks.
func protoMessage(fd protoreflect.FileDescriptor, index []int) (protoreflect.MessageDescriptor, error) {
	if len(index) == 0 {
		index = []int{0}
	}
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, i := range index {
		if i < 0 || i >= msgs.Len() {
			return nil, fmt.Errorf("%w: message index %v is not in the schema", errParse, index)
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}
	return md, nil
}

// protoIndex returns the message indexes of the message named name in a
// registered .proto — ksqlDB's KEY_SCHEMA_FULL_NAME/VALUE_SCHEMA_FULL_NAME,
// a full name with the package (a.b.Msg, a.b.Outer.Inner) or, in a file
// without a package, the message's name — or [0] (the first message) when
// name is "".
func protoIndex(src SchemaSource, rs RegisteredSchema, name string) ([]int, error) {
	if name == "" {
		return []int{0}, nil
	}
	fd, err := compileProtoFile(src, rs)
	if err != nil {
		return nil, err
	}
	var find func(msgs protoreflect.MessageDescriptors, path []int) []int
	find = func(msgs protoreflect.MessageDescriptors, path []int) []int {
		for i := 0; i < msgs.Len(); i++ {
			md := msgs.Get(i)
			p := append(append([]int(nil), path...), i)
			if string(md.FullName()) == name {
				return p
			}
			if got := find(md.Messages(), p); got != nil {
				return got
			}
		}
		return nil
	}
	if idx := find(fd.Messages(), nil); idx != nil {
		return idx, nil
	}
	return nil, fmt.Errorf("the schema has no message named %s", name)
}
