package sql

import (
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/types"
)

// This file holds the statements of ksqlDB's SQL test files (its
// sql-tests/ format, which `sqlstreams test` runs): ASSERT VALUES, ASSERT
// NULL VALUES, ASSERT STREAM|TABLE and RUN SCRIPT. The engine does not
// execute them; the test runner does. Each is parsed as the statement it
// is shaped like (INSERT … VALUES, CREATE STREAM|TABLE), so that its
// values and columns mean what they mean there.

// AssertValues is ASSERT VALUES name [(columns)] VALUES (…): the next
// record of name's topic must hold these values (columns not named are
// not compared; ROWTIME names the record's timestamp). With Tombstone it
// is ASSERT NULL VALUES name [(columns)] KEY (…): the next record must be
// a tombstone with this key.
type AssertValues struct {
	base
	Target    string
	Columns   []string
	Tombstone bool
	// Insert is the statement as INSERT INTO name (columns) VALUES (…),
	// which BindRecord binds.
	Insert *InsertValues
}

// AssertSource is ASSERT STREAM|TABLE name [(columns)] [WITH (…)]: the
// source name must be of this kind, with these columns and properties.
type AssertSource struct {
	base
	// Create is the statement as CREATE STREAM|TABLE name (columns)
	// WITH (…); only its kind, name, columns and properties are used.
	Create *CreateSource
}

// RunScript is RUN SCRIPT 'path': the statements of the file run in its
// place.
type RunScript struct {
	base
	Path string
}

// assert parses ASSERT … (the keyword is next).
func (p *parser) assert() (Statement, error) {
	p.next() // ASSERT
	t := p.peek()
	switch {
	case t.is("STREAM"), t.is("TABLE"):
		// Same length as ASSERT: positions in errors stay right.
		text := "CREATE" + p.text[6:]
		st, err := Parse(text)
		if err != nil {
			return nil, err
		}
		cs, ok := st.(*CreateSource)
		if !ok || cs.OrReplace || cs.IfNotExists || cs.Source {
			return nil, p.errorf(t, "syntax error: expected ASSERT STREAM|TABLE name [(columns)] [WITH (…)]")
		}
		cs.text = p.text
		return &AssertSource{base: base{text: p.text, namePos: cs.namePos}, Create: cs}, nil
	case t.is("VALUES"), t.is("NULL"):
	default:
		return nil, p.unexpected(t, "VALUES, NULL VALUES, STREAM or TABLE after ASSERT")
	}
	tombstone := p.accept("NULL")
	if err := p.expect("VALUES"); err != nil {
		return nil, err
	}
	name, nameTok, err := p.ident("a stream or table name")
	if err != nil {
		return nil, err
	}
	cols, err := p.columnList()
	if err != nil {
		return nil, err
	}
	kw := p.peek()
	want := "VALUES"
	if tombstone {
		want = "KEY"
	}
	if !kw.is(want) {
		return nil, p.unexpected(kw, want)
	}
	// INSERT INTO padded to where the name starts, so that positions in
	// errors before KEY stay right.
	prefix := "INSERT INTO"
	prefix += strings.Repeat(" ", max(1, nameTok.pos-len(prefix)))
	text := prefix + p.text[nameTok.pos:kw.pos] + "VALUES" + p.text[kw.end:]
	st, err := Parse(text)
	if err != nil {
		return nil, err
	}
	iv, ok := st.(*InsertValues)
	if !ok {
		return nil, p.errorf(kw, "syntax error: expected (values) after %s", want)
	}
	if len(iv.ins.Lists) != 1 {
		return nil, p.errorf(kw, "ASSERT VALUES takes one row of values")
	}
	return &AssertValues{base: base{text: p.text, namePos: nameTok.pos}, Target: name,
		Columns: cols, Tombstone: tombstone, Insert: iv}, nil
}

// runScript parses RUN SCRIPT 'path'.
func (p *parser) runScript() (Statement, error) {
	p.next() // RUN
	if err := p.expect("SCRIPT"); err != nil {
		return nil, err
	}
	t := p.next()
	if t.kind != tString {
		return nil, p.unexpected(t, "a file name in single quotes")
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	return &RunScript{base: base{text: p.text, namePos: -1}, Path: t.text}, nil
}

// BindRecord evaluates the one row of an INSERT … VALUES (or an ASSERT's
// Insert) for target as ksqlDB's test runner builds a record from it:
// the row laid out by target.Schema, columns not named NULL, and the
// record timestamp when the statement names ROWTIME (nil otherwise).
// Unlike BindInsertValues it takes ROWTIME, as ksqlDB's INSERT does.
func BindRecord(iv *InsertValues, target *catalog.Source) (types.Row, *int64, error) {
	b := &binder{text: iv.text, toks: lex(iv.text), src: target}
	if len(iv.ins.Lists) != 1 {
		return nil, nil, Errorf(CodeSyntaxError, "expected one row of values, got %d", len(iv.ins.Lists))
	}
	const rowtime = -1
	cols := make([]int, 0, len(target.Schema.Columns))
	if len(iv.Columns) == 0 {
		cols = target.Schema.Visible()
	} else {
		for _, name := range iv.Columns {
			if strings.EqualFold(name, "ROWTIME") && target.Schema.Index(name) < 0 {
				cols = append(cols, rowtime)
				continue
			}
			i := target.Schema.Index(name)
			if i < 0 {
				return nil, nil, b.errAt(name, CodeUndefinedColumn, "column %s does not exist in %s", name, target.Name)
			}
			cols = append(cols, i)
		}
	}
	list := iv.ins.Lists[0]
	if len(list) != len(cols) {
		return nil, nil, b.errAt("VALUES", CodeSyntaxError, "expected %d values, got %d", len(cols), len(list))
	}
	row := make(types.Row, len(target.Schema.Columns))
	for i := range row {
		row[i] = types.NullDatum
	}
	var ts *int64
	for i, n := range list {
		e, err := b.expr(n)
		if err != nil {
			return nil, nil, err
		}
		if cols[i] == rowtime {
			d, err := constant(e, types.BigintType)
			if err != nil || d.Null {
				return nil, nil, b.errAt("ROWTIME", CodeDatatypeMismatch, "value for ROWTIME: want a BIGINT")
			}
			v := d.I
			ts = &v
			continue
		}
		col := target.Schema.Columns[cols[i]]
		d, err := constant(e, col.Type)
		if err != nil {
			return nil, nil, b.errAt(col.Name, CodeDatatypeMismatch, "value for column %s: %v", col.Name, err)
		}
		row[cols[i]] = d
	}
	return row, ts, nil
}
