package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	"github.com/sqlstreams/sqlstreams/types"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/planner"
)

// Subqueries in WHERE: semi and anti joins.
//
// A condition of WHERE (ANDed with the others) that is
//
//	x [NOT] IN (SELECT c FROM t [WHERE p])
//	[NOT] EXISTS (SELECT … FROM t WHERE t.k = outer_expr [AND p])
//
// where t is a table and c, or k (all of its key columns), is t's
// primary key (p may read the outer query's columns too: a correlated
// condition), is a lookup of t by key: the SELECT is rewritten, before
// it is bound, into a join with t that keeps only the outer source's
// columns. IN and EXISTS are an INNER join (t's key is unique, so each
// outer row matches at most once: the semi join's rows); NOT IN and NOT
// EXISTS a LEFT join that keeps the rows with no match (t's key IS
// NULL), the anti join. p goes in the join's ON (a residual:
// JoinResidualToFilter and JoinResidualToNullMask lower it: an anti
// join's outer row is kept when no row of t has its key and meets p).
// Over a stream, each row is checked against t as t is when the row is
// processed; over a table the result follows both sides' changes (a row
// leaves the result when a match appears or goes, as the join's rows
// do).
//
// NULLs: x NOT IN (…) is not true for a NULL x (SQL's three-valued
// logic), so NOT IN also requires x IS NOT NULL; t's key is never NULL,
// so the subquery's set holds no NULL. (SQL makes NULL NOT IN (empty
// set) true; whether the set is empty is not tracked, so a NULL x is
// left out then too.) NOT EXISTS keeps an outer row
// whose correlated expression is NULL (nothing equals it).
//
// x [NOT] IN (SELECT c FROM t WHERE p) where c is not t's key, or t is
// a stream, looks x up in the set of c's values: the join reads, as a
// table named SUBQUERY_<t> keyed by c (JSON), the rows of the
// aggregation SELECT c, COUNT(*) FROM t WHERE p GROUP BY c, which the
// query computes (setScope, planner.Computed; over a table a value
// leaves the set when its count drops to 0, SQL's retractions). p must
// not read the outer query's columns. A NULL c is not in the set (GROUP
// BY drops it).
//
// A comparison x op (SELECT agg FROM t WHERE p) with a global aggregate
// (no GROUP BY) is a join with the aggregate's one-row table, keyed by
// the constant 0 (SUBQUERY_KEY, its value SUBQUERY_VALUE): ON 0 =
// SUBQUERY_KEY, the comparison a filter over the join's rows. A
// persistent query over a stream is keyed by the stream's key again
// (PARTITION BY it). t may be the outer stream itself (physical lowering
// shares its source node).
//
// The statement is in the SQL dialect. Other subqueries — correlated
// ones over a set or an aggregate, a subquery over the outer query's
// own source (but a scalar one over a stream) or with GROUP BY, an EXISTS over a stream or without t's
// key = an outer expression, scalar subqueries that are not a global
// aggregate, subqueries in the SELECT list, under OR or NOT — are
// refused at their position.

// subqueryFinder collects the subqueries of an expression, outermost
// first, without entering them.
type subqueryFinder struct{ found []ast.ExprNode }

func (v *subqueryFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case *ast.SubqueryExpr, *ast.ExistsSubqueryExpr, *ast.CompareSubqueryExpr:
		v.found = append(v.found, n.(ast.ExprNode))
		return n, true
	case *ast.PatternInExpr:
		if n.(*ast.PatternInExpr).Sel != nil {
			v.found = append(v.found, n.(ast.ExprNode))
			return n, true
		}
	}
	return n, false
}

