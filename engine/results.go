package engine

// This file holds the typed results of SHOW, DESCRIBE and EXPLAIN. The
// engine builds one value per statement and returns it in Result.Value;
// its Table method renders it as the rows pgwire and the shell print, so
// every server renders the same data: pgwire as a table, REST as ksqlDB's
// entities, the console as JSON.

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// Tabular is a typed result that renders as a table of strings.
type Tabular interface {
	// Table returns the result's columns and rows.
	Table() ([]types.Column, [][]string)
}

var (
	_ Tabular = (*SourceList)(nil)
	_ Tabular = (*QueryList)(nil)
	_ Tabular = (*TopicList)(nil)
	_ Tabular = (*PropertyList)(nil)
	_ Tabular = (*FunctionList)(nil)
	_ Tabular = (*FunctionDescription)(nil)
	_ Tabular = (*SourceDescription)(nil)
	_ Tabular = (*Plan)(nil)
)

// QueryStatus is a persistent query's runtime status.
type QueryStatus struct {
	// State is RUNNING, FAILED or PAUSED (see exec.StateRunning …).
	State string `json:"state"`
	// Err is the last error, when State is FAILED.
	Err string `json:"error,omitempty"`
	// Since is when the query entered State.
	Since time.Time `json:"since"`
	// LastErr is the latest failure (kept after the query recovered) and
	// LastErrAt when it came; "" when none.
	LastErr   string    `json:"lastError,omitempty"`
	LastErrAt time.Time `json:"lastErrorAt,omitzero"`
	// Counters since the query started in this process.
	RecordsIn   int64 `json:"recordsIn"`
	RecordsOut  int64 `json:"recordsOut"`
	BadRecords  int64 `json:"badRecords"`
	Commits     int64 `json:"commits"`
	Aborts      int64 `json:"aborts"`
	Restored    int64 `json:"restored"`
	Restarts    int64 `json:"restarts"`
	LateRecords int64 `json:"lateRecords"`
	// Partitioning counts, per source the query reads that is declared
	// murmur2, the keyed records it checked and those outside their
	// key's murmur2 partition.
	Partitioning []exec.PartitionStats `json:"partitioning,omitempty"`
}

func statusOf(s exec.Status) QueryStatus {
	return QueryStatus{
		State: s.State, Err: s.Err, Since: s.Since, LastErr: s.LastErr, LastErrAt: s.LastErrAt,
		RecordsIn: s.RecordsIn, RecordsOut: s.RecordsOut, BadRecords: s.BadRecords,
		Commits: s.Commits, Aborts: s.Aborts, Restored: s.Restored, Restarts: s.Restarts,
		LateRecords: s.LateRecords, Partitioning: s.Partitioning,
	}
}

// SourceInfo is one stream or table as SHOW STREAMS|TABLES lists it.
type SourceInfo struct {
	Name        string       `json:"name"`
	Kind        catalog.Kind `json:"-"`
	Topic       string       `json:"topic"`
	KeyFormat   string       `json:"keyFormat"`
	ValueFormat string       `json:"valueFormat"`
	Windowed    bool         `json:"windowed"`
	Partitions  int32        `json:"partitions"`
}

func sourceInfo(src *catalog.Source) SourceInfo {
	return SourceInfo{
		Name: src.Name, Kind: src.Kind, Topic: src.Topic, KeyFormat: src.KeyFormat,
		ValueFormat: src.ValueFormat, Windowed: src.Windowed(), Partitions: src.Partitions,
	}
}

// SourceList is SHOW STREAMS or SHOW TABLES.
type SourceList struct {
	// Kind is catalog.Stream or catalog.Table.
	Kind catalog.Kind
	// Extended is set for SHOW … EXTENDED.
	Extended bool
	Sources  []SourceInfo
}

