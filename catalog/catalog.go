package catalog

import (
	"fmt"
	"maps"
	"sort"
	"sync"
	"sync/atomic"

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
	// Partitioner is how the topic's producers chose a keyed record's
	// partition (WITH (PARTITIONER=…)): murmur2 (the zero value, Kafka's
	// Java client and franz-go), crc32 (librdkafka's default) or
	// unknown. Whatever must agree with the topic's partitioning uses
	// it; a query writes its sink by murmur2.
	Partitioner types.Partitioner
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

// Catalog holds the sources and queries. Readers see immutable
// snapshots: a change builds a new snapshot and publishes it at once, so
// a reader (a pull query, SHOW, DESCRIBE) never sees a half-updated
// source. The *Source and *Query values it hands out are shared and must
// not be modified; change them through UpdateSource and UpdateQuery.
// It is safe for concurrent use; changes are serialized.
type Catalog struct {
	mu  sync.Mutex // serializes writers
	cur atomic.Pointer[Snapshot]
}

// Snapshot is the catalog at one moment. It never changes.
type Snapshot struct {
	sources map[string]*Source
	queries map[string]*Query
	// types are the custom types of CREATE TYPE, by upper-case name.
	types map[string]types.Type
	// views are the CREATE VIEW statements, by upper-case view name.
	views map[string]string
}

// New returns an empty catalog.
func New() *Catalog {
	c := &Catalog{}
	c.cur.Store(&Snapshot{sources: map[string]*Source{}, queries: map[string]*Query{}, types: map[string]types.Type{}})
	return c
}

// Snapshot returns the catalog as it is now; later changes do not show
// in it.
func (c *Catalog) Snapshot() *Snapshot { return c.cur.Load() }

// Source returns the source named name (exact match; the sql package
// normalizes names).
func (c *Catalog) Source(name string) (*Source, bool) { return c.Snapshot().Source(name) }

// Sources returns all sources sorted by name.
func (c *Catalog) Sources() []*Source { return c.Snapshot().Sources() }

// Query returns the query with id.
func (c *Catalog) Query(id string) (*Query, bool) { return c.Snapshot().Query(id) }

// Queries returns all queries sorted by ID.
func (c *Catalog) Queries() []*Query { return c.Snapshot().Queries() }

// Users returns the IDs of the queries that read or write the source
// named name, sorted.
func (c *Catalog) Users(name string) []string { return c.Snapshot().Users(name) }

// Type returns the custom type named name (CREATE TYPE).
func (s *Snapshot) Type(name string) (types.Type, bool) {
	t, ok := s.types[name]
	return t, ok
}

// Types returns the custom types' names, sorted.
func (s *Snapshot) Types() []string {
	out := make([]string, 0, len(s.types))
	for n := range s.types {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Type returns the custom type named name.
func (c *Catalog) Type(name string) (types.Type, bool) { return c.Snapshot().Type(name) }

// PutType adds or replaces the custom type named name.
func (c *Catalog) PutType(name string, t types.Type) {
	_ = c.change(func(next *Snapshot) error { next.types[name] = t; return nil })
}

// DropType removes the custom type named name.
func (c *Catalog) DropType(name string) {
	_ = c.change(func(next *Snapshot) error { delete(next.types, name); return nil })
}

// Source returns the source named name.
func (s *Snapshot) Source(name string) (*Source, bool) {
	src, ok := s.sources[name]
	return src, ok
}

// Sources returns all sources sorted by name.
func (s *Snapshot) Sources() []*Source {
	out := make([]*Source, 0, len(s.sources))
	for _, src := range s.sources {
		out = append(out, src)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Query returns the query with id.
func (s *Snapshot) Query(id string) (*Query, bool) {
	q, ok := s.queries[id]
	return q, ok
}

// Queries returns all queries sorted by ID.
func (s *Snapshot) Queries() []*Query {
	out := make([]*Query, 0, len(s.queries))
	for _, q := range s.queries {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Users returns the IDs of the queries that read or write the source
// named name, sorted.
func (s *Snapshot) Users(name string) []string {
	var out []string
	for _, q := range s.queries {
		uses := q.Sink == name
		for _, src := range q.Sources {
			uses = uses || src == name
		}
		if uses {
			out = append(out, q.ID)
		}
	}
	sort.Strings(out)
	return out
}

// change publishes the snapshot fn makes from a copy of the current one.
func (c *Catalog) change(fn func(next *Snapshot) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.cur.Load()
	next := &Snapshot{sources: maps.Clone(cur.sources), queries: maps.Clone(cur.queries), types: maps.Clone(cur.types), views: maps.Clone(cur.views)}
	if next.types == nil {
		next.types = map[string]types.Type{}
	}
	if next.views == nil {
		next.views = map[string]string{}
	}
	if err := fn(next); err != nil {
		return err
	}
	c.cur.Store(next)
	return nil
}

// AddSource adds s, or replaces the source of the same name when replace
// is set. The catalog keeps s: the caller must not modify it afterwards.
func (c *Catalog) AddSource(s *Source, replace bool) error {
	return c.change(func(next *Snapshot) error {
		if _, ok := next.sources[s.Name]; ok && !replace {
			return fmt.Errorf("%s %s already exists", s.Kind, s.Name)
		}
		next.sources[s.Name] = s
		return nil
	})
}

// UpdateSource replaces the source named name by a copy changed by fn,
// and reports whether there was one.
func (c *Catalog) UpdateSource(name string, fn func(*Source)) bool {
	found := false
	_ = c.change(func(next *Snapshot) error {
		if old, ok := next.sources[name]; ok {
			cp := *old
			fn(&cp)
			next.sources[name] = &cp
			found = true
		}
		return nil
	})
	return found
}

// DropSource removes the source named name.
func (c *Catalog) DropSource(name string) {
	_ = c.change(func(next *Snapshot) error { delete(next.sources, name); return nil })
}

// AddQuery records a persistent query. The catalog keeps q: the caller
// must not modify it afterwards.
func (c *Catalog) AddQuery(q *Query) {
	_ = c.change(func(next *Snapshot) error { next.queries[q.ID] = q; return nil })
}

// UpdateQuery replaces the query with id by a copy changed by fn, and
// reports whether there was one.
func (c *Catalog) UpdateQuery(id string, fn func(*Query)) bool {
	found := false
	_ = c.change(func(next *Snapshot) error {
		if old, ok := next.queries[id]; ok {
			cp := *old
			fn(&cp)
			next.queries[id] = &cp
			found = true
		}
		return nil
	})
	return found
}

// DropQuery forgets a persistent query.
func (c *Catalog) DropQuery(id string) {
	_ = c.change(func(next *Snapshot) error { delete(next.queries, id); return nil })
}

// View returns the CREATE VIEW statement of the view named name.
func (s *Snapshot) View(name string) (string, bool) {
	v, ok := s.views[name]
	return v, ok
}

// Views returns the views' names, sorted.
func (s *Snapshot) Views() []string {
	out := make([]string, 0, len(s.views))
	for n := range s.views {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// View returns the CREATE VIEW statement of the view named name
// (sql.Views).
func (c *Catalog) View(name string) (string, bool) { return c.Snapshot().View(name) }

// PutView adds or replaces the view named name, made by statement.
func (c *Catalog) PutView(name, statement string) {
	_ = c.change(func(next *Snapshot) error { next.views[name] = statement; return nil })
}

// DropView removes the view named name.
func (c *Catalog) DropView(name string) {
	_ = c.change(func(next *Snapshot) error { delete(next.views, name); return nil })
}
