package sql

import (
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/sqlstreams/sqlstreams/catalog"
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
	case (left.src.Windowed() || right.src.Windowed()) && onLeftNonKey(j.On.Expr, left):
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Foreign-key table-table joins are not supported on windowed tables.")
	case left.src.Windowed() || right.src.Windowed():
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "joins of windowed sources are not supported yet")
	case left.src.Topic == right.src.Topic:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Can not join '%s' to '%s': both read topic %s", left.src.Name, right.src.Name, left.src.Topic)
	}
	b.join = js
	b.schema = planner.JoinSchema(left.schema, right.schema, left.name, right.name)
	if isAnd(j.On.Expr) && j == b.lastJoin && left.inner == nil {
		b.takeImpliedWindowEnds(j, js)
	}
	if isAnd(j.On.Expr) {
		return b.bindCompositeTableJoin(j, js, typ)
	}
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
	if left.inner != nil && len(lkeys) == 1 {
		if _, synthetic := js.rowsOnly(lkeys[0]); synthetic {
			// The rows of a FULL OUTER join, keyed by its synthetic key.
			return b.bindAfterFullJoin(js, typ, lk, rk, lkeys[0], rkeys[0])
		}
	}
	lkc, isCol := lk.(*expr.Column)
	onKey := isCol && len(lkeys) == 1 && lkc.Index == lkeys[0]
	if left.inner != nil && onKey && (typ == "RIGHT" || typ == "FULL") {
		// A join's rows joined on their key, RIGHT or FULL: a
		// primary-key join of the rows (kept in a store of the join's
		// own) to the right table.
		return b.bindRowsTableJoin(js, typ, lk, rk, lkeys[0], rkeys[0])
	}
	if left.inner != nil || !onKey {
		// A join's rows on the left are joined as a foreign-key join
		// (its key or any other expression of its rows).
		return b.bindForeignKeyJoin(js, typ, lk, rkeys[0])
	}
	if lp, rp := left.src.Partitions, right.src.Partitions; lp > 0 && rp > 0 && lp != rp {
		return nil, b.errAt(right.src.Name, CodeFeatureNotSupport, "Can't join `%s` with `%s` since the number of partitions don't match. `%s` partitions = %d; `%s` partitions = %d. Please repartition either one so that the number of partitions match.",
			left.src.Name, right.src.Name, left.src.Name, lp, right.src.Name, rp)
	}
	if planner.RegistryKeys(left.src, right.src) && (typ == "INNER" || typ == "LEFT") {
		// Keys in a schema-registry format are compared by value: the
		// left's key, written with the right's key schema, finds the
		// right's row whatever schemas the two topics' keys were written
		// with (a foreign-key join on the key, as for differing formats).
		return b.bindForeignKeyJoin(js, typ, lk, rkeys[0])
	}
	if !planner.CoPartitioned(left.src, right.src) && (typ == "INNER" || typ == "LEFT") {
		// The topics' producers partitioned keys otherwise (their
		// PARTITIONER): the left's rows find the right's by their key
		// sent to the right's partition, a foreign-key join on the key.
		return b.bindForeignKeyJoin(js, typ, lk, rkeys[0])
	}
	if lf, rf := left.src.KeyFormat, right.src.KeyFormat; lf != rf && (typ == "INNER" || typ == "LEFT") {
		// The right's rows are found by the left's key encoded as the
		// right's keys are: a foreign-key join on the key.
		return b.bindForeignKeyJoin(js, typ, lk, rkeys[0])
	} else if lf != rf {
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Can't join %s with %s: their key formats differ (%s, %s); table-table joins that repartition are not supported yet", left.src.Name, right.src.Name, lf, rf)
	}
	if err := b.sameKeySchemas(left.src, right.src, typ); err != nil {
		return nil, err
	}
	// A RIGHT or FULL join of tables partitioned otherwise reads each
	// table not partitioned by murmur2 through a repartition of its own
	// by murmur2 (rule CoPartitionJoins).
	return b.newTableJoin(js, typ, planner.NewScan(left.src), lk, rk, lkeys[0], rkeys[0])
}

