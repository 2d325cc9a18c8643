package sql

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// Catalog is what binding needs to know of the catalog.
type Catalog interface {
	Source(name string) (*catalog.Source, bool)
}

// binder resolves names in one statement.
type binder struct {
	// feeds are the plans of the derived tables a join reads
	// (bind_join_derived.go), by their stand-in sources.
	feeds map[*catalog.Source]planner.Node
	// windowDeps are, by the stand-in sources of windowed derived
	// tables, their window_end columns that follow from a window_start
	// column of theirs (bind_join_derived.go); implied are the window_end
	// equalities taken out of the last join's ON, bound as its residual;
	// lastJoin is that join.
	windowDeps map[*catalog.Source]map[int]int
	implied    []ast.ExprNode
	lastJoin   *ast.Join

	// The statement's placeholders (params.go): the values they read
	// and their types, inferred as they are bound.
	pbound *expr.Params
	ptypes []types.Type
	text   string
	toks   []token
	schema types.Schema
	src    *catalog.Source
	alias  string
	cat    Catalog
	// constJoin lets a join's ON compare a constant, the left side's,
	// with the right's key: a scalar subquery's join (subquery.go).
	constJoin bool
	// join is set while binding a join's SELECT: names resolve against
	// its two sides.
	join    *joinScope
	lambdas []lambdaScope // innermost last
	agg     *aggScope     // set while binding the SELECT list and HAVING of a GROUP BY
	// aggCall names the aggregate whose arguments are being bound, for
	// ksqlDB's message on nested aggregates.
	aggCall string
	// clause is the clause being bound (SELECT, WHERE, PARTITION BY,
	// GROUP BY, HAVING; "" elsewhere): ksqlDB's messages name it.
	clause string
	// windowed: the SELECT has a WINDOW clause, whose bounds only its
	// SELECT list and HAVING see.
	windowed bool
	// sqlNulls keeps SQL's NULL comparisons (Select.SQLNulls); otherwise
	// they are ksqlDB's.
	sqlNulls bool
	// legacyFns and collectLimits are Select.LegacyFunctions and
	// Select.CollectLimits.
	legacyFns     bool
	collectLimits map[string]int
	// legacyJoins plans joins as before (Select.LegacyJoins).
	legacyJoins bool
	// legacyJoins2 plans joins as the second revision did
	// (Select.LegacyJoins2).
	legacyJoins2 bool
	// legacyJoins3 plans joins as the third revision did
	// (Select.LegacyJoins3).
	legacyJoins3 bool
	// legacySum keeps SUM NULL for a group of no values (Select.LegacySum).
	legacySum bool
	// legacyDistinct keeps distinct aggregates' stream state over tables
	// (Select.LegacyDistinct).
	legacyDistinct bool
	// legacyDistinctState keeps distinct values in the group's state
	// (Select.LegacyDistinctState).
	legacyDistinctState bool
	// query is set while binding a persistent query's SELECT (CREATE …
	// AS, INSERT INTO … SELECT), where ksqlDB's typing rules apply whole.
	query bool
}

// identPos finds the first token naming name, for error positions.
func (b *binder) identPos(name string) int {
	for _, t := range b.toks {
		if (t.kind == tIdent || t.kind == tQuoted) && t.text == name {
			return t.pos
		}
	}
	return -1
}

func (b *binder) errAt(name, code, format string, args ...any) *Error {
	if name == "ON" && b.join != nil {
		if pos := b.onPos(); pos >= 0 {
			return errorAt(b.text, pos, code, format, args...) // this join's ON, in an N-way join
		}
	}
	if pos := b.identPos(name); pos >= 0 {
		return errorAt(b.text, pos, code, format, args...)
	}
	return Errorf(code, format, args...)
}

// joinText records where the join being bound is in the statement (its
// ON, its JOIN, its right source named right), as errAt finds them, for
// the refusals of the planner's rules (planner.JoinError, planError).
func (b *binder) joinText(right string) *planner.JoinText {
	on := -1
	if b.join != nil {
		on = b.onPos()
	}
	if on < 0 {
		on = b.identPos("ON")
	}
	return &planner.JoinText{Text: b.text, On: on, Keyword: b.identPos("JOIN"), Right: b.identPos(right)}
}

// planError is a refusal of the planner's rules as the binder would
// have made it: a join's, at the part of the join it names. Nil for
// other errors.
func planError(err error) *Error {
	var je *planner.JoinError
	if !errors.As(err, &je) {
		return nil
	}
	if text, pos := je.Pos(); pos >= 0 {
		return errorAt(text, pos, CodeFeatureNotSupport, "%s", je.Msg)
	}
	return Errorf(CodeFeatureNotSupport, "%s", je.Msg)
}

// bindSelect binds a SELECT against cat into a query's plan, before the
// planner's rules (BindSelect).
func bindSelect(sel *Select, cat Catalog) (*planner.Query, error) {
	if sel.union != nil {
		return bindUnion(sel, cat)
	}
	s := sel.stmt
	if sel.unsupported != "" {
		return nil, errorAt(sel.text, sel.unsupPos, CodeFeatureNotSupport, "%s: not supported yet", sel.unsupported)
	}
	if s.With != nil {
		var err error
		if cat, err = withScope(sel, s.With, cat); err != nil {
			return nil, err
		}
	}
	if err := rewriteSubqueries(sel, cat); err != nil { // subquery.go
		return nil, err
	}
	if sel.setAgg != nil {
		set, err := bindSet(sel, cat)
		if err != nil {
			return nil, err
		}
		q, err := bindSelect0(sel, set)
		if err != nil {
			return nil, err
		}
		attachSet(q.Root, set)
		return q, nil
	}
	return bindSelect0(sel, cat)
}

