package sql

import (
	"sort"
	"strings"

	tidb "github.com/pingcap/tidb/pkg/parser"
)

// The TiDB parser is sqlstreams' one expression grammar, but ksqlDB users
// write forms it lacks. Before a SELECT or INSERT reaches TiDB, its tokens
// are rewritten into forms TiDB parses and the binder recognizes:
//
//	arr[i]                    __SUBSCRIPT(arr, i)
//	col->field                __FIELD(col, 'FIELD')
//	ARRAY[a, b]               __ARRAY(a, b)
//	MAP(k := v, …)            __MAP(k, v, …)
//	STRUCT(f := v, …)         __STRUCT('F', v, …)
//	CAST(x AS type)           __CAST(x, 'type')
//	x::type                   __CAST(x, 'type')   (Postgres's cast; its type
//	                          names as ours: int4 INT, text STRING, …)
//	x => body, (x, y) => body __LAMBDA(X, body), __LAMBDA(X, Y, body)
//	SPLIT(s, ',')             __SPLIT(s, ',')   (a TiDB keyword)
//	DATEADD(DAYS, 1, d)       __DATEADD('DAYS', 1, d)   (also DATESUB, TIMEADD,
//	                          TIMESUB, TIMESTAMPADD, TIMESTAMPSUB)
//	PROCTIME()                FROM_UNIXTIME(UNIX_TIMESTAMP())   (Flink's
//	                          processing time: the wall clock, a TIMESTAMP)
//	a IS DISTINCT FROM b      a REGEXP b        (REGEXP itself is refused)
//	a IS NOT DISTINCT FROM b  a NOT REGEXP b
//	agg(x) FILTER (WHERE c)   __AGG_FILTER(agg(x), c)   (then, in the tree,
//	                          agg(CASE WHEN c THEN x END): aggfilter.go)
//	KEY, WINDOW, … as names   `KEY`, `WINDOW`, …
//	unquoted identifiers      upper-cased
//
// Every edit remembers where in the user's text it came from, so errors
// TiDB reports in the rewritten text point at the user's text.

// reservedNames are the words TiDB reserves that are not keywords of the
// ksqlDB expression language: ksqlDB users write them as column names
// (KEY, WINDOW, DEC, …), so used as names (not followed by "(") they are
// quoted before TiDB sees them.
var reservedNames = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range tidb.Keywords {
		if k.Reserved && !ksqlKeywords[k.Word] {
			m[k.Word] = true
		}
	}
	// Aliases TiDB's lexer reserves that its keyword list leaves out
	// (found by parsing each as a column name).
	for _, w := range strings.Fields(`DEC INT1 INT2 INT3 INT4 INT8 MIDDLEINT FLOAT4 FLOAT8 NATURAL
		STRAIGHT_JOIN SQL_CALC_FOUND_ROWS SQL_SMALL_RESULT SQL_BIG_RESULT SQL_BUFFER_RESULT
		SQL_CACHE SQL_NO_CACHE LOW_PRIORITY HIGH_PRIORITY DELAYED BOTH LEADING TRAILING
		ZEROFILL UNSIGNED REPLACE`) {
		m[w] = true
	}
	return m
}()

// ksqlKeywords are the words the SELECT grammar uses as keywords; they stay
// unquoted.
var ksqlKeywords = map[string]bool{
	"SELECT": true, "FROM": true, "WHERE": true, "AND": true, "OR": true, "NOT": true, "IN": true,
	"IS": true, "NULL": true, "TRUE": true, "FALSE": true, "CASE": true, "WHEN": true, "THEN": true,
	"ELSE": true, "AS": true, "BY": true, "GROUP": true, "HAVING": true, "LIMIT": true, "LIKE": true,
	"BETWEEN": true, "DISTINCT": true, "JOIN": true, "INNER": true, "LEFT": true, "RIGHT": true,
	"FULL": true, "OUTER": true, "ON": true, "ESCAPE": true, "EXISTS": true, "ALL": true, "ASC": true,
	"DESC": true, "ORDER": true, "UNION": true, "WITH": true, "CROSS": true, "USING": true,
	"REGEXP": true, "RLIKE": true, "DIV": false, "INTERVAL": false, "CAST": true, "ARRAY": true,
	"OFFSET": true, "DUAL": false, "INTO": true, "VALUES": true, "INSERT": true, "REPLACE": true,
	"IF": true, "CHAR": true, "DEFAULT": false, "CONVERT": true, "COLLATE": true, "BINARY": true,
	"MOD": false, "XOR": true, "SEPARATOR": true,
}

