package engine

import (
	"context"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// pull answers a pull query from a table's materialized state: only what
// committed transactions wrote, read from this instance's stores and,
// for the partitions other instances own, from theirs (see route.go). It
// runs the query as a Pull planned for one run: the one pull path.
func (e *Engine) pull(ctx context.Context, s *Session, st *sql.Select, q *planner.Query, src *catalog.Source, w ResultWriter) (Result, error) {
	p, err := e.newPull(q, src, st.Text(), s.Props, false)
	if err != nil {
		return Result{}, err
	}
	return p.Run(ctx, w)
}

// pullPartitions answers a forwarded pull query from the partitions
// parts of this instance's stores (of its standby copies, when sb is
// set), each of which must be here.
func (e *Engine) pullPartitions(ctx context.Context, q *planner.Query, text string, w ResultWriter, parts []int32, sb *standbyRead) (Result, error) {
	src := planner.Sources(q.Root)[0]
	if src.Kind == catalog.Stream {
		return Result{}, ErrNotPull
	}
	p, err := e.newPull(q, src, text, nil, false)
	if err != nil {
		return Result{}, err
	}
	p.only, p.sb = parts, sb
	return p.Run(ctx, w)
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
	encode := func(l expr.Expr) ([]byte, bool) {
		e := l
		if !l.Type().Equal(key.Type) {
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
