package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// Joins of derived tables (SQL dialect): a side of a join may be a
// derived table or a WITH query's reference that aggregates — a table
// keyed by its group key, and for a windowed aggregation (a window table
// function) by its group key and the window_start column it selects.
// The query writes the side's rows to a topic of its own, keyed by those
// columns (JSON), and joins it as a source table (planner.Scan.Feed): two
// windowed aggregations join on their key and window_start as tables
// join on their primary keys, and an aggregation by window_start alone
// is the right side of a foreign-key join from the other's window_start
// (Nexmark q5, q7). Each side's changes update the joined rows.

// derivedSide binds a join side that is a derived table or a WITH
// query's reference; ok is false for a source's name.
func (b *binder) derivedSide(sel *Select, ts *ast.TableSource) (*catalog.Source, bool, error) {
	var q ast.ResultSetNode
	var kind, alias string
	var cols []ast.CIStr
	cat := b.cat
	switch src := ts.Source.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		q, kind, alias = src, "SUBQUERY", ts.AsName.O
	case *ast.TableName:
		c, scope := lookupCTE(b.cat, src.Name.O)
		if c == nil {
			return nil, false, nil
		}
		q, kind, alias, cols, cat = c.Query.Query, "CTE", c.Name.O, c.ColNameList, scope
	default:
		return nil, false, nil
	}
	saveSrc, saveAlias, saveSchema := b.src, b.alias, b.schema
	node, err := b.fromSubquery(sel, q, kind, alias, cols, cat)
	b.src, b.alias, b.schema = saveSrc, saveAlias, saveSchema
	if err != nil {
		return nil, true, err
	}
	feed, _, err := planner.Rewrite(node.(*planner.Derived).Input, planner.DialectSQL)
	if err != nil {
		return nil, true, b.errAt("JOIN", CodeFeatureNotSupport, "%v", err)
	}
	agg := findAggregate(feed)
	if agg == nil || agg.Global {
		return nil, true, b.errAt("JOIN", CodeFeatureNotSupport, "a join of a derived table or WITH query (%s) is supported when it aggregates (GROUP BY): its rows are keyed by the group", alias)
	}
	out := feed.Schema()
	schema := types.Schema{Columns: append([]types.Column(nil), out.Columns...)}
	if agg.Window != nil {
		// A windowed aggregation's rows are keyed by the group and the
		// window: window_start joins the key.
		p, _ := feed.(*planner.Project)
		found := false
		for i := range schema.Columns {
			if p == nil {
				break
			}
			if c, ok := p.Exprs[i].(*expr.Column); ok && c.Name == types.WindowStart {
				schema.Columns[i].Key, found = true, true
			}
		}
		if !found {
			return nil, true, b.errAt("JOIN", CodeFeatureNotSupport, "a join of a windowed aggregation (%s) needs its window_start column selected: its rows are keyed by the group and the window", alias)
		}
		if agg.Window.Type == types.Session {
			return nil, true, b.errAt("JOIN", CodeFeatureNotSupport, "a join of a SESSION windowed aggregation (%s) is not supported", alias)
		}
		if agg.EmitFinal {
			return nil, true, b.errAt("JOIN", CodeFeatureNotSupport, "a join of an aggregation with EMIT FINAL (%s) is not supported", alias)
		}
	}
	want := len(agg.GroupBy)
	if agg.Window != nil {
		want++
	}
	if len(schema.KeyIndexes()) < want {
		return nil, true, b.errAt("JOIN", CodeFeatureNotSupport, "a join of a derived table or WITH query (%s) needs all its GROUP BY columns selected: its rows are keyed by them", alias)
	}
	sel.dialect = planner.DialectSQL
	src := &catalog.Source{Name: alias, Kind: catalog.Table, Schema: schema, Topic: "(derived " + alias + ")",
		KeyFormat: types.FormatJSON, ValueFormat: types.FormatJSON, Partitioner: types.Murmur2}
	if b.feeds == nil {
		b.feeds = map[*catalog.Source]planner.Node{}
	}
	b.feeds[src] = feed
	return src, true, nil
}

// attachFeeds gives the join's scans of derived tables their plans.
func (b *binder) attachFeeds(n planner.Node) {
	j, ok := n.(*planner.Join)
	if !ok || len(b.feeds) == 0 {
		return
	}
	for _, side := range []*planner.Node{&j.Left, &j.Right} {
		switch x := (*side).(type) {
		case *planner.Scan:
			if feed := b.feeds[x.Source]; feed != nil && x.Feed == nil {
				sc := planner.NewScan(x.Source)
				sc.Feed = feed
				*side = sc
			}
		case *planner.Join:
			b.attachFeeds(x)
		}
	}
}
