package physical

import (
	"fmt"
	"reflect"

	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Op = (*Merge)(nil)

// Merge is UNION ALL: it passes on every row of each of its inputs, as
// it comes. Its inputs' rows have its layout. The sources of all
// branches are in one sub-topology: task p reads partition p of each
// topic that has one (topics of different partition counts need not be
// co-partitioned: nothing here keeps state by key), and the sink places
// every row by its key.
type Merge struct {
	Out types.Schema
}

func (m *Merge) Schema() types.Schema { return m.Out }
func (m *Merge) Explain(name string) string {
	return "  --> " + name + "  Merge: UNION ALL\n"
}

// markRead: a merge reads nothing itself; its rows go on whole.
func (m *Merge) markRead([]bool) bool { return false }
func (m *Merge) shape() string        { return "merge" }

// union adds the branches of a UNION ALL and the MERGE node that reads
// them all. Branches that read the same topic share its source node (a
// task reads each of its topic-partitions once). With changes (a union of
// tables under an aggregation), each table branch's records become
// changes (TableChanges, a store per branch) before its filters and
// projection.
func union(g *Graph, u *planner.Union, changes bool) (*Node, error) {
	if u.Tables && !changes {
		return nil, fmt.Errorf("UNION ALL of tables is supported as the input of an aggregation (GROUP BY) only")
	}
	outer := g.shared
	g.shared = map[string]*Node{}
	defer func() { g.shared = outer }()
	ins := make([]*Node, len(u.Inputs))
	for i, in := range u.Inputs {
		n, err := chain(g, in, changes && planner.IsTable(in))
		if err != nil {
			return nil, err
		}
		ins[i] = n
	}
	return g.Add("MERGE", &Merge{Out: u.Schema()}, ins...), nil
}

// addSource adds the source node of a scan, or, inside a UNION ALL,
// returns the one already reading its topic.
func (g *Graph) addSource(name string, source *Source) (*Node, error) {
	if g.shared == nil {
		return g.Add(name, source), nil
	}
	if n := g.shared[source.Topic]; n != nil {
		if !reflect.DeepEqual(n.Op, source) {
			return nil, fmt.Errorf("UNION ALL reads topic %s twice, as two different sources", source.Topic)
		}
		return n, nil
	}
	n := g.Add(name, source)
	g.shared[source.Topic] = n
	return n, nil
}
