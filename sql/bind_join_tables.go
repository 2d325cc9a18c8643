package sql

import (
	"strconv"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// bindTableJoin binds a join of two tables on their primary keys, any
// of INNER, LEFT, RIGHT and FULL OUTER, with ksqlDB's errors. A join on
// a left expression that is not its primary key is a foreign-key join
// (bindForeignKeyJoin).
func (b *binder) bindTableJoin(j *ast.Join, js *joinScope, typ string) (*planner.Join, error) {
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
	got := b.show(lk) + " = " + b.show(rk)
	if js.swapped {
		got = b.show(rk) + " = " + b.show(lk)
	}
	lkeys, rkeys := left.src.Schema.KeyIndexes(), right.src.Schema.KeyIndexes()
	rkc, isCol := rk.(*expr.Column)
	if !isCol || len(rkeys) != 1 || rkc.Index != right.offset+rkeys[0] {
		return nil, b.errAt("ON", CodeFeatureNotSupport, "Invalid join condition: table-table joins require to join on the primary key of the right input table. Got %s.", got)
	}
	if lt, rt := lk.Type(), rk.Type(); !lt.Equal(rt) {
		return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: types don't match. Got %s{%s} = %s{%s}.", b.show(lk), lt, b.show(rk), rt)
	}
	lkc, isCol := lk.(*expr.Column)
	onKey := isCol && len(lkeys) == 1 && lkc.Index == lkeys[0]
	if left.inner != nil && onKey && (typ == "RIGHT" || typ == "FULL") {
		// A join's rows joined on their key, RIGHT or FULL: a
		// primary-key join of the rows (kept in a store of the join's
		// own) to the right table.
		return b.bindRowsTableJoin(js, typ, lkeys[0], rkeys[0])
	}
	if left.inner != nil || !onKey {
		// A join's rows on the left are joined as a foreign-key join
		// (its key or any other expression of its rows).
		return b.bindForeignKeyJoin(js, typ, lk, rkeys[0])
	}
	if lp, rp := left.src.Partitions, right.src.Partitions; lp > 0 && rp > 0 && lp != rp {
		return nil, b.errAt(right.src.Name, CodeFeatureNotSupport, "Can't join %s with %s since the number of partitions don't match. %s partitions = %d; %s partitions = %d. Please repartition either one so that the number of partitions match.",
			left.src.Name, right.src.Name, left.src.Name, lp, right.src.Name, rp)
	}
	if lf, rf := left.src.KeyFormat, right.src.KeyFormat; lf != rf && (typ == "INNER" || typ == "LEFT") {
		// The right's rows are found by the left's key encoded as the
		// right's keys are: a foreign-key join on the key.
		return b.bindForeignKeyJoin(js, typ, lk, rkeys[0])
	} else if lf != rf {
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Can't join %s with %s: their key formats differ (%s, %s); table-table joins that repartition are not supported yet", left.src.Name, right.src.Name, lf, rf)
	}
	switch f := right.src.KeyFormat; f {
	case types.FormatKafka, types.FormatJSON, types.FormatDelimited:
	default:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "table-table joins on %s keys are not supported yet", f)
	}
	return b.newTableJoin(js, typ, planner.NewScan(left.src), lkeys[0], rkeys[0])
}

// newTableJoin plans a primary-key join of left (the left side's table,
// or the rows of the join before it) to the right side's table.
func (b *binder) newTableJoin(js *joinScope, typ string, left planner.Node, lkey, rkey int) (*planner.Join, error) {
	right := &js.sides[1]
	jt := planner.JoinType(typ)
	synth := ""
	if jt == planner.FullJoin {
		// ksqlDB's synthetic key column: ROWKEY, or ROWKEY_<n> when a
		// side has a column of that name.
		synth = "ROWKEY"
		for n := 1; js.sides[0].schema.Index(synth) >= 0 || right.schema.Index(synth) >= 0; n++ {
			synth = "ROWKEY_" + strconv.Itoa(n)
		}
	}
	join, err := planner.NewTableJoin(jt, left, planner.NewScan(right.src), js.sides[0].name, right.name, lkey, rkey, synth)
	if err != nil {
		return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: %v", err)
	}
	if synth != "" {
		js.synth, js.synthName = join.Schema().Len()-1, synth
	}
	b.schema = join.Schema()
	return join, nil
}

// bindRowsTableJoin binds a RIGHT or FULL OUTER join of an earlier
// table–table join's rows, on their key, to a table on its primary key
// (beyond ksqlDB). The rows and the table must be co-partitioned: the
// same key format and partition count.
func (b *binder) bindRowsTableJoin(js *joinScope, typ string, lkey, rkey int) (*planner.Join, error) {
	left, right := &js.sides[0], &js.sides[1]
	if lp, rp := left.src.Partitions, right.src.Partitions; lp > 0 && rp > 0 && lp != rp {
		return nil, b.errAt(right.src.Name, CodeFeatureNotSupport, "Can't join %s with %s since the number of partitions don't match. %s partitions = %d; %s partitions = %d. Please repartition either one so that the number of partitions match.",
			left.src.Name, right.src.Name, left.src.Name, lp, right.src.Name, rp)
	}
	if lf, rf := left.src.KeyFormat, right.src.KeyFormat; lf != rf {
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Can't join %s with %s: their key formats differ (%s, %s); table-table joins that repartition are not supported yet", left.src.Name, right.src.Name, lf, rf)
	}
	switch f := right.src.KeyFormat; f {
	case types.FormatKafka, types.FormatJSON, types.FormatDelimited:
	default:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "table-table joins on %s keys are not supported yet", f)
	}
	return b.newTableJoin(js, typ, left.plan(), lkey, rkey)
}

// bindForeignKeyJoin binds a foreign-key join of two tables: the left's
// expression fk (over its rows) equal to the right's primary key column
// rkey, INNER or LEFT, as ksqlDB allows. The tables' partition counts
// and key formats may differ: the join sends the left's rows to the
// right's partitions by the foreign key and the matches back.
func (b *binder) bindForeignKeyJoin(js *joinScope, typ string, fk expr.Expr, rkey int) (*planner.Join, error) {
	left, right := &js.sides[0], &js.sides[1]
	switch typ {
	case "RIGHT", "FULL":
		return nil, b.errAt(typ, CodeFeatureNotSupport, "%s OUTER JOIN on a foreign key is not supported", typ)
	}
	switch f := right.src.KeyFormat; f {
	case types.FormatKafka, types.FormatJSON, types.FormatDelimited:
	default:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "foreign-key joins to a table with %s keys are not supported yet", f)
	}
	switch f := left.src.KeyFormat; f {
	case types.FormatNone:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "a foreign-key join needs the left table's primary key")
	}
	join, err := planner.NewForeignKeyJoin(planner.JoinType(typ), left.plan(), planner.NewScan(right.src), left.name, right.name, fk, rkey)
	if err != nil {
		return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: %v", err)
	}
	b.schema = join.Schema()
	// A join on the left's key (an earlier join's rows, or a table of
	// another key format) is a primary-key join to ksqlDB: the right's
	// key may stand for the result's key.
	lkeys := left.src.Schema.KeyIndexes()
	c, isCol := fk.(*expr.Column)
	js.fk = !isCol || len(lkeys) != 1 || c.Index != lkeys[0]
	return join, nil
}
