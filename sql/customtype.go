package sql

import (
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// CreateType is CREATE TYPE [IF NOT EXISTS] name AS type: a name for a
// type, usable in column lists (and in later CREATE TYPE statements)
// wherever a type is. Custom types are kept in the catalog and recorded
// in the command topic like other DDL.
type CreateType struct {
	base
	Name        string
	Type        types.Type
	IfNotExists bool
}

// DropType is DROP TYPE [IF EXISTS] name.
type DropType struct {
	base
	Name     string
	IfExists bool
}

// createType parses the rest of CREATE TYPE, after TYPE.
func (p *parser) createType() (Statement, error) {
	ct := &CreateType{}
	if p.accept("IF") {
		if err := p.expect("NOT"); err != nil {
			return nil, err
		}
		if err := p.expect("EXISTS"); err != nil {
			return nil, err
		}
		ct.IfNotExists = true
	}
	name, nt, err := p.ident("a type name")
	if err != nil {
		return nil, err
	}
	ct.base, ct.Name = base{text: p.text, namePos: nt.pos}, name
	if _, ok := types.ScalarByName(name); ok || name == "ARRAY" || name == "MAP" || name == "STRUCT" || name == "DECIMAL" {
		return nil, errorAt(p.text, nt.pos, CodeSyntaxError, "cannot register a type named %s: it is a built-in type", name)
	}
	if err := p.expect("AS"); err != nil {
		return nil, err
	}
	p.customTypes = true
	if ct.Type, err = p.typ(); err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return ct, nil
}

// dropType parses the rest of DROP TYPE, after TYPE.
func (p *parser) dropType() (Statement, error) {
	dt := &DropType{}
	if p.accept("IF") {
		if err := p.expect("EXISTS"); err != nil {
			return nil, err
		}
		dt.IfExists = true
	}
	name, nt, err := p.ident("a type name")
	if err != nil {
		return nil, err
	}
	dt.base, dt.Name = base{text: p.text, namePos: nt.pos}, name
	if err := p.end(); err != nil {
		return nil, err
	}
	return dt, nil
}

// customRef is the type the parser gives a name that is not a built-in
// type: a reference to a custom type, resolved against the catalog by
// ResolveTypes before the statement is bound.
func customRef(name string) types.Type {
	return types.Type{Kind: types.Unknown, Fields: []types.Field{{Name: name}}}
}

// refName returns the custom type name t refers to, or "".
func refName(t types.Type) string {
	if t.Kind == types.Unknown && len(t.Fields) == 1 {
		return t.Fields[0].Name
	}
	return ""
}

// TypeLookup finds a custom type by its upper-case name.
type TypeLookup func(name string) (types.Type, bool)

// ResolveTypes replaces the custom type names in st's column types (and
// in a CREATE TYPE's type) with the types they name. A name that is
// neither built-in nor registered is an error at its position.
func ResolveTypes(st Statement, lookup TypeLookup) error {
	var text string
	var targets []*types.Type
	switch st := st.(type) {
	case *CreateSource:
		text = st.text
		for i := range st.Columns {
			targets = append(targets, &st.Columns[i].Type)
		}
	case *CreateType:
		text = st.text
		targets = append(targets, &st.Type)
	default:
		return nil
	}
	for _, t := range targets {
		r, err := resolveType(*t, lookup, text, 0)
		if err != nil {
			return err
		}
		*t = r
	}
	return nil
}

func resolveType(t types.Type, lookup TypeLookup, text string, depth int) (types.Type, error) {
	if name := refName(t); name != "" {
		if depth > 32 {
			return t, Errorf(CodeInvalidParameter, "type %s nests too deeply", name)
		}
		if lookup != nil {
			if r, ok := lookup(name); ok {
				return resolveType(r, lookup, text, depth+1)
			}
		}
		pos := strings.Index(strings.ToUpper(text), name)
		if pos < 0 {
			return t, Errorf(CodeUndefinedObject, "%s", unknownType(name))
		}
		return t, errorAt(text, pos, CodeUndefinedObject, "%s", unknownType(name))
	}
	switch t.Kind {
	case types.Array, types.Map:
		e, err := resolveType(*t.Elem, lookup, text, depth)
		if err != nil {
			return t, err
		}
		t.Elem = &e
		if t.KeyType != nil {
			k, err := resolveType(*t.KeyType, lookup, text, depth)
			if err != nil {
				return t, err
			}
			t.KeyType = &k
		}
	case types.Struct:
		fs := make([]types.Field, len(t.Fields))
		for i, f := range t.Fields {
			ft, err := resolveType(f.Type, lookup, text, depth)
			if err != nil {
				return t, err
			}
			fs[i] = types.Field{Name: f.Name, Type: ft}
		}
		t.Fields = fs
	}
	return t, nil
}

// unknownType refuses the type name: NULL, which ksqlDB's grammar does not
// take as a type, is a syntax error there.
func unknownType(name string) string {
	if strings.EqualFold(name, "NULL") {
		return "Syntax Error: NULL is not a type; CAST(NULL AS <type>) gives a typed NULL"
	}
	return "unknown type " + name
}
