package physical

import (
	"fmt"

	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// AppID returns the application ID of a persistent query, as DESIGN.md
// fixes it: <service>_query_<QUERY_ID>.
func AppID(serviceID, queryID string) string { return serviceID + "_query_" + queryID }

// Build turns a persistent query's plan into a topology. A GROUP BY whose
// key is not the input's key gets two sub-topologies joined by a
// repartition topic, <appid>-GROUPBY-repartition; its state store's
// changelog is <appid>-AGGREGATE-changelog. These names are pinned by
// testdata/topologies: running queries depend on them.
func Build(appID string, sink *planner.Sink) (*Topology, error) {
	g := NewGraph(appID)
	t := sink.Target
	last, err := lower(g, appID, sink.Input, t.KeyFormat, t.KeyOptions)
	if err != nil {
		return nil, err
	}
	g.Add("SINK-"+t.Name, &Sink{
		Topic:           t.Topic,
		KeyFormat:       t.KeyFormat,
		ValueFormat:     t.ValueFormat,
		KeyOptions:      t.KeyOptions,
		ValueOptions:    t.ValueOptions,
		Out:             t.Schema,
		TimestampColumn: t.TimestampColumn,
		WindowType:      t.WindowType,
		WindowSizeMs:    t.WindowSizeMs,
	}, last)
	return g.Topology(), nil
}

// BuildPush turns a push (or pull) query into a topology without a sink:
// its last node's rows go to the client that asked.
func BuildPush(q *planner.Query) (*Topology, error) {
	for n := q.Root; n != nil; {
		if _, ok := n.(*planner.Join); ok {
			return nil, fmt.Errorf("push queries over joins are not supported yet: CREATE STREAM … AS SELECT the join, then query that stream")
		}
		ch := n.Children()
		if len(ch) != 1 {
			break
		}
		n = ch[0]
	}
	g := NewGraph("")
	if _, err := chain(g, q.Root, false); err != nil {
		return nil, err
	}
	t := g.Topology()
	t.Limit = q.Limit
	return t, nil
}

// BuildTable returns the topology that materializes a source table: its
// topic into a store of the latest value per key. The source topic serves
// as the store's changelog, so no internal topic is created.
func BuildTable(appID string, table *planner.Scan) *Topology {
	src := table.Source
	g := NewGraph(appID)
	source := scanSource(table)
	source.Table = true
	in := g.Add("SOURCE-"+src.Name, source)
	g.Add("MATERIALIZE-"+src.Name, &Materialize{Out: table.Schema(), Store: &Store{
		Name:                 src.Name,
		Kind:                 KeyValue,
		Changelog:            src.Topic,
		SourceTopicChangelog: true,
		KeyFormat:            src.KeyFormat,
		ValueFormat:          src.ValueFormat,
		KeyOptions:           src.KeyOptions,
		ValueOptions:         src.ValueOptions,
		Schema:               table.Schema(),
	}}, in)
	return g.Topology()
}

// lower adds the nodes of a persistent query's plan (below its sink) and
// returns the last: one chain, or two sub-topologies around an Aggregate
// that needs its input repartitioned.
func lower(g *Graph, appID string, root planner.Node, keyFormat string, keyOptions types.FormatOptions) (*Node, error) {
	var above []planner.Node
	var agg *planner.Aggregate
	for n := root; n != nil; {
		if a, ok := n.(*planner.Aggregate); ok {
			agg = a
			break
		}
		above = append(above, n)
		ch := n.Children()
		if len(ch) != 1 {
			break
		}
		n = ch[0]
	}
	if agg == nil {
		// A table's projection and filter (CREATE TABLE … AS SELECT
		// without GROUP BY) read the table's changes, so that a deleted
		// or filtered-out row becomes a tombstone of its key.
		scan, ok := above[len(above)-1].(*planner.Scan)
		return chain(g, root, ok && scan.OfTable())
	}
	// Above the Aggregate: HAVING becomes part of it (a failing group is
	// deleted from the result table), then the projections.
	pa := &Aggregate{GroupBy: agg.GroupBy, Aggs: agg.Aggs, Out: agg.Schema(), FromTable: agg.FromTable, Store: &Store{
		Name:        "AGGREGATE",
		Kind:        KeyValue,
		Changelog:   appID + "-AGGREGATE-changelog",
		KeyFormat:   keyFormat,
		ValueFormat: "AGGREGATE",
		KeyOptions:  keyOptions,
		Schema:      agg.Schema(),
	}}
	if w := agg.Window; w != nil {
		pa.Window, pa.EmitFinal = w, agg.EmitFinal
		pa.Store.Kind = WindowStore
		if w.Type == types.Session {
			pa.Store.Kind = SessionStore
		}
		pa.Store.RetentionMs = w.RetentionMs
	} else if agg.EmitFinal {
		return nil, fmt.Errorf("EMIT FINAL is only supported for windowed aggregations")
	}
	var projects []*planner.Project
	for i := len(above) - 1; i >= 0; i-- {
		switch n := above[i].(type) {
		case *planner.Filter:
			if pa.Having != nil {
				return nil, fmt.Errorf("two HAVING filters")
			}
			pa.Having = n.Predicate
		case *planner.Project:
			projects = append(projects, n)
		default:
			return nil, fmt.Errorf("plan node %T above an aggregate is not supported yet", n)
		}
	}
	// Below the Aggregate: a plain chain, then (unless the rows are
	// already partitioned by the group key) the repartition topic and
	// the source that reads it back.
	in, err := chain(g, agg.Input, agg.FromTable && agg.NeedsRepartition())
	if err != nil {
		return nil, err
	}
	if agg.NeedsRepartition() {
		schema := agg.Input.Schema()
		topic := appID + "-GROUPBY-repartition"
		g.Add("REPARTITION-GROUPBY", &Repartition{Topic: topic, KeyExprs: agg.GroupBy,
			KeySchema: types.Schema{Columns: agg.Schema().Columns[:len(agg.GroupBy)]}, KeyFormat: keyFormat, KeyOptions: keyOptions, In: schema}, in)
		// The next sub-topology reads every column from the value, in the
		// same layout, so the aggregate's expressions apply unchanged.
		cols := make([]types.Column, len(schema.Columns))
		copy(cols, schema.Columns)
		for i := range cols {
			cols[i].Key = false
		}
		in = g.Add("SOURCE-GROUPBY-repartition", &Source{Topic: topic, KeyFormat: types.FormatNone, ValueFormat: types.FormatJSON,
			Out: types.Schema{Columns: cols}, Repartitioned: agg.FromTable})
	}
	last := g.Add("AGGREGATE", pa, in)
	for i, p := range projects {
		last = g.Add(fmt.Sprintf("PROJECT-%04d", i+2), &Project{Exprs: p.Exprs, Out: p.Schema()}, last)
	}
	return last, nil
}

// chain adds a linear plan (a Scan or a Join, then filters, projections,
// PARTITION BY and table functions) and returns its last node. With
// changes, the scan is of a table whose records enter as changes
// (TableChanges).
func chain(g *Graph, n planner.Node, changes bool) (*Node, error) {
	var nodes []planner.Node
	for cur := n; ; {
		nodes = append(nodes, cur)
		ch := cur.Children()
		if len(ch) != 1 {
			break
		}
		cur = ch[0]
	}
	var last *Node
	switch base := nodes[len(nodes)-1].(type) {
	case *planner.Scan:
		source := scanSource(base)
		last = g.Add("SOURCE-"+base.Source.Name, source)
		if changes {
			// A table's records become changes (old row → new row)
			// before anything else sees them.
			source.Table = true
			last = g.Add("TABLE-CHANGES", &TableChanges{Out: source.Out, Store: &Store{Name: "TABLE-INPUT", Kind: KeyValue,
				Changelog: source.Topic, SourceTopicChangelog: true, KeyFormat: source.KeyFormat, ValueFormat: source.ValueFormat,
				KeyOptions: source.KeyOptions, ValueOptions: source.ValueOptions, Schema: source.Out}}, last)
		}
	case *planner.Join:
		if changes {
			return nil, fmt.Errorf("a join's changes are not supported yet")
		}
		var err error
		if last, err = streamTableJoin(g, base); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("plan does not start with a scan")
	}
	for i := len(nodes) - 2; i >= 0; i-- {
		name := fmt.Sprintf("%04d", len(nodes)-1-i)
		switch n := nodes[i].(type) {
		case *planner.Filter:
			last = g.Add("FILTER-"+name, &Filter{Predicate: n.Predicate, Out: n.Schema()}, last)
		case *planner.Project:
			last = g.Add("PROJECT-"+name, &Project{Exprs: n.Exprs, Out: n.Schema()}, last)
		case *planner.FlatMap:
			last = g.Add("FLATMAP-"+name, &FlatMap{Fns: n.Fns, Args: n.Args, Out: n.Schema()}, last)
		case *planner.Rekey:
			last = g.Add("REKEY-"+name, &Rekey{Exprs: n.Exprs, Keys: n.Keys, Out: n.Schema()}, last)
		default:
			return nil, fmt.Errorf("plan node %T is not supported yet", n)
		}
	}
	return last, nil
}

// scanSource is the source node that reads what scan reads.
func scanSource(scan *planner.Scan) *Source {
	src := scan.Source
	return &Source{
		Topic:           src.Topic,
		KeyFormat:       src.KeyFormat,
		ValueFormat:     src.ValueFormat,
		KeyOptions:      src.KeyOptions,
		ValueOptions:    src.ValueOptions,
		Out:             scan.Schema(),
		TimestampColumn: src.TimestampColumn,
		TimestampFormat: src.TimestampFormat,
		WindowType:      src.WindowType,
		WindowSizeMs:    src.WindowSizeMs,
	}
}

// streamTableJoin adds a stream–table join: the stream's source, the
// table's source materialized into a store (the table's topic is its
// changelog, as in BuildTable), and the JOIN-<table> node reading both,
// so that both topics are in one sub-topology and task p holds
// partition p of each. The inputs are co-partitioned (the binder
// checked it).
func streamTableJoin(g *Graph, j *planner.Join) (*Node, error) {
	tscan, ok := j.Right.(*planner.Scan)
	if !ok {
		return nil, fmt.Errorf("a join's right side must be a table")
	}
	left, err := chain(g, j.Left, false)
	if err != nil {
		return nil, err
	}
	src := tscan.Source
	source := scanSource(tscan)
	source.Table = true
	in := g.Add("SOURCE-"+src.Name, source)
	store := &Store{
		Name:                 src.Name,
		Kind:                 KeyValue,
		Changelog:            src.Topic,
		SourceTopicChangelog: true,
		KeyFormat:            src.KeyFormat,
		ValueFormat:          src.ValueFormat,
		KeyOptions:           src.KeyOptions,
		ValueOptions:         src.ValueOptions,
		Schema:               tscan.Schema(),
	}
	mat := g.Add("MATERIALIZE-"+src.Name, &Materialize{Out: tscan.Schema(), Store: store}, in)
	return g.Add("JOIN-"+src.Name, &StreamTableJoin{Left: j.Type == planner.LeftJoin, Table: src.Name, LeftKey: j.LeftKey, TableKey: j.RightKey,
		Store: store, Out: j.Schema()}, left, mat), nil
}
