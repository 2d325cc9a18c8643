package types

import "strings"

// Column is one column of a stream, table or query result.
type Column struct {
	Name string
	Type Type
	// Key marks a key column: its value lives in the Kafka record key.
	Key bool
	// Pseudo marks ROWTIME, ROWPARTITION, ROWOFFSET and similar columns
	// that come from record metadata, are not stored in the value and
	// are left out of SELECT *.
	Pseudo bool
	// Window marks WINDOWSTART and WINDOWEND of a windowed source or
	// aggregation: their values live in the windowed record key, after
	// the key columns' bytes, not in the value; SELECT * shows them.
	Window bool
	// Header marks a source's HEADERS column (all the record's headers,
	// ARRAY<STRUCT<KEY STRING, VALUE BYTES>>) or, with HeaderKey, its
	// HEADER('HeaderKey') column (the last header with that key, BYTES).
	// Their values come from the record's headers, not its value; they
	// are read-only, and SELECT * shows them.
	Header    bool
	HeaderKey string
}

// HeadersType is the type of a HEADERS column.
var HeadersType = Type{Kind: Array, Elem: &Type{Kind: Struct, Fields: []Field{
	{Name: "KEY", Type: Type{Kind: String}}, {Name: "VALUE", Type: Type{Kind: Bytes}}}}}

// HeaderIndexes returns the positions of the HEADERS and HEADER('k')
// columns.
func (s Schema) HeaderIndexes() []int {
	var out []int
	for i, c := range s.Columns {
		if c.Header {
			out = append(out, i)
		}
	}
	return out
}

// Schema is an ordered list of columns. A Row laid out by a schema has one
// datum per column, in the same order.
type Schema struct {
	Columns []Column
}

// Pseudo column names, as ksqlDB spells them.
const (
	RowTime      = "ROWTIME"
	RowPartition = "ROWPARTITION"
	RowOffset    = "ROWOFFSET"
)

// Window bound column names, as ksqlDB spells them: BIGINT milliseconds
// since the epoch, the start inclusive and the end exclusive (a session's
// end is its last record's time, inclusive).
const (
	WindowStart = "WINDOWSTART"
	WindowEnd   = "WINDOWEND"
)

// WindowColumns are the window bound columns, in this order.
var WindowColumns = []Column{
	{Name: WindowStart, Type: BigintType, Window: true},
	{Name: WindowEnd, Type: BigintType, Window: true},
}

// PseudoColumns are appended to every source's row in this order.
var PseudoColumns = []Column{
	{Name: RowTime, Type: BigintType, Pseudo: true},
	{Name: RowPartition, Type: IntType, Pseudo: true},
	{Name: RowOffset, Type: BigintType, Pseudo: true},
}

// Len is the number of columns.
func (s Schema) Len() int { return len(s.Columns) }

// Index returns the position of the column named name, or -1. Names are
// compared exactly: the sql package normalizes unquoted identifiers.
func (s Schema) Index(name string) int {
	for i, c := range s.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// IndexFold is Index with case-insensitive matching, for JSON field names.
func (s Schema) IndexFold(name string) int {
	for i, c := range s.Columns {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// KeyIndexes returns the positions of the key columns.
func (s Schema) KeyIndexes() []int {
	var out []int
	for i, c := range s.Columns {
		if c.Key {
			out = append(out, i)
		}
	}
	return out
}

// ValueIndexes returns the positions of the columns stored in the value.
func (s Schema) ValueIndexes() []int {
	var out []int
	for i, c := range s.Columns {
		if !c.Key && !c.Pseudo && !c.Window && !c.Header {
			out = append(out, i)
		}
	}
	return out
}

// Visible returns the columns SELECT * expands to: all but pseudo columns.
func (s Schema) Visible() []int {
	var out []int
	for i, c := range s.Columns {
		if !c.Pseudo {
			out = append(out, i)
		}
	}
	return out
}

// WithPseudo returns s with the pseudo columns appended.
func (s Schema) WithPseudo() Schema {
	cols := make([]Column, 0, len(s.Columns)+len(PseudoColumns))
	cols = append(cols, s.Columns...)
	cols = append(cols, PseudoColumns...)
	return Schema{Columns: cols}
}

// WithWindow returns s with the window bound columns inserted after its
// last key column (at the front when it has none), where ksqlDB shows
// them.
func (s Schema) WithWindow() Schema {
	at := 0
	for i, c := range s.Columns {
		if c.Key {
			at = i + 1
		}
	}
	cols := make([]Column, 0, len(s.Columns)+len(WindowColumns))
	cols = append(cols, s.Columns[:at]...)
	cols = append(cols, WindowColumns...)
	cols = append(cols, s.Columns[at:]...)
	return Schema{Columns: cols}
}

// WindowIndex returns the position of WINDOWSTART (WINDOWEND follows),
// or -1 when s has no window columns.
func (s Schema) WindowIndex() int {
	for i, c := range s.Columns {
		if c.Window {
			return i
		}
	}
	return -1
}

// String renders the schema as "NAME TYPE [KEY], …", the form DESCRIBE and
// EXPLAIN print.
func (s Schema) String() string {
	var b strings.Builder
	for i, c := range s.Columns {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Name)
		b.WriteByte(' ')
		b.WriteString(c.Type.String())
		if c.Key {
			b.WriteString(" KEY")
		}
	}
	return b.String()
}