// bindSelect0 is bindSelect after the rewrite of its subquery.
func bindSelect0(sel *Select, cat Catalog) (*planner.Query, error) {
	s := sel.stmt
	b := &binder{text: sel.text, toks: sel.toks, cat: cat, windowed: sel.window != nil, sqlNulls: sel.SQLNulls,
		legacyFns: sel.LegacyFunctions, collectLimits: sel.CollectLimits, legacyJoins: sel.LegacyJoins, legacyJoins2: sel.LegacyJoins2, legacyJoins3: sel.LegacyJoins3, legacySum: sel.LegacySum,
		legacyDistinct: sel.LegacyDistinct, legacyDistinctState: sel.LegacyDistinctState, constJoin: sel.setScalar,
		query: sel.persistent || sel.inserting}
	sel.paramTypes = make([]types.Type, sel.nParams)
	b.pbound, b.ptypes = sel.Params, sel.paramTypes
	if n := sel.limitParam; n > 0 {
		if sel.Params == nil || n > len(sel.paramTypes) {
			return nil, Errorf(codeUndefinedParameter, "there is no parameter $%d", n)
		}
		sel.paramTypes[n-1] = types.BigintType
	}
	defer func() {
		for i := range sel.paramTypes {
			if sel.paramTypes[i].Kind == 0 {
				sel.paramTypes[i] = types.StringType
			}
		}
	}()
	if s.From == nil || s.From.TableRefs == nil {
		return nil, Errorf(CodeFeatureNotSupport, "SELECT needs a FROM clause naming a stream or table")
	}
	j := s.From.TableRefs
	if pull := sel.Emit == "" && !sel.persistent && !sel.inserting; pull {
		// ksqlDB's pull-query validation, before anything else.
		const hint = " See https://cnfl.io/queries for more info.\nAdd EMIT CHANGES if you intended to issue a push query."
		switch {
		case j.Right != nil:
			return nil, Errorf(CodeFeatureNotSupport, "Pull queries don't support JOIN clauses."+hint)
		case sel.window != nil:
			return nil, Errorf(CodeFeatureNotSupport, "Pull queries don't support WINDOW clauses."+hint)
		case s.GroupBy != nil:
			return nil, Errorf(CodeFeatureNotSupport, "Pull queries don't support GROUP BY clauses."+hint)
		}
	}
	var node planner.Node
	if j.Right != nil {
		if err := b.kafkaValueJoin(sel, j); err != nil {
			return nil, err
		}
		join, err := b.bindJoinResidual(sel, j)
		if err != nil {
			return nil, err
		}
		node = join
		// Whether the join's changes carry old rows is the planner's
		// (rule JoinOldValues), but for a command migrated from before
		// the second revision of joins.
		join.LegacyNoOldValues = sel.LegacyJoins
		switch {
		case len(sel.partitionExprs) > 0 && join.OfTables():
			// ksqlDB's rule for tables: their key is the primary key.
			return nil, errorAt(sel.text, sel.toks[sel.partitionBy].pos, CodeFeatureNotSupport, "PARTITION BY of a table–table join is not supported: a table's key is its primary key")
		}
	} else {
		if sel.interval != nil {
			return nil, errorAt(sel.text, sel.interval.pos, CodeFeatureNotSupport, "… BETWEEN … INTERVAL … bounds the times of a stream–stream join: it goes in the join's ON")
		}
		ts, ok := j.Left.(*ast.TableSource)
		if !ok {
			return nil, Errorf(CodeFeatureNotSupport, "FROM must name a stream or table")
		}
		if n, ok, err := b.fromTableSource(sel, ts, cat); err != nil {
			return nil, err
		} else if ok {
			if sel.tvf != nil {
				return nil, sel.tvfOverDerived()
			}
			node = n // a derived table or a CTE (bind_derived.go)
		} else {
			name := ts.Source.(*ast.TableName).Name.O
			src, ok := cat.Source(name)
			if !ok {
				return nil, b.errAt(name, CodeUndefinedTable, "stream or table %s does not exist", name)
			}
			b.src, b.alias = src, ts.AsName.O
			scan := planner.NewScan(src)
			b.schema = scan.Schema()
			node = scan
			if sel.tvf != nil {
				if node, err = sel.tvfNode(scan); err != nil {
					return nil, err
				}
			}
		}
	}
	if s.Where != nil {
		b.clause = "WHERE"
		pred, err := b.expr(s.Where)
		b.clause = ""
		if err != nil {
			return nil, whereError(err)
		}
		f, err := planner.NewFilter(node, pred)
		if err != nil {
			return nil, Errorf(CodeDatatypeMismatch, "Type error in WHERE expression: %v", err)
		}
		node = f
	}
	if len(sel.partitionExprs) > 0 {
		var keys []expr.Expr
		var keyNames []string
		gen := b.newAliasGen(sel)
		for i, n := range sel.partitionExprs {
			b.clause = "PARTITION BY"
			e, err := b.expr(n)
			b.clause = ""
			if err != nil {
				return nil, err
			}
			keys = append(keys, e)
			if _, isCol := e.(*expr.Column); isCol {
				keyNames = append(keyNames, "")
			} else {
				keyNames = append(keyNames, gen.forExpr(n, i))
			}
		}
		rk, err := planner.NewRekey(node, keys, keyNames)
		if err != nil {
			return nil, errorAt(sel.text, sel.toks[sel.partitionBy].pos, CodeDatatypeMismatch, "%v", err)
		}
		node = rk
		// Names now resolve against the re-keyed rows.
		b.schema = rk.Schema()
	}
	rnNode, rnField, err := b.rowNumber(sel, node) // bind_topn.go
	if err != nil {
		return nil, err
	}
	rnCol := -1
	if rnField != nil {
		node, b.schema = rnNode, rnNode.Schema()
		rnCol = len(b.schema.Columns) - 1
	}
	if s.Distinct {
		return b.selectDistinct(sel, node) // bind_distinct.go
	}
	if s.GroupBy != nil || s.Having != nil || hasAggregate(s) {
		return b.aggregateQuery(sel, node)
	}
	b.clause = "SELECT"
	defer func() { b.clause = "" }()
	if sel.window != nil {
		return nil, errorAt(sel.text, sel.window.pos, CodeSyntaxError, "WINDOW clause requires a GROUP BY clause.")
	}
	switch {
	case s.OrderBy != nil:
		// ksqlDB's grammar has no ORDER BY: it fails at BY, echoing the
		// statement.
		if pos := b.identPos("BY"); pos >= 0 {
			return nil, errorAt(b.text, pos, CodeSyntaxError, "Syntax Error\n\nStatement: %s;\nORDER BY is not supported on streams", strings.TrimRight(strings.TrimSpace(b.text), ";"))
		}
		return nil, b.errAt("ORDER", CodeFeatureNotSupport, "ORDER BY is not supported on streams")
	case s.Distinct:
		return nil, b.errAt("DISTINCT", CodeFeatureNotSupport, "SELECT DISTINCT is not supported")
	}
	// Table functions (EXPLODE) in the SELECT list become a FlatMap; the
	// projection then reads their output columns.
	var tfns []*expr.TableFunction
	var targs [][]expr.Expr
	tcol := map[*ast.SelectField]int{}
	for _, f := range s.Fields.Fields {
		call, ok := f.Expr.(*ast.FuncCallExpr)
		if !ok {
			continue
		}
		tf, ok := expr.LookupTable(strings.TrimPrefix(strings.ToUpper(call.FnName.O), "__"))
		if !ok {
			continue
		}
		args, err := b.exprs(call.Args)
		if err != nil {
			return nil, err
		}
		tcol[f] = len(tfns)
		tfns, targs = append(tfns, tf), append(targs, args)
	}
	if len(tfns) > 0 && b.src != nil && b.src.Kind == catalog.Table && !b.legacyFns {
		return nil, b.errAt(tfns[0].Name, CodeFeatureNotSupport, "Table source is not supported with table functions")
	}
	if len(tfns) > 0 {
		fm, err := planner.NewFlatMap(node, tfns, targs)
		if err != nil {
			return nil, b.errAt(tfns[0].Name, CodeDatatypeMismatch, "%v", err)
		}
		node = fm
		b.schema = fm.Schema()
	}
	var exprs []expr.Expr
	var names []string
	gen := b.newAliasGen(sel)
	for i, f := range s.Fields.Fields {
		if f == rnField {
			c := b.schema.Columns[rnCol]
			exprs, names = append(exprs, &expr.Column{Index: rnCol, Name: c.Name, T: c.Type}), append(names, c.Name)
			continue
		}
		if k, ok := tcol[f]; ok {
			idx := len(b.schema.Columns) - len(tfns) + k
			c := b.schema.Columns[idx]
			name := f.AsName.O
			if name == "" {
				name = gen.forExpr(f.Expr, i)
			}
			exprs = append(exprs, &expr.Column{Index: idx, Name: c.Name, T: c.Type})
			names = append(names, name)
			continue
		}
		if call, ok := unparen(f.Expr).(*ast.FuncCallExpr); ok && strings.EqualFold(call.FnName.O, "__FIELDS") && len(call.Args) == 1 {
			// s->*: one column per field of the struct, named after it.
			x, err := b.expr(call.Args[0])
			if err != nil {
				return nil, err
			}
			if x.Type().Kind != types.Struct {
				return nil, b.errAt("*", CodeDatatypeMismatch, "%s->* needs a STRUCT, not %s", x, x.Type())
			}
			for _, fd := range x.Type().Fields {
				e, err := expr.NewField(x, fd.Name)
				if err != nil {
					return nil, err
				}
				exprs, names = append(exprs, e), append(names, fd.Name)
			}
			continue
		}
		if f.WildCard != nil {
			cols := b.schema.Visible()
			if rnCol >= 0 {
				cols = slices.DeleteFunc(slices.Clone(cols), func(c int) bool { return c == rnCol })
			}
			if len(tfns) > 0 && !b.legacyFns {
				// * is the input's columns, not the table functions' outputs.
				cols = slices.DeleteFunc(slices.Clone(cols), func(c int) bool { return c >= len(b.schema.Columns)-len(tfns) })
			}
			if q := f.WildCard.Table.O; q != "" && b.join == nil && b.src != nil && q != b.src.Name && q != b.alias {
				return nil, b.errAt(q, CodeUndefinedTable, "'%s' is not a valid stream/table name or alias.", q)
			}
			if q := f.WildCard.Table.O; q != "" && b.join != nil {
				var err error
				if cols, err = b.sideColumns(q); err != nil {
					return nil, err
				}
			} else if b.join != nil {
				cols = keysFirst(b.schema, cols) // a join's key (repartitioned, synthetic) first, as ksqlDB lists it
				if b.join.hidden != nil {
					shown := cols[:0:0]
					for _, c := range cols {
						if !b.join.hidden[c] {
							shown = append(shown, c)
						}
					}
					cols = shown
				}
			}
			if rk, ok := node.(*planner.Rekey); ok && b.join != nil && f.WildCard.Table.O == "" && !b.legacyJoins2 {
				cols = b.joinRekeyedStar(rk)
			} else if ok && !sel.PositionalAliases {
				cols = rekeyedOrder(rk, cols)
			}
			for _, c := range cols {
				col := b.schema.Columns[c]
				if col.Window && sel.persistent && (b.join == nil || b.legacyJoins3) {
					// A persistent query's result is windowed itself:
					// the bounds stay in its keys, as in ksqlDB. A join
					// of windowed sources lists each side's bounds as
					// values too, as ksqlDB does (since
					// sqlstreams.joins=4).
					continue
				}
				name := col.Name
				if b.join != nil && b.join.synth == c {
					name = b.join.synthName
				}
				exprs = append(exprs, &expr.Column{Index: c, Name: col.Name, T: col.Type})
				names = append(names, name)
			}
			continue
		}
		e, err := b.expr(f.Expr)
		if err != nil {
			return nil, err
		}
		if b.join != nil {
			e = b.joinKeyColumn(e)
		}
		// A projected PARTITION BY expression is the new key column. A
		// plain column is that column already; a pseudo column is an
		// expression, with a key column of its own.
		if rk, ok := node.(*planner.Rekey); ok {
			for k, ke := range rk.Exprs {
				if kc, isCol := ke.(*expr.Column); (!isCol || kc.Index != rk.Keys[k]) && ke.String() == e.String() {
					c := rk.Schema().Columns[rk.Keys[k]]
					e = &expr.Column{Index: rk.Keys[k], Name: c.Name, T: c.Type}
				}
			}
		}
		name := f.AsName.O
		if name == "" {
			if c, ok := e.(*expr.Column); ok {
				name = c.Name
				if b.join != nil {
					name = b.joinName(c)
				}
			} else {
				name = gen.forExpr(f.Expr, i)
			}
		}
		exprs = append(exprs, e)
		names = append(names, name)
	}
	if b.join != nil && sel.persistent {
		if joinRows(node) && b.join.keyed && !b.join.fk {
			sink := sel.sink
			if sink == "" {
				sink = "the query's result"
			}
			if err := b.projectJoinKey(exprs, names, sink); err != nil {
				if sel.subquery {
					return nil, subqueryKeyError(sel, sink)
				}
				return nil, err
			}
		} else if len(sel.partitionExprs) == 0 || b.legacyJoins2 {
			// (After PARTITION BY the key is its expression's: the
			// columns of the join stay what they are.)
			b.joinKeyAsKey(exprs)
		}
	}
	proj, err := planner.NewProject(node, exprs, names)
	if err != nil {
		return nil, Errorf(CodeDatatypeMismatch, "%v", err)
	}
	return &planner.Query{Root: proj, Emit: sel.Emit, Limit: sel.Limit}, nil
}

// joinRows reports whether n passes a join's rows on unchanged (the
// join, or a filter of it): a projection over them is keyed by the
// join's key.
func joinRows(n planner.Node) bool {
	for {
		switch x := n.(type) {
		case *planner.Join:
			return true
		case *planner.Filter:
			n = x.Input
		default:
			return false
		}
	}
}