func (v *subqueryFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func subqueriesOf(n ast.Node) []ast.ExprNode {
	if n == nil {
		return nil
	}
	v := &subqueryFinder{}
	n.Accept(v)
	return v.found
}

// subqueryAt is the position of the SELECT of n's subquery in sel's
// text (n a subquery, or IN, EXISTS or a comparison with one), for errors
// about it.
func subqueryAt(sel *Select, n ast.ExprNode) int {
	var sq *ast.SubqueryExpr
	switch x := n.(type) {
	case *ast.SubqueryExpr:
		sq = x
	case *ast.PatternInExpr:
		sq, _ = x.Sel.(*ast.SubqueryExpr)
	case *ast.ExistsSubqueryExpr:
		sq, _ = x.Sel.(*ast.SubqueryExpr)
	case *ast.CompareSubqueryExpr:
		sq, _ = x.R.(*ast.SubqueryExpr)
	}
	at := 0
	if sq != nil && len(sel.rw.spans) > 0 {
		at = sel.rw.orig(sq.OriginTextPosition())
	}
	for _, t := range sel.toks {
		if t.pos >= at && t.is("SELECT") && t.pos > 0 {
			return t.pos
		}
	}
	return -1
}

// rewriteSubqueries rewrites a SELECT whose WHERE holds an IN or EXISTS
// subquery into its semi or anti join (see above); a SELECT without
// subqueries is left as it is.
func rewriteSubqueries(sel *Select, cat Catalog) error {
	if sel.subquery {
		// Rewritten when it was bound before.
		sel.dialect = planner.DialectSQL
		return nil
	}
	s := sel.stmt
	var all []ast.ExprNode
	if s.Where != nil {
		all = append(all, subqueriesOf(s.Where)...)
	}
	other := func(n ast.Node, where string) error {
		if subs := subqueriesOf(n); len(subs) > 0 {
			return errorAt(sel.text, subqueryAt(sel, subs[0]), CodeFeatureNotSupport, "a subquery in %s is not supported: only [NOT] IN (SELECT …) and [NOT] EXISTS (SELECT …) conditions of WHERE are", where)
		}
		return nil
	}
	if s.Fields != nil {
		if err := other(s.Fields, "the SELECT list"); err != nil {
			return err
		}
	}
	if s.GroupBy != nil {
		if err := other(s.GroupBy, "GROUP BY"); err != nil {
			return err
		}
	}
	if s.Having != nil {
		if err := other(s.Having, "HAVING"); err != nil {
			return err
		}
	}
	if s.From != nil && s.From.TableRefs != nil && s.From.TableRefs.On != nil {
		if err := other(s.From.TableRefs.On, "a join's ON"); err != nil {
			return err
		}
	}
	if len(all) == 0 {
		return nil
	}
	// The WHERE's conjuncts: one of them is the subquery condition.
	var conj []ast.ExprNode
	var split func(n ast.ExprNode)
	split = func(n ast.ExprNode) {
		if bin, ok := unparen(n).(*ast.BinaryOperationExpr); ok && bin.Op == opcode.LogicAnd {
			split(bin.L)
			split(bin.R)
			return
		}
		conj = append(conj, n)
	}
	split(s.Where)
	var cond ast.ExprNode
	var rest []ast.ExprNode
	for _, c := range conj {
		subs := subqueriesOf(c)
		if len(subs) == 0 {
			rest = append(rest, c)
			continue
		}
		at := subqueryAt(sel, subs[0])
		if cond != nil {
			return errorAt(sel.text, at, CodeFeatureNotSupport, "one IN or EXISTS subquery per SELECT is supported")
		}
		if len(subs) > 1 || !isSubqueryCondition(c) && scalarSide(c) == nil {
			return errorAt(sel.text, at, CodeFeatureNotSupport, "this subquery is not supported: a subquery is supported as a condition [NOT] IN (SELECT …) or [NOT] EXISTS (SELECT …) of WHERE, ANDed with the others (not under OR or NOT, not a scalar subquery)")
		}
		cond = c
	}
	at := subqueryAt(sel, unparenNot(cond))
	fail := func(format string, args ...any) error {
		return errorAt(sel.text, at, CodeFeatureNotSupport, format, args...)
	}
	if sel.Emit == "" && !sel.persistent && !sel.inserting {
		return fail("pull queries don't support IN or EXISTS subqueries yet: make a table of the query (CREATE TABLE … AS SELECT …) and query it, or add EMIT CHANGES")
	}
	// The outer source.
	j := s.From.TableRefs
	if j == nil || j.Right != nil {
		return fail("an IN or EXISTS subquery needs FROM to name one stream or table (not a join)")
	}
	ots, ok := j.Left.(*ast.TableSource)
	if !ok {
		return fail("an IN or EXISTS subquery needs FROM to name one stream or table")
	}
	otn, ok := ots.Source.(*ast.TableName)
	if !ok {
		return fail("an IN or EXISTS subquery needs FROM to name a stream or table, not a derived table")
	}
	if c, _ := lookupCTE(cat, otn.Name.O); c != nil {
		return fail("an IN or EXISTS subquery needs FROM to name a stream or table, not a WITH query")
	}
	outer, ok := cat.Source(otn.Name.O)
	if !ok {
		if _, isView := lookupView(cat, otn.Name.O); isView {
			return fail("an IN or EXISTS subquery needs FROM to name a stream or table, not a view")
		}
		return errorAt(sel.text, posOf(sel, otn.Name.O), CodeUndefinedTable, "stream or table %s does not exist", otn.Name.O)
	}
	oq := ots.AsName.O
	if oq == "" {
		oq = outer.Name
	}
	// The subquery.
	var subq *ast.SubqueryExpr
	var x ast.ExprNode // IN's outer expression
	not := false
	exists := false
	scalar := false // x op (SELECT agg FROM t …)
	switch c := unparen(cond).(type) {
	case *ast.PatternInExpr:
		subq, _ = c.Sel.(*ast.SubqueryExpr)
		x, not = c.Expr, c.Not
	case *ast.ExistsSubqueryExpr:
		subq, _ = c.Sel.(*ast.SubqueryExpr)
		not, exists = c.Not, true
	case *ast.UnaryOperationExpr:
		e := unparen(c.V).(*ast.ExistsSubqueryExpr)
		subq, _ = e.Sel.(*ast.SubqueryExpr)
		not, exists = !e.Not, true
	case *ast.BinaryOperationExpr:
		subq, scalar = scalarSide(c), true
	}
	if subq == nil {
		return fail("this subquery is not supported")
	}
	inner, ok := subq.Query.(*ast.SelectStmt)
	if !ok {
		return fail("a subquery of UNION is not supported")
	}
	switch {
	case inner.With != nil:
		return fail("WITH in a subquery is not supported")
	case scalar && (inner.GroupBy != nil || inner.Having != nil || !hasAggregate(inner)):
		return fail("a scalar subquery is supported over a global aggregate only: SELECT AVG(c) FROM t [WHERE …], without GROUP BY or HAVING")
	case !scalar && (inner.GroupBy != nil || inner.Having != nil || hasAggregate(inner)):
		return fail("a subquery with GROUP BY, HAVING or aggregates is not supported yet: make it a table first (CREATE TABLE … AS SELECT … GROUP BY …) and read that")
	case inner.Distinct:
		return fail("SELECT DISTINCT in a subquery is not supported: IN and EXISTS ignore duplicates, leave it out")
	case inner.Limit != nil, inner.OrderBy != nil:
		return fail("LIMIT and ORDER BY in a subquery are not supported")
	case inner.From == nil || inner.From.TableRefs == nil || inner.From.TableRefs.Right != nil:
		return fail("a subquery must read one table (FROM t, not a join)")
	}
	its, ok := inner.From.TableRefs.Left.(*ast.TableSource)
	if !ok {
		return fail("a subquery must read one table")
	}
	itn, ok := its.Source.(*ast.TableName)
	if !ok {
		return fail("a subquery must read a table, not a derived table")
	}
	t, ok := cat.Source(itn.Name.O)
	if !ok {
		if _, isView := lookupView(cat, itn.Name.O); isView {
			return fail("a subquery must read a table, not a view")
		}
		return fail("stream or table %s does not exist", itn.Name.O)
	}
	if t.Kind != catalog.Table && exists {
		return fail("a subquery must read a table: %s is a stream (a stream's rows are events, not a set to look rows up in)", t.Name)
	}
	if t.Windowed() {
		return fail("a subquery over a windowed table is not supported")
	}
	// A scalar subquery may read the outer stream itself: the
	// aggregate and the outer rows share its source (self).
	self := t.Name == outer.Name
	if self && !(scalar && outer.Kind == catalog.Stream) {
		return fail("a subquery reading the outer query's own source (%s) is not supported", t.Name)
	}
	tq := its.AsName.O
	if tq == "" {
		tq = t.Name
	}
	if self && tq == oq {
		tq = "SUBQUERY_" + t.Name
	}
	if tq == oq {
		return fail("the subquery's table and the outer source need different names: both are %s; give one an alias", tq)
	}
	// Which side each column names: a qualified column its qualifier's;
	// an unqualified one the subquery's table's when it has the column
	// (the innermost scope), else the outer source's.
	innerCol := func(cn *ast.ColumnName) (bool, bool) { // (inner, outer)
		switch q := cn.Table.O; {
		case q == tq || q == t.Name:
			return true, false
		case q == oq || q == outer.Name:
			return false, true
		case q != "":
			return false, false
		case t.RowSchema().Index(cn.Name.O) >= 0:
			return true, false
		case outer.RowSchema().Index(cn.Name.O) >= 0:
			return false, true
		}
		return false, false
	}
	// sides reports which sides' columns n names, and qualifies each
	// column with its side's name.
	sides := func(n ast.Node) (in, out bool) {
		v := &nameVisitor{f: func(cn *ast.ColumnName) {
			i, o := innerCol(cn)
			switch {
			case i:
				in = true
				cn.Table = ast.NewCIStr(tq)
			case o:
				out = true
				cn.Table = ast.NewCIStr(oq)
			}
		}}
		n.Accept(v)
		return in, out
	}
	tkeys := t.Schema.KeyIndexes()
	keyName := func(i int) string { return t.Schema.Columns[i].Name }
	var on []ast.ExprNode
	var residual []ast.ExprNode
	var innerConj []ast.ExprNode
	if inner.Where != nil {
		var splitInner func(n ast.ExprNode)
		splitInner = func(n ast.ExprNode) {
			if bin, ok := unparen(n).(*ast.BinaryOperationExpr); ok && bin.Op == opcode.LogicAnd {
				splitInner(bin.L)
				splitInner(bin.R)
				return
			}
			innerConj = append(innerConj, n)
		}
		splitInner(inner.Where)
	}
	if len(subqueriesOf(inner)) > 0 {
		return fail("a subquery inside a subquery is not supported")
	}
	keyCol := func(n ast.ExprNode) int {
		cn, ok := unparen(n).(*ast.ColumnNameExpr)
		if !ok {
			return -1
		}
		if i, _ := innerCol(cn.Name); !i {
			return -1
		}
		for k, tk := range tkeys {
			if keyName(tk) == cn.Name.Name.O {
				return k
			}
		}
		return -1
	}
	var notNull ast.ExprNode
	antiCol := "" // the joined side's column that is NULL where no row matched
	if len(tkeys) > 0 {
		antiCol = keyName(tkeys[0])
	}
	if scalar {
		// x op (SELECT agg FROM t WHERE p): a join, on a constant key,
		// with the one-row table of the global aggregate SELECT agg
		// FROM t WHERE p (setScope), which every outer row reads.
		f := inner.Fields.Fields
		if len(f) != 1 || f[0].WildCard != nil {
			return fail("a scalar subquery selects one column")
		}
		for _, c := range append([]ast.ExprNode{f[0].Expr}, innerConj...) {
			if _, out := sides(c); out {
				return fail("a scalar subquery reading the outer query's columns (a correlated one) is not supported")
			}
		}
		agg := *inner
		if self {
			// Its columns are qualified by tq.
			agg.From = &ast.TableRefsClause{TableRefs: &ast.Join{Left: &ast.TableSource{Source: its.Source, AsName: ast.NewCIStr(tq)}}}
		}
		agg.Fields = &ast.FieldList{Fields: []*ast.SelectField{
			{Expr: ast.NewValueExpr(int64(0), "", ""), AsName: ast.NewCIStr(scalarKey)},
			{Expr: f[0].Expr, AsName: ast.NewCIStr(scalarValue)},
		}}
		agg.GroupBy = &ast.GroupByClause{Items: []*ast.ByItem{{Expr: ast.NewValueExpr(int64(0), "", ""), NullOrder: true}}}
		sel.setAgg, sel.setName, sel.setScalar = &agg, "SUBQUERY_"+t.Name, true
		its = &ast.TableSource{Source: &ast.TableName{Name: ast.NewCIStr(sel.setName)}, AsName: ast.NewCIStr(tq)}
		on = append(on, &ast.BinaryOperationExpr{Op: opcode.EQ, L: ast.NewValueExpr(int64(0), "", ""), R: columnRef(tq, scalarKey)})
		bin := *unparen(cond).(*ast.BinaryOperationExpr)
		if bin.L == subq || unparen(bin.L) == subq {
			bin.L = columnRef(tq, scalarValue)
		} else {
			bin.R = columnRef(tq, scalarValue)
		}
		rest = append(rest, &bin)
		innerConj = nil
		if len(sel.partitionExprs) == 0 && (sel.persistent || sel.inserting) && outer.Kind == catalog.Stream &&
			s.GroupBy == nil && !hasAggregate(s) {
			// A stream's join rows are keyed by the constant: the result
			// is keyed by the outer source's key again.
			for _, k := range outer.Schema.KeyIndexes() {
				sel.partitionExprs = append(sel.partitionExprs, columnRef(oq, outer.Schema.Columns[k].Name))
			}
		}
	} else if !exists {
		// x IN (SELECT c FROM t …): c must be t's primary key.
		if len(inner.Fields.Fields) != 1 || inner.Fields.Fields[0].WildCard != nil {
			return fail("the subquery of IN selects one column")
		}
		k := keyCol(inner.Fields.Fields[0].Expr)
		setIn := k < 0 || len(tkeys) != 1 || t.Kind != catalog.Table
		// x is in the outer query's scope: its unqualified columns are
		// the outer source's.
		inX := false
		x.Accept(&nameVisitor{f: func(cn *ast.ColumnName) {
			switch q := cn.Table.O; {
			case q == "" || q == oq || q == outer.Name:
				cn.Table = ast.NewCIStr(oq)
			case q == tq || q == t.Name:
				inX = true
			}
		}})
		if inX {
			return fail("the expression before IN must read the outer query's columns")
		}
		sides(inner.Fields.Fields[0].Expr)
		if setIn {
			// Not a lookup by t's key: a lookup of the set of c's
			// values, the keys of the aggregation SELECT c, COUNT(*)
			// FROM t WHERE p GROUP BY c, which the query runs and joins
			// as a table (setOf).
			cn, ok := unparen(inner.Fields.Fields[0].Expr).(*ast.ColumnNameExpr)
			if !ok {
				return fail("IN (SELECT c FROM %s): c must be a column of %s", t.Name, t.Name)
			}
			if i, _ := innerCol(cn.Name); !i {
				return fail("IN (SELECT c FROM %s): c must be a column of %s", t.Name, t.Name)
			}
			for _, c := range innerConj {
				if _, out := sides(c); out {
					return fail("IN (SELECT c FROM %s WHERE …) over a column that is not %s's PRIMARY KEY: a condition reading the outer query's columns is not supported", t.Name, t.Name)
				}
			}
			agg := *inner
			agg.Fields = &ast.FieldList{Fields: []*ast.SelectField{
				{Expr: cn, AsName: cn.Name.Name},
				{Expr: &ast.AggregateFuncExpr{F: ast.AggFuncCount, Args: []ast.ExprNode{ast.NewValueExpr(int64(1), "", "")}}, AsName: ast.NewCIStr(setCount)},
			}}
			agg.GroupBy = &ast.GroupByClause{Items: []*ast.ByItem{{Expr: cn, NullOrder: true}}}
			name := "SUBQUERY_" + t.Name
			sel.setAgg, sel.setName = &agg, name
			its = &ast.TableSource{Source: &ast.TableName{Name: ast.NewCIStr(name)}, AsName: ast.NewCIStr(tq)}
			antiCol = cn.Name.Name.O
			on = append(on, &ast.BinaryOperationExpr{Op: opcode.EQ, L: x, R: columnRef(tq, antiCol)})
			if not {
				notNull = &ast.IsNullExpr{Expr: x, Not: true}
			}
			innerConj = nil
		} else {
			on = append(on, &ast.BinaryOperationExpr{Op: opcode.EQ, L: x, R: inner.Fields.Fields[0].Expr})
		}
		for _, c := range innerConj {
			// Conditions on t's columns, and correlated ones that read
			// the outer's too: the join's residual either way.
			sides(c)
			residual = append(residual, c)
		}
		if not && !setIn {
			notNull = &ast.IsNullExpr{Expr: x, Not: true}
		}
	} else {
		// EXISTS (SELECT … FROM t WHERE t.k = outer_expr AND …).
		eqs := make([]ast.ExprNode, len(tkeys))
		for _, c := range innerConj {
			_, out := sides(c)
			if !out {
				residual = append(residual, c)
				continue
			}
			bin, ok := unparen(c).(*ast.BinaryOperationExpr)
			if ok && bin.Op == opcode.EQ {
				l, r := bin.L, bin.R
				if keyCol(r) >= 0 {
					l, r = r, l
				}
				if k := keyCol(l); k >= 0 && eqs[k] == nil {
					if rin, _ := sides(r); !rin {
						eqs[k] = &ast.BinaryOperationExpr{Op: opcode.EQ, L: r, R: l}
						continue
					}
				}
			}
			// Another correlated condition: the join's residual.
			residual = append(residual, c)
		}
		for k, e := range eqs {
			if e == nil {
				return fail("EXISTS (SELECT … FROM %s WHERE …) needs %s.%s = <outer expression>: the subquery looks %s up by its PRIMARY KEY", t.Name, tq, keyName(tkeys[k]), t.Name)
			}
			on = append(on, e)
		}
	}
	// The rewritten SELECT: FROM outer [LEFT] JOIN t ON keys AND p,
	// keeping the outer's columns, under their own names.
	qualify := &nameVisitor{f: func(cn *ast.ColumnName) {
		if cn.Table.O == "" && outer.RowSchema().Index(cn.Name.O) >= 0 {
			cn.Table = ast.NewCIStr(oq)
		}
	}}
	outerParts := []ast.Node{s.Fields}
	if s.GroupBy != nil {
		outerParts = append(outerParts, s.GroupBy)
	}
	if s.Having != nil {
		outerParts = append(outerParts, s.Having)
	}
	for _, n := range sel.partitionExprs {
		outerParts = append(outerParts, n)
	}
	for _, n := range rest {
		outerParts = append(outerParts, n)
	}
	for _, n := range outerParts {
		n.Accept(qualify)
	}
	var fields []*ast.SelectField
	for _, f := range s.Fields.Fields {
		if f.WildCard != nil {
			if q := f.WildCard.Table.O; q != "" && q != oq && q != outer.Name {
				return errorAt(sel.text, posOf(sel, q), CodeUndefinedTable, "'%s' is not a valid stream/table name or alias.", q)
			}
			sch := outer.RowSchema()
			for _, i := range sch.Visible() {
				c := sch.Columns[i]
				if c.Window {
					continue
				}
				fields = append(fields, &ast.SelectField{Expr: columnRef(oq, c.Name), AsName: ast.NewCIStr(c.Name)})
			}
			continue
		}
		g := *f
		if g.AsName.O == "" {
			if cn, ok := unparen(g.Expr).(*ast.ColumnNameExpr); ok {
				g.AsName = ast.NewCIStr(cn.Name.Name.O)
			}
		}
		fields = append(fields, &g)
	}
	jt := ast.CrossJoin
	if not {
		jt = ast.LeftJoin
		rest = append(rest, &ast.IsNullExpr{Expr: columnRef(tq, antiCol)})
		if notNull != nil {
			rest = append(rest, notNull)
		}
	}
	st := *s
	st.Fields = &ast.FieldList{Fields: fields}
	st.From = &ast.TableRefsClause{TableRefs: &ast.Join{Left: ots, Right: its, Tp: jt,
		On: &ast.OnCondition{Expr: andAll(append(on, residual...))}}}
	st.Where = andAll(rest)
	sel.stmt = &st
	sel.dialect = planner.DialectSQL
	sel.subquery, sel.subqueryCond, sel.subqueryKey = true, cond, on[0].(*ast.BinaryOperationExpr).L
	return nil
}

// isSubqueryCondition reports whether n is [NOT] IN (SELECT …) or
// [NOT] EXISTS (SELECT …).
func isSubqueryCondition(n ast.ExprNode) bool {
	switch c := unparen(n).(type) {
	case *ast.PatternInExpr:
		return c.Sel != nil
	case *ast.ExistsSubqueryExpr:
		return true
	case *ast.UnaryOperationExpr:
		_, ok := unparen(c.V).(*ast.ExistsSubqueryExpr)
		return ok && c.Op == opcode.Not
	}
	return false
}

// andAll is the conjunction of ns, or nil.
func andAll(ns []ast.ExprNode) ast.ExprNode {
	var out ast.ExprNode
	for _, n := range ns {
		if out == nil {
			out = n
		} else {
			out = &ast.BinaryOperationExpr{Op: opcode.LogicAnd, L: out, R: n}
		}
	}
	return out
}

func columnRef(q, name string) *ast.ColumnNameExpr {
	return &ast.ColumnNameExpr{Name: &ast.ColumnName{Table: ast.NewCIStr(q), Name: ast.NewCIStr(name)}}
}

// nameVisitor calls f on each column name, outside subqueries.
type nameVisitor struct{ f func(*ast.ColumnName) }

func (v *nameVisitor) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SubqueryExpr:
		return n, true
	case *ast.ColumnNameExpr:
		v.f(x.Name)
		return n, true
	}
	return n, false
}

