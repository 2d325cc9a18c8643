package registry

import (
	"bytes"
	"encoding/json"

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
//   - Avro: the parsed schema written back as JSON by hamba/avro
//     (MarshalJSON): full names, fixed key order, no whitespace, with doc,
//     aliases, defaults, field order and custom properties kept. That is
//     Confluent's own identity: its AvroSchema.canonicalString() is Avro
//     Java's Schema.toString() of the parsed schema (it keeps doc, aliases,
//     defaults and properties), and its equals() compares the parsed
//     schemas, doc and aliases included. The Parsing Canonical Form
//     (Schema.String(), Fingerprint) is not used: it drops defaults and
//     aliases, which schema resolution reads, so a schema that only adds
//     a default must stay a new version. Confluent's normalize=true (its
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
		if b, err := json.Marshal(p.avro); err == nil {
			return string(b)
		}
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
