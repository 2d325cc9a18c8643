package physical

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// Topology is a query's physical form.
type Topology struct {
	// AppID is the query's application ID: its consumer group and the
	// prefix of its internal topics and transactional IDs. Empty for a
	// push query.
	AppID         string
	SubTopologies []*SubTopology
	// Limit ends a push query after this many rows; -1 for none.
	Limit int64
}

// SubTopology is a chain of processors fed by one source topic. Tasks are
// (sub-topology, partition) pairs.
type SubTopology struct {
	ID         int
	Source     *Source
	Processors []Processor
	// Sink is where rows go; nil for a push query, whose rows go to the
	// client that opened it.
	Sink *Sink
	// Materialize, when set, keeps the latest row per key in a state
	// store, for pull queries (a table's materialization).
	Materialize *Materialize
	// Repartition, when set, ends the sub-topology instead of Sink: rows
	// are re-keyed and written to an internal topic that a later
	// sub-topology reads.
	Repartition *Repartition
	// Diff, when set, keeps the latest row per key of a source table in a
	// store, so that each change enters the chain as the old row's
	// removal (marked undo) and the new row's addition.
	Diff *Store
}

// UndoColumn names the pseudo column that marks, after a table's
// repartition, the rows that take a removed row back out of a group. It
// travels as a record header of the same name.
const UndoColumn = "__UNDO"

// Repartition writes rows to an internal topic keyed by KeyExprs, so that
// all rows of one key meet in one partition. The value holds every
// non-pseudo column of Schema (JSON), so that the next sub-topology sees
// the same row layout.
type Repartition struct {
	Name     string
	Topic    string
	KeyExprs []expr.Expr
	// KeySchema lays out the key columns KeyExprs compute; KeyFormat
	// encodes them.
	KeySchema types.Schema
	KeyFormat string
	Schema    types.Schema
}

// Aggregate groups rows by GroupBy and keeps each group's aggregate
// state in Store (restored from its changelog). Each row updates its
// group and emits the group's new row (key columns, then aggregates) —
// or, when Having is set and false, a tombstone for the group's key.
type Aggregate struct {
	Name    string
	GroupBy []expr.Expr
	Aggs    []*planner.AggCall
	Having  expr.Expr // over Out's rows; nil for none
	Out     types.Schema
	Store   *Store
	// Undo is the input column that marks rows to take back out of their
	// group (a table's aggregation), or -1. A group's state then counts its
	// rows, and the group is deleted when the count drops to zero.
	Undo int
}

func (a *Aggregate) NodeName() string     { return a.Name }
func (a *Aggregate) Schema() types.Schema { return a.Out }
func (a *Aggregate) Describe() string {
	keys := make([]string, len(a.GroupBy))
	for i, g := range a.GroupBy {
		keys[i] = g.String()
	}
	aggs := make([]string, len(a.Aggs))
	for i, c := range a.Aggs {
		aggs[i] = c.String()
	}
	d := "Aggregate: GROUP BY " + strings.Join(keys, ", ") + " COMPUTE " + strings.Join(aggs, ", ")
	if a.Having != nil {
		d += " HAVING " + a.Having.String()
	}
	return d + " (store: " + a.Store.Name + ", changelog: " + a.Store.Changelog + ")"
}

// InternalTopic is a topic a topology creates for itself.
type InternalTopic struct {
	Name string
	// Compact marks changelogs (cleanup.policy=compact).
	Compact bool
}

// Materialize upserts each record into a state store keyed by the record
// key; a tombstone deletes. Store values are the record's value bytes
// behind an 8-byte big-endian timestamp (ROWTIME).
type Materialize struct {
	Name  string
	Store *Store
}

// Store is a state store of a topology.
type Store struct {
	// Name is the store's deterministic name, unique in its topology.
	Name string
	// Changelog is the topic the store is restored from. For a source
	// table it is the source topic itself (it is already a changelog);
	// SourceTopicChangelog says so.
	Changelog            string
	SourceTopicChangelog bool
	// KeyFormat and ValueFormat describe the stored key and value bytes,
	// with Schema laying out the row they decode into.
	KeyFormat, ValueFormat   string
	KeyOptions, ValueOptions types.FormatOptions
	Schema                   types.Schema
}

