package engine

import (
	"context"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// ResultWriter receives what a statement returns. The engine calls Columns
// once, before any Row, for statements that return rows, then Row per row.
// A push query calls Row as records arrive, until its LIMIT, until ctx is
// cancelled or until Row returns an error (the client went away).
type ResultWriter interface {
	Columns(cols []types.Column) error
	// Row receives one row laid out by the columns; it and the bytes it
	// references are valid only during the call.
	Row(row types.Row) error
}

// Result is how a statement ended.
type Result struct {
	// Tag is the Postgres command tag: "SELECT 3", "CREATE STREAM", "INSERT 0 1", …
	Tag string
	// Value is the typed result of SHOW, DESCRIBE and EXPLAIN (one of
	// *SourceList, *QueryList, *TopicList, *PropertyList, *FunctionList,
	// *FunctionDescription, *SourceDescription, *Plan; see results.go),
	// the same data the rows sent to the ResultWriter render; nil for
	// other statements.
	Value Tabular
	// TablePull marks a pull query answered from a table's state, whose
	// answer ksqlDB's /query ends without a final message (a push query
	// and a pull query scanning a stream end with one).
	TablePull bool
	// Change is what a statement that changes the catalog (CREATE,
	// DROP, INSERT INTO … SELECT, TERMINATE, PAUSE, RESUME, CREATE|DROP
	// TYPE) did, nil for other statements, so that servers need not
	// compare the catalog before and after.
	Change *Change
}

// Change is what a catalog-changing statement did.
type Change struct {
	// Source is the stream or table the statement created, replaced,
	// dropped or inserted into ("" for TERMINATE, PAUSE, RESUME and
	// types), Kind its kind and Topic its topic.
	Source string
	Kind   catalog.Kind
	Topic  string
	// Existed reports that Source existed before the statement: a
	// CREATE … IF NOT EXISTS that did nothing, a CREATE OR REPLACE, a
	// DROP that dropped it. False for a DROP … IF EXISTS that found
	// nothing.
	Existed bool
	// QueryID is the persistent query the statement started: that of a
	// CREATE … AS SELECT or INSERT INTO … SELECT, the query keeping a
	// CREATE TABLE's state (CST_…), the replaced query of CREATE OR
	// REPLACE; "" when none.
	QueryID string
	// Queries are the queries TERMINATE, PAUSE or RESUME acted on, and
	// the query a DROP stopped.
	Queries []string
	// Offset is the statement's offset in the command topic (ksqlDB's
	// command sequence number); -1 when nothing was recorded (IF [NOT]
	// EXISTS that did nothing, headless mode).
	Offset int64
}

// Session is one client's state: the properties SET on it. A session is
// used by one statement at a time.
type Session struct {
	// Props holds session properties set with SET 'name'='value', such
	// as auto.offset.reset, and the server's defaults of the others
	// (Config.Properties) once the engine has seen the session.
	Props map[string]string

	seeded   bool
	defaults map[string]string // the server's, as seeded
}

// seed gives s the server's property defaults it does not set itself,
// the first time the engine sees it.
func (e *Engine) seed(s *Session) {
	if s.seeded {
		return
	}
	s.seeded, s.defaults = true, e.cfg.Properties
	for k, v := range s.defaults {
		if _, set := s.Props[k]; !set {
			s.Props[k] = v
		}
	}
}

// NewSession returns an empty session.
func NewSession() *Session { return &Session{Props: map[string]string{}} }

// Executor is what servers and the shell need of the engine. *Engine
// implements it.
type Executor interface {
	// Execute runs one statement (no trailing semicolon needed). Errors
	// are *sql.Error where the statement is at fault.
	Execute(ctx context.Context, s *Session, stmt string, w ResultWriter) (Result, error)
	// ExecuteStatement runs a statement parsed with sql.Parse, as
	// Execute runs its text; a caller that parsed the statement to
	// decide what to do with it does not parse it again. The statement
	// is used once: the engine may annotate it.
	ExecuteStatement(ctx context.Context, s *Session, st sql.Statement, w ResultWriter) (Result, error)
	// Describe returns the columns stmt would return without running it,
	// or nil when it returns no rows.
	Describe(ctx context.Context, s *Session, stmt string) ([]types.Column, error)
}

// Preparer is implemented by executors that prepare statements with
// parameters (*Engine); see Prepared.
type Preparer interface {
	Prepare(ctx context.Context, s *Session, text string) (*Prepared, error)
}
