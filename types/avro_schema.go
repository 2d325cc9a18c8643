package types

import (
	"fmt"
	"strings"

	"github.com/twmb/avro"
)

// avroTree is a parsed Avro schema as the codecs' planners walk it:
// twmb/avro's SchemaNode tree with every named-type reference replaced by
// its definition (SchemaNode.ExpandReferences), and, for the references
// that expansion leaves (those closing a cycle, those with attributes of
// their own), the definition each names.
type avroTree struct {
	root *avro.SchemaNode
	refs map[*avro.SchemaNode]*avro.SchemaNode
}

// newAvroTree builds the planners' view of a parsed schema.
func newAvroTree(s *avro.Schema) *avroTree {
	t := &avroTree{root: s.Root().ExpandReferences(), refs: map[*avro.SchemaNode]*avro.SchemaNode{}}
	named := map[string]*avro.SchemaNode{}
	walkAvro(t.root, "", func(n *avro.SchemaNode, ns string) {
		if avroNamed(n.Type) {
			named[avroFullName(n.Name, n.Namespace)] = n
		}
	})
	walkAvro(t.root, "", func(n *avro.SchemaNode, ns string) {
		if avroKind(n.Type) {
			return
		}
		if d, ok := named[n.Type]; ok && strings.Contains(n.Type, ".") {
			t.refs[n] = d
		} else if d, ok := named[avroFullName(n.Type, ns)]; ok {
			t.refs[n] = d
		} else if d, ok := named[n.Type]; ok {
			t.refs[n] = d
		}
	})
	return t
}

// walkAvro calls fn on n and every node below it (definitions only; a
// reference is not followed), with the namespace in effect at each.
func walkAvro(n *avro.SchemaNode, ns string, fn func(*avro.SchemaNode, string)) {
	fn(n, ns)
	if avroNamed(n.Type) {
		ns = avroNamespace(n.Name, n.Namespace)
	}
	if n.Items != nil {
		walkAvro(n.Items, ns, fn)
	}
	if n.Values != nil {
		walkAvro(n.Values, ns, fn)
	}
	for i := range n.Fields {
		walkAvro(&n.Fields[i].Type, ns, fn)
	}
	for i := range n.Branches {
		walkAvro(&n.Branches[i], ns, fn)
	}
}

// node returns the definition n stands for: n itself, or the named type
// it references.
func (t *avroTree) node(n *avro.SchemaNode) *avro.SchemaNode {
	if d, ok := t.refs[n]; ok {
		return d
	}
	return n
}

// avroKind reports whether typ is a kind of schema rather than the name of
// a named type.
func avroKind(typ string) bool {
	switch typ {
	case "null", "boolean", "int", "long", "float", "double", "bytes", "string",
		"record", "error", "enum", "fixed", "array", "map", "union":
		return true
	}
	return false
}

func avroNamed(typ string) bool {
	return typ == "record" || typ == "error" || typ == "enum" || typ == "fixed"
}

// avroFullName is a named type's full name: name itself when dotted, else
// name in namespace ns.
func avroFullName(name, ns string) string {
	if strings.Contains(name, ".") || ns == "" {
		return name
	}
	return ns + "." + name
}

// avroNamespace is the namespace a named type opens for the names inside it.
func avroNamespace(name, ns string) string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		return name[:i]
	}
	return ns
}

// avroLogical is n's logical type when it is one the codecs know on the
// type it annotates, else "": the specification says a logical type that
// does not apply is ignored and the value read as its underlying type.
func avroLogical(n *avro.SchemaNode) string {
	lt := n.LogicalType
	switch n.Type {
	case "int":
		if lt == "date" || lt == "time-millis" {
			return lt
		}
	case "long":
		switch lt {
		case "time-micros", "timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros":
			return lt
		}
	case "bytes", "fixed":
		if lt == "decimal" && n.Precision > 0 {
			return lt
		}
	}
	return ""
}

// avroTypeName describes a schema node in errors: its type and logical
// type, a union's branches, a named type's name.
func avroTypeName(n *avro.SchemaNode) string {
	switch {
	case n.Type == "union":
		var b []string
		for i := range n.Branches {
			b = append(b, avroTypeName(&n.Branches[i]))
		}
		return "[" + strings.Join(b, ", ") + "]"
	case avroLogical(n) == "decimal":
		return fmt.Sprintf("%s (decimal(%d, %d))", n.Type, n.Precision, n.Scale)
	case avroLogical(n) != "":
		return n.Type + " (" + n.LogicalType + ")"
	}
	return n.Type
}

// nullable reports whether s is null or a union with a null branch.
func nullable(s *avro.SchemaNode) bool {
	return s.Type == "null" || nullIndex(s) >= 0
}

// nullIndex is the index of a union's null branch, or -1.
func nullIndex(s *avro.SchemaNode) int {
	if s.Type == "union" {
		for i := range s.Branches {
			if s.Branches[i].Type == "null" {
				return i
			}
		}
	}
	return -1
}

// unionValue returns the one non-null branch of a union, or nil.
func unionValue(u *avro.SchemaNode) *avro.SchemaNode {
	var v *avro.SchemaNode
	for i := range u.Branches {
		if u.Branches[i].Type == "null" {
			continue
		}
		if v != nil {
			return nil
		}
		v = &u.Branches[i]
	}
	return v
}

// parseAvro parses an Avro schema after the schemas it references.
func parseAvro(rs RegisteredSchema, deps []namedSchema) (*avroTree, error) {
	if rs.Type != "" && rs.Type != SchemaTypeAvro {
		return nil, fmt.Errorf("the schema is %s, not AVRO", rs.Type)
	}
	var cache avro.SchemaCache
	for _, d := range deps {
		if _, err := cache.Parse(d.text); err != nil {
			return nil, fmt.Errorf("referenced schema %s: %v", d.name, err)
		}
	}
	s, err := cache.Parse(rs.Text)
	if err != nil {
		return nil, err
	}
	return newAvroTree(s), nil
}
