package sql

import (
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// Window table functions, in the forms Flink SQL and RisingWave document:
//
//	FROM TABLE(TUMBLE(TABLE s, DESCRIPTOR(col), size))
//	FROM TABLE(HOP(TABLE s, DESCRIPTOR(col), slide, size))
//	FROM TABLE(SESSION(TABLE s, DESCRIPTOR(col), gap))
//	FROM TUMBLE(s, col, size)          (RisingWave; HOP(s, col, slide, size) too)
//
// where size, slide and gap are INTERVAL 'n' unit (or INTERVAL n unit, or
// INTERVAL 'n unit'). TiDB parses none of it: selectStmt cuts the call out
// of the text around the source's name, so TiDB sees FROM s, and records
// the window as if the statement had a WINDOW clause (TUMBLING, HOPPING
// or SESSION, default grace and retention, EMIT FINAL as there). The
// DESCRIPTOR column is the event time, as a source's TIMESTAMP property
// would make it. The function's window_start and window_end columns are
// the aggregation's WINDOWSTART and WINDOWEND (BIGINT epoch
// milliseconds), so the result is grouped by them: GROUP BY window_start,
// window_end, k. Their ends are Flink's: exclusive, start + size for
// TUMBLE and HOP, the last row's time + the gap for SESSION (ksqlDB's
// WINDOWEND is the last row's time; window_end reads WINDOWEND + gap). In a derived table or CTE the call is cut out the same
// way and its SELECT claims it when bound (Select.nestedTVFs): such an
// aggregation may be aggregated again by its window, or joined.
//
// Refused, each with its position: an offset argument, SESSION's
// PARTITION BY, named arguments, a window table function without GROUP BY
// (each row with its window), in a join or over a table, a GROUP BY of
// the window columns alone (a global windowed aggregate), window_start or
// window_end in WHERE, and intervals of months or years.

// windowTVF is a parsed window table function call.
type windowTVF struct {
	fn       string // TUMBLE, HOP or SESSION
	pos      int    // offset of the function's name
	name     int    // index of the source's name token
	timeCol  string // the DESCRIPTOR column
	timePos  int
	window   *windowClause
	startPos int // offset of TABLE( or of the function's name
	// selectPos is the offset of the SELECT whose FROM it is, for one in
	// a derived table or CTE (Select.nestedTVFs); claimed is set when
	// that SELECT is bound.
	selectPos int
	claimed   bool
	// legacy is set for Flink's group window (GROUP BY TUMBLE(col, …),
	// group_window.go), whose time column may be qualified.
	legacy    bool
	qualifier string
}

// enclosingSelect is the offset of the SELECT keyword of the query
// whose FROM is toks[from]: the nearest SELECT before it in the same
// parentheses.
func enclosingSelect(toks []token, from int) int {
	d := 0
	for k := from - 1; k >= 0; k-- {
		switch t := toks[k]; {
		case isPunct(t, ")"):
			d++
		case isPunct(t, "("):
			if d == 0 {
				return -1
			}
			d--
		case d == 0 && t.is("SELECT"):
			return t.pos
		}
	}
	return -1
}

// claimTVF gives sub, the SELECT of a derived table or CTE (its
// statement inner), the window table function in its FROM, if any.
func (sel *Select) claimTVF(sub *Select, inner *ast.SelectStmt) error {
	if len(sel.nestedTVFs) == 0 || len(inner.Fields.Fields) == 0 {
		return nil
	}
	at := sel.rw.orig(inner.Fields.Fields[0].Offset)
	pos := -1
	for _, t := range sel.toks {
		if t.pos < at && t.is("SELECT") {
			pos = t.pos
		}
	}
	for _, tv := range sel.nestedTVFs {
		if tv.selectPos == pos && pos >= 0 {
			sub.tvf, sub.window = tv, tv.window
			if tv.claimed {
				return nil // a CTE's query bound again: its AST is mapped
			}
			tv.claimed = true
			return sub.tvfColumns()
		}
	}
	return nil
}

// unclaimedTVF refuses a window table function in a derived table or
// CTE that no SELECT took (one in a UNION ALL branch, a join, a
// subquery of an expression).
func (sel *Select) unclaimedTVF() error {
	for _, tv := range sel.nestedTVFs {
		if !tv.claimed {
			return errorAt(sel.text, tv.pos, CodeFeatureNotSupport, "%s is supported in the FROM of a query, derived table or CTE that aggregates it (GROUP BY window_start, window_end, …)", tv.fn)
		}
	}
	return nil
}

// tvfNames are the window table functions.
var tvfNames = map[string]types.WindowType{"TUMBLE": types.Tumbling, "HOP": types.Hopping, "SESSION": types.Session}

// windowTVFAt reports whether a window table function call starts at
// toks[i] (after FROM).
func windowTVFAt(toks []token, i int) bool {
	if toks[i].is("TABLE") && isPunct(toks[i+1], "(") {
		i += 2
	}
	_, ok := tvfNames[toks[i].text]
	return ok && toks[i].kind == tIdent && isPunct(toks[i+1], "(")
}

// parseWindowTVF reads a window table function call starting at toks[i]
// and returns it and the index after it.
func parseWindowTVF(text string, toks []token, i int) (*windowTVF, int, error) {
	p := &parser{text: text, toks: toks, i: i}
	tv := &windowTVF{startPos: toks[i].pos}
	wrapped := p.accept("TABLE")
	if wrapped {
		if err := p.expectPunct("("); err != nil {
			return nil, 0, err
		}
	}
	fn := p.next()
	tv.fn, tv.pos = fn.text, fn.pos
	typ := tvfNames[fn.text]
	if err := p.expectPunct("("); err != nil {
		return nil, 0, err
	}
	if p.peekAt(1).kind == tPunct && p.peekAt(1).text == "=>" {
		return nil, 0, p.errorf(p.peek(), "syntax error: %s takes its arguments by position (TABLE s, DESCRIPTOR(col), …), not by name", tv.fn)
	}
	flink := p.accept("TABLE")
	if t := p.peek(); t.kind != tIdent && t.kind != tQuoted {
		return nil, 0, p.unexpected(t, "the stream's name (TABLE name)")
	}
	tv.name = p.i
	p.i++
	if p.peek().is("PARTITION") {
		return nil, 0, p.errorf(p.peek(), "syntax error: %s(TABLE … PARTITION BY …) is not supported: a window's rows are grouped by the GROUP BY columns", tv.fn)
	}
	if err := p.expectPunct(","); err != nil {
		return nil, 0, err
	}
	if p.accept("DESCRIPTOR") {
		if err := p.expectPunct("("); err != nil {
			return nil, 0, err
		}
		col, t, err := p.ident("the time column")
		if err != nil {
			return nil, 0, err
		}
		tv.timeCol, tv.timePos = col, t.pos
		if p.peek().kind == tPunct && p.peek().text == "," {
			return nil, 0, p.errorf(p.peek(), "syntax error: DESCRIPTOR names one time column")
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, 0, err
		}
	} else if flink {
		return nil, 0, p.unexpected(p.peek(), "DESCRIPTOR(time column)")
	} else {
		col, t, err := p.ident("the time column")
		if err != nil {
			return nil, 0, err
		}
		tv.timeCol, tv.timePos = col, t.pos
	}
	w, err := parseWindowArgs(p, tv.fn, typ, fn.pos)
	if err != nil {
		return nil, 0, err
	}
	if wrapped {
		if err := p.expectPunct(")"); err != nil {
			return nil, 0, err
		}
	}
	tv.window = w
	return tv, p.i, nil
}

// parseWindowArgs reads a window function's durations after its time
// column (", size", ", slide, size" for HOP, ", gap" for SESSION) and
// the closing parenthesis.
func parseWindowArgs(p *parser, fn string, typ types.WindowType, pos int) (*windowClause, error) {
	w := &windowClause{typ: typ, pos: pos, size: -1, advance: -1, retention: -1, grace: -1}
	var durs []int64
	for p.acceptPunct(",") {
		at := p.peek()
		d, err := parseInterval(p)
		if err != nil {
			return nil, err
		}
		durs = append(durs, d)
		want := 1
		if typ == types.Hopping {
			want = 2
		}
		if len(durs) > want {
			what := "an offset (windows align to the epoch)"
			if typ == types.Session {
				what = "more than the gap"
			}
			return nil, p.errorf(at, "syntax error: %s with %s is not supported", fn, what)
		}
	}
	switch {
	case typ == types.Hopping && len(durs) == 2:
		w.advance, w.size = durs[0], durs[1] // HOP(data, timecol, slide, size)
	case typ != types.Hopping && len(durs) == 1:
		w.size = durs[0]
	default:
		want := "the window size (INTERVAL 'n' unit)"
		switch typ {
		case types.Hopping:
			want = "the slide and the size (INTERVAL 'n' unit, INTERVAL 'n' unit)"
		case types.Session:
			want = "the session gap (INTERVAL 'n' unit)"
		}
		return nil, p.errorf(p.peek(), "syntax error: %s needs %s after the time column", fn, want)
	}
	if err := p.expectPunct(")"); err != nil {
		return nil, err
	}
	return w, nil
}

// parseInterval reads INTERVAL 'n' unit, INTERVAL n unit or
// INTERVAL 'n unit' into milliseconds. Months and years have no fixed
// length and are refused.
func parseInterval(p *parser) (int64, error) {
	kw := p.peek()
	if !kw.is("INTERVAL") {
		return 0, p.unexpected(kw, "an interval (INTERVAL 'n' unit)")
	}
	p.i++
	t := p.peek()
	num, unit := t.text, ""
	unitTok := t
	switch t.kind {
	case tNumber:
		p.i++
	case tString:
		p.i++
		if f := strings.Fields(t.text); len(f) == 2 {
			num, unit = f[0], strings.ToUpper(f[1])
		} else {
			num = strings.TrimSpace(t.text)
		}
	default:
		return 0, p.unexpected(t, "the interval's length ('n' or n)")
	}
	if unit == "" {
		unitTok = p.peek()
		if unitTok.kind != tIdent {
			return 0, p.unexpected(unitTok, "a time unit (SECOND, MINUTE, HOUR, DAY or MILLISECOND)")
		}
		unit = unitTok.text
		p.i++
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, p.errorf(t, "syntax error: an interval's length is a whole number, not %s", num)
	}
	ms, ok := windowUnits[unit]
	if !ok {
		switch unit {
		case "MONTH", "MONTHS", "YEAR", "YEARS", "WEEK", "WEEKS":
			return 0, p.errorf(unitTok, "INTERVAL of %s is not supported: use DAY, HOUR, MINUTE, SECOND or MILLISECOND", unit)
		}
		return 0, p.unexpected(unitTok, "a time unit (SECOND, MINUTE, HOUR, DAY or MILLISECOND)")
	}
	if n > (1<<62)/ms {
		return 0, p.errorf(t, "interval %d %s is too large", n, unit)
	}
	return n * ms, nil
}

// cutWindowTVF edits the statement so that TiDB sees only the source's
// name where the call was (positions in between are kept by the
// rewriter).
func (tv *windowTVF) cut(r *rewriter, toks []token, end int) error {
	name := toks[tv.name]
	r.replace(tv.startPos, name.pos, " ")
	if err := r.rewriteExprs(toks, tv.name, tv.name+1); err != nil {
		return err
	}
	r.replace(name.end, toks[end-1].end, " ")
	return nil
}

// tvfColumns maps a window table function's columns onto the window
// aggregation's: window_start and window_end leave GROUP BY (the window
// groups), and in the SELECT list and HAVING they read WINDOWSTART and
// WINDOWEND, keeping their names.
func (sel *Select) tvfColumns() error {
	tv, s := sel.tvf, sel.stmt
	at := func(format string, args ...any) error {
		return errorAt(sel.text, tv.pos, CodeFeatureNotSupport, format, args...)
	}
	if s.From != nil && s.From.TableRefs != nil && s.From.TableRefs.Right != nil {
		if tv.legacy {
			return at("GROUP BY %s(…) windows one stream, not a join: aggregate it (CREATE TABLE … AS SELECT … GROUP BY k, %s(…)) and join the results", tv.fn, tv.fn)
		}
		return at("a window table function cannot be joined: aggregate it (CREATE TABLE … AS SELECT … GROUP BY window_start, window_end, …) and join the results")
	}
	if s.Where != nil {
		if pos := sel.windowColumnIn(s.Where); pos >= 0 {
			return errorAt(sel.text, pos, CodeFeatureNotSupport, "window_start and window_end exist after the window's aggregation: use them in the SELECT list or HAVING, not in WHERE")
		}
	}
	if s.GroupBy == nil {
		return at("%s is supported as the input of an aggregation: GROUP BY window_start, window_end and the grouping columns", tv.fn)
	}
	var keep []*ast.ByItem
	seen := map[string]bool{}
	for _, item := range s.GroupBy.Items {
		if cn, ok := unparen(item.Expr).(*ast.ColumnNameExpr); ok {
			if n := strings.ToUpper(cn.Name.Name.O); n == "WINDOW_START" || n == "WINDOW_END" {
				seen[n] = true
				continue
			}
		}
		keep = append(keep, item)
	}
	groupPos := sel.keywordPos("GROUP", tv.pos)
	if !seen["WINDOW_START"] || !seen["WINDOW_END"] {
		return errorAt(sel.text, groupPos, CodeFeatureNotSupport, "an aggregation over %s groups by its window: GROUP BY window_start, window_end and the grouping columns", tv.fn)
	}
	if len(keep) == 0 && tv.legacy {
		return errorAt(sel.text, tv.pos, CodeFeatureNotSupport, "GROUP BY %s(…) needs a grouping column as well: a windowed aggregate without a key is not supported", tv.fn)
	}
	if len(keep) == 0 {
		// A global windowed aggregate: one group per window, keyed by a
		// constant (KSQL_GLOBAL, internal) and the window.
		keep = []*ast.ByItem{{Expr: ast.NewValueExpr(int64(0), "", ""), NullOrder: true}}
		sel.global = true
	}
	s.GroupBy.Items = keep
	for _, f := range s.Fields.Fields {
		if f.Expr == nil {
			continue
		}
		if cn, ok := unparen(f.Expr).(*ast.ColumnNameExpr); ok && f.AsName.O == "" {
			if n := strings.ToUpper(cn.Name.Name.O); n == "WINDOW_START" || n == "WINDOW_END" {
				f.AsName = ast.NewCIStr(n)
			}
		}
		f.Expr = renameWindow(f.Expr, tv.window)
	}
	if s.Having != nil {
		s.Having.Expr = renameWindow(s.Having.Expr, tv.window)
	}
	return nil
}

// renameWindow makes window_start and window_end in e read the window
// bounds of w's aggregation.
func renameWindow(e ast.ExprNode, w *windowClause) ast.ExprNode {
	r := windowRenamer{}
	if w.typ == types.Session {
		r.sessionGap = w.size
	}
	n, _ := e.Accept(r)
	return n.(ast.ExprNode)
}

// keywordPos is the offset of the first keyword kw after from, or from.
func (sel *Select) keywordPos(kw string, from int) int {
	for _, t := range sel.toks {
		if t.pos > from && t.is(kw) {
			return t.pos
		}
	}
	return from
}

// windowColumnIn returns the position of a window_start or window_end
// in n, or -1.
func (sel *Select) windowColumnIn(n ast.ExprNode) int {
	found := false
	n.Accept(&windowFinder{found: &found})
	if !found {
		return -1
	}
	for _, t := range sel.toks {
		if t.is("WINDOW_START") || t.is("WINDOW_END") {
			return t.pos
		}
	}
	return 0
}

type windowFinder struct{ found *bool }

func (v *windowFinder) Enter(n ast.Node) (ast.Node, bool) {
	if cn, ok := n.(*ast.ColumnNameExpr); ok {
		if n := strings.ToUpper(cn.Name.Name.O); n == "WINDOW_START" || n == "WINDOW_END" {
			*v.found = true
		}
	}
	return n, *v.found
}

func (v *windowFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// windowRenamer makes window_start and window_end read the window
// bounds. A SESSION window's window_end is Flink's, its last row's time
// plus the gap (the window is [first, last + gap)), where ksqlDB's
// WINDOWEND is the last row's time: with sessionGap set, window_end
// reads WINDOWEND + gap.
type windowRenamer struct{ sessionGap int64 }

func (r windowRenamer) Enter(n ast.Node) (ast.Node, bool) {
	if cn, ok := n.(*ast.ColumnNameExpr); ok {
		switch strings.ToUpper(cn.Name.Name.O) {
		case "WINDOW_START":
			cn.Name.Name = ast.NewCIStr(types.WindowStart)
		case "WINDOW_END":
			cn.Name.Name = ast.NewCIStr(types.WindowEnd)
			if r.sessionGap > 0 {
				return &ast.BinaryOperationExpr{Op: opcode.Plus, L: cn, R: ast.NewValueExpr(r.sessionGap, "", "")}, true
			}
		}
	}
	return n, false
}

func (r windowRenamer) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// tvfNode checks the window table function's source and time column
// and returns its node over scan.
func (sel *Select) tvfNode(scan *planner.Scan) (planner.Node, error) {
	tv, src := sel.tvf, scan.Source
	if src.Kind == catalog.Table {
		return nil, errorAt(sel.text, sel.toks[tv.name].pos, CodeFeatureNotSupport, "%s reads a stream: %s is a table", tv.fn, src.Name)
	}
	if src.Windowed() {
		return nil, errorAt(sel.text, sel.toks[tv.name].pos, CodeFeatureNotSupport, "%s reads a stream without windows: %s is windowed", tv.fn, src.Name)
	}
	node := &planner.WindowTVF{Input: scan, Fn: tv.fn, Args: tv.args()}
	col := tv.timeCol
	if col == "ROWTIME" && src.Schema.Index(col) < 0 {
		return node, nil
	}
	i := src.Schema.Index(col)
	what := "DESCRIPTOR(" + col + ")"
	if tv.legacy {
		what = tv.fn + "(" + col + ", …)"
	}
	if i < 0 {
		return nil, errorAt(sel.text, tv.timePos, CodeUndefinedColumn, "%s: %s has no column %s", what, src.Name, col)
	}
	node.TimeColumn = col
	if col == src.TimestampColumn {
		return node, nil // with its TIMESTAMP_FORMAT
	}
	switch t := src.Schema.Columns[i].Type; t.Kind {
	case types.Bigint, types.Timestamp:
	default:
		return nil, errorAt(sel.text, tv.timePos, CodeDatatypeMismatch, "%s: the time column must be BIGINT (epoch milliseconds) or TIMESTAMP, not %s", what, t)
	}
	if src.Schema.Columns[i].Key {
		return nil, errorAt(sel.text, tv.timePos, CodeFeatureNotSupport, "%s: the time column must be a value column, not a key column", what)
	}
	return node, nil
}

// tvfOverDerived refuses a window function whose FROM names a view or a
// CTE: the DESCRIPTOR column becomes the event time of a stream's scan
// (WindowTVFToEventTime), which a derived query's column cannot be.
func (sel *Select) tvfOverDerived() error {
	tv := sel.tvf
	name := sel.text[sel.toks[tv.name].pos:sel.toks[tv.name].end]
	return errorAt(sel.text, sel.toks[tv.name].pos, CodeFeatureNotSupport, "%s reads a stream by name: %s is a view or CTE (create it as a stream, CREATE STREAM %s AS SELECT …, and window that)", tv.fn, name, name)
}

// args renders the function's durations for EXPLAIN.
func (tv *windowTVF) args() string {
	w := tv.window
	if w.typ == types.Hopping {
		return "INTERVAL '" + planner.FormatDuration(w.advance) + "', INTERVAL '" + planner.FormatDuration(w.size) + "'"
	}
	return "INTERVAL '" + planner.FormatDuration(w.size) + "'"
}
