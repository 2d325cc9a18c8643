package physical

import (
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// innerAggregate finds an aggregation in n's chain (the input of
// another aggregation), and the nodes above it.
func innerAggregate(n planner.Node) (*planner.Aggregate, []planner.Node) {
	var path []planner.Node
	for cur := n; ; {
		if a, ok := cur.(*planner.Aggregate); ok {
			return a, path
		}
		ch := cur.Children()
		if len(ch) != 1 {
			return nil, nil
		}
		path = append(path, cur)
		cur = ch[0]
	}
}

// lowerInner lowers n, the input of an aggregation (names ending in
// suffix) that holds an aggregation itself: the inner one's sub-topologies
// (names ending in the next suffix), its HAVING and projections, whose
// changes (old and new rows, planner.Aggregate.Changes) the outer
// aggregation reads as a table's. The inner aggregation's keys are JSON
// in its store and repartition topic: they never leave the query.
func lowerInner(g *Graph, appID string, n planner.Node, suffix string) (*Node, error) {
	depth := 1
	if suffix != "" {
		d, _ := strconv.Atoi(strings.TrimPrefix(suffix, "-"))
		depth = d + 1
	}
	return lowerAt(g, appID, n, types.FormatJSON, types.FormatOptions{}, "-"+strconv.Itoa(depth))
}

// globalAggregate reports whether the last aggregation of n's chain is a
// global one (no GROUP BY).
func globalAggregate(n planner.Node) bool {
	a, _ := innerAggregate(n)
	return a != nil && a.Global
}