// tidbFunctionWords are ksqlDB function names TiDB parses as keywords:
// their calls are escaped (found by parsing each registered function).
var tidbFunctionWords = map[string]bool{"SPLIT": true, "HISTOGRAM": true, "CORRELATION": true}

// unitFunctions take a time unit keyword as their first argument.
var unitFunctions = map[string]bool{
	"DATEADD": true, "DATESUB": true, "TIMEADD": true, "TIMESUB": true,
	"TIMESTAMPADD": true, "TIMESTAMPSUB": true,
}

// edit replaces text[pos:end] with repl (an insertion when pos == end).
type edit struct {
	pos, end int
	repl     string
	seq      int
}

// rewriter collects edits over one statement's text.
type rewriter struct {
	text  string
	edits []edit
}

// newRewriter returns a rewriter over text with its comments blanked out
// (each byte but a newline becomes a space, so offsets and lines stay):
// TiDB reads -- as a comment only before a space, so 1--1 would be 2 to it
// and 1 to the splitter and the envelope's tokenizer, as to ksqlDB.
func newRewriter(text string) *rewriter {
	return &rewriter{text: blankComments(text)}
}

// blankComments returns text with the comments Skip finds outside quotes
// turned into spaces, newlines kept.
func blankComments(text string) string {
	if !strings.Contains(text, "--") && !strings.Contains(text, "/*") {
		return text
	}
	var b []byte
	for i := 0; i < len(text); {
		c := text[i]
		end, _ := Skip(text, i)
		if end == i {
			i++
			continue
		}
		if c == '-' || c == '/' {
			if b == nil {
				b = []byte(text)
			}
			for j := i; j < end; j++ {
				if b[j] != '\n' {
					b[j] = ' '
				}
			}
		}
		i = end
	}
	if b == nil {
		return text
	}
	return string(b)
}

func (r *rewriter) replace(pos, end int, repl string) {
	r.edits = append(r.edits, edit{pos: pos, end: end, repl: repl, seq: len(r.edits)})
}

func (r *rewriter) insert(pos int, s string) { r.replace(pos, pos, s) }

// rewritten is the text TiDB sees, with a map back to the user's text.
type rewritten struct {
	text string
	// spans map the rewritten text back: out[o:o+n] came from in[i:i+n]
	// (n == 0 for inserted text, which maps to i).
	spans []span
}

type span struct{ out, in, n int }

// apply builds the rewritten text. Edits at the same position apply
// insertions last-added first (an outer wrapper is added after the inner
// one but must come first), then the replacement.
func (r *rewriter) apply() rewritten {
	sort.SliceStable(r.edits, func(i, j int) bool {
		a, b := r.edits[i], r.edits[j]
		if a.pos != b.pos {
			return a.pos < b.pos
		}
		ai, bi := a.pos == a.end, b.pos == b.end
		if ai != bi {
			return ai // insertions before replacements
		}
		if ai {
			return a.seq > b.seq
		}
		return a.seq < b.seq
	})
	var b strings.Builder
	var spans []span
	at := 0
	for _, e := range r.edits {
		if e.pos < at {
			continue // overlapping edit: the first one wins
		}
		if e.pos > at {
			spans = append(spans, span{out: b.Len(), in: at, n: e.pos - at})
			b.WriteString(r.text[at:e.pos])
		}
		spans = append(spans, span{out: b.Len(), in: e.pos})
		b.WriteString(e.repl)
		at = e.end
	}
	if at < len(r.text) {
		spans = append(spans, span{out: b.Len(), in: at, n: len(r.text) - at})
		b.WriteString(r.text[at:])
	}
	return rewritten{text: b.String(), spans: spans}
}

// orig maps an offset in the rewritten text to the user's text.
func (rw rewritten) orig(off int) int {
	i := sort.Search(len(rw.spans), func(i int) bool { return rw.spans[i].out > off }) - 1
	if i < 0 {
		return 0
	}
	s := rw.spans[i]
	if d := off - s.out; d < s.n {
		return s.in + d
	}
	if s.n > 0 {
		return s.in + s.n
	}
	return s.in
}

