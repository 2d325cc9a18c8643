package sql

// This file handles the placeholders of a prepared SELECT: $1, $2, … (or
// ?, numbered in order). They reach TiDB as ?, and are bound as
// expr.Param nodes that read the values bound to the statement
// (Select.Params), so a statement is parsed, bound and planned once and
// run with many values: nothing is substituted into its text.
//
// A placeholder's type comes from where it stands: compared with an
// expression (col = $1, $1 < col, col BETWEEN $1 AND $2, col IN ($1,
// $2)), it has that expression's type; elsewhere it is STRING, as
// Postgres takes a parameter of unknown type as text.

import (
	"sort"
	"strconv"

	"github.com/pingcap/tidb/pkg/parser/ast"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

// codeUndefinedParameter is Postgres's undefined_parameter.
const codeUndefinedParameter = "42P02"

// maxParams is the most placeholders a statement may have, as in Postgres.
const maxParams = 65535

// markers collects a tree's placeholders.
type markers struct{ list []*driver.ParamMarkerExpr }

func (m *markers) Enter(n ast.Node) (ast.Node, bool) {
	if pm, ok := n.(*driver.ParamMarkerExpr); ok {
		m.list = append(m.list, pm)
	}
	return n, false
}

func (m *markers) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// numberParams gives each placeholder of the parsed SELECT its number
// (ParamMarkerExpr.Order, 1-based): that of the $n it was, or its place
// among the ?s.
func (sel *Select) numberParams(toks []token) error {
	n, err := numberMarkers(sel.stmt, sel.rw, sel.text, toks)
	sel.nParams = n
	return err
}

// numberMarkers numbers the placeholders of node, parsed by TiDB from
// rw, the rewritten text, and returns how many parameters there are.
func numberMarkers(node ast.Node, rw rewritten, text string, toks []token) (int, error) {
	// Most statements have none: do not walk their trees.
	any := false
	for _, t := range toks {
		if isPunct(t, "$") || isPunct(t, "?") {
			any = true
			break
		}
	}
	if !any {
		return 0, nil
	}
	var m markers
	node.Accept(&m)
	if len(m.list) == 0 {
		return 0, nil
	}
	nParams := 0
	sort.Slice(m.list, func(i, j int) bool { return m.list[i].Offset < m.list[j].Offset })
	byPos := make(map[int]int, len(toks))
	for i, t := range toks {
		byPos[t.pos] = i
	}
	dollar, question := false, false
	for k, pm := range m.list {
		pos := rw.orig(pm.Offset)
		i, ok := byPos[pos]
		if !ok {
			return 0, errorAt(text, pos, CodeSyntaxError, "syntax error at or near a placeholder")
		}
		n := k + 1
		if isPunct(toks[i], "$") {
			v, err := strconv.Atoi(toks[i+1].text)
			if err != nil || v < 1 || v > maxParams {
				return 0, errorAt(text, pos, CodeSyntaxError, "invalid parameter reference $%s", toks[i+1].text)
			}
			n, dollar = v, true
		} else {
			question = true
		}
		if dollar && question {
			return 0, errorAt(text, pos, CodeSyntaxError, "a statement takes $n or ? placeholders, not both")
		}
		pm.Order = n
		nParams = max(nParams, n)
	}
	return nParams, nil
}

// NumParams returns the number of parameters the statement takes.
func (iv *InsertValues) NumParams() int { return iv.nParams }

// ParamTypes returns the types BindInsert gave the parameters: those of
// the columns they are values of (STRING elsewhere); nil before binding.
func (iv *InsertValues) ParamTypes() []types.Type { return iv.paramTypes }

// NumParams returns the number of parameters the statement takes: the
// highest $n (or the number of ?s).
func (sel *Select) NumParams() int { return sel.nParams }

// ParamTypes returns the types BindSelect inferred for the parameters,
// $1 first (STRING where nothing said otherwise); nil before binding.
func (sel *Select) ParamTypes() []types.Type { return sel.paramTypes }

// param binds a placeholder, typed like hint when it has no type yet
// (the zero Type: none).
func (b *binder) param(pm *driver.ParamMarkerExpr, hint types.Type) (expr.Expr, error) {
	if b.pbound == nil || pm.Order > len(b.ptypes) {
		// Only a prepared statement has values for its parameters.
		return nil, Errorf(codeUndefinedParameter, "there is no parameter $%d", pm.Order)
	}
	n := pm.Order
	t := &b.ptypes[n-1]
	if t.Kind == 0 && hint.Kind != 0 {
		*t = hint
	}
	pt := *t
	if pt.Kind == 0 {
		pt = types.StringType
	}
	return &expr.Param{N: n, T: pt, Bound: b.pbound}, nil
}

// exprAs binds n, typed like hint if it is a placeholder.
func (b *binder) exprAs(n ast.ExprNode, hint types.Type) (expr.Expr, error) {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		n = p.Expr
	}
	if pm, ok := n.(*driver.ParamMarkerExpr); ok {
		return b.param(pm, hint)
	}
	return b.expr(n)
}

// isParam reports whether n is a placeholder.
func isParam(n ast.ExprNode) bool {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		n = p.Expr
	}
	_, ok := n.(*driver.ParamMarkerExpr)
	return ok
}

// HasPlaceholder reports whether text, one statement, has a placeholder
// ($n or ?) outside its quotes and comments.
func HasPlaceholder(text string) bool {
	toks := lex(text)
	for i, t := range toks {
		if isPunct(t, "?") || isPunct(t, "$") && i+1 < len(toks) && toks[i+1].kind == tNumber && toks[i+1].pos == t.end {
			return true
		}
	}
	return false
}

// LimitParam returns n when the statement's LIMIT is the parameter $n,
// else 0. BindSelect takes the limit from its value (Params); a query
// bound once and run many times reads it at each run with ParamLimit.
func (sel *Select) LimitParam() int { return sel.limitParam }

// codeInvalidRowCount is Postgres's invalid_row_count_in_limit_clause.
const codeInvalidRowCount = "2201W"

// ParamLimit returns the row limit a LIMIT $n bound to v sets: -1 (none)
// for NULL, as in Postgres; a negative count is an error.
func ParamLimit(v types.Datum) (int64, error) {
	if v.Null {
		return -1, nil
	}
	if v.I < 0 {
		return 0, Errorf(codeInvalidRowCount, "LIMIT must not be negative")
	}
	return v.I, nil
}