// Table implements Tabular.
func (l *SourceList) Table() ([]types.Column, [][]string) {
	cols := streamsCols
	if l.Kind == catalog.Table {
		cols = tablesCols
	}
	rows := make([][]string, len(l.Sources))
	for i, s := range l.Sources {
		rows[i] = []string{s.Name, s.Topic, s.KeyFormat, s.ValueFormat, strconv.FormatBool(s.Windowed)}
	}
	return cols, rows
}

// QueryInfo is one persistent query as SHOW QUERIES lists it.
type QueryInfo struct {
	ID        string   `json:"id"`
	Type      string   `json:"type"` // PERSISTENT
	Sink      string   `json:"sink"`
	SinkTopic string   `json:"sinkTopic"`
	Sources   []string `json:"sources"`
	SQL       string   `json:"sql"`
	// Status is the query's runtime status; nil when this server does
	// not run it (its state is then UNKNOWN).
	Status *QueryStatus `json:"status"`
}

// State is the query's state, UNKNOWN when this server does not run it.
func (q *QueryInfo) State() string {
	if q.Status == nil {
		return "UNKNOWN"
	}
	return q.Status.State
}

// QueryList is SHOW QUERIES.
type QueryList struct {
	Extended bool
	Queries  []QueryInfo
}

// Table implements Tabular.
func (l *QueryList) Table() ([]types.Column, [][]string) {
	rows := make([][]string, len(l.Queries))
	if l.Extended {
		// The state, since when, restarts and the latest failure.
		for i, q := range l.Queries {
			since, restarts, lastErr, in, out, bad := "", "", "", "", "", ""
			if st := q.Status; st != nil {
				since = st.Since.UTC().Format(time.RFC3339)
				restarts = strconv.FormatInt(st.Restarts, 10)
				if st.LastErr != "" {
					lastErr = st.LastErrAt.UTC().Format(time.RFC3339) + " " + st.LastErr
				}
				in, out, bad = strconv.FormatInt(st.RecordsIn, 10), strconv.FormatInt(st.RecordsOut, 10), strconv.FormatInt(st.BadRecords, 10)
			}
			rows[i] = []string{q.ID, q.Type, q.State(), since, restarts, lastErr, in, out, bad, q.Sink, q.SinkTopic, q.SQL}
		}
		return queriesExtCols, rows
	}
	for i, q := range l.Queries {
		status := q.State()
		if q.Status != nil && q.Status.Err != "" {
			status += ": " + q.Status.Err
		}
		rows[i] = []string{q.ID, q.Type, status, q.Sink, q.SinkTopic, q.SQL}
	}
	return queriesCols, rows
}

// TopicInfo is one Kafka topic as SHOW TOPICS lists it.
type TopicInfo struct {
	Name       string `json:"name"`
	Partitions int    `json:"partitions"`
}

// TopicList is SHOW TOPICS.
type TopicList struct {
	Topics []TopicInfo
}

// Table implements Tabular.
func (l *TopicList) Table() ([]types.Column, [][]string) {
	rows := make([][]string, len(l.Topics))
	for i, t := range l.Topics {
		rows[i] = []string{t.Name, strconv.Itoa(t.Partitions)}
	}
	return topicsCols, rows
}

// TypeInfo is one custom type as SHOW TYPES lists it.
type TypeInfo struct {
	Name   string `json:"name"`
	Schema string `json:"schema"`
}

// TypeList is SHOW TYPES: the custom types of CREATE TYPE.
type TypeList struct {
	Types []TypeInfo
}

// Table implements Tabular.
func (l *TypeList) Table() ([]types.Column, [][]string) {
	rows := make([][]string, len(l.Types))
	for i, t := range l.Types {
		rows[i] = []string{t.Name, t.Schema}
	}
	return typesCols, rows
}

// Property is one row of SHOW PROPERTIES.
type Property struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Source is "default", "session (SET)" or where a server setting
	// came from.
	Source string `json:"source"`
	// Overridden is set for a property SET in the session.
	Overridden bool `json:"overridden"`
}

// PropertyList is SHOW PROPERTIES.
type PropertyList struct {
	Properties []Property
}

