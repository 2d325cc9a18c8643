package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/planner"
)

// Global aggregates: aggregates without GROUP BY, in the SQL dialect (a
// CREATE MATERIALIZED VIEW, or a query with a derived table or CTE).
// ksqlDB refuses them, and its statements keep refusing them.
//
// The aggregation groups by a constant: one group, whose key column
// (KSQL_GLOBAL, internal) routes every row to one task and keys its
// state. The result projects no key column: a one-row table without
// key columns, written with null record keys to partition 0 of its
// topic (physical.Sink.SinglePartition) so that its changes stay in
// order. Its row stays when its input's rows are all gone, with the
// aggregates of no rows (COUNT 0, SUM 0), as SQL's global aggregate.

// globalKeyName names a global aggregation's constant key column.
const globalKeyName = "KSQL_GLOBAL"

// globalAggregate binds the aggregates of a SELECT without GROUP BY in
// the SQL dialect, over node.
func (b *binder) globalAggregate(sel *Select, node planner.Node) (*planner.Query, error) {
	st := *sel.stmt
	st.GroupBy = &ast.GroupByClause{Items: []*ast.ByItem{{Expr: ast.NewValueExpr(int64(0), "", ""), NullOrder: true}}}
	cp := *sel
	cp.stmt = &st
	cp.global = true
	q, err := b.aggregateQuery(&cp, node)
	if err != nil {
		return nil, err
	}
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
	return q, nil
}
