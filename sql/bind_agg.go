package sql

import (
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// aggScope is the state of binding the SELECT list and HAVING of a
// GROUP BY query: expressions there read the group key (by matching a
// GROUP BY expression's text) and aggregates, not input columns.
type aggScope struct {
	groupText []string // restored text of each GROUP BY expression
	groupCols []types.Column
	aggs      []*planner.AggCall
	aggText   []string
	input     types.Schema
	// windowed: WINDOWSTART and WINDOWEND follow the group key columns.
	windowed bool
}

// hasAggregate reports whether the SELECT list or HAVING calls an
// aggregate function.
func hasAggregate(s *ast.SelectStmt) bool {
	found := false
	v := &aggFinder{found: &found}
	for _, f := range s.Fields.Fields {
		if f.Expr != nil {
			f.Expr.Accept(v)
		}
	}
	return found
}

type aggFinder struct{ found *bool }

func (v *aggFinder) Enter(n ast.Node) (ast.Node, bool) {
	switch n := n.(type) {
	case *ast.AggregateFuncExpr:
		*v.found = true
	case *ast.FuncCallExpr:
		if _, ok := expr.LookupAggregate(strings.TrimPrefix(strings.ToUpper(n.FnName.O), "__")); ok {
			*v.found = true
		}
	}
	return n, *v.found
}

func (v *aggFinder) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// tableAggregateMessage refuses the aggregate fn over a table: it cannot
// take a changed row back out of its group. ksqlDB's words name the
// functions it refuses so.
func tableAggregateMessage(fn string) string {
	switch fn {
	case "LATEST_BY_OFFSET", "MIN", "MAX":
		return "The aggregation functions LATEST_BY_OFFSET, MIN and MAX cannot be applied to a table source, only to a stream source. " + fn + " cannot take a changed row back out of its group."
	}
	return fn + " cannot aggregate a table (it cannot take a changed row back out); use it on a stream"
}

// aggText is the aggregate call as ksqlDB prints it: SUM(VALUE).
func aggText(c *planner.AggCall) string {
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = ksqlText(a)
	}
	return c.Fn.Name + "(" + strings.Join(args, ", ") + ")"
}

// notGrouped ends the error of a column outside GROUP BY and outside an
// aggregate.
const notGrouped = "must be in GROUP BY or inside an aggregate function"

// nonAggregateError words err, binding the first of fields, as ksqlDB
// does when it is a column outside GROUP BY and any aggregate: it names
// every such SELECT expression from that one on, as ksqlDB prints them.
func (b *binder) nonAggregateError(err error, fields []*ast.SelectField) error {
	var se *Error
	if !errors.As(err, &se) || !strings.HasSuffix(se.Msg, notGrouped) {
		return err
	}
	var shown []string
	for i, f := range fields {
		if i > 0 {
			b.clause = "SELECT"
			_, ferr := b.expr(f.Expr)
			b.clause = ""
			var fe *Error
			if !errors.As(ferr, &fe) || !strings.HasSuffix(fe.Msg, notGrouped) {
				continue
			}
		}
		// The expression as ksqlDB prints it: bound over the input rows.
		agg := b.agg
		b.agg = nil
		e, berr := b.expr(f.Expr)
		b.agg = agg
		if berr != nil {
			shown = append(shown, ksqlCondition(f.Expr))
			continue
		}
		shown = append(shown, ksqlText(e))
	}
	c := *se
	c.Msg = "Non-aggregate SELECT expression(s) not part of GROUP BY: " + strings.Join(shown, ", ") +
		"\nEither add the column(s) to the GROUP BY or remove them from the SELECT. The " + se.Msg + "."
	return &c
}

