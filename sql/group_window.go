package sql

import (
	"strings"
)

// Flink's legacy group windows, as Nexmark q11 writes them:
//
//	SELECT k, COUNT(*), SESSION_START(ts, INTERVAL '10' SECOND) AS s,
//	       SESSION_END(ts, INTERVAL '10' SECOND) AS e
//	FROM s GROUP BY k, SESSION(ts, INTERVAL '10' SECOND)
//
// with TUMBLE(ts, size) and HOP(ts, slide, size) too, and the auxiliary
// functions X_START, X_END and X_ROWTIME (X_END - 1 ms). They are the
// window table function over the FROM stream in another spelling:
// groupWindows finds them before the statement goes to TiDB, the GROUP BY
// call becomes window_start, window_end and each auxiliary call
// window_start, window_end or (window_end - 1), and the SELECT gets the
// windowTVF a FROM TABLE(X(TABLE s, DESCRIPTOR(ts), …)) would give it, so
// that tvfColumns and the binder treat both alike (Flink's window ends:
// start + size, a session's last row + the gap). The time column (ts or
// alias.ts) is the event time, as with DESCRIPTOR.
//
// Refused, each with its position: a group window over a derived table,
// a view or CTE (tvfOverDerived) or a window table function, two in one GROUP BY, an auxiliary function
// whose window is not its SELECT's GROUP BY window, X_PROCTIME, and a
// time column qualified by another name than the FROM stream's.

// groupWindowEdit replaces the tokens up to end (exclusive) by text.
type groupWindowEdit struct {
	end  int
	text string
}

// groupWindowSet is what groupWindows finds: the outermost SELECT's
// window, those of derived tables and CTEs (claimed as nested window
// table functions), and the text edits by token index.
type groupWindowSet struct {
	top    *windowTVF
	nested []*windowTVF
	edits  map[int]groupWindowEdit
}

// groupWindowAux are the auxiliary functions and what each becomes.
var groupWindowAux = map[string]string{"START": "window_start", "END": "window_end", "ROWTIME": "(window_end - 1)"}

// groupWindows finds the legacy group windows of the statement whose
// tokens start at toks[start].
func groupWindows(text string, toks []token, start int) (*groupWindowSet, error) {
	set := &groupWindowSet{edits: map[int]groupWindowEdit{}}
	depth := make([]int, len(toks))
	d := 0
	for i := start; i < len(toks); i++ {
		depth[i] = d
		switch {
		case isPunct(toks[i], "("), isPunct(toks[i], "["):
			d++
		case isPunct(toks[i], ")"), isPunct(toks[i], "]"):
			d--
		}
	}
	bySelect := map[int]*windowTVF{} // by the SELECT's token index
	for i := start; i+1 < len(toks) && toks[i].kind != tEOF; i++ {
		if !toks[i].is("GROUP") || !toks[i+1].is("BY") {
			continue
		}
		for j := i + 2; ; {
			t := toks[j]
			if _, ok := tvfNames[t.text]; ok && t.kind == tIdent && isPunct(toks[j+1], "(") {
				end := match(toks, j+1) + 1
				if end > j+1 && itemEnds(toks[end]) {
					tv, err := parseGroupWindow(text, toks, j, start)
					if err != nil {
						return nil, err
					}
					sel := sameLevelBack(toks, i, "SELECT", start)
					if prev := bySelect[sel]; prev != nil {
						return nil, errorAt(text, t.pos, CodeSyntaxError, "syntax error: a GROUP BY takes one window (%s(…) is another)", prev.fn)
					}
					if err := tv.source(text, toks, i, start); err != nil {
						return nil, err
					}
					bySelect[sel] = tv
					set.edits[j] = groupWindowEdit{end: end, text: "window_start, window_end"}
					if sel >= 0 && depth[sel] == 0 {
						if set.top != nil {
							return nil, errorAt(text, t.pos, CodeSyntaxError, "syntax error: a SELECT takes one window (a window table function or a WINDOW clause)")
						}
						set.top = tv
					} else {
						tv.selectPos = -1
						if sel >= 0 {
							tv.selectPos = toks[sel].pos
						}
						set.nested = append(set.nested, tv)
					}
				}
			}
			// the next item at this depth, or the GROUP BY's end
			k := j
			for ; toks[k].kind != tEOF; k++ {
				if isPunct(toks[k], "(") {
					if m := match(toks, k); m > k {
						k = m
						continue
					}
					break
				}
				if isPunct(toks[k], ",") || itemEnds(toks[k]) {
					break
				}
			}
			if !isPunct(toks[k], ",") {
				break
			}
			j = k + 1
		}
	}
	for i := start; i+1 < len(toks) && toks[i].kind != tEOF; i++ {
		t := toks[i]
		fn, aux, ok := strings.Cut(t.text, "_")
		if t.kind != tIdent || !ok || !isPunct(toks[i+1], "(") {
			continue
		}
		typ, isWindow := tvfNames[fn]
		if !isWindow {
			continue
		}
		repl, isAux := groupWindowAux[aux]
		if !isAux {
			if aux == "PROCTIME" {
				return nil, errorAt(text, t.pos, CodeFeatureNotSupport, "%s is not supported: windows are of event time (%s_ROWTIME is the window's last millisecond)", t.text, fn)
			}
			continue
		}
		sel := sameLevelOut(toks, i, start)
		tv := bySelect[sel]
		if tv == nil {
			return nil, errorAt(text, t.pos, CodeSyntaxError, "syntax error: %s(…) needs GROUP BY %s(…) in its SELECT", t.text, fn)
		}
		p := &parser{text: text, toks: toks, i: i + 2}
		_, col, colTok, err := qualifiedColumn(p)
		if err != nil {
			return nil, err
		}
		w, err := parseWindowArgs(p, t.text, typ, t.pos)
		if err != nil {
			return nil, err
		}
		if typ != tv.window.typ || col != tv.timeCol || w.size != tv.window.size || w.advance != tv.window.advance {
			return nil, errorAt(text, t.pos, CodeSyntaxError, "syntax error: %s(%s, …) must repeat the GROUP BY's window, %s(%s, %s)", t.text, text[colTok.pos:colTok.end], tv.fn, tv.timeCol, tv.args())
		}
		set.edits[i] = groupWindowEdit{end: p.i, text: repl}
		i = p.i - 1
	}
	return set, nil
}

