package sql

import (
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/types"
)

// Parse parses one statement (as Split returns them; a trailing semicolon
// is allowed).
func Parse(text string) (Statement, error) {
	p := &parser{text: text, toks: lex(text)}
	for _, t := range p.toks {
		if t.kind == tError {
			return nil, errorAt(text, t.pos, CodeSyntaxError, "%s", t.text)
		}
	}
	st, err := p.statement()
	if err != nil {
		return nil, err
	}
	return st, nil
}

type parser struct {
	text string
	toks []token
	i    int
	// customTypes lets typ take a name that is not a built-in type as a
	// custom type (CREATE TYPE) for ResolveTypes: in column lists and
	// CREATE TYPE.
	customTypes bool
}

func (p *parser) peek() token { return p.toks[p.i] }
func (p *parser) peekAt(n int) token {
	if p.i+n < len(p.toks) {
		return p.toks[p.i+n]
	}
	return p.toks[len(p.toks)-1]
}
func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// accept consumes the keyword kw if it is next.
func (p *parser) accept(kw string) bool {
	if p.peek().is(kw) {
		p.i++
		return true
	}
	return false
}

func (p *parser) acceptPunct(s string) bool {
	if t := p.peek(); t.kind == tPunct && t.text == s {
		p.i++
		return true
	}
	return false
}

func (p *parser) errorf(t token, format string, args ...any) *Error {
	return errorAt(p.text, t.pos, CodeSyntaxError, format, args...)
}

// unexpected reports the token t where want was expected.
func (p *parser) unexpected(t token, want string) *Error {
	if t.kind == tEOF {
		return p.errorf(t, "syntax error: expected %s, found end of statement", want)
	}
	return p.errorf(t, "syntax error: expected %s, found %q", want, p.text[t.pos:t.end])
}

func (p *parser) expect(kw string) error {
	if !p.accept(kw) {
		return p.unexpected(p.peek(), kw)
	}
	return nil
}

func (p *parser) expectPunct(s string) error {
	if !p.acceptPunct(s) {
		return p.unexpected(p.peek(), "'"+s+"'")
	}
	return nil
}

// end checks that only an optional semicolon remains.
func (p *parser) end() error {
	p.acceptPunct(";")
	if t := p.peek(); t.kind != tEOF {
		return p.unexpected(t, "end of statement")
	}
	return nil
}

// ident reads an identifier: unquoted ones come upper-cased, quoted ones
// keep their case.
func (p *parser) ident(what string) (string, token, error) {
	t := p.peek()
	if t.kind != tIdent && t.kind != tQuoted {
		return "", t, p.unexpected(t, what)
	}
	p.i++
	return t.text, t, nil
}

func (p *parser) statement() (Statement, error) {
	t := p.peek()
	switch {
	case t.is("CREATE"):
		return p.create()
	case t.is("INSERT"):
		return p.insert()
	case t.is("SELECT"), t.is("WITH"):
		return p.selectStmt(p.i)
	case t.is("SHOW"), t.is("LIST"):
		return p.show()
	case t.is("DESCRIBE"), t.is("DESC"):
		return p.describe()
	case t.is("EXPLAIN"):
		return p.explain()
	case t.is("SET"):
		return p.set()
	case t.is("UNSET"):
		return p.unset()
	case t.is("DROP"):
		return p.drop()
	case t.is("TERMINATE"):
		return p.terminate()
	case t.is("PAUSE"), t.is("RESUME"):
		return p.pause()
	case t.is("RESET"):
		return p.reset()
	case t.is("PRINT"):
		return p.print()
	case t.is("ASSERT"):
		return p.assert()
	case t.is("RUN"):
		return p.runScript()
	case t.is("ALTER"):
		return p.alter()
	case t.kind == tEOF:
		return nil, p.errorf(t, "empty statement")
	}
	return nil, p.unexpected(t, "a statement (CREATE, ALTER, INSERT, SELECT, SHOW, DESCRIBE, EXPLAIN, SET, UNSET, DROP, TERMINATE, PAUSE, RESUME, RESET, PRINT)")
}