// Table implements Tabular.
func (l *PropertyList) Table() ([]types.Column, [][]string) {
	rows := make([][]string, len(l.Properties))
	for i, p := range l.Properties {
		rows[i] = []string{p.Name, p.Value, p.Source}
	}
	return propertiesCols, rows
}

// FunctionInfo is one function as SHOW FUNCTIONS lists it.
type FunctionInfo struct {
	Name string `json:"name"`
	// Type is SCALAR or TABLE.
	Type        string `json:"type"`
	Description string `json:"description"`
}

// FunctionList is SHOW FUNCTIONS, sorted by name.
type FunctionList struct {
	Functions []FunctionInfo
}

// Table implements Tabular.
func (l *FunctionList) Table() ([]types.Column, [][]string) {
	rows := make([][]string, len(l.Functions))
	for i, f := range l.Functions {
		rows[i] = []string{f.Name, f.Type, f.Description}
	}
	return functionsCols, rows
}

// FunctionDescription is DESCRIBE FUNCTION.
type FunctionDescription struct {
	Name string
	// Type is SCALAR or TABLE.
	Type        string
	Description string
	// Signatures are "NAME(TYPE arg, …) -> TYPE", one per overload.
	Signatures []string
}

// Table implements Tabular.
func (d *FunctionDescription) Table() ([]types.Column, [][]string) {
	rows := make([][]string, len(d.Signatures))
	for i, sig := range d.Signatures {
		rows[i] = []string{d.Name, sig, d.Description}
	}
	return describeFnCols, rows
}

// SourceDescription is DESCRIBE [EXTENDED] of a stream or table.
type SourceDescription struct {
	Source   SourceInfo
	Extended bool
	// Columns are the source's columns in order; key columns have Key.
	Columns []types.Column
	// TimestampColumn is the column giving ROWTIME, "" for the record's.
	TimestampColumn string
	// WindowType and WindowSizeMs describe a windowed source.
	WindowType   types.WindowType
	WindowSizeMs int64
	IsSource     bool
	Statement    string
	// Writer is the query that made the source (CREATE … AS SELECT),
	// nil when none; Readers are the other queries that use it, in ID
	// order: those reading it, and INSERT INTO … SELECT queries writing
	// it (their Sink is the source).
	Writer  *QueryInfo
	Readers []QueryInfo
	// Partitioner is the source's PARTITIONER: murmur2, crc32 or
	// unknown.
	Partitioner string `json:"partitioner"`
	// Checked and Misplaced count, over the queries running here that
	// read the source where its partitioning matters, its keyed records
	// read and those that were not in the partition its PARTITIONER
	// gives their key (its producers partition otherwise).
	Checked   int64 `json:"partitionCheckedRecords"`
	Misplaced int64 `json:"misplacedRecords"`
}