// Source reads a topic and decodes its records into rows laid out by
// Schema: the declared columns, then the pseudo columns.
type Source struct {
	Name                     string
	Topic                    string
	KeyFormat                string
	ValueFormat              string
	KeyOptions, ValueOptions types.FormatOptions
	Schema                   types.Schema
	// TimestampColumn names the column that holds the event time, or is
	// empty for the Kafka record timestamp; TimestampFormat parses it
	// when it is a STRING.
	TimestampColumn string
	TimestampFormat string
	// Read marks, indexed like Schema.Columns, the value columns the
	// sub-topology reads; nil for all. The decoder steps over the others
	// (see types.NewDecoderRead) and leaves them NULL.
	Read []bool
}

// Processor is one node between a source and a sink.
type Processor interface {
	// NodeName is the node's deterministic name.
	NodeName() string
	// Describe renders the node for EXPLAIN.
	Describe() string
	// Schema is the layout of the rows the node emits.
	Schema() types.Schema
}

var (
	_ Processor = (*Filter)(nil)
	_ Processor = (*Project)(nil)
	_ Processor = (*Rekey)(nil)
	_ Processor = (*FlatMap)(nil)
	_ Processor = (*Aggregate)(nil)
)

// FlatMap applies table functions: one output row per element of the
// longest result, the input row followed by one value per function.
type FlatMap struct {
	Name string
	Fns  []*expr.TableFunction
	Args [][]expr.Expr
	Out  types.Schema
}

func (f *FlatMap) NodeName() string     { return f.Name }
func (f *FlatMap) Schema() types.Schema { return f.Out }
func (f *FlatMap) Describe() string {
	parts := make([]string, len(f.Fns))
	for i, fn := range f.Fns {
		args := make([]string, len(f.Args[i]))
		for j, a := range f.Args[i] {
			args[j] = a.String()
		}
		parts[i] = fn.Name + "(" + strings.Join(args, ", ") + ")"
	}
	return "FlatMap: " + strings.Join(parts, ", ")
}

// Rekey (PARTITION BY) makes new key columns: its output row is its input
// row followed by one column per key expression that is not a plain
// column; Keys are the key columns' output positions.
type Rekey struct {
	Name  string
	Exprs []expr.Expr
	Keys  []int
	Out   types.Schema
}

func (r *Rekey) NodeName() string     { return r.Name }
func (r *Rekey) Schema() types.Schema { return r.Out }
func (r *Rekey) Describe() string {
	parts := make([]string, len(r.Exprs))
	for i, e := range r.Exprs {
		parts[i] = e.String()
	}
	return "Rekey: PARTITION BY " + strings.Join(parts, ", ")
}

// Filter passes rows for which Predicate is true.
type Filter struct {
	Name      string
	Predicate expr.Expr
	Out       types.Schema
}

func (f *Filter) NodeName() string     { return f.Name }
func (f *Filter) Describe() string     { return "Filter: " + f.Predicate.String() }
func (f *Filter) Schema() types.Schema { return f.Out }

// Project computes a new row from expressions over its input row.
type Project struct {
	Name  string
	Exprs []expr.Expr
	Out   types.Schema
}

func (p *Project) NodeName() string     { return p.Name }
func (p *Project) Schema() types.Schema { return p.Out }
func (p *Project) Describe() string {
	parts := make([]string, len(p.Exprs))
	for i, e := range p.Exprs {
		parts[i] = e.String() + " AS " + p.Out.Columns[i].Name
	}
	return "Project: " + strings.Join(parts, ", ")
}

// Sink encodes rows laid out by Schema and writes them to Topic: the key
// columns into the record key, the others into the value.
type Sink struct {
	Name                     string
	Topic                    string
	KeyFormat                string
	ValueFormat              string
	KeyOptions, ValueOptions types.FormatOptions
	Schema                   types.Schema
	// TimestampColumn names the output column whose value becomes the
	// record timestamp; empty keeps the input's ROWTIME.
	TimestampColumn string
}

// AppID returns the application ID of a persistent query, as DESIGN.md
// fixes it: <service>_query_<QUERY_ID>.
func AppID(serviceID, queryID string) string { return serviceID + "_query_" + queryID }

// Build turns a persistent query's plan into a topology. A GROUP BY whose
// key is not the input's key gets two sub-topologies joined by a
// repartition topic, <appid>-GROUPBY-repartition; its state store's
// changelog is <appid>-AGGREGATE-changelog.
func Build(appID string, sink *planner.Sink) (*Topology, error) {
	t := sink.Target
	subs, err := split(appID, sink.Input, t.KeyFormat, t.KeyOptions)
	if err != nil {
		return nil, err
	}
	st := subs[len(subs)-1]
	st.Sink = &Sink{
		Name:            "SINK-" + t.Name,
		Topic:           t.Topic,
		KeyFormat:       t.KeyFormat,
		ValueFormat:     t.ValueFormat,
		KeyOptions:      t.KeyOptions,
		ValueOptions:    t.ValueOptions,
		Schema:          t.Schema,
		TimestampColumn: t.TimestampColumn,
	}
	for _, st := range subs {
		st.Source.Read = readColumns(st)
	}
	return &Topology{AppID: appID, SubTopologies: subs, Limit: -1}, nil
}

