package engine

import (
	"context"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// Prepared is a statement prepared once to be run many times, with
// values for its placeholders ($1, $2, …, or ?) given by Bind. The
// placeholders are expression nodes of the bound query (expr.Param),
// never text: a pull query over a table is parsed, bound and planned
// once (see Pull), and each run reads the values bound; one that reads
// one row by key, WHERE key = $n, looks the bound key up in the table's
// store. A statement without placeholders that is not such a pull query
// is run as Execute runs its text. A Prepared keeps reusable buffers, so
// it is used by one goroutine at a time.
type Prepared struct {
	e     *Engine
	sess  *Session
	text  string
	types []types.Type
	cols  []types.Column
	pull  *Pull // nil: run the text
	// insert is an INSERT … VALUES with placeholders, bound again at
	// each run with the values in params.
	insert *sql.InsertValues
	params *expr.Params
}

var _ Preparer = (*Engine)(nil)

// Prepare parses and plans text, one statement, for many runs in s.
// Placeholders are accepted in a pull query over a table (SELECT without
// EMIT) and in INSERT … VALUES (typed like the columns they are values
// of; the statement is bound again, not parsed, at each run); elsewhere
// they are an error. Errors are those Execute would
// report where the statement is at fault.
func (e *Engine) Prepare(ctx context.Context, s *Session, text string) (*Prepared, error) {
	st, err := sql.Parse(text)
	if err != nil {
		return nil, err
	}
	p := &Prepared{e: e, sess: s, text: text}
	if iv, ok := st.(*sql.InsertValues); ok && iv.NumParams() > 0 {
		return e.prepareInsert(p, iv)
	}
	sel, isSelect := st.(*sql.Select)
	if !isSelect && sql.HasPlaceholder(text) {
		return nil, errParamsPullOnly()
	}
	if !isSelect || sel.NumParams() == 0 {
		if pl, err := e.preparePullOf(s, st); err == nil {
			p.pull, p.cols = pl, pl.Columns()
			return p, nil
		}
		cols, err := e.Describe(ctx, s, text)
		if err != nil {
			return nil, err
		}
		p.cols = cols
		return p, nil
	}
	pl, err := e.preparePull(s, sel)
	if err == ErrNotPull {
		return nil, errParamsPullOnly()
	}
	if err != nil {
		return nil, err
	}
	p.pull, p.cols, p.types = pl, pl.Columns(), sel.ParamTypes()
	return p, nil
}

// prepareInsert prepares an INSERT … VALUES with placeholders: bound
// once here for its parameters' types (the columns they are values of)
// and its errors, and again at each run with the values bound.
func (e *Engine) prepareInsert(p *Prepared, iv *sql.InsertValues) (*Prepared, error) {
	target, ok := e.cat.Source(iv.Target)
	if !ok {
		return nil, sql.NameError(iv, sql.CodeUndefinedTable, "stream or table %s does not exist", iv.Target)
	}
	p.params = &expr.Params{Values: make([]types.Datum, iv.NumParams())}
	clearParams(p.params.Values)
	iv.Params = p.params
	if _, err := sql.BindInsert(iv, target); err != nil {
		return nil, err
	}
	p.insert, p.types = iv, iv.ParamTypes()
	return p, nil
}

// errParamsPullOnly refuses placeholders where Prepare does not take them.
func errParamsPullOnly() error {
	return sql.Errorf(sql.CodeFeatureNotSupport, "parameters ($n) are supported only in pull queries over tables and INSERT … VALUES")
}

// preparePullOf plans st when it is a pull query over a table.
func (e *Engine) preparePullOf(s *Session, st sql.Statement) (*Pull, error) {
	sel, ok := st.(*sql.Select)
	if !ok {
		return nil, ErrNotPull
	}
	return e.preparePull(s, sel)
}

// ParamTypes returns the types of the statement's parameters, $1 first:
// inferred from where each stands (compared with a column, the column's
// type), else STRING, as Postgres takes an unknown parameter as text.
func (p *Prepared) ParamTypes() []types.Type { return p.types }

// Columns returns the columns the statement returns, nil when it returns
// no rows.
func (p *Prepared) Columns() []types.Column { return p.cols }

// IsInsert reports whether the statement is an INSERT … VALUES with
// parameters.
func (p *Prepared) IsInsert() bool { return p.insert != nil }

// Pull returns the plan of a pull query, nil for other statements.
func (p *Prepared) Pull() *Pull { return p.pull }

// Bound is a Prepared with values for its parameters, ready to run.
type Bound struct {
	p      *Prepared
	values []types.Datum
}

// Bind gives the statement values for its parameters, one per
// ParamTypes entry, each a datum of that type (NULL for SQL NULL). The
// values are read when the Bound runs, not copied.
func (p *Prepared) Bind(values []types.Datum) (Bound, error) {
	if len(values) != len(p.types) {
		return Bound{}, sql.Errorf(codeProtocolViolation, "bind message supplies %d parameters, but prepared statement requires %d", len(values), len(p.types))
	}
	return Bound{p: p, values: values}, nil
}

// codeProtocolViolation is Postgres's protocol_violation.
const codeProtocolViolation = "08P01"

// Run runs the bound statement. A pull query whose table was dropped or
// replaced since it was prepared returns ErrStale.
func (b Bound) Run(ctx context.Context, w ResultWriter) (Result, error) {
	p := b.p
	if p.insert != nil {
		copy(p.params.Values, b.values)
		defer clearParams(p.params.Values)
		return p.e.insertValues(ctx, p.insert)
	}
	if p.pull == nil {
		return p.e.Execute(ctx, p.sess, p.text, w)
	}
	pl := p.pull
	if pl.params != nil {
		copy(pl.params.Values, b.values)
		defer clearParams(pl.params.Values)
	}
	if n := pl.KeyParam(); n > 0 {
		return pl.RunKey(ctx, b.values[n-1], w)
	}
	return pl.Run(ctx, w)
}
