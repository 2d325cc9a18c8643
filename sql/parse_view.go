package sql

import "github.com/sqlstreams/sqlstreams/catalog"

// createMaterializedView parses CREATE [OR REPLACE] MATERIALIZED VIEW
// [IF NOT EXISTS] name [WITH (…)] AS SELECT …, after CREATE [OR REPLACE]:
// a table, as CREATE TABLE … AS SELECT makes it, whose query is in the
// SQL dialect (Materialize's and RisingWave's statement).
func (p *parser) createMaterializedView(orReplace bool) (Statement, error) {
	p.next() // MATERIALIZED
	if err := p.expect("VIEW"); err != nil {
		return nil, err
	}
	ifNotExists := false
	if p.accept("IF") {
		if err := p.expect("NOT"); err != nil {
			return nil, err
		}
		if err := p.expect("EXISTS"); err != nil {
			return nil, err
		}
		ifNotExists = true
	}
	name, nameTok, err := p.ident("materialized view name")
	if err != nil {
		return nil, err
	}
	props, err := p.with()
	if err != nil {
		return nil, err
	}
	if err := p.expect("AS"); err != nil {
		return nil, err
	}
	sel, err := p.selectStmt(p.i)
	if err != nil {
		return nil, err
	}
	return &CreateAs{base: base{text: p.text, namePos: nameTok.pos}, Kind: catalog.Table, Name: name, OrReplace: orReplace,
		IfNotExists: ifNotExists, Props: props, Select: sel, Materialized: true}, nil
}

// dropKind parses what DROP drops: STREAM, TABLE, or MATERIALIZED VIEW
// (a table).
func (p *parser) dropKind() (catalog.Kind, error) {
	if p.accept("MATERIALIZED") {
		if err := p.expect("VIEW"); err != nil {
			return 0, err
		}
		return catalog.Table, nil
	}
	return p.kind()
}