// readColumns returns which source columns st reads (see Source.Read), or
// nil when it may read them all: when the row reaches a sink, store or
// repartition topic whole, or passes a node other than filters before the
// projection or aggregate that consumes it.
func readColumns(st *SubTopology) []bool {
	if st.Materialize != nil || st.Diff != nil || st.Repartition != nil && len(st.Processors) == 0 {
		return nil
	}
	read := make([]bool, st.Source.Schema.Len())
	if ts := st.Source.Schema.Index(st.Source.TimestampColumn); ts >= 0 {
		read[ts] = true
	}
	for _, p := range st.Processors {
		switch p := p.(type) {
		case *Filter:
			expr.MarkColumns(p.Predicate, read)
		case *Project:
			for _, e := range p.Exprs {
				expr.MarkColumns(e, read)
			}
			return read
		case *Aggregate:
			for _, g := range p.GroupBy {
				expr.MarkColumns(g, read)
			}
			for _, c := range p.Aggs {
				for _, e := range c.Args {
					expr.MarkColumns(e, read)
				}
			}
			if p.Undo >= 0 {
				read[p.Undo] = true
			}
			return read
		default:
			return nil
		}
	}
	return nil
}

// split lowers a plan into sub-topologies: one, or two around an
// Aggregate that needs its input repartitioned.
func split(appID string, root planner.Node, keyFormat string, keyOptions types.FormatOptions) ([]*SubTopology, error) {
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
		st, err := chain(root)
		if err != nil {
			return nil, err
		}
		return []*SubTopology{st}, nil
	}
	// Below the Aggregate: a plain chain.
	below, err := chain(agg.Input)
	if err != nil {
		return nil, err
	}
	store := &Store{
		Name:        "AGGREGATE",
		Changelog:   appID + "-AGGREGATE-changelog",
		KeyFormat:   keyFormat,
		ValueFormat: "AGGREGATE",
		KeyOptions:  keyOptions,
		Schema:      agg.Schema(),
	}
	pa := &Aggregate{Name: "AGGREGATE", GroupBy: agg.GroupBy, Aggs: agg.Aggs, Out: agg.Schema(), Store: store, Undo: -1}
	// Above it: HAVING becomes part of the aggregate (a failing group is
	// deleted from the result table), then the projection.
	post := &SubTopology{}
	for i := len(above) - 1; i >= 0; i-- {
		switch n := above[i].(type) {
		case *planner.Filter:
			if pa.Having != nil {
				return nil, fmt.Errorf("two HAVING filters")
			}
			pa.Having = n.Predicate
		case *planner.Project:
			post.Processors = append(post.Processors, &Project{Name: "PROJECT-" + fmt.Sprintf("%04d", len(post.Processors)+2), Exprs: n.Exprs, Out: n.Schema()})
		default:
			return nil, fmt.Errorf("plan node %T above an aggregate is not supported yet", n)
		}
	}
	post.Processors = append([]Processor{pa}, post.Processors...)
	if !agg.NeedsRepartition() {
		below.Processors = append(below.Processors, post.Processors...)
		return []*SubTopology{below}, nil
	}
	in := agg.Input.Schema()
	keySchema := types.Schema{Columns: agg.Schema().Columns[:len(agg.GroupBy)]}
	topic := appID + "-GROUPBY-repartition"
	below.Repartition = &Repartition{Name: "REPARTITION-GROUPBY", Topic: topic, KeyExprs: agg.GroupBy,
		KeySchema: keySchema, KeyFormat: keyFormat, Schema: in}
	// The next sub-topology reads every column from the value, in the
	// same layout, so the aggregate's expressions apply unchanged.
	cols := make([]types.Column, len(in.Columns))
	copy(cols, in.Columns)
	for i := range cols {
		cols[i].Key = false
	}
	if agg.FromTable {
		src := below.Source
		below.Diff = &Store{Name: "TABLE-INPUT", Changelog: src.Topic, SourceTopicChangelog: true,
			KeyFormat: src.KeyFormat, ValueFormat: src.ValueFormat, KeyOptions: src.KeyOptions, ValueOptions: src.ValueOptions, Schema: src.Schema}
		cols = append(cols, types.Column{Name: UndoColumn, Type: types.BooleanType, Pseudo: true})
		pa.Undo = len(cols) - 1
	}
	post.ID = 1
	post.Source = &Source{Name: "SOURCE-GROUPBY-repartition", Topic: topic, KeyFormat: types.FormatNone,
		ValueFormat: types.FormatJSON, Schema: types.Schema{Columns: cols}}
	return []*SubTopology{below, post}, nil
}