// newTableJoin plans a primary-key join of left (the left side's table,
// or the rows of the join before it) to the right side's table.
func (b *binder) newTableJoin(js *joinScope, typ string, left planner.Node, lk, rk expr.Expr, lkey, rkey int) (*planner.Join, error) {
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
	join.Text = b.joinText(right.src.Name)
	if synth != "" {
		js.synth, js.synthName = join.Schema().Len()-1, synth
	}
	b.schema = join.Schema()
	if !js.legacy {
		key := lkey
		if synth != "" {
			key = js.synth
		}
		js.setKeys(lk, rk, key, synth != "")
	}
	return join, nil
}

// bindRowsTableJoin binds a RIGHT or FULL OUTER join of an earlier
// table–table join's rows, on their key, to a table on its primary key
// (beyond ksqlDB). The rows and the table must be co-partitioned: the
// same key format and partition count.
func (b *binder) bindRowsTableJoin(js *joinScope, typ string, lk, rk expr.Expr, lkey, rkey int) (*planner.Join, error) {
	left, right := &js.sides[0], &js.sides[1]
	if lp, rp := left.src.Partitions, right.src.Partitions; lp > 0 && rp > 0 && lp != rp {
		return nil, b.errAt(right.src.Name, CodeFeatureNotSupport, "Can't join `%s` with `%s` since the number of partitions don't match. `%s` partitions = %d; `%s` partitions = %d. Please repartition either one so that the number of partitions match.",
			left.src.Name, right.src.Name, left.src.Name, lp, right.src.Name, rp)
	}
	if lf, rf := left.src.KeyFormat, right.src.KeyFormat; lf != rf {
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Can't join %s with %s: their key formats differ (%s, %s); table-table joins that repartition are not supported yet", left.src.Name, right.src.Name, lf, rf)
	}
	if err := b.sameKeySchemas(left.src, right.src, typ); err != nil {
		return nil, err
	}
	// Rows and a table partitioned otherwise: the table is read through
	// a repartition by murmur2, as the rows are (the join is refused
	// when they are not; rule CoPartitionJoins).
	return b.newTableJoin(js, typ, left.plan(), lk, rk, lkey, rkey)
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
	switch f := right.src.KeyFormat; {
	case f == types.FormatKafka, f == types.FormatJSON, f == types.FormatDelimited, types.InfersColumns(f):
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
	// The right table's producers may have written a key value under
	// another schema ID than the foreign keys are written with (other
	// bytes, another partition): the right table is repartitioned with
	// the foreign keys' key schema, as ksqlDB repartitions it (rule
	// CoPartitionJoins).
	join.LegacyRegistryTables, join.Text = b.legacyJoins3, b.joinText(right.src.Name)
	b.schema = join.Schema()
	// A join on the left's key (an earlier join's rows, or a table of
	// another key format) is a primary-key join to ksqlDB: the right's
	// key may stand for the result's key.
	lkeys := left.src.Schema.KeyIndexes()
	c, isCol := fk.(*expr.Column)
	js.fk = !isCol || len(lkeys) != 1 || c.Index != lkeys[0]
	return join, nil
}

// sameKeySchemas checks the key formats of a primary-key join of two
// tables that meet on their key bytes (RIGHT and FULL OUTER joins, whose
// rows both sides emit): KAFKA, JSON and DELIMITED keys, and keys in one
// schema-registry format unless the sources name different key schemas
// (KEY_SCHEMA_ID, or the schemas their columns were inferred from) — a
// key written with two schemas has two byte strings. INNER and LEFT joins
// of such keys compare them by value (a foreign-key join on the key).
func (b *binder) sameKeySchemas(left, right *catalog.Source, typ string) error {
	f := right.KeyFormat
	switch {
	case f == types.FormatKafka, f == types.FormatJSON, f == types.FormatDelimited:
		return nil
	case !types.InfersColumns(f):
		return b.errAt("JOIN", CodeFeatureNotSupport, "table-table joins on %s keys are not supported yet", f)
	}
	lid, rid := keySchemaID(left), keySchemaID(right)
	if lid != 0 && rid != 0 && lid != rid {
		return b.errAt("JOIN", CodeFeatureNotSupport, "Can't join %s with %s: %s OUTER JOIN of tables whose %s keys are written with different schemas (IDs %d and %d) is not supported; INNER and LEFT joins are",
			left.Name, right.Name, typ, f, lid, rid)
	}
	return nil
}

// keySchemaID is the registered schema a source's keys are written with,
// when it names one: KEY_SCHEMA_ID, or the schema its key columns were
// inferred from; 0 when its columns were declared.
func keySchemaID(s *catalog.Source) int {
	if s.KeyOptions.SchemaID != 0 {
		return s.KeyOptions.SchemaID
	}
	return s.KeyOptions.ReaderSchemaID
}

// isAnd reports whether a join condition is several ANDed ones.
func isAnd(on ast.ExprNode) bool {
	for {
		p, ok := on.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		on = p.Expr
	}
	bin, ok := on.(*ast.BinaryOperationExpr)
	return ok && bin.Op == opcode.LogicAnd
}

// bindCompositeTableJoin binds a join of two tables keyed by several
// columns on all of them (ON l.x = r.x AND l.y = r.y, beyond ksqlDB):
// INNER, LEFT or RIGHT. The rows of one key have the same key bytes in
// both tables, so that each side finds the other's row by its own key:
// the key columns pair up in order, with the same types (and, but for
// DELIMITED keys, the same names), in the same key format, and the
// tables are co-partitioned.
func (b *binder) bindCompositeTableJoin(j *ast.Join, js *joinScope, typ string) (*planner.Join, error) {
	left, right := &js.sides[0], &js.sides[1]
	js.on = true
	ls, rs, err := b.joinConditions(j.On.Expr)
	js.on = false
	if err != nil {
		return nil, err
	}
	var conds []string
	for i := range ls {
		conds = append(conds, b.show(ls[i])+" = "+b.show(rs[i]))
	}
	got := strings.Join(conds, " AND ")
	lkeys, rkeys := left.src.Schema.KeyIndexes(), right.src.Schema.KeyIndexes()
	if left.inner != nil {
		return nil, b.errAt("ON", CodeFeatureNotSupport, "Invalid join condition: joins of an earlier join's rows on several conditions are not supported yet. Got %s.", got)
	}
	if len(rkeys) != len(rs) {
		return nil, b.errAt("ON", CodeFeatureNotSupport, "Invalid join condition: table-table joins require to join on the primary key of the right input table: all of its %d key columns, each once. Got %s.", len(rkeys), got)
	}
	// pair[n]: the left key column joined to the right's n-th key column.
	pair := make([]int, len(rkeys))
	for n := range pair {
		pair[n] = -1
	}
	for i := range rs {
		rc, rok := rs[i].(*expr.Column)
		lc, lok := ls[i].(*expr.Column)
		at := -1
		for n, k := range rkeys {
			if rok && rc.Index == right.offset+k && pair[n] < 0 {
				at = n
			}
		}
		if at < 0 {
			return nil, b.errAt("ON", CodeFeatureNotSupport, "Invalid join condition: table-table joins require to join on the primary key of the right input table: all of its %d key columns, each once. Got %s.", len(rkeys), got)
		}
		if lt, rt := ls[i].Type(), rs[i].Type(); !lt.Equal(rt) {
			return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: types don't match. Got %s{%s} = %s{%s}.", b.show(ls[i]), lt, b.show(rs[i]), rt)
		}
		if !lok || len(lkeys) != len(rkeys) || !slicesContains(lkeys, lc.Index) {
			return nil, b.errAt("ON", CodeFeatureNotSupport, "Invalid join condition: a join on several conditions must join all key columns of both tables (foreign-key joins take one expression). Got %s.", got)
		}
		pair[at] = lc.Index
	}
	for n, k := range rkeys {
		lname, rname := left.schema.Columns[pair[n]].Name, right.schema.Columns[k].Name
		if pair[n] != lkeys[n] || (left.src.KeyFormat != types.FormatDelimited && lname != rname) {
			return nil, b.errAt("ON", CodeFeatureNotSupport, "Invalid join condition: a join on several key columns pairs them in the order of the tables' keys, under the same names (%s has %s, %s has %s). Got %s.",
				left.src.Name, keyNames(left.schema, lkeys), right.src.Name, keyNames(right.schema, rkeys), got)
		}
	}
	switch {
	case typ == "FULL":
		return nil, b.errAt("ON", CodeFeatureNotSupport, "FULL OUTER JOIN on several key columns is not supported yet")
	case left.src.KeyFormat != right.src.KeyFormat:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Can't join %s with %s: their key formats differ (%s, %s); table-table joins that repartition are not supported yet", left.src.Name, right.src.Name, left.src.KeyFormat, right.src.KeyFormat)
	}
	if lp, rp := left.src.Partitions, right.src.Partitions; lp > 0 && rp > 0 && lp != rp {
		return nil, b.errAt(right.src.Name, CodeFeatureNotSupport, "Can't join `%s` with `%s` since the number of partitions don't match. `%s` partitions = %d; `%s` partitions = %d. Please repartition either one so that the number of partitions match.",
			left.src.Name, right.src.Name, left.src.Name, lp, right.src.Name, rp)
	}
	switch f := right.src.KeyFormat; f {
	case types.FormatJSON, types.FormatDelimited:
	default:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "table-table joins on %s keys of several columns are not supported yet", f)
	}
	join, err := planner.NewTableJoin(planner.JoinType(typ), planner.NewScan(left.src), planner.NewScan(right.src), left.name, right.name, lkeys[0], rkeys[0], "")
	if err != nil {
		return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: %v", err)
	}
	// Tables partitioned otherwise (PARTITIONER): each one not
	// partitioned by murmur2 is read through a repartition of its own
	// by murmur2 (rule CoPartitionJoins).
	join.Text = b.joinText(right.src.Name)
	join.LeftKeys, join.RightKeys = make([]expr.Expr, len(lkeys)), rkeys
	out := join.Schema()
	for n, k := range lkeys {
		join.LeftKeys[n] = &expr.Column{Index: k, Name: out.Columns[k].Name, T: out.Columns[k].Type}
	}
	b.schema = out
	return join, nil
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// keyNames lists a schema's key columns for errors.
func keyNames(schema types.Schema, keys []int) string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = schema.Columns[k].Name
	}
	return "(" + strings.Join(names, ", ") + ")"
}

// onLeftNonKey reports whether the ON condition l = r names a column of
// the left side that is not one of its key columns: a foreign-key join.
func onLeftNonKey(on ast.ExprNode, left *joinSide) bool {
	bin, ok := on.(*ast.BinaryOperationExpr)
	if !ok || bin.Op != opcode.EQ {
		return false
	}
	for _, side := range []ast.ExprNode{bin.L, bin.R} {
		c, ok := side.(*ast.ColumnNameExpr)
		if !ok {
			continue
		}
		q := c.Name.Table.O
		if q != "" && !strings.EqualFold(q, left.name) && !strings.EqualFold(q, left.src.Name) {
			continue
		}
		i := left.schema.IndexFold(c.Name.Name.O)
		if i >= 0 && !left.schema.Columns[i].Key {
			return true
		}
	}
	return false
}