// rekeyedOrder orders the columns SELECT * reads after PARTITION BY as
// ksqlDB does: the new key columns in PARTITION BY order, the input's
// value columns, then its old key columns.
func rekeyedOrder(rk *planner.Rekey, cols []int) []int {
	in := rk.Input.Schema().Columns
	isNewKey := map[int]bool{}
	for _, k := range rk.Keys {
		isNewKey[k] = true
	}
	visible := map[int]bool{}
	for _, c := range cols {
		visible[c] = true
	}
	out := make([]int, 0, len(cols))
	for _, k := range rk.Keys {
		if visible[k] {
			out = append(out, k)
		}
	}
	for _, oldKey := range []bool{false, true} {
		for _, c := range cols {
			if !isNewKey[c] && (c < len(in) && in[c].Key) == oldKey {
				out = append(out, c)
			}
		}
	}
	return out
}

// expr binds a TiDB expression.
func (b *binder) expr(n ast.ExprNode) (expr.Expr, error) {
	if b.agg != nil {
		if e, ok, err := b.aggExpr(n); ok {
			return e, err
		}
	}
	if e, ok, err := b.exprMore(n); ok {
		return e, err
	}
	switch n := n.(type) {
	case *ast.ParenthesesExpr:
		return b.expr(n.Expr)
	case *ast.ColumnNameExpr:
		return b.column(n.Name)
	case *driver.ValueExpr:
		return literal(n)
	case *driver.ParamMarkerExpr:
		return b.param(n, types.Type{})
	case *ast.BinaryOperationExpr:
		// A placeholder takes the type of the other operand.
		var l, r expr.Expr
		var err error
		if isParam(n.L) && !isParam(n.R) {
			if r, err = b.expr(n.R); err != nil {
				return nil, err
			}
			if l, err = b.exprAs(n.L, r.Type()); err != nil {
				return nil, err
			}
		} else {
			if l, err = b.expr(n.L); err != nil {
				return nil, err
			}
			if r, err = b.exprAs(n.R, l.Type()); err != nil {
				return nil, err
			}
		}
		op, ok := binaryOps[n.Op]
		if !ok {
			return nil, Errorf(CodeFeatureNotSupport, "operator %s is not supported yet", n.Op)
		}
		switch op {
		case expr.OpEQ, expr.OpNE, expr.OpLT, expr.OpLE, expr.OpGT, expr.OpGE:
			if l, r, err = timeLiterals(l, r); err != nil {
				return nil, err
			}
			if !b.sqlNulls {
				if err := b.ksqlComparable(op, l, r); err != nil {
					return nil, err
				}
			}
		case expr.OpAdd, expr.OpSub, expr.OpMul, expr.OpDiv, expr.OpMod:
			// ksqlDB refuses arithmetic on an untyped NULL.
			if !b.sqlNulls && (untypedNull(l) || untypedNull(r)) {
				return nil, Errorf(CodeDatatypeMismatch, "Error processing expression: (%s %s %s). Arithmetic on types %s and %s are not supported.",
					ksqlText(l), op, ksqlText(r), ksqlTypeText(l), ksqlTypeText(r))
			}
		}
		e, err := expr.NewBinary(op, l, r)
		if err != nil {
			if name, ok := ksqlCompareOps[op]; ok && !b.sqlNulls {
				return nil, Errorf(CodeDatatypeMismatch, "Cannot compare %s (%s) to %s (%s) with %s.\nStatement: (%s %s %s)",
					ksqlText(l), ksqlTypeText(l), ksqlText(r), ksqlTypeText(r), name, ksqlText(l), op, ksqlText(r))
			}
			switch op {
			case expr.OpAdd, expr.OpSub, expr.OpMul, expr.OpDiv, expr.OpMod:
				return nil, Errorf(CodeDatatypeMismatch, "Error processing expression: (%s %s %s). Unsupported arithmetic types. %s %s (%v)",
					arithText(l), op, arithText(r), l.Type().Kind, r.Type().Kind, err)
			}
			return nil, Errorf(CodeDatatypeMismatch, "%v", err)
		}
		return b.nulls(e), nil
	case *ast.UnaryOperationExpr:
		x, err := b.expr(n.V)
		if v, ok := n.V.(*driver.ValueExpr); ok && err != nil && n.Op == opcode.Minus && v.Kind() == driver.KindUint64 {
			// The number with its sign, as ksqlDB's message gives it.
			return nil, Errorf(CodeInvalidParameter, "Invalid numeric literal: -%d: out of BIGINT range", v.GetUint64())
		}
		if err != nil {
			return nil, err
		}
		var op expr.Op
		switch n.Op {
		case opcode.Not, opcode.Not2:
			op = expr.OpNot
		case opcode.Minus:
			if lit, ok := x.(*expr.Literal); ok && !lit.V.Null {
				return expr.NegLiteral(lit), nil
			}
			op = expr.OpNeg
		case opcode.Plus:
			return x, nil
		default:
			return nil, Errorf(CodeFeatureNotSupport, "operator %s is not supported yet", n.Op)
		}
		e, err := expr.NewUnary(op, x)
		if err != nil {
			return nil, Errorf(CodeDatatypeMismatch, "%v", err)
		}
		return e, nil
	case *ast.IsNullExpr:
		x, err := b.expr(n.Expr)
		if err != nil {
			return nil, err
		}
		return &expr.IsNull{X: x, Not: n.Not}, nil
	case *ast.FuncCallExpr:
		return b.call(n)
	case *ast.AggregateFuncExpr:
		if b.clause == "WHERE" {
			// ksqlDB reports an argument that does not resolve first.
			for _, a := range n.Args {
				if _, err := b.expr(a); err != nil {
					return nil, err
				}
			}
		}
		if b.clause == "GROUP BY" {
			return nil, b.errAt(strings.ToUpper(n.F), CodeFeatureNotSupport, "GROUP BY does not support aggregate functions: %s is an aggregate function.", strings.ToUpper(n.F))
		}
		if b.aggCall != "" {
			args := make([]string, 0, len(n.Args))
			for _, a := range n.Args {
				if v, ok := a.(*driver.ValueExpr); !ok || strings.ToUpper(n.F) != "COUNT" || v.Kind() == driver.KindNull {
					args = append(args, ksqlCondition(a)) // COUNT(*) prints as COUNT()
				}
			}
			return nil, b.errAt(strings.ToUpper(n.F), CodeFeatureNotSupport, "Aggregate functions can not be nested: %s(%s(%s))", b.aggCall, strings.ToUpper(n.F), strings.Join(args, ", "))
		}
		return nil, b.errAt(strings.ToUpper(n.F), CodeFeatureNotSupport, "aggregate function %s needs GROUP BY, which is not supported yet", strings.ToUpper(n.F))
	}
	return nil, Errorf(CodeFeatureNotSupport, "expression %s is not supported yet", restore(n))
}

// unresolved refuses the column name (qualified by qual, or "") that no
// source in sources has, in ksqlDB's words, which name the clause.
func (b *binder) unresolved(qual, name, sources string) error {
	shown := name
	at := func(format string, args ...any) error { return b.errAt(name, CodeUndefinedColumn, format, args...) }
	if qual != "" {
		shown = qual + "." + name
		at = func(format string, args ...any) error {
			return b.qualErr(qual, name, CodeUndefinedColumn, format, args...)
		}
	}
	switch b.clause {
	case "PARTITION BY":
		return at("PARTITION BY column '%s' cannot be resolved. '%s' must be a column in the source schema since PARTITION BY is applied on the input.", shown, shown)
	case "":
		return at("column '%s' cannot be resolved. It is not a column of %s.", shown, sources)
	}
	return at("%s column '%s' cannot be resolved. It is not a column of %s.", b.clause, shown, sources)
}

func restore(n ast.Node) string {
	var sb strings.Builder
	if err := n.Restore(newRestoreCtx(&sb)); err != nil {
		return fmt.Sprintf("%T", n)
	}
	return sb.String()
}

var binaryOps = map[opcode.Op]expr.Op{
	opcode.Plus: expr.OpAdd, opcode.Minus: expr.OpSub, opcode.Mul: expr.OpMul,
	opcode.Div: expr.OpDiv, opcode.Mod: expr.OpMod,
	opcode.EQ: expr.OpEQ, opcode.NE: expr.OpNE, opcode.LT: expr.OpLT, opcode.LE: expr.OpLE,
	opcode.GT: expr.OpGT, opcode.GE: expr.OpGE,
	opcode.LogicAnd: expr.OpAnd, opcode.LogicOr: expr.OpOr,
}

func (b *binder) column(cn *ast.ColumnName) (expr.Expr, error) {
	name := cn.Name.O
	if cn.Table.O == "" {
		if v, ok := b.lambdaVar(name); ok {
			return v, nil
		}
	}
	if b.join != nil {
		return b.joinColumn(cn)
	}
	if q := cn.Table.O; q != "" && q != b.src.Name && q != b.alias {
		return nil, b.errAt(q, CodeUndefinedTable, "'%s' is not a valid stream/table name or alias.", q)
	}
	i := b.schema.Index(name)
	if i < 0 && b.windowed && (name == types.WindowStart || name == types.WindowEnd) {
		return nil, b.errAt(name, CodeFeatureNotSupport, "Window bounds column %s can only be used in the SELECT clause of windowed aggregations", name)
	}
	if i < 0 {
		return nil, b.unresolved(cn.Table.O, name, b.src.Name)
	}
	c := b.schema.Columns[i]
	return &expr.Column{Index: i, Name: c.Name, T: c.Type}, nil
}

func literal(v *driver.ValueExpr) (expr.Expr, error) {
	switch v.Kind() {
	case driver.KindNull:
		return &expr.Literal{V: types.NullDatum, T: types.UnknownType}, nil
	case driver.KindInt64:
		if v.Type.GetFlag()&mysql.IsBooleanFlag != 0 {
			return expr.BoolLiteral(v.GetInt64() != 0), nil // TRUE, FALSE
		}
		return expr.IntLiteral(v.GetInt64()), nil
	case driver.KindUint64:
		u := v.GetUint64()
		if u > 1<<63-1 {
			return nil, Errorf(CodeInvalidParameter, "Invalid numeric literal: %d: out of BIGINT range", u)
		}
		return expr.IntLiteral(int64(u)), nil
	case driver.KindFloat32, driver.KindFloat64:
		return &expr.Literal{V: types.DoubleDatum(v.GetFloat64()), T: types.DoubleType}, nil
	case driver.KindMysqlDecimal:
		// ksqlDB reads 1.5 as a DECIMAL(2, 1).
		l, err := expr.DecimalLiteral(v.GetMysqlDecimal().String())
		if err != nil {
			return nil, Errorf(CodeInvalidParameter, "%v", err)
		}
		return l, nil
	case driver.KindString, driver.KindBytes:
		return &expr.Literal{V: types.StringDatum(v.GetString()), T: types.StringType}, nil
	}
	return nil, Errorf(CodeFeatureNotSupport, "literal %s is not supported yet", restore(v))
}

