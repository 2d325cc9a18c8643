package sql

import (
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/sqlstreams/sqlstreams/catalog"
)

// Interval joins in Flink's form: a stream–stream join whose ON bounds
// one side's time by the other's,
//
//	FROM a JOIN b ON a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '1' MINUTE AND b.ts + INTERVAL '2' MINUTE
//
// is ksqlDB's WITHIN (before, after) — here WITHIN (2 MINUTES,
// 1 MINUTE): b's rows join an a row from a.ts - 2 minutes to a.ts + 1
// minute. The times must be the streams' event times (ROWTIME, or the
// TIMESTAMP column each is declared with), qualified by their stream's
// name or alias. selectStmt cuts the BETWEEN out of the text (TiDB reads
// INTERVAL only in date arithmetic) and leaves a marker call the
// binder's ON splitting drops (takeResidual); bindIntervalJoin turns it
// into the join's WITHIN.

const intervalJoinMarker = "__INTERVAL_JOIN"

// intervalJoin is a.ts BETWEEN b.ts ± lo AND b.ts ± hi: a.ts - b.ts is
// between lo and hi (milliseconds, signed).
type intervalJoin struct {
	aQual, aCol, bQual, bCol string
	lo, hi                   int64
	pos                      int // offset of a.ts
	// derived names the side that is a derived table or CTE (its name
	// and the time column the bounds read there), whose check waits for
	// its binding (finalStream, bind_join_final.go).
	derived, derivedCol string
}

// colRef reads name or qual.name at toks[i] and returns the index after
// it, or -1.
func colRef(toks []token, i int) (qual, name string, end int) {
	isName := func(t token) bool { return t.kind == tIdent || t.kind == tQuoted }
	if !isName(toks[i]) {
		return "", "", -1
	}
	if isPunct(toks[i+1], ".") && isName(toks[i+2]) {
		return toks[i].text, toks[i+2].text, i + 3
	}
	return "", toks[i].text, i + 1
}

// parseIntervalJoin reads an interval join's BETWEEN whose left operand
// starts at toks[start] and whose BETWEEN is toks[at]; ok is false when
// the tokens are some other BETWEEN.
func parseIntervalJoin(text string, toks []token, start, at int) (ij *intervalJoin, end int, ok bool, err error) {
	aq, ac, e := colRef(toks, start)
	if e != at {
		return nil, 0, false, nil
	}
	ij = &intervalJoin{aQual: aq, aCol: ac, pos: toks[start].pos}
	i := at + 1
	intervals := 0
	bound := func() (string, string, int64, bool, error) {
		q, c, e := colRef(toks, i)
		if e < 0 {
			return "", "", 0, false, nil
		}
		if !(isPunct(toks[e], "+") || isPunct(toks[e], "-")) || !toks[e+1].is("INTERVAL") {
			i = e
			return q, c, 0, true, nil // b.ts itself
		}
		intervals++
		neg := isPunct(toks[e], "-")
		p := &parser{text: text, toks: toks, i: e + 1}
		ms, err := parseInterval(p)
		if err != nil {
			return "", "", 0, true, err
		}
		i = p.i
		if neg {
			ms = -ms
		}
		return q, c, ms, true, nil
	}
	bq, bc, lo, ok, err := bound()
	if !ok || err != nil {
		return nil, 0, ok, err
	}
	if !toks[i].is("AND") {
		return nil, 0, false, nil
	}
	i++
	bq2, bc2, hi, ok, err := bound()
	if !ok || err != nil || intervals == 0 {
		return nil, 0, ok && intervals > 0, err
	}
	if bq2 != bq || bc2 != bc {
		return nil, 0, true, errorAt(text, toks[start].pos, CodeFeatureNotSupport, "an interval join bounds one time by another: %s BETWEEN %s - INTERVAL … AND %s + INTERVAL …, the same column both times", ac, bc, bc)
	}
	ij.bQual, ij.bCol, ij.lo, ij.hi = bq, bc, lo, hi
	return ij, i, true, nil
}

