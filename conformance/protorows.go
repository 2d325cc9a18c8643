package conformance

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/sqlstreams/sqlstreams/types"
)

// protoRows compares the rows of a /query-stream protobuf answer, as
// RestTestExecutor prints them (the row's message in protobuf's text
// format), with the rows a case expects: each side is read into the
// message of the answer's header (its protoSchema) and written in one
// canonical form. The entries of a MAP column (a repeated …Entry message
// of key and value, as Connect writes a map) are compared by key: their
// order is a Java HashMap's.
type protoRows struct {
	md protoreflect.MessageDescriptor
}

// newProtoRows reads the header of answer rows (nil when it has none).
func newProtoRows(rows []map[string]any) (*protoRows, error) {
	for _, r := range rows {
		h, ok := r["header"].(map[string]any)
		if !ok {
			continue
		}
		text, _ := h["protoSchema"].(string)
		if text == "" {
			return nil, fmt.Errorf("header without protoSchema: %s", showJSON(h))
		}
		md, err := types.CompileProtobufSchema(text)
		if err != nil {
			return nil, fmt.Errorf("header's protoSchema: %v", err)
		}
		return &protoRows{md: md}, nil
	}
	return nil, fmt.Errorf("no header")
}

// actual returns the canonical form of an answer's row
// ({"protobufBytes": base64}).
func (p *protoRows) actual(row any) (string, error) {
	m, _ := row.(map[string]any)
	s, ok := m["protobufBytes"].(string)
	if !ok {
		return "", fmt.Errorf("row without protobufBytes: %s", showJSON(row))
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return "", fmt.Errorf("row's protobufBytes: %v", err)
	}
	msg := dynamicpb.NewMessage(p.md)
	if err := proto.Unmarshal(b, msg); err != nil {
		return "", fmt.Errorf("row's protobufBytes: %v", err)
	}
	return canonProto(msg), nil
}

// expected returns the canonical form of a row in protobuf's text format.
func (p *protoRows) expected(text string) (string, error) {
	msg := dynamicpb.NewMessage(p.md)
	if err := prototext.Unmarshal([]byte(text), msg); err != nil {
		return "", fmt.Errorf("expected row %q: %v", text, err)
	}
	return canonProto(msg), nil
}

// canonProto writes m's set fields in field-number order, map entries
// sorted by key.
func canonProto(m protoreflect.Message) string {
	var b strings.Builder
	fields := m.Descriptor().Fields()
	b.WriteByte('{')
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		fmt.Fprintf(&b, "%s:", fd.Name())
		v := m.Get(fd)
		switch {
		case fd.IsList():
			l := v.List()
			items := make([]string, l.Len())
			for j := range items {
				items[j] = canonValue(fd, l.Get(j))
			}
			if fd.Message() != nil && strings.HasSuffix(string(fd.Message().Name()), "Entry") {
				sort.Strings(items)
			}
			b.WriteString("[" + strings.Join(items, ",") + "]")
		case fd.IsMap():
			var items []string
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				items = append(items, strconv.Quote(k.String())+"="+canonValue(fd.MapValue(), mv))
				return true
			})
			sort.Strings(items)
			b.WriteString("{" + strings.Join(items, ",") + "}")
		default:
			b.WriteString(canonValue(fd, v))
		}
		b.WriteByte(' ')
	}
	b.WriteByte('}')
	return b.String()
}

func canonValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) string {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return canonProto(v.Message())
	case protoreflect.StringKind:
		return strconv.Quote(v.String())
	case protoreflect.BytesKind:
		return strconv.Quote(string(v.Bytes()))
	}
	return fmt.Sprint(v.Interface())
}
