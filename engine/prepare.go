package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/planner"

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
// store. Another SELECT with placeholders (a push query, a pull query
// over a stream) is bound again at each run, its placeholders reading
// that run's values, and builds its topology as Execute does. LIMIT $n
// takes the value bound. A statement without placeholders that is not
// a pull query over a table is run as Execute runs its text. A Prepared
// keeps reusable buffers, so it is used by one goroutine at a time.
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
	// query: a SELECT with placeholders that is not a pull query over
	// a table, parsed and bound again at each run (runQuery).
	query bool
	push  bool // query is a push query (EMIT)
}

var _ Preparer = (*Engine)(nil)

// Prepare parses and plans text, one statement, for many runs in s.
// Placeholders are accepted in a SELECT — a pull query over a table or
// a stream, or a push query; in its expressions and as its LIMIT — and
// in INSERT … VALUES (typed like the columns they are values of; the
// statement is bound again, not parsed, at each run); in any other
// statement they are an error (42P02) naming the statement. Errors are
// those Execute would report where the statement is at fault.
func (e *Engine) Prepare(ctx context.Context, s *Session, text string) (*Prepared, error) {
	e.seed(s)
	st, err := sql.Parse(text)
	if err != nil {
		if k := statementKind(text); k != "SELECT" && k != "INSERT INTO" && k != "WITH" && sql.HasPlaceholder(text) {
			// A statement that takes no placeholders, whose grammar
			// has none: refused as such, not as a syntax error.
			return nil, errParamsIn(text)
		}
		return nil, err
	}
	p := &Prepared{e: e, sess: s, text: text}
	if iv, ok := st.(*sql.InsertValues); ok && iv.NumParams() > 0 {
		return e.prepareInsert(p, iv)
	}
	sel, isSelect := st.(*sql.Select)
	if !isSelect && sql.HasPlaceholder(text) {
		return nil, errParamsIn(st.Text())
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
	params := newParams(sel.NumParams())
	sel.Params = params
	q, err := sql.BindSelect(sel, e.cat)
	if err != nil {
		return nil, err
	}
	p.types = sel.ParamTypes()
	if src := planner.Sources(q.Root)[0]; q.Emit == "" && src.Kind != catalog.Stream {
		pl, err := e.pullOfBound(s, sel, q, src, params)
		if err != nil {
			return nil, err
		}
		p.pull, p.cols = pl, pl.Columns()
		return p, nil
	}
	p.query, p.push, p.cols = true, q.Emit != "", q.Root.Schema().Columns
	return p, nil
}

// newParams returns n parameter values, NULL while none is bound.
func newParams(n int) *expr.Params {
	params := &expr.Params{Values: make([]types.Datum, n)}
	clearParams(params.Values)
	return params
}

// prepareInsert prepares an INSERT … VALUES with placeholders: bound
// once here for its parameters' types (the columns they are values of)
// and its errors, and again at each run with the values bound.
func (e *Engine) prepareInsert(p *Prepared, iv *sql.InsertValues) (*Prepared, error) {
	target, ok := e.cat.Source(iv.Target)
	if !ok {
		return nil, sql.NameError(iv, sql.CodeUndefinedTable, "stream or table %s does not exist", iv.Target)
	}
	p.params = newParams(iv.NumParams())
	iv.Params = p.params
	if _, err := sql.BindInsert(iv, target); err != nil {
		return nil, err
	}
	p.insert, p.types = iv, iv.ParamTypes()
	return p, nil
}

// errParamsIn refuses placeholders in text, a statement that takes none,
// as Postgres does: 42P02, naming the statement.
func errParamsIn(text string) error {
	return sql.Errorf(codeUndefinedParameter, "parameters ($n) are not supported in %s; only SELECT and INSERT … VALUES take them", statementKind(text))
}

// codeUndefinedParameter is Postgres's undefined_parameter.
const codeUndefinedParameter = "42P02"

// statementKind names a statement by its leading keywords: "CREATE
// STREAM", "PRINT", "INSERT INTO … SELECT".
func statementKind(text string) string {
	var words []string
	for _, f := range strings.Fields(text) {
		w := strings.ToUpper(strings.TrimRight(f, ";("))
		if w == "" || strings.IndexFunc(w, func(r rune) bool { return r < 'A' || r > 'Z' }) >= 0 {
			break
		}
		words = append(words, w)
		if len(words) == 2 && words[0] != "CREATE" && words[0] != "DROP" && words[0] != "INSERT" {
			break
		}
		if w == "STREAM" || w == "TABLE" || w == "VIEW" || w == "TYPE" || w == "INTO" || len(words) == 4 {
			break
		}
	}
	if len(words) == 0 {
		return "this statement"
	}
	if len(words) == 2 && words[0] != "CREATE" && words[0] != "DROP" && words[0] != "INSERT" {
		words = words[:1]
	}
	return strings.Join(words, " ")
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
	if p.query {
		return p.runQuery(ctx, b.values, w)
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

// runQuery runs a SELECT with placeholders that is not a pull query
// over a table: parsed and bound again with values of its own, so runs
// of one Prepared may overlap (cursors), each building its topology.
func (p *Prepared) runQuery(ctx context.Context, values []types.Datum, w ResultWriter) (Result, error) {
	st, err := sql.Parse(p.text)
	if err != nil {
		return Result{}, err
	}
	sel, ok := st.(*sql.Select)
	if !ok || sel.NumParams() != len(values) {
		return Result{}, sql.Errorf(sql.CodeInternal, "prepared statement changed: %s", p.text)
	}
	sel.Params = &expr.Params{Values: slices.Clone(values)}
	q, err := sql.BindSelect(sel, p.e.cat)
	if err != nil {
		return Result{}, err
	}
	return p.e.queryBound(ctx, p.sess, sel, q, w)
}

// IsQuery reports whether the statement is a SELECT with placeholders
// that runs as a push query or a pull query over a stream: each run
// binds it again and builds its topology.
func (p *Prepared) IsQuery() bool { return p.query }

// IsPush reports whether the statement is a push query (EMIT) with
// placeholders.
func (p *Prepared) IsPush() bool { return p.push }

// CastText converts text to a datum of type t as the engine casts a
// string (CAST('…' AS t)): how a protocol gives a parameter of a type it
// has no parser of its own for (DATE, TIME, TIMESTAMP, …). ok is false
// when the engine has no cast from a string to t.
func CastText(text string, t types.Type) (d types.Datum, ok bool, err error) {
	x, err := expr.NewCast(&expr.Literal{V: types.StringDatum(text), T: types.StringType}, t)
	if err != nil {
		return types.Datum{}, false, nil
	}
	ev, err := expr.Compile(x)
	if err != nil {
		return types.Datum{}, true, err
	}
	d, err = ev(nil)
	if err != nil {
		return types.Datum{}, true, err
	}
	return d.Clone(), true, nil
}
