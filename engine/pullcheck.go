package engine

import (
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// pushHint ends ksqlDB's refusals of pull-query features.
const pushHint = " See https://cnfl.io/queries for more info.\nAdd EMIT CHANGES if you intended to issue a push query."

// checkPull refuses a pull query as ksqlDB's pull-query validation does,
// before any state is waited for: joins, GROUP BY, ROWPARTITION and
// ROWOFFSET, a LIMIT when ksql.query.pull.limit.clause.enabled is false,
// a key compared with a value of another type, and, when
// ksql.query.pull.table.scan.enabled is false, a query without WHERE or
// with a WHERE that does not pin the key as a lookup can.
func checkPull(props map[string]string, q *planner.Query) error {
	srcs := planner.Sources(q.Root)
	if len(srcs) > 1 {
		return sql.Errorf(sql.CodeFeatureNotSupport, "Pull queries don't support JOIN clauses."+pushHint)
	}
	if hasAggregate(q.Root) {
		return sql.Errorf(sql.CodeFeatureNotSupport, "Pull queries don't support GROUP BY clauses."+pushHint)
	}
	if q.Limit >= 0 && strings.EqualFold(props["ksql.query.pull.limit.clause.enabled"], "false") {
		return sql.Errorf(sql.CodeFeatureNotSupport, "LIMIT clause in pull queries is currently disabled. You can enable them by setting ksql.query.pull.limit.clause.enabled=true."+pushHint)
	}
	proj, filter := pullNodes(q)
	if proj != nil {
		if name := pseudoIn(proj.Exprs...); name != "" {
			return sql.Errorf(sql.CodeFeatureNotSupport, "Pull queries don't support the following columns in SELECT clauses: `%s`"+pushHint, name)
		}
	}
	if filter == nil {
		if srcs[0].Kind == catalog.Table && strings.EqualFold(props["ksql.query.pull.table.scan.enabled"], "false") {
			// No WHERE: the whole table, a scan (ksqlDB's
			// PullPhysicalPlanBuilder).
			return sql.Errorf(sql.CodeFeatureNotSupport, "Query requires table scan to be enabled. Table scans can be enabled by setting ksql.query.pull.table.scan.enabled=true")
		}
		return nil
	}
	if name := pseudoIn(filter.Predicate); name != "" {
		return sql.Errorf(sql.CodeFeatureNotSupport, "Pull queries don't support the following columns in WHERE clauses: `%s`"+pushHint, name)
	}
	src := srcs[0]
	if src.Kind != catalog.Table {
		return nil
	}
	in := filter.Input.Schema()
	if err := checkKeyTypes(in, filter.Predicate); err != nil {
		return err
	}
	if strings.EqualFold(props["ksql.query.pull.table.scan.enabled"], "false") {
		return checkLookup(props, src, in, filter.Predicate)
	}
	return nil
}

// pullNodes finds the projection and the filter of a single-source plan.
func pullNodes(q *planner.Query) (*planner.Project, *planner.Filter) {
	var p *planner.Project
	var f *planner.Filter
	for n := q.Root; n != nil; {
		switch x := n.(type) {
		case *planner.Project:
			if p == nil {
				p = x
			}
		case *planner.Filter:
			f = x
		}
		ch := n.Children()
		if len(ch) != 1 {
			break
		}
		n = ch[0]
	}
	return p, f
}

// pseudoIn returns ROWPARTITION or ROWOFFSET when an expression reads it.
func pseudoIn(es ...expr.Expr) string {
	for _, e := range es {
		if c, ok := e.(*expr.Column); ok && (c.Name == "ROWPARTITION" || c.Name == "ROWOFFSET") {
			return c.Name
		}
		if name := pseudoIn(e.Children()...); name != "" {
			return name
		}
	}
	return ""
}

// keyColumn returns the key column e is, if it is one.
func keyColumn(in types.Schema, e expr.Expr) (*expr.Column, bool) {
	for {
		c, ok := e.(*expr.Cast)
		if !ok || !c.Implicit {
			break
		}
		e = c.X
	}
	c, ok := e.(*expr.Column)
	if !ok || c.Index >= len(in.Columns) || !in.Columns[c.Index].Key {
		return nil, false
	}
	return c, true
}

// literalOf returns the literal e is, under implicit casts.
func literalOf(e expr.Expr) (*expr.Literal, bool) {
	for {
		c, ok := e.(*expr.Cast)
		if !ok || !c.Implicit {
			break
		}
		e = c.X
	}
	l, ok := e.(*expr.Literal)
	return l, ok
}

// ksqlOps are ksqlDB's names of the comparison operators.
var ksqlOps = map[expr.Op]string{
	expr.OpEQ: "EQUAL", expr.OpNE: "NOT_EQUAL", expr.OpLT: "LESS_THAN", expr.OpLE: "LESS_THAN_OR_EQUAL",
	expr.OpGT: "GREATER_THAN", expr.OpGE: "GREATER_THAN_OR_EQUAL",
}

// checkKeyTypes refuses a key compared with NULL, or a NULL in an IN
// list, with ksqlDB's messages. A number key compared with a STRING
// literal that reads as a number is kept (ksqlDB refuses it): PostgreSQL
// clients send parameters so (see sql's ksqlComparable).
func checkKeyTypes(in types.Schema, pred expr.Expr) error {
	var err error
	var walk func(e expr.Expr)
	walk = func(e expr.Expr) {
		if err != nil {
			return
		}
		switch x := e.(type) {
		case *expr.Binary:
			if _, ok := ksqlOps[x.Op]; ok {
				k, l := x.L, x.R
				if _, isKey := keyColumn(in, k); !isKey {
					k, l = l, k
				}
				if kc, isKey := keyColumn(in, k); isKey {
					if lit, ok := literalOf(l); ok {
						if lit.V.Null {
							err = sql.Errorf(sql.CodeDatatypeMismatch, "Error in WHERE expression: Comparison with NULL not supported: %s %s NULL\nUse 'IS NULL' or 'IS NOT NULL' instead.\nStatement: %s", kc.T, x.Op, x)
							return
						}
					}
				}
			}
		case *expr.In:
			if kc, isKey := keyColumn(in, x.X); isKey && !x.Not {
				for _, el := range x.List {
					lit, ok := literalOf(el)
					if !ok {
						continue
					}
					if lit.V.Null {
						err = sql.Errorf(sql.CodeDatatypeMismatch, "Primary key columns can not be NULL: (%s = null)", kc.Name)
						return
					}
				}
			}
		}
		for _, c := range e.Children() {
			walk(c)
		}
	}
	walk(pred)
	return err
}

// refsColumn reports whether e reads a column.
func refsColumn(e expr.Expr) bool {
	if _, ok := e.(*expr.Column); ok {
		return true
	}
	for _, c := range e.Children() {
		if refsColumn(c) {
			return true
		}
	}
	return false
}

// refsKey reports whether e reads a key column.
func refsKey(in types.Schema, e expr.Expr) bool {
	if c, ok := e.(*expr.Column); ok {
		return c.Index < len(in.Columns) && in.Columns[c.Index].Key
	}
	for _, c := range e.Children() {
		if refsKey(in, c) {
			return true
		}
	}
	return false
}

// disjuncts splits a predicate at its top-level ORs.
func disjuncts(e expr.Expr) []expr.Expr {
	if b, ok := e.(*expr.Binary); ok && b.Op == expr.OpOr {
		return append(disjuncts(b.L), disjuncts(b.R)...)
	}
	return []expr.Expr{e}
}

func splitAnd(e expr.Expr) []expr.Expr {
	if b, ok := e.(*expr.Binary); ok && b.Op == expr.OpAnd {
		return append(splitAnd(b.L), splitAnd(b.R)...)
	}
	return []expr.Expr{e}
}

// checkLookup applies ksqlDB's rules for a pull query that may not scan
// the table (ksql.query.pull.table.scan.enabled=false): every disjunct
// of the WHERE pins every key column with = or IN against values, once;
// a range over a single STRING key of a non-windowed table is allowed
// when ksql.query.pull.range.scan.enabled is not false.
func checkLookup(props map[string]string, src *catalog.Source, in types.Schema, pred expr.Expr) error {
	keys := in.KeyIndexes()
	ds := disjuncts(pred)
	for _, d := range ds {
		eq := map[int]int{} // key index → comparisons pinning it
		ranged := map[int]bool{}
		hasKey := false
		for _, c := range splitAnd(d) {
			switch x := c.(type) {
			case *expr.Binary:
				if _, ok := ksqlOps[x.Op]; !ok {
					continue
				}
				k, other := x.L, x.R
				kc, isKey := keyColumn(in, k)
				if !isKey {
					k, other = other, k
					kc, isKey = keyColumn(in, k)
				}
				if !isKey {
					if refsKey(in, x.L) || refsKey(in, x.R) {
						return sql.Errorf(sql.CodeFeatureNotSupport, "A comparison must directly reference a key column.")
					}
					continue
				}
				if refsColumn(other) {
					return sql.Errorf(sql.CodeFeatureNotSupport, "A comparison must be between a key column and a resolvable expression.")
				}
				hasKey = true
				switch x.Op {
				case expr.OpEQ:
					eq[kc.Index]++
				case expr.OpNE:
					return sql.Errorf(sql.CodeFeatureNotSupport, "Bound on key columns '[`%s` %s KEY]' must currently be '='. ", kc.Name, kc.T)
				default:
					ranged[kc.Index] = true
					eq[kc.Index]++
				}
			case *expr.In:
				kc, isKey := keyColumn(in, x.X)
				if !isKey || x.Not {
					continue
				}
				for _, el := range x.List {
					if refsColumn(el) {
						return sql.Errorf(sql.CodeFeatureNotSupport, "A comparison must be between a key column and a resolvable expression.")
					}
				}
				hasKey = true
				eq[kc.Index]++
			case *expr.Like:
				if _, isKey := keyColumn(in, x.X); !isKey {
					return sql.Errorf(sql.CodeFeatureNotSupport, "Like condition must be between strings")
				}
			}
		}
		if !hasKey {
			return sql.Errorf(sql.CodeFeatureNotSupport, "WHERE clause missing key column for disjunct: %s", d)
		}
		for _, k := range keys {
			if eq[k] > 1 {
				return sql.Errorf(sql.CodeFeatureNotSupport, "A comparison condition on the key column cannot be combined with other comparisons such as an IN predicate")
			}
		}
		if len(keys) > 1 {
			for _, k := range keys {
				if eq[k] == 0 {
					return sql.Errorf(sql.CodeFeatureNotSupport, "Multi-column sources must specify every key in the WHERE clause.")
				}
			}
		}
		if len(ranged) > 0 {
			k := keys[0]
			if len(keys) > 1 || len(ds) > 1 || src.Windowed() || in.Columns[k].Type.Kind != types.String ||
				strings.EqualFold(props["ksql.query.pull.range.scan.enabled"], "false") {
				return sql.Errorf(sql.CodeFeatureNotSupport, "Query requires table scan to be enabled")
			}
		}
	}
	return nil
}
