package sql

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// Statement is one parsed statement. The concrete types below are the
// statements sqlstreams knows.
type Statement interface {
	// Text returns the statement's text as the user wrote it.
	Text() string
}

type base struct {
	text string
	// namePos is the offset of the name the statement acts on (the
	// stream, table, query or topic), for errors about it; -1 if none.
	namePos int
}

func (b base) Text() string { return b.text }

// NameError returns an error pointing at the statement's object name.
func NameError(st Statement, code, format string, args ...any) *Error {
	if b, ok := st.(interface{ baseOf() base }); ok && b.baseOf().namePos >= 0 {
		bb := b.baseOf()
		return errorAt(bb.text, bb.namePos, code, format, args...)
	}
	return Errorf(code, format, args...)
}

func (b base) baseOf() base { return b }

// ErrorAt positions err, an *Error without a position, at byte offset
// off of st's text (off < 0: at st's name); other errors are returned
// as they are.
func ErrorAt(st Statement, off int, err error) error {
	e, ok := err.(*Error)
	if !ok || e.Line > 0 {
		return err
	}
	if off < 0 {
		b, ok := st.(interface{ baseOf() base })
		if !ok || b.baseOf().namePos < 0 {
			return err
		}
		off = b.baseOf().namePos
	}
	return errorAt(st.Text(), off, e.Code, "%s", e.Msg)
}

// Property is one WITH (NAME=value) entry. Names are upper-cased.
type Property struct {
	Value string
	Pos   int // offset of the value, for errors
}

// Props are a statement's WITH properties, keyed by upper-case name.
type Props map[string]Property

// ColumnDef is one column of a CREATE STREAM/TABLE column list.
type ColumnDef struct {
	Name string
	Type types.Type
	Key  bool // KEY (streams) or PRIMARY KEY (tables)
	// Header is a HEADERS column or, with HeaderKey, a HEADER('key')
	// column (types.Column.Header).
	Header    bool
	HeaderKey string
	Pos       int
}

// CreateSource is CREATE [OR REPLACE] [SOURCE] STREAM|TABLE [IF NOT EXISTS]
// name (columns) WITH (…).
type CreateSource struct {
	base
	Kind        catalog.Kind
	Name        string
	OrReplace   bool
	IfNotExists bool
	Source      bool
	Columns     []ColumnDef
	Props       Props
	// The legacy fields below bind as commands recorded before plans
	// were bound: the engine sets them only when it migrates such a
	// command (engine/migrate.go, legacyOf). Remove them, and the
	// branches they reach, at plan-format version 2.

	// OriginalFieldNames keeps the names of columns (and STRUCT fields)
	// inferred from the schema registry as the schema writes them;
	// without it they are upper-cased, as ksqlDB does. The engine sets
	// it for statements replayed from commands recorded before.
	OriginalFieldNames bool
	// LegacyKeyColumns infers the fields of an AVRO or JSON_SR record key
	// schema as key columns, one per field; without it the key is one
	// column ROWKEY of the record's STRUCT type, as ksqlDB infers keys
	// (always unwrapped). The engine sets it for statements replayed from
	// commands recorded before the change.
	LegacyKeyColumns bool
	// LegacyFormats accepts FORMAT together with KEY_FORMAT or
	// VALUE_FORMAT, as commands recorded before they were refused were
	// (see Props.checkFormats).
	LegacyFormats bool
	// kindPos is the offset of SOURCE, STREAM or TABLE; colsEnd that of
	// the column list's closing parenthesis (0 without a list): for
	// AlterAsReplace.
	kindPos, colsEnd int
}

// CreateAs is CREATE [OR REPLACE] STREAM|TABLE name [WITH (…)] AS SELECT ….
type CreateAs struct {
	base
	Kind        catalog.Kind
	Name        string
	OrReplace   bool
	IfNotExists bool
	Props       Props
	Select      *Select
	// LegacyFormats is CreateSource.LegacyFormats.
	LegacyFormats bool
	// Materialized marks CREATE MATERIALIZED VIEW: a table, in the SQL
	// dialect (planner.DialectSQL).
	Materialized bool
}

// InsertSelect is INSERT INTO name SELECT ….
type InsertSelect struct {
	base
	Target string
	Select *Select
}