// aggregateQuery binds the GROUP BY, aggregates, HAVING and SELECT list of
// a query whose input plan is node.
func (b *binder) aggregateQuery(sel *Select, node planner.Node) (*planner.Query, error) {
	s := sel.stmt
	if s.GroupBy == nil && !sel.persistent && sel.Emit != "" && allAggregates(s.Fields.Fields) {
		// A push query of aggregates alone: ksqlDB groups every row
		// into one group, as by a constant.
		s.GroupBy = &ast.GroupByClause{Items: []*ast.ByItem{{Expr: ast.NewValueExpr(int64(1), "", ""), NullOrder: true}}}
	}
	if s.GroupBy == nil && sel.dialect == planner.DialectSQL {
		return b.globalAggregate(sel, node) // bind_global.go
	}
	if s.GroupBy == nil {
		// ksqlDB names the SELECT expressions without an aggregate.
		var shown []string
		for _, f := range s.Fields.Fields {
			found := false
			if f.Expr != nil {
				f.Expr.Accept(&aggFinder{found: &found})
			}
			if found || f.Expr == nil {
				continue
			}
			if e, err := b.expr(f.Expr); err == nil {
				shown = append(shown, ksqlText(e))
			} else {
				shown = append(shown, restore(f.Expr))
			}
		}
		if len(shown) > 0 {
			return nil, b.errAt("SELECT", CodeFeatureNotSupport, "Non-aggregate SELECT expression(s) not part of GROUP BY: %s\nEither add the column(s) to the GROUP BY or remove them from the SELECT (aggregates need GROUP BY).", strings.Join(shown, ", "))
		}
		if sel.persistent {
			for _, f := range s.Fields.Fields {
				if f.Expr != nil {
					return nil, b.errAt("SELECT", CodeFeatureNotSupport, "CREATE TABLE AS SELECT statement does not support aggregate function [%s] without a GROUP BY clause.", ksqlCondition(unparen(f.Expr)))
				}
			}
		}
		return nil, b.errAt("SELECT", CodeFeatureNotSupport, "aggregates need GROUP BY")
	}
	if s.OrderBy != nil {
		return nil, b.errAt("ORDER", CodeFeatureNotSupport, "ORDER BY is not supported")
	}
	if len(sel.partitionExprs) > 0 {
		return nil, b.errAt("PARTITION", CodeFeatureNotSupport, "PARTITION BY cannot be combined with GROUP BY")
	}
	// What the aggregation reads: a source, or a join (of tables: a
	// table's changes).
	fromTable, srcName := false, ""
	if b.src != nil {
		fromTable, srcName = b.src.Kind == catalog.Table, b.src.Name
	}
	if j := findJoin(node); j != nil {
		fromTable, srcName = j.OfTables(), j.LeftName+" JOIN "+j.RightName
	}
	var window *planner.WindowSpec
	if w := sel.window; w != nil {
		if fromTable {
			return nil, errorAt(sel.text, w.pos, CodeFeatureNotSupport, "windowed aggregations read streams: %s is a table", srcName)
		}
		grace := w.grace
		if grace < 0 && sel.Emit == "FINAL" && !sel.LegacyFinal {
			grace = 0 // ksqlDB closes an EMIT FINAL window at its end unless told otherwise
		}
		ws, err := planner.NewWindowSpec(w.typ, w.size, w.advance, w.retention, grace, w.zone)
		if err != nil {
			return nil, errorAt(sel.text, w.pos, CodeInvalidParameter, "%v", err)
		}
		window = ws
	} else if sel.Emit == "FINAL" {
		return nil, b.errAt("FINAL", CodeFeatureNotSupport, "EMIT FINAL is only supported for windowed aggregations.")
	}
	if window == nil && sel.persistent {
		// A window bound the result would name as a value column: ksqlDB
		// refuses the name before it resolves the GROUP BY.
		for _, f := range s.Fields.Fields {
			if c, ok := unparen(f.Expr).(*ast.ColumnNameExpr); ok && f.AsName.O == "" && c.Name.Table.O == "" {
				if up := strings.ToUpper(c.Name.Name.O); up == types.WindowStart || up == types.WindowEnd {
					return nil, b.errAt(up, CodeDuplicateObject, "Reserved column name in select: `%s`. Please remove or alias the column.", up)
				}
			}
		}
	}
	scope := &aggScope{input: b.schema, windowed: window != nil}
	// The SELECT list's unnamed expressions are named first, in order, as
	// ksqlDB does; a GROUP BY expression the list repeats takes its name
	// there, another one a name of its own.
	gen := b.newAliasGen(sel)
	aliases := make([]string, len(s.Fields.Fields))
	for i, f := range s.Fields.Fields {
		switch {
		case f.AsName.O != "":
			aliases[i] = f.AsName.O
		case f.WildCard != nil:
		default:
			if _, isCol := unparen(f.Expr).(*ast.ColumnNameExpr); !isCol {
				aliases[i] = gen.forExpr(f.Expr, i)
			}
		}
	}
	if len(s.GroupBy.Items) == 1 {
		// GROUP BY (a, b): one grouping set, the columns a and b, as
		// ksqlDB reads it (TiDB reads a row).
		if row, ok := s.GroupBy.Items[0].Expr.(*ast.RowExpr); ok {
			items := make([]*ast.ByItem, len(row.Values))
			for i, v := range row.Values {
				items[i] = &ast.ByItem{Expr: v, NullOrder: true}
			}
			s.GroupBy.Items = items
		}
	}
	var groupBy []expr.Expr
	for i, item := range s.GroupBy.Items {
		if p, ok := item.Expr.(*ast.PositionExpr); ok && p.P == nil {
			// TiDB reads GROUP BY 1 as a position (MySQL); in ksqlDB it
			// is the constant.
			item.Expr = ast.NewValueExpr(int64(p.N), "", "")
		}
		b.clause = "GROUP BY"
		g, err := b.expr(item.Expr)
		b.clause = ""
		if err != nil {
			return nil, err
		}
		if k := g.Type().Kind; !sel.persistent && (k == types.Array || k == types.Struct) {
			return nil, errorAt(sel.text, sel.toks[0].pos, CodeFeatureNotSupport, "cannot GROUP BY a value of type %s in a push query; CREATE TABLE … AS SELECT it", g.Type())
		}
		name := ""
		if c, ok := g.(*expr.Column); ok {
			name = c.Name
			if b.join != nil {
				name = b.joinName(c)
			}
		} else {
			text := restore(item.Expr)
			for j, f := range s.Fields.Fields {
				if sel.PositionalAliases {
					break
				}
				if f.WildCard == nil && aliases[j] != "" && restore(f.Expr) == text {
					name = aliases[j]
					break
				}
			}
			if name == "" && sel.global {
				name = globalKeyName
			}
			if name == "" {
				name = b.newAliasGen(sel).forExpr(item.Expr, i)
			}
		}
		groupBy = append(groupBy, g)
		scope.groupText = append(scope.groupText, restore(item.Expr))
		scope.groupCols = append(scope.groupCols, types.Column{Name: name, Type: g.Type(), Key: true})
	}
	b.agg = scope
	defer func() { b.agg = nil }()
	var exprs []expr.Expr
	var names []string
	for i, f := range s.Fields.Fields {
		if f.WildCard != nil {
			// ksqlDB expands * and names the columns not grouped by.
			grouped := map[int]bool{}
			for _, g := range groupBy {
				if c, ok := g.(*expr.Column); ok {
					grouped[c.Index] = true
				}
			}
			var shown []string
			for i, c := range b.schema.Columns {
				if !grouped[i] && !c.Pseudo {
					shown = append(shown, c.Name)
				}
			}
			if len(shown) > 0 {
				return nil, b.errAt("*", CodeFeatureNotSupport, "Non-aggregate SELECT expression(s) not part of GROUP BY: %s\nEither add the column(s) to the GROUP BY or remove them from the SELECT (SELECT * cannot be combined with GROUP BY).", strings.Join(shown, ", "))
			}
			return nil, b.errAt("*", CodeFeatureNotSupport, "SELECT * cannot be combined with GROUP BY")
		}
		b.clause = "SELECT"
		e, err := b.expr(f.Expr)
		b.clause = ""
		if err != nil {
			for _, f := range s.Fields.Fields {
				if call, ok := unparen(f.Expr).(*ast.FuncCallExpr); ok {
					if _, isTable := expr.LookupTable(strings.TrimPrefix(strings.ToUpper(call.FnName.O), "__")); isTable {
						return nil, b.errAt(strings.TrimPrefix(strings.ToUpper(call.FnName.O), "__"), CodeFeatureNotSupport, "Table functions cannot be used with aggregations.")
					}
				}
			}
			err = b.nonAggregateError(err, s.Fields.Fields[i:])
			if se, ok := err.(*Error); ok && !hasAggregate(s) && s.Having == nil && strings.HasPrefix(se.Msg, "Non-aggregate") {
				c := *se
				c.Msg = "GROUP BY requires aggregate functions in either the SELECT or HAVING clause.\n" + c.Msg
				return nil, &c
			}
			return nil, err
		}
		name := f.AsName.O
		if name == "" {
			if c, ok := e.(*expr.Column); ok && (c.Index < len(groupBy) || scope.windowed && c.Index < len(groupBy)+len(types.WindowColumns)) {
				name = c.Name
			} else if aliases[i] != "" {
				name = aliases[i]
			} else {
				name = gen.forExpr(f.Expr, i)
			}
		}
		exprs, names = append(exprs, e), append(names, name)
	}
	var having expr.Expr
	if s.Having != nil {
		b.clause = "HAVING"
		h, err := b.expr(s.Having.Expr)
		b.clause = ""
		if err != nil {
			var se *Error
			if errors.As(err, &se) && strings.HasSuffix(se.Msg, notGrouped) {
				c := *se
				c.Msg = "Non-aggregate HAVING expression not part of GROUP BY: " + strings.Fields(se.Msg)[1] + "\n" + se.Msg
				return nil, &c
			}
			if errors.As(err, &se) && strings.HasPrefix(se.Msg, "Cannot compare ") {
				// ksqlDB names an aggregate by its call, not its column.
				c := *se
				for i := len(scope.aggs) - 1; i >= 0; i-- {
					c.Msg = strings.ReplaceAll(c.Msg, "KSQL_AGG_"+strconv.Itoa(i)+" ", aggText(scope.aggs[i])+" ")
				}
				c.Msg = "Error in HAVING expression: " + c.Msg
				return nil, &c
			}
			return nil, err
		}
		having = h
	}
	groupNames := make([]string, len(scope.groupCols))
	for i, c := range scope.groupCols {
		groupNames[i] = c.Name
	}
	agg, err := planner.NewWindowedAggregate(node, groupBy, groupNames, scope.aggs, window)
	if err != nil {
		return nil, b.errAt("GROUP", CodeDatatypeMismatch, "%v", err)
	}
	if err := b.checkAggregateFormats(scope.aggs); err != nil {
		return nil, err
	}
	if fromTable {
		// A changed row leaves its old group: the aggregates must be able
		// to take a row back out.
		for _, c := range scope.aggs {
			if !b.legacyDistinct && (sel.dialect == planner.DialectSQL || !expr.RetractsOnlyInSQL(c.Fn.Name)) {
				c.Fn = c.Fn.ForTable()
			}
			if _, ok := c.NewAccumulator().(expr.Undoer); !ok {
				return nil, b.errAt(c.Fn.Name, CodeFeatureNotSupport, "%s", tableAggregateMessage(c.Fn.Name))
			}
		}
		agg.FromTable = true
	}
	if window != nil && window.Type == types.Session {
		// A row that bridges two sessions merges their states.
		for _, c := range scope.aggs {
			if _, ok := c.NewAccumulator().(expr.Merger); !ok {
				return nil, b.errAt(c.Fn.Name, CodeFeatureNotSupport, "%s cannot aggregate SESSION windows (it cannot merge two sessions' states); use it with TUMBLING or HOPPING windows", c.Fn.Name)
			}
		}
	}
	// Distinct aggregates keep their values apart from the group's
	// state (bind_distinct.go).
	agg.DistinctValues = !b.legacyDistinctState
	agg.EmitFinal = sel.Emit == "FINAL"
	agg.FinalOnClose = agg.EmitFinal && !sel.LegacyFinal
	// A window table function grouped by its window alone (tvf.go): a
	// global aggregate per window, its constant key internal.
	agg.Global = sel.global && window != nil
	node = agg
	if having != nil {
		f, err := planner.NewFilter(node, having)
		if err != nil {
			msg := err.Error()
			for i := len(scope.aggs) - 1; i >= 0; i-- {
				msg = strings.ReplaceAll(msg, "KSQL_AGG_"+strconv.Itoa(i)+" ", aggText(scope.aggs[i])+" ")
			}
			return nil, b.errAt("HAVING", CodeDatatypeMismatch, "Type error in HAVING expression: %s", msg)
		}
		node = f
	}
	if !sel.PositionalAliases {
		exprs, names = groupKeysFirst(exprs, names, len(groupBy))
	}
	proj, err := planner.NewProject(node, exprs, names)
	if err != nil {
		return nil, Errorf(CodeDatatypeMismatch, "%v", err)
	}
	return &planner.Query{Root: proj, Emit: sel.Emit, Limit: sel.Limit}, nil
}

