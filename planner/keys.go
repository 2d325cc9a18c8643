package planner

import (
	"math"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

// KeyFilter is what a pull query's WHERE says about the table's key, so
// that the executor reads only the rows it needs. The WHERE is still
// applied to every row read, so a KeyFilter may be looser than the WHERE,
// never tighter.
type KeyFilter struct {
	// Points, when non-nil, are the only key values that can match
	// (key = c, key IN (c, …)). Each is a constant: an *expr.Literal
	// (never NULL) or an *expr.Param of a prepared statement, whose
	// value is known only when it runs.
	Points []expr.Expr
	// Lower and Upper bound the key (nil: open), constants as Points;
	// Incl says whether the bound itself matches.
	Lower, Upper         expr.Expr
	LowerIncl, UpperIncl bool
}

// constant reports whether e is a value known before any row is read: a
// literal other than NULL, or a placeholder.
func constant(e expr.Expr) bool {
	switch e := e.(type) {
	case *expr.Literal:
		return !e.V.Null
	case *expr.Param:
		return true
	}
	return false
}

// PullKeyFilter derives the KeyFilter of a pull query over a table with a
// single key column; ok is false when the WHERE does not constrain the key
// (or there is no WHERE), and the whole table must be scanned.
func PullKeyFilter(q *Query) (f KeyFilter, ok bool) {
	filter := pullFilter(q)
	if filter == nil {
		return f, false
	}
	keys := filter.Input.Schema().KeyIndexes()
	if len(keys) != 1 {
		return f, false
	}
	key := keys[0]
	isKey := func(e expr.Expr) bool {
		c, ok := e.(*expr.Column)
		return ok && c.Index == key
	}
	for _, c := range conjuncts(filter.Predicate) {
		switch c := c.(type) {
		case *expr.In:
			if c.Not || !isKey(c.X) || f.Points != nil {
				continue
			}
			var pts []expr.Expr
			for _, e := range c.List {
				if _, isLit := e.(*expr.Literal); !isLit && !constant(e) {
					pts = nil
					break
				}
				pts = append(pts, e)
			}
			if pts != nil {
				f.Points, ok = pts, true
			}
		case *expr.Between:
			lo, hi := c.Lo, c.Hi
			if c.Not || !isKey(c.X) || !constant(lo) || !constant(hi) {
				continue
			}
			if f.Lower == nil {
				f.Lower, f.LowerIncl, ok = lo, true, true
			}
			if f.Upper == nil {
				f.Upper, f.UpperIncl, ok = hi, true, true
			}
		case *expr.Binary:
			op, l, r := c.Op, c.L, c.R
			if isKey(r) {
				l, r = r, l
				op = flip(op)
			}
			lit := r
			if !isKey(l) || !constant(lit) {
				continue
			}
			switch op {
			case expr.OpEQ:
				if f.Points == nil {
					f.Points, ok = []expr.Expr{lit}, true
				}
			case expr.OpGT, expr.OpGE:
				if f.Lower == nil {
					f.Lower, f.LowerIncl, ok = lit, op == expr.OpGE, true
				}
			case expr.OpLT, expr.OpLE:
				if f.Upper == nil {
					f.Upper, f.UpperIncl, ok = lit, op == expr.OpLE, true
				}
			}
		}
	}
	return f, ok
}

// pullFilter returns the WHERE of a pull query's linear plan (the filter
// nearest its scan), or nil.
func pullFilter(q *Query) *Filter {
	var filter *Filter
	for n := q.Root; n != nil; {
		if fl, isFilter := n.(*Filter); isFilter {
			filter = fl
		}
		ch := n.Children()
		if len(ch) != 1 {
			break
		}
		n = ch[0]
	}
	return filter
}

// conjuncts splits a predicate at its top-level ANDs.
func conjuncts(e expr.Expr) []expr.Expr {
	if b, ok := e.(*expr.Binary); ok && b.Op == expr.OpAnd {
		return append(conjuncts(b.L), conjuncts(b.R)...)
	}
	return []expr.Expr{e}
}

// flip mirrors a comparison for swapped operands.
func flip(op expr.Op) expr.Op {
	switch op {
	case expr.OpLT:
		return expr.OpGT
	case expr.OpLE:
		return expr.OpGE
	case expr.OpGT:
		return expr.OpLT
	case expr.OpGE:
		return expr.OpLE
	}
	return op
}

// PullWindowFilter derives, from a pull query's WHERE over a table with
// time windows, the inclusive range its WINDOWSTART may take; ok is false
// when the WHERE does not bound it. Like KeyFilter it may be looser than
// the WHERE, which is still applied to every row read.
func PullWindowFilter(q *Query) (lo, hi int64, ok bool) {
	filter := pullFilter(q)
	if filter == nil {
		return 0, 0, false
	}
	ws := filter.Input.Schema().WindowIndex()
	if ws < 0 {
		return 0, 0, false
	}
	isStart := func(e expr.Expr) bool {
		c, ok := e.(*expr.Column)
		return ok && c.Index == ws
	}
	intLit := func(e expr.Expr) (int64, bool) {
		l, ok := e.(*expr.Literal)
		if !ok || l.V.Null {
			return 0, false
		}
		switch l.T.Kind {
		case types.Int, types.Bigint:
			return l.V.I, true
		}
		return 0, false
	}
	lo, hi = math.MinInt64, math.MaxInt64
	for _, c := range conjuncts(filter.Predicate) {
		switch c := c.(type) {
		case *expr.Between:
			l, okL := intLit(c.Lo)
			h, okH := intLit(c.Hi)
			if c.Not || !isStart(c.X) || !okL || !okH {
				continue
			}
			lo, hi, ok = max(lo, l), min(hi, h), true
		case *expr.Binary:
			op, l, r := c.Op, c.L, c.R
			if isStart(r) {
				l, r = r, l
				op = flip(op)
			}
			v, isLit := intLit(r)
			if !isStart(l) || !isLit {
				continue
			}
			switch op {
			case expr.OpEQ:
				lo, hi, ok = max(lo, v), min(hi, v), true
			case expr.OpGE:
				lo, ok = max(lo, v), true
			case expr.OpGT:
				if v < math.MaxInt64 {
					lo, ok = max(lo, v+1), true
				}
			case expr.OpLE:
				hi, ok = min(hi, v), true
			case expr.OpLT:
				if v > math.MinInt64 {
					hi, ok = min(hi, v-1), true
				}
			}
		}
	}
	return lo, hi, ok
}

// PointLookup reports whether q, a pull query, reads one row by its key:
// its WHERE is exactly key = constant (one conjunct; a non-NULL literal
// or a placeholder, of the key's type or an integer for an integer key)
// above a chain of single-input nodes. It returns that constant and the
// Filter holding the comparison, so that a caller preparing q for many
// keys can make the predicate TRUE in its own copy of the plan and look
// the key up instead: a lookup by the serialized key matches exactly the
// rows the comparison keeps.
func PointLookup(q *Query) (key expr.Expr, filter *Filter, ok bool) {
	for n := q.Root; n != nil; {
		if fl, isFilter := n.(*Filter); isFilter {
			if filter != nil {
				return nil, nil, false // two filters: not the simple shape
			}
			filter = fl
		}
		ch := n.Children()
		if len(ch) != 1 {
			if len(ch) > 1 {
				return nil, nil, false
			}
			break
		}
		n = ch[0]
	}
	if filter == nil {
		return nil, nil, false
	}
	keys := filter.Input.Schema().KeyIndexes()
	if len(keys) != 1 {
		return nil, nil, false
	}
	b, isBinary := filter.Predicate.(*expr.Binary)
	if !isBinary || b.Op != expr.OpEQ {
		return nil, nil, false
	}
	l, r := b.L, b.R
	if constant(l) {
		l, r = r, l
	}
	c, isCol := l.(*expr.Column)
	if !isCol || c.Index != keys[0] || !constant(r) {
		return nil, nil, false
	}
	if kt := filter.Input.Schema().Columns[keys[0]].Type; !r.Type().Equal(kt) && !(r.Type().IsIntegral() && kt.IsIntegral()) {
		return nil, nil, false
	}
	return r, filter, true
}