// InsertValues is INSERT INTO name [(columns)] VALUES (…), ….
type InsertValues struct {
	base
	Target  string
	Columns []string
	ins     *ast.InsertStmt
	// Params holds the values its placeholders read (see params.go);
	// set it before BindInsert. nParams and paramTypes are as Select's.
	Params     *expr.Params
	nParams    int
	paramTypes []types.Type
}

// Select is a SELECT with its streaming clauses.
type Select struct {
	base
	// Emit is "CHANGES", "FINAL" or "" (a pull query).
	Emit string
	// Limit is the row limit, or -1.
	Limit int64
	// Params holds the values its placeholders ($1, …; see params.go)
	// read when the bound query runs; set it before BindSelect. nil
	// when the statement has none (NumParams).
	Params *expr.Params
	// nParams is the number of parameters; paramTypes their types,
	// inferred by BindSelect.
	nParams    int
	paramTypes []types.Type
	// limitParam is n of LIMIT $n (0: none); BindSelect takes the
	// limit from the value bound (Limit stays -1).
	limitParam int

	// The legacy fields below (PositionalAliases, SQLNulls, LegacyFinal,
	// LegacyFunctions, LegacyJoinKeys, LegacyJoins, LegacyJoins2,
	// LegacyJoins3, LegacySum, LegacyDistinct, LegacyDistinctState) bind
	// as commands recorded before plans were bound: the engine sets them
	// only when it migrates such a command (engine/migrate.go,
	// legacyOf); a command with a plan is never bound again. Remove them,
	// and the branches they reach in the binder and in expr, at
	// plan-format version 2.

	// PositionalAliases binds as sqlstreams did before it followed
	// ksqlDB here: unnamed expressions are KSQL_COL_<position in the list>
	// (not KSQL_COL_0, KSQL_COL_1, … in order, s->f named F), SELECT *
	// after PARTITION BY keeps the input's column order, and a grouped
	// result's key columns follow the SELECT order (not GROUP BY's). The
	// engine sets it for queries replayed from commands recorded before,
	// so that their output columns and keys stay as they were.
	PositionalAliases bool
	// SQLNulls binds comparisons, IN and BETWEEN with SQL's NULL (a
	// NULL operand makes them NULL) instead of ksqlDB's (FALSE, and TRUE
	// for NOT IN and NOT BETWEEN; expr.KsqlNulls). The engine sets it for
	// queries replayed from commands recorded before sqlstreams followed
	// ksqlDB here, so that their output stays as it was. It also keeps
	// what else changed with it that would change a running query's
	// output columns: comparisons with an untyped NULL or of a number with
	// a STRING literal bind (ksqlDB refuses them), and CEIL and FLOOR of
	// a DECIMAL(p, s) give DECIMAL(p-s+1, 0), not DECIMAL(p, s).
	SQLNulls bool
	// LegacyFinal binds EMIT FINAL as sqlstreams did before it followed
	// ksqlDB (Kafka Streams' emit-on-window-close, KIP-825): a window
	// without GRACE PERIOD gets the default grace (not 0), and closed
	// windows are emitted at each commit (not as each record closes
	// them). The
	// engine sets it for queries replayed from commands recorded before,
	// so that their output stays as it was.
	LegacyFinal bool
	// LegacyFunctions binds as sqlstreams did before these followed
	// ksqlDB: the aggregates whose results changed keep their former
	// definitions (expr.LookupLegacyAggregate), collect limits are not
	// read, SELECT * lists a table function's output column too, and
	// ksqlDB's refusals (non-literal offset-aggregate arguments, GROUP BY
	// over KAFKA, composite intermediates over DELIMITED) are not made.
	// The engine sets it for queries replayed from commands recorded
	// before, so that they run and their output stays as it was.
	LegacyFunctions bool
	// CollectLimits caps COLLECT_LIST and COLLECT_SET (by name) at other
	// than 1,000 values: ksqlDB's ksql.functions.collect_list.limit and
	// ksql.functions.collect_set.limit, recorded with the command.
	CollectLimits map[string]int
	// LegacyJoinKeys binds a join's projection as sqlstreams did before
	// it followed ksqlDB's key rules for joins: SELECT * shows the
	// columns a repartition added (KSQL_COL_<n>), a join on two
	// expressions has no synthetic ROWKEY, and a persistent query's
	// projection may leave out the join key or name it twice. The engine
	// sets it for queries replayed from commands recorded before, so that
	// their output columns and keys stay as they were.
	LegacyJoinKeys bool
	// DefaultKeyFormat is ksql.persistence.default.format.key as the
	// statement was run with (recorded with its command): the key format
	// of a join's result whose sources have no key (default KAFKA).
	DefaultKeyFormat string
	// sink names a persistent query's result, for errors.
	sink string
	// LegacyJoins plans joins as sqlstreams did before the second
	// revision of join planning: a foreign-key join under a WHERE or a
	// GROUP BY without the store of its emitted rows that gives its
	// changes their old rows (planner.Join.OldValues), and stream–stream
	// join stores that keep whole input values (not
	// planner.Join.CompactRows). The engine sets it for queries replayed
	// from commands recorded before, so that their topology, store
	// formats and output stay as they were.
	LegacyJoins bool
	// LegacyJoins2 plans joins as the second revision of join planning
	// did (sqlstreams.joins=2, and every revision before it): a
	// stream–stream join's stores keep no header columns of its rows
	// (planner.Join.StoreHeaders). The engine sets it for queries
	// replayed from commands recorded before the third revision.
	LegacyJoins2 bool
	// LegacyJoins3 plans joins as the third revision of join planning
	// did (sqlstreams.joins=3, and every revision before it): a
	// stream–table join reads a table in a schema-registry key format
	// from the table's topic, the stream's keys written with the table
	// subject's latest key schema, not through a repartition of the
	// table (planner.Join.RepartitionTable), and SELECT * over a join of
	// windowed streams leaves out the sides' WINDOWSTART and WINDOWEND.
	// The engine sets it for queries replayed from commands recorded
	// before the fourth revision.
	LegacyJoins3 bool
	// NoFilterPushdown leaves a filter above the foreign-key joins it
	// reads (planner rule FilterBelowForeignKeyJoin skipped): a command
	// recorded before plans, migrated, or the replacement of a query
	// planned before the rule, whose topologies must keep their shape.
	NoFilterPushdown bool
	// LegacySum keeps SUM NULL for a group with no non-NULL values
	// (expr.KsqlSum); otherwise it is 0, as in ksqlDB
	// (expr.KsqlSumZero). The engine sets it for queries replayed from
	// commands recorded before sqlstreams.sum.
	LegacySum bool
	// LegacyDistinct aggregates a table with COUNT_DISTINCT and
	// COLLECT_SET as sqlstreams did before they kept a count per value
	// there (expr.AggregateFunction.ForTable): taking a row back out
	// forgets its value although another row of the group still holds
	// it. The engine sets it for queries replayed from commands recorded
	// before sqlstreams.table.distinct, whose stores hold that state.
	LegacyDistinct bool
	// LegacyDistinctState keeps every distinct value of a group's
	// COUNT(DISTINCT x), COUNT_DISTINCT or SUM(DISTINCT x) in the group's
	// state, as sqlstreams did before it kept them apart
	// (planner.Aggregate.DistinctValues without it). The engine sets it
	// for every command recorded before plans, and for CREATE OR REPLACE
	// of a query planned so, whose stores hold that state.
	LegacyDistinctState bool
	// dialect is the SQL the statement is written in, as binding found
	// it (planner.Dialect).
	dialect planner.Dialect
	// inSQL marks the SELECT of a derived table or CTE: the statement is
	// in the SQL dialect, whatever this SELECT's own dialect (a join of
	// two streams without WITHIN is a regular join there).
	inSQL bool
	// subquery marks a SELECT whose IN or EXISTS subquery was rewritten
	// into its join (subquery.go).
	subquery bool
	// subqueryCond is the condition rewritten, subqueryKey the outer
	// expression its table is looked up with (for errors).
	subqueryCond, subqueryKey ast.ExprNode
	// setAgg, for x IN (SELECT c FROM t …) over a column c that is not
	// t's key, is the aggregation SELECT c, COUNT(*) … GROUP BY c whose
	// rows the rewritten join reads as the table named setName
	// (subquery.go).
	setAgg  *ast.SelectStmt
	setName string
	// setScalar marks setAgg as a scalar subquery's global aggregate
	// (GROUP BY a constant, its row kept when its input empties).
	setScalar bool
	// global marks the SELECT of a global aggregate (bind_global.go),
	// bound with a GROUP BY of a constant.
	global bool
	// distinct marks the SELECT of a SELECT DISTINCT (bind_distinct.go),
	// bound as a GROUP BY of its columns.
	distinct bool
	// window is the WINDOW clause, or nil.
	window *windowClause
	// tvf is the window table function the SELECT reads (tvf.go; window
	// is its window), or nil.
	tvf *windowTVF
	// union holds the branches of a UNION ALL (bind_union.go; stmt is
	// the first), or nil.
	union []*ast.SelectStmt
	// branchPos are the offsets of a derived table's UNION ALL branches
	// (nil: the statement's own, branchPositions); derivedUnion marks
	// that SELECT (a derived table or CTE that is a UNION ALL).
	branchPos    []int
	derivedUnion bool
	// nestedTVFs are the window table functions of derived tables and
	// CTEs in the statement (tvf.go), each claimed by its SELECT.
	nestedTVFs []*windowTVF
	// unionBranch marks the copy of a UNION ALL's SELECT that binds one
	// branch.
	unionBranch bool
	// interval is a stream–stream join's Flink-style time bounds
	// (interval.go), or nil.
	interval *intervalJoin
	// within is a stream–stream join's WITHIN clause, or nil.
	within *withinClause
	// withins are all the WITHIN clauses, in order: one per stream–stream
	// join of an N-way join (within is the first).
	withins []*withinClause
	// persistent marks the SELECT of a CREATE … AS (set when binding it);
	// inserting, that of an INSERT INTO … SELECT.
	persistent, inserting bool
	// unsupported names a clause that parses but is planned by a later
	// issue (joins); binding refuses it.
	unsupported string
	unsupPos    int
	// fullJoin is the position of FULL [OUTER] JOIN's FULL, which TiDB
	// does not parse: it is cut out (the join parses as INNER) and
	// binding refuses it; -1 when absent. fullJoins are the positions
	// of every FULL of an N-way join, in order.
	fullJoin  int
	fullJoins []int
	stmt      *ast.SelectStmt
	rw        rewritten
	toks      []token
	// partitionBy and partitionEnd delimit the PARTITION BY expressions'
	// tokens (0 when absent); partitionExprs are their parse.
	partitionBy, partitionEnd int
	partitionExprs            []ast.ExprNode
}