// bindIntervalJoin turns the interval join of the (two-way) join j into
// its WITHIN clause: sel.within, placed before j's ON.
func (b *binder) bindIntervalJoin(sel *Select, j *ast.Join) error {
	ij := sel.interval
	if ij == nil {
		return nil
	}
	at := func(format string, args ...any) error {
		return errorAt(sel.text, ij.pos, CodeFeatureNotSupport, format, args...)
	}
	if len(sel.withins) > 0 {
		return at("an interval join's BETWEEN is its WITHIN: give one of them")
	}
	lt, lok := j.Left.(*ast.TableSource)
	rt, rok := j.Right.(*ast.TableSource)
	if !lok || !rok {
		return at("an interval join (… BETWEEN … INTERVAL …) joins two streams")
	}
	// A derived table or CTE (a windowed aggregation, whose rows are a
	// stream of final windows: bind_join_final.go) stands in as a stream
	// with no source until it is bound.
	derived := &catalog.Source{Kind: catalog.Stream}
	side := func(ts *ast.TableSource) (string, *catalog.Source) {
		if _, ok := ts.Source.(*ast.SelectStmt); ok && ts.AsName.O != "" {
			return ts.AsName.O, derived
		}
		tn, ok := ts.Source.(*ast.TableName)
		if !ok {
			return "", nil
		}
		name := ts.AsName.O
		if name == "" {
			name = tn.Name.O
		}
		if c, _ := lookupCTE(b.cat, tn.Name.O); c != nil {
			return name, derived
		}
		src, _ := b.cat.Source(tn.Name.O)
		return name, src
	}
	ln, ls := side(lt)
	rn, rs := side(rt)
	if ls == nil || rs == nil {
		return nil // the join's binding names the missing source
	}
	if ls == derived && rs == derived {
		return at("an interval join (… BETWEEN … INTERVAL …) of two derived tables is not supported: one side is a stream")
	}
	if ls.Kind != catalog.Stream || rs.Kind != catalog.Stream {
		return at("an interval join (… BETWEEN … INTERVAL …) joins two streams; %s is a table", map[bool]string{true: ls.Name, false: rs.Name}[ls.Kind != catalog.Stream])
	}
	if ij.aQual == "" || ij.bQual == "" {
		return at("qualify an interval join's time columns with their streams' names or aliases (%s.%s)", ln, ij.aCol)
	}
	var lo, hi int64 // right.ts - left.ts is between lo and hi
	switch {
	case ij.aQual == ln && ij.bQual == rn: // left - right in [lo, hi]
		lo, hi = -ij.hi, -ij.lo
	case ij.aQual == rn && ij.bQual == ln:
		lo, hi = ij.lo, ij.hi
	default:
		return at("an interval join bounds one stream's time by the other's: %s.%s and %s.%s name the join's two streams (%s, %s)", ij.aQual, ij.aCol, ij.bQual, ij.bCol, ln, rn)
	}
	eventTime := func(col string, src *catalog.Source) error {
		if src == derived {
			ij.derived, ij.derivedCol = map[bool]string{true: ln, false: rn}[ls == derived], col
			return nil
		}
		if col == "ROWTIME" || col == src.TimestampColumn {
			return nil
		}
		return at("an interval join bounds the streams' event times: %s is not %s's (ROWTIME, or the column its TIMESTAMP property names)", col, src.Name)
	}
	if err := eventTime(ij.aCol, map[bool]*catalog.Source{true: ls, false: rs}[ij.aQual == ln]); err != nil {
		return err
	}
	if err := eventTime(ij.bCol, map[bool]*catalog.Source{true: ls, false: rs}[ij.bQual == ln]); err != nil {
		return err
	}
	if lo > 0 || hi < 0 {
		return at("an interval join's bounds must hold the other stream's same time (from %s to %s milliseconds here): WITHIN (before, after) needs before, after >= 0", strconv.FormatInt(lo, 10), strconv.FormatInt(hi, 10))
	}
	if lo > hi {
		return at("an interval join's lower bound is above its upper bound")
	}
	w := &withinClause{before: -lo, after: hi, grace: -1, pos: b.nthOn(1) - 1}
	sel.within, sel.withins = w, []*withinClause{w}
	return nil
}

// whereInterval moves an interval join's bounds from the WHERE of an
// INNER join to its ON, as Flink reads them there too (Nexmark q7:
// … ON B.price = B1.maxprice WHERE B.dateTime BETWEEN B1.dateTime -
// INTERVAL '10' SECOND AND B1.dateTime): a conjunct of WHERE. It
// reports whether it did. An outer join's WHERE filters its result, and
// keeps ksqlDB's error.
func (sel *Select) whereInterval(j *ast.Join) bool {
	s := sel.stmt
	if sel.interval == nil || s.Where == nil || j.Tp == ast.LeftJoin || j.Tp == ast.RightJoin || len(sel.fullJoins) > 0 {
		return false
	}
	isMarker := func(n ast.ExprNode) bool {
		call, ok := unparen(n).(*ast.FuncCallExpr)
		return ok && strings.EqualFold(call.FnName.O, intervalJoinMarker)
	}
	var keep []ast.ExprNode
	found := false
	var split func(n ast.ExprNode)
	split = func(n ast.ExprNode) {
		if bin, ok := unparen(n).(*ast.BinaryOperationExpr); ok && bin.Op == opcode.LogicAnd {
			split(bin.L)
			split(bin.R)
			return
		}
		if isMarker(n) && !found {
			found = true
			return
		}
		keep = append(keep, n)
	}
	split(s.Where)
	if !found {
		return false
	}
	s.Where = nil
	if len(keep) > 0 {
		s.Where = and(keep)
	}
	return true
}