// InternalTopics returns the topics the topology needs created: its
// repartition topics and its stores' changelogs (source-table stores use
// their source topic).
func (t *Topology) InternalTopics() []InternalTopic {
	var out []InternalTopic
	for _, st := range t.SubTopologies {
		if r := st.Repartition; r != nil {
			out = append(out, InternalTopic{Name: r.Topic})
		}
		for _, p := range st.Processors {
			if a, ok := p.(*Aggregate); ok {
				out = append(out, InternalTopic{Name: a.Store.Changelog, Compact: true})
			}
		}
	}
	return out
}

// BuildPush turns a push query into a topology without a sink.
func BuildPush(q *planner.Query) (*Topology, error) {
	st, err := chain(q.Root)
	if err != nil {
		return nil, err
	}
	st.Source.Read = readColumns(st)
	return &Topology{SubTopologies: []*SubTopology{st}, Limit: q.Limit}, nil
}

// chain lowers a linear plan (Scan, then Filters and Projects) into one
// sub-topology.
func chain(n planner.Node) (*SubTopology, error) {
	var nodes []planner.Node
	for cur := n; cur != nil; {
		nodes = append(nodes, cur)
		ch := cur.Children()
		switch len(ch) {
		case 0:
			cur = nil
		case 1:
			cur = ch[0]
		default:
			return nil, fmt.Errorf("plans with more than one input are not supported yet")
		}
	}
	scan, ok := nodes[len(nodes)-1].(*planner.Scan)
	if !ok {
		return nil, fmt.Errorf("plan does not start with a scan")
	}
	st := &SubTopology{ID: 0, Source: scanSource(scan)}
	for i := len(nodes) - 2; i >= 0; i-- {
		name := fmt.Sprintf("%04d", len(st.Processors)+1)
		switch n := nodes[i].(type) {
		case *planner.Filter:
			st.Processors = append(st.Processors, &Filter{Name: "FILTER-" + name, Predicate: n.Predicate, Out: n.Schema()})
		case *planner.Project:
			st.Processors = append(st.Processors, &Project{Name: "PROJECT-" + name, Exprs: n.Exprs, Out: n.Schema()})
		case *planner.FlatMap:
			st.Processors = append(st.Processors, &FlatMap{Name: "FLATMAP-" + name, Fns: n.Fns, Args: n.Args, Out: n.Schema()})
		case *planner.Rekey:
			st.Processors = append(st.Processors, &Rekey{Name: "REKEY-" + name, Exprs: n.Exprs, Keys: n.Keys, Out: n.Schema()})
		default:
			return nil, fmt.Errorf("plan node %T is not supported yet", n)
		}
	}
	return st, nil
}

func tsNote(col string) string {
	if col == "" {
		return ""
	}
	return ", timestamp: " + col
}

// BuildTable returns the topology that materializes a source table: its
// topic into a store of the latest value per key. The source topic serves
// as the store's changelog, so no internal topic is created.
func BuildTable(appID string, table *planner.Scan) *Topology {
	src := table.Source
	source := scanSource(table)
	store := &Store{
		Name:                 src.Name,
		Changelog:            src.Topic,
		SourceTopicChangelog: true,
		KeyFormat:            src.KeyFormat,
		ValueFormat:          src.ValueFormat,
		KeyOptions:           src.KeyOptions,
		ValueOptions:         src.ValueOptions,
		Schema:               table.Schema(),
	}
	return &Topology{AppID: appID, Limit: -1, SubTopologies: []*SubTopology{{
		Source:      source,
		Materialize: &Materialize{Name: "MATERIALIZE-" + src.Name, Store: store},
	}}}
}

// Stores returns the topology's state stores.
func (t *Topology) Stores() []*Store {
	var out []*Store
	for _, st := range t.SubTopologies {
		if st.Materialize != nil {
			out = append(out, st.Materialize.Store)
		}
		for _, p := range st.Processors {
			if a, ok := p.(*Aggregate); ok {
				out = append(out, a.Store)
			}
		}
	}
	return out
}

