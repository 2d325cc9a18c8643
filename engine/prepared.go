package engine

import (
	"context"
	"errors"
	"math"
	"strconv"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// PullPreparer is implemented by executors that plan a pull query once
// and run it many times (*Engine); servers use it for prepared
// statements.
type PullPreparer interface {
	// PreparePull parses, binds and plans text, which must be a pull
	// query over a materialized table; any other statement, or one that
	// would fail, returns an error (run it with Execute to report that
	// error as usual).
	PreparePull(s *Session, text string) (*Pull, error)
}

var _ PullPreparer = (*Engine)(nil)

// ErrNotPull is returned by PreparePull for a statement that is not a pull
// query.
var ErrNotPull = errors.New("engine: not a pull query")

// ErrStale is returned by a Pull whose table was dropped or replaced
// since it was prepared; prepare it again (or Execute its text).
var ErrStale = errors.New("engine: the table of a prepared pull query has changed since it was prepared")

// Pull is a pull query parsed, bound, planned and built once, to be run
// many times with Run, or, when it reads one row by key (WHERE key =
// literal, see PointKey), with RunKey for any key: a lookup of the key's
// serialized bytes in the table's store, with no parsing, planning or
// topology building per execution. It sees the table's committed state
// at each run, as Execute does. A Pull keeps reusable buffers, so it is
// used by one goroutine at a time.
type Pull struct {
	e      *Engine
	src    *catalog.Source
	cols   []types.Column
	runner *exec.PullRunner
	sel    exec.KeySelection

	point        bool
	*pointLookup // when point

	w      ResultWriter // during a run
	n      int
	emitFn func(types.Row) error // p.emit, bound once

	// For forwarding to the owners of partitions elsewhere: the text,
	// the session's properties when prepared, the LIMIT (-1: none).
	text  string
	props map[string]string
	limit int64
	// only, during a forwarded run, is the partitions to read here.
	only []int32
	// sb, with only, reads standby copies.
	sb *standbyRead

	// For a statement with placeholders (see Prepared): the values they
	// read, and the bound query, whose key selection is made at each
	// run from them.
	params *expr.Params
	ptypes []types.Type
	q      *planner.Query
	// limitParam is n of LIMIT $n (0: none): limit is its value at
	// each run.
	limitParam int
}

// pointLookup is what RunKey needs of a Pull that reads one row by key;
// a Pull run once (Execute) has none.
type pointLookup struct {
	keyLit      types.Datum
	keyParam    int // the key is $keyParam, not keyLit (0: it is keyLit)
	keyType     types.Type
	keyIdx      int
	pointRunner *exec.PullRunner // the chain with the key comparison made TRUE
	enc         types.Encoder
	row         types.Row
	keys        [][]byte    // one reused key
	runKey      types.Datum // RunKey's key
	byKey       bool        // during RunKey
}

// PreparePull plans text, a pull query, for many runs; see Pull.
func (e *Engine) PreparePull(s *Session, text string) (*Pull, error) {
	e.seed(s)
	st, err := sql.Parse(text)
	if err != nil {
		return nil, err
	}
	sel, ok := st.(*sql.Select)
	if !ok {
		return nil, ErrNotPull
	}
	return e.preparePull(s, sel)
}

// preparePull plans sel, a pull query, for many runs, its placeholders
// reading the Pull's params.
func (e *Engine) preparePull(s *Session, sel *sql.Select) (*Pull, error) {
	var params *expr.Params
	if n := sel.NumParams(); n > 0 {
		params = newParams(n)
		sel.Params = params
	}
	q, err := sql.BindSelect(sel, e.cat)
	if err != nil {
		return nil, err
	}
	if q.Emit != "" {
		return nil, ErrNotPull
	}
	src := planner.Sources(q.Root)[0]
	if src.Kind == catalog.Stream {
		return nil, ErrNotPull
	}
	return e.pullOfBound(s, sel, q, src, params)
}

// pullOfBound plans sel, a pull query over the table src bound as q with
// its placeholders reading params (nil: it has none), for many runs.
func (e *Engine) pullOfBound(s *Session, sel *sql.Select, q *planner.Query, src *catalog.Source, params *expr.Params) (*Pull, error) {
	p, err := e.newPull(q, src, sel.Text(), copyProps(s.Props), true)
	if err != nil {
		return nil, err
	}
	if params != nil {
		p.params, p.ptypes, p.limitParam = params, sel.ParamTypes(), sel.LimitParam()
		if !p.point {
			p.q = q // its key selection depends on the values
		}
	}
	return p, nil
}

// newPull plans q, a bound pull query over the table src, as a Pull;
// with point, for RunKey too when it reads one row by key. props are
// the session's properties, for routing and forwarding.
func (e *Engine) newPull(q *planner.Query, src *catalog.Source, text string, props map[string]string, point bool) (*Pull, error) {
	mat, err := e.materializer(src)
	if err != nil {
		return nil, err
	}
	topo, err := physical.BuildPush(q)
	if err != nil {
		return nil, err
	}
	ks, err := keySelection(q, src)
	if err != nil {
		return nil, err
	}
	runner, err := exec.NewPullRunner(topo)
	if err != nil {
		return nil, err
	}
	p := &Pull{e: e, src: src, cols: pullColumns(q), runner: runner, sel: ks,
		text: text, props: props, limit: topo.Limit}
	p.emitFn = p.emit
	if point {
		if err := p.preparePoint(q, src, mat); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// preparePoint sets up RunKey when q reads one row by key from a store
// kept under the table's serialized keys. It changes q's plan.
func (p *Pull) preparePoint(q *planner.Query, src *catalog.Source, mat *exec.Query) error {
	key, filter, ok := planner.PointLookup(q)
	if !ok || src.Windowed() || src.KeyFormat != types.FormatKafka || !mat.PointLookups(src.Name) {
		return nil
	}
	keys := src.Schema.KeyIndexes()
	if len(keys) != 1 {
		return nil
	}
	kt := src.Schema.Columns[keys[0]].Type
	if kt.Kind != types.Int && kt.Kind != types.Bigint && kt.Kind != types.String {
		return nil
	}
	enc, err := types.NewEncoderOpts(src.KeyFormat, src.Schema, keys, src.KeyOptions)
	if err != nil {
		return err
	}
	// The lookup by key does what the comparison did.
	filter.Predicate = &expr.Literal{V: types.BoolDatum(true), T: types.BooleanType}
	topo, err := physical.BuildPush(q)
	if err != nil {
		return err
	}
	r, err := exec.NewPullRunner(topo)
	if err != nil {
		return err
	}
	pt := &pointLookup{keyType: kt, keyIdx: keys[0]}
	switch k := key.(type) {
	case *expr.Literal:
		pt.keyLit = k.V.Clone()
	case *expr.Param:
		pt.keyParam = k.N
	default:
		return nil
	}
	p.point, p.pointLookup = true, pt
	p.pointRunner, p.enc = r, enc
	p.row = make(types.Row, len(src.Schema.Columns))
	p.keys = make([][]byte, 1)
	return nil
}

// materializer returns the running query that materializes src.
func (e *Engine) materializer(src *catalog.Source) (*exec.Query, error) {
	e.mu.Lock()
	mat := e.running[src.MaterializedBy]
	e.mu.Unlock()
	if src.MaterializedBy == "" || mat == nil {
		return nil, sql.Errorf(sql.CodeFeatureNotSupport, "table %s is not materialized, so it cannot answer pull queries", src.Name)
	}
	return mat, nil
}

// Columns returns the columns the query returns.
func (p *Pull) Columns() []types.Column { return p.cols }

// PointKey reports whether the query reads one row by key, and if so the
// key's type and the key value the statement was prepared with (none
// when the key is a parameter: KeyParam).
func (p *Pull) PointKey() (key types.Datum, t types.Type, ok bool) {
	if !p.point {
		return types.Datum{}, types.Type{}, false
	}
	return p.keyLit, p.keyType, true
}

// KeyParam returns n when the query reads one row by key and its key
// is the parameter $n (WHERE key = $n; run it with RunKey), else 0.
func (p *Pull) KeyParam() int {
	if !p.point {
		return 0
	}
	return p.keyParam
}

// Run runs the query as prepared.
func (p *Pull) Run(ctx context.Context, w ResultWriter) (Result, error) {
	sel := p.sel
	if p.q != nil {
		// The keys to read depend on the values bound.
		var err error
		if sel, err = keySelection(p.q, p.src); err != nil {
			return Result{}, err
		}
	}
	return p.run(ctx, p.runner, sel, w)
}

// RunKey runs a point query (PointKey) for key instead of the key it was
// prepared with. key is a datum of the key's type (an integer for an
// integer key; an INT key out of its range matches nothing); NULL
// matches nothing.
func (p *Pull) RunKey(ctx context.Context, key types.Datum, w ResultWriter) (Result, error) {
	if !p.point {
		return Result{}, errors.New("engine: RunKey on a pull query that does not read one key")
	}
	none := key.Null || p.keyType.Kind == types.Int && (key.I < math.MinInt32 || key.I > math.MaxInt32)
	if none {
		if _, err := p.current(); err != nil {
			return Result{}, err
		}
		if err := w.Columns(p.cols); err != nil {
			return Result{}, err
		}
		return Result{Tag: "SELECT 0", TablePull: true}, nil
	}
	p.row[p.keyIdx] = key
	p.runKey = key
	b, err := p.enc.Encode(p.keys[0][:0], p.row)
	p.row[p.keyIdx] = types.Datum{}
	if err != nil {
		return Result{}, err
	}
	p.keys[0] = b
	p.byKey = true
	defer func() { p.byKey = false }()
	return p.run(ctx, p.pointRunner, exec.KeySelection{Keys: p.keys, Partitions: p.src.Partitions}, w)
}

// current returns the query materializing the table, or ErrStale when the
// table is no longer the one prepared.
func (p *Pull) current() (*exec.Query, error) {
	if src, ok := p.e.cat.Source(p.src.Name); !ok || src != p.src {
		return nil, ErrStale
	}
	mat, err := p.e.materializer(p.src)
	if err != nil {
		return nil, ErrStale
	}
	return mat, nil
}

func (p *Pull) run(ctx context.Context, r *exec.PullRunner, sel exec.KeySelection, w ResultWriter) (Result, error) {
	mat, err := p.current()
	if err != nil {
		return Result{}, err
	}
	if n := p.limitParam; n > 0 {
		if p.limit, err = sql.ParamLimit(p.params.Values[n-1]); err != nil {
			return Result{}, err
		}
	}
	var plan pullPlan
	if p.only != nil {
		if err := p.e.selectHere(mat, p.src, p.only, p.sb, &sel); err != nil {
			return Result{}, err
		}
	} else {
		var keys [][]byte
		if sel.Partitions > 0 {
			keys = sel.Keys
		}
		if plan, err = p.e.planPull(ctx, mat, p.src, keys, p.props); err != nil {
			return Result{}, err
		}
		sel.Except, sel.Whole = plan.except, plan.n
	}
	if err := w.Columns(p.cols); err != nil {
		return Result{}, err
	}
	p.w, p.n = w, 0
	err = p.e.pullUnavailable(mat, mat.PullWith(ctx, r, p.src.Name, sel, p.emitFn))
	if err == nil && (len(plan.remote) > 0 || len(plan.standby) > 0) {
		err = p.forward(ctx, mat, plan, sel)
	}
	p.w = nil
	if err != nil && !errors.Is(err, errLimitReached) {
		return Result{}, err
	}
	return Result{Tag: selectTag(p.n), TablePull: true}, nil
}

// forward asks the owners of the plan's remote partitions: the prepared
// text, with the key of a RunKey and the values of its parameters.
func (p *Pull) forward(ctx context.Context, mat *exec.Query, plan pullPlan, sel exec.KeySelection) error {
	req := pullRequest{SQL: p.text, Props: p.props}
	byKey := p.point && p.byKey
	if p.params != nil && !(byKey && len(p.ptypes) == 1 && p.keyParam == 1) {
		cols := make([]types.Column, len(p.ptypes))
		for i, t := range p.ptypes {
			cols[i] = types.Column{Name: "P", Type: t}
		}
		c, err := newRowCodec(cols)
		if err != nil {
			return err
		}
		if req.Params, err = c.encode(p.params.Values); err != nil {
			return err
		}
	}
	if byKey {
		c, err := newRowCodec([]types.Column{{Name: "K", Type: p.keyType}})
		if err != nil {
			return err
		}
		vals, err := c.encode(types.Row{p.runKey})
		if err != nil {
			return err
		}
		req.Key = vals[0]
	}
	return p.e.forwardKey(ctx, mat, req, p.cols, plan, p.emitFn)
}

func (p *Pull) emit(row types.Row) error {
	if p.limit >= 0 && int64(p.n) >= p.limit {
		return errLimitReached
	}
	p.n++
	return p.w.Row(row)
}

// selectTag is "SELECT n", without allocating for the usual 0 and 1.
func selectTag(n int) string {
	switch n {
	case 0:
		return "SELECT 0"
	case 1:
		return "SELECT 1"
	}
	return "SELECT " + strconv.Itoa(n)
}

// clearParams sets parameter values to NULL, what a placeholder reads
// while nothing is bound.
func clearParams(vals []types.Datum) {
	for i := range vals {
		vals[i] = types.NullDatum
	}
}