// Show is SHOW|LIST STREAMS|TABLES|QUERIES|TOPICS|FUNCTIONS|PROPERTIES.
type Show struct {
	base
	What     string
	Extended bool
}

// Describe is DESCRIBE [EXTENDED] name, or DESCRIBE FUNCTION name.
type Describe struct {
	base
	Name     string
	Extended bool
	Function bool
}

// Explain is EXPLAIN query_id or EXPLAIN statement.
type Explain struct {
	base
	QueryID string
	Stmt    Statement
}

// SetProperty is SET 'name' = 'value'.
type SetProperty struct {
	base
	Name, Value string
	// ValuePos is the value's offset in the text.
	ValuePos int
}

// UnsetProperty is UNSET 'name'.
type UnsetProperty struct {
	base
	Name string
}

// Drop is DROP STREAM|TABLE [IF EXISTS] name [DELETE TOPIC].
type Drop struct {
	base
	Kind        catalog.Kind
	Name        string
	IfExists    bool
	DeleteTopic bool
}

// Terminate is TERMINATE query_id or TERMINATE ALL.
type Terminate struct {
	base
	QueryID string
	All     bool
}

// Pause is PAUSE query_id|ALL, or with Resume set RESUME query_id|ALL
// (ksqlDB 0.29's statements).
type Pause struct {
	base
	QueryID string
	All     bool
	Resume  bool
}

// ResetQuery is RESET QUERY query_id: the query starts over, as Kafka's
// application reset tool would leave it (internal topics, local state
// and committed offsets deleted; input read again from
// auto.offset.reset). It is not recorded in the command topic: it
// changes no catalog entry.
type ResetQuery struct {
	base
	QueryID string
}

// Print is PRINT topic [FROM BEGINNING] [INTERVAL n] [LIMIT n].
type Print struct {
	base
	// Topic is the topic name as written (quoted names keep their case;
	// unquoted ones are tried as written, then upper-cased).
	Topic         string
	Quoted        bool
	FromBeginning bool
	Interval      int64 // print every Interval-th record (default 1)
	Limit         int64 // -1 for none
}

// skipRules are the planner rules the statement is planned without.
func (s *Select) skipRules() []string {
	if s.NoFilterPushdown {
		return []string{planner.RuleFilterBelowForeignKeyJoin}
	}
	return nil
}
