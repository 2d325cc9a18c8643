package sql

import (
	"strconv"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// bindStreamJoin binds a join of two streams WITHIN a window, on their
// key columns, any of INNER, LEFT, RIGHT and FULL OUTER. A side joined on
// anything but its key column is repartitioned by its ON expression
// first (keyed like the other side, or like the left when both are).
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
	// A side whose ON expression is not its key column is repartitioned
	// by it; so is the right when the key formats differ.
	lrep := !lok || len(lkeys) != 1 || lkc.Index != lkeys[0]
	rrep := !rok || len(rkeys) != 1 || rkc.Index != right.offset+rkeys[0]
	if !lrep && !rrep && left.src.KeyFormat != right.src.KeyFormat {
		rrep = true
	}
	if registryKeys(left.src, right.src) {
		// Both sides are written with one key schema (registryKeys).
		lrep, rrep = true, true
	}
	if lp, rp := left.src.Partitions, right.src.Partitions; !lrep && !rrep && lp > 0 && rp > 0 && lp != rp {
		return nil, b.errAt(right.src.Name, CodeFeatureNotSupport, "Can't join %s with %s since the number of partitions don't match. %s partitions = %d; %s partitions = %d. Please repartition either one so that the number of partitions match.",
			left.src.Name, right.src.Name, left.src.Name, lp, right.src.Name, rp)
	}
	for _, s := range []*joinSide{left, right} {
		switch f := s.src.KeyFormat; f {
		case types.FormatKafka, types.FormatJSON, types.FormatDelimited, types.FormatNone, types.FormatAvro, types.FormatProtobuf, types.FormatJSONSR:
		default:
			return nil, b.errAt("JOIN", CodeFeatureNotSupport, "stream-stream joins on %s keys are not supported yet", f)
		}
	}
	var leftNode, rightNode planner.Node = planner.NewScan(left.src), planner.NewScan(right.src)
	leftKey, rightKey := 0, 0
	if !lrep {
		leftKey = lkeys[0]
	}
	if !rrep {
		rightKey = rkeys[0]
	}
	oldOffset, leftLen, rightLen := right.offset, left.schema.Len(), right.schema.Len()
	if lrep || rrep {
		_, rAST := b.onSides(j.On.Expr)
		if lrep {
			rekey, err := planner.NewRekey(leftNode, []expr.Expr{lk}, nil)
			if err != nil {
				return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: %v", err)
			}
			leftNode, leftKey, left.schema = rekey, rekey.Keys[0], rekey.Schema()
			js.rekey = rekey
		}
		if rrep {
			// The right's expression over the right's own rows.
			join, src, alias, schema := b.join, b.src, b.alias, b.schema
			b.join, b.src, b.alias, b.schema = nil, right.src, right.alias, right.src.RowSchema()
			if b.alias == "" {
				b.alias = right.name
			}
			re, err := b.expr(rAST)
			b.join, b.src, b.alias, b.schema = join, src, alias, schema
			if err != nil {
				return nil, err
			}
			rekey, err := planner.NewRekey(rightNode, []expr.Expr{re}, nil)
			if err != nil {
				return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: %v", err)
			}
			rightNode, rightKey, right.schema = rekey, rekey.Keys[0], rekey.Schema()
		}
		right.offset = left.schema.Len()
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
	join, err := planner.NewStreamJoin(jt, leftNode, rightNode, left.name, right.name, leftKey, rightKey, synth, win)
	if err != nil {
		return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: %v", err)
	}
	join.Repartition, join.RepartitionRight = lrep, rrep
	join.CompactRows = !b.legacyJoins
	if synth != "" {
		js.synth, js.synthName = join.Schema().Len()-1, synth
	}
	b.schema = join.Schema()
	if !js.legacy {
		var added []int
		for i := leftLen; i < left.schema.Len(); i++ {
			added = append(added, i)
		}
		for i := rightLen; i < right.schema.Len(); i++ {
			added = append(added, right.offset+i)
		}
		rke := rk
		if rok {
			at := right.offset + rkc.Index - oldOffset
			rke = &expr.Column{Index: at, Name: b.schema.Columns[at].Name, T: rkc.T}
		}
		key := leftKey
		if synth != "" {
			key = js.synth
		}
		js.setKeys(lk, rke, key, synth != "", added...)
	}
	return join, nil
}