// BindCreateAs binds CREATE STREAM|TABLE … AS SELECT into a sink plan. The
// sink's topic defaults to the sink's name; formats default to the
// source's; partitions to the source topic's.
func BindCreateAs(ca *CreateAs, cat Catalog) (*planner.Sink, error) {
	ca.Select.persistent = true
	ca.Select.sink = "`" + ca.Name + "`"
	if ca.Materialized {
		ca.Select.dialect = planner.DialectSQL
	}
	q, err := BindSelect(ca.Select, cat)
	if err != nil {
		return nil, err
	}
	if q.Limit >= 0 {
		return nil, Errorf(CodeSyntaxError, "CREATE %s AS SELECT statements don't support LIMIT clause.", strings.ToUpper(ca.Kind.String()))
	}
	aggregate := findAggregate(q.Root) != nil
	join := findJoin(q.Root)
	fromTable := false
	for _, s := range planner.Sources(q.Root) {
		fromTable = fromTable || s.Kind == catalog.Table
	}
	if join != nil {
		// A stream–table join's result is a stream; a table–table
		// join's, a table.
		fromTable = join.OfTables()
	}
	topN := planner.FindTopN(q.Root) != nil
	switch {
	case topN && ca.Kind == catalog.Stream:
		return nil, NameError(ca, CodeFeatureNotSupport, "a Top-N (ROW_NUMBER() OVER … WHERE rn <= N) produces a table: use CREATE TABLE … AS SELECT or CREATE MATERIALIZED VIEW … AS SELECT")
	case topN && findAggregate(q.Root) != nil && findAggregate(q.Root).Window != nil:
		return nil, errorAt(ca.text, posOf(ca.Select, "ROW_NUMBER"), CodeFeatureNotSupport, "a Top-N over a windowed aggregation is not supported yet")
	case topN:
		aggregate = true // a table, as an aggregation's
	}
	switch {
	case aggregate && ca.Kind == catalog.Stream:
		return nil, NameError(ca, CodeFeatureNotSupport, "GROUP BY produces a table: use CREATE TABLE … AS SELECT")
	case fromTable && windowedTable(q.Root):
		return nil, NameError(ca, CodeFeatureNotSupport, "KSQL does not support persistent queries on windowed tables.")
	case !aggregate && fromTable && ca.Kind == catalog.Stream:
		return nil, NameError(ca, CodeFeatureNotSupport, "the query reads a table, so it produces a table: use CREATE TABLE … AS SELECT")
	case !aggregate && !fromTable && ca.Kind == catalog.Table:
		return nil, NameError(ca, CodeFeatureNotSupport, "a query over a stream without GROUP BY produces a stream: use CREATE STREAM … AS SELECT")
	}
	proj := q.Root.(*planner.Project)
	if err := checkProjection(ca, proj, join != nil); err != nil {
		return nil, err
	}
	if join != nil && join.ForeignKey {
		// ksqlDB's rule for the result's key: each of the left's key
		// columns once.
		in := proj.Input.Schema()
		for _, k := range in.KeyIndexes() {
			var as []string
			for i, e := range proj.Exprs {
				if c, ok := e.(*expr.Column); ok && c.Index == k {
					as = append(as, proj.Schema().Columns[i].Name)
				}
			}
			if len(as) > 1 {
				return nil, Errorf(CodeDuplicateObject, "The projection contains a key column (`%s`) more than once, aliased as: %s.", in.Columns[k].Name, strings.Join(as, " and "))
			}
		}
	}
	if missing := proj.MissingKeys(); len(missing) > 0 && join != nil && join.ForeignKey {
		// ksqlDB names the (first) left table's own columns.
		first := join
		for {
			l, ok := first.Left.(*planner.Join)
			if !ok {
				break
			}
			first = l
		}
		ls := planner.Sources(first)[0]
		names := make([]string, len(missing))
		for i, m := range missing {
			names[i] = "`" + strings.TrimPrefix(m, first.LeftName+"_") + "`"
		}
		if len(names) == 1 {
			return nil, Errorf(CodeSyntaxError, "Primary key column missing in projection. For foreign-key table-table joins, the projection must include all primary key columns from the left input table (`%s`). Missing column: %s.", ls.Name, names[0])
		}
		return nil, Errorf(CodeSyntaxError, "Primary key columns missing in projection. For foreign-key table-table joins, the projection must include all primary key columns from the left input table (`%s`). Missing columns: %s.", ls.Name, strings.Join(names, ", "))
	} else if len(missing) > 0 && join != nil && join.Type == planner.FullJoin {
		return nil, Errorf(CodeSyntaxError, "Key missing from projection (ie, SELECT). The query used to build %s must include the join expression %s in its projection (eg, SELECT %s …)", ca.Name, missing[0], missing[0])
	} else if len(missing) > 0 && join != nil {
		key := join.LeftName + "." + join.Left.Schema().Columns[join.Left.Schema().KeyIndexes()[0]].Name
		tkey := join.RightName + "." + join.Right.Schema().Columns[join.RightKey].Name
		return nil, Errorf(CodeSyntaxError, "The query used to build `%s` must include the join expressions %s or %s in its projection (eg, SELECT %s...).", ca.Name, key, tkey, key)
	} else if len(missing) > 0 {
		if p, ok := ca.Props["TIMESTAMP"]; ok && proj.Schema().Index(propIdent(p.Value)) < 0 {
			// Refused either way: ksqlDB names the TIMESTAMP column first.
			return nil, errorAt(ca.text, p.Pos, CodeInvalidParameter, "The TIMESTAMP column set in the WITH clause does not exist in the schema: '%s'", propIdent(p.Value))
		}
		return nil, missingKeyError(ca.Name, q.Root, proj)
	}
	in := planner.Sources(q.Root)[0]
	windowType, windowSize := in.WindowType, in.WindowSizeMs
	if agg := findAggregate(q.Root); agg != nil {
		windowType, windowSize = types.NoWindow, 0
		if w := agg.Window; w != nil {
			windowType, windowSize = w.Type, w.SizeMs
			if w.Type == types.Session {
				windowSize = 0
			}
		}
	}
	if windowType != types.NoWindow {
		// The window bounds travel in the windowed key; as value columns
		// they must be named otherwise, as in ksqlDB.
		for _, c := range proj.Schema().Columns {
			if c.Name == types.WindowStart || c.Name == types.WindowEnd {
				for _, f := range ca.Select.stmt.Fields.Fields {
					cn, self := unparen(f.Expr).(*ast.ColumnNameExpr)
					self = self && strings.EqualFold(cn.Name.Name.O, c.Name) // w.WINDOWSTART AS WINDOWSTART
					if strings.EqualFold(f.AsName.O, c.Name) && !self {
						return nil, createAsBinder(ca).errAt(c.Name, CodeDuplicateObject, "`%s` is a reserved column name. You cannot use it as an alias for a column.", c.Name)
					}
				}
				return nil, createAsBinder(ca).errAt(c.Name, CodeDuplicateObject, "Reserved column name in select: `%s`. Please remove or alias the column.", c.Name)
			}
		}
	}
	target := &catalog.Source{
		Name:         ca.Name,
		Kind:         ca.Kind,
		Topic:        ca.Name,
		KeyFormat:    in.KeyFormat,
		ValueFormat:  in.ValueFormat,
		Partitions:   in.Partitions,
		Schema:       proj.Schema(),
		SQL:          ca.text,
		WindowType:   windowType,
		WindowSizeMs: windowSize,
	}
	for _, name := range []string{"WINDOW_TYPE", "WINDOW_SIZE"} {
		if p, ok := ca.Props[name]; ok {
			return nil, errorAt(ca.text, p.Pos, CodeInvalidParameter, "%s is set by the query's WINDOW clause, not in WITH", name)
		}
	}
	if join != nil && target.KeyFormat == types.FormatNone {
		// A keyless stream joined on a column: the result is keyed by
		// it, in ksqlDB's default key format.
		target.KeyFormat = types.FormatKafka
		if f, err := types.NormalizeFormat(ca.Select.DefaultKeyFormat); err == nil && f != "" && f != types.FormatNone && !ca.Select.LegacyJoinKeys {
			target.KeyFormat = f
		}
	}
	if topN && target.KeyFormat == types.FormatKafka && len(target.Schema.KeyIndexes()) > 1 {
		// Keyed by the partition columns and the rank: KAFKA keys
		// one column only.
		target.KeyFormat = types.FormatJSON
	}
	if join != nil && target.KeyFormat == types.FormatKafka && len(target.Schema.KeyIndexes()) > 1 {
		// Keyed by a table's composite key, in its key format.
		target.KeyFormat = types.FormatJSON
		if rs, ok := join.Right.(*planner.Scan); ok && rs.Source.KeyFormat != types.FormatKafka {
			target.KeyFormat = rs.Source.KeyFormat
		}
	}
	// A DELIMITED result keeps its source's delimiters unless WITH
	// names its own, as ksqlDB's does.
	if in.ValueFormat == types.FormatDelimited {
		target.ValueOptions.Delimiter = in.ValueOptions.Delimiter
	}
	if in.KeyFormat == types.FormatDelimited {
		target.KeyOptions.Delimiter = in.KeyOptions.Delimiter
	}
	if target.KeyFormat == types.FormatNone && len(target.Schema.KeyIndexes()) > 0 {
		// A result with key columns from a source without them: the key
		// format the source was declared with (its KEY_FORMAT or FORMAT),
		// as ksqlDB keeps it; for a source declared without one, or with
		// NONE, ksql.persistence.default.format.key, else KAFKA.
		target.KeyFormat = declaredKeyFormat(in)
		if target.KeyFormat == "" || target.KeyFormat == types.FormatNone {
			target.KeyFormat = types.FormatKafka
			if f, err := types.NormalizeFormat(ca.Select.DefaultKeyFormat); err == nil && f != "" && f != types.FormatNone {
				target.KeyFormat = f
			}
		}
	}
	if err := ca.Props.checkFormats(ca.text, ca.LegacyFormats); err != nil {
		return nil, err
	}
	if err := applyProps(ca.text, ca.Props, target); err != nil {
		return nil, err
	}
	if p, ok := ca.Props["PARTITIONER"]; ok && target.Partitioner != types.Murmur2 {
		// The query writes its topic: by murmur2, as Kafka's clients do.
		return nil, errorAt(ca.text, p.Pos, CodeInvalidParameter, "PARTITIONER '%s' applies to a source declared over an existing topic; a query writes its topic partitioned by murmur2", p.Value)
	}
	setSubjects(target)
	if _, given := ca.Props["VALUE_DELIMITER"]; !given && target.ValueFormat != types.FormatDelimited {
		target.ValueOptions.Delimiter = 0 // inherited for a DELIMITED value only
	}
	if _, given := ca.Props["KEY_DELIMITER"]; !given && target.KeyFormat != types.FormatDelimited {
		target.KeyOptions.Delimiter = 0
	}
	if len(target.Schema.KeyIndexes()) == 0 {
		if p, ok := ca.Props["KEY_FORMAT"]; ok && target.KeyFormat != types.FormatNone && byNull(findRekey(q.Root)) {
			return nil, errorAt(ca.text, p.Pos, CodeInvalidParameter, "Key format specified for stream without key columns.")
		}
		target.KeyFormat = types.FormatNone
	}
	if _, err := types.NewEncoderOpts(target.KeyFormat, target.Schema, target.Schema.KeyIndexes(), target.KeyOptions); err != nil {
		if dup := duplicateKeyError(proj, aggregate); dup != nil {
			return nil, dup
		}
		return nil, keyFormatError(target.KeyFormat, target.Schema, err)
	}
	if _, err := types.NewEncoderOpts(target.ValueFormat, target.Schema, target.Schema.ValueIndexes(), target.ValueOptions); err != nil {
		return nil, Errorf(CodeInvalidParameter, "value: %v", err)
	}
	return &planner.Sink{Input: q.Root, Target: target, Dialect: q.Dialect, Rules: q.Rules}, nil
}

