package physical

import (
	"fmt"
	"strings"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// The node kinds. Each is an Op; exec builds one processor per node.
var (
	_ Op = (*Source)(nil)
	_ Op = (*Filter)(nil)
	_ Op = (*Project)(nil)
	_ Op = (*Rekey)(nil)
	_ Op = (*FlatMap)(nil)
	_ Op = (*TableChanges)(nil)
	_ Op = (*Aggregate)(nil)
	_ Op = (*Materialize)(nil)
	_ Op = (*StreamTableJoin)(nil)
	_ Op = (*TableTableJoin)(nil)
	_ Op = (*StreamStreamJoin)(nil)
	_ Op = (*Repartition)(nil)
	_ Op = (*Sink)(nil)
)

// Source reads a topic and decodes its records into rows laid out by
// Schema: the declared columns, then the pseudo columns.
type Source struct {
	Topic                    string
	KeyFormat                string
	ValueFormat              string
	KeyOptions, ValueOptions types.FormatOptions
	Out                      types.Schema
	// Table marks a table's changelog: a record with a null value
	// deletes its key, and a record without a key is bad. A stream's
	// null-valued records carry no row and are skipped.
	Table bool
	// TimestampColumn names the column that holds the event time, or is
	// empty for the Kafka record timestamp; TimestampFormat parses it
	// when it is a STRING.
	TimestampColumn string
	TimestampFormat string
	// KeepInvalidTimestamps passes on a record whose TimestampColumn
	// holds a negative event time (queries recorded before sqlstreams
	// skipped them, as Kafka Streams does); ThrowOnInvalidTimestamp
	// fails the query on a record whose TimestampColumn cannot be read
	// (ksql.timestamp.throw.on.invalid) rather than skip the record.
	// Set by the engine from the query's command; not part of EXPLAIN.
	KeepInvalidTimestamps, ThrowOnInvalidTimestamp bool
	// Read marks, indexed like Schema's columns, the value columns the
	// nodes after the source read; nil for all. The decoder steps over
	// the others (see types.NewDecoderRead) and leaves them NULL.
	Read []bool
	// Repartitioned marks the reading side of a repartition topic: its
	// records carry changes of a table (a removal is marked by the
	// UndoHeader header).
	Repartitioned bool
	// WindowType marks a windowed topic: its keys end in the window
	// (types.WindowType), which fills the WINDOWSTART and WINDOWEND
	// columns; WindowSizeMs gives a time window's end.
	WindowType   types.WindowType
	WindowSizeMs int64
	// Raw marks an internal topic whose records the node after the
	// source reads as they are (a foreign-key join's subscription and
	// response topics): nothing is decoded, and Out is empty.
	Raw bool
	// KeyByValue replaces each record's key, as it is read (and as the
	// topic restores a store), by its key columns in JSON (ByValueKey),
	// so that stores key rows by value: a table in a schema-registry key
	// format, whose producers may write one key with several schemas.
	KeyByValue bool
	// Partitioner is how the topic's keyed records were partitioned:
	// the declared source's (WITH PARTITIONER), or, for a repartition
	// topic, what its writer uses. A store this source's sub-topology
	// keeps is partitioned by it (pull-query routing).
	Partitioner types.Partitioner
	// Declared, for a source declared in the catalog (not an internal
	// topic), is its name: the source whose records, when it is left
	// murmur2, are checked to be in their key's murmur2 partition, each
	// one outside counted and reported under this name.
	Declared string
}

// ByValueKey is the key format of stores a KeyByValue source keeps: the
// key columns in JSON, without options.
const ByValueKey = types.FormatJSON

func (s *Source) Schema() types.Schema { return s.Out }
func (s *Source) Explain(name string) string {
	return fmt.Sprintf("  %s (topic: %s, key: %s%s%s, value: %s%s)\n", name, s.Topic, s.KeyFormat, windowNote(s.WindowType, s.WindowSizeMs), partitionerNote(s.Partitioner), s.ValueFormat, tsNote(s.TimestampColumn))
}

// partitionerNote names a partitioner other than murmur2 for EXPLAIN.
func partitionerNote(p types.Partitioner) string {
	if p == types.Murmur2 {
		return ""
	}
	return " partitioned by " + p.String()
}
func (s *Source) shape() string {
	return fmt.Sprintf("source %s key %s value %s", s.Topic, s.KeyFormat, s.ValueFormat)
}

// Filter passes rows for which Predicate is true.
type Filter struct {
	Predicate expr.Expr
	Out       types.Schema
}

func (f *Filter) Schema() types.Schema { return f.Out }
func (f *Filter) Explain(name string) string {
	return "  --> " + name + "  Filter: " + f.Predicate.String() + "\n"
}
func (f *Filter) markRead(read []bool) bool {
	expr.MarkColumns(f.Predicate, read)
	return false
}

// Project computes a new row from expressions over its input row.
type Project struct {
	Exprs []expr.Expr
	Out   types.Schema
}

func (p *Project) Schema() types.Schema { return p.Out }
func (p *Project) Explain(name string) string {
	parts := make([]string, len(p.Exprs))
	for i, e := range p.Exprs {
		parts[i] = e.String() + " AS " + p.Out.Columns[i].Name
	}
	return "  --> " + name + "  Project: " + strings.Join(parts, ", ") + "\n"
}
func (p *Project) markRead(read []bool) bool {
	for _, e := range p.Exprs {
		expr.MarkColumns(e, read)
	}
	return true
}

// Rekey (PARTITION BY) makes new key columns: its output row is its input
// row followed by one column per key expression that is not a plain
// column; Keys are the key columns' output positions.
type Rekey struct {
	Exprs []expr.Expr
	Keys  []int
	Out   types.Schema
}

func (r *Rekey) Schema() types.Schema { return r.Out }
func (r *Rekey) Explain(name string) string {
	parts := make([]string, len(r.Exprs))
	for i, e := range r.Exprs {
		parts[i] = e.String()
	}
	return "  --> " + name + "  Rekey: PARTITION BY " + strings.Join(parts, ", ") + "\n"
}
func (r *Rekey) shape() string { return "rekey" }

// FlatMap applies table functions: one output row per element of the
// longest result, the input row followed by one value per function.
type FlatMap struct {
	Fns  []*expr.TableFunction
	Args [][]expr.Expr
	Out  types.Schema
}

func (f *FlatMap) Schema() types.Schema { return f.Out }
func (f *FlatMap) Explain(name string) string {
	parts := make([]string, len(f.Fns))
	for i, fn := range f.Fns {
		args := make([]string, len(f.Args[i]))
		for j, a := range f.Args[i] {
			args[j] = a.String()
		}
		parts[i] = fn.Name + "(" + strings.Join(args, ", ") + ")"
	}
	return "  --> " + name + "  FlatMap: " + strings.Join(parts, ", ") + "\n"
}

// TableChanges turns each record of a source table into a change: the
// key's previous row (kept in Store, restored from the table's topic) as
// the old value and the record's row as the new one (none for a
// tombstone).
type TableChanges struct {
	Store *Store
	Out   types.Schema
}

func (d *TableChanges) Schema() types.Schema { return d.Out }
func (d *TableChanges) Explain(string) string {
	return fmt.Sprintf("  (changes as removal and addition, store: %s, changelog: %s)\n", d.Store.Name, d.Store.Changelog)
}
func (d *TableChanges) stores() []*Store { return []*Store{d.Store} }

// Aggregate groups rows by GroupBy and keeps each group's aggregate
// state in Store (restored from its changelog). Each change updates its
// group (a removal takes the old row back out) and emits the group's new
// row (key columns, then aggregates) — or, when Having is set and false
// or the group has no rows left, the group's deletion.
type Aggregate struct {
	GroupBy []expr.Expr
	Aggs    []*planner.AggCall
	Having  expr.Expr // over Out's rows; nil for none
	Out     types.Schema
	Store   *Store
	// FromTable marks a table's aggregation: removals come, every
	// aggregate can undo, and a group's state counts its rows, so that
	// the group is deleted when the count drops to zero.
	FromTable bool
	// Window, when set, aggregates per group and window: Out has
	// WINDOWSTART and WINDOWEND after the group key columns, Store is a
	// window store, and changes carry their window. EmitFinal emits a
	// window's row once, when it closes.
	Window    *planner.WindowSpec
	EmitFinal bool
	// IdleAdvance (ms, 0 for off; windows) lets the task whose inputs
	// have been idle this long advance its stream time by the wall
	// clock, so that windows close without new input
	// (sqlstreams.window.idle.advance.ms when the query was created).
	IdleAdvance int64
	// FinalOnClose (with EmitFinal, time windows) emits as Kafka Streams'
	// EmitStrategy.onWindowClose does: when a record moves the close time
	// (stream time - grace) past the end of windows not yet emitted,
	// they are emitted then, in order of start and key — all of them,
	// where Kafka Streams finds only those whose start is within the
	// store's retention of the latest window start and drops older ones
	// unseen. Without it closed windows are emitted at each commit
	// (queries recorded before it).
	FinalOnClose bool
	// Changes makes each emitted row carry the group's previous row as
	// the change's old row (none for a new group), so that an
	// aggregation reading this one's result can take it back out.
	Changes bool
	// DropEmpty (FromTable) deletes a group whose last row is taken out
	// (SQL's semantics) instead of keeping it with the aggregates of no
	// rows (ksqlDB's).
	DropEmpty bool
	// Distinct (SELECT DISTINCT) emits a group's row only when the group
	// appears; of a table, with DropEmpty, its deletion when it empties.
	Distinct bool
	// DistinctStore, when set, keeps the distinct values of the
	// aggregates DistinctAggs (indexes into Aggs: COUNT(DISTINCT x),
	// COUNT_DISTINCT, SUM(DISTINCT x); see expr.DistinctValues) apart
	// from the groups' states. DistinctAggs lists them by the value they
	// count (planner.Aggregate.KeepsDistinctValues): the aggregates of
	// one value, with their FILTERs, share an entry per group and value,
	// which holds for each of them the number of the group's rows that
	// hold the value (and pass its filter; over a stream, 1 once one
	// did), as Flink's distinct views keep a count per filter. Those
	// aggregates' part of a group's state is then only what its distinct
	// values add up to, so that a row costs the same however many values
	// its group has. An entry's key is the group's key (in Store's key
	// format) behind its length as a uvarint, the index of its list in
	// DistinctAggs (a uvarint) and the value's encoding; its value the
	// counts, a uvarint each in the list's order. Of a windowed
	// aggregation it is a WindowStore with the window store's retention:
	// an entry's key starts with its window's 8-byte start as the window
	// store's do, so that a window's entries expire with it, and its
	// changelog key ends with the start as a windowed key does. Of
	// session windows the start is the session's, and the store has no
	// retention (its changelog is compacted only): merged and expired
	// sessions' entries are deleted one by one. Plans recorded before it
	// keep each group's distinct values in the group's state (sessions:
	// plans recorded before the session ones).
	DistinctStore *Store
	DistinctAggs  [][]int
}

// DistinctValuesFormat is the value format of an Aggregate's
// DistinctStore.
const DistinctValuesFormat = "DISTINCT-COUNTS"

func (a *Aggregate) Schema() types.Schema { return a.Out }
func (a *Aggregate) Explain(name string) string {
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
	if a.Window != nil {
		d += " WINDOW " + a.Window.String()
	}
	if a.EmitFinal {
		d += " EMIT FINAL"
	}
	if a.IdleAdvance > 0 {
		d += " IDLE ADVANCE " + planner.FormatDuration(a.IdleAdvance)
	}
	if a.Changes {
		d += " EMIT CHANGES WITH OLD ROWS"
	}
	if a.DropEmpty {
		d += " DELETE EMPTY GROUPS"
	}
	if a.Distinct {
		d += " DISTINCT"
	}
	s := "  --> " + name + "  " + d + " (store: " + a.Store.Name + ", changelog: " + a.Store.Changelog + ")\n"
	if a.DistinctStore != nil {
		var vals []string
		for _, share := range a.DistinctAggs {
			calls := make([]string, len(share))
			for i, j := range share {
				calls[i] = a.Aggs[j].String()
			}
			vals = append(vals, strings.Join(calls, " + "))
		}
		s += "      distinct values of " + strings.Join(vals, "; ") + " (store: " + a.DistinctStore.Name + ", changelog: " + a.DistinctStore.Changelog + ")\n"
	}
	return s
}
func (a *Aggregate) stores() []*Store {
	if a.DistinctStore != nil {
		return []*Store{a.Store, a.DistinctStore}
	}
	return []*Store{a.Store}
}
func (a *Aggregate) markRead(read []bool) bool {
	for _, g := range a.GroupBy {
		expr.MarkColumns(g, read)
	}
	for _, c := range a.Aggs {
		for _, e := range c.Args {
			expr.MarkColumns(e, read)
		}
	}
	return true
}

// Materialize upserts each record of a source table into Store keyed by
// the record key; a tombstone deletes. Store values are the record's
// value bytes behind an 8-byte big-endian timestamp (ROWTIME).
type Materialize struct {
	Store *Store
	Out   types.Schema
}

func (m *Materialize) Schema() types.Schema { return m.Out }
func (m *Materialize) Explain(name string) string {
	return fmt.Sprintf("  --> %s (store: %s, changelog: %s)\n", name, m.Store.Name, m.Store.Changelog)
}

func (m *Materialize) stores() []*Store { return []*Store{m.Store} }

// StreamTableJoin joins a stream to a table on the table's primary key.
// Its first input is the stream's side; its second is the Materialize
// node that keeps the table's partition in Store (restored from the
// table's topic), whose records update the store and emit nothing. Each
// stream row looks its key (LeftKey, encoded as the table's key) up in
// Store and emits the stream row followed by the table row: for an
// INNER join only when the table has the key, for a LEFT join always,
// with the table's columns NULL when it does not. An output row's
// timestamp is the stream row's.
type StreamTableJoin struct {
	// Left marks a LEFT join; an INNER join otherwise.
	Left bool
	// Table names the table, for EXPLAIN.
	Table string
	// LeftKey is the join expression over the stream's rows; TableKey
	// the position of the table's key column in its rows.
	LeftKey  expr.Expr
	TableKey int
	// LeftKeys and TableKeys are all the key pairs of a table with
	// several key columns (LeftKey and TableKey are their first); nil
	// for one.
	LeftKeys  []expr.Expr
	TableKeys []int
	Store     *Store
	Out       types.Schema
}

func (j *StreamTableJoin) Schema() types.Schema { return j.Out }
func (j *StreamTableJoin) Explain(name string) string {
	on := fmt.Sprintf("%s = %s.%s", j.LeftKey, j.Table, j.Store.Schema.Columns[j.TableKey].Name)
	for i := 1; i < len(j.LeftKeys); i++ {
		on += fmt.Sprintf(" AND %s = %s.%s", j.LeftKeys[i], j.Table, j.Store.Schema.Columns[j.TableKeys[i]].Name)
	}
	return fmt.Sprintf("  --> %s  StreamTableJoin: %s JOIN %s ON %s (store: %s, changelog: %s)\n", name, j.typ(), j.Table,
		on, j.Store.Name, j.Store.Changelog)
}

// Keys returns the join's key pairs: the stream's expressions and the
// positions of the table's key columns.
func (j *StreamTableJoin) Keys() ([]expr.Expr, []int) {
	if len(j.LeftKeys) > 0 {
		return j.LeftKeys, j.TableKeys
	}
	return []expr.Expr{j.LeftKey}, []int{j.TableKey}
}
func (j *StreamTableJoin) stores() []*Store { return []*Store{j.Store} }
func (j *StreamTableJoin) shape() string {
	return fmt.Sprintf("join %s %s", j.typ(), j.Table)
}
func (j *StreamTableJoin) typ() planner.JoinType {
	if j.Left {
		return planner.LeftJoin
	}
	return planner.InnerJoin
}

// markRead marks the stream's columns the join reads (its key); the
// stream's columns keep their positions in the joined row, which goes on.
func (j *StreamTableJoin) markRead(read []bool) bool {
	keys, _ := j.Keys()
	for _, k := range keys {
		expr.MarkColumns(k, read)
	}
	return false
}

// JoinType says which rows a join emits (planner.JoinType), for exec.
type JoinType = planner.JoinType

// The join types, as planner defines them.
const (
	InnerJoin = planner.InnerJoin
	LeftJoin  = planner.LeftJoin
	RightJoin = planner.RightJoin
	FullJoin  = planner.FullJoin
)

// TableTableJoin joins two tables on their primary keys. Its inputs are
// the TableChanges nodes of the left and the right table (in that
// order), whose stores (LeftStore, RightStore: each table's rows,
// restored from its own topic) it reads to find the other side's row of
// a changed key. Each change emits the joined row's old and new values as
// Kafka Streams' KTable–KTable joins do (INNER: both sides; LEFT: the
// left's rows; RIGHT: the right's; FULL: either's), a missing new value
// being the joined row's deletion. A row's timestamp is the later of
// its two sides'. The left's key column holds the join key whenever a
// row is emitted (RIGHT: also when the left has none); a FULL join's
// rows end in a synthetic key column holding it.
type TableTableJoin struct {
	Type        JoinType
	Left, Right string // the tables' names, for EXPLAIN
	// LeftKey and RightKey are the positions of the tables' key columns
	// in their rows.
	LeftKey, RightKey int
	// LeftKeys and RightKeys are the positions of all key columns of
	// tables keyed by several, in pairs; nil for one.
	LeftKeys, RightKeys   []int
	LeftStore, RightStore *Store
	// LeftRows marks a left that is an earlier join's rows (its first
	// input is that join, a RIGHT or FULL join after a table join):
	// LeftStore is then the join's own store of them (each its
	// timestamp and its columns in JSON, keyed by the rows' key, with
	// its own changelog), which gives each change its old row.
	LeftRows bool
	Out      types.Schema
}

func (j *TableTableJoin) Schema() types.Schema { return j.Out }
func (j *TableTableJoin) Explain(name string) string {
	left := j.Left + "." + j.LeftStore.Schema.Columns[j.LeftKey].Name
	if j.LeftRows {
		left = j.LeftStore.Schema.Columns[j.LeftKey].Name // a column of the earlier join's rows
	}
	on := left + " = " + j.Right + "." + j.RightStore.Schema.Columns[j.RightKey].Name
	for n := 1; n < len(j.LeftKeys); n++ {
		on += " AND " + j.Left + "." + j.LeftStore.Schema.Columns[j.LeftKeys[n]].Name + " = " + j.Right + "." + j.RightStore.Schema.Columns[j.RightKeys[n]].Name
	}
	return fmt.Sprintf("  --> %s  TableTableJoin: %s JOIN %s ON %s (stores: %s, %s)\n", name, j.Type, j.Right, on, j.LeftStore.Name, j.RightStore.Name)
}
func (j *TableTableJoin) stores() []*Store { return []*Store{j.LeftStore, j.RightStore} }
func (j *TableTableJoin) shape() string {
	return fmt.Sprintf("table join %s %s %s", j.Type, j.Left, j.Right)
}

// StreamStreamJoin joins two streams on their key columns within a time
// window. Its inputs are the left's and the right's sources (in that
// order). Each row is kept in its side's window store (LeftStore,
// RightStore) for Window's retention, and joins the other side's rows of
// its key within the window; the output row's timestamp is the later of
// the two. Rows without a match (LEFT: the left's, RIGHT: the right's,
// FULL: both) are emitted with the other side's columns NULL: at once
// under a legacy window, or once their window closes with no match,
// from OuterStore (a time-ordered buffer; nil for INNER and legacy
// joins). The left's key column, and a FULL join's synthetic key
// column, hold the join key.
type StreamStreamJoin struct {
	Type                              JoinType
	Left, Right                       string // the streams' names, for EXPLAIN
	LeftKey, RightKey                 int
	Window                            planner.JoinWindow
	LeftStore, RightStore, OuterStore *Store
	// CompactRows stores each side's rows (in its window store and the
	// outer buffer) as the columns the query reads of them, in JSON
	// (the stores' ValueFormat JOIN-COLUMNS), not as the input record's
	// value.
	CompactRows bool
	// StoreHeaders stores, with CompactRows, each side's header columns
	// with its value columns (the stores' ValueFormat
	// JOIN-COLUMNS-HEADERS): stored rows keep them.
	StoreHeaders bool
	// LeftRows, when set, describes the left's rows: an earlier join's,
	// read in the join's sub-topology (not from a topic), as the left
	// store keeps them (see joinRowsSource).
	LeftRows *Source
	// KeyByValue keys both sides' stored rows by their key column's
	// value (JSON) instead of their record keys: keys in a
	// schema-registry format, whose two sides may be written with two
	// schema IDs.
	KeyByValue bool
	// WindowType, for a join of windowed streams whose sides are both
	// repartitioned (schema-registry keys), is the window type of the
	// repartition topics' keys: the sides' rows carry their
	// WINDOWSTART and WINDOWEND as value columns, and rows meet when
	// their keys and windows do (a time window by its start, a session
	// by its start and end). NoWindow otherwise.
	WindowType types.WindowType
	Out        types.Schema
}

func (j *StreamStreamJoin) Schema() types.Schema { return j.Out }
func (j *StreamStreamJoin) Explain(name string) string {
	stores := j.LeftStore.Name + ", " + j.RightStore.Name
	if j.OuterStore != nil {
		stores += ", " + j.OuterStore.Name
	}
	return fmt.Sprintf("  --> %s  StreamStreamJoin: %s JOIN %s %s ON %s = %s (stores: %s)\n", name, j.Type, j.Right, j.Window.String(),
		j.Left+"."+j.LeftStore.Schema.Columns[j.LeftKey].Name, j.Right+"."+j.RightStore.Schema.Columns[j.RightKey].Name, stores)
}
func (j *StreamStreamJoin) stores() []*Store {
	if j.OuterStore != nil {
		return []*Store{j.LeftStore, j.RightStore, j.OuterStore}
	}
	return []*Store{j.LeftStore, j.RightStore}
}
func (j *StreamStreamJoin) shape() string {
	return fmt.Sprintf("stream join %s %s %s", j.Type, j.Left, j.Right)
}

// UndoHeader names the record header that marks, on a repartition topic,
// a record that takes a table's old row back out (the removal half of a
// change). Running queries' repartition topics hold it: keep the name.
const UndoHeader = "__UNDO"

// OldValueHeader carries, on a repartition topic, the old row of a table
// change whose old and new rows have the same key: the header's value is
// the old row, encoded as record values are, and the record's value the
// new row. The reader takes the old row out and the new one in as one
// change, so the group's row is emitted once (as Kafka Streams does when
// the grouping key did not change). Records without it keep their
// meaning.
const OldValueHeader = "__OLD"

// Repartition writes rows to an internal topic keyed by KeyExprs, so that
// all rows of one key meet in one partition. The value holds every
// non-pseudo column of its input (JSON), so that the next sub-topology
// sees the same row layout. A change's old row is written as its own
// record under its own key, marked with UndoHeader, before the new row;
// when both rows have the same key, one record carries both (see
// OldValueHeader).
type Repartition struct {
	Topic    string
	KeyExprs []expr.Expr
	// KeySchema lays out the key columns KeyExprs compute; KeyFormat
	// encodes them.
	KeySchema  types.Schema
	KeyFormat  string
	KeyOptions types.FormatOptions // the sink's: a registry format's schema source and subject
	// KeyLatestOf, for a key in a schema-registry format that names no
	// schema, is the subject (a table's) whose latest schema the keys are
	// written with when it fits, so that they go to the partitions the
	// table's producers' keys go to; "" writes the key columns' own.
	KeyLatestOf string
	In          types.Schema
	// Partitions is the topic's partition count; 0 for the query's
	// input's. A join's repartition topic has the table's.
	Partitions int32
	// NullKeys writes rows whose key is NULL with a null record key (a
	// LEFT join still emits them) instead of dropping them as bad (GROUP
	// BY).
	NullKeys bool
	// WindowType, for windowed rows (In has WINDOWSTART and WINDOWEND),
	// appends each row's window to its key as Kafka Streams serializes
	// windowed keys; the topic is partitioned by the key without it.
	// NoWindow: keys are the key columns alone.
	WindowType types.WindowType
	// Partitioner picks a keyed record's partition: murmur2, or crc32
	// toward a table whose topic is partitioned so.
	Partitioner types.Partitioner
	// Columns, when set, are the columns of In that the values carry:
	// those the sub-topology reading the topic reads (its source's
	// Read), the key columns, and the window bounds of windowed rows.
	// Nil: every column but the pseudo ones, as plans made before it
	// (and commands recorded before plans, WideRepartitions) write.
	Columns []int
}

func (r *Repartition) Schema() types.Schema { return r.In }

// markRead marks what a repartition writes of its rows: the columns of
// its keys and of its values. Writing every column (Columns nil), it
// reads the whole row.
func (r *Repartition) markRead(read []bool) bool {
	if r.Columns == nil {
		return false
	}
	for _, e := range r.KeyExprs {
		expr.MarkColumns(e, read)
	}
	for _, c := range r.Columns {
		if c < len(read) { // (a row a stream-table join widened: its table's columns are not the source's)
			read[c] = true
		}
	}
	return true
}
func (r *Repartition) Explain(name string) string {
	keys := make([]string, len(r.KeyExprs))
	for i, k := range r.KeyExprs {
		keys[i] = k.String()
	}
	return fmt.Sprintf("  --> %s (topic: %s, key: %s%s BY %s%s, value: JSON)\n", name, r.Topic, r.KeyFormat, r.windowNote(), strings.Join(keys, ", "), partitionerNote(r.Partitioner))
}

// windowNote names the window the keys end in, for EXPLAIN.
func (r *Repartition) windowNote() string {
	if r.WindowType == types.NoWindow {
		return ""
	}
	return " windowed " + strings.ToUpper(string(r.WindowType))
}
func (r *Repartition) internalTopic() InternalTopic {
	return InternalTopic{Name: r.Topic, Partitions: r.Partitions}
}
func (r *Repartition) shape() string {
	return fmt.Sprintf("repartition %s key %s", r.Topic, r.KeySchema) + partitionerNote(r.Partitioner)
}

// Sink encodes rows laid out by Schema and writes them to Topic: the key
// columns into the record key, the others into the value. A change
// without a new row writes a tombstone for the old row's key.
type Sink struct {
	// SinglePartition writes every record to partition 0: the one row of
	// a global aggregate's result, which has no key columns (null record
	// keys), whose changes must stay in order.
	SinglePartition          bool
	Topic                    string
	KeyFormat                string
	ValueFormat              string
	KeyOptions, ValueOptions types.FormatOptions
	Out                      types.Schema
	// TimestampColumn names the output column whose value becomes the
	// record timestamp; empty keeps the input's ROWTIME. TimestampFormat
	// parses it when it is a STRING (ISO-8601 when empty). A row whose
	// timestamp is NULL, unreadable or negative is skipped, unless
	// KeepInvalidTimestamps (set by the engine for queries recorded
	// before) writes it as it did then.
	TimestampColumn       string
	TimestampFormat       string
	KeepInvalidTimestamps bool
	// WindowType marks a windowed result: each record key ends in the
	// change's window, as Kafka Streams serializes windowed keys.
	WindowType   types.WindowType
	WindowSizeMs int64
	// Partitioner picks a keyed record's partition: the target's (a
	// query writes its own topic by murmur2; INSERT INTO a source
	// declared crc32 writes by crc32).
	Partitioner types.Partitioner
	// Internal marks a topic the query owns (created compacted with
	// Partitions partitions, 0 for the input's), read back as a table
	// by a join of the same query: a table it computes
	// (planner.Computed: a derived table's rows, a subquery's set).
	Internal   bool
	Partitions int32
	// Append marks an Internal topic read back as a stream (a windowed
	// aggregation's final rows, sql/bind_join_final.go): created with
	// the delete policy, not compacted (its records have no keys).
	Append bool
}

func (s *Sink) internalTopic() InternalTopic {
	if !s.Internal {
		return InternalTopic{}
	}
	return InternalTopic{Name: s.Topic, Partitions: s.Partitions, Compact: !s.Append}
}

func (s *Sink) Schema() types.Schema { return s.Out }
func (s *Sink) Explain(name string) string {
	single := ""
	if s.SinglePartition {
		single = ", partition 0"
	}
	if s.Internal {
		single += ", internal"
	}
	return fmt.Sprintf("  --> %s (topic: %s, key: %s%s%s%s, value: %s%s)\n      schema: %s\n", name, s.Topic, s.KeyFormat, windowNote(s.WindowType, s.WindowSizeMs), partitionerNote(s.Partitioner), single, s.ValueFormat, tsNote(s.TimestampColumn), s.Out)
}

// windowNote describes a windowed key for EXPLAIN.
func windowNote(t types.WindowType, sizeMs int64) string {
	switch t {
	case types.NoWindow:
		return ""
	case types.Session:
		return " windowed SESSION"
	}
	return " windowed " + string(t) + " " + planner.FormatDuration(sizeMs)
}
func (s *Sink) shape() string {
	return fmt.Sprintf("sink %s key %s value %s", s.Topic, s.KeyFormat, s.ValueFormat)
}
