package sql

import (
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// bindStreamJoin binds a join of two streams WITHIN a window (w), on
// their key columns, any of INNER, LEFT, RIGHT and FULL OUTER; without
// w, a regular join (INNER; bind_join_regular.go). A side joined on
// anything but its key column is repartitioned by its ON expression
// first (keyed like the other side, or like the left when both are).
func (b *binder) bindStreamJoin(j *ast.Join, js *joinScope, typ string, w *withinClause) (*planner.Join, error) {
	left, right := &js.sides[0], &js.sides[1]
	switch {
	case j.NaturalJoin || j.Using != nil:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "joins take ON left_expression = right_expression; NATURAL and USING are not supported")
	case j.On == nil:
		return nil, b.errAt("JOIN", CodeSyntaxError, "a join needs ON left_expression = right_expression")
	case (left.src.Windowed() || right.src.Windowed()) && left.inner != nil:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "joins of windowed sources are not supported yet in a join of more than two sources")
	case left.src.Windowed() != right.src.Windowed():
		what := func(s *joinSide) string {
			if s.src.Windowed() {
				return strings.ToUpper(string(s.src.WindowType)) + " windowed"
			}
			return "not windowed"
		}
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Can not join windowed source to non-windowed source.\n`%s` is %s\n`%s` is %s", left.src.Name, what(left), right.src.Name, what(right))
	case (left.src.WindowType == types.Session) != (right.src.WindowType == types.Session):
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Incompatible windowed sources.\nLeft source: %s\nRight source: %s\n"+
			"Session windowed sources can only be joined to other session windowed sources, and may still not result in expected behaviour as session bounds must be an exact match for the join to work\n"+
			"Hopping and tumbling windowed sources can only be joined to other hopping and tumbling windowed sources",
			strings.ToUpper(string(left.src.WindowType)), strings.ToUpper(string(right.src.WindowType)))
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
	// A side whose ON expression is not its key column is keyed by it
	// (a Rekey); which sides go through repartition topics is the
	// planner's call (rule CoPartitionJoins).
	lrep := !lok || len(lkeys) != 1 || lkc.Index != lkeys[0]
	rrep := !rok || len(rkeys) != 1 || rkc.Index != right.offset+rkeys[0]
	var leftNode, rightNode planner.Node = left.plan(), planner.NewScan(right.src)
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
	win := planner.JoinWindow{Unbounded: true} // no WITHIN: a regular join
	if w != nil {
		win = planner.JoinWindow{BeforeMs: w.before, AfterMs: w.after, GraceMs: w.grace}
		if w.grace < 0 {
			win.GraceMs, win.Legacy = planner.LegacyJoinGraceMs, true
		}
	}
	jt := planner.JoinType(typ)
	synth := ""
	if jt == planner.FullJoin {
		synth = "ROWKEY"
		taken := func(name string) bool { return left.schema.Index(name) >= 0 || right.schema.Index(name) >= 0 }
		if left.inner != nil {
			// The sources' columns: an earlier FULL join's synthetic key
			// among the left's rows is not a name the query can use.
			taken = js.named
		}
		for n := 1; taken(synth); n++ {
			synth = "ROWKEY_" + strconv.Itoa(n)
		}
	}
	join, err := planner.NewStreamJoin(jt, leftNode, rightNode, left.name, right.name, leftKey, rightKey, synth, win)
	if err != nil {
		return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: %v", err)
	}
	join.Text = b.joinText(right.src.Name)
	join.LegacyWholeRows, join.LegacyNoStoreHeaders = b.legacyJoins, b.legacyJoins2
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
