package planner

import (
	"fmt"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Node = (*Join)(nil)

// JoinType says which rows a join emits.
type JoinType string

// Join types.
const (
	// InnerJoin emits a row only when both sides match.
	InnerJoin JoinType = "INNER"
	// LeftJoin emits every left row, with the right's columns NULL when
	// nothing matches.
	LeftJoin JoinType = "LEFT"
	// RightJoin emits every right row, with the left's columns NULL
	// (but its key column, the join key) when nothing matches
	// (table–table joins).
	RightJoin JoinType = "RIGHT"
	// FullJoin emits every row of either side, with the other side's
	// columns NULL when nothing matches; its rows end in a synthetic key
	// column holding the join key (table–table joins).
	FullJoin JoinType = "FULL"
)

// Join joins two inputs as ksqlDB defines it. By default it is a
// stream–table join on the table's primary key: each row of the left (a
// stream, or an earlier join's rows) looks up the right (a table) by
// LeftKey; the table's changes only update what later stream rows find,
// and an output row's timestamp is the stream row's. Tables and Window
// make it a table–table or a stream–stream join (see NewTableJoin,
// NewStreamJoin). Its rows are the left's columns then the right's, each
// named <alias>_<column> (the source's alias, or its name; the columns of
// an earlier join keep their names); the left's key columns stay key
// columns, the right's become value columns.
//
// When Repartition is set, the left is a Rekey by the join expression
// and its rows are written to a repartition topic keyed like the table
// (its key format, its partition count) before the join reads them;
// otherwise LeftKey is the left's key column and the inputs are
// co-partitioned. The binder builds the Rekey of a side joined on other
// than its key; rule CoPartitionJoins sets the repartition flags (and
// rekeys a side keyed right but partitioned otherwise).
type Join struct {
	Type        JoinType
	Left, Right Node
	// Residual is the ON's condition beyond the key equalities (a.t >
	// b.t), or nil: lowering (rules JoinResidualToFilter and
	// JoinResidualToNullMask) applies it above the join.
	Residual expr.Expr
	// LeftName and RightName are the sides' aliases (or source names),
	// the prefixes of their column names.
	LeftName, RightName string
	// LeftKey is the left's join expression, over the left's rows;
	// RightKey is the position of the right's primary key column in its
	// rows.
	LeftKey  expr.Expr
	RightKey int
	// LeftKeys and RightKeys are all the key pairs of a stream–table
	// join on a table with several key columns (LeftKey and RightKey
	// are their first); nil for the other joins.
	LeftKeys  []expr.Expr
	RightKeys []int
	// Repartition marks a left side that must be repartitioned by
	// LeftKey (its key column after the Rekey) to meet the right's rows.
	Repartition bool
	// RepartitionRight marks, in a stream–stream join, a right side
	// that must be repartitioned by its key column after a Rekey.
	RepartitionRight bool
	// Tables marks a table–table join on both primary keys: LeftKey is
	// the left's key column, both inputs are changes of co-partitioned
	// tables, and the join emits the joined row's changes (see
	// NewTableJoin).
	Tables bool
	// Window, when set, makes this a stream–stream join of two streams
	// on their key columns (LeftKey is the left's key column).
	Window *JoinWindow
	// ForeignKey marks a foreign-key table–table join (see
	// NewForeignKeyJoin): LeftKey is an expression over the left table's
	// rows, RightKey the right table's primary key column.
	ForeignKey bool
	// OldValues asks a foreign-key join for each output change's old
	// row (the key's previous joined row), which it keeps a store of
	// the rows it emitted for: set when a filter or an aggregate reads
	// the join's changes (rule JoinOldValues). Queries planned before it
	// existed run without.
	OldValues bool
	// LegacyNoOldValues keeps OldValues unset: a command recorded before
	// plans, bound on the plan-format 1 migration path with joins
	// planned as before their second revision (sql.Select.LegacyJoins);
	// it goes with that path.
	LegacyNoOldValues bool
	// CompactRows makes a stream–stream join keep, in its window stores,
	// only the columns of each side's rows that the query reads, encoded
	// compactly, instead of the input record's whole value (rule
	// CompactJoinRows). Queries planned before it existed keep whole
	// values (their stores' changelogs hold them).
	CompactRows bool
	// StoreHeaders makes a stream–stream join with CompactRows keep, in
	// its stores, the header columns of each side's rows too (they are
	// not in the record's value, so stored rows would come back with
	// them NULL): rule CompactJoinRows, when a side has header columns.
	StoreHeaders bool
	// LegacyWholeRows and LegacyNoStoreHeaders keep CompactRows and
	// StoreHeaders unset: a command recorded before plans, bound on the
	// plan-format 1 migration path with joins planned as before their
	// second (sql.Select.LegacyJoins) or third (LegacyJoins2) revision;
	// they go with that path.
	LegacyWholeRows, LegacyNoStoreHeaders bool
	// RepartitionTable makes a stream–table or foreign-key join on a
	// (right) table in a schema-registry key format read the table
	// through a repartition of its own, its keys written with the same
	// key schema as the stream's repartition or the foreign keys are
	// (the schema made from the key columns, not the table subject's
	// latest): a key value its producers wrote under another schema ID
	// (other bytes, maybe another partition) still meets the rows of
	// that value. Set by the fourth revision of join planning.
	RepartitionTable bool
	// RepartitionLeftTable, in a table–table join on primary keys,
	// reads the left table through a repartition of its own by
	// murmur2, as RepartitionTable does the right: a table whose topic
	// is partitioned otherwise than the other's (its PARTITIONER).
	// RepartitionTable does the same for the right of such a join.
	RepartitionLeftTable bool
	// LegacyRegistryTables keeps RepartitionTable for tables whose
	// partitioner is unknown: a command recorded before plans, bound on
	// the plan-format 1 migration path with joins planned as before
	// their fourth revision (sql.Select.LegacyJoins3), when a table in a
	// schema-registry key format was read as it is; it goes with that
	// path.
	LegacyRegistryTables bool
	// Text is where the join is in the statement, for the errors of the
	// rules that plan it (JoinError); nil for a join built otherwise.
	Text *JoinText
	out  types.Schema
}

// NewForeignKeyJoin joins two tables, INNER or LEFT, on an expression
// over the left table's rows (foreignKey) equal to the right table's
// primary key (position rightKey in its rows), as Kafka Streams' KIP-213
// joins do: the result is keyed by the left table's primary key, and a
// change on either side emits the affected joined rows' new values or
// their deletions. Its rows are JoinSchema's. The tables need not be
// co-partitioned. The left may be an earlier table–table join's rows
// (keyed by its key), which the join keeps in a store of its own.
func NewForeignKeyJoin(typ JoinType, left Node, right *Scan, leftName, rightName string, foreignKey expr.Expr, rightKey int) (*Join, error) {
	if typ != InnerJoin && typ != LeftJoin {
		return nil, fmt.Errorf("%s OUTER JOIN on a foreign key is not supported", typ)
	}
	rs := right.Schema()
	if lt, rt := foreignKey.Type(), rs.Columns[rightKey].Type; !lt.Equal(rt) {
		return nil, fmt.Errorf("types don't match: %s is %s, %s.%s is %s", foreignKey, lt, rightName, rs.Columns[rightKey].Name, rt)
	}
	return &Join{Type: typ, Left: left, Right: right, LeftName: leftName, RightName: rightName,
		LeftKey: foreignKey, RightKey: rightKey, ForeignKey: true,
		out: JoinSchema(left.Schema(), rs, leftName, rightName)}, nil
}

// NewTableJoin joins two tables, left and right, on their primary keys
// (positions leftKey and rightKey in their rows), as ksqlDB does: a
// change on either side emits the joined row's new value or its
// deletion. Its rows are JoinSchema's; a FULL join's rows end in a
// synthetic key column named synthKey (the left's key column becomes a
// value column, NULL when the left has no row), which holds the join
// key whichever side has a row.
//
// The left may also be an earlier table–table join's rows, keyed by
// their key column leftKey (a RIGHT or FULL join after a table join):
// the join then keeps those rows in a store of its own.
func NewTableJoin(typ JoinType, left Node, right *Scan, leftName, rightName string, leftKey, rightKey int, synthKey string) (*Join, error) {
	j, err := newKeyJoin(typ, left, right, leftName, rightName, leftKey, rightKey, synthKey)
	if err != nil {
		return nil, err
	}
	j.Tables = true
	return j, nil
}

// JoinWindow is a stream–stream join's WITHIN: a left row at time t
// joins the right rows of its key from t - BeforeMs to t + AfterMs. A
// side's rows are kept for BeforeMs + AfterMs + GraceMs after stream
// time passes them.
//
// With a GRACE PERIOD (Legacy false), a LEFT, RIGHT or FULL join emits
// a row without a match only once its window has closed (its time +
// the window's reach on its side + GraceMs ≤ stream time) with no match,
// as Kafka Streams does since KIP-633 (no spurious outer rows). Without
// one (Legacy), it emits such a row as soon as the row arrives without
// a match — and the joined rows when matches come later — with a grace
// period of 24 hours, as ksqlDB's JoinWindows.of did.
//
// Unbounded makes the join Flink's regular join of two streams (a join
// without WITHIN, in the SQL dialect): every row of a side is kept for
// good and joins every row of the other side with its key, whatever
// their times; BeforeMs, AfterMs and GraceMs are 0. It is INNER only
// (a regular outer join retracts its NULL-padded rows).
type JoinWindow struct {
	BeforeMs, AfterMs, GraceMs int64
	Legacy                     bool
	Unbounded                  bool
}

// LegacyJoinGraceMs is the grace period of a WITHIN without GRACE PERIOD.
const LegacyJoinGraceMs = 24 * 3600 * 1000

// RetentionMs is how long a side's rows are kept behind stream time; 0
// for an Unbounded join (for good).
func (w *JoinWindow) RetentionMs() int64 {
	if w.Unbounded {
		return 0
	}
	return w.BeforeMs + w.AfterMs + w.GraceMs
}

func (w *JoinWindow) String() string {
	if w.Unbounded {
		return "UNBOUNDED"
	}
	s := "WITHIN (" + FormatDuration(w.BeforeMs) + ", " + FormatDuration(w.AfterMs) + ")"
	if !w.Legacy {
		s += " GRACE PERIOD " + FormatDuration(w.GraceMs)
	}
	return s
}

// NewStreamJoin joins two streams on their key columns (positions
// leftKey and rightKey in their rows) within window, any of INNER, LEFT,
// RIGHT and FULL OUTER; its rows are laid out as NewTableJoin's.
func NewStreamJoin(typ JoinType, left, right Node, leftName, rightName string, leftKey, rightKey int, synthKey string, window JoinWindow) (*Join, error) {
	j, err := newKeyJoin(typ, left, right, leftName, rightName, leftKey, rightKey, synthKey)
	if err != nil {
		return nil, err
	}
	j.Window = &window
	return j, nil
}

// newKeyJoin joins two inputs on their key columns.
func newKeyJoin(typ JoinType, left, right Node, leftName, rightName string, leftKey, rightKey int, synthKey string) (*Join, error) {
	ls, rs := left.Schema(), right.Schema()
	lt, rt := ls.Columns[leftKey].Type, rs.Columns[rightKey].Type
	if !lt.Equal(rt) {
		return nil, fmt.Errorf("types don't match: %s.%s is %s, %s.%s is %s", leftName, ls.Columns[leftKey].Name, lt, rightName, rs.Columns[rightKey].Name, rt)
	}
	out := JoinSchema(ls, rs, leftName, rightName)
	if typ == FullJoin {
		out.Columns[leftKey].Key = false
		out.Columns = append(out.Columns, types.Column{Name: synthKey, Type: lt, Key: true})
	}
	return &Join{Type: typ, Left: left, Right: right, LeftName: leftName, RightName: rightName,
		LeftKey: &expr.Column{Index: leftKey, Name: out.Columns[leftKey].Name, T: lt}, RightKey: rightKey, out: out}, nil
}

// NewJoin joins left to right on leftKey = right's column rightKey,
// naming the sides' columns with leftName and rightName.
func NewJoin(typ JoinType, left, right Node, leftName, rightName string, leftKey expr.Expr, rightKey int) (*Join, error) {
	return NewJoinKeys(typ, left, right, leftName, rightName, []expr.Expr{leftKey}, []int{rightKey})
}

// NewJoinKeys is NewJoin on several key columns of the right (a table
// with a composite primary key): leftKeys[i] = right's column
// rightKeys[i].
func NewJoinKeys(typ JoinType, left, right Node, leftName, rightName string, leftKeys []expr.Expr, rightKeys []int) (*Join, error) {
	ls, rs := left.Schema(), right.Schema()
	for i, lk := range leftKeys {
		if lt, rt := lk.Type(), rs.Columns[rightKeys[i]].Type; !lt.Equal(rt) {
			return nil, fmt.Errorf("types don't match: %s is %s, %s.%s is %s", lk, lt, rightName, rs.Columns[rightKeys[i]].Name, rt)
		}
	}
	return &Join{Type: typ, Left: left, Right: right, LeftName: leftName, RightName: rightName,
		LeftKey: leftKeys[0], RightKey: rightKeys[0], LeftKeys: leftKeys, RightKeys: rightKeys,
		out: JoinSchema(ls, rs, leftName, rightName)}, nil
}

// JoinSchema is the layout of a join's rows: the left's columns, then
// the right's, named with JoinColumnName; the right's key columns become
// value columns.
func JoinSchema(left, right types.Schema, leftName, rightName string) types.Schema {
	cols := make([]types.Column, 0, left.Len()+right.Len())
	for _, c := range left.Columns {
		c.Name = JoinColumnName(leftName, c.Name)
		cols = append(cols, c)
	}
	for _, c := range right.Columns {
		c.Name = JoinColumnName(rightName, c.Name)
		c.Key = false
		cols = append(cols, c)
	}
	return types.Schema{Columns: cols}
}

// JoinColumnName is the name of a side's column in a join's rows, as
// ksqlDB generates it: <source alias>_<column>.
// An empty source (the left of an N-way join, whose columns are named
// already) keeps the column's name.
func JoinColumnName(source, column string) string {
	if source == "" {
		return column
	}
	return source + "_" + column
}

func (j *Join) Schema() types.Schema { return j.out }
func (j *Join) Children() []Node     { return []Node{j.Left, j.Right} }
func (j *Join) String() string {
	rs := j.Right.Schema()
	w := ""
	if j.ForeignKey {
		w = " FOREIGN KEY"
	}
	if j.Window != nil {
		w = " " + j.Window.String()
	}
	on := fmt.Sprintf("%s = %s.%s", j.LeftKey, j.RightName, rs.Columns[j.RightKey].Name)
	for i := 1; i < len(j.LeftKeys); i++ {
		on += fmt.Sprintf(" AND %s = %s.%s", j.LeftKeys[i], j.RightName, rs.Columns[j.RightKeys[i]].Name)
	}
	if j.Residual != nil {
		on += " AND " + j.Residual.String()
	}
	return fmt.Sprintf("Join %s %s%s ON %s", j.Type, j.RightName, w, on)
}

// RightOffset is the position of the right's first column in the join's
// rows.
func (j *Join) RightOffset() int { return j.Left.Schema().Len() }

// OfTables reports whether the join's rows are a table's: a table–table
// join on the primary key or on a foreign key.
func (j *Join) OfTables() bool { return j.Tables || j.ForeignKey }
