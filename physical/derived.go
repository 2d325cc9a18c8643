package physical

import (
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// feedTables lowers the derived tables a join reads (planner.Scan.Feed):
// each one's plan, in sub-topologies of its own (names ending in
// -<table>), ends in a sink to the topic <appid>-DERIVED-<table>-table,
// keyed by the stand-in's key columns (JSON); the join reads that topic
// as a source table. Both sides' topics have the partition count of the
// widest source. It returns the join reading the topics.
func feedTables(g *Graph, j *planner.Join) (*planner.Join, error) {
	var scans [2]*planner.Scan
	var parts int32
	for i, n := range []planner.Node{j.Left, j.Right} {
		if s, ok := n.(*planner.Scan); ok && s.Feed != nil {
			scans[i] = s
			for _, src := range planner.Sources(s.Feed) {
				parts = max(parts, src.Partitions)
			}
		}
	}
	if scans[0] == nil && scans[1] == nil {
		return j, nil
	}
	c := *j
	// The sides share the source nodes of the topics both read: a
	// topic feeds one sub-topology.
	outer := g.shared
	if g.shared == nil {
		g.shared = map[string]*Node{}
	}
	defer func() { g.shared = outer }()
	for i, s := range scans {
		if s == nil {
			continue
		}
		name := s.Source.Name
		last, err := lowerAt(g, g.t.AppID, s.Feed, types.FormatJSON, types.FormatOptions{}, "-"+name)
		if err != nil {
			return nil, err
		}
		src := *s.Source
		src.Topic, src.Partitions = g.t.AppID+"-DERIVED-"+name+"-table", parts
		g.Add("SINK-DERIVED-"+name, &Sink{Topic: src.Topic, KeyFormat: src.KeyFormat, ValueFormat: src.ValueFormat,
			Out: src.Schema, Internal: true, Partitions: parts, Partitioner: types.Murmur2}, last)
		if i == 0 {
			c.Left = planner.NewScan(&src)
		} else {
			c.Right = planner.NewScan(&src)
		}
	}
	return &c, nil
}
