package types

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// ProtobufCanonicalSchema returns the .proto ksqlDB's /query-stream header
// gives for protobuf rows with these columns (Confluent's
// ProtobufSchema.canonicalString of Connect's schema): the message
// ConnectDefault1 with its fields first, then its nested messages after
// a blank line; a MAP is a repeated ConnectDefault<n>Entry of key and
// value, as Connect writes it. Its wire encoding is that of
// ProtobufSchema's (a proto map is a repeated entry message), so rows
// PROTOBUF_NOSR encodes read with it.
func ProtobufCanonicalSchema(names []string, types []Type) string {
	imports := map[string]bool{}
	n := 1
	body := canonMessage("", protoDefaultName, names, types, &n, imports)
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
	b.WriteString(body)
	return b.String()
}

// canonMessage writes message name: its fields, then (after a blank
// line) the messages its fields use.
func canonMessage(indent, name string, names []string, types []Type, n *int, imports map[string]bool) string {
	var fields, nested strings.Builder
	for i, fn := range names {
		t := types[i]
		label := ""
		if t.Kind == Array {
			label, t = "repeated ", *t.Elem
		}
		var typ string
		if t.Kind == Map {
			*n++
			typ = fmt.Sprintf("ConnectDefault%dEntry", *n)
			label = "repeated "
			nested.WriteString(canonMessage(indent+"  ", typ, []string{"key", "value"}, []Type{*t.KeyType, *t.Elem}, n, imports))
		} else {
			typ = canonScalar(t, &nested, indent+"  ", n, imports)
		}
		fmt.Fprintf(&fields, "%s  %s%s %s = %d;\n", indent, label, typ, fn, i+1)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%smessage %s {\n", indent, name)
	b.WriteString(fields.String())
	if nested.Len() > 0 {
		b.WriteByte('\n')
		b.WriteString(nested.String())
	}
	fmt.Fprintf(&b, "%s}\n", indent)
	return b.String()
}

// canonScalar is protoScalar for ProtobufCanonicalSchema: a STRUCT's
// message goes to nested.
func canonScalar(t Type, nested *strings.Builder, indent string, n *int, imports map[string]bool) string {
	if t.Kind != Struct {
		var unused strings.Builder
		return protoScalar(t, &unused, indent, n, imports)
	}
	*n++
	name := fmt.Sprintf("ConnectDefault%d", *n)
	names := make([]string, len(t.Fields))
	types := make([]Type, len(t.Fields))
	for i, f := range t.Fields {
		names[i], types[i] = f.Name, f.Type
	}
	nested.WriteString(canonMessage(indent, name, names, types, n, imports))
	return name
}

// CompileProtobufSchema compiles a .proto (such as ProtobufCanonicalSchema
// gives) and returns its first message.
func CompileProtobufSchema(text string) (protoreflect.MessageDescriptor, error) {
	return compileProto(nil, RegisteredSchema{Type: SchemaTypeProtobuf, Text: text}, []int{0})
}
