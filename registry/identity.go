package registry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/twmb/avro"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
)

// identity is what makes two schemas of one type the same schema: a
// schema registered again in another text form gets the ID and version it
// already has, as Confluent's registry does (issue 35: Confluent's Python
// AvroProducer re-registers the text avro-python prints, whose key order
// differs from the text first registered). Two schemas are the same when
// their types, identities and references (names, subjects, versions, in
// order) are equal. The first text registered is the one served; the
// identity is only compared, never stored: it is recomputed when the
// schemas topic is replayed.
//
//   - Avro: the schema's Parsing Canonical Form as twmb/avro writes it
//     (Schema.Canonical: full names, fixed key order, no whitespace, no
//     namespace attributes; the same bytes as Avro Java's), followed by
//     the attributes that form drops, node by node in the same order:
//     logical types with their precision and scale, doc, aliases
//     (qualified), field defaults and sort orders, enum defaults and
//     custom properties (avroIdentity). The canonical form alone is not
//     enough: it drops defaults, aliases and logical types, which schema
//     resolution reads, so a schema that only adds a default or turns
//     bytes into a decimal must stay a new version. With them it is
//     Confluent's own identity: its AvroSchema.canonicalString() is Avro
//     Java's Schema.toString() of the parsed schema (doc, aliases,
//     defaults and properties kept), and its equals() compares the parsed
//     schemas, doc and aliases included. Confluent's normalize=true (its
//     "normalized" form) is not implemented.
//   - JSON Schema: the document decoded and encoded again — whitespace and
//     object key order do not count (JSON objects are unordered; Confluent
//     keeps key order unless normalize=true, so this is a little more
//     lenient), array order and number spelling do.
//   - Protobuf: the compiled file descriptor without its source info,
//     marshaled deterministically — whitespace, comments and how a type
//     name is qualified do not count, declaration order does. Confluent
//     compares the .proto printed again from its parsed form, which
//     likewise drops comments and formatting.
//
// A schema that does not parse (a replayed schema whose references are
// gone) is identified by its compacted text.
func identity(typ, text string, p parsed) string {
	switch {
	case typ == "" && p.avro != nil:
		return avroIdentity(p.avro)
	case typ == "JSON":
		d := json.NewDecoder(bytes.NewReader([]byte(text)))
		d.UseNumber()
		var v any
		if d.Decode(&v) == nil {
			if b, err := json.Marshal(v); err == nil {
				return string(b)
			}
		}
	case typ == "PROTOBUF" && p.proto != nil:
		fdp := protodesc.ToFileDescriptorProto(p.proto)
		fdp.SourceCodeInfo = nil
		if b, err := (proto.MarshalOptions{Deterministic: true}).Marshal(fdp); err == nil {
			return string(b)
		}
	}
	return "text:" + compact(text)
}

// avroIdentity is the Avro identity of s (see identity).
func avroIdentity(s *avro.Schema) string {
	var b strings.Builder
	b.Write(s.Canonical())
	i := 0
	var walk func(n *avro.SchemaNode, ns string)
	walk = func(n *avro.SchemaNode, ns string) {
		i++
		named := n.Type == "record" || n.Type == "error" || n.Type == "enum" || n.Type == "fixed"
		if named {
			if d := strings.LastIndexByte(n.Name, '.'); d >= 0 {
				ns = n.Name[:d]
			} else {
				ns = n.Namespace
			}
		}
		a := avroAttrs{LogicalType: n.LogicalType, Doc: n.Doc, Props: n.Props}
		if n.LogicalType == "decimal" {
			a.Precision, a.Scale = n.Precision, n.Scale
		}
		if named {
			a.Aliases = qualify(n.Aliases, ns)
		}
		if n.HasEnumDefault {
			a.EnumDefault = []string{n.EnumDefault}
		}
		if !a.empty() {
			fmt.Fprintf(&b, "\n%d %#v", i, a)
		}
		if n.Items != nil {
			walk(n.Items, ns)
		}
		if n.Values != nil {
			walk(n.Values, ns)
		}
		for j := range n.Fields {
			f := &n.Fields[j]
			fa := avroAttrs{Doc: f.Doc, Aliases: f.Aliases, Props: f.Props}
			if f.Order != "" && f.Order != "ascending" {
				fa.Order = f.Order
			}
			if f.HasDefault {
				fa.Default = []any{f.Default}
			}
			if !fa.empty() {
				fmt.Fprintf(&b, "\n%d.%d %#v", i, j, fa)
			}
			walk(&f.Type, ns)
		}
		for j := range n.Branches {
			walk(&n.Branches[j], ns)
		}
	}
	walk(s.Root(), "")
	return b.String()
}

// avroAttrs are the attributes of a node or field that the Parsing
// Canonical Form drops; printed with %#v (maps print sorted).
type avroAttrs struct {
	LogicalType      string
	Precision, Scale int
	Doc              string
	Aliases          []string
	Order            string
	Default          []any    // the default, when there is one
	EnumDefault      []string // the enum default, when there is one
	Props            map[string]any
}

func (a avroAttrs) empty() bool {
	return a.LogicalType == "" && a.Doc == "" && len(a.Aliases) == 0 && a.Order == "" &&
		a.Default == nil && a.EnumDefault == nil && len(a.Props) == 0
}

// qualify returns aliases as full names in namespace ns.
func qualify(aliases []string, ns string) []string {
	if ns == "" {
		return aliases
	}
	out := make([]string, len(aliases))
	for i, a := range aliases {
		if !strings.Contains(a, ".") {
			a = ns + "." + a
		}
		out[i] = a
	}
	return out
}

// compact is text without the whitespace between JSON tokens, or text
// itself when it is not JSON.
func compact(text string) string {
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(text)); err != nil {
		return text
	}
	return b.String()
}

// identityOf parses a stored schema and returns its identity. The caller
// holds r.mu or is replaying.
func (r *Registry) identityOf(typ, text string, refs []Reference) string {
	p, e := r.parse(typ, text, refs)
	if e != nil {
		r.log.Warn("schema registry: a stored schema does not parse; it is compared by its text", "err", e.Message)
	}
	return identity(typ, text, p)
}

// same reports whether s is the schema of type typ, identity id and
// references refs.
func (s *schemaEntry) same(typ, id string, refs []Reference) bool {
	return s.typ == typ && s.identity == id && sameRefs(s.refs, refs)
}