// declaredKeyFormat is the key format src's CREATE statement named
// (KEY_FORMAT, else FORMAT), or empty: a source without key columns holds
// NONE instead.
func declaredKeyFormat(src *catalog.Source) string {
	if st, err := Parse(src.SQL); err == nil {
		if cs, ok := st.(*CreateSource); ok {
			for _, name := range []string{"KEY_FORMAT", "FORMAT"} {
				if p, ok := cs.Props[name]; ok {
					if f, err := types.NormalizeFormat(p.Value); err == nil {
						return f
					}
				}
			}
		}
	}
	return ""
}

// checkProjection refuses what ksqlDB refuses in a persistent query's
// projection: a pseudo column's name as an output column (selected as is
// outside a join, or given as an alias), a result without value columns,
// and key columns whose types hold a MAP.
func checkProjection(ca *CreateAs, proj *planner.Project, join bool) error {
	b := createAsBinder(ca)
	reserved := func(name string) bool {
		return name == types.RowTime || name == types.RowPartition || name == types.RowOffset
	}
	for _, f := range ca.Select.stmt.Fields.Fields {
		if a := strings.ToUpper(f.AsName.O); f.AsName.O != "" && reserved(a) && join {
			if cn, ok := unparen(f.Expr).(*ast.ColumnNameExpr); ok && strings.EqualFold(cn.Name.Name.O, a) {
				// l.ROWTIME AS ROWTIME: the pseudo column itself.
				return b.errAt(a, CodeDuplicateObject, "Reserved column name in select: `%s`. Please remove or alias the column.", a)
			}
		}
		if a := strings.ToUpper(f.AsName.O); f.AsName.O != "" && reserved(a) {
			return b.errAt(a, CodeDuplicateObject, "`%s` is a reserved column name. You cannot use it as an alias for a column.", a)
		}
	}
	values := 0
	for _, c := range proj.Schema().Columns {
		if reserved(c.Name) && !join {
			return b.errAt(c.Name, CodeDuplicateObject, "Reserved column name in select: `%s`. Please remove or alias the column.", c.Name)
		}
		if !c.Key {
			values++
		} else if holdsMap(c.Type) {
			return mapKeyError(c)
		}
	}
	if values == 0 && !ca.Select.distinct {
		// (SELECT DISTINCT's rows are all key.)
		return Errorf(CodeSyntaxError, "The projection contains no value columns.")
	}
	return nil
}

// duplicateKeyError refuses a projection that selects an input key column
// more than once (each a key column of the result), in ksqlDB's words;
// nil if it does not.
func duplicateKeyError(proj *planner.Project, aggregate bool) error {
	in := proj.Input.Schema()
	for _, k := range in.KeyIndexes() {
		var as []string
		for i, e := range proj.Exprs {
			if c, ok := e.(*expr.Column); ok && c.Index == k {
				as = append(as, proj.Schema().Columns[i].Name)
			}
		}
		if len(as) < 2 {
			continue
		}
		if aggregate {
			return Errorf(CodeDuplicateObject, "The projection contains a key column more than once: `%s`.", strings.Join(as, "` and `"))
		}
		return Errorf(CodeDuplicateObject, "The projection contains a key column (`%s`) more than once, aliased as: %s.", in.Columns[k].Name, strings.Join(as, " and "))
	}
	return nil
}

// keyFormatError is err, the key format's refusal of s's key columns,
// as ksqlDB words it: a key column holding a MAP is refused for that
// whatever the format; otherwise the format, the key columns and the
// reason.
func keyFormatError(format string, s types.Schema, err error) error {
	keys := s.KeyIndexes()
	for _, k := range keys {
		if holdsMap(s.Columns[k].Type) {
			return mapKeyError(s.Columns[k])
		}
	}
	return Errorf(CodeInvalidParameter, "Key format does not support schema.\nformat: %s\nschema: Persistence{columns=[%s], features=[]}\nreason: %v",
		format, types.ColumnsText(s, keys), err)
}

// mapKeyError refuses the key column c, whose type holds a MAP.
func mapKeyError(c types.Column) error {
	return Errorf(CodeFeatureNotSupport, "Map keys, including types that contain maps, are not supported as they may lead to unexpected behavior due to inconsistent serialization. Key column name: `%s`. Column type: %s. See https://github.com/confluentinc/ksql/issues/6621 for more.", c.Name, c.Type.Quoted())
}

func holdsMap(t types.Type) bool {
	switch t.Kind {
	case types.Map:
		return true
	case types.Array:
		return holdsMap(*t.Elem)
	case types.Struct:
		for _, f := range t.Fields {
			if holdsMap(f.Type) {
				return true
			}
		}
	}
	return false
}

// findAggregate returns the aggregation in a linear plan, or nil.
// missingKeyError refuses a CREATE … AS SELECT whose projection lacks
// some of its result's key columns, in ksqlDB's words: they come from the
// GROUP BY, the PARTITION BY or the source's key.
func missingKeyError(sink string, root planner.Node, proj *planner.Project) error {
	what, shown := "key column", []string{}
	switch rk := findRekey(root); {
	case findAggregate(root) != nil && duplicateGroupBy(findAggregate(root)) != "":
		src := planner.Sources(root)[0].Name
		return Errorf(CodeSyntaxError, "Duplicate GROUP BY expression: %s.%s", src, duplicateGroupBy(findAggregate(root)))
	case findAggregate(root) != nil:
		// ksqlDB names the grouping expressions whose key is missing.
		what = "grouping expression"
		in := proj.Input.Schema()
		missing := proj.MissingKeys()
		for i, g := range findAggregate(root).GroupBy {
			if k := in.KeyIndexes(); i < len(k) && slices.Contains(missing, in.Columns[k[i]].Name) {
				shown = append(shown, ksqlText(g))
			}
		}
		if len(shown) == 0 {
			shown = missing
		}
	case rk != nil && len(rk.Exprs) > 0:
		what = "partitioning expression"
		src := planner.Sources(root)[0].Name
		for _, e := range rk.Exprs {
			shown = append(shown, qualifiedText(e, src))
		}
	default:
		in := proj.Input.Schema()
		for _, k := range in.KeyIndexes() {
			shown = append(shown, in.Columns[k].Name)
		}
	}
	list := shown[0]
	if len(shown) > 1 {
		what += "s"
		list = strings.Join(shown[:len(shown)-1], ", ") + " and " + shown[len(shown)-1]
	}
	msg := fmt.Sprintf("The query used to build `%s` must include the %s %s in its projection (eg, SELECT %s...).", sink, what, list, strings.Join(shown, ", "))
	if missing := proj.MissingKeys(); strings.HasPrefix(what, "key") && len(missing) < len(shown) {
		msg += " Missing: " + strings.Join(missing, ", ") + "."
	}
	return Errorf(CodeSyntaxError, "%s", msg)
}

// duplicateGroupBy is a GROUP BY expression a's list repeats, or "".
func duplicateGroupBy(a *planner.Aggregate) string {
	seen := map[string]bool{}
	for _, g := range a.GroupBy {
		t := ksqlText(g)
		if seen[t] {
			return t
		}
		seen[t] = true
	}
	return ""
}

// qualifiedText is e as ksqlDB's messages print a PARTITION BY
// expression: its columns qualified with the source's name.
func qualifiedText(e expr.Expr, src string) string {
	switch x := e.(type) {
	case *expr.Column:
		return src + "." + x.Name
	case *expr.Call:
		args := make([]string, len(x.Args))
		for i, a := range x.Args {
			args[i] = qualifiedText(a, src)
		}
		return x.Fn.Name + "(" + strings.Join(args, ", ") + ")"
	}
	return ksqlText(e)
}

