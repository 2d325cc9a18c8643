package sql

import (
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
)

// AlterSource is ALTER STREAM|TABLE name ADD [COLUMN] column type [, ADD
// [COLUMN] column type …] (ksqlDB's ALTER): value columns added at the end
// of a stream's or table's columns. It runs as the CREATE OR REPLACE
// statement AlterAsReplace makes of the source's definition, and is
// recorded as that.
type AlterSource struct {
	base
	Kind    catalog.Kind
	Name    string
	Columns []ColumnDef
	// defs are the added columns' text ("col2 INT"), as written.
	defs []string
}

// alter parses ALTER STREAM|TABLE name ADD [COLUMN] column type, ….
func (p *parser) alter() (Statement, error) {
	p.next() // ALTER
	kind, err := p.kind()
	if err != nil {
		return nil, err
	}
	name, nameTok, err := p.ident(kind.String() + " name")
	if err != nil {
		return nil, err
	}
	al := &AlterSource{base: base{text: p.text, namePos: nameTok.pos}, Kind: kind, Name: name}
	for {
		if err := p.expect("ADD"); err != nil {
			return nil, err
		}
		p.accept("COLUMN")
		col, ct, err := p.ident("a column name")
		if err != nil {
			return nil, err
		}
		p.customTypes = true
		typ, err := p.typ()
		p.customTypes = false
		if err != nil {
			return nil, err
		}
		for _, o := range al.Columns {
			if o.Name == col {
				return nil, errorAt(p.text, ct.pos, CodeDuplicateObject, "duplicate column %s", col)
			}
		}
		al.Columns = append(al.Columns, ColumnDef{Name: col, Type: typ, Pos: ct.pos})
		al.defs = append(al.defs, p.text[ct.pos:p.toks[p.i-1].end])
		if !p.acceptPunct(",") {
			break
		}
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return al, nil
}

// AlterAsReplace returns the CREATE OR REPLACE statement ALTER makes of
// src's definition: its statement with the new columns at the end of its
// column list. It refuses, with ksqlDB's messages, a source another
// kind than ALTER names, a SOURCE stream or table, one a CREATE … AS
// SELECT made, one whose
// columns come from the schema registry, and a column the source has.
func AlterAsReplace(al *AlterSource, src *catalog.Source) (string, error) {
	if src.Kind != al.Kind {
		return "", NameError(al, CodeFeatureNotSupport, "Incompatible data source type is %s, but statement was ALTER %s", src.Kind, al.Kind)
	}
	if src.IsSource {
		kind := strings.ToLower(src.Kind.String())
		return "", NameError(al, CodeFeatureNotSupport, "Cannot alter %s '%s': ALTER operations are not supported on source %ss.", kind, src.Name, kind)
	}
	st, err := Parse(src.SQL)
	if err != nil {
		return "", NameError(al, CodeFeatureNotSupport, "ALTER command is not supported for CREATE ... AS statements.")
	}
	cs, ok := st.(*CreateSource)
	if !ok {
		return "", NameError(al, CodeFeatureNotSupport, "ALTER command is not supported for CREATE ... AS statements.")
	}
	if cs.colsEnd == 0 {
		return "", NameError(al, CodeFeatureNotSupport, "ALTER is not supported for %s: its columns come from the schema registry", src.Name)
	}
	for _, c := range al.Columns {
		if src.Schema.Index(c.Name) >= 0 {
			return "", errorAt(al.text, c.Pos, CodeDuplicateObject, "Cannot add column `%s` to schema. A column with the same name already exists.", c.Name)
		}
	}
	text := cs.text
	return "CREATE OR REPLACE " + text[cs.kindPos:cs.colsEnd] + ", " + strings.Join(al.defs, ", ") + text[cs.colsEnd:], nil
}