func isPunct(t token, s string) bool { return t.kind == tPunct && t.text == s }

// match returns the index of the bracket closing the one at toks[i].
func match(toks []token, i int) int {
	open, close := toks[i].text, map[string]string{"(": ")", "[": "]"}[toks[i].text]
	d := 0
	for j := i; j < len(toks) && toks[j].kind != tEOF; j++ {
		if isPunct(toks[j], open) {
			d++
		} else if isPunct(toks[j], close) {
			d--
			if d == 0 {
				return j
			}
		}
	}
	return -1
}

// matchBack returns the index of the bracket opening the one at toks[i].
func matchBack(toks []token, i int) int {
	close, open := toks[i].text, map[string]string{")": "(", "]": "["}[toks[i].text]
	d := 0
	for j := i; j >= 0; j-- {
		if isPunct(toks[j], close) {
			d++
		} else if isPunct(toks[j], open) {
			d--
			if d == 0 {
				return j
			}
		}
	}
	return -1
}

// operandStart returns the index of the first token of the primary
// expression that ends at toks[j]: a name (possibly qualified), a call,
// a parenthesized expression, or a chain of subscripts and field accesses.
func operandStart(toks []token, j int) int {
	if j < 0 {
		return 0
	}
	start := j
	switch t := toks[j]; {
	case isPunct(t, ")"), isPunct(t, "]"):
		o := matchBack(toks, j)
		if o < 0 {
			return j
		}
		start = o
		if isPunct(t, "]") {
			// a[i]: the subscripted operand; ARRAY[…]: the keyword.
			return operandStart(toks, o-1)
		}
		if o > 0 && (toks[o-1].kind == tIdent || toks[o-1].kind == tQuoted) && !isOperatorWord(toks[o-1]) {
			start = o - 1
		}
	case t.kind == tIdent || t.kind == tQuoted:
		for start >= 2 && isPunct(toks[start-1], ".") && (toks[start-2].kind == tIdent || toks[start-2].kind == tQuoted) {
			start -= 2
		}
	default:
		return j
	}
	if start >= 2 && isPunct(toks[start-1], "->") {
		return operandStart(toks, start-2)
	}
	return start
}

func isOperatorWord(t token) bool {
	switch t.text {
	case "AND", "OR", "NOT", "IN", "IS", "LIKE", "BETWEEN", "WHEN", "THEN", "ELSE", "CASE", "ON", "WHERE", "SELECT", "HAVING", "BY", "AS", "FROM":
		return t.kind == tIdent
	}
	return false
}

