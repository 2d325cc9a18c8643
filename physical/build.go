package physical

import (
	"fmt"

	"github.com/sqlstreams/sqlstreams/expr"
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
func Build(appID string, sink *planner.Sink, opts ...BuildOption) (*Topology, error) {
	g := NewGraph(appID)
	for _, o := range opts {
		o(g)
	}
	t := sink.Target
	last, err := lower(g, appID, sink.Input, t.KeyFormat, t.KeyOptions)
	if err != nil {
		return nil, err
	}
	last = g.Add("SINK-"+t.Name, &Sink{
		Topic:           t.Topic,
		KeyFormat:       t.KeyFormat,
		ValueFormat:     t.ValueFormat,
		KeyOptions:      t.KeyOptions,
		ValueOptions:    t.ValueOptions,
		Out:             t.Schema,
		TimestampColumn: t.TimestampColumn,
		TimestampFormat: t.TimestampFormat,
		WindowType:      t.WindowType,
		WindowSizeMs:    t.WindowSizeMs,
		Partitioner:     sinkPartitioner(t.Partitioner),
	}, last)
	if len(t.Schema.KeyIndexes()) == 0 && globalAggregate(sink.Input) {
		last.Op.(*Sink).SinglePartition = true
	}
	topo := g.Topology()
	topo.Dialect = string(sink.Dialect)
	return topo, nil
}

// BuildOption changes how Build plans a query.
type BuildOption func(*Graph)

// WideRepartitions makes repartitions write every column of their rows
// (Repartition.Columns nil), as plans made before they wrote only what
// the next sub-topology reads: for commands recorded before plans, whose
// repartition topics and stores hold such rows. It also keeps Top-N
// stores' rows in JSON, whole (TopN.Binary false), as such commands'
// stores hold them.
func WideRepartitions(g *Graph) { g.wide = true }

// PlainForeignKeyJoins plans foreign-key joins as before their
// subscriptions were ordered by a filter's column and unchanged right
// rows dropped (ForeignKeyJoin.Index, ForeignKeySubscriptions.
// EmitOnChange): for commands recorded before plans, whose subscription
// stores and registration topics hold version 0 records.
func PlainForeignKeyJoins(g *Graph) { g.plainFK = true }

// sinkPartitioner is how a query writes a target declared with p: by
// crc32 into a topic declared so, else by murmur2.
func sinkPartitioner(p types.Partitioner) types.Partitioner {
	if p == types.CRC32 {
		return p
	}
	return types.Murmur2
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
	t.Limit, t.Dialect = q.Limit, string(q.Dialect)
	return t, nil
}

// BuildTransient turns a push query that needs state — an aggregation,
// a join — into a topology of its own under appID, as ksqlDB runs a
// transient query: its stores, changelogs and repartition topics are
// named as a persistent query's, and its last node writes nowhere (its
// rows go to the client that asked, exec.Config.Emit). A GROUP BY's key
// is encoded as JSON in its store and repartition topic.
func BuildTransient(appID string, q *planner.Query) (*Topology, error) {
	g := NewGraph(appID)
	if _, err := lower(g, appID, q.Root, types.FormatJSON, types.FormatOptions{}); err != nil {
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
	return lowerAt(g, appID, root, keyFormat, keyOptions, "")
}

// lowerAt is lower for the aggregation whose node, store and topic names
// end in suffix: "" for the last aggregation of a query (the names
// running queries depend on), "-1", "-2", … for the aggregations below
// it (nested.go).
func lowerAt(g *Graph, appID string, root planner.Node, keyFormat string, keyOptions types.FormatOptions, suffix string) (*Node, error) {
	var above []planner.Node
	var agg *planner.Aggregate
	for n := root; n != nil; {
		if a, ok := n.(*planner.Aggregate); ok {
			agg = a
			break
		}
		if t, ok := n.(*planner.TopN); ok {
			if planner.FindTopN(t.Input) != nil {
				return nil, fmt.Errorf("a Top-N over another Top-N is not supported yet")
			}
			// Below an aggregation (suffix "-1", …), the aggregation
			// reads its changes as a table's. Its names are a Top-N's
			// own: a query has one.
			return lowerTopN(g, appID, above, t) // topn.go
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
	if agg.Global {
		// Its constant key is internal (the result has no key columns,
		// its key format NONE): JSON in its store and repartition topic.
		keyFormat, keyOptions = types.FormatJSON, types.FormatOptions{}
	}
	// Above the Aggregate: HAVING becomes part of it (a failing group is
	// deleted from the result table), then the projections.
	pa := &Aggregate{GroupBy: agg.GroupBy, Aggs: agg.Aggs, Out: agg.Schema(), FromTable: agg.FromTable,
		Changes: agg.Changes, DropEmpty: agg.DropEmpty, Distinct: agg.Distinct, Store: &Store{
			Name:        "AGGREGATE" + suffix,
			Kind:        KeyValue,
			Changelog:   appID + "-AGGREGATE" + suffix + "-changelog",
			KeyFormat:   keyFormat,
			ValueFormat: "AGGREGATE",
			KeyOptions:  keyOptions,
			Schema:      agg.Schema(),
		}}
	if idx := agg.KeepsDistinctValues(); len(idx) > 0 {
		pa.DistinctAggs = idx
		pa.DistinctStore = &Store{
			Name:        "AGGREGATE" + suffix + "-DISTINCT",
			Kind:        KeyValue,
			Changelog:   appID + "-AGGREGATE" + suffix + "-DISTINCT-changelog",
			KeyFormat:   keyFormat,
			ValueFormat: DistinctValuesFormat,
			KeyOptions:  keyOptions,
		}
	}
	if w := agg.Window; w != nil {
		pa.Window, pa.EmitFinal, pa.FinalOnClose = w, agg.EmitFinal, agg.FinalOnClose
		pa.Store.Kind = WindowStore
		if w.Type == types.Session {
			pa.Store.Kind = SessionStore
		}
		pa.Store.RetentionMs = w.RetentionMs
		if pa.DistinctStore != nil {
			// Entries per group, window and value, kept (and expired)
			// as the window store keeps its windows
			// (planner.Aggregate.KeepsDistinctValues). Of sessions the
			// same keys by the session's start, without retention: a
			// session has no bound on its length, so its changelog is
			// compacted only, its entries deleted by tombstones as the
			// sessions merge and expire (exec/aggregate_distinct.go).
			pa.DistinctStore.Kind, pa.DistinctStore.RetentionMs = WindowStore, w.RetentionMs
			if w.Type == types.Session {
				pa.DistinctStore.RetentionMs = 0
			}
		}
	} else if agg.EmitFinal {
		return nil, fmt.Errorf("EMIT FINAL is only supported for windowed aggregations")
	}
	// A filter right above the aggregation is its HAVING; the others
	// (a WHERE over an aggregating derived table) and the projections
	// follow it, in order.
	var post []planner.Node
	for i := len(above) - 1; i >= 0; i-- {
		switch n := above[i].(type) {
		case *planner.Filter:
			if pa.Having == nil && len(post) == 0 {
				pa.Having = n.Predicate
				continue
			}
			if pa.Having != nil && len(post) == 0 {
				return nil, fmt.Errorf("two HAVING filters")
			}
			post = append(post, n)
		case *planner.Project:
			post = append(post, n)
		default:
			return nil, fmt.Errorf("plan node %T above an aggregate is not supported yet", n)
		}
	}
	// Below the Aggregate: a plain chain (or, below an aggregation of an
	// aggregation, the inner one's nodes), then (unless the rows are
	// already partitioned by the group key) the repartition topic and
	// the source that reads it back.
	var in *Node
	var err error
	if inner, _ := innerAggregate(agg.Input); inner != nil || planner.FindTopN(agg.Input) != nil {
		// An aggregation's or a Top-N's changes (lowerTopN), as a
		// table's.
		in, err = lowerInner(g, appID, agg.Input, suffix)
	} else {
		in, err = chain(g, agg.Input, agg.FromTable && agg.NeedsRepartition())
	}
	if err != nil {
		return nil, err
	}
	if agg.NeedsRepartition() {
		schema := agg.Input.Schema()
		if schema.Index(types.RowTime) < 0 {
			// A join's rows: each side's pseudo columns are values here
			// (the repartition carries them), and the rows read back get
			// pseudo columns of their own after them.
			cols := make([]types.Column, len(schema.Columns))
			copy(cols, schema.Columns)
			for i := range cols {
				cols[i].Pseudo = false
			}
			schema = types.Schema{Columns: cols}
		}
		topic := appID + "-GROUPBY" + suffix + "-repartition"
		g.Add("REPARTITION-GROUPBY"+suffix, &Repartition{Topic: topic, KeyExprs: agg.GroupBy,
			KeySchema: types.Schema{Columns: agg.Schema().Columns[:len(agg.GroupBy)]}, KeyFormat: keyFormat, KeyOptions: keyOptions, In: schema}, in)
		// The next sub-topology reads every column from the value, in the
		// same layout, so the aggregate's expressions apply unchanged.
		cols := make([]types.Column, len(schema.Columns))
		copy(cols, schema.Columns)
		for i := range cols {
			cols[i].Key = false
		}
		if schema.Index(types.RowTime) < 0 {
			cols = append(cols, types.PseudoColumns...)
		}
		in = g.Add("SOURCE-GROUPBY"+suffix+"-repartition", &Source{Topic: topic, KeyFormat: types.FormatNone, ValueFormat: types.FormatJSON,
			Out: types.Schema{Columns: cols}, Repartitioned: agg.FromTable})
	}
	last := g.Add("AGGREGATE"+suffix, pa, in)
	for i, n := range post {
		switch n := n.(type) {
		case *planner.Project:
			last = g.Add(fmt.Sprintf("PROJECT%s-%04d", suffix, i+2), &Project{Exprs: n.Exprs, Out: n.Schema()}, last)
		case *planner.Filter:
			last = g.Add(fmt.Sprintf("FILTER%s-%04d", suffix, i+2), &Filter{Predicate: n.Predicate, Out: n.Schema()}, last)
		}
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
		var err error
		if changes {
			source.Table = true
		}
		if last, err = g.addSource("SOURCE-"+base.Source.Name, source); err != nil {
			return nil, err
		}
		if changes && g.shared != nil && g.shared["changes:"+source.Topic] != nil {
			// Another branch of the UNION ALL reads this table's
			// changes: one store follows its topic.
			last = g.shared["changes:"+source.Topic]
		} else if changes {
			// A table's records become changes (old row → new row)
			// before anything else sees them.
			last = g.Add("TABLE-CHANGES", &TableChanges{Out: source.Out, Store: &Store{Name: "TABLE-INPUT", Kind: KeyValue,
				Changelog: source.Topic, SourceTopicChangelog: true, KeyFormat: source.KeyFormat, ValueFormat: source.ValueFormat,
				KeyOptions: source.KeyOptions, ValueOptions: source.ValueOptions, Schema: source.Out}}, last)
			if g.shared != nil {
				g.shared["changes:"+source.Topic] = last
			}
		}
	case *planner.Union:
		var err error
		if last, err = union(g, base, changes); err != nil {
			return nil, err
		}
	case *planner.Join:
		// The tables the join computes (a scalar subquery over the
		// outer stream itself: the aggregation and the join's side
		// share its source node).
		base, shared, err := computedTables(g, base)
		if shared {
			defer func() { g.shared = nil }()
		}
		if err != nil {
			return nil, err
		}
		switch {
		case base.ForeignKey:
			// The nodes after the join, nearest first.
			var after []planner.Node
			for i := len(nodes) - 2; i >= 0; i-- {
				after = append(after, nodes[i])
			}
			last, err = foreignKeyJoin(g, base, after)
		case base.Tables:
			// Its rows are changes already.
			last, err = tableTableJoin(g, base)
		case base.Window != nil && !changes:
			last, err = streamStreamJoin(g, base)
		case changes:
			return nil, fmt.Errorf("a join's changes are not supported yet")
		default:
			last, err = streamTableJoin(g, base)
		}
		if err != nil {
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
		Partitioner:     src.Partitioner,
		Declared:        src.Name,
	}
}

// readRepartition makes source, a scan's, read a topic the query wrote
// (a table repartitioned by murmur2) instead of the source's topic.
func readRepartition(source *Source, topic string) {
	source.Topic, source.Partitioner, source.Declared = topic, types.Murmur2, ""
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
	src := tscan.Source
	var left *Node
	var err error
	if j.Repartition {
		if left, err = joinRepartition(g, j, tscan); err != nil {
			return nil, err
		}
	} else if left, err = chain(g, j.Left, false); err != nil {
		return nil, err
	}
	source := scanSource(tscan)
	source.Table = true
	var in *Node
	if j.RepartitionTable {
		// The table's records, keyed again as the stream's are, read
		// back from a topic of the join's own.
		rights := []int{j.RightKey}
		if len(j.LeftKeys) > 1 {
			rights = j.RightKeys
		}
		readRepartition(source, tableRepartition(g, tscan, joinKeyLayout(j, tscan), rights, "JOIN-"+src.Name+"-TABLE"))
		in = g.Add("SOURCE-JOIN-"+src.Name+"-TABLE-repartition", source)
	} else {
		in = g.Add("SOURCE-"+src.Name, source)
	}
	store := &Store{
		Name:                 src.Name,
		Kind:                 KeyValue,
		Changelog:            source.Topic,
		SourceTopicChangelog: true,
		KeyFormat:            src.KeyFormat,
		ValueFormat:          src.ValueFormat,
		KeyOptions:           src.KeyOptions,
		ValueOptions:         src.ValueOptions,
		Schema:               tscan.Schema(),
	}
	if types.InfersColumns(src.KeyFormat) {
		// The table's rows are kept by key value: the stream's key
		// finds them whatever schema each side's key was written with.
		source.KeyByValue = true
		store.KeyFormat, store.KeyOptions = ByValueKey, types.FormatOptions{}
	}
	mat := g.Add("MATERIALIZE-"+src.Name, &Materialize{Out: tscan.Schema(), Store: store}, in)
	op := &StreamTableJoin{Left: j.Type == planner.LeftJoin, Table: src.Name, LeftKey: j.LeftKey, TableKey: j.RightKey,
		Store: store, Out: j.Schema()}
	if len(j.LeftKeys) > 1 {
		op.LeftKeys, op.TableKeys = j.LeftKeys, j.RightKeys
	}
	return g.Add("JOIN-"+src.Name, op, left, mat), nil
}

// joinRepartition adds the sub-topology that repartitions a join's
// stream by the join expression — its source, a REKEY-JOIN-<table> node
// computing the expression when it is not a plain column, and
// REPARTITION-JOIN-<table> writing <appid>-JOIN-<table>-repartition,
// keyed like the table (its key format, its partition count) so that
// the default partitioner sends a row to the partition of the table's
// row of its key — and returns the source that reads the topic back, in
// the join's sub-topology. These names are pinned by
// testdata/topologies.
func joinRepartition(g *Graph, j *planner.Join, tscan *planner.Scan) (*Node, error) {
	table := tscan.Source
	keys := []expr.Expr{j.LeftKey}
	if len(j.LeftKeys) > 1 {
		keys = j.LeftKeys
	}
	layout := joinKeyLayout(j, tscan)
	return repartitionSide(g, j.Left, keys, layout, "JOIN-"+table.Name, "JOIN-"+table.Name)
}

// joinKeyLayout is how a stream–table join's repartition topics key
// their rows: as the table's keys (its key columns, format and
// partitions). In a schema-registry format a stream's keys follow the
// latest schema of the table's subject; with the table repartitioned
// too (Join.RepartitionTable) both write the schema made from the key
// columns, so a key value has the same bytes on both topics.
func joinKeyLayout(j *planner.Join, tscan *planner.Scan) keyLayout {
	table := tscan.Source
	rights := []int{j.RightKey}
	if len(j.LeftKeys) > 1 {
		rights = j.RightKeys
	}
	layout := keyLayout{format: table.KeyFormat, options: table.KeyOptions, partitions: table.Partitions}
	if types.InfersColumns(table.KeyFormat) && !j.RepartitionTable {
		layout.latestOf = table.KeyOptions.Subject
	}
	if table.Partitioner == types.CRC32 && !j.RepartitionTable {
		// Toward a topic its producers partitioned by crc32.
		layout.partitioner = types.CRC32
	}
	rs := j.Right.Schema()
	for _, r := range rights {
		layout.columns = append(layout.columns, rs.Columns[r])
	}
	return layout
}

// tableRepartition adds the sub-topology that writes a join's table to
// <appid>-<name>-repartition, its key columns keys (positions in the
// table's rows) keyed by layout: the table's source (Raw) and
// REPARTITION-<name>. It returns the topic, which the join's
// sub-topology reads as the table. A stream–table join names it
// JOIN-<table>-TABLE (keyed as its stream's repartition keys rows,
// joinKeyLayout), a foreign-key join KTABLE-FK-JOIN-<right>-TABLE (keyed
// as the foreign keys). These names are pinned by testdata/topologies.
func tableRepartition(g *Graph, tscan *planner.Scan, layout keyLayout, keys []int, name string) string {
	src := tscan.Source
	topic := g.t.AppID + "-" + name + "-repartition"
	opts := layout.options
	if types.InfersColumns(layout.format) {
		opts.Subject = topic + "-key"
	}
	raw := g.Add("SOURCE-"+src.Name, &Source{Topic: src.Topic, KeyFormat: src.KeyFormat, ValueFormat: src.ValueFormat, Raw: true})
	g.Add("REPARTITION-"+name, &TableRepartition{Topic: topic, In: tscan.Schema(), TopicKeyFormat: src.KeyFormat, TopicKeyOptions: src.KeyOptions,
		KeyCols: keys, KeySchema: types.Schema{Columns: layout.columns}, KeyFormat: layout.format, KeyOptions: opts,
		Partitions: layout.partitions}, raw)
	return topic
}

// keyLayout is how a join's repartition topic keys its rows: the key
// column (its name and type), its format, and the topic's partitions.
type keyLayout struct {
	columns    []types.Column
	format     string
	options    types.FormatOptions
	partitions int32
	// latestOf is Repartition.KeyLatestOf: a table's subject.
	latestOf string
	// window is Repartition.WindowType: windowed rows' keys end in
	// their window (their WINDOWSTART and WINDOWEND are read back as
	// value columns).
	window types.WindowType
	// partitioner is Repartition.Partitioner: crc32 toward a topic
	// partitioned so.
	partitioner types.Partitioner
}

// repartitionSide adds the sub-topology that repartitions a join's side
// n (a Rekey by the join expression) by key (a column of its rows) — its
// source, REKEY-<name> computing the expression when it is not a plain
// column, and REPARTITION-<name> writing <appid>-<topic>-repartition
// keyed by layout — and returns SOURCE-<topic>-repartition, which reads
// the topic back in the join's sub-topology.
func repartitionSide(g *Graph, n planner.Node, keys []expr.Expr, layout keyLayout, name, topic string) (*Node, error) {
	rk, ok := n.(*planner.Rekey)
	if !ok || len(rk.Exprs) != len(keys) {
		return nil, fmt.Errorf("a repartitioned join's side must be rekeyed by the join expression")
	}
	in, err := chain(g, rk.Input, false)
	if err != nil {
		return nil, err
	}
	schema := rk.Schema()
	for i, e := range rk.Exprs {
		if c, ok := e.(*expr.Column); !ok || c.Index != rk.Keys[i] {
			in = g.Add("REKEY-"+name, &Rekey{Exprs: rk.Exprs, Keys: rk.Keys, Out: schema}, in)
			break
		}
	}
	joined := schema.Index(types.RowTime) < 0
	if joined {
		// An earlier join's rows: each side's pseudo columns are values
		// here, and the rows read back get pseudo columns of their own
		// after them (past the columns the join reads).
		cols := make([]types.Column, len(schema.Columns))
		copy(cols, schema.Columns)
		for i := range cols {
			cols[i].Pseudo = false
		}
		schema = types.Schema{Columns: cols}
	}
	full := g.t.AppID + "-" + topic + "-repartition"
	opts := layout.options
	if types.InfersColumns(layout.format) {
		// The key schema is registered under the topic's own subject,
		// as ksqlDB names it, never under a source's.
		opts.Subject = full + "-key"
	}
	g.Add("REPARTITION-"+name, &Repartition{Topic: full, KeyExprs: keys,
		KeySchema: types.Schema{Columns: layout.columns}, KeyFormat: layout.format, KeyOptions: opts, KeyLatestOf: layout.latestOf,
		In: schema, Partitions: layout.partitions, NullKeys: true, WindowType: layout.window, Partitioner: layout.partitioner}, in)
	// The join reads every column from the value, in the same layout:
	// windowed rows' window bounds too.
	cols := make([]types.Column, len(schema.Columns))
	copy(cols, schema.Columns)
	for i := range cols {
		cols[i].Key = false
		if layout.window != types.NoWindow {
			cols[i].Window = false
		}
	}
	if joined {
		cols = append(cols, types.PseudoColumns...)
	}
	return g.Add("SOURCE-"+topic+"-repartition", &Source{Topic: full, KeyFormat: types.FormatNone, ValueFormat: types.FormatJSON,
		Out: types.Schema{Columns: cols}, Partitioner: layout.partitioner}), nil
}

// tableTableJoin adds a join of two tables on their primary keys: each
// table's source, its records turned into changes by TABLE-CHANGES-<table>
// over a store of the table (its topic as the changelog, so no internal
// topic), and JOIN-<right> reading both changes. Both topics are in one
// sub-topology: task p holds partition p of each.
//
// A left that is an earlier join's rows (a RIGHT or FULL join after a
// table join) is that join's sub-topology, whose rows the join keeps in
// KTABLE-JOIN-LEFT-<right> (its own changelog); the right table's
// source joins that sub-topology.
func tableTableJoin(g *Graph, j *planner.Join) (*Node, error) {
	var changes [2]*Node
	var stores [2]*Store
	leftName := ""
	if _, ok := j.Left.(*planner.Scan); !ok {
		var err error
		if changes[0], err = chain(g, j.Left, false); err != nil {
			return nil, err
		}
		ls := planner.Sources(j.Left)[0]
		name := "KTABLE-JOIN-LEFT-" + j.Right.(*planner.Scan).Source.Name
		stores[0] = &Store{Name: name, Kind: KeyValue, Changelog: g.t.AppID + "-" + name + "-changelog", KeyFormat: ls.KeyFormat,
			KeyOptions: ls.KeyOptions, ValueFormat: "JOIN-ROWS", Schema: j.Left.Schema()}
		leftName = ls.Name
	}
	for i, n := range []planner.Node{j.Left, j.Right} {
		if changes[i] != nil {
			continue
		}
		scan, ok := n.(*planner.Scan)
		if !ok {
			return nil, fmt.Errorf("a table join's sides must be tables")
		}
		src := scan.Source
		source := scanSource(scan)
		source.Table = true
		var in *Node
		if i == 0 && j.RepartitionLeftTable || i == 1 && j.RepartitionTable {
			// A table whose topic is not partitioned as the other's
			// (PARTITIONER): its records, keyed as they are, written to
			// a topic of the join's own by murmur2 and read back.
			keys := src.Schema.KeyIndexes()
			layout := keyLayout{format: src.KeyFormat, options: src.KeyOptions, partitions: src.Partitions}
			for _, k := range keys {
				layout.columns = append(layout.columns, scan.Schema().Columns[k])
			}
			name := "KTABLE-JOIN-" + src.Name + "-TABLE"
			readRepartition(source, tableRepartition(g, scan, layout, keys, name))
			in = g.Add("SOURCE-"+name+"-repartition", source)
		} else {
			in = g.Add("SOURCE-"+src.Name, source)
		}
		stores[i] = &Store{Name: src.Name, Kind: KeyValue, Changelog: source.Topic, SourceTopicChangelog: true,
			KeyFormat: src.KeyFormat, ValueFormat: src.ValueFormat, KeyOptions: src.KeyOptions, ValueOptions: src.ValueOptions,
			Schema: scan.Schema()}
		changes[i] = g.Add("TABLE-CHANGES-"+src.Name, &TableChanges{Out: source.Out, Store: stores[i]}, in)
	}
	lk := j.LeftKey.(*expr.Column).Index
	var lks []int
	for _, k := range j.LeftKeys {
		lks = append(lks, k.(*expr.Column).Index)
	}
	if leftName == "" {
		leftName = j.Left.(*planner.Scan).Source.Name
	}
	return g.Add("JOIN-"+j.Right.(*planner.Scan).Source.Name, &TableTableJoin{Type: j.Type,
		Left: leftName, Right: j.Right.(*planner.Scan).Source.Name, LeftRows: stores[0].ValueFormat == "JOIN-ROWS",
		LeftKey: lk, RightKey: j.RightKey, LeftKeys: lks, RightKeys: j.RightKeys, LeftStore: stores[0], RightStore: stores[1], Out: j.Schema()}, changes[0], changes[1]), nil
}

// streamStreamJoin adds a join of two streams within a window: both
// sources in one sub-topology (task p holds partition p of each) and
// JOIN-<right> over them, with its window stores JOIN-<right>-LEFT and
// JOIN-<right>-RIGHT and (outer joins with a grace period) the buffer of
// unmatched rows JOIN-<right>-OUTER, each with its changelog
// <appid>-<store>-changelog. These names are pinned by
// testdata/topologies.
func streamStreamJoin(g *Graph, j *planner.Join) (*Node, error) {
	j, done, err := computedStreams(g, j) // derived.go
	if err != nil {
		return nil, err
	}
	defer done()
	var ins [2]*Node
	var stores [2]*Store
	names := [2]string{"LEFT", "RIGHT"}
	scans := [2]*planner.Scan{sideScan(j.Left), sideScan(j.Right)}
	var rows *planner.Join // an earlier join's rows on the left, not repartitioned
	if scans[0] == nil {
		// An earlier join's rows (an N-way join): they are named after
		// the first source they come from.
		if !j.CompactRows {
			return nil, fmt.Errorf("a stream join of an earlier join's rows must keep compact rows")
		}
		left := j.Left
		if rk, ok := left.(*planner.Rekey); ok && j.Repartition {
			left = rk.Input
		}
		if inner, ok := left.(*planner.Join); ok {
			scans[0] = planner.NewScan(planner.Sources(inner)[0])
			if !j.Repartition {
				rows = inner
			}
		}
	}
	if scans[0] == nil || scans[1] == nil {
		return nil, fmt.Errorf("a stream join's sides must be streams")
	}
	right := scans[1].Source.Name
	// Repartitioned sides are keyed like the side that is not (its
	// format and partitions), or both like the left (KAFKA for a
	// keyless one).
	rep := [2]bool{j.Repartition, j.RepartitionRight}
	keys := [2]expr.Expr{j.LeftKey, &expr.Column{Index: j.RightKey, Name: j.Right.Schema().Columns[j.RightKey].Name, T: j.LeftKey.Type()}}
	layout := keyLayout{columns: []types.Column{{Name: "K", Type: j.LeftKey.Type(), Key: true}}}
	by := scans[0].Source
	if rep[0] && !rep[1] {
		by = scans[1].Source
	}
	layout.format, layout.options, layout.partitions = by.KeyFormat, by.KeyOptions, by.Partitions
	if by.Partitioner == types.CRC32 && !(rep[0] && rep[1]) {
		layout.partitioner = types.CRC32 // toward a side its producers partitioned by crc32
	}
	if ks := by.Schema.KeyIndexes(); len(ks) == 1 && !(rep[0] && rep[1]) {
		layout.columns = []types.Column{by.Schema.Columns[ks[0]]} // encoded as that side's keys are
	}
	if layout.format == types.FormatNone {
		layout.format, layout.options = types.FormatKafka, types.FormatOptions{}
	}
	if rep[0] && rep[1] && types.InfersColumns(layout.format) {
		// Both sides are written with the schema made from the key
		// column, not with a source's registered one.
		layout.options.SchemaID, layout.options.ReaderSchemaID, layout.options.FullName = 0, 0, ""
	}
	if rep[0] && rep[1] {
		// Windowed sides (on schema-registry keys): both keyed by the
		// left's window, as ksqlDB takes the left's key format.
		layout.window = scans[0].Source.WindowType
	}
	for i, n := range []planner.Node{j.Left, j.Right} {
		scan := scans[i]
		name := "JOIN-" + right + "-" + names[i]
		var err error
		if rep[i] {
			ins[i], err = repartitionSide(g, n, []expr.Expr{keys[i]}, layout, name, name)
		} else if i == 0 && rows != nil {
			ins[i], err = chain(g, rows, false)
		} else {
			ins[i] = g.Add("SOURCE-"+scan.Source.Name, scanSource(scan))
		}
		if err != nil {
			return nil, err
		}
		stores[i] = &Store{Name: name, Kind: JoinWindowStore, Changelog: g.t.AppID + "-" + name + "-changelog",
			KeyFormat: "JOIN-WINDOW", ValueFormat: scan.Source.ValueFormat, Schema: n.Schema(), RetentionMs: j.Window.RetentionMs()}
		if rep[i] {
			stores[i].ValueFormat = types.FormatJSON
		}
		if j.CompactRows {
			stores[i].ValueFormat = JoinColumns
		}
		if j.CompactRows && j.StoreHeaders {
			stores[i].ValueFormat = JoinColumnsHeaders
		}
	}
	op := &StreamStreamJoin{Type: j.Type, Left: scans[0].Source.Name, Right: right,
		LeftKey: j.LeftKey.(*expr.Column).Index, RightKey: j.RightKey, Window: *j.Window,
		LeftStore: stores[0], RightStore: stores[1], CompactRows: j.CompactRows, StoreHeaders: j.CompactRows && j.StoreHeaders, Out: j.Schema(),
		KeyByValue: types.InfersColumns(layout.format) && rep[0] && rep[1], WindowType: layout.window}
	if rows != nil {
		op.LeftRows = joinRowsSource(rows)
	}
	if !j.Window.Legacy && j.Type != planner.InnerJoin {
		name := "JOIN-" + right + "-OUTER"
		op.OuterStore = &Store{Name: name, Kind: TimeOrderedBuffer, Changelog: g.t.AppID + "-" + name + "-changelog",
			KeyFormat: "JOIN-OUTER", ValueFormat: "RECORD", RetentionMs: j.Window.RetentionMs()}
		if j.CompactRows {
			op.OuterStore.ValueFormat = JoinColumns
		}
		if op.StoreHeaders {
			op.OuterStore.ValueFormat = JoinColumnsHeaders
		}
	}
	return g.Add("JOIN-"+right, op, ins[0], ins[1]), nil
}

// joinRowsSource describes an earlier stream–table join's rows as a
// stream–stream join's window store keeps them: keyed as the records
// they came from (the stream's, or the repartition topic's in the
// table's key format), every column a value (its sources' pseudo
// columns too), and pseudo columns of its own after them.
func joinRowsSource(rows *planner.Join) *Source {
	by := planner.Sources(rows)[0]
	if rows.Repartition {
		by = rows.Right.(*planner.Scan).Source
	}
	cols := append([]types.Column(nil), rows.Schema().Columns...)
	for i := range cols {
		cols[i].Pseudo, cols[i].Header = false, false
	}
	return &Source{KeyFormat: by.KeyFormat, KeyOptions: by.KeyOptions, ValueFormat: types.FormatJSON,
		Out: types.Schema{Columns: append(cols, types.PseudoColumns...)}}
}

// JoinColumns is the value format of stream–stream join stores that keep
// the columns a query reads of a side's rows, in JSON
// (StreamStreamJoin.CompactRows).
const JoinColumns = "JOIN-COLUMNS"

// JoinColumnsHeaders is JoinColumns with the sides' header columns too
// (StreamStreamJoin.StoreHeaders).
const JoinColumnsHeaders = "JOIN-COLUMNS-HEADERS"

// sideScan returns the scan a join's side reads: n, or the scan under a
// Rekey; nil for anything else.
func sideScan(n planner.Node) *planner.Scan {
	if rk, ok := n.(*planner.Rekey); ok {
		n = rk.Input
	}
	s, _ := n.(*planner.Scan)
	return s
}