// findInChain returns the first node of type T in a plan's chain of
// single inputs, from n down, or the zero T.
func findInChain[T planner.Node](n planner.Node) T {
	for n != nil {
		if t, ok := n.(T); ok {
			return t
		}
		ch := n.Children()
		if len(ch) != 1 {
			break
		}
		n = ch[0]
	}
	var zero T
	return zero
}

func findRekey(n planner.Node) *planner.Rekey         { return findInChain[*planner.Rekey](n) }
func findAggregate(n planner.Node) *planner.Aggregate { return findInChain[*planner.Aggregate](n) }

// findJoin returns the join in a plan's chain of single inputs, or nil.
func findJoin(n planner.Node) *planner.Join { return findInChain[*planner.Join](n) }

// byNull reports whether r is PARTITION BY NULL: its rows have no key.
func byNull(r *planner.Rekey) bool { return r != nil && len(r.Exprs) == 0 }

// windowedTable reports whether the plan reads a windowed table.
func windowedTable(n planner.Node) bool {
	for _, s := range planner.Sources(n) {
		if s.Kind == catalog.Table && s.Windowed() {
			return true
		}
	}
	return false
}

// nulls gives a freshly built comparison, IN or BETWEEN ksqlDB's NULL
// comparisons unless the statement keeps SQL's.
func (b *binder) nulls(e expr.Expr) expr.Expr {
	if b.sqlNulls {
		return e
	}
	return expr.KsqlNulls(e)
}

// ksqlComparable refuses the comparisons ksqlDB refuses that sqlstreams
// accepted before it followed ksqlDB's NULL comparisons (statements
// replayed from then bind with SQLNulls and keep them): one with an
// untyped NULL (write IS NULL), and in a persistent query one of a number
// with a STRING literal (ksqlDB reads '5' as a number only in an IN list).
// A pull or push query compares a number with a string literal that reads
// as one, as PostgreSQL reads an untyped literal: clients such as pgx in
// its simple protocol send a negative parameter as '-3'.
func (b *binder) ksqlComparable(op expr.Op, l, r expr.Expr) error {
	lt, rt := l.Type(), r.Type()
	name := func(t types.Type) string {
		if t.Kind == types.Unknown {
			return "NULL"
		}
		return t.String()
	}
	if lt.Kind == types.Unknown || rt.Kind == types.Unknown {
		return Errorf(CodeDatatypeMismatch, "Comparison with NULL not supported: %s %s %s\nUse 'IS NULL' or 'IS NOT NULL' instead.\nStatement: (%s %s %s)", name(lt), op, name(rt), ksqlText(l), op, ksqlText(r))
	}
	strLit := func(e expr.Expr) bool {
		lit, ok := e.(*expr.Literal)
		return ok && !lit.V.Null && lit.T.Kind == types.String
	}
	if b.query && (lt.IsNumeric() && strLit(r) || rt.IsNumeric() && strLit(l)) {
		return Errorf(CodeDatatypeMismatch, "Cannot compare %s (%s) to %s (%s) with %s.", l, lt, r, rt, ksqlOpNames[op])
	}
	return nil
}

// ksqlOpNames are ksqlDB's names of the comparison operators, for its
// messages.
var ksqlOpNames = map[expr.Op]string{
	expr.OpEQ: "EQUAL", expr.OpNE: "NOT_EQUAL", expr.OpLT: "LESS_THAN", expr.OpLE: "LESS_THAN_OR_EQUAL",
	expr.OpGT: "GREATER_THAN", expr.OpGE: "GREATER_THAN_OR_EQUAL",
}

// createAsBinder is a binder over a CREATE … AS statement's text, for errors.
func createAsBinder(ca *CreateAs) *binder { return &binder{text: ca.text, toks: ca.Select.toks} }

// checkFormats refuses FORMAT together with KEY_FORMAT or VALUE_FORMAT,
// as ksqlDB does (which one won was left to map order); legacy accepts
// it, for commands recorded before (CreateSource.LegacyFormats).
func (props Props) checkFormats(text string, legacy bool) error {
	f, ok := props["FORMAT"]
	if !ok || legacy {
		return nil
	}
	for _, name := range []string{"KEY_FORMAT", "VALUE_FORMAT"} {
		if _, ok := props[name]; ok {
			return errorAt(text, f.Pos, CodeInvalidParameter, "Cannot supply both '%s' and 'FORMAT' properties, as 'FORMAT' sets both key and value formats. Either use just 'FORMAT', or use 'KEY_FORMAT' and 'VALUE_FORMAT'.", name)
		}
	}
	return nil
}

// applyProps applies WITH properties to a source or sink being created.
func applyProps(text string, props Props, s *catalog.Source) error {
	bad := func(p Property, format string, args ...any) error {
		return errorAt(text, p.Pos, CodeInvalidParameter, format, args...)
	}
	for name, p := range props {
		switch name {
		case "KAFKA_TOPIC":
			s.Topic = p.Value
		case "VALUE_FORMAT", "KEY_FORMAT", "FORMAT":
			f, err := types.NormalizeFormat(p.Value)
			if err != nil {
				return bad(p, "%v", err)
			}
			if name != "KEY_FORMAT" {
				s.ValueFormat = f
			}
			if name != "VALUE_FORMAT" {
				s.KeyFormat = f
			}
		case "PARTITIONS":
			n, err := strconv.ParseInt(p.Value, 10, 32)
			if err != nil || n < 1 {
				return bad(p, "PARTITIONS must be a positive integer")
			}
			s.Partitions = int32(n)
		case "REPLICAS":
			if n, err := strconv.ParseInt(p.Value, 10, 16); err != nil || n < 1 {
				return bad(p, "REPLICAS must be a positive integer")
			}
			// Replication is the broker's default; the embedded broker
			// has one node.
		case "VALUE_DELIMITER", "KEY_DELIMITER":
			d, err := types.ParseDelimiter(p.Value)
			if err != nil {
				return bad(p, "Failed to prepare statement: Configuration %s is invalid: %v\nExample valid value: ';'", name, err)
			}
			if name == "VALUE_DELIMITER" {
				s.ValueOptions.Delimiter = d
			} else {
				s.KeyOptions.Delimiter = d
			}
		case "WRAP_SINGLE_VALUE":
			v, err := strconv.ParseBool(p.Value)
			if err != nil {
				return bad(p, "WRAP_SINGLE_VALUE must be true or false")
			}
			s.ValueOptions.WrapSingleValue = &v
		case "VALUE_SCHEMA_ID", "KEY_SCHEMA_ID":
			id, err := strconv.ParseInt(p.Value, 10, 32)
			if err != nil || id < 1 {
				return bad(p, "%s must be a positive schema ID", name)
			}
			if name == "VALUE_SCHEMA_ID" {
				s.ValueOptions.SchemaID = int(id)
			} else {
				s.KeyOptions.SchemaID = int(id)
			}
		case "VALUE_AVRO_SCHEMA_FULL_NAME", "KEY_AVRO_SCHEMA_FULL_NAME", "VALUE_SCHEMA_FULL_NAME", "KEY_SCHEMA_FULL_NAME":
			if p.Value == "" {
				return bad(p, "%s cannot be empty", name)
			}
			if strings.HasPrefix(name, "VALUE_") {
				s.ValueOptions.FullName = p.Value
			} else {
				s.KeyOptions.FullName = p.Value
			}
		case "PARTITIONER":
			part, err := types.ParsePartitioner(p.Value)
			if err != nil {
				return bad(p, "%v", err)
			}
			s.Partitioner = part
		case "TIMESTAMP":
			s.TimestampColumn = propIdent(p.Value)
		case "TIMESTAMP_FORMAT":
			s.TimestampFormat = p.Value
		case "WINDOW_TYPE":
			t, err := types.ParseWindowType(p.Value)
			if err != nil {
				return bad(p, "%v", err)
			}
			s.WindowType = t
		case "WINDOW_SIZE":
			ms, err := parseDuration(p.Value)
			if err != nil || ms <= 0 {
				why := "it must be a positive duration such as '1 MINUTE'"
				if err != nil && strings.HasPrefix(err.Error(), "Unknown") {
					why = err.Error()
				}
				return bad(p, "Configuration WINDOW_SIZE is invalid: Invalid duration: '%s'. %s", p.Value, why)
			}
			s.WindowSizeMs = ms
		default:
			return bad(p, "property %s is not supported", name)
		}
	}
	switch {
	case s.WindowType == types.NoWindow && s.WindowSizeMs > 0:
		return bad(props["WINDOW_SIZE"], "WINDOW_SIZE needs WINDOW_TYPE")
	case s.WindowType == types.Session && s.WindowSizeMs > 0:
		return bad(props["WINDOW_SIZE"], "'WINDOW_SIZE' should not be set for SESSION windows. It applies to TUMBLING and HOPPING windows.")
	case (s.WindowType == types.Tumbling || s.WindowType == types.Hopping) && s.WindowSizeMs == 0:
		return bad(props["WINDOW_TYPE"], "WINDOW_TYPE %s needs WINDOW_SIZE", s.WindowType)
	}
	if s.TimestampFormat != "" && s.TimestampColumn == "" {
		return Errorf(CodeInvalidParameter, "TIMESTAMP_FORMAT needs TIMESTAMP to name the column")
	}
	if c := s.TimestampColumn; c != "" {
		i := s.Schema.Index(c)
		if i < 0 {
			return bad(props["TIMESTAMP"], "The TIMESTAMP column set in the WITH clause does not exist in the schema: '%s'", c)
		}
		switch t := s.Schema.Columns[i].Type; t.Kind {
		case types.Bigint, types.Timestamp:
			if s.TimestampFormat != "" {
				return bad(props["TIMESTAMP_FORMAT"], "TIMESTAMP_FORMAT applies to STRING columns; %s is %s", c, t)
			}
		case types.String:
			if s.TimestampFormat != "" {
				if _, err := expr.TimestampParser(s.TimestampFormat); err != nil {
					return bad(props["TIMESTAMP_FORMAT"], "TIMESTAMP_FORMAT: %v", err)
				}
			}
		default:
			return bad(props["TIMESTAMP"], "Timestamp column, `%s`, should be LONG(INT64), TIMESTAMP, or a String with a timestamp_format specified, not %s", c, t)
		}
	}
	return nil
}