// Table implements Tabular: "Field | Type" rows, or with EXTENDED
// "Property | Value" rows of the source's properties, columns and queries.
func (d *SourceDescription) Table() ([]types.Column, [][]string) {
	var rows [][]string
	for _, c := range d.Columns {
		t := c.Type.String()
		if c.Key {
			if d.Source.Kind == catalog.Table {
				t += " (primary key)"
			} else {
				t += " (key)"
			}
			if d.Source.Windowed {
				t += " (window type: " + d.windowDesc() + ")"
			}
		}
		rows = append(rows, []string{c.Name, t})
	}
	if !d.Extended {
		return describeCols, rows
	}
	for i := range rows {
		rows[i][0] = "column " + rows[i][0]
	}
	rows = append([][]string{
		{"name", d.Source.Name},
		{"type", d.Source.Kind.String()},
		{"kafka topic", d.Source.Topic},
		{"partitions", strconv.Itoa(int(d.Source.Partitions))},
		{"partitioner", d.Partitioner},
		{"key format", d.Source.KeyFormat},
		{"value format", d.Source.ValueFormat},
		{"source (read-only)", strconv.FormatBool(d.IsSource)},
		{"windowed", d.windowDesc()},
		{"statement", d.Statement},
	}, rows...)
	if q := d.Writer; q != nil {
		rows = append(rows, []string{"written by query", q.ID})
		if qs := q.Status; qs != nil {
			rows = append(rows,
				[]string{"query status", qs.State},
				[]string{"query status since", qs.Since.UTC().Format(time.RFC3339)},
				[]string{"records in", strconv.FormatInt(qs.RecordsIn, 10)},
				[]string{"records out", strconv.FormatInt(qs.RecordsOut, 10)},
				[]string{"bad records", strconv.FormatInt(qs.BadRecords, 10)},
				[]string{"restarts", strconv.FormatInt(qs.Restarts, 10)},
				[]string{"late records dropped", strconv.FormatInt(qs.LateRecords, 10)})
			if qs.Err != "" {
				rows = append(rows, []string{"query error", qs.Err})
			}
			if qs.LastErr != "" {
				rows = append(rows, []string{"last error", qs.LastErrAt.UTC().Format(time.RFC3339) + " " + qs.LastErr})
			}
		}
	}
	for _, q := range d.Readers {
		rows = append(rows, []string{"read by query", q.ID})
	}
	if d.Checked > 0 || d.Misplaced > 0 {
		v := fmt.Sprintf("%d of %d keyed records read (%.1f%%)", d.Misplaced, d.Checked, 100*float64(d.Misplaced)/float64(max(d.Checked, 1)))
		switch {
		case d.Misplaced > 0 && d.Partitioner == "crc32":
			v += "; its producers partition otherwise: declare WITH (PARTITIONER='murmur2') (the Java client, Kafka Streams, franz-go) or 'unknown'"
		case d.Misplaced > 0:
			v += "; its producers partition otherwise (librdkafka's default is crc32): declare WITH (PARTITIONER='crc32') or produce with partitioner=murmur2_random"
		}
		rows = append(rows, []string{"records outside their key's " + d.Partitioner + " partition", v})
	}
	return describeExtCols, rows
}

// windowDesc describes the source's windowing: its type and, for time
// windows, its size ("TUMBLING, 1 MINUTE"); "false" when it has none.
func (d *SourceDescription) windowDesc() string {
	return windowDesc(&catalog.Source{WindowType: d.WindowType, WindowSizeMs: d.WindowSizeMs})
}

// Plan is EXPLAIN of a running query (QueryID set) or of a statement.
type Plan struct {
	// QueryID names the running query explained; "" for a statement.
	QueryID string
	// SQL is the query's statement.
	SQL string
	// Type is PERSISTENT, PUSH or PULL.
	Type string
	// Sink is the stream or table a persistent query writes.
	Sink string
	// Sources are the streams and tables the query reads (running
	// queries only).
	Sources []string
	// Columns lay out the rows the statement returns or writes, when known.
	Columns []types.Column
	// Status is a running query's status (nil when not running here).
	Status *QueryStatus
	// AppID and Fingerprint identify a running query's topology.
	AppID, Fingerprint string
	// Logical is the logical plan's printout (statements only).
	Logical string
	// Graph is the physical topology; nil for a pull query.
	Graph *Graph
	// Text is the whole EXPLAIN printout, as pgwire returns it.
	Text string
}

// Table implements Tabular: one line of the printout per row.
func (p *Plan) Table() ([]types.Column, [][]string) {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(p.Text, "\n"), "\n") {
		rows = append(rows, []string{line})
	}
	return explainCols, rows
}

// Topology returns the part of the printout after its "Topology:" or
// "Physical plan:" line.
func (p *Plan) Topology() string {
	for _, marker := range []string{"Topology:\n", "Physical plan:\n"} {
		if _, after, ok := strings.Cut(p.Text, marker); ok {
			return after
		}
	}
	return ""
}

// Graph is a physical topology as plain data, for drawing: its
// sub-topologies with their nodes, the stores and the topics that
// connect them.
type Graph struct {
	AppID         string             `json:"appId"`
	SubTopologies []GraphSubTopology `json:"subTopologies"`
	Stores        []GraphStore       `json:"stores"`
}

