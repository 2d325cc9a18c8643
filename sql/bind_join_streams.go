package sql

import (
	"strconv"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// bindStreamJoin binds a join of two streams WITHIN a window, on their
// key columns, any of INNER, LEFT, RIGHT and FULL OUTER. Joins on other
// columns (which need both sides repartitioned) are refused for now.
func (b *binder) bindStreamJoin(j *ast.Join, js *joinScope, typ string, w *withinClause) (*planner.Join, error) {
	left, right := &js.sides[0], &js.sides[1]
	switch {
	case j.NaturalJoin || j.Using != nil:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "joins take ON left_expression = right_expression; NATURAL and USING are not supported")
	case j.On == nil:
		return nil, b.errAt("JOIN", CodeSyntaxError, "a join needs ON left_expression = right_expression")
	case left.src.Windowed() || right.src.Windowed():
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "joins of windowed sources are not supported yet")
	case left.src.Topic == right.src.Topic:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Can not join '%s' to '%s': both read topic %s", left.src.Name, right.src.Name, left.src.Topic)
	}
	b.join = js
	b.schema = planner.JoinSchema(left.schema, right.schema, left.name, right.name)
	js.on = true
	lk, rk, err := b.joinCondition(j.On.Expr)
	js.on = false
	if err != nil {
		return nil, err
	}
	if lt, rt := lk.Type(), rk.Type(); !lt.Equal(rt) {
		return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: types don't match. Got %s{%s} = %s{%s}.", b.show(lk), lt, b.show(rk), rt)
	}
	lkeys, rkeys := left.src.Schema.KeyIndexes(), right.src.Schema.KeyIndexes()
	lkc, lok := lk.(*expr.Column)
	rkc, rok := rk.(*expr.Column)
	if !lok || !rok || len(lkeys) != 1 || len(rkeys) != 1 || lkc.Index != lkeys[0] || rkc.Index != right.offset+rkeys[0] {
		return nil, b.errAt("ON", CodeFeatureNotSupport, "stream-stream joins on anything but both streams' key columns (which needs both repartitioned) are not supported yet. Got %s = %s; PARTITION BY the join expressions in CREATE STREAM … AS SELECT first", b.show(lk), b.show(rk))
	}
	if lp, rp := left.src.Partitions, right.src.Partitions; lp > 0 && rp > 0 && lp != rp {
		return nil, b.errAt(right.src.Name, CodeFeatureNotSupport, "Can't join %s with %s since the number of partitions don't match. %s partitions = %d; %s partitions = %d. Please repartition either one so that the number of partitions match.",
			left.src.Name, right.src.Name, left.src.Name, lp, right.src.Name, rp)
	}
	if lf, rf := left.src.KeyFormat, right.src.KeyFormat; lf != rf {
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Can't join %s with %s: their key formats differ (%s, %s); stream-stream joins that repartition are not supported yet", left.src.Name, right.src.Name, lf, rf)
	}
	switch f := right.src.KeyFormat; f {
	case types.FormatKafka, types.FormatJSON, types.FormatDelimited:
	default:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "stream-stream joins on %s keys are not supported yet", f)
	}
	win := planner.JoinWindow{BeforeMs: w.before, AfterMs: w.after, GraceMs: w.grace}
	if w.grace < 0 {
		win.GraceMs, win.Legacy = planner.LegacyJoinGraceMs, true
	}
	jt := planner.JoinType(typ)
	synth := ""
	if jt == planner.FullJoin {
		synth = "ROWKEY"
		for n := 1; left.schema.Index(synth) >= 0 || right.schema.Index(synth) >= 0; n++ {
			synth = "ROWKEY_" + strconv.Itoa(n)
		}
	}
	join, err := planner.NewStreamJoin(jt, planner.NewScan(left.src), planner.NewScan(right.src), left.name, right.name, lkeys[0], rkeys[0], synth, win)
	if err != nil {
		return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: %v", err)
	}
	if synth != "" {
		js.synth, js.synthName = join.Schema().Len()-1, synth
	}
	b.schema = join.Schema()
	return join, nil
}
