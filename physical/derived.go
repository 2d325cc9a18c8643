package physical

import (
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// computedTables lowers the tables a join's sides compute themselves
// (planner.Computed: derived tables that aggregate, a subquery's set):
// each one's plan, in sub-topologies of its own (names ending in the
// table's suffix, planner.Computed.Names), ends in a sink to the
// internal topic <appid>-<table>-table, keyed by the stand-in source's
// key columns, with its partition count. It returns the join reading
// those topics as source tables.
//
// The plans and the join's inputs share the source nodes of the topics
// they read (a topic feeds one sub-topology): the caller resets
// g.shared once the join is lowered (shared reports whether it should).
func computedTables(g *Graph, j *planner.Join) (_ *planner.Join, shared bool, err error) {
	c := *j
	for _, side := range []*planner.Node{&c.Left, &c.Right} {
		s, ok := (*side).(*planner.Scan)
		if !ok || s.Computed == nil || !s.OfTable() {
			continue // (a stream: computedStreams)
		}
		if g.shared == nil {
			g.shared, shared = map[string]*Node{}, true
		}
		src := *s.Source
		table, sink, suffix := s.Computed.Names(src.Name)
		last, err := lowerAt(g, g.t.AppID, s.Computed.Plan, types.FormatJSON, types.FormatOptions{}, suffix)
		if err != nil {
			return nil, shared, err
		}
		src.Topic, src.Partitioner = g.t.AppID+"-"+table+"-table", types.Murmur2
		g.Add("SINK-"+sink, &Sink{Topic: src.Topic, KeyFormat: src.KeyFormat, ValueFormat: src.ValueFormat,
			KeyOptions: src.KeyOptions, ValueOptions: src.ValueOptions, Out: src.Schema, Partitioner: types.Murmur2,
			Internal: true, Partitions: src.Partitions}, last)
		*side = planner.NewScan(&src)
	}
	return &c, shared, nil
}

// computedStreams lowers the streams a stream–stream join's sides
// compute themselves (planner.Computed of a stream: a windowed
// aggregation's final rows, sql/bind_join_final.go), as a side or under
// its repartition: each one's plan, in sub-topologies of its own (names
// ending in the suffix of planner.Computed.Names), ends in a sink to the
// internal topic <appid>-<table>-stream (not compacted, records without
// keys, Source.Partitions partitions), which the join's side reads as a
// stream. Until done is called the topology's sources are shared: the
// join's other side may read a topic the plan reads.
func computedStreams(g *Graph, j *planner.Join) (_ *planner.Join, done func(), _ error) {
	done = func() {}
	var sides []int
	for i, n := range []planner.Node{j.Left, j.Right} {
		if s := sideScan(n); s != nil && s.Computed != nil && !s.OfTable() {
			sides = append(sides, i)
		}
	}
	if len(sides) == 0 {
		return j, done, nil
	}
	outer := g.shared
	if g.shared == nil {
		g.shared = map[string]*Node{}
	}
	done = func() { g.shared = outer }
	c := *j
	for _, i := range sides {
		side := &c.Left
		if i == 1 {
			side = &c.Right
		}
		s := sideScan(*side)
		src := *s.Source
		table, sink, suffix := s.Computed.Names(src.Name)
		last, err := lowerAt(g, g.t.AppID, s.Computed.Plan, types.FormatJSON, types.FormatOptions{}, suffix)
		if err != nil {
			done()
			return nil, func() {}, err
		}
		src.Topic, src.Partitioner = g.t.AppID+"-"+table+"-stream", types.Murmur2
		g.Add("SINK-"+sink, &Sink{Topic: src.Topic, KeyFormat: src.KeyFormat, ValueFormat: src.ValueFormat,
			Out: src.Schema, Internal: true, Append: true, Partitions: src.Partitions, Partitioner: types.Murmur2}, last)
		scan := planner.NewScan(&src)
		if rk, ok := (*side).(*planner.Rekey); ok {
			r := *rk
			r.Input = scan
			*side = &r
		} else {
			*side = scan
		}
	}
	return &c, done, nil
}