// rewriteExprs adds the edits for ksqlDB expression forms found in
// toks[from:to] and returns an error for forms that are refused.
func (r *rewriter) rewriteExprs(toks []token, from, to int) *Error {
	overEnd := -1 // the end of a window function's OVER (…), if in one
	for i := from; i < to; i++ {
		t := toks[i]
		next := toks[i+1]
		if t.kind == tIdent && isPunct(next, "(") {
			if err := r.aggFilter(toks, i); err != nil {
				return err
			}
		}
		switch {
		case t.is("FILTER") && isPunct(next, "(") && toks[i+2].is("WHERE") && i > 0 && isPunct(toks[i-1], ")"):
			i += 2 // an aggregate's FILTER (WHERE, replaced by aggFilter
		case t.kind == tIdent && t.text == "OVER" && isPunct(next, "(") && i > from && isPunct(toks[i-1], ")"):
			// f(…) OVER (PARTITION BY … ORDER BY … [ROWS …]): a window
			// function (topn.go binds ROW_NUMBER); its clause words stay
			// TiDB's keywords.
			overEnd = skipParens(toks, i+1)
		case i < overEnd && t.kind == tIdent && windowSpecWords[t.text]:
		case isPunct(t, "$") && next.kind == tNumber && next.pos == t.end:
			// A placeholder $n: TiDB's is ?, which selectStmt numbers
			// back from the $n at its position (params.go).
			r.replace(t.pos, next.end, "?")
			i++
		case t.kind == tIdent && (t.text == "REGEXP" || t.text == "RLIKE"):
			return errorAt(r.text, t.pos, CodeFeatureNotSupport, "operator %s is not supported; use REGEXP_EXTRACT or LIKE", t.text)
		case t.kind == tIdent && t.text == "IS" && (next.is("DISTINCT") || next.is("NOT") && toks[i+2].is("DISTINCT")):
			j := i + 1
			repl := "REGEXP"
			if next.is("NOT") {
				j++
				repl = "NOT REGEXP"
			}
			if !toks[j+1].is("FROM") {
				return errorAt(r.text, toks[j+1].pos, CodeSyntaxError, "syntax error: expected FROM after IS [NOT] DISTINCT")
			}
			r.replace(t.pos, toks[j+1].end, repl)
			i = j + 1
		case isPunct(t, ":") && isPunct(next, ":") && next.pos == t.end:
			end, err := r.pgCast(toks, from, i)
			if err != nil {
				return err
			}
			i = end
		case t.kind == tIdent && t.text == "CAST" && isPunct(next, "("):
			end := match(toks, i+1)
			if end < 0 {
				continue
			}
			as := -1
			d := 0
			for k := i + 2; k < end; k++ {
				switch {
				case isPunct(toks[k], "("), isPunct(toks[k], "["):
					d++
				case isPunct(toks[k], ")"), isPunct(toks[k], "]"):
					d--
				case d == 0 && toks[k].is("AS"):
					as = k
				}
			}
			if as < 0 || as+1 >= end {
				return errorAt(r.text, t.pos, CodeSyntaxError, "syntax error: CAST needs AS and a type: CAST(x AS type)")
			}
			typeText := strings.TrimSpace(r.text[toks[as+1].pos:toks[end-1].end])
			r.replace(t.pos, t.end, "__CAST")
			r.replace(toks[as].pos, toks[end-1].end, ", '"+strings.ReplaceAll(typeText, "'", "''")+"'")
			// The type's tokens are consumed; the operand's are rewritten.
			if err := r.rewriteExprs(toks, i+2, as); err != nil {
				return err
			}
			i = end
		case t.kind == tIdent && t.text == "COUNT" && isPunct(next, "(") && i+2 < len(toks) && isPunct(toks[i+2], ")"):
			// COUNT() is ksqlDB's COUNT(*).
			r.insert(next.end, "*")
			i += 2
		case t.kind == tIdent && t.text == "ARRAY" && isPunct(next, "["):
			end := match(toks, i+1)
			if end < 0 {
				continue
			}
			r.replace(t.pos, next.end, "__ARRAY(")
			r.replace(toks[end].pos, toks[end].end, ")")
			i++
		case t.kind == tIdent && (t.text == "MAP" || t.text == "STRUCT") && isPunct(next, "("):
			end := match(toks, i+1)
			if end < 0 {
				continue
			}
			r.replace(t.pos, t.end, "__"+t.text)
			d := 0
			for k := i + 2; k < end; k++ {
				switch {
				case isPunct(toks[k], "("), isPunct(toks[k], "["):
					d++
				case isPunct(toks[k], ")"), isPunct(toks[k], "]"):
					d--
				case d == 0 && isPunct(toks[k], ":="):
					if t.text == "STRUCT" && (toks[k-1].kind == tIdent || toks[k-1].kind == tQuoted) {
						r.replace(toks[k-1].pos, toks[k].end, "'"+strings.ReplaceAll(toks[k-1].text, "'", "''")+"',")
					} else {
						r.replace(toks[k].pos, toks[k].end, ",")
					}
				}
			}
			i++
		case isPunct(t, "["):
			end := match(toks, i)
			if end < 0 {
				return errorAt(r.text, t.pos, CodeSyntaxError, "syntax error: unclosed [")
			}
			start := operandStart(toks, i-1)
			if start >= i {
				return errorAt(r.text, t.pos, CodeSyntaxError, "syntax error at or near \"[\"")
			}
			r.insert(toks[start].pos, "__SUBSCRIPT(")
			r.replace(t.pos, t.end, ", ")
			r.replace(toks[end].pos, toks[end].end, ")")
		case isPunct(t, "->") && isPunct(next, "*"):
			// s->* selects every field of s: __FIELDS(s), expanded in the
			// SELECT list.
			start := operandStart(toks, i-1)
			if start >= i {
				return errorAt(r.text, t.pos, CodeSyntaxError, "syntax error at or near \"->\"")
			}
			r.insert(toks[start].pos, "__FIELDS(")
			r.replace(t.pos, next.end, ")")
			i++
		case isPunct(t, "->"):
			if next.kind != tIdent && next.kind != tQuoted {
				return errorAt(r.text, next.pos, CodeSyntaxError, "syntax error: expected a field name after ->")
			}
			start := operandStart(toks, i-1)
			if start >= i {
				return errorAt(r.text, t.pos, CodeSyntaxError, "syntax error at or near \"->\"")
			}
			r.insert(toks[start].pos, "__FIELD(")
			r.replace(t.pos, next.end, ", '"+strings.ReplaceAll(next.text, "'", "''")+"')")
			i++
		case t.kind == tIdent && unitFunctions[t.text] && isPunct(next, "(") && toks[i+2].kind == tIdent && isPunct(toks[i+3], ","):
			// DATEADD(DAYS, 1, d): the unit becomes a string argument, and
			// the name is escaped because TiDB parses some of these
			// (TIMESTAMPADD) with MySQL's singular units only.
			r.replace(t.pos, t.end, "__"+t.text)
			r.replace(toks[i+2].pos, toks[i+2].end, "'"+toks[i+2].text+"'")
			i += 2
		case isPunct(t, "=>"):
			if err := r.lambda(toks, i); err != nil {
				return err
			}
		case t.is("PROCTIME") && isPunct(next, "(") && isPunct(toks[i+2], ")"):
			r.replace(t.pos, toks[i+2].end, "FROM_UNIXTIME(UNIX_TIMESTAMP())")
			i += 2
		case t.kind == tIdent && tidbFunctionWords[t.text] && isPunct(next, "("):
			r.replace(t.pos, t.end, "__"+t.text)
		case t.kind == tIdent && reservedNames[t.text] && !isPunct(next, "("):
			r.replace(t.pos, t.end, "`"+t.text+"`")
		case t.kind == tIdent:
			if r.text[t.pos:t.end] != t.text {
				r.replace(t.pos, t.end, t.text) // upper-case, same length
			}
		}
	}
	return nil
}