// itemEnds reports whether t ends a GROUP BY's items.
func itemEnds(t token) bool {
	switch {
	case t.kind == tEOF, isPunct(t, ","), isPunct(t, ")"), isPunct(t, ";"):
		return true
	}
	for _, kw := range []string{"HAVING", "EMIT", "LIMIT", "ORDER", "WINDOW", "UNION", "EXCEPT", "INTERSECT", "PARTITION"} {
		if t.is(kw) {
			return true
		}
	}
	return false
}

// sameLevelBack is the index of the nearest keyword kw before toks[i] in
// the same parentheses, or -1.
func sameLevelBack(toks []token, i int, kw string, start int) int {
	d := 0
	for k := i - 1; k >= start; k-- {
		switch t := toks[k]; {
		case isPunct(t, ")"):
			d++
		case isPunct(t, "("):
			if d == 0 {
				return -1
			}
			d--
		case d == 0 && t.is(kw):
			return k
		}
	}
	return -1
}

// sameLevelOut is the index of the SELECT whose query holds toks[i], in
// its parentheses or outside them (a function's argument is its
// SELECT's), or -1.
func sameLevelOut(toks []token, i int, start int) int {
	d := 0
	for k := i - 1; k >= start; k-- {
		switch t := toks[k]; {
		case isPunct(t, ")"):
			d++
		case isPunct(t, "("):
			if d > 0 {
				d--
			}
		case d == 0 && t.is("SELECT"):
			return k
		}
	}
	return -1
}

// qualifiedColumn reads a column, col or qualifier.col.
func qualifiedColumn(p *parser) (qual, col string, at token, err error) {
	col, at, err = p.ident("the time column")
	if err != nil {
		return "", "", at, err
	}
	if p.acceptPunct(".") {
		qual = col
		if col, at, err = p.ident("the time column"); err != nil {
			return "", "", at, err
		}
	}
	return qual, col, at, nil
}

// parseGroupWindow reads the GROUP BY's TUMBLE(col, size), HOP(col,
// slide, size) or SESSION(col, gap) at toks[i].
func parseGroupWindow(text string, toks []token, i, start int) (*windowTVF, error) {
	fn := toks[i]
	typ := tvfNames[fn.text]
	p := &parser{text: text, toks: toks, i: i + 2}
	tv := &windowTVF{fn: fn.text, pos: fn.pos, startPos: fn.pos, legacy: true}
	if p.peek().is("TABLE") {
		return nil, p.errorf(p.peek(), "syntax error: %s(TABLE …) is a window table function: it goes in FROM, not in GROUP BY", fn.text)
	}
	qual, col, at, err := qualifiedColumn(p)
	if err != nil {
		return nil, err
	}
	if !isPunct(p.peek(), ",") {
		return nil, p.unexpected(p.peek(), "\",\" and the window's interval after the time column")
	}
	tv.timeCol, tv.timePos, tv.qualifier = col, at.pos, qual
	w, err := parseWindowArgs(p, fn.text, typ, fn.pos)
	if err != nil {
		return nil, err
	}
	tv.window = w
	return tv, nil
}

// source finds the stream the window reads: the FROM of the SELECT
// whose GROUP BY is at toks[group], a stream's name and maybe an alias.
func (tv *windowTVF) source(text string, toks []token, group, start int) error {
	from := sameLevelBack(toks, group, "FROM", start)
	if from < 0 {
		return errorAt(text, tv.pos, CodeSyntaxError, "syntax error: GROUP BY %s(…) needs a FROM stream", tv.fn)
	}
	name := from + 1
	if windowTVFAt(toks, name) {
		return errorAt(text, tv.pos, CodeSyntaxError, "syntax error: a SELECT takes one window (a window table function or a WINDOW clause)")
	}
	if t := toks[name]; t.kind != tIdent && t.kind != tQuoted {
		return errorAt(text, tv.pos, CodeFeatureNotSupport, "GROUP BY %s(…) reads a stream by its name (FROM s): a derived table is not supported, window it with %s(TABLE s, DESCRIPTOR(col), …) inside", tv.fn, tv.fn)
	}
	tv.name = name
	if tv.qualifier == "" {
		return nil
	}
	alias := toks[name+1]
	if alias.is("AS") {
		alias = toks[name+2]
	}
	if tv.qualifier == toks[name].text || (alias.kind == tIdent || alias.kind == tQuoted) && tv.qualifier == alias.text {
		return nil
	}
	return errorAt(text, tv.timePos, CodeUndefinedColumn, "%s(%s.%s, …): the window's time column is the FROM stream's, %s", tv.fn, tv.qualifier, tv.timeCol, text[toks[name].pos:toks[name].end])
}