// setSubjects names the schema registry subjects of s's key and value
// schemas as ksqlDB does: <topic>-key and <topic>-value.
func setSubjects(s *catalog.Source) {
	s.KeyOptions.Subject = s.Topic + "-key"
	s.ValueOptions.Subject = s.Topic + "-value"
}

// propIdent reads a property naming a column: upper-cased unless quoted
// with backticks or double quotes.
func propIdent(v string) string {
	if len(v) >= 2 && (v[0] == '`' && v[len(v)-1] == '`' || v[0] == '"' && v[len(v)-1] == '"') {
		return v[1 : len(v)-1]
	}
	return strings.ToUpper(v)
}

// BindCreateSource validates CREATE STREAM|TABLE (columns) WITH (…) and
// returns the source it declares.
func BindCreateSource(cs *CreateSource) (*catalog.Source, error) {
	s := &catalog.Source{
		Name:      cs.Name,
		Kind:      cs.Kind,
		KeyFormat: types.FormatKafka,
		IsSource:  cs.Source,
		SQL:       cs.text,
	}
	for _, c := range cs.Columns {
		for _, p := range append(types.PseudoColumns[:len(types.PseudoColumns):len(types.PseudoColumns)], types.WindowColumns...) {
			if c.Name == p.Name {
				return nil, errorAt(cs.text, c.Pos, CodeDuplicateObject, "'%s' is a reserved column name. You cannot use it as a name for a column.", c.Name)
			}
		}
		s.Schema.Columns = append(s.Schema.Columns, types.Column{Name: c.Name, Type: c.Type, Key: c.Key, Header: c.Header, HeaderKey: c.HeaderKey})
	}
	topic, ok := cs.Props["KAFKA_TOPIC"]
	if !ok {
		return nil, Errorf(CodeInvalidParameter, "missing required property KAFKA_TOPIC in WITH (…)")
	}
	if err := cs.Props.checkFormats(cs.text, cs.LegacyFormats); err != nil {
		return nil, err
	}
	if _, ok := cs.Props["VALUE_FORMAT"]; !ok {
		if _, ok := cs.Props["FORMAT"]; !ok {
			return nil, Errorf(CodeInvalidParameter, "Statement is missing the 'VALUE_FORMAT' property from the WITH clause. Either provide one or set a default via the 'ksql.persistence.default.format.value' config.")
		}
	}
	if err := applyProps(cs.text, cs.Props, s); err != nil {
		return nil, err
	}
	// The properties are checked first, as ksqlDB does: an unknown
	// format is the error, not the columns it would have inferred.
	if s.ValueOptions.Delimiter != 0 && s.ValueFormat != types.FormatDelimited {
		return nil, errorAt(cs.text, cs.Props["VALUE_DELIMITER"].Pos, CodeInvalidParameter, "%s does not support the following configs: [delimiter]; only DELIMITED takes a delimiter", s.ValueFormat)
	}
	if len(cs.Columns) == 0 {
		return nil, Errorf(CodeSyntaxError, "No columns supplied. %s %s declares no columns: give a column list, or use a format whose schema the registry holds (AVRO, JSON_SR, PROTOBUF)", cs.Kind, cs.Name)
	}
	if cs.Kind == catalog.Table && len(s.Schema.KeyIndexes()) == 0 {
		return nil, Errorf(CodeSyntaxError, "Tables require a PRIMARY KEY. Please define the PRIMARY KEY.")
	}
	s.Topic = topic.Value
	setSubjects(s)
	keys := s.Schema.KeyIndexes()
	declaredKey := s.KeyFormat
	if len(keys) == 0 {
		s.KeyFormat = types.FormatNone
	}
	// Check that the formats can hold the columns now, not per record.
	if _, err := types.NewDecoderOpts(s.KeyFormat, s.Schema, keys, s.KeyOptions); err != nil {
		if s.KeyOptions.SchemaID != 0 && !types.InfersColumns(declaredKey) {
			return nil, Errorf(CodeInvalidParameter, "KEY_FORMAT should support schema inference when KEY_SCHEMA_ID is provided. Current format is %s.", declaredKey)
		}
		return nil, keyFormatError(s.KeyFormat, s.Schema, err)
	}
	if _, err := types.NewDecoderOpts(s.ValueFormat, s.Schema, s.Schema.ValueIndexes(), s.ValueOptions); err != nil {
		if s.ValueOptions.SchemaID != 0 && !types.InfersColumns(s.ValueFormat) {
			return nil, Errorf(CodeInvalidParameter, "VALUE_FORMAT should support schema inference when VALUE_SCHEMA_ID is provided. Current format is %s.", s.ValueFormat)
		}
		return nil, Errorf(CodeInvalidParameter, "value: %v", err)
	}
	return s, nil
}

// BindInsertValues evaluates INSERT … VALUES rows for target. Each row is
// laid out by target.Schema; columns not named are NULL. A ROWTIME value
// is dropped: BindInsert returns it.
func BindInsertValues(iv *InsertValues, target *catalog.Source) ([]types.Row, error) {
	rows, err := BindInsert(iv, target)
	if err != nil {
		return nil, err
	}
	out := make([]types.Row, len(rows))
	for i, r := range rows {
		out[i] = r.Row
	}
	return out, nil
}

// InsertRow is one row of INSERT … VALUES, laid out by the target's
// schema, and the record timestamp a ROWTIME value gives it.
type InsertRow struct {
	Row types.Row
	// Timestamp is the ROWTIME value (milliseconds) when Timestamped;
	// else the record takes the producer's clock.
	Timestamp   int64
	Timestamped bool
}

// BindInsert evaluates INSERT … VALUES rows for target, as ksqlDB does:
// the columns default to the key columns then the value columns; ROWTIME
// sets the record timestamp; the other pseudo columns (ROWPARTITION,
// ROWOFFSET) and header columns cannot be inserted into.
func BindInsert(iv *InsertValues, target *catalog.Source) ([]InsertRow, error) {
	b := &binder{text: iv.text, toks: lex(iv.text), src: target, pbound: iv.Params}
	iv.paramTypes = make([]types.Type, iv.nParams)
	b.ptypes = iv.paramTypes
	defer func() {
		for i := range iv.paramTypes {
			if iv.paramTypes[i].Kind == 0 {
				iv.paramTypes[i] = types.StringType
			}
		}
	}()
	const rowtime = -1
	cols := make([]int, 0, len(target.Schema.Columns))
	if len(iv.Columns) == 0 {
		vis := target.Schema.Visible()
		for _, i := range vis {
			if target.Schema.Columns[i].Key {
				cols = append(cols, i)
			}
		}
		for _, i := range vis {
			if !target.Schema.Columns[i].Key {
				cols = append(cols, i)
			}
		}
	} else {
		for _, name := range iv.Columns {
			i := target.Schema.Index(name)
			if i < 0 {
				switch name {
				case types.RowTime:
					cols = append(cols, rowtime)
					continue
				case "ROWPARTITION", "ROWOFFSET":
					return nil, b.errAt(name, CodeFeatureNotSupport, "Inserting into column `%s` is not allowed.", name)
				}
				return nil, b.errAt(name, CodeUndefinedColumn, "column %s does not exist in %s", name, target.Name)
			}
			cols = append(cols, i)
		}
	}
	var headers []string
	for _, c := range cols {
		if c == rowtime {
			continue
		}
		if col := target.Schema.Columns[c]; col.Header {
			headers = append(headers, col.Name)
		}
	}
	if len(headers) > 0 {
		return nil, Errorf(CodeFeatureNotSupport, "Cannot insert into HEADER columns: %s", strings.Join(headers, ", "))
	}
	var rows []InsertRow
	for _, list := range iv.ins.Lists {
		if len(list) != len(cols) {
			return nil, b.errAt("VALUES", CodeSyntaxError, "Failed to prepare statement: Expected number columns and values to match: %d, %d", len(cols), len(list))
		}
		ir := InsertRow{Row: make(types.Row, len(target.Schema.Columns))}
		for i := range ir.Row {
			ir.Row[i] = types.NullDatum
		}
		for i, n := range list {
			hint := types.BigintType // ROWTIME
			if cols[i] != rowtime {
				hint = target.Schema.Columns[cols[i]].Type
			}
			e, err := b.exprAs(n, hint)
			if err != nil {
				return nil, prepareError(err)
			}
			if cols[i] == rowtime {
				d, err := constant(e, types.BigintType)
				if err != nil {
					return nil, b.errAt(types.RowTime, CodeDatatypeMismatch, "value for column ROWTIME: %v", err)
				}
				if !d.Null {
					ir.Timestamp, ir.Timestamped = d.I, true
				}
				continue
			}
			col := target.Schema.Columns[cols[i]]
			d, err := constant(e, col.Type)
			if err != nil {
				return nil, b.errAt(col.Name, CodeDatatypeMismatch, "value for column %s: %v", col.Name, err)
			}
			ir.Row[cols[i]] = d
		}
		rows = append(rows, ir)
	}
	return rows, nil
}

