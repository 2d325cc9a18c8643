package sql

import (
	"fmt"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

// lambdaScope is one lambda's parameters while its body is bound.
type lambdaScope struct {
	names []string
	types []types.Type
}

// typeErr turns an expr type error into a positioned statement error.
func (b *binder) typeErr(near string, err error) error {
	if near != "" {
		return b.errAt(near, CodeDatatypeMismatch, "%v", err)
	}
	return Errorf(CodeDatatypeMismatch, "%v", err)
}

func (b *binder) exprs(ns []ast.ExprNode) ([]expr.Expr, error) {
	out := make([]expr.Expr, len(ns))
	for i, n := range ns {
		e, err := b.expr(n)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

// exprMore binds the expression forms beyond arithmetic, comparison and
// logic: IN, BETWEEN, LIKE, CASE, IS [NOT] DISTINCT FROM, IS TRUE, and the
// rewritten ksqlDB forms (see rewrite.go). ok is false for node kinds it
// does not know.
func (b *binder) exprMore(n ast.ExprNode) (e expr.Expr, ok bool, err error) {
	switch n := n.(type) {
	case *ast.PatternInExpr:
		if n.Sel != nil {
			return nil, true, Errorf(CodeFeatureNotSupport, "IN (SELECT …) is not supported")
		}
		x, err := b.expr(n.Expr)
		if err != nil {
			return nil, true, err
		}
		list := make([]expr.Expr, len(n.List))
		for i, v := range n.List {
			if list[i], err = b.exprAs(v, x.Type()); err != nil {
				return nil, true, err
			}
		}
		e, err := expr.NewIn(x, list, n.Not)
		if err != nil {
			return nil, true, b.typeErr("IN", fmt.Errorf("Invalid Predicate: %w", err))
		}
		return b.nulls(e), true, nil
	case *ast.BetweenExpr:
		x, err := b.expr(n.Expr)
		if err != nil {
			return nil, true, err
		}
		lo, err := b.exprAs(n.Left, x.Type())
		if err != nil {
			return nil, true, err
		}
		hi, err := b.exprAs(n.Right, x.Type())
		if err != nil {
			return nil, true, err
		}
		if _, lo, err = timeLiterals(x, lo); err != nil {
			return nil, true, err
		}
		if _, hi, err = timeLiterals(x, hi); err != nil {
			return nil, true, err
		}
		e, err := expr.NewBetween(x, lo, hi, n.Not)
		if err != nil {
			// ksqlDB's message names the bound that does not compare.
			for _, c := range []struct {
				op    expr.Op
				bound expr.Expr
			}{{expr.OpGE, lo}, {expr.OpLE, hi}} {
				if _, cerr := expr.NewBinary(c.op, x, c.bound); cerr != nil {
					return nil, true, b.errAt("BETWEEN", CodeDatatypeMismatch, "Invalid expression: Cannot compare %s (%s) to %s (%s) with %s.",
						ksqlText(x), ksqlTypeText(x), ksqlText(c.bound), ksqlTypeText(c.bound), ksqlCompareOps[c.op])
				}
			}
			return nil, true, b.typeErr("BETWEEN", err)
		}
		return b.nulls(e), true, nil
	case *ast.PatternLikeOrIlikeExpr:
		if !n.IsLike {
			return nil, true, b.errAt("ILIKE", CodeFeatureNotSupport, "ILIKE is not supported; use LIKE with LCASE")
		}
		x, err := b.expr(n.Expr)
		if err != nil {
			return nil, true, err
		}
		pat, err := b.expr(n.Pattern)
		if err != nil {
			return nil, true, err
		}
		var esc expr.Expr
		if n.EscapeExplicit {
			esc = &expr.Literal{V: types.StringDatum(string([]byte{n.Escape})), T: types.StringType}
		}
		e, err := expr.NewLike(x, pat, esc, n.Not)
		if err != nil {
			if k := x.Type().Kind; k != types.String && k != types.Unknown {
				return nil, true, b.errAt("LIKE", CodeDatatypeMismatch, "The column type for Like condition must be VARCHAR. The column type is %s", x.Type())
			}
			return nil, true, b.typeErr("LIKE", err)
		}
		return e, true, nil
	case *ast.PatternRegexpExpr:
		// The rewriter turned IS [NOT] DISTINCT FROM into [NOT] REGEXP.
		l, err := b.expr(n.Expr)
		if err != nil {
			return nil, true, err
		}
		r, err := b.expr(n.Pattern)
		if err != nil {
			return nil, true, err
		}
		e, err := expr.NewDistinct(l, r, n.Not)
		if err != nil {
			return nil, true, b.typeErr("DISTINCT", err)
		}
		return e, true, nil
	case *ast.IsTruthExpr:
		x, err := b.expr(n.Expr)
		if err != nil {
			return nil, true, err
		}
		e, err := expr.NewIsTrue(x, n.True == 1, n.Not)
		if err != nil {
			return nil, true, b.typeErr("IS", err)
		}
		return e, true, nil
	case *ast.CaseExpr:
		var operand, els expr.Expr
		var err error
		if n.Value != nil {
			if operand, err = b.expr(n.Value); err != nil {
				return nil, true, err
			}
		}
		var whens, thens []expr.Expr
		for _, w := range n.WhenClauses {
			we, err := b.expr(w.Expr)
			if err != nil {
				return nil, true, err
			}
			te, err := b.expr(w.Result)
			if err != nil {
				return nil, true, err
			}
			whens, thens = append(whens, we), append(thens, te)
		}
		if n.ElseClause != nil {
			if els, err = b.expr(n.ElseClause); err != nil {
				return nil, true, err
			}
		}
		e, err := expr.NewCase(operand, whens, thens, els)
		if err != nil {
			return nil, true, b.typeErr("CASE", err)
		}
		return e, true, nil
	case *ast.FuncCallExpr:
		return b.special(n)
	}
	return nil, false, nil
}

// special binds calls of the functions the rewriter introduced; ok is
// false for ordinary function calls.
func (b *binder) special(n *ast.FuncCallExpr) (expr.Expr, bool, error) {
	name := strings.ToUpper(n.FnName.O)
	if !strings.HasPrefix(name, "__") {
		return nil, false, nil
	}
	switch name {
	case "__CAST":
		var x expr.Expr
		var err error
		if !isParam(n.Args[0]) {
			if x, err = b.expr(n.Args[0]); err != nil {
				return nil, true, err
			}
		}
		typeText := stringArg(n.Args[1])
		t, err := ParseType(typeText)
		if err != nil {
			msg := err.Error()
			if se, ok := err.(*Error); ok {
				msg = se.Msg
			}
			return nil, true, b.errAt("CAST", CodeUndefinedObject, "CAST to %s: %s", typeText, msg)
		}
		if x == nil {
			// A placeholder takes the type it is cast to, as in
			// Postgres ($1::int is an int4), unless it has one.
			if x, err = b.exprAs(n.Args[0], t); err != nil {
				return nil, true, err
			}
		}
		e, err := expr.NewCast(x, t)
		if err != nil {
			if b.clause == "SELECT" {
				err = fmt.Errorf("Invalid Select: %w", err)
			}
			return nil, true, b.typeErr("CAST", err)
		}
		return e, true, nil
	case "__SUBSCRIPT":
		x, err := b.expr(n.Args[0])
		if err != nil {
			return nil, true, err
		}
		i, err := b.expr(n.Args[1])
		if err != nil {
			return nil, true, err
		}
		e, err := expr.NewSubscript(x, i)
		if err != nil {
			return nil, true, b.typeErr("", err)
		}
		return e, true, nil
	case "__FIELD":
		x, err := b.expr(n.Args[0])
		if err != nil {
			return nil, true, err
		}
		field := stringArg(n.Args[1])
		e, err := expr.NewField(x, field)
		if err != nil {
			return nil, true, b.typeErr(field, err)
		}
		return e, true, nil
	case "__ARRAY":
		elems, err := b.exprs(n.Args)
		if err != nil {
			return nil, true, err
		}
		e, err := expr.NewArray(elems)
		if err != nil {
			return nil, true, b.typeErr("ARRAY", err)
		}
		return e, true, nil
	case "__MAP":
		if len(n.Args)%2 != 0 {
			return nil, true, b.errAt("MAP", CodeSyntaxError, "MAP takes key := value pairs")
		}
		all, err := b.exprs(n.Args)
		if err != nil {
			return nil, true, err
		}
		var keys, vals []expr.Expr
		for i := 0; i < len(all); i += 2 {
			keys, vals = append(keys, all[i]), append(vals, all[i+1])
		}
		e, err := expr.NewMap(keys, vals)
		if err != nil {
			return nil, true, b.typeErr("MAP", err)
		}
		return e, true, nil
	case "__STRUCT":
		if len(n.Args)%2 != 0 {
			return nil, true, b.errAt("STRUCT", CodeSyntaxError, "STRUCT takes name := value pairs")
		}
		var names []string
		var vals []expr.Expr
		for i := 0; i < len(n.Args); i += 2 {
			v, err := b.expr(n.Args[i+1])
			if err != nil {
				return nil, true, err
			}
			names, vals = append(names, stringArg(n.Args[i])), append(vals, v)
		}
		e, err := expr.NewStruct(names, vals)
		if err != nil {
			return nil, true, b.typeErr("STRUCT", err)
		}
		return e, true, nil
	case "__LAMBDA":
		return nil, true, b.errAt("=>", CodeSyntaxError, "a lambda is only allowed as an argument of TRANSFORM, FILTER or REDUCE")
	}
	return nil, false, nil // a unit function: __DATEADD and friends
}

func stringArg(n ast.ExprNode) string {
	if v, ok := n.(*driver.ValueExpr); ok {
		return v.GetString()
	}
	return ""
}

// extractParts maps EXTRACT's units to the functions that compute them.
var extractParts = map[ast.TimeUnitType]string{
	ast.TimeUnitYear: "YEAR", ast.TimeUnitQuarter: "QUARTER", ast.TimeUnitMonth: "MONTH", ast.TimeUnitDay: "DAYOFMONTH",
	ast.TimeUnitHour: "HOUR", ast.TimeUnitMinute: "MINUTE", ast.TimeUnitSecond: "SECOND",
}

// call binds an ordinary function call, including lambda arguments.
func (b *binder) call(n *ast.FuncCallExpr) (expr.Expr, error) {
	name := strings.TrimPrefix(strings.ToUpper(n.FnName.O), "__")
	if name == "LOG" && len(n.Args) == 1 && !b.legacyFns {
		// ksqlDB's one-argument LOG is the natural logarithm (its
		// documentation says base 10); statements recorded before kept
		// base 10.
		name = "LN"
	}
	if name == "EXTRACT" && len(n.Args) == 2 {
		// EXTRACT(HOUR FROM ts): Flink's and Postgres's form of HOUR(ts).
		if u, ok := n.Args[0].(*ast.TimeUnitExpr); ok {
			part, ok := extractParts[u.Unit]
			if !ok {
				return nil, b.errAt(name, CodeFeatureNotSupport, "EXTRACT(%s FROM …) is not supported: use YEAR, QUARTER, MONTH, DAY, HOUR, MINUTE or SECOND", u.Unit)
			}
			name, n = part, &ast.FuncCallExpr{FnName: ast.NewCIStr(part), Args: n.Args[1:]}
		}
	}
	fn, ok := expr.Lookup(name)
	if !ok {
		if _, isTable := expr.LookupTable(name); isTable {
			return nil, b.errAt(name, CodeFeatureNotSupport, "table function %s is only allowed as a whole item of the SELECT list", name)
		}
		return nil, b.errAt(name, CodeUndefinedFunction, "Can't find any functions with the name '%s'", name)
	}
	args := make([]expr.Expr, len(n.Args))
	argTypes := make([]types.Type, 0, len(n.Args))
	for i, a := range n.Args {
		if lc, ok := a.(*ast.FuncCallExpr); ok && strings.ToUpper(lc.FnName.O) == "__LAMBDA" {
			lam, err := b.lambda(name, lc, argTypes, i)
			if err != nil {
				return nil, err
			}
			args[i] = lam
			argTypes = append(argTypes, lam.Type())
			continue
		}
		e, err := b.expr(a)
		if err != nil {
			return nil, err
		}
		args[i] = e
		argTypes = append(argTypes, e.Type())
	}
	if name == "GREATEST" || name == "LEAST" {
		if err := temporalLiterals(args); err != nil {
			return nil, b.errAt(name, CodeDatatypeMismatch, "%v", err)
		}
		if !b.sqlNulls { // statements recorded before this check keep running
			if err := expr.AmbiguousExtremum(name, argTypes); err != nil {
				return nil, b.errAt(name, CodeAmbiguousFunction, "%v", err)
			}
		}
	}
	if name == "REGEXP_EXTRACT" {
		// Flink writes (string, regex), ksqlDB (regex, string).
		swap, err := expr.RegexpExtractOrder(args)
		if err != nil {
			return nil, b.errAt(name, CodeAmbiguousFunction, "%v", err)
		}
		if swap {
			args[0], args[1] = args[1], args[0]
		}
	}
	e, err := expr.NewCall(fn, args)
	if err != nil {
		if unit, ok := firstArg(args).(*expr.Literal); ok && strings.Contains(err.Error(), "unknown time unit") {
			// DATEADD(d, 5, d): ksqlDB reads the unit as the column.
			if i := b.schema.Index(strings.ToUpper(string(unit.V.B))); i >= 0 {
				parts := []string{b.schema.Columns[i].Type.Quoted()}
				for _, t := range argTypes[1:] {
					parts = append(parts, t.Quoted())
				}
				return nil, b.errAt(name, CodeUndefinedFunction, "Function '%s' does not accept parameters (%s). %v", name, strings.Join(parts, ", "), err)
			}
		}
		return nil, b.errAt(name, CodeUndefinedFunction, "%v", err)
	}
	if b.sqlNulls && (name == "CEIL" || name == "FLOOR") && len(args) == 1 && args[0].Type().Kind == types.Decimal {
		// Statements recorded before CEIL and FLOOR kept a DECIMAL's
		// type gave DECIMAL(p-s+1, 0): the same whole value, narrowed.
		t := args[0].Type()
		return expr.NewCast(e, types.Type{Kind: types.Decimal, Precision: min(t.Precision-t.Scale+1, types.ShortDecimalPrecision), Scale: 0})
	}
	return e, nil
}

// temporalLiterals casts the string literals among arguments of a DATE,
// TIME or TIMESTAMP type to it, as ksqlDB does for GREATEST('2022-06-14',
// d).
func temporalLiterals(args []expr.Expr) error {
	var t types.Type
	for _, a := range args {
		switch k := a.Type().Kind; k {
		case types.Date, types.Time, types.Timestamp:
			t = a.Type()
		}
	}
	if t.Kind == types.Unknown {
		return nil
	}
	for i, a := range args {
		if l, ok := a.(*expr.Literal); ok && !l.V.Null && l.T.Kind == types.String {
			c, err := expr.NewCast(a, t)
			if err != nil {
				return err
			}
			args[i] = c
		}
	}
	return nil
}

// lambda binds __LAMBDA(P1, …, body) as argument pos of fn.
func (b *binder) lambda(fn string, lc *ast.FuncCallExpr, before []types.Type, pos int) (*expr.Lambda, error) {
	if len(lc.Args) < 2 {
		return nil, b.errAt("=>", CodeSyntaxError, "a lambda needs parameters and a body")
	}
	params := lc.Args[:len(lc.Args)-1]
	names := make([]string, len(params))
	for i, p := range params {
		c, ok := p.(*ast.ColumnNameExpr)
		if !ok || c.Name.Table.O != "" {
			return nil, b.errAt("=>", CodeSyntaxError, "lambda parameters are names")
		}
		names[i] = c.Name.Name.O
	}
	pts, err := expr.LambdaParamTypes(fn, before, pos, len(names))
	if err != nil {
		return nil, b.errAt(fn, CodeDatatypeMismatch, "%v", err)
	}
	b.lambdas = append(b.lambdas, lambdaScope{names: names, types: pts})
	body, err := b.expr(lc.Args[len(lc.Args)-1])
	b.lambdas = b.lambdas[:len(b.lambdas)-1]
	if err != nil {
		return nil, err
	}
	return expr.NewLambda(names, pts, body), nil
}

// lambdaVar resolves name against the innermost lambda that declares it.
func (b *binder) lambdaVar(name string) (expr.Expr, bool) {
	for i := len(b.lambdas) - 1; i >= 0; i-- {
		s := b.lambdas[i]
		for j, p := range s.names {
			if p == name {
				return expr.NewLambdaVar(j, name, s.types[j]), true
			}
		}
	}
	return nil, false
}

// ParseType parses a ksqlDB type name such as INT, DECIMAL(10, 2) or
// ARRAY<STRUCT<A STRING>>.
func ParseType(text string) (types.Type, error) {
	p := &parser{text: text, toks: lex(text)}
	t, err := p.typ()
	if err != nil {
		return types.Type{}, err
	}
	if p.peek().kind != tEOF {
		return types.Type{}, p.unexpected(p.peek(), "end of type")
	}
	return t, nil
}

// timeLiterals converts a string literal compared with ROWTIME,
// WINDOWSTART or WINDOWEND (BIGINT milliseconds) into those milliseconds,
// as ksqlDB does ("ROWTIME > '2020-01-01T00:00:00'"): the text is an ISO
// timestamp, UTC unless it gives an offset. Other operands pass as they
// are.
func timeLiterals(l, r expr.Expr) (expr.Expr, expr.Expr, error) {
	conv := func(col, lit expr.Expr) (expr.Expr, error) {
		c, ok := col.(*expr.Column)
		s, ok2 := lit.(*expr.Literal)
		if !ok || !ok2 || s.V.Null || s.T.Kind != types.String || c.T.Kind != types.Bigint ||
			(c.Name != types.RowTime && c.Name != types.WindowStart && c.Name != types.WindowEnd) {
			return lit, nil
		}
		ms, err := parseTimeLiteral(string(s.V.B))
		if err != nil {
			return nil, Errorf(CodeInvalidParameter, "cannot compare %s with '%s': not a timestamp (yyyy-MM-ddTHH:mm:ss.SSS with an optional offset)", c.Name, s.V.B)
		}
		return expr.IntLiteral(ms), nil
	}
	var err error
	if r, err = conv(l, r); err != nil {
		return nil, nil, err
	}
	if l, err = conv(r, l); err != nil {
		return nil, nil, err
	}
	return l, r, nil
}

// timeLiteralParsers read the partial ISO timestamps ksqlDB accepts in
// comparisons with ROWTIME, most complete first.
var timeLiteralParsers = func() []func([]byte) (int64, error) {
	var out []func([]byte) (int64, error)
	for _, p := range []string{
		"yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "yyyy-MM-dd'T'HH:mm:ss.SSSXX", "yyyy-MM-dd'T'HH:mm:ss.SSS",
		"yyyy-MM-dd'T'HH:mm:ssXXX", "yyyy-MM-dd'T'HH:mm:ssXX", "yyyy-MM-dd'T'HH:mm:ss",
		"yyyy-MM-dd'T'HH:mm", "yyyy-MM-dd'T'HH", "yyyy-MM-dd", "yyyy-MM", "yyyy",
	} {
		if f, err := expr.TimestampParser(p); err == nil {
			out = append(out, f)
		}
	}
	return out
}()

func parseTimeLiteral(s string) (int64, error) {
	var err error
	for _, f := range timeLiteralParsers {
		var ms int64
		if ms, err = f([]byte(s)); err == nil {
			return ms, nil
		}
	}
	return 0, err
}

// firstArg is args[0], or nil for no arguments.
func firstArg(args []expr.Expr) expr.Expr {
	if len(args) == 0 {
		return nil
	}
	return args[0]
}