// scanSource is the source node that reads what scan reads.
func scanSource(scan *planner.Scan) *Source {
	src := scan.Source
	return &Source{
		Name:            "SOURCE-" + src.Name,
		Topic:           src.Topic,
		KeyFormat:       src.KeyFormat,
		ValueFormat:     src.ValueFormat,
		KeyOptions:      src.KeyOptions,
		ValueOptions:    src.ValueOptions,
		Schema:          scan.Schema(),
		TimestampColumn: src.TimestampColumn,
		TimestampFormat: src.TimestampFormat,
	}
}

// SourceTopics returns the topics the topology consumes.
func (t *Topology) SourceTopics() []string {
	var out []string
	for _, st := range t.SubTopologies {
		out = append(out, st.Source.Topic)
	}
	return out
}

// String renders the topology for EXPLAIN, in a stable form.
func (t *Topology) String() string {
	var b strings.Builder
	for _, st := range t.SubTopologies {
		fmt.Fprintf(&b, "Sub-topology %d\n", st.ID)
		fmt.Fprintf(&b, "  %s (topic: %s, key: %s, value: %s%s)\n", st.Source.Name, st.Source.Topic, st.Source.KeyFormat, st.Source.ValueFormat, tsNote(st.Source.TimestampColumn))
		for _, p := range st.Processors {
			fmt.Fprintf(&b, "  --> %s  %s\n", p.NodeName(), p.Describe())
		}
		if s := st.Sink; s != nil {
			fmt.Fprintf(&b, "  --> %s (topic: %s, key: %s, value: %s%s)\n", s.Name, s.Topic, s.KeyFormat, s.ValueFormat, tsNote(s.TimestampColumn))
			fmt.Fprintf(&b, "      schema: %s\n", s.Schema)
		}
		if m := st.Materialize; m != nil {
			fmt.Fprintf(&b, "  --> %s (store: %s, changelog: %s)\n", m.Name, m.Store.Name, m.Store.Changelog)
		}
		if d := st.Diff; d != nil {
			fmt.Fprintf(&b, "  (changes as removal and addition, store: %s, changelog: %s)\n", d.Name, d.Changelog)
		}
		if r := st.Repartition; r != nil {
			keys := make([]string, len(r.KeyExprs))
			for i, k := range r.KeyExprs {
				keys[i] = k.String()
			}
			fmt.Fprintf(&b, "  --> %s (topic: %s, key: %s BY %s, value: JSON)\n", r.Name, r.Topic, r.KeyFormat, strings.Join(keys, ", "))
		}
	}
	return b.String()
}

// Fingerprint identifies the topology's shape: two topologies with the
// same fingerprint can take over each other's state and offsets.
func (t *Topology) Fingerprint() string {
	sum := sha256.Sum256([]byte(t.String()))
	return hex.EncodeToString(sum[:8])
}

// ShapeFingerprint identifies what a running query's committed state
// depends on: its input topics, sub-topologies, internal topics and stores,
// and where it writes. Two versions of a query with the same shape can
// take over each other's offsets and state, so CREATE OR REPLACE may swap
// one for the other in place; filters and projections may differ.
func (t *Topology) ShapeFingerprint() string {
	var b strings.Builder
	for _, st := range t.SubTopologies {
		fmt.Fprintf(&b, "sub %d source %s key %s value %s\n", st.ID, st.Source.Topic, st.Source.KeyFormat, st.Source.ValueFormat)
		for _, p := range st.Processors {
			if _, ok := p.(*Rekey); ok {
				fmt.Fprintf(&b, "rekey\n")
			}
		}
		if s := st.Sink; s != nil {
			fmt.Fprintf(&b, "sink %s key %s value %s\n", s.Topic, s.KeyFormat, s.ValueFormat)
		}
		if m := st.Materialize; m != nil {
			fmt.Fprintf(&b, "store %s changelog %s\n", m.Store.Name, m.Store.Changelog)
		}
		if d := st.Diff; d != nil {
			fmt.Fprintf(&b, "diff %s\n", d.Changelog)
		}
		if r := st.Repartition; r != nil {
			fmt.Fprintf(&b, "repartition %s key %s\n", r.Topic, r.KeySchema)
		}
		for _, p := range st.Processors {
			if a, ok := p.(*Aggregate); ok {
				fmt.Fprintf(&b, "aggregate %s key %s store %s\n", a.Out, a.Store.KeyFormat, a.Store.Changelog)
			}
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}
