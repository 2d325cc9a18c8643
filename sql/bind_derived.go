package sql

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// Derived tables and common table expressions.
//
// FROM (SELECT …) alias and WITH a AS (SELECT …) … FROM a bind the inner
// SELECT into a plan of its own, under a planner.Derived node; the outer
// SELECT resolves names against its output columns (under the alias, as
// if it were a source of that name). The planner's FlattenDerived rule
// then inlines it into the outer chain; AggregateOfAggregate plans an
// aggregation over an aggregating derived table as a table's
// aggregation. A query using them is in the SQL dialect
// (planner.DialectSQL).

// BindSelect binds a SELECT against cat into a planned query, and
// applies the planner's rules to it.
func BindSelect(sel *Select, cat Catalog) (*planner.Query, error) {
	markDialect(sel)
	q, err := bindSelect(sel, cat)
	if err != nil {
		return nil, err
	}
	if !sel.unionBranch {
		if err := sel.unclaimedTVF(); err != nil {
			return nil, err
		}
	}
	root, rules, err := planner.Rewrite(q.Root, sel.dialect, sel.skipRules()...)
	if err != nil {
		if e := planError(err); e != nil {
			return nil, e
		}
		if planner.FindRowNumber(q.Root) != nil {
			// RowNumberToTopN's refusals, at the ROW_NUMBER.
			return nil, errorAt(sel.text, posOf(sel, "ROW_NUMBER"), CodeFeatureNotSupport, "%v", err)
		}
		if at := lastPosOf(sel, "GROUP"); strings.HasPrefix(err.Error(), "AggregateOfAggregate") && at >= 0 {
			// An aggregation over another one it cannot read, at the
			// outer GROUP BY (the last: after its derived table or WITH
			// query).
			return nil, errorAt(sel.text, at, CodeFeatureNotSupport, "%v", err)
		}
		return nil, Errorf(CodeFeatureNotSupport, "%v", err)
	}
	if err := rowNumberLeft(sel, root); err != nil {
		return nil, err
	}
	if sel.subquery {
		// The binder's rewrite of an IN or EXISTS subquery (subquery.go).
		rules = append([]string{"SubqueryToJoin"}, rules...)
	}
	q.Root, q.Dialect, q.Rules = root, sel.dialect, rules
	if n := sel.limitParam; n > 0 {
		// LIMIT $n: the value bound now (NULL, as while none is: no
		// limit); a statement bound once reads it at each run
		// (LimitParam).
		if q.Limit, err = ParamLimit(sel.Params.Values[n-1]); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// cteScope is the catalog as a SELECT with a WITH clause sees it: its
// common table expressions first (a later one shadows an earlier one and
// a source of its name), then the enclosing scope.
type cteScope struct {
	Catalog
	ctes []*ast.CommonTableExpression
}

// lookupCTE finds the CTE name names in cat's scopes, and the scope its
// query binds in (the CTEs before it).
func lookupCTE(cat Catalog, name string) (*ast.CommonTableExpression, Catalog) {
	sc, ok := cat.(*cteScope)
	if !ok {
		return nil, nil
	}
	for i := len(sc.ctes) - 1; i >= 0; i-- {
		if c := sc.ctes[i]; c.Name.O == name {
			if i == 0 {
				return c, sc.Catalog
			}
			return c, &cteScope{Catalog: sc.Catalog, ctes: sc.ctes[:i]}
		}
	}
	return lookupCTE(sc.Catalog, name)
}

// withScope returns the scope of a SELECT with a WITH clause.
func withScope(sel *Select, w *ast.WithClause, cat Catalog) (Catalog, error) {
	if w.IsRecursive {
		return nil, errorAt(sel.text, posOf(sel, "RECURSIVE"), CodeFeatureNotSupport, "WITH RECURSIVE is not supported")
	}
	sel.dialect = planner.DialectSQL
	for i, c := range w.CTEs {
		for _, d := range w.CTEs[:i] {
			if d.Name.O == c.Name.O {
				return nil, errorAt(sel.text, posOf(sel, c.Name.O), CodeDuplicateObject, "WITH query name %s specified more than once", c.Name.O)
			}
		}
	}
	return &cteScope{Catalog: cat, ctes: w.CTEs}, nil
}

// posOf is the position of the first token naming name (-1: none).
func posOf(sel *Select, name string) int {
	for _, t := range sel.toks {
		if t.is(name) || (t.kind == tQuoted && t.text == name) {
			return t.pos
		}
	}
	return -1
}

// lastPosOf is the position of the statement's last token name, or -1.
func lastPosOf(sel *Select, name string) int {
	at := -1
	for _, t := range sel.toks {
		if t.is(name) {
			at = t.pos
		}
	}
	return at
}

// offsetPos is the position of a LIMIT's OFFSET (or of the LIMIT, as in
// LIMIT 1, 2).
func offsetPos(sel *Select) int {
	if at := lastPosOf(sel, "OFFSET"); at >= 0 {
		return at
	}
	return lastPosOf(sel, "LIMIT")
}

// fromSubquery binds the FROM of a derived table or of a CTE's
// reference: the inner SELECT q's plan under a Derived node named alias.
// cols, when given, renames its columns (WITH a(x, y) AS …).
func (b *binder) fromSubquery(sel *Select, q ast.ResultSetNode, kind, alias string, cols []ast.CIStr, cat Catalog) (planner.Node, error) {
	sel.dialect = planner.DialectSQL
	sub := &Select{base: sel.base, Emit: sel.Emit, Limit: -1, Params: sel.Params, nParams: sel.nParams,
		toks: sel.toks, fullJoin: -1, persistent: sel.persistent, inserting: sel.inserting,
		CollectLimits: sel.CollectLimits, DefaultKeyFormat: sel.DefaultKeyFormat, sink: sel.sink,
		rw: sel.rw, nestedTVFs: sel.nestedTVFs, inSQL: true}
	inner, ok := q.(*ast.SelectStmt)
	if u, isUnion := q.(*ast.SetOprStmt); isUnion {
		// A UNION ALL: of streams, or of tables as an aggregation's
		// input (bindTableUnion).
		if sel.nParams > 0 {
			return nil, errorAt(sel.text, posOf(sel, "UNION"), CodeFeatureNotSupport, "placeholders in a UNION ALL are not supported")
		}
		sub.derivedUnion = true
		sub.branchPos = sel.unionBranchPos(u)
		branches, err := sub.unionBranches(u)
		if err != nil {
			return nil, err
		}
		if sub.Limit >= 0 {
			return nil, errorAt(sel.text, posOf(sel, "LIMIT"), CodeFeatureNotSupport, "LIMIT in a %s is not supported", kindText(kind))
		}
		inner, ok = branches[0], true
	}
	if !ok {
		return nil, errorAt(sel.text, posOf(sel, "UNION"), CodeFeatureNotSupport, "%s %s: only a SELECT is supported here", kind, alias)
	}
	sub.stmt = inner
	if sub.union == nil {
		if err := sel.claimTVF(sub, inner); err != nil {
			return nil, err
		}
	}
	if sub.union == nil && inner.Limit != nil {
		return nil, errorAt(sel.text, posOf(sel, "LIMIT"), CodeFeatureNotSupport, "LIMIT in a %s is not supported", kindText(kind))
	}
	if sub.union == nil && inner.OrderBy != nil {
		return nil, errorAt(sel.text, posOf(sel, "ORDER"), CodeFeatureNotSupport, "ORDER BY in a %s is not supported", kindText(kind))
	}
	return b.derived(sel, sub, kind, alias, cols, cat)
}

// derived binds sub, the SELECT of a derived table, a CTE or a view, and
// puts it under a Derived node named alias for the outer SELECT sel.
func (b *binder) derived(sel, sub *Select, kind, alias string, cols []ast.CIStr, cat Catalog) (planner.Node, error) {
	qr, err := bindSelect(sub, cat)
	if err != nil {
		return nil, err
	}
	// The inner SELECT's placeholders are the statement's.
	for i, t := range sub.paramTypes {
		if i < len(b.ptypes) && b.ptypes[i].Kind == 0 {
			b.ptypes[i] = t
		}
	}
	var node planner.Node = qr.Root
	if u, ok := node.(*planner.Union); ok && u.Tables && !aggregates(sel) {
		return nil, errorAt(sel.text, posOf(sel, "UNION"), CodeFeatureNotSupport, "UNION ALL of tables is supported as the input of an aggregation only (its rows have no key): SELECT k, SUM(v) FROM (SELECT … FROM t1 UNION ALL SELECT … FROM t2) x GROUP BY k")
	}
	if len(cols) > 0 {
		in := node.Schema()
		vis := in.Visible()
		if len(cols) != len(vis) {
			return nil, errorAt(sel.text, posOf(sel, alias), CodeSyntaxError, "WITH query %s has %d columns available but %d columns specified", alias, len(vis), len(cols))
		}
		exprs := make([]expr.Expr, len(vis))
		names := make([]string, len(vis))
		for i, c := range vis {
			exprs[i] = &expr.Column{Index: c, Name: in.Columns[c].Name, T: in.Columns[c].Type}
			names[i] = cols[i].O
		}
		p, err := planner.NewProject(node, exprs, names)
		if err != nil {
			return nil, errorAt(sel.text, posOf(sel, alias), CodeDatatypeMismatch, "%v", err)
		}
		node = p
	}
	d := &planner.Derived{Input: node, Alias: alias, Kind: kind}
	// Names resolve against its columns, under its alias, as if it were
	// a source of that name.
	kindOf := catalog.Stream
	if planner.IsTable(node) {
		kindOf = catalog.Table
	}
	schema := types.Schema{Columns: append([]types.Column(nil), node.Schema().Columns...)}
	vf := types.FormatJSON
	if srcs := planner.Sources(node); len(srcs) > 0 {
		vf = srcs[0].ValueFormat
	}
	b.src = &catalog.Source{Name: alias, Kind: kindOf, Schema: schema, ValueFormat: vf, KeyFormat: types.FormatJSON}
	b.alias = alias
	b.schema = schema
	return d, nil
}

// unionBranchPos returns the offsets of the SELECT keywords that start
// the branches of u, a UNION ALL inside the statement: the last SELECT
// before each branch's first column.
func (sel *Select) unionBranchPos(u *ast.SetOprStmt) []int {
	var out []int
	var walk func(l *ast.SetOprSelectList)
	walk = func(l *ast.SetOprSelectList) {
		for _, n := range l.Selects {
			switch n := n.(type) {
			case *ast.SelectStmt:
				at := 0
				if len(n.Fields.Fields) > 0 {
					at = sel.rw.orig(n.Fields.Fields[0].Offset)
				}
				p := 0
				for _, t := range sel.toks {
					if t.pos < at && t.is("SELECT") {
						p = t.pos
					}
				}
				out = append(out, p)
			case *ast.SetOprSelectList:
				walk(n)
			}
		}
	}
	walk(u.SelectList)
	if len(out) == 0 {
		out = append(out, 0)
	}
	return out
}

// aggregates reports whether sel (a SELECT whose FROM is being bound)
// aggregates: GROUP BY, or an aggregate function in its SELECT list or
// HAVING.
func aggregates(sel *Select) bool {
	s := sel.stmt
	if s == nil {
		return false
	}
	if s.GroupBy != nil || s.Having != nil || sel.global {
		return true
	}
	return hasAggregate(s)
}

func kindText(kind string) string {
	switch kind {
	case "CTE":
		return "WITH query"
	case "VIEW":
		return "view"
	}
	return "derived table"
}

// fromTableSource binds a FROM that is not a plain source name — a
// derived table — or a name that is a CTE's; ok is false for a source
// name, which the caller looks up in the catalog.
func (b *binder) fromTableSource(sel *Select, ts *ast.TableSource, cat Catalog) (planner.Node, bool, error) {
	switch src := ts.Source.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		alias := ts.AsName.O
		if ts.Lateral {
			return nil, true, errorAt(sel.text, posOf(sel, "LATERAL"), CodeFeatureNotSupport, "LATERAL derived tables are not supported")
		}
		n, err := b.fromSubquery(sel, src, "SUBQUERY", alias, nil, cat)
		return n, true, err
	case *ast.TableName:
		c, scope := lookupCTE(cat, src.Name.O)
		if c == nil {
			if stmt, ok := lookupView(cat, src.Name.O); ok {
				if _, isSource := cat.Source(src.Name.O); !isSource {
					n, err := b.fromView(sel, ts, src.Name.O, stmt, cat)
					return n, true, err
				}
			}
			return nil, false, nil
		}
		alias := ts.AsName.O
		if alias == "" {
			alias = c.Name.O
		}
		n, err := b.fromSubquery(sel, c.Query.Query, "CTE", alias, c.ColNameList, scope)
		if err == nil {
			n.(*planner.Derived).Alias = c.Name.O
		}
		return n, true, err
	}
	return nil, true, Errorf(CodeFeatureNotSupport, "FROM must name a stream or table, or be a derived table")
}

// fromView binds the FROM of a view's reference: the view's SELECT
// (parsed again from its CREATE VIEW statement) under a Derived node of
// kind VIEW, named as the view or its alias. It runs as the outer
// SELECT does (a persistent, push or pull query). An error in the
// view's SELECT points at the reference and quotes the view's.
func (b *binder) fromView(sel *Select, ts *ast.TableSource, name, stmt string, cat Catalog) (planner.Node, error) {
	refPos := posOf(sel, name)
	for sc := cat; ; {
		if u, ok := sc.(*viewUse); ok {
			if u.name == name {
				return nil, errorAt(sel.text, refPos, CodeFeatureNotSupport, "view %s refers to itself", name)
			}
			sc = u.Catalog
			continue
		}
		if c, ok := sc.(*cteScope); ok {
			sc = c.Catalog
			continue
		}
		break
	}
	st, err := Parse(stmt)
	if err != nil {
		return nil, errorAt(sel.text, refPos, CodeInternal, "view %s: %v", name, err)
	}
	cv, ok := st.(*CreateView)
	if !ok {
		return nil, errorAt(sel.text, refPos, CodeInternal, "view %s: its statement is not a CREATE VIEW", name)
	}
	sel.dialect = planner.DialectSQL
	sub := *cv.Select
	sub.Emit, sub.Limit, sub.Params = sel.Emit, -1, nil
	sub.persistent, sub.inserting, sub.sink = sel.persistent, sel.inserting, sel.sink
	sub.CollectLimits, sub.DefaultKeyFormat = sel.CollectLimits, sel.DefaultKeyFormat
	alias := ts.AsName.O
	if alias == "" {
		alias = name
	}
	// The view's SELECT sees the catalog, not the CTEs of the query
	// reading it.
	base := cat
	for {
		if c, ok := base.(*cteScope); ok {
			base = c.Catalog
			continue
		}
		break
	}
	n, err := b.derived(sel, &sub, "VIEW", alias, nil, &viewUse{Catalog: base, name: name})
	if err != nil {
		if e, ok := err.(*Error); ok && e.Line > 0 {
			return nil, errorAt(sel.text, refPos, e.Code, "view %s: %s (in: %s)", name, e.Msg, cv.Select.text[posOfSelect(cv):])
		} else if ok {
			return nil, errorAt(sel.text, refPos, e.Code, "view %s: %s", name, e.Msg)
		}
		return nil, err
	}
	return n, nil
}

// posOfSelect is where a CREATE VIEW's SELECT starts in its text.
func posOfSelect(cv *CreateView) int {
	for _, t := range cv.Select.toks {
		if t.pos > cv.namePos && (t.is("SELECT") || t.is("WITH")) {
			return t.pos
		}
	}
	return 0
}

// viewUse is the catalog as a view's SELECT sees it while a query reading
// the view binds: it names the view, so that a view reading itself
// (through CREATE OR REPLACE) is an error, not an endless expansion.
type viewUse struct {
	Catalog
	name string
}

func (v *viewUse) View(name string) (string, bool) {
	if vs, ok := v.Catalog.(Views); ok {
		return vs.View(name)
	}
	return "", false
}