// aggExpr resolves, inside a GROUP BY query's SELECT list or HAVING, an
// expression that is a GROUP BY expression, an aggregate call, or an input
// column that is neither (an error). ok is false for other expressions,
// which are bound as usual (their parts come back here).
func (b *binder) aggExpr(n ast.ExprNode) (expr.Expr, bool, error) {
	sc := b.agg
	text := restore(n)
	for i, g := range sc.groupText {
		if g == text {
			c := sc.groupCols[i]
			return &expr.Column{Index: i, Name: c.Name, T: c.Type}, true, nil
		}
	}
	var name string
	var args []ast.ExprNode
	star, distinct := false, false
	switch n := n.(type) {
	case *ast.AggregateFuncExpr:
		name, args, distinct = strings.ToUpper(n.F), n.Args, n.Distinct
		if name == "COUNT" && len(args) == 1 {
			if v, ok := args[0].(*driver.ValueExpr); ok && v.Kind() != driver.KindNull {
				star, args = true, nil // COUNT(*), COUNT(1)
			}
		}
	case *ast.FuncCallExpr:
		fn := strings.TrimPrefix(strings.ToUpper(n.FnName.O), "__")
		if _, ok := expr.LookupAggregate(fn); !ok {
			return nil, false, nil
		}
		name, args = fn, n.Args
	case *ast.ColumnNameExpr:
		if _, isLambda := b.lambdaVar(n.Name.Name.O); isLambda {
			return nil, false, nil
		}
		if name := n.Name.Name.O; sc.windowed && (name == types.WindowStart || name == types.WindowEnd) {
			if b.join != nil && !b.join.legacy {
				// ksqlDB does not resolve the window bounds of an
				// aggregation over a join.
				return nil, true, b.errAt(name, CodeUndefinedColumn, "SELECT column '%s' cannot be resolved.", name)
			}
			i := len(sc.groupCols)
			if name == types.WindowEnd {
				i++
			}
			return &expr.Column{Index: i, Name: name, T: types.BigintType}, true, nil
		}
		return nil, true, b.errAt(n.Name.Name.O, CodeSyntaxError, "column %s %s", n.Name.Name.O, notGrouped)
	default:
		return nil, false, nil
	}
	fn, ok := expr.LookupAggregate(name)
	if distinct {
		// SQL's exact COUNT(DISTINCT x), SUM(DISTINCT x) (bind_distinct.go).
		if fn, ok = expr.DistinctAggregate(name); !ok || star {
			return nil, true, b.errAt(name, CodeFeatureNotSupport, "%s(DISTINCT …) is not supported; COUNT(DISTINCT x) and SUM(DISTINCT x) are", name)
		}
	}
	if !ok {
		return nil, true, b.errAt(name, CodeUndefinedFunction, "aggregate function %s is not supported yet", name)
	}
	if fn.Name == "SUM" && !b.sqlNulls && !distinct {
		// ksqlDB's DECIMAL sum type and overflow; statements recorded
		// before keep the registry's.
		fn = expr.KsqlSum
		if !b.legacySum {
			fn = expr.KsqlSumZero
		}
	}
	if old, ok := expr.LookupLegacyAggregate(name); ok && b.legacyFns {
		fn = old
	}
	if n, ok := b.collectLimits[name]; ok && !b.legacyFns {
		if limited, ok := expr.CollectWithLimit(name, n); ok {
			fn = limited
		}
	}
	// Aggregate arguments read input columns: bind them outside the scope.
	b.agg = nil
	outer := b.aggCall
	b.aggCall = name
	bound, err := b.exprs(args)
	b.agg, b.aggCall = sc, outer
	if err != nil {
		return nil, true, err
	}
	ts := make([]types.Type, len(bound))
	for i, a := range bound {
		ts[i] = a.Type()
		if _, lit := a.(*expr.Literal); fn.LiteralFrom > 0 && i >= fn.LiteralFrom && !lit && !b.legacyFns {
			return nil, true, b.errAt(name, CodeInvalidParameter, "Parameter %d passed to function %s must be a literal constant, but was expression: '%s'", i+1, name, strings.Trim(restore(args[i]), "`\""))
		}
	}
	t, err := fn.Check(ts)
	if err != nil {
		return nil, true, b.errAt(name, CodeUndefinedFunction, "%v", err)
	}
	call := &planner.AggCall{Fn: fn, Args: bound, T: t}
	key := call.String()
	if star {
		key = name + "(*)"
	}
	for i, k := range sc.aggText {
		if k == key {
			return aggColumn(sc, i), true, nil
		}
	}
	sc.aggs, sc.aggText = append(sc.aggs, call), append(sc.aggText, key)
	return aggColumn(sc, len(sc.aggs)-1), true, nil
}

