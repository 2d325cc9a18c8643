package sql

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	tidb "github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	// The test driver supplies TiDB's literal value nodes; without a
	// driver the parser panics.
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// selectStmt parses a SELECT starting at token index start: the streaming
// clauses are read here and cut out of the text, ksqlDB expression forms
// are rewritten (see rewrite.go), and the rest goes to TiDB.
func (p *parser) selectStmt(start int) (*Select, error) {
	sel := &Select{base: base{text: p.text, namePos: -1}, Limit: -1, toks: p.toks, fullJoin: -1}
	r := newRewriter(p.text)
	drop := func(from, to int) { r.replace(from, to, " ") }
	drop(0, p.toks[start].pos)
	depth := 0
	toks := p.toks
	exprFrom := start
	flush := func(to int) error {
		if err := r.rewriteExprs(toks, exprFrom, to); err != nil {
			return err
		}
		return nil
	}
	gw, err := groupWindows(p.text, toks, start)
	if err != nil {
		return nil, err
	}
	if gw.top != nil {
		sel.tvf, sel.window = gw.top, gw.top.window
	}
	sel.nestedTVFs = append(sel.nestedTVFs, gw.nested...)
	i := start
	for ; i < len(toks) && toks[i].kind != tEOF; i++ {
		t := toks[i]
		if e, ok := gw.edits[i]; ok {
			// Flink's group window and its auxiliary functions
			// (group_window.go).
			if err := flush(i); err != nil {
				return nil, err
			}
			r.replace(t.pos, toks[e.end-1].end, e.text)
			i = e.end - 1
			exprFrom = e.end
			continue
		}
		switch {
		case isPunct(t, "("), isPunct(t, "["):
			depth++
		case isPunct(t, ")"), isPunct(t, "]"):
			depth--
		}
		if depth != 0 && t.is("FROM") && windowTVFAt(toks, i+1) {
			// A window table function in a derived table or CTE: cut
			// out as at the top, and claimed by its SELECT when the
			// binder reaches it (fromSubquery).
			tv, end, err := parseWindowTVF(p.text, toks, i+1)
			if err != nil {
				return nil, err
			}
			if err := flush(i + 1); err != nil {
				return nil, err
			}
			if err := tv.cut(r, toks, end); err != nil {
				return nil, err
			}
			tv.selectPos = enclosingSelect(toks, i)
			sel.nestedTVFs = append(sel.nestedTVFs, tv)
			i = end - 1
			exprFrom = end
			continue
		}
		if t.is("FOR") && toks[i+1].is("SYSTEM_TIME") {
			// Flink's lookup join (Nexmark q13): TiDB reads no FOR
			// SYSTEM_TIME; say what the join does instead.
			return nil, errorAt(p.text, t.pos, CodeFeatureNotSupport, "FOR SYSTEM_TIME AS OF is not supported: a stream–table join looks each row up in the table as it is when the row is processed (a lookup as of processing time); drop the clause")
		}
		if depth != 0 {
			continue
		}
		clause := 0 // tokens of a streaming clause starting at i
		switch {
		case t.is("FROM") && windowTVFAt(toks, i+1):
			if sel.tvf != nil || sel.window != nil {
				return nil, errorAt(p.text, toks[i+1].pos, CodeSyntaxError, "syntax error: a SELECT takes one window (a window table function or a WINDOW clause)")
			}
			tv, end, err := parseWindowTVF(p.text, toks, i+1)
			if err != nil {
				return nil, err
			}
			if err := flush(i + 1); err != nil {
				return nil, err
			}
			if err := tv.cut(r, toks, end); err != nil {
				return nil, err
			}
			sel.tvf, sel.window = tv, tv.window
			i = end - 1
			exprFrom = end
			continue
		case t.is("BETWEEN") && i >= 1 && sel.interval == nil:
			start := i - 1
			if i >= 3 && isPunct(toks[i-2], ".") {
				start = i - 3
			}
			ij, end, ok, err := parseIntervalJoin(p.text, toks, start, i)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			if err := flush(start); err != nil {
				return nil, err
			}
			r.replace(toks[start].pos, toks[end-1].end, intervalJoinMarker+"()")
			sel.interval = ij
			i = end - 1
			exprFrom = end
			continue
		case t.is("EMIT") && (toks[i+1].is("CHANGES") || toks[i+1].is("FINAL")):
			sel.Emit = toks[i+1].text
			clause = 2
		case t.is("WINDOW") && (isWindowKind(toks[i+1]) || i+2 < len(toks) && toks[i+1].kind == tIdent && isWindowKind(toks[i+2])):
			if sel.tvf != nil {
				return nil, errorAt(p.text, t.pos, CodeSyntaxError, "syntax error: a SELECT takes one window (a window table function or a WINDOW clause)")
			}
			if sel.window != nil {
				return nil, errorAt(p.text, t.pos, CodeSyntaxError, "syntax error: a SELECT takes one WINDOW clause")
			}
			w, end, err := parseWindow(p.text, toks, i)
			if err != nil {
				return nil, err
			}
			sel.window = w
			clause = end - i
		case t.is("FULL") && (toks[i+1].is("OUTER") || toks[i+1].is("JOIN")):
			if sel.fullJoin < 0 {
				sel.fullJoin = t.pos
			}
			sel.fullJoins = append(sel.fullJoins, t.pos)
			clause = 1
			if toks[i+1].is("OUTER") {
				clause = 2
			}
		case t.is("WITHIN"):
			w, end, err := parseWithin(p.text, toks, i)
			if err != nil {
				return nil, err
			}
			if sel.within == nil {
				sel.within = w
			}
			sel.withins = append(sel.withins, w)
			clause = end - i
		case t.is("PARTITION") && toks[i+1].is("BY"):
			sel.partitionBy = i + 2
			j := i + 2
			d := 0
			for ; toks[j].kind != tEOF; j++ {
				tj := toks[j]
				if isPunct(tj, "(") {
					d++
				} else if isPunct(tj, ")") {
					d--
				} else if d == 0 && (tj.is("EMIT") || tj.is("LIMIT") || tj.is("HAVING") || isPunct(tj, ";")) {
					break
				}
			}
			sel.partitionEnd = j
			clause = j - i
		case isPunct(t, ";"):
			clause = 1
		}
		if clause > 0 {
			if err := flush(i); err != nil {
				return nil, err
			}
			drop(t.pos, toks[i+clause-1].end)
			i += clause - 1
			exprFrom = i + 1
		}
	}
	if err := flush(i); err != nil {
		return nil, err
	}
	sel.rw = r.apply()
	st, err := parseTiDB(sel.rw, p.text)
	if err != nil {
		return nil, err
	}
	s, ok := st.(*ast.SelectStmt)
	if u, isUnion := st.(*ast.SetOprStmt); isUnion {
		branches, err := sel.unionBranches(u)
		if err != nil {
			return nil, err
		}
		s, ok = branches[0], true
		sel.stmt = s
		if n, err := numberMarkers(u, sel.rw, sel.text, p.toks); err != nil || n > 0 {
			if err == nil {
				err = errorAt(p.text, p.toks[start].pos, CodeFeatureNotSupport, "placeholders in a UNION ALL are not supported")
			}
			return nil, err
		}
		return sel, nil
	}
	if !ok {
		return nil, errorAt(p.text, p.toks[start].pos, CodeSyntaxError, "expected a SELECT")
	}
	sel.stmt = s
	if sel.tvf != nil {
		if err := sel.tvfColumns(); err != nil {
			return nil, err
		}
	}
	if err := sel.numberParams(p.toks); err != nil {
		return nil, err
	}
	if s.Limit != nil {
		if s.Limit.Offset != nil {
			return nil, errorAt(sel.text, offsetPos(sel), CodeFeatureNotSupport, "LIMIT with OFFSET is not supported")
		}
		if pm, ok := s.Limit.Count.(*driver.ParamMarkerExpr); ok {
			// LIMIT $n: the value bound (params.go, BindSelect).
			sel.limitParam = pm.Order
		} else {
			n, ok := intValue(s.Limit.Count)
			if !ok || n < 0 {
				return nil, Errorf(CodeSyntaxError, "LIMIT takes a non-negative integer")
			}
			sel.Limit = n
		}
	}
	if sel.partitionBy > 0 {
		if err := sel.parsePartitionBy(); err != nil {
			return nil, err
		}
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
func parseTiDBInsert(text string, toks []token) (*ast.InsertStmt, int, error) {
	r := newRewriter(text)
	n := len(toks) - 1
	if n > 0 && isPunct(toks[n-1], ";") {
		r.replace(toks[n-1].pos, toks[n-1].end, " ")
		n--
	}
	if err := r.rewriteExprs(toks, 0, n); err != nil {
		return nil, 0, err
	}
	rw := r.apply()
	st, err := parseTiDB(rw, text)
	if err != nil {
		return nil, 0, err
	}
	ins, ok := st.(*ast.InsertStmt)
	if !ok || ins.Select != nil || ins.Setlist || len(ins.OnDuplicate) > 0 {
		return nil, 0, Errorf(CodeSyntaxError, "expected INSERT INTO name [(columns)] VALUES (…)")
	}
	np, err := numberMarkers(ins, rw, text, toks)
	if err != nil {
		return nil, 0, err
	}
	return ins, np, nil
}

// tidbParsers holds TiDB parsers for reuse: making one costs about as
// much as parsing a short statement. The trees a parser returns stay
// valid after it parses again (TiDB's sessions keep them the same way).
var tidbParsers = sync.Pool{New: func() any {
	p := tidb.New()
	// ksqlDB string literals have no backslash escapes ('' is a quote).
	p.SetSQLMode(mysql.ModeANSIQuotes | mysql.ModePipesAsConcat | mysql.ModeNoBackslashEscapes)
	return p
}}

var tidbIllegalDouble = regexp.MustCompile(`Illegal double '([^']*)'`)

var tidbErrPos = regexp.MustCompile(`line (\d+) column (\d+) near "((?s).*)"`)

// parseTiDB parses one rewritten statement with TiDB in ANSI_QUOTES mode
// and turns its errors into ours, positioned in orig, the user's text.
func parseTiDB(rw rewritten, orig string) (st ast.StmtNode, err error) {
	text := rw.text
	p := tidbParsers.Get().(*tidb.Parser)
	// TiDB's literal driver panics on some inputs (a decimal literal of
	// more than 81 digits); the statement is refused, the server lives on
	// (and the parser, in an unknown state, is not reused).
	defer func() {
		if r := recover(); r != nil {
			st, err = nil, Errorf(CodeSyntaxError, "syntax error: the statement cannot be parsed (%v)", r)
		}
	}()
	st, err = p.ParseOneStmt(text, "", "")
	tidbParsers.Put(p)
	if err == nil {
		if hasAggFilter(rw) {
			if n, ok := st.Accept(aggFilterUnwrapper{}); ok {
				st = n.(ast.StmtNode)
			}
		}
		return st, nil
	}
	if m := tidbIllegalDouble.FindStringSubmatch(err.Error()); m != nil {
		// A DOUBLE literal beyond the type's range, with its sign.
		lit := m[1]
		if i := strings.Index(orig, lit); i >= 0 {
			if before := strings.TrimRight(orig[:i], " \t\n"); strings.HasSuffix(before, "-") {
				lit = "-" + lit
			}
			return nil, errorAt(orig, i, CodeSyntaxError, "Number overflows DOUBLE: %s", lit)
		}
		return nil, Errorf(CodeSyntaxError, "Number overflows DOUBLE: %s", lit)
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
	pos = rw.orig(pos)
	tok := near
	if ts := lex(orig[pos:]); len(ts) > 0 && ts[0].kind != tEOF {
		tok = orig[pos+ts[0].pos : pos+ts[0].end]
	} else if f := strings.Fields(near); len(f) > 0 {
		tok = f[0]
	}
	if ts := lex(orig[:pos]); len(ts) >= 4 && isPunct(ts[len(ts)-2], "(") {
		// ts ends with EOF; the tokens before the error's:
		switch prev := ts[len(ts)-3]; {
		case tok == ")" && strings.EqualFold(prev.text, "BY") && strings.EqualFold(ts[len(ts)-4].text, "PARTITION"):
			return nil, errorAt(orig, pos, CodeSyntaxError, "PARTITION BY requires at least one expression: syntax error at or near %q", tok)
		case tok == "*" && prev.kind == tIdent:
			// F(*): ksqlDB reads it as F() (COUNT(*) parses).
			return nil, errorAt(orig, pos, CodeSyntaxError, "Function '%s' does not accept parameters (). Syntax error at or near %q", strings.ToUpper(prev.text), tok)
		}
	}
	if ts := lex(orig[:pos]); len(ts) >= 2 && strings.EqualFold(ts[len(ts)-2].text, "LIMIT") {
		// ts ends with EOF: the token before the error's is LIMIT.
		switch _, ferr := strconv.ParseFloat(tok, 64); {
		case tok == "-":
			return nil, errorAt(orig, pos, CodeSyntaxError, "syntax error at or near %q: Pull queries don't support negative integers in the LIMIT clause. See https://cnfl.io/queries for more info.", tok)
		case ferr == nil:
			return nil, errorAt(orig, pos, CodeSyntaxError, "syntax error at or near %q: Failed to prepare statement: Value must be integer for command: LIMIT", tok)
		default:
			// ksqlDB's grammar words it so.
			return nil, errorAt(orig, pos, CodeSyntaxError, "Syntax Error: LIMIT takes a whole number, not %q", tok)
		}
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

// parsePartitionBy parses the PARTITION BY expressions by handing TiDB a
// SELECT of them.
func (sel *Select) parsePartitionBy() error {
	toks := sel.toks
	from, to := sel.partitionBy, sel.partitionEnd
	if from >= to {
		return errorAt(sel.text, toks[from].pos, CodeSyntaxError, "syntax error: PARTITION BY needs an expression")
	}
	// Rewrite "SELECT <expr>" over the statement text: blank all but the
	// expression, which keeps positions.
	r := newRewriter(sel.text)
	r.replace(0, toks[from].pos, "SELECT ")
	if err := r.rewriteExprs(toks, from, to); err != nil {
		return err
	}
	r.replace(toks[to-1].end, len(sel.text), "")
	st, err := parseTiDB(r.apply(), sel.text)
	if err != nil {
		return err
	}
	s, ok := st.(*ast.SelectStmt)
	if !ok || s.From != nil {
		return errorAt(sel.text, toks[from].pos, CodeSyntaxError, "syntax error: PARTITION BY takes a list of expressions")
	}
	for _, f := range s.Fields.Fields {
		if f.Expr == nil || f.AsName.O != "" {
			return errorAt(sel.text, toks[from].pos, CodeSyntaxError, "syntax error: PARTITION BY takes a list of expressions")
		}
		sel.partitionExprs = append(sel.partitionExprs, f.Expr)
	}
	return nil
}
