package sql

import (
	"regexp"
	"strconv"
	"strings"

	tidb "github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	// The test driver supplies TiDB's literal value nodes; without a
	// driver the parser panics.
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// selectStmt parses a SELECT starting at token index start: the streaming
// clauses are read here and blanked out of the text, and the rest goes to
// TiDB.
func (p *parser) selectStmt(start int) (*Select, error) {
	sel := &Select{base: base{p.text}, Limit: -1, toks: p.toks}
	buf := []byte(p.text)
	blank := func(from, to int) {
		for i := from; i < to && i < len(buf); i++ {
			if buf[i] != '\n' {
				buf[i] = ' '
			}
		}
	}
	markUnsupported := func(what string, t token) {
		if sel.unsupported == "" {
			sel.unsupported, sel.unsupPos = what, t.pos
		}
	}
	blank(0, p.toks[start].pos)
	depth := 0
	toks := p.toks
	for i := start; i < len(toks) && toks[i].kind != tEOF; i++ {
		t := toks[i]
		switch {
		case t.kind == tPunct && t.text == "(":
			depth++
		case t.kind == tPunct && t.text == ")":
			depth--
		case t.kind == tIdent:
			// Unquoted identifiers are case-insensitive: upper-case them
			// in place (same length, so positions still match).
			copy(buf[t.pos:t.end], t.text)
		}
		if depth != 0 {
			continue
		}
		switch {
		case t.is("EMIT") && (toks[i+1].is("CHANGES") || toks[i+1].is("FINAL")):
			sel.Emit = toks[i+1].text
			blank(t.pos, toks[i+1].end)
			i++
		case t.is("WINDOW") && (toks[i+1].is("TUMBLING") || toks[i+1].is("HOPPING") || toks[i+1].is("SESSION")):
			markUnsupported("WINDOW "+toks[i+1].text, t)
			j := skipParens(toks, i+2)
			blank(t.pos, toks[j-1].end)
			i = j - 1
		case t.is("WITHIN"):
			markUnsupported("WITHIN", t)
			j := i + 1
			if toks[j].kind == tPunct && toks[j].text == "(" {
				j = skipParens(toks, j)
			} else {
				j += 2 // a number and a unit
			}
			if j > len(toks)-1 {
				j = len(toks) - 1
			}
			blank(t.pos, toks[j-1].end)
			i = j - 1
		case t.is("PARTITION") && toks[i+1].is("BY"):
			markUnsupported("PARTITION BY", t)
			j := i + 2
			d := 0
			for ; toks[j].kind != tEOF; j++ {
				tj := toks[j]
				if tj.kind == tPunct && tj.text == "(" {
					d++
				} else if tj.kind == tPunct && tj.text == ")" {
					d--
				} else if d == 0 && (tj.is("EMIT") || tj.is("LIMIT") || tj.is("HAVING") || tj.kind == tPunct && tj.text == ";") {
					break
				}
			}
			blank(t.pos, toks[j-1].end)
			i = j - 1
		case t.kind == tPunct && t.text == ";":
			blank(t.pos, t.end)
		}
	}
	sel.tidbText = string(buf)
	st, err := parseTiDB(sel.tidbText, p.text)
	if err != nil {
		return nil, err
	}
	s, ok := st.(*ast.SelectStmt)
	if !ok {
		return nil, errorAt(p.text, p.toks[start].pos, CodeSyntaxError, "expected a SELECT")
	}
	sel.stmt = s
	if s.Limit != nil {
		if s.Limit.Offset != nil {
			return nil, Errorf(CodeFeatureNotSupport, "LIMIT with OFFSET is not supported")
		}
		n, ok := intValue(s.Limit.Count)
		if !ok || n < 0 {
			return nil, Errorf(CodeSyntaxError, "LIMIT takes a non-negative integer")
		}
		sel.Limit = n
	}
	return sel, nil
}

// skipParens returns the index after the parenthesized group starting at
// toks[i] (or i when toks[i] is not "(").
func skipParens(toks []token, i int) int {
	if toks[i].kind != tPunct || toks[i].text != "(" {
		return i
	}
	d := 0
	for ; toks[i].kind != tEOF; i++ {
		if toks[i].kind == tPunct && toks[i].text == "(" {
			d++
		} else if toks[i].kind == tPunct && toks[i].text == ")" {
			d--
			if d == 0 {
				return i + 1
			}
		}
	}
	return i
}

// parseTiDBInsert hands an INSERT … VALUES statement to TiDB.
func parseTiDBInsert(text string, toks []token) (*ast.InsertStmt, error) {
	buf := []byte(text)
	for _, t := range toks {
		if t.kind == tIdent {
			copy(buf[t.pos:t.end], t.text)
		}
		if t.kind == tPunct && t.text == ";" {
			buf[t.pos] = ' '
		}
	}
	st, err := parseTiDB(string(buf), text)
	if err != nil {
		return nil, err
	}
	ins, ok := st.(*ast.InsertStmt)
	if !ok || ins.Select != nil || ins.Setlist || len(ins.OnDuplicate) > 0 {
		return nil, Errorf(CodeSyntaxError, "expected INSERT INTO name [(columns)] VALUES (…)")
	}
	return ins, nil
}

var tidbErrPos = regexp.MustCompile(`line (\d+) column (\d+) near "((?s).*)"`)

// parseTiDB parses one statement with TiDB in ANSI_QUOTES mode and turns
// its errors into ours, positioned in orig (which has the same length).
func parseTiDB(text, orig string) (ast.StmtNode, error) {
	p := tidb.New()
	p.SetSQLMode(mysql.ModeANSIQuotes | mysql.ModePipesAsConcat)
	st, err := p.ParseOneStmt(text, "", "")
	if err == nil {
		return st, nil
	}
	m := tidbErrPos.FindStringSubmatch(err.Error())
	if m == nil {
		return nil, Errorf(CodeSyntaxError, "syntax error: %v", err)
	}
	line, _ := strconv.Atoi(m[1])
	col, _ := strconv.Atoi(m[2])
	near := m[3]
	off := offsetOf(text, line, col)
	if near == "" {
		return nil, errorAt(orig, len(strings.TrimRight(orig, " \t\n;")), CodeSyntaxError, "syntax error at end of statement")
	}
	// TiDB's column points into the offending token; find where the
	// "near" text starts at or before it.
	pos := -1
	for i := 0; i <= off && i < len(text); i++ {
		if strings.HasPrefix(text[i:], near) {
			pos = i
		}
	}
	if pos < 0 {
		pos = off
	}
	tok := near
	if f := strings.Fields(near); len(f) > 0 {
		tok = f[0]
	}
	return nil, errorAt(orig, pos, CodeSyntaxError, "syntax error at or near %q", tok)
}

func offsetOf(text string, line, col int) int {
	off := 0
	for l := 1; l < line && off < len(text); off++ {
		if text[off] == '\n' {
			l++
		}
	}
	off += col - 1
	if off > len(text) {
		off = len(text)
	}
	if off < 0 {
		off = 0
	}
	return off
}
