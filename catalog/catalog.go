package catalog

import (
	"fmt"
	"sort"
	"sync"

	"github.com/sqlstreams/sqlstreams/types"
)

// Kind says whether a source is a stream or a table.
type Kind uint8

// Source kinds.
const (
	Stream Kind = iota + 1
	Table
)

func (k Kind) String() string {
	if k == Table {
		return "TABLE"
	}
	return "STREAM"
}

// Source is a stream or table: a schema over a Kafka topic.
type Source struct {
	Name        string
	Kind        Kind
	Topic       string
	KeyFormat   string
	ValueFormat string
	// KeyOptions and ValueOptions carry VALUE_DELIMITER, KEY_DELIMITER and
	// WRAP_SINGLE_VALUE.
	KeyOptions, ValueOptions types.FormatOptions
	// TimestampColumn, when set (WITH TIMESTAMP='col'), is the column
	// whose value is the record's event time (ROWTIME) instead of the
	// Kafka record timestamp; TimestampFormat parses it when it is a
	// STRING.
	TimestampColumn string
	TimestampFormat string
	// Schema lists the declared columns, keys flagged, without pseudo
	// columns.
	Schema types.Schema
	// WindowType marks a windowed source (a windowed aggregation's
	// result, or WITH (WINDOW_TYPE=…)): its record keys carry the window
	// after the key columns' bytes (see types.WindowType), and its rows
	// have WINDOWSTART and WINDOWEND. WindowSizeMs is a time window's
	// size, which gives its end.
	WindowType   types.WindowType
	WindowSizeMs int64
	// Partitions of the topic, as known when the source was created.
	Partitions int32
	// IsSource marks CREATE SOURCE STREAM|TABLE: read-only.
	IsSource bool
	// SQL is the statement that created the source.
	SQL string
	// WriterQuery is the ID of the persistent query that writes the
	// source, or "" for a source declared over an existing topic.
	WriterQuery string
	// MaterializedBy is the ID of the query that keeps a table's latest
	// rows in a state store for pull queries, or "".
	MaterializedBy string
}

// Windowed reports whether the source's keys carry windows.
func (s *Source) Windowed() bool { return s.WindowType != types.NoWindow }

// RowSchema is the layout of the rows read from the source: its declared
// columns, the window bounds of a windowed source after its key columns,
// then the pseudo columns.
func (s *Source) RowSchema() types.Schema {
	if s.Windowed() {
		return s.Schema.WithWindow().WithPseudo()
	}
	return s.Schema.WithPseudo()
}

// Query is a persistent query: CSAS, CTAS or INSERT INTO … SELECT.
type Query struct {
	ID      string
	SQL     string
	Sink    string
	Sources []string
	// Props are the session properties it was created with
	// (auto.offset.reset, threads …), for a restart such as RESET QUERY.
	Props map[string]string
	// Paused marks a query PAUSEd (until RESUME): it keeps its group
	// membership and state and processes nothing.
	Paused bool
}

// Catalog holds the sources and queries. It is safe for concurrent use.
type Catalog struct {
	mu      sync.RWMutex
	sources map[string]*Source
	queries map[string]*Query
}

// New returns an empty catalog.
func New() *Catalog {
	return &Catalog{sources: map[string]*Source{}, queries: map[string]*Query{}}
}

// Source returns the source named name (exact match; the sql package
// normalizes names).
func (c *Catalog) Source(name string) (*Source, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.sources[name]
	return s, ok
}

// Sources returns all sources sorted by name.
func (c *Catalog) Sources() []*Source {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Source, 0, len(c.sources))
	for _, s := range c.sources {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// AddSource adds s, or replaces the source of the same name when replace
// is set.
func (c *Catalog) AddSource(s *Source, replace bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sources[s.Name]; ok && !replace {
		return fmt.Errorf("%s %s already exists", s.Kind, s.Name)
	}
	c.sources[s.Name] = s
	return nil
}

// DropSource removes the source named name.
func (c *Catalog) DropSource(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.sources, name)
}

// Query returns the query with id.
func (c *Catalog) Query(id string) (*Query, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	q, ok := c.queries[id]
	return q, ok
}

// Queries returns all queries sorted by ID.
func (c *Catalog) Queries() []*Query {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Query, 0, len(c.queries))
	for _, q := range c.queries {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// AddQuery records a persistent query.
func (c *Catalog) AddQuery(q *Query) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries[q.ID] = q
}

// DropQuery forgets a persistent query.
func (c *Catalog) DropQuery(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.queries, id)
}

// Users returns the IDs of the queries that read or write the source
// named name, sorted.
func (c *Catalog) Users(name string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []string
	for _, q := range c.queries {
		uses := q.Sink == name
		for _, s := range q.Sources {
			uses = uses || s == name
		}
		if uses {
			out = append(out, q.ID)
		}
	}
	sort.Strings(out)
	return out
}