func (p *parser) kind() (catalog.Kind, error) {
	switch {
	case p.accept("STREAM"):
		return catalog.Stream, nil
	case p.accept("TABLE"):
		return catalog.Table, nil
	}
	return 0, p.unexpected(p.peek(), "STREAM or TABLE")
}

func (p *parser) create() (Statement, error) {
	p.next() // CREATE
	orReplace := false
	if p.accept("OR") {
		if err := p.expect("REPLACE"); err != nil {
			return nil, err
		}
		orReplace = true
	}
	if !orReplace && p.accept("TYPE") {
		return p.createType()
	}
	if p.peek().is("MATERIALIZED") {
		return p.createMaterializedView(orReplace) // parse_view.go
	}
	if p.peek().is("VIEW") {
		return p.createView(orReplace) // parse_view.go
	}
	kindPos := p.peek().pos
	source := p.accept("SOURCE")
	kind, err := p.kind()
	if err != nil {
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
	name, nameTok, err := p.ident(kind.String() + " name")
	if err != nil {
		return nil, err
	}
	nb := base{text: p.text, namePos: nameTok.pos}
	if p.peek().kind == tPunct && p.peek().text == "(" {
		cols, err := p.columns(kind)
		if err != nil {
			return nil, err
		}
		colsEnd := p.toks[p.i-1].pos
		props, err := p.with()
		if err != nil {
			return nil, err
		}
		if p.peek().is("AS") {
			return nil, p.errorf(p.peek(), "syntax error: CREATE %s AS SELECT takes no column list", kind)
		}
		if err := p.end(); err != nil {
			return nil, err
		}
		return &CreateSource{base: nb, Kind: kind, Name: name, OrReplace: orReplace,
			IfNotExists: ifNotExists, Source: source, Columns: cols, Props: props,
			kindPos: kindPos, colsEnd: colsEnd}, nil
	}
	props, err := p.with()
	if err != nil {
		return nil, err
	}
	if !p.peek().is("AS") {
		if props != nil {
			// No column list: the columns come from the schema
			// registry (see InferColumns).
			if err := p.end(); err != nil {
				return nil, err
			}
			return &CreateSource{base: nb, Kind: kind, Name: name, OrReplace: orReplace,
				IfNotExists: ifNotExists, Source: source, Props: props}, nil
		}
		return nil, p.unexpected(p.peek(), "a column list, WITH or AS SELECT")
	}
	if source {
		return nil, p.errorf(p.peek(), "CREATE SOURCE %s cannot be AS SELECT", kind)
	}
	p.next() // AS
	sel, err := p.selectStmt(p.i)
	if err != nil {
		return nil, err
	}
	return &CreateAs{base: nb, Kind: kind, Name: name, OrReplace: orReplace,
		IfNotExists: ifNotExists, Props: props, Select: sel}, nil
}

func (p *parser) columns(kind catalog.Kind) ([]ColumnDef, error) {
	p.customTypes = true
	defer func() { p.customTypes = false }()
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	var cols []ColumnDef
	for {
		name, nt, err := p.ident("a column name")
		if err != nil {
			return nil, err
		}
		typ, err := p.typ()
		if err != nil {
			return nil, err
		}
		c := ColumnDef{Name: name, Type: typ, Pos: nt.pos}
		switch {
		case p.peek().is("PRIMARY"):
			p.next()
			if err := p.expect("KEY"); err != nil {
				return nil, err
			}
			if kind != catalog.Table {
				return nil, p.errorf(nt, "Column `%s` is a 'PRIMARY KEY' column: please use 'KEY' for streams.", name)
			}
			c.Key = true
		case p.peek().is("KEY"):
			p.next()
			if kind == catalog.Table {
				return nil, p.errorf(nt, "Column `%s` is a 'KEY' column: please use 'PRIMARY KEY' for tables.", name)
			}
			c.Key = true
		}
		switch {
		case !c.Key && p.peek().is("HEADERS"):
			p.next()
			if !c.Type.Equal(types.HeadersType) {
				return nil, errorAt(p.text, nt.pos, CodeInvalidParameter, "Invalid type for HEADERS column: expected ARRAY<STRUCT<`KEY` STRING, `VALUE` BYTES>>, got %s", c.Type)
			}
			c.Header = true
		case !c.Key && p.peek().is("HEADER") && p.peekAt(1).kind == tPunct && p.peekAt(1).text == "(":
			p.next()
			p.next()
			kt := p.next()
			if kt.kind != tString {
				return nil, p.unexpected(kt, "a header key in single quotes")
			}
			if err := p.expectPunct(")"); err != nil {
				return nil, err
			}
			if c.Type.Kind != types.Bytes {
				return nil, errorAt(p.text, nt.pos, CodeInvalidParameter, "Invalid type for HEADER('%s') column: expected BYTES, got %s", kt.text, c.Type)
			}
			c.Header, c.HeaderKey = true, kt.text
		}
		for _, o := range cols {
			if o.Name == c.Name {
				return nil, errorAt(p.text, nt.pos, CodeDuplicateObject, "duplicate column %s", c.Name)
			}
			// ksqlDB's rules (LogicalSchema): no header column after a
			// HEADERS column (one before it is allowed); one column per
			// header key.
			if c.Header && o.Header && o.HeaderKey == "" {
				return nil, errorAt(p.text, nt.pos, CodeDuplicateObject, "Schema already contains a HEADERS column.")
			}
			if c.Header && o.Header && c.HeaderKey == o.HeaderKey {
				return nil, errorAt(p.text, nt.pos, CodeDuplicateObject, "Schema already contains a HEADER('%s') column.", c.HeaderKey)
			}
		}
		cols = append(cols, c)
		if p.acceptPunct(",") {
			continue
		}
		if t := p.peek(); t.kind != tEOF && !(t.kind == tPunct && t.text == ")") {
			// As ksqlDB's grammar words it.
			return nil, p.errorf(t, "Syntax Error\nExpecting {',', ')'}\nStatement: %s", p.echo())
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		return cols, nil
	}
}

// echo is the statement as ksqlDB's syntax errors end: its text and
// semicolon.
func (p *parser) echo() string {
	return strings.TrimRight(strings.TrimSpace(p.text), ";") + ";"
}

// typ parses a ksqlDB type name.
func (p *parser) typ() (types.Type, error) {
	t := p.peek()
	if t.kind != tIdent {
		return types.Type{}, p.unexpected(t, "a type")
	}
	p.i++
	switch t.text {
	case "DECIMAL":
		if err := p.expectPunct("("); err != nil {
			return types.Type{}, err
		}
		prec, err := p.intLit()
		if err != nil {
			return types.Type{}, err
		}
		if err := p.expectPunct(","); err != nil {
			return types.Type{}, err
		}
		scale, err := p.intLit()
		if err != nil {
			return types.Type{}, err
		}
		if err := p.expectPunct(")"); err != nil {
			return types.Type{}, err
		}
		if prec < 1 || scale < 0 || scale > prec {
			return types.Type{}, p.errorf(t, "invalid DECIMAL(%d, %d)", prec, scale)
		}
		return types.Type{Kind: types.Decimal, Precision: int(prec), Scale: int(scale)}, nil
	case "ARRAY":
		if err := p.expectPunct("<"); err != nil {
			return types.Type{}, err
		}
		elem, err := p.typ()
		if err != nil {
			return types.Type{}, err
		}
		if err := p.expectPunct(">"); err != nil {
			return types.Type{}, err
		}
		return types.Type{Kind: types.Array, Elem: &elem}, nil
	case "MAP":
		if err := p.expectPunct("<"); err != nil {
			return types.Type{}, err
		}
		k, err := p.typ()
		if err != nil {
			return types.Type{}, err
		}
		if err := p.expectPunct(","); err != nil {
			return types.Type{}, err
		}
		v, err := p.typ()
		if err != nil {
			return types.Type{}, err
		}
		if err := p.expectPunct(">"); err != nil {
			return types.Type{}, err
		}
		return types.Type{Kind: types.Map, KeyType: &k, Elem: &v}, nil
	case "STRUCT":
		if err := p.expectPunct("<"); err != nil {
			return types.Type{}, err
		}
		var fields []types.Field
		for !p.acceptPunct(">") {
			if len(fields) > 0 {
				if err := p.expectPunct(","); err != nil {
					return types.Type{}, err
				}
			}
			name, _, err := p.ident("a field name")
			if err != nil {
				return types.Type{}, err
			}
			ft, err := p.typ()
			if err != nil {
				return types.Type{}, err
			}
			fields = append(fields, types.Field{Name: name, Type: ft})
		}
		return types.Type{Kind: types.Struct, Fields: fields}, nil
	}
	if st, ok := types.ScalarByName(t.text); ok {
		if p.customTypes && p.peek().kind == tPunct && p.peek().text == "(" {
			// ksqlDB's grammar reads type parameters here: a number or
			// STRING, then ',' or ')'; it fails at what breaks them.
			if arg := p.peekAt(1); arg.kind != tNumber && !arg.is("STRING") {
				return types.Type{}, p.errorf(arg, "Syntax Error\nExpecting {'STRING', INTEGER_VALUE}\nStatement: %s", p.echo())
			}
			if st.Kind == types.String && p.peekAt(1).is("STRING") && p.peekAt(2).kind == tPunct && p.peekAt(2).text == ")" {
				// VARCHAR(STRING): ksqlDB reads it as STRING.
				p.i += 3
			}
		}
		return st, nil
	}
	if !p.customTypes || p.peek().kind == tPunct && (p.peek().text == "(" || p.peek().text == "<") {
		return types.Type{}, errorAt(p.text, t.pos, CodeUndefinedObject, "%s", unknownType(p.text[t.pos:t.end]))
	}
	// A custom type (CREATE TYPE), resolved before binding.
	return customRef(t.text), nil
}

func (p *parser) intLit() (int64, error) {
	t := p.peek()
	if t.kind != tNumber {
		return 0, p.unexpected(t, "a number")
	}
	n, err := strconv.ParseInt(t.text, 10, 64)
	if err != nil {
		return 0, p.errorf(t, "invalid integer %s", t.text)
	}
	p.i++
	return n, nil
}

// with parses an optional WITH (NAME = value, …).
func (p *parser) with() (Props, error) {
	if !p.accept("WITH") {
		return nil, nil
	}
	if err := p.expectPunct("("); err != nil {
		return nil, err
	}
	props := Props{}
	for {
		name, nt, err := p.ident("a property name")
		if err != nil {
			return nil, err
		}
		name = strings.ToUpper(name)
		if err := p.expectPunct("="); err != nil {
			return nil, err
		}
		vt := p.next()
		switch vt.kind {
		case tString, tNumber, tIdent:
		default:
			return nil, p.unexpected(vt, "a property value")
		}
		if _, dup := props[name]; dup {
			return nil, p.errorf(nt, "duplicate property %s", name)
		}
		props[name] = Property{Value: vt.text, Pos: vt.pos}
		if p.acceptPunct(",") {
			continue
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		return props, nil
	}
}

func (p *parser) insert() (Statement, error) {
	p.next() // INSERT
	if err := p.expect("INTO"); err != nil {
		return nil, err
	}
	target, targetTok, err := p.ident("a stream name")
	if err != nil {
		return nil, err
	}
	nb := base{text: p.text, namePos: targetTok.pos}
	if p.peek().is("SELECT") {
		sel, err := p.selectStmt(p.i)
		if err != nil {
			return nil, err
		}
		return &InsertSelect{base: nb, Target: target, Select: sel}, nil
	}
	cols, err := p.columnList()
	if err != nil {
		return nil, err
	}
	if !p.peek().is("VALUES") {
		return nil, p.unexpected(p.peek(), "VALUES or SELECT")
	}
	ins, np, err := parseTiDBInsert(p.text, p.toks)
	if err != nil {
		return nil, err
	}
	return &InsertValues{base: nb, Target: target, Columns: cols, ins: ins, nParams: np}, nil
}

func (p *parser) show() (Statement, error) {
	p.next()
	t := p.next()
	what := ""
	switch {
	case t.is("STREAMS"), t.is("TABLES"), t.is("QUERIES"), t.is("TOPICS"), t.is("FUNCTIONS"), t.is("PROPERTIES"), t.is("TYPES"), t.is("VIEWS"):
		what = t.text
	default:
		return nil, p.unexpected(t, "STREAMS, TABLES, QUERIES, TOPICS, FUNCTIONS, PROPERTIES, TYPES or VIEWS")
	}
	ext := p.accept("EXTENDED")
	if err := p.end(); err != nil {
		return nil, err
	}
	return &Show{base: base{text: p.text, namePos: -1}, What: what, Extended: ext}, nil
}

func (p *parser) describe() (Statement, error) {
	p.next()
	d := &Describe{base: base{text: p.text, namePos: -1}}
	if p.peek().is("FUNCTION") && p.peekAt(1).kind != tEOF && !p.peekAt(1).is("EXTENDED") {
		p.next()
		d.Function = true
	}
	d.Extended = p.accept("EXTENDED")
	name, nt, err := p.ident("a stream or table name")
	if err != nil {
		return nil, err
	}
	d.Name, d.namePos = name, nt.pos
	if err := p.end(); err != nil {
		return nil, err
	}
	return d, nil
}

func (p *parser) explain() (Statement, error) {
	p.next()
	t := p.peek()
	if (t.kind == tIdent || t.kind == tQuoted) && !t.is("CREATE") && !t.is("SELECT") && !t.is("WITH") && !t.is("INSERT") {
		p.next()
		if err := p.end(); err != nil {
			return nil, err
		}
		return &Explain{base: base{text: p.text, namePos: t.pos}, QueryID: t.text}, nil
	}
	sub := &parser{text: p.text, toks: p.toks, i: p.i}
	st, err := sub.statement()
	if err != nil {
		return nil, err
	}
	switch st.(type) {
	case *CreateAs, *InsertSelect, *Select:
	default:
		return nil, p.errorf(t, "EXPLAIN takes a query ID or a CREATE … AS SELECT, INSERT INTO … SELECT or SELECT")
	}
	return &Explain{base: base{text: p.text, namePos: -1}, Stmt: st}, nil
}

func (p *parser) set() (Statement, error) {
	p.next()
	nt := p.next()
	if nt.kind != tString {
		return nil, p.unexpected(nt, "a quoted property name, as in SET 'auto.offset.reset' = 'earliest'")
	}
	if err := p.expectPunct("="); err != nil {
		return nil, err
	}
	vt := p.next()
	if vt.kind != tString && vt.kind != tNumber {
		return nil, p.unexpected(vt, "a quoted value")
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return &SetProperty{base: base{text: p.text, namePos: nt.pos}, Name: nt.text, Value: vt.text, ValuePos: vt.pos}, nil
}

func (p *parser) unset() (Statement, error) {
	p.next()
	nt := p.next()
	if nt.kind != tString {
		return nil, p.unexpected(nt, "a quoted property name")
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return &UnsetProperty{base: base{text: p.text, namePos: nt.pos}, Name: nt.text}, nil
}

func (p *parser) drop() (Statement, error) {
	p.next()
	if p.accept("TYPE") {
		return p.dropType()
	}
	if p.accept("VIEW") {
		return p.dropView() // parse_view.go
	}
	kind, err := p.dropKind() // parse_view.go
	if err != nil {
		return nil, err
	}
	d := &Drop{base: base{text: p.text, namePos: -1}, Kind: kind}
	if p.accept("IF") {
		if err := p.expect("EXISTS"); err != nil {
			return nil, err
		}
		d.IfExists = true
	}
	var nt token
	if d.Name, nt, err = p.ident(kind.String() + " name"); err != nil {
		return nil, err
	}
	d.namePos = nt.pos
	if p.accept("DELETE") {
		if err := p.expect("TOPIC"); err != nil {
			return nil, err
		}
		d.DeleteTopic = true
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return d, nil
}

func (p *parser) terminate() (Statement, error) {
	p.next()
	t := &Terminate{base: base{text: p.text, namePos: -1}}
	var err error
	t.QueryID, t.All, err = p.queryTarget(&t.base, true)
	return t, err
}

func (p *parser) pause() (Statement, error) {
	t := &Pause{base: base{text: p.text, namePos: -1}, Resume: p.next().is("RESUME")}
	var err error
	t.QueryID, t.All, err = p.queryTarget(&t.base, true)
	return t, err
}

func (p *parser) reset() (Statement, error) {
	p.next() // RESET
	if err := p.expect("QUERY"); err != nil {
		return nil, err
	}
	t := &ResetQuery{base: base{text: p.text, namePos: -1}}
	var err error
	t.QueryID, _, err = p.queryTarget(&t.base, false)
	return t, err
}

// queryTarget reads the end of TERMINATE, PAUSE, RESUME and RESET QUERY:
// a query ID (its position kept in b for errors about it) or, when
// allowed, ALL; then the end of the statement.
func (p *parser) queryTarget(b *base, allowAll bool) (id string, all bool, err error) {
	if allowAll && p.accept("ALL") {
		all = true
	} else {
		what := "a query ID"
		if allowAll {
			what = "a query ID or ALL"
		}
		var it token
		if id, it, err = p.ident(what); err != nil {
			return "", false, err
		}
		b.namePos = it.pos
	}
	return id, all, p.end()
}

func (p *parser) print() (Statement, error) {
	p.next()
	t := p.next()
	pr := &Print{base: base{text: p.text, namePos: t.pos}, Interval: 1, Limit: -1}
	switch t.kind {
	case tIdent:
		pr.Topic = p.text[t.pos:t.end]
		// Topic names may hold characters identifiers do not: -, .
		for n := p.peek(); (isPunct(n, "-") || isPunct(n, ".")) && n.pos == t.end; n = p.peek() {
			p.next()
			m := p.next()
			if m.pos != n.end || (m.kind != tIdent && m.kind != tNumber) {
				return nil, p.unexpected(m, "a topic name")
			}
			pr.Topic += n.text + p.text[m.pos:m.end]
			t = m
		}
	case tQuoted, tString:
		pr.Topic, pr.Quoted = t.text, true
	default:
		return nil, p.unexpected(t, "a topic name")
	}
	for {
		switch {
		case p.accept("FROM"):
			if err := p.expect("BEGINNING"); err != nil {
				return nil, err
			}
			pr.FromBeginning = true
		case p.accept("INTERVAL"), p.accept("SAMPLE"):
			n, err := p.intLit()
			if err != nil {
				return nil, err
			}
			if n < 1 {
				return nil, p.errorf(p.toks[p.i-1], "INTERVAL must be at least 1")
			}
			pr.Interval = n
		case p.accept("LIMIT"):
			n, err := p.intLit()
			if err != nil {
				return nil, err
			}
			pr.Limit = n
		default:
			if err := p.end(); err != nil {
				return nil, err
			}
			return pr, nil
		}
	}
}

// columnList reads an optional parenthesized list of column names, as
// INSERT INTO t (a, b) and ASSERT VALUES t (a, b) name their columns;
// nil when there is none.
func (p *parser) columnList() ([]string, error) {
	if !p.acceptPunct("(") {
		return nil, nil
	}
	var cols []string
	for {
		c, _, err := p.ident("a column name")
		if err != nil {
			return nil, err
		}
		cols = append(cols, c)
		if p.acceptPunct(",") {
			continue
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, err
		}
		return cols, nil
	}
}
