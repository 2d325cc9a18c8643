package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// A windowed aggregation joined by an interval join (Nexmark q7):
//
//	FROM bid B JOIN (SELECT MAX(price) AS maxprice, window_end AS dt
//	    FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dt), INTERVAL '10' SECOND))
//	    GROUP BY window_start, window_end) B1
//	ON B.price = B1.maxprice AND B.dt BETWEEN B1.dt - INTERVAL '10' SECOND AND B1.dt
//
// As Flink's window aggregation, the derived side emits each window's
// row once, when the window closes (EMIT FINAL: stream time past its end
// plus the window's grace, by default 24 hours less its size); its rows
// are a stream, whose event time is the window bound the BETWEEN names
// (window_end or window_start, selected), and the join is the
// stream–stream interval join of the other side with it. The query
// writes the rows to a topic of its own (<appid>-DERIVED-<name>-stream,
// not compacted, without keys) and reads it back as a stream
// (planner.Scan.Feed); the join repartitions both sides by its key.
//
// A window's row arrives at the join when the window closes, its grace
// after the rows of the other side it bounds: the join keeps those rows
// the window's size and grace longer than an interval join's default
// grace (24 hours), so that they are still there.

// finalStream makes the windowed aggregation feed, the join side named
// name, a stream of final windows; agg is its aggregation.
func (b *binder) finalStream(sel *Select, name string, feed planner.Node, agg *planner.Aggregate) (*catalog.Source, error) {
	ij := sel.interval
	if agg.Window.Type == types.Session {
		return nil, errorAt(sel.text, ij.pos, CodeFeatureNotSupport, "an interval join of a SESSION windowed aggregation (%s) is not supported", name)
	}
	out := feed.Schema()
	at := out.IndexFold(ij.derivedCol)
	p, _ := feed.(*planner.Project)
	if at < 0 || p == nil {
		return nil, errorAt(sel.text, ij.pos, CodeUndefinedColumn, "%s has no column %s", name, ij.derivedCol)
	}
	if c, ok := p.Exprs[at].(*expr.Column); !ok || c.Name != types.WindowStart && c.Name != types.WindowEnd {
		return nil, errorAt(sel.text, ij.pos, CodeFeatureNotSupport, "an interval join bounds the time of a windowed aggregation (%s) by its window: %s is not its window_start or window_end", name, ij.derivedCol)
	}
	if err := b.sameEventTime(sel, name, feed); err != nil {
		return nil, err
	}
	schema := types.Schema{Columns: append([]types.Column(nil), out.Columns...)}
	for i := range schema.Columns {
		schema.Columns[i].Key = false
	}
	agg.EmitFinal, agg.FinalOnClose = true, true
	sel.within.grace = planner.LegacyJoinGraceMs + agg.Window.SizeMs + agg.Window.GraceMs
	sel.dialect = planner.DialectSQL
	src := &catalog.Source{Name: name, Kind: catalog.Stream, Schema: schema, Topic: "(derived " + name + ")",
		KeyFormat: types.FormatNone, ValueFormat: types.FormatJSON, Partitioner: types.Murmur2,
		TimestampColumn: out.Columns[at].Name}
	if b.feeds == nil {
		b.feeds = map[*catalog.Source]planner.Node{}
	}
	b.feeds[src] = feed
	return src, nil
}

// sameEventTime refuses a windowed aggregation feed (the join side
// name) that reads the topic of the join's other side with another
// event time: the query reads each topic through one source node, which
// takes one time column.
func (b *binder) sameEventTime(sel *Select, name string, feed planner.Node) error {
	j := sel.stmt.From.TableRefs
	for _, rs := range []ast.ResultSetNode{j.Left, j.Right} {
		ts, ok := rs.(*ast.TableSource)
		if !ok {
			continue
		}
		tn, ok := ts.Source.(*ast.TableName)
		if !ok {
			continue
		}
		other, ok := b.cat.Source(tn.Name.O)
		if !ok {
			continue
		}
		for _, fs := range planner.Sources(feed) {
			if fs.Topic == other.Topic && fs.TimestampColumn != other.TimestampColumn {
				col := func(c string) string {
					if c == "" {
						return "ROWTIME"
					}
					return c
				}
				return errorAt(sel.text, sel.interval.pos, CodeFeatureNotSupport, "%s windows %s by %s, the join's other side reads it by %s: a query reads a topic with one event time (window it by %s)",
					name, other.Name, col(fs.TimestampColumn), col(other.TimestampColumn), col(other.TimestampColumn))
			}
		}
	}
	return nil
}