// checkAggregateFormats refuses, as ksqlDB does, a GROUP BY over a source
// whose value format is KAFKA, and aggregates whose intermediate value
// ksqlDB keeps as a STRUCT, ARRAY or MAP over a DELIMITED source (its
// aggregation stores use the source's value format). Queries recorded
// before these checks (Select.LegacyFunctions) are not refused.
func (b *binder) checkAggregateFormats(aggs []*planner.AggCall) error {
	if b.legacyFns || b.src == nil {
		return nil
	}
	switch b.src.ValueFormat {
	case types.FormatKafka:
		return b.errAt("GROUP", CodeFeatureNotSupport, "Source(s) %s are using the 'KAFKA' value format. This format does not yet support GROUP BY.", b.src.Name)
	case types.FormatDelimited:
		for _, c := range aggs {
			if c.Fn.CompositeState {
				return b.errAt(c.Fn.Name, CodeFeatureNotSupport, "One of the functions used in the statement has an intermediate type that the value format can not handle. Please remove the function or change the format. (%s over the DELIMITED source %s)", c.Fn.Name, b.src.Name)
			}
		}
	}
	return nil
}

// groupKeysFirst orders a grouped projection as ksqlDB's result: the
// GROUP BY columns it selects in GROUP BY order (the key columns' order in
// the record key), then the other items in SELECT order.
func groupKeysFirst(exprs []expr.Expr, names []string, groups int) ([]expr.Expr, []string) {
	type item struct {
		e    expr.Expr
		name string
		key  int
	}
	items := make([]item, len(exprs))
	for i, e := range exprs {
		items[i] = item{e, names[i], groups}
		if c, ok := e.(*expr.Column); ok && c.Index < groups {
			items[i].key = c.Index
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].key < items[j].key })
	for i, it := range items {
		exprs[i], names[i] = it.e, it.name
	}
	return exprs, names
}

func aggColumn(sc *aggScope, i int) expr.Expr {
	at := len(sc.groupCols) + i
	if sc.windowed {
		at += len(types.WindowColumns)
	}
	return &expr.Column{Index: at, Name: "KSQL_AGG_" + strconv.Itoa(i), T: sc.aggs[i].T}
}

// allAggregates reports whether every field holds an aggregate call.
func allAggregates(fields []*ast.SelectField) bool {
	for _, f := range fields {
		found := false
		if f.Expr != nil {
			f.Expr.Accept(&aggFinder{found: &found})
		}
		if !found {
			return false
		}
	}
	return len(fields) > 0
}