func (v *nameVisitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// unparenNot is n without parentheses and a NOT before EXISTS.
func unparenNot(n ast.ExprNode) ast.ExprNode {
	n = unparen(n)
	if u, ok := n.(*ast.UnaryOperationExpr); ok && u.Op == opcode.Not {
		return unparen(u.V)
	}
	return n
}

// subqueryKeyError is the error for a persistent query whose semi or
// anti join's key is not selected: the join's result is keyed by the
// expression the table is looked up with.
func subqueryKeyError(sel *Select, sink string) error {
	key := restore(sel.subqueryKey)
	if cn, ok := unparen(sel.subqueryKey).(*ast.ColumnNameExpr); ok {
		key = cn.Name.Name.O
	}
	return errorAt(sel.text, subqueryAt(sel, unparenNot(sel.subqueryCond)), CodeFeatureNotSupport,
		"%s is keyed by what the subquery's table is looked up with (%s): select it too", sink, key)
}

// setCount names the count column of a subquery's set (setIn): how many
// of t's rows hold the value.
const setCount = "SUBQUERY_COUNT"

// setScope is the catalog as the rewritten join of x IN (SELECT c FROM t
// …) over a column c that is not t's key sees it: the set of c's values,
// the aggregation SELECT c, COUNT(*) FROM t WHERE p GROUP BY c, is a
// table named SUBQUERY_<t> (src), keyed by c in JSON, whose rows plan
// computes. Physical lowering runs plan in the query and writes its rows
// to a topic of the query's own, which the join reads as that table
// (planner.Computed): a value enters the set with its first row in t
// and leaves it (a tombstone: the SQL dialect deletes an emptied group)
// when no row of t holds it any more.
type setScope struct {
	Catalog
	src  *catalog.Source
	plan planner.Node
}

func (s *setScope) Source(name string) (*catalog.Source, bool) {
	if name == s.src.Name {
		return s.src, true
	}
	return s.Catalog.Source(name)
}

func (s *setScope) View(name string) (string, bool) {
	if vs, ok := s.Catalog.(Views); ok {
		return vs.View(name)
	}
	return "", false
}

// bindSet binds sel's set aggregation (sel.setAgg) and returns the scope
// its join binds in.
func bindSet(sel *Select, cat Catalog) (*setScope, error) {
	sub := &Select{base: sel.base, Emit: sel.Emit, Limit: -1, Params: sel.Params, nParams: sel.nParams,
		stmt: sel.setAgg, toks: sel.toks, rw: sel.rw, fullJoin: -1, persistent: sel.persistent, inserting: sel.inserting,
		CollectLimits: sel.CollectLimits, DefaultKeyFormat: sel.DefaultKeyFormat, sink: sel.sink, dialect: planner.DialectSQL}
	q, err := bindSelect(sub, cat)
	if err != nil {
		return nil, err
	}
	if sel.setScalar {
		// A global aggregate: its one row stays, with the aggregates of
		// no rows, when its input's rows are all gone.
		for n := q.Root; n != nil; {
			if a, ok := n.(*planner.Aggregate); ok {
				a.Global = true
				break
			}
			ch := n.Children()
			if len(ch) != 1 {
				break
			}
			n = ch[0]
		}
	}
	root, _, err := planner.Rewrite(q.Root, planner.DialectSQL)
	if e := planError(err); e != nil {
		return nil, e
	}
	if err != nil {
		return nil, Errorf(CodeFeatureNotSupport, "%v", err)
	}
	var cols []types.Column
	for _, c := range root.Schema().Columns {
		if !c.Pseudo {
			cols = append(cols, c)
		}
	}
	if len(cols) != 2 {
		return nil, Errorf(CodeInternal, "the subquery's set has %d columns", len(cols))
	}
	cols[0].Key, cols[1].Key = true, false
	outer, _ := cat.Source(sel.stmt.From.TableRefs.Left.(*ast.TableSource).Source.(*ast.TableName).Name.O)
	var parts int32
	if outer != nil {
		parts = outer.Partitions
	}
	src := &catalog.Source{Name: sel.setName, Kind: catalog.Table, KeyFormat: types.FormatJSON, ValueFormat: types.FormatJSON,
		Schema: types.Schema{Columns: cols}, Partitions: parts, Partitioner: types.Murmur2}
	return &setScope{Catalog: cat, src: src, plan: root}, nil
}

// attachSet marks the scans of the set's table in the plan n with the
// plan that computes its rows.
func attachSet(n planner.Node, set *setScope) {
	if s, ok := n.(*planner.Scan); ok && s.Source == set.src {
		s.Computed = &planner.Computed{Plan: set.plan, Set: true}
	}
	for _, c := range n.Children() {
		attachSet(c, set)
	}
}

// The columns of a scalar subquery's one-row table: its constant key
// and its value.
const (
	scalarKey   = "SUBQUERY_KEY"
	scalarValue = "SUBQUERY_VALUE"
)

// scalarSide returns the subquery of n when n compares an expression
// with a scalar subquery (x > (SELECT AVG(c) FROM t)), else nil.
func scalarSide(n ast.ExprNode) *ast.SubqueryExpr {
	bin, ok := unparen(n).(*ast.BinaryOperationExpr)
	if !ok {
		return nil
	}
	switch bin.Op {
	case opcode.EQ, opcode.NE, opcode.LT, opcode.LE, opcode.GT, opcode.GE:
	default:
		return nil
	}
	l, lok := unparen(bin.L).(*ast.SubqueryExpr)
	r, rok := unparen(bin.R).(*ast.SubqueryExpr)
	switch {
	case lok && !rok && len(subqueriesOf(bin.R)) == 0:
		return l
	case rok && !lok && len(subqueriesOf(bin.L)) == 0:
		return r
	}
	return nil
}
