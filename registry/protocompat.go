package registry

import (
	"context"
	"fmt"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Non-standard imports Confluent's registry knows without references.
var protoBuiltins = map[string]string{
	"google/type/date.proto":       "syntax = \"proto3\";\npackage google.type;\nmessage Date { int32 year = 1; int32 month = 2; int32 day = 3; }\n",
	"google/type/timeofday.proto":  "syntax = \"proto3\";\npackage google.type;\nmessage TimeOfDay { int32 hours = 1; int32 minutes = 2; int32 seconds = 3; int32 nanos = 4; }\n",
	"confluent/type/decimal.proto": "syntax = \"proto3\";\npackage confluent.type;\nimport public \"confluent/meta.proto\";\nmessage Decimal { bytes value = 1; uint32 precision = 2; int32 scale = 3; }\n",
	"confluent/meta.proto":         "syntax = \"proto3\";\npackage confluent;\nimport \"google/protobuf/descriptor.proto\";\nmessage Meta {\n  string doc = 1;\n  map<string, string> params = 2;\n  repeated string tags = 3;\n}\nextend google.protobuf.FileOptions {\n  Meta file_meta = 1088;\n}\nextend google.protobuf.MessageOptions {\n  Meta message_meta = 1088;\n}\nextend google.protobuf.FieldOptions {\n  Meta field_meta = 1088;\n}\nextend google.protobuf.EnumOptions {\n  Meta enum_meta = 1088;\n}\nextend google.protobuf.EnumValueOptions {\n  Meta enum_value_meta = 1088;\n}\n",
}

// compileProto compiles a .proto, with its references' sources (by import
// name) from the registry. The caller holds r.mu.
func (r *Registry) compileProto(text string, refs []Reference) (protoreflect.FileDescriptor, *Error) {
	srcs := map[string]string{"registered.proto": text}
	for k, v := range protoBuiltins {
		srcs[k] = v
	}
	var add func(refs []Reference, depth int) *Error
	add = func(refs []Reference, depth int) *Error {
		if depth > 32 {
			return errInvalidSchema("references nest too deeply")
		}
		for _, ref := range refs {
			v, e := r.version(ref.Subject, ref.Version)
			if e != nil {
				return errInvalidSchema(fmt.Sprintf("reference %s: %v", ref.Name, e.Message))
			}
			s := r.ids[v.id]
			srcs[ref.Name] = s.text
			if e := add(s.refs, depth+1); e != nil {
				return e
			}
		}
		return nil
	}
	if e := add(refs, 0); e != nil {
		return nil, e
	}
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(srcs)})}
	files, err := comp.Compile(context.Background(), "registered.proto")
	if err != nil {
		return nil, errInvalidSchema(err.Error())
	}
	return files[0], nil
}

// protoCompatible returns why data written with writer cannot be read
// with reader, by Confluent's protobuf rules in short: the writer's first
// message must still exist; in every message both have, a field number
// both use must keep its cardinality and a wire-compatible type (the
// varint kinds int32, int64, uint32, uint64 and bool together; sint32 with
// sint64; string with bytes; fixed32 with sfixed32; fixed64 with
// sfixed64; the same message or enum type). Added and removed fields are
// compatible.
func protoCompatible(reader, writer protoreflect.FileDescriptor) []string {
	var msgs []string
	if writer.Messages().Len() > 0 {
		first := writer.Messages().Get(0).FullName()
		if reader.Messages().ByName(first.Name()) == nil {
			msgs = append(msgs, fmt.Sprintf("message %s was removed", first))
		}
	}
	var walk func(w protoreflect.MessageDescriptors)
	walk = func(ws protoreflect.MessageDescriptors) {
		for i := 0; i < ws.Len(); i++ {
			w := ws.Get(i)
			rd, _ := findMessage(reader, w.FullName())
			if rd == nil {
				continue
			}
			wf := w.Fields()
			for j := 0; j < wf.Len(); j++ {
				f := wf.Get(j)
				g := rd.Fields().ByNumber(f.Number())
				if g == nil {
					continue
				}
				if why := fieldCompatible(g, f); why != "" {
					msgs = append(msgs, fmt.Sprintf("%s field %d (%s): %s", w.FullName(), f.Number(), f.Name(), why))
				}
			}
			walk(w.Messages())
		}
	}
	walk(writer.Messages())
	return msgs
}

func findMessage(fd protoreflect.FileDescriptor, name protoreflect.FullName) (protoreflect.MessageDescriptor, bool) {
	rel := strings.TrimPrefix(string(name), string(fd.Package())+".")
	if fd.Package() == "" {
		rel = string(name)
	}
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for _, part := range strings.Split(rel, ".") {
		md = msgs.ByName(protoreflect.Name(part))
		if md == nil {
			return nil, false
		}
		msgs = md.Messages()
	}
	return md, md != nil
}

func kindGroup(k protoreflect.Kind) int {
	switch k {
	case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.BoolKind:
		return 1
	case protoreflect.Sint32Kind, protoreflect.Sint64Kind:
		return 2
	case protoreflect.StringKind, protoreflect.BytesKind:
		return 3
	case protoreflect.Fixed32Kind, protoreflect.Sfixed32Kind:
		return 4
	case protoreflect.Fixed64Kind, protoreflect.Sfixed64Kind:
		return 5
	}
	return 100 + int(k)
}

func fieldCompatible(reader, writer protoreflect.FieldDescriptor) string {
	if reader.Cardinality() == protoreflect.Repeated != (writer.Cardinality() == protoreflect.Repeated) || reader.IsMap() != writer.IsMap() {
		return "its cardinality changed"
	}
	switch {
	case writer.Kind() == protoreflect.MessageKind || reader.Kind() == protoreflect.MessageKind:
		if reader.Kind() != writer.Kind() || reader.Message().FullName() != writer.Message().FullName() {
			return "its message type changed"
		}
	case writer.Kind() == protoreflect.EnumKind || reader.Kind() == protoreflect.EnumKind:
		if reader.Kind() != writer.Kind() || reader.Enum().FullName() != writer.Enum().FullName() {
			return "its enum type changed"
		}
	case kindGroup(reader.Kind()) != kindGroup(writer.Kind()):
		return fmt.Sprintf("its type changed from %s to %s", writer.Kind(), reader.Kind())
	}
	return ""
}
