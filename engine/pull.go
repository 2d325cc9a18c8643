package engine

import (
	"context"
	"errors"
	"strconv"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// pull answers a pull query from a table's materialized state: only what
// committed transactions wrote, read from this instance's stores and,
// for the partitions other instances own, from theirs (see route.go).
func (e *Engine) pull(ctx context.Context, s *Session, st *sql.Select, q *planner.Query, src *catalog.Source, w ResultWriter) (Result, error) {
	return e.runPull(ctx, s.Props, st.Text(), q, src, w, nil, nil)
}

// pullPartitions answers a forwarded pull query from the partitions
// parts of this instance's stores, each of which must be here.
func (e *Engine) pullPartitions(ctx context.Context, q *planner.Query, text string, w ResultWriter, parts []int32, sb *standbyRead) (Result, error) {
	src := planner.Sources(q.Root)[0]
	if src.Kind == catalog.Stream {
		return Result{}, ErrNotPull
	}
	return e.runPull(ctx, nil, text, q, src, w, parts, sb)
}

// runPull runs a pull query: routed to every partition's owner when
// only is nil, else over the partitions only of this instance (of its
// standby copies, when sb is set).
func (e *Engine) runPull(ctx context.Context, props map[string]string, text string, q *planner.Query, src *catalog.Source, w ResultWriter, only []int32, sb *standbyRead) (Result, error) {
	mat, err := e.materializer(src)
	if err != nil {
		return Result{}, err
	}
	topo, err := physical.BuildPush(q)
	if err != nil {
		return Result{}, err
	}
	sel, err := keySelection(q, src)
	if err != nil {
		return Result{}, err
	}
	var plan pullPlan
	if only != nil {
		if err := e.selectHere(mat, src, only, sb, &sel); err != nil {
			return Result{}, err
		}
	} else {
		var keys [][]byte
		if sel.Partitions > 0 {
			keys = sel.Keys
		}
		if plan, err = e.planPull(ctx, mat, src, keys, props); err != nil {
			return Result{}, err
		}
		sel.Except, sel.Whole = plan.except, plan.n
	}
	if err := w.Columns(pullColumns(q)); err != nil {
		return Result{}, err
	}
	n := 0
	emit := func(row types.Row) error {
		if topo.Limit >= 0 && int64(n) >= topo.Limit {
			return errLimitReached
		}
		n++
		return w.Row(row)
	}
	err = e.pullUnavailable(mat, mat.Pull(ctx, topo, src.Name, sel, emit))
	if err == nil && (len(plan.remote) > 0 || len(plan.standby) > 0) {
		err = e.forward(ctx, mat, text, props, q.Root.Schema().Columns, plan, emit)
	}
	if err != nil && !errors.Is(err, errLimitReached) {
		return Result{}, err
	}
	return Result{Tag: "SELECT " + strconv.Itoa(n), TablePull: true}, nil
}

// keySelection turns what the WHERE says about the key into serialized
// keys to look up, or a range of them. Ranges are used only where the
// serialized order is the key's order (a STRING key in the KAFKA format);
// otherwise the whole table is scanned and the WHERE filters it.
func keySelection(q *planner.Query, src *catalog.Source) (exec.KeySelection, error) {
	if src.Windowed() {
		// Stored keys carry their window: scan (a window store only the
		// window starts the WHERE allows), and let the WHERE pick.
		var sel exec.KeySelection
		sel.WindowFrom, sel.WindowTo, sel.Windowed = planner.PullWindowFilter(q)
		return sel, nil
	}
	f, ok := planner.PullKeyFilter(q)
	if !ok {
		return exec.KeySelection{}, nil
	}
	keys := src.Schema.KeyIndexes()
	key := src.Schema.Columns[keys[0]]
	enc, err := types.NewEncoderOpts(src.KeyFormat, src.Schema, keys, src.KeyOptions)
	if err != nil {
		return exec.KeySelection{}, err
	}
	row := make(types.Row, len(src.Schema.Columns))
	encode := func(l *expr.Literal) ([]byte, bool) {
		e := expr.Expr(l)
		if !l.T.Equal(key.Type) {
			c, err := expr.NewCast(l, key.Type)
			if err != nil {
				return nil, false
			}
			e = c
		}
		ev, err := expr.Compile(e)
		if err != nil {
			return nil, false
		}
		d, err := ev(nil)
		if err != nil || d.Null {
			return nil, false
		}
		row[keys[0]] = d
		b, err := enc.Encode(nil, row)
		return b, err == nil
	}
	if f.Points != nil {
		sel := exec.KeySelection{Keys: [][]byte{}, Partitions: src.Partitions}
		for _, p := range f.Points {
			if b, ok := encode(p); ok {
				sel.Keys = append(sel.Keys, b)
			}
		}
		return sel, nil
	}
	if src.KeyFormat != types.FormatKafka || key.Type.Kind != types.String {
		return exec.KeySelection{}, nil
	}
	var sel exec.KeySelection
	if f.Lower != nil {
		if b, ok := encode(f.Lower); ok {
			if !f.LowerIncl {
				b = append(b, 0)
			}
			sel.Start = b
		}
	}
	if f.Upper != nil {
		if b, ok := encode(f.Upper); ok {
			if f.UpperIncl {
				b = append(b, 0)
			}
			sel.End = b
		}
	}
	return sel, nil
}

// pullColumns are a pull query's result columns as ksqlDB's header
// shows them: WINDOWSTART and WINDOWEND of a windowed table, selected
// as they are, are key columns too.
func pullColumns(q *planner.Query) []types.Column {
	cols := q.Root.Schema().Columns
	n := q.Root
	for {
		if p, ok := n.(*planner.Project); ok {
			in := p.Input.Schema()
			out := append([]types.Column(nil), cols...)
			for i, e := range p.Exprs {
				if c, ok := e.(*expr.Column); ok && i < len(out) && c.Index < len(in.Columns) && in.Columns[c.Index].Window {
					out[i].Key = true
				}
			}
			return out
		}
		ch := n.Children()
		if len(ch) != 1 || len(ch[0].Schema().Columns) != len(cols) {
			return cols
		}
		n = ch[0]
	}
}