// GraphSubTopology is one sub-topology: a connected part of the graph.
type GraphSubTopology struct {
	ID    int         `json:"id"`
	Nodes []GraphNode `json:"nodes"`
}

// GraphNode is one processor node.
type GraphNode struct {
	ID   int    `json:"id"`
	Name string `json:"name"`
	// Kind is the operation: Source, Filter, Project, Rekey, FlatMap,
	// TableChanges, Aggregate, Materialize, StreamTableJoin, Repartition
	// or Sink.
	Kind string `json:"kind"`
	// Detail is the node's EXPLAIN text.
	Detail string `json:"detail"`
	// Inputs are the IDs of the nodes it reads.
	Inputs []int `json:"inputs"`
	// Stores are the names of the stores it keeps state in.
	Stores []string `json:"stores"`
	// ReadsTopic is the topic a source reads; WritesTopic the topic a
	// sink or repartition writes. Repartition marks an internal
	// repartition topic (on either end).
	ReadsTopic  string `json:"readsTopic,omitempty"`
	WritesTopic string `json:"writesTopic,omitempty"`
	Repartition bool   `json:"repartition,omitempty"`
}

// GraphStore is a state store and its changelog.
type GraphStore struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Changelog string `json:"changelog"`
	// SourceTopicChangelog marks a store restored from its source topic.
	SourceTopicChangelog bool `json:"sourceTopicChangelog,omitempty"`
}

// graphOf converts a topology to a Graph.
func graphOf(t *physical.Topology) *Graph {
	g := &Graph{AppID: t.AppID, SubTopologies: []GraphSubTopology{}, Stores: []GraphStore{}}
	for _, st := range t.SubTopologies {
		gs := GraphSubTopology{ID: st.ID, Nodes: []GraphNode{}}
		for _, n := range st.Nodes {
			gn := GraphNode{ID: n.ID, Name: n.Name, Detail: strings.TrimSpace(n.Op.Explain(n.Name)), Inputs: []int{}, Stores: []string{}}
			for _, in := range n.Inputs {
				gn.Inputs = append(gn.Inputs, in.ID)
			}
			for _, s := range physical.StoresOf(n) {
				gn.Stores = append(gn.Stores, s.Name)
			}
			switch op := n.Op.(type) {
			case *physical.Source:
				gn.Kind, gn.ReadsTopic, gn.Repartition = "Source", op.Topic, op.Repartitioned
			case *physical.Filter:
				gn.Kind = "Filter"
			case *physical.Project:
				gn.Kind = "Project"
			case *physical.Rekey:
				gn.Kind = "Rekey"
			case *physical.FlatMap:
				gn.Kind = "FlatMap"
			case *physical.TableChanges:
				gn.Kind = "TableChanges"
			case *physical.Aggregate:
				gn.Kind = "Aggregate"
			case *physical.Materialize:
				gn.Kind = "Materialize"
			case *physical.StreamTableJoin:
				gn.Kind = "StreamTableJoin"
			case *physical.Repartition:
				gn.Kind, gn.WritesTopic, gn.Repartition = "Repartition", op.Topic, true
			case *physical.TableRepartition:
				gn.Kind, gn.WritesTopic, gn.Repartition = "TableRepartition", op.Topic, true
			case *physical.Sink:
				gn.Kind, gn.WritesTopic = "Sink", op.Topic
			default:
				gn.Kind = strings.TrimPrefix(strings.TrimPrefix(typeName(n.Op), "*"), "physical.")
			}
			gs.Nodes = append(gs.Nodes, gn)
		}
		g.SubTopologies = append(g.SubTopologies, gs)
	}
	for _, s := range t.Stores {
		g.Stores = append(g.Stores, GraphStore{Name: s.Name, Kind: string(s.Kind), Changelog: s.Changelog, SourceTopicChangelog: s.SourceTopicChangelog})
	}
	return g
}

func typeName(v any) string { return fmt.Sprintf("%T", v) }