// lambda rewrites the lambda whose arrow is toks[i].
func (r *rewriter) lambda(toks []token, i int) *Error {
	arrow := toks[i]
	p := i - 1
	if p < 0 {
		return errorAt(r.text, arrow.pos, CodeSyntaxError, "syntax error: lambda without parameters")
	}
	var paramStart int
	if isPunct(toks[p], ")") {
		o := matchBack(toks, p)
		if o < 0 {
			return errorAt(r.text, arrow.pos, CodeSyntaxError, "syntax error in lambda parameters")
		}
		for k := o + 1; k < p; k++ {
			if !(toks[k].kind == tIdent || toks[k].kind == tQuoted || isPunct(toks[k], ",")) {
				return errorAt(r.text, toks[k].pos, CodeSyntaxError, "syntax error: lambda parameters are names")
			}
		}
		paramStart = o
		r.replace(toks[o].pos, toks[o].end, "__LAMBDA(")
		r.replace(toks[p].pos, toks[p].end, "")
	} else if toks[p].kind == tIdent || toks[p].kind == tQuoted {
		paramStart = p
		r.insert(toks[p].pos, "__LAMBDA(")
	} else {
		return errorAt(r.text, arrow.pos, CodeSyntaxError, "syntax error: expected lambda parameters before =>")
	}
	if paramStart == 0 || !(isPunct(toks[paramStart-1], "(") || isPunct(toks[paramStart-1], ",")) {
		return errorAt(r.text, toks[paramStart].pos, CodeSyntaxError, "a lambda is only allowed as a function argument")
	}
	r.replace(arrow.pos, arrow.end, ",")
	// The body ends at the enclosing argument list's next "," or ")".
	d := 0
	for k := i + 1; k < len(toks); k++ {
		t := toks[k]
		switch {
		case isPunct(t, "("), isPunct(t, "["):
			d++
		case isPunct(t, "]"):
			d--
		case isPunct(t, ")") && d > 0:
			d--
		case d == 0 && (isPunct(t, ",") || isPunct(t, ")")) || t.kind == tEOF:
			r.insert(t.pos, ")")
			return nil
		}
	}
	return nil
}