// constant evaluates a constant expression and converts it to type t,
// as ksqlDB does for INSERT … VALUES: a value that does not convert is an
// error, not a NULL.
func constant(e expr.Expr, t types.Type) (types.Datum, error) {
	from, orig := e.Type(), e
	if t.Kind == types.Bytes && from.Kind == types.String {
		// ksqlDB's INSERT takes BYTES as base64 text
		// (DefaultSqlValueCoercer).
		return base64Constant(e)
	}
	if from.Kind != types.Unknown && !from.Equal(t) {
		// A value never turns into text implicitly; a string literal may
		// give a number, a boolean or a date when it reads as one (Postgres
		// drivers quote every parameter). The NULL check below refuses
		// text that does not convert.
		if t.Kind == types.String && from.Kind != types.String {
			return types.Datum{}, fmt.Errorf("cannot use %s as %s", from, t)
		}
		c, err := expr.NewCast(e, t)
		if err != nil {
			return types.Datum{}, fmt.Errorf("cannot use %s as %s", from, t)
		}
		e = c
	}
	if err := checkNarrowing(orig, t); err != nil {
		return types.Datum{}, err
	}
	ev, err := expr.Compile(e)
	if err != nil {
		return types.Datum{}, err
	}
	d, err := ev(nil)
	if err != nil {
		return types.Datum{}, err
	}
	if d.Null {
		// Only a NULL literal may give NULL: a failed conversion is an error.
		_, param := e.(*expr.Param)
		if lit, ok := e.(*expr.Literal); !param && (!ok || !lit.V.Null) {
			if from.Kind != types.Unknown {
				return types.Datum{}, fmt.Errorf("cannot convert %s to %s", orig, t)
			}
		}
		return types.NullDatum, nil
	}
	return d.Clone(), nil
}

// checkNarrowing refuses a number that a column of type t cannot hold,
// as Postgres does ("integer out of range") where CAST would wrap it, as
// Java's does: a BIGINT or DOUBLE beyond INT's range into an INT, a
// DOUBLE beyond BIGINT's into a BIGINT.
func checkNarrowing(e expr.Expr, t types.Type) error {
	from := e.Type()
	narrows := t.Kind == types.Int && (from.Kind == types.Bigint || from.Kind == types.Double) ||
		t.Kind == types.Bigint && from.Kind == types.Double
	if !narrows {
		return nil
	}
	var d types.Datum
	if lit, ok := e.(*expr.Literal); ok {
		d = lit.V // a literal or a bound value (CoerceInsert): nothing to evaluate
	} else {
		ev, err := expr.Compile(e)
		if err != nil {
			return err
		}
		if d, err = ev(nil); err != nil {
			return err
		}
	}
	if d.Null {
		return nil
	}
	lo, hi := float64(math.MinInt32), float64(math.MaxInt32)
	if t.Kind == types.Bigint {
		lo, hi = math.MinInt64, math.MaxInt64
	}
	v := float64(d.I)
	if from.Kind == types.Double {
		v = d.F
	}
	if v < lo || v > hi || math.IsNaN(v) {
		return fmt.Errorf("%s is out of range for %s", types.Text(d, from), t)
	}
	return nil
}

// CoerceInsert converts v, a value of type from, into a column of type
// to as INSERT … VALUES converts a literal of that type: a string that
// reads as a number, a boolean or a date gives one, BYTES take base64
// text, and a value that does not convert is an error, never a NULL. A
// protocol that carries typed values (REST's /inserts-stream JSON) binds
// them to an INSERT's placeholders through it, so both paths coerce
// alike.
func CoerceInsert(v types.Datum, from, to types.Type) (types.Datum, error) {
	if v.Null {
		return types.NullDatum, nil
	}
	return constant(&expr.Literal{V: v, T: from}, to)
}

// NumberLiteral types a number's text as the same text written in SQL
// is typed: an integer INT (or BIGINT beyond INT's range), a number with
// a decimal point and no exponent DECIMAL(p, s), any other DOUBLE.
func NumberLiteral(text string) (types.Datum, types.Type, error) {
	var (
		l   *expr.Literal
		err error
	)
	if strings.ContainsRune(text, '.') && !strings.ContainsAny(text, "eE") {
		l, err = expr.DecimalLiteral(text)
	} else {
		l, err = expr.ParseNumberLiteral(text)
	}
	if err != nil {
		return types.Datum{}, types.Type{}, fmt.Errorf("invalid number %s: %v", text, err)
	}
	return l.V, l.T, nil
}

// base64Constant evaluates a STRING constant and decodes it as base64.
func base64Constant(e expr.Expr) (types.Datum, error) {
	ev, err := expr.Compile(e)
	if err != nil {
		return types.Datum{}, err
	}
	d, err := ev(nil)
	if err != nil || d.Null {
		return types.NullDatum, err
	}
	b, err := base64.StdEncoding.DecodeString(string(d.B))
	if err != nil {
		return types.Datum{}, fmt.Errorf("cannot convert '%s' to BYTES: not base64", d.B)
	}
	return types.Datum{B: b}, nil
}

func isTemporal(t types.Type) bool {
	return t.Kind == types.Date || t.Kind == types.Time || t.Kind == types.Timestamp
}

// BindInsertSelect binds INSERT INTO target SELECT …: the query's result
// must have exactly the target's columns (names, types and keys, in
// order).
func BindInsertSelect(is *InsertSelect, cat Catalog) (*planner.Sink, error) {
	target, ok := cat.Source(is.Target)
	if !ok {
		return nil, NameError(is, CodeUndefinedTable, "stream %s does not exist", is.Target)
	}
	if target.Kind != catalog.Stream {
		return nil, NameError(is, CodeFeatureNotSupport, "INSERT INTO can only be used to insert into a stream. %s is a %s.", target.Name, strings.ToLower(target.Kind.String()))
	}
	if target.IsSource {
		return nil, NameError(is, CodeFeatureNotSupport, "Cannot insert into read-only %s: %s", strings.ToLower(target.Kind.String()), target.Name)
	}
	if len(target.Schema.HeaderIndexes()) > 0 {
		return nil, NameError(is, CodeFeatureNotSupport, "Cannot insert into %s because it has header columns", target.Name)
	}
	is.Select.inserting = true
	q, err := BindSelect(is.Select, cat)
	if err != nil {
		return nil, err
	}
	if q.Limit >= 0 {
		return nil, Errorf(CodeSyntaxError, "a persistent query cannot have a LIMIT")
	}
	for _, s := range planner.Sources(q.Root) {
		if s.Name == target.Name {
			return nil, Errorf(CodeFeatureNotSupport, "INSERT INTO %s cannot read from %s itself", target.Name, target.Name)
		}
	}
	got, want := q.Root.Schema(), target.Schema
	if got.String() != want.String() {
		for _, c := range got.Columns {
			if c.Name == types.RowTime || c.Name == types.RowPartition || c.Name == types.RowOffset {
				return nil, Errorf(CodeDuplicateObject, "Reserved column name in select: `%s`. Please remove or alias the column.", c.Name)
			}
		}
		all := func(s types.Schema) []int {
			cols := make([]int, len(s.Columns))
			for i := range cols {
				cols[i] = i
			}
			return cols
		}
		return nil, Errorf(CodeDatatypeMismatch, "Incompatible schema between results and sink (INSERT INTO %s).\nResult schema is %s\nSink schema is %s", target.Name, types.ColumnsText(got, all(got)), types.ColumnsText(want, all(want)))
	}
	return &planner.Sink{Input: q.Root, Target: target, Dialect: q.Dialect, Rules: q.Rules}, nil
}

// untypedNull reports whether e is a NULL literal without a type.
func untypedNull(e expr.Expr) bool {
	l, ok := e.(*expr.Literal)
	return ok && l.V.Null && l.T.Kind == types.Unknown
}

// ksqlText renders e as ksqlDB's messages quote expressions: NULL as
// null, MAP(k:=v) and STRUCT(f:=v) without spaces around :=.
func ksqlText(e expr.Expr) string {
	if untypedNull(e) {
		return "null"
	}
	s := strings.ReplaceAll(e.String(), " := ", ":=")
	if strings.Contains(s, " || ") && !strings.Contains(s, "'") {
		s = strings.ReplaceAll(s, " || ", " + ") // ksqlDB's string concatenation
	}
	return s
}

// arithText is an operand as ksqlDB's arithmetic errors print it: a
// BOOLEAN literal in lower case.
func arithText(e expr.Expr) string {
	if l, ok := e.(*expr.Literal); ok && !l.V.Null && l.T.Kind == types.Boolean {
		return strings.ToLower(ksqlText(e))
	}
	return ksqlText(e)
}

// ksqlTypeText is e's type as ksqlDB's messages name it (an untyped
// NULL's is null).
func ksqlTypeText(e expr.Expr) string {
	if untypedNull(e) {
		return "null"
	}
	return e.Type().Quoted()
}

// ksqlCompareOps are ksqlDB's names of the comparison operators, as its
// messages give them.
var ksqlCompareOps = map[expr.Op]string{
	expr.OpEQ: "EQUAL", expr.OpNE: "NOT_EQUAL", expr.OpLT: "LESS_THAN", expr.OpLE: "LESS_THAN_OR_EQUAL",
	expr.OpGT: "GREATER_THAN", expr.OpGE: "GREATER_THAN_OR_EQUAL",
}

// whereError words an error binding the WHERE as ksqlDB does: type
// errors of its comparisons are "Error in WHERE expression: …", and a
// window bound of a source without windows "cannot be resolved".
func whereError(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	switch {
	case strings.HasPrefix(c.Msg, "Cannot compare ") || strings.HasPrefix(c.Msg, "Comparison with NULL") || strings.HasPrefix(c.Msg, "Error processing expression"):
		c.Msg = "Error in WHERE expression: " + c.Msg
	case strings.HasPrefix(c.Msg, "Window bounds column "):
		// A window bound in the WHERE of a windowed aggregation: the
		// window does not exist yet where the WHERE filters.
		name := strings.Fields(c.Msg)[3]
		c.Msg = "Error in WHERE expression: Unknown column " + name + ". " + c.Msg
	case strings.HasPrefix(c.Msg, "column WINDOWSTART does not exist") || strings.HasPrefix(c.Msg, "column WINDOWEND does not exist"):
		name := strings.Fields(c.Msg)[1]
		c.Msg = "WHERE column '" + name + "' cannot be resolved: " + c.Msg
	default:
		return err
	}
	return &c
}

// prepareError words an error in an INSERT … VALUES expression as
// ksqlDB does: "Failed to prepare statement: …".
func prepareError(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Msg = "Failed to prepare statement: " + c.Msg
	return &c
}
