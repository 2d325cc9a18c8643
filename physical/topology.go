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

// Build turns a persistent query's plan into a topology.
func Build(appID string, sink *planner.Sink) (*Topology, error) {
	st, err := chain(sink.Input)
	if err != nil {
		return nil, err
	}
	t := sink.Target
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
	return &Topology{AppID: appID, SubTopologies: []*SubTopology{st}, Limit: -1}, nil
}

// BuildPush turns a push query into a topology without a sink.
func BuildPush(q *planner.Query) (*Topology, error) {
	st, err := chain(q.Root)
	if err != nil {
		return nil, err
	}
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
	src := scan.Source
	st := &SubTopology{ID: 0, Source: &Source{
		Name:            "SOURCE-" + src.Name,
		Topic:           src.Topic,
		KeyFormat:       src.KeyFormat,
		ValueFormat:     src.ValueFormat,
		KeyOptions:      src.KeyOptions,
		ValueOptions:    src.ValueOptions,
		Schema:          scan.Schema(),
		TimestampColumn: src.TimestampColumn,
		TimestampFormat: src.TimestampFormat,
	}}
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
	source := &Source{
		Name:            "SOURCE-" + src.Name,
		Topic:           src.Topic,
		KeyFormat:       src.KeyFormat,
		ValueFormat:     src.ValueFormat,
		KeyOptions:      src.KeyOptions,
		ValueOptions:    src.ValueOptions,
		Schema:          table.Schema(),
		TimestampColumn: src.TimestampColumn,
		TimestampFormat: src.TimestampFormat,
	}
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
	}
	return out
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
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}