// windowSpecWords are the words of a window specification (OVER (…))
// that TiDB reserves and that stay unquoted there.
var windowSpecWords = map[string]bool{"PARTITION": true, "ROWS": true, "RANGE": true, "GROUPS": true,
	"UNBOUNDED": true, "PRECEDING": true, "FOLLOWING": true, "CURRENT": true, "ROW": true}

// pgCast rewrites Postgres's casts x::type[::type …], whose first "::"
// is at toks[at] (x ends before it, after toks[from]), into
// __CAST(x, 'type'), and returns the index of the last token consumed.
func (r *rewriter) pgCast(toks []token, from, at int) (int, *Error) {
	if at <= from {
		return 0, errorAt(r.text, toks[at].pos, CodeSyntaxError, "syntax error: :: needs a value before it, as in x::INT")
	}
	j := at - 1
	start := operandStart(toks, j)
	if toks[j].kind == tNumber && j > 0 && isPunct(toks[j-1], "$") && toks[j-1].end == toks[j].pos {
		start = j - 1 // a placeholder $n
	}
	if start < from {
		start = from
	}
	i := at
	for isPunct(toks[i], ":") && isPunct(toks[i+1], ":") && toks[i+1].pos == toks[i].end {
		k := i + 2
		name := toks[k]
		if name.kind != tIdent || isOperatorWord(name) {
			return 0, errorAt(r.text, name.pos, CodeSyntaxError, "syntax error: expected a type after ::")
		}
		words := name.text
		if next := toks[k+1]; name.is("DOUBLE") && next.is("PRECISION") || name.is("CHARACTER") && next.is("VARYING") {
			words += " " + next.text
			k++
		}
		var args []string
		if isPunct(toks[k+1], "(") {
			close := match(toks, k+1)
			if close < 0 {
				return 0, errorAt(r.text, toks[k+1].pos, CodeSyntaxError, "syntax error: unclosed ( in the type after ::")
			}
			for m := k + 2; m < close; m++ {
				if toks[m].kind == tNumber {
					args = append(args, toks[m].text)
				} else if !isPunct(toks[m], ",") {
					return 0, errorAt(r.text, toks[m].pos, CodeSyntaxError, "syntax error: expected a number in the type after ::")
				}
			}
			k = close
		}
		typ, ok := pgTypeName(words, args)
		if !ok {
			return 0, errorAt(r.text, name.pos, CodeUndefinedObject, "type %s is not supported in a :: cast", r.text[name.pos:toks[k].end])
		}
		r.insert(toks[start].pos, "__CAST(")
		r.replace(toks[i].pos, toks[k].end, ", '"+typ+"')")
		i = k + 1
	}
	return i - 1, nil
}

// pgTypeName maps a Postgres type name (upper-cased words) and its
// arguments to the name of our type.
func pgTypeName(words string, args []string) (string, bool) {
	switch words {
	case "INT", "INT4", "INTEGER", "INT2", "SMALLINT":
		return "INT", len(args) == 0
	case "INT8", "BIGINT":
		return "BIGINT", len(args) == 0
	case "FLOAT8", "FLOAT", "DOUBLE PRECISION", "DOUBLE", "FLOAT4", "REAL":
		return "DOUBLE", len(args) == 0
	case "TEXT", "VARCHAR", "CHARACTER VARYING", "STRING", "CHAR", "BPCHAR":
		return "STRING", true // a length is no constraint of ours
	case "BOOL", "BOOLEAN":
		return "BOOLEAN", len(args) == 0
	case "NUMERIC", "DECIMAL":
		if len(args) == 2 {
			return "DECIMAL(" + args[0] + ", " + args[1] + ")", true
		}
		if len(args) == 1 {
			return "DECIMAL(" + args[0] + ", 0)", true
		}
	case "BYTEA", "BYTES":
		return "BYTES", len(args) == 0
	case "DATE", "TIME", "TIMESTAMP":
		return words, len(args) == 0
	}
	return "", false
}
