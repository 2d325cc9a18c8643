package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/catalog"
)

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

// CreateView is CREATE [OR REPLACE] VIEW [IF NOT EXISTS] name AS SELECT …:
// a named query, kept in the catalog (and recorded in the command topic)
// with no topology of its own. A query that reads the view binds its
// SELECT in its place, as a derived table (planner.Derived of kind
// "VIEW"), so the query is in the SQL dialect.
type CreateView struct {
	base
	Name        string
	OrReplace   bool
	IfNotExists bool
	Select      *Select
}

// DropView is DROP VIEW [IF EXISTS] name.
type DropView struct {
	base
	Name     string
	IfExists bool
}

// createView parses the rest of CREATE [OR REPLACE] VIEW, at VIEW.
func (p *parser) createView(orReplace bool) (Statement, error) {
	p.next() // VIEW
	cv := &CreateView{OrReplace: orReplace}
	if p.accept("IF") {
		if err := p.expect("NOT"); err != nil {
			return nil, err
		}
		if err := p.expect("EXISTS"); err != nil {
			return nil, err
		}
		cv.IfNotExists = true
	}
	name, nt, err := p.ident("view name")
	if err != nil {
		return nil, err
	}
	cv.base, cv.Name = base{text: p.text, namePos: nt.pos}, name
	if p.peek().is("WITH") && isPunct(p.peekAt(1), "(") {
		return nil, p.errorf(p.peek(), "a view takes no WITH properties: it has no topic of its own")
	}
	if err := p.expect("AS"); err != nil {
		return nil, err
	}
	if !p.peek().is("SELECT") && !p.peek().is("WITH") {
		return nil, p.unexpected(p.peek(), "SELECT")
	}
	sel, err := p.selectStmt(p.i)
	if err != nil {
		return nil, err
	}
	if sel.Emit != "" {
		return nil, errorAt(p.text, posOf(sel, "EMIT"), CodeSyntaxError, "a view's SELECT takes no EMIT: the query that reads the view says how it runs")
	}
	if sel.Limit >= 0 {
		return nil, errorAt(p.text, posOf(sel, "LIMIT"), CodeFeatureNotSupport, "LIMIT in a view is not supported")
	}
	cv.Select = sel
	return cv, nil
}

// dropView parses the rest of DROP VIEW, after VIEW.
func (p *parser) dropView() (Statement, error) {
	dv := &DropView{}
	if p.accept("IF") {
		if err := p.expect("EXISTS"); err != nil {
			return nil, err
		}
		dv.IfExists = true
	}
	name, nt, err := p.ident("view name")
	if err != nil {
		return nil, err
	}
	dv.base, dv.Name = base{text: p.text, namePos: nt.pos}, name
	if err := p.end(); err != nil {
		return nil, err
	}
	return dv, nil
}

// Views are what a catalog knows of views: the CREATE VIEW statement
// that made the view named name. The binder looks names up as views
// when they are neither a CTE's nor a source's.
type Views interface {
	View(name string) (statement string, ok bool)
}

// lookupView finds the view named name in cat (through the scopes of
// WITH clauses).
func lookupView(cat Catalog, name string) (string, bool) {
	if sc, ok := cat.(*cteScope); ok {
		return lookupView(sc.Catalog, name)
	}
	if v, ok := cat.(Views); ok {
		return v.View(name)
	}
	return "", false
}

// CheckView binds a CREATE VIEW's SELECT against cat, as a push query
// reading it would, and returns the error that makes it unusable.
func CheckView(cv *CreateView, cat Catalog) error {
	if _, ok := cat.Source(cv.Name); ok {
		return NameError(cv, CodeDuplicateObject, "Cannot add view '%s': a stream or table of that name exists", cv.Name)
	}
	if cv.Select.nParams > 0 {
		return NameError(cv, CodeFeatureNotSupport, "a view's SELECT cannot have placeholders")
	}
	sel := *cv.Select
	sel.Emit = "CHANGES"
	_, err := BindSelect(&sel, &viewScope{Catalog: cat, creating: cv.Name})
	return err
}

// viewScope is the catalog as a view being created sees it: without
// itself (a view cannot read itself).
type viewScope struct {
	Catalog
	creating string
}

func (v *viewScope) View(name string) (string, bool) {
	if name == v.creating {
		return "", false
	}
	if vs, ok := v.Catalog.(Views); ok {
		return vs.View(name)
	}
	return "", false
}

// ViewReads reports whether the CREATE VIEW statement reads the stream,
// table or view called name (anywhere in its SELECT, subqueries and
// CTEs included).
func ViewReads(statement, name string) bool {
	st, err := Parse(statement)
	if err != nil {
		return false
	}
	cv, ok := st.(*CreateView)
	if !ok {
		return false
	}
	v := &tableNameFinder{name: name}
	if cv.Select.stmt != nil {
		cv.Select.stmt.Accept(v)
	}
	for _, b := range cv.Select.union {
		b.Accept(v)
	}
	return v.found
}

type tableNameFinder struct {
	name  string
	found bool
}

func (v *tableNameFinder) Enter(n ast.Node) (ast.Node, bool) {
	if t, ok := n.(*ast.TableName); ok && t.Name.O == v.name {
		v.found = true
	}
	return n, v.found
}

func (v *tableNameFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }
