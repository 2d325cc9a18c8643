package sql

import (
	"sort"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// joinSide is one source of a join as names resolve against it.
type joinSide struct {
	src *catalog.Source
	// alias is the name given with AS, or empty; name is the alias or
	// else the source's name: the prefix of its columns in the join's
	// rows and what errors call it.
	alias, name string
	schema      types.Schema // the source's rows
	offset      int          // position of its first column in the join's rows
	// node and inner are set for the left side of an N-way join: the
	// join of the sides before it (its plan and its scope); src is then
	// a stand-in describing its rows (their key, format, partitions).
	node  planner.Node
	inner *joinScope
}

// plan returns what the side reads: its source, or the join before it.
func (s *joinSide) plan() planner.Node {
	if s.node != nil {
		return s.node
	}
	return planner.NewScan(s.src)
}

// is reports whether qualifier q names the side.
func (s *joinSide) is(q string) bool { return q == s.name || q == s.src.Name }

// joinScope is what names resolve against in a join's SELECT.
type joinScope struct {
	sides [2]joinSide
	// leaves are the sources of the join's rows in order, each with its
	// offset in them: the two sides, or for an N-way join the sources of
	// the join on its left, then its right. Names resolve against them.
	leaves []*joinSide
	// on is set while binding the ON condition (for ksqlDB's errors).
	on bool
	// rekey is set when the stream is repartitioned by the join
	// expression: its rows are the left side's.
	rekey *planner.Rekey
	// swapped is set when ON names the right side first.
	swapped bool
	// synth is the position of a FULL table join's synthetic key column
	// in the join's rows (-1: none), named synthName.
	synth     int
	synthName string
	// fk marks a foreign-key join: its key is the left table's primary
	// key, which nothing stands in for.
	fk bool
	// legacy keeps the projection rules of commands recorded before
	// sqlstreams followed ksqlDB's join key rules (Select.LegacyJoinKeys).
	legacy bool
	// keyed is set once the join's key rules are known (setKeys): key
	// is the position of its key column in the join's rows; viable are
	// the positions of the source columns ksqlDB lets stand for it in a
	// persistent query's projection, in its order (none: the key is
	// synthetic, named synthName); equiv the join expressions equal to
	// the key (column positions as #n); hidden the columns repartitions
	// added, which SELECT * does not show.
	keyed  bool
	key    int
	viable []int
	equiv  map[string]bool
	hidden map[int]bool
}

// equivKey is how an expression of a join's rows is compared in the
// equivalence sets of its key: a column by position.
func equivKey(e expr.Expr) string {
	if c, ok := e.(*expr.Column); ok {
		return "#" + strconv.Itoa(c.Index)
	}
	return e.String()
}

// setKeys records ksqlDB's key rules for the join being bound (its
// JoinTree.viableKeyColumns and joinEquivalenceSet): lk and rk are the
// ON expressions over the join's rows as they are finally laid out,
// key the position of the join's key column. A FULL join's key is
// synthetic, as is the key of a join on two expressions that are not
// columns. The left side's own key rules carry over (an N-way join)
// when lk is among the expressions its key equals.
func (js *joinScope) setKeys(lk, rk expr.Expr, key int, full bool, hidden ...int) {
	js.keyed, js.key, js.viable, js.equiv = true, key, nil, map[string]bool{}
	js.hidden = map[int]bool{}
	if in := js.sides[0].inner; in != nil && in.keyed {
		for h := range in.hidden {
			js.hidden[h] = true
		}
	}
	if in := js.sides[0].inner; in != nil && in.synth >= 0 {
		// An earlier FULL join's synthetic key: SELECT * shows the
		// sources' columns.
		js.hidden[in.synth] = true
	}
	for _, h := range hidden {
		js.hidden[h] = true
	}
	if full {
		return
	}
	js.equiv[equivKey(lk)], js.equiv[equivKey(rk)] = true, true
	var cands []int
	if in := js.sides[0].inner; in != nil && in.keyed && in.equiv[equivKey(lk)] {
		for e := range in.equiv {
			js.equiv[e] = true
		}
		cands = append(cands, in.viable...)
	}
	for _, e := range []expr.Expr{lk, rk} {
		if c, ok := e.(*expr.Column); ok {
			cands = append(cands, c.Index)
		}
	}
	seen := map[int]bool{}
	for _, c := range cands {
		if !seen[c] && js.equiv["#"+strconv.Itoa(c)] {
			seen[c] = true
			js.viable = append(js.viable, c)
		}
	}
	if len(js.viable) == 0 && js.synth < 0 {
		// Neither side is a column: the key is synthetic, ROWKEY unless
		// a source has a column of that name.
		js.synth, js.synthName = key, "ROWKEY"
		delete(js.hidden, key)
		for n := 1; js.named(js.synthName); n++ {
			js.synthName = "ROWKEY_" + strconv.Itoa(n)
		}
	}
}

// named reports whether a source of the join has a column called name.
func (js *joinScope) named(name string) bool {
	for _, l := range js.leaves {
		if l.src.Schema.Index(name) >= 0 {
			return true
		}
	}
	return false
}

// side returns the side whose columns include position i of the join's
// rows.
func (js *joinScope) side(i int) *joinSide {
	for k := len(js.leaves) - 1; k > 0; k-- {
		if i >= js.leaves[k].offset {
			return js.leaves[k]
		}
	}
	return js.leaves[0]
}

// end is the position after the last source's columns in the join's
// rows (a FULL join's synthetic key, a table function's columns follow).
func (js *joinScope) end() int {
	last := js.leaves[len(js.leaves)-1]
	return last.offset + last.schema.Len()
}

// bindJoin binds FROM left [INNER|LEFT|RIGHT|FULL] JOIN right [WITHIN …]
// ON … into a Join: stream–table (here), table–table (bindTableJoin) or
// stream–stream (bindStreamJoin); a left that is itself a join (a JOIN b
// … JOIN c …) is bound first (nestedLeft). What this release does not
// run (foreign-key joins, some N-way shapes) is refused with ksqlDB's
// error where it has one.
func (b *binder) bindJoin(sel *Select, j *ast.Join) (*planner.Join, error) {
	// FROM a, b nests the first source in a join of its own.
	for {
		l, ok := j.Left.(*ast.Join)
		if !ok || l.Right != nil {
			break
		}
		j.Left = l.Left
	}
	if _, nested := j.Right.(*ast.Join); nested {
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "joins of more than two sources are not supported yet")
	}
	js := &joinScope{synth: -1, legacy: sel.LegacyJoinKeys}
	if l, nested := j.Left.(*ast.Join); nested {
		// a JOIN b … JOIN c …: the join of a and b is the left side,
		// planned first, as ksqlDB plans joins from left to right.
		if err := b.nestedLeft(sel, l, js); err != nil {
			return nil, err
		}
	}
	for i, rs := range []ast.ResultSetNode{j.Left, j.Right} {
		if i == 0 && js.sides[0].inner != nil {
			continue
		}
		ts, ok := rs.(*ast.TableSource)
		if !ok {
			return nil, Errorf(CodeFeatureNotSupport, "FROM must name a stream or table")
		}
		if src, derived, err := b.derivedSide(sel, ts); err != nil {
			return nil, err
		} else if derived {
			s := &js.sides[i]
			s.src, s.alias, s.name, s.schema = src, ts.AsName.O, src.Name, src.RowSchema()
			if s.alias != "" {
				s.name = s.alias
			}
			continue
		}
		tn, ok := ts.Source.(*ast.TableName)
		if !ok {
			return nil, b.errAt("JOIN", CodeFeatureNotSupport, "a join of a derived table is not supported yet")
		}
		src, ok := b.cat.Source(tn.Name.O)
		if !ok {
			if _, isView := lookupView(b.cat, tn.Name.O); isView {
				return nil, b.errAt(tn.Name.O, CodeFeatureNotSupport, "%s is a view: a join of a view is not supported yet (join the view's sources, or make it a MATERIALIZED VIEW)", tn.Name.O)
			}
			return nil, b.errAt(tn.Name.O, CodeUndefinedTable, "stream or table %s does not exist", tn.Name.O)
		}
		s := &js.sides[i]
		s.src, s.alias, s.name, s.schema = src, ts.AsName.O, ts.AsName.O, src.RowSchema()
		if s.name == "" {
			s.name = src.Name
		}
	}
	left, right := &js.sides[0], &js.sides[1]
	right.offset = left.schema.Len()
	if left.inner != nil {
		js.leaves = append(append(js.leaves, left.inner.leaves...), right)
		for _, l := range left.inner.leaves {
			if l.src.Name == right.src.Name {
				return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Can not join '%s' to '%s': self joins are not yet supported.", l.src.Name, right.src.Name)
			}
			if l.name == right.name {
				return nil, b.errAt("JOIN", CodeDuplicateObject, "the sides of a join need different names: two are %s; give one an alias", right.name)
			}
		}
	} else {
		js.leaves = []*joinSide{left, right}
	}
	// The WITHIN clause, when it is this join's (between its JOIN and its
	// ON in an N-way join).
	var within *withinClause
	for _, w := range sel.withins {
		if n := len(js.leaves) - 1; w.pos > b.nthOn(n-1) && w.pos < b.nthOn(n) {
			within = w
		}
	}
	typ := "INNER"
	// The FULL of this join: between the previous join's ON and this
	// join's.
	full := -1
	for _, p := range sel.fullJoins {
		if n := len(js.leaves) - 1; p > b.nthOn(n-1) && p < b.nthOn(n) {
			full = p
		}
	}
	switch {
	case full >= 0:
		typ = "FULL"
	case j.Tp == ast.LeftJoin:
		typ = "LEFT"
	case j.Tp == ast.RightJoin:
		typ = "RIGHT"
	}
	// ksqlDB's rendering of the join, in its errors.
	got := left.src.Name + " " + map[string]string{"INNER": "[INNER] JOIN", "LEFT": "LEFT [OUTER] JOIN",
		"RIGHT": "RIGHT [OUTER] JOIN", "FULL": "[FULL] OUTER JOIN"}[typ] + " " + right.src.Name
	switch {
	case left.src.Name == right.src.Name:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Can not join '%s' to '%s': self joins are not yet supported.", left.src.Name, right.src.Name)
	case left.name == right.name:
		return nil, b.errAt("JOIN", CodeDuplicateObject, "the two sides of a join need different names: both are %s; give one an alias", left.name)
	case left.src.Kind == catalog.Table && right.src.Kind == catalog.Stream:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Invalid join order: table-stream joins are not supported; only stream-table joins. Got %s.", got)
	case left.src.Kind == catalog.Stream && right.src.Kind == catalog.Stream && within == nil && j.On == nil && j.Tp == ast.CrossJoin && !j.NaturalJoin && j.Using == nil:
		// FROM a, b without a WHERE equality of the two (commaJoin).
		return nil, b.errAt(right.src.Name, CodeSyntaxError, "a join needs ON left_expression = right_expression (FROM a, b: a WHERE equality of a column of each)")
	case left.src.Kind == catalog.Stream && right.src.Kind == catalog.Stream && within == nil && regularJoins(sel):
		// A regular join (bind_join_regular.go).
		if typ != "INNER" {
			at := map[string]string{"LEFT": "LEFT", "RIGHT": "RIGHT", "FULL": "FULL"}[typ]
			if full >= 0 {
				return nil, errorAt(b.text, full, CodeFeatureNotSupport, "a %s OUTER join of two streams needs a WITHIN: without one (a regular join) only INNER joins are supported", typ)
			}
			return nil, b.errAt(at, CodeFeatureNotSupport, "a %s OUTER join of two streams needs a WITHIN: without one (a regular join) only INNER joins are supported", typ)
		}
		return b.bindStreamJoin(j, js, typ, nil)
	case left.src.Kind == catalog.Stream && right.src.Kind == catalog.Stream && within == nil:
		if j.On != nil {
			// ksqlDB reports a bad ON condition before the missing
			// WITHIN.
			b.join, b.schema = js, planner.JoinSchema(left.schema, right.schema, left.name, right.name)
			js.on = true
			_, _, err := b.joinCondition(j.On.Expr)
			js.on = false
			if err != nil {
				return nil, err
			}
		}
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "Stream-Stream joins must have a WITHIN clause specified. None was provided. To learn about how to specify a WITHIN clause with a stream-stream join, please visit: https://docs.confluent.io/current/ksql/docs/syntax-reference.html#create-stream-as-select")
	case left.src.Kind == catalog.Stream && right.src.Kind == catalog.Stream:
		return b.bindStreamJoin(j, js, typ, within)
	case within != nil:
		return nil, errorAt(b.text, within.pos, CodeFeatureNotSupport, "A window definition was provided for a Stream-Table or Table-Table join. These joins are not windowed. Got %s.", got)
	case left.src.Kind == catalog.Table:
		return b.bindTableJoin(j, js, typ)
	case typ == "FULL":
		return nil, errorAt(b.text, full, CodeFeatureNotSupport, "Invalid join type: full-outer join not supported for stream-table join. Got %s.", got)
	case typ == "RIGHT":
		return nil, b.errAt("RIGHT", CodeFeatureNotSupport, "Invalid join type: right join not supported for stream-table join. Got %s.", got)
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
	// ON: one equality per key column of the table (several, ANDed, for
	// a table with several key columns), in the table's key order.
	tkeys := right.src.Schema.KeyIndexes()
	bindOn := func() (lks []expr.Expr, rks []int, err error) {
		js.on = true
		ls, rs, err := b.joinConditions(j.On.Expr)
		js.on = false
		if err != nil {
			return nil, nil, err
		}
		lks, rks = make([]expr.Expr, len(tkeys)), make([]int, len(tkeys))
		for k, rk := range rs {
			lk := ls[k]
			rkc, isCol := rk.(*expr.Column)
			at := -1
			for n, tk := range tkeys {
				if isCol && rkc.Index == right.offset+tk && lks[n] == nil {
					at = n
				}
			}
			if at < 0 || len(rs) != len(tkeys) {
				return nil, nil, b.errAt("ON", CodeFeatureNotSupport, "Invalid join condition: stream-table joins require to join on the table's primary key. Got %s = %s.", b.show(lk), b.show(rk))
			}
			if lt, rt := lk.Type(), rk.Type(); !lt.Equal(rt) {
				return nil, nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: types don't match. Got %s{%s} = %s{%s}.", b.show(lk), lt, b.show(rk), rt)
			}
			lks[at], rks[at] = lk, tkeys[at]
		}
		return lks, rks, nil
	}
	lks, rks, err := bindOn()
	if err != nil {
		return nil, err
	}
	switch f := right.src.KeyFormat; {
	case f == types.FormatKafka, f == types.FormatJSON, f == types.FormatDelimited, types.InfersColumns(f):
	default:
		return nil, b.errAt("JOIN", CodeFeatureNotSupport, "joins on %s keys are not supported yet", f)
	}
	// Unless ON's stream side is the stream's key columns, the stream's
	// rows are keyed by it (a Rekey); whether they go through a
	// repartition topic to meet the table's is the planner's call (rule
	// CoPartitionJoins).
	skeys := left.src.Schema.KeyIndexes()
	keyJoin := len(skeys) == len(lks)
	for n, lk := range lks {
		lkc, isCol := lk.(*expr.Column)
		keyJoin = keyJoin && isCol && lkc.Index == skeys[n]
		// Several key columns are fields of one key: the same bytes only
		// under the same names.
		keyJoin = keyJoin && (len(lks) == 1 || left.schema.Columns[skeys[n]].Name == right.schema.Columns[tkeys[n]].Name)
	}
	repartition := !keyJoin
	leftNode := left.plan()
	origLK, leftLen := lks[0], left.schema.Len()
	if repartition {
		// The stream's rows get the join expressions as their key
		// columns (new columns unless they are columns already); the
		// join's rows then start with those rows, so ON is bound again
		// over them.
		rekey, err := planner.NewRekey(leftNode, append([]expr.Expr(nil), lks...), nil)
		if err != nil {
			return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: %v", err)
		}
		leftNode, js.rekey = rekey, rekey
		left.schema = rekey.Schema()
		right.offset = left.schema.Len()
		b.schema = planner.JoinSchema(left.schema, right.schema, left.name, right.name)
		kts := make([]types.Type, len(lks))
		for n, lk := range lks {
			kts[n] = lk.Type()
		}
		if _, rks, err = bindOn(); err != nil {
			return nil, err
		}
		for n, k := range rekey.Keys {
			lks[n] = &expr.Column{Index: k, Name: b.schema.Columns[k].Name, T: kts[n]}
		}
	}
	jt := planner.InnerJoin
	if typ == "LEFT" {
		jt = planner.LeftJoin
	}
	// The key expressions are over the stream's rows, which start the
	// join's rows: their column positions hold.
	join, err := planner.NewJoinKeys(jt, leftNode, planner.NewScan(right.src), left.name, right.name, lks, rks)
	if err != nil {
		return nil, b.errAt("ON", CodeDatatypeMismatch, "Invalid join condition: %v", err)
	}
	join.LegacyRegistryTables, join.Text = b.legacyJoins3, b.joinText(right.src.Name)
	if len(lks) == 1 && !js.legacy {
		var added []int
		for i := leftLen; i < left.schema.Len(); i++ {
			added = append(added, i)
		}
		rc := b.schema.Columns[right.offset+rks[0]]
		js.setKeys(origLK, &expr.Column{Index: right.offset + rks[0], Name: rc.Name, T: rc.Type}, lks[0].(*expr.Column).Index, false, added...)
	}
	return join, nil
}

// joinCondition binds ON's a = b and returns the side of the stream
// (left) and of the table (right), in that order whichever way they were
// written.
// ksqlCondition is an expression as ksqlDB prints it, unbound: each
// operation in parentheses, ((A = B) AND (C = D)), (F1 * SUM(F2)); COUNT(*)
// is COUNT(ROWTIME). Other nodes print as TiDB restores them.
func ksqlCondition(n ast.ExprNode) string {
	switch x := n.(type) {
	case *ast.ParenthesesExpr:
		return ksqlCondition(x.Expr)
	case *ast.BinaryOperationExpr:
		op := map[opcode.Op]string{opcode.LogicAnd: "AND", opcode.LogicOr: "OR", opcode.EQ: "=", opcode.NE: "<>",
			opcode.LT: "<", opcode.LE: "<=", opcode.GT: ">", opcode.GE: ">=",
			opcode.Plus: "+", opcode.Minus: "-", opcode.Mul: "*", opcode.Div: "/", opcode.Mod: "%"}[x.Op]
		if op != "" {
			return "(" + ksqlCondition(x.L) + " " + op + " " + ksqlCondition(x.R) + ")"
		}
	case *ast.ColumnNameExpr:
		if t := x.Name.Table.O; t != "" {
			return t + "." + x.Name.Name.O
		}
		return x.Name.Name.O
	case *ast.AggregateFuncExpr:
		args := make([]string, len(x.Args))
		for i, a := range x.Args {
			args[i] = ksqlCondition(a)
		}
		name := strings.ToUpper(x.F)
		if name == "COUNT" && (len(args) == 0 || args[0] == "1" || args[0] == "*") {
			args = []string{types.RowTime}
		}
		return name + "(" + strings.Join(args, ", ") + ")"
	case *ast.FuncCallExpr:
		args := make([]string, len(x.Args))
		for i, a := range x.Args {
			args[i] = ksqlCondition(a)
		}
		return strings.TrimPrefix(strings.ToUpper(x.FnName.O), "__") + "(" + strings.Join(args, ", ") + ")"
	}
	return strings.ReplaceAll(restore(n), "`", "")
}

func (b *binder) joinCondition(on ast.ExprNode) (left, right expr.Expr, err error) {
	for {
		p, ok := on.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		on = p.Expr
	}
	bin, ok := on.(*ast.BinaryOperationExpr)
	if ok && (bin.Op == opcode.LogicAnd || bin.Op == opcode.LogicOr) {
		return nil, nil, b.errAt("ON", CodeFeatureNotSupport, "Invalid join condition: joins on multiple conditions are not yet supported. Got %s.", ksqlCondition(on))
	}
	if !ok || bin.Op != opcode.EQ {
		return nil, nil, b.errAt("ON", CodeFeatureNotSupport, "Invalid join condition: a join's condition is left_expression = right_expression (ANDed, for a table with several key columns). Got %s.", b.onText())
	}
	l, err := b.expr(bin.L)
	if err != nil {
		return nil, nil, err
	}
	r, err := b.expr(bin.R)
	if err != nil {
		return nil, nil, err
	}
	js := b.join
	sideOf := func(e expr.Expr) int {
		used := make([]bool, b.schema.Len())
		expr.MarkColumns(e, used)
		var in [2]bool
		for i, u := range used {
			if u && i >= js.sides[1].offset {
				in[1] = true
			} else if u {
				in[0] = true
			}
		}
		switch {
		case in[0] && !in[1], !in[0] && !in[1] && b.constJoin:
			// (A scalar subquery's join is on a constant, the outer
			// side's: subquery.go.)
			return 0
		case in[1] && !in[0]:
			return 1
		}
		return -1
	}
	ls, rs := sideOf(l), sideOf(r)
	for _, bad := range []struct {
		e    expr.Expr
		side int
	}{{l, ls}, {r, rs}} {
		if bad.side < 0 {
			return nil, nil, b.errAt("ON", CodeFeatureNotSupport, "Invalid comparison expression '%s' in join '(%s = %s)'. Each side of the join comparision must contain references from exactly one source.", b.show(bad.e), b.show(l), b.show(r))
		}
	}
	if ls == rs {
		if ls == 0 && js.sides[0].inner != nil {
			// An N-way join's condition that names only the sources
			// before it: ksqlDB names them.
			leaf := func(e expr.Expr) string {
				used := make([]bool, b.schema.Len())
				expr.MarkColumns(e, used)
				for i, u := range used {
					for _, lf := range js.leaves {
						if u && i >= lf.offset && i < lf.offset+lf.schema.Len() {
							return lf.name
						}
					}
				}
				return "?"
			}
			return nil, nil, b.errAt("ON", CodeFeatureNotSupport, "A join criteria is expected to reference the source (`%s`) in the FROM clause, instead the right source references `%s` and the left source references `%s` (got %s = %s).",
				js.sides[1].name, leaf(r), leaf(l), b.show(l), b.show(r))
		}
		return nil, nil, b.errAt("ON", CodeFeatureNotSupport, "Invalid join condition: each side of the join comparison must reference a different source. Got %s = %s.", b.show(l), b.show(r))
	}
	js.swapped = ls == 1
	if ls == 1 {
		l, r = r, l
	}
	return l, r, nil
}

// joinColumn resolves a column name in a join: qualified by a side's
// alias or name, or unqualified when only one side has it.
func (b *binder) joinColumn(cn *ast.ColumnName) (expr.Expr, error) {
	js, name, q := b.join, cn.Name.O, cn.Table.O
	var side *joinSide
	i := -1
	if q != "" {
		for _, l := range js.leaves {
			if l.is(q) {
				side = l
			}
		}
		if side == nil {
			return nil, b.qualErr(q, name, CodeUndefinedTable, "Failed to prepare statement: '%s' is not a valid stream/table name or alias.", q)
		}
		if i = side.schema.Index(name); i < 0 {
			if js.on {
				return nil, b.qualErr(q, name, CodeUndefinedColumn, "JOIN ON column '%s.%s' cannot be resolved.", q, name)
			}
			return nil, b.unresolved(q, name, side.src.Name)
		}
	} else {
		var found []*joinSide
		for _, l := range js.leaves {
			if k := l.schema.Index(name); k >= 0 {
				found = append(found, l)
				side, i = l, k
			}
		}
		switch {
		case len(found) > 1:
			return nil, b.errAt(name, CodeSyntaxError, "Column '%s' is ambiguous. Could be %s.%s or %s.%s.", name, found[0].name, name, found[1].name, name)
		case len(found) == 1:
		case js.rowsKeyNamed(name) >= 0:
			k := js.rowsKeyNamed(name)
			c := b.schema.Columns[k]
			return &expr.Column{Index: k, Name: c.Name, T: c.Type}, nil
		case js.synth >= 0 && name == js.synthName:
			c := b.schema.Columns[js.synth]
			return &expr.Column{Index: js.synth, Name: c.Name, T: c.Type}, nil
		case js.on:
			return nil, b.errAt(name, CodeUndefinedColumn, "JOIN ON column '%s' cannot be resolved.", name)
		default:
			names := make([]string, len(js.leaves))
			for k, l := range js.leaves {
				names[k] = l.src.Name
			}
			return nil, b.unresolved("", name, strings.Join(names, " or "))
		}
	}
	c := b.schema.Columns[side.offset+i]
	return &expr.Column{Index: side.offset + i, Name: c.Name, T: c.Type}, nil
}

// joinName is the default name of a selected column of a join, as
// ksqlDB gives it: the column's own name, or <side>_<column> when both
// sides have a column of that name.
func (b *binder) joinName(c *expr.Column) string {
	js := b.join
	if js.synth >= 0 && c.Index == js.synth {
		return js.synthName
	}
	if c.Index >= js.end() {
		return c.Name // a column added after the join (a table function's)
	}
	if name, ok := js.rowsOnly(c.Index); ok {
		return name
	}
	side := js.side(c.Index)
	col := side.schema.Columns[c.Index-side.offset].Name
	for _, l := range js.leaves {
		if l != side && l.schema.Index(col) >= 0 {
			return c.Name
		}
	}
	return col
}

// show renders a bound expression of a join for errors: a column as
// side.COLUMN, as the user wrote it.
func (b *binder) show(e expr.Expr) string {
	if c, ok := e.(*expr.Column); ok && b.join != nil && c.Index < b.join.end() {
		if name, ok := b.join.rowsOnly(c.Index); ok {
			return name
		}
		side := b.join.side(c.Index)
		return side.name + "." + side.schema.Columns[c.Index-side.offset].Name
	}
	if c, ok := e.(*expr.Cast); ok && !c.Implicit {
		return "CAST(" + b.show(c.X) + " AS " + c.T.String() + ")"
	}
	return e.String()
}

// sideColumns returns the positions of the columns SELECT q.* gives in a
// join: the visible columns of the side q names.
func (b *binder) sideColumns(q string) ([]int, error) {
	for _, s := range b.join.leaves {
		if s.is(q) {
			var out []int
			for _, i := range s.schema.Visible() {
				if at := s.offset + i; !b.join.hidden[at] && at != b.join.synth {
					out = append(out, at)
				}
			}
			return out, nil
		}
	}
	return nil, b.errAt(q, CodeUndefinedTable, "'%s' is not a valid stream/table name or alias.", q)
}

// qualErr is an error at the first q.name of the statement (at q when
// there is none).
func (b *binder) qualErr(q, name, code, format string, args ...any) *Error {
	for i := 0; i+2 < len(b.toks); i++ {
		t := b.toks
		if (t[i].kind == tIdent || t[i].kind == tQuoted) && t[i].text == q && isPunct(t[i+1], ".") && t[i+2].text == name {
			return errorAt(b.text, t[i].pos, code, format, args...)
		}
	}
	return b.errAt(q, code, format, args...)
}

// onText returns the ON condition as written, for errors: from after ON
// to the clause that follows it.
func (b *binder) onText() string {
	t := b.toks
	start, depth := -1, 0
	for i := 0; i < len(t) && t[i].kind != tEOF; i++ {
		switch {
		case isPunct(t[i], "("):
			depth++
		case isPunct(t[i], ")"):
			depth--
		case depth != 0:
		case start < 0 && t[i].is("ON"):
			start = i + 1
		case start >= 0 && (isPunct(t[i], ";") || t[i].is("WHERE") || t[i].is("EMIT") || t[i].is("GROUP") || t[i].is("PARTITION") ||
			t[i].is("HAVING") || t[i].is("LIMIT") || t[i].is("WINDOW") || t[i].is("JOIN") || t[i].is("LEFT") || t[i].is("INNER")):
			if i > start {
				return b.text[t[start].pos:t[i-1].end]
			}
			return ""
		}
	}
	if start < 0 || start >= len(t) || t[start].kind == tEOF {
		return ""
	}
	last := len(t) - 1
	for last > start && t[last].kind == tEOF {
		last--
	}
	return b.text[t[start].pos:t[last].end]
}

// joinKeyAsKey lets the table's key column stand for the join key in the
// SELECT list of a CREATE STREAM … AS that does not select the stream's
// key column, as ksqlDB
// lets either side's join column be the result's key: the first plain
// reference to it reads the stream's key instead (the same value for
// every row the join emits, and the key even when a LEFT join finds no
// table row).
func (b *binder) joinKeyAsKey(exprs []expr.Expr) {
	js := b.join
	if js.synth >= 0 || js.fk {
		return // a FULL join's key is its synthetic column; a foreign-key join's, the left's key
	}
	skeys := js.sides[0].schema.KeyIndexes()
	tkeys := js.sides[1].src.Schema.KeyIndexes()
	if len(skeys) != 1 || len(tkeys) != 1 {
		return
	}
	skey, tkey := skeys[0], js.sides[1].offset+tkeys[0]
	for _, e := range exprs {
		if c, ok := e.(*expr.Column); ok && c.Index == skey {
			return
		}
	}
	for i, e := range exprs {
		if c, ok := e.(*expr.Column); ok && c.Index == tkey {
			k := b.schema.Columns[skey]
			exprs[i] = &expr.Column{Index: skey, Name: k.Name, T: k.Type}
			return
		}
	}
}

// joinKeyColumn returns the join's key column for a SELECT expression
// that is the expression the stream was repartitioned by (ksqlDB lets the
// projection name the join expression to select the key); e otherwise.
func (b *binder) joinKeyColumn(e expr.Expr) expr.Expr {
	rk := b.join.rekey
	if rk == nil {
		return e
	}
	for n, ke := range rk.Exprs {
		k := rk.Keys[n]
		if c, ok := ke.(*expr.Column); ok && c.Index == k {
			continue // a plain column is the key already
		}
		if ke.String() == e.String() {
			c := b.schema.Columns[k]
			return &expr.Column{Index: k, Name: c.Name, T: c.Type}
		}
	}
	return e
}

// joinRekeyedStar lists the columns SELECT * gives after PARTITION BY of
// a join's rows, in ksqlDB's layout of them (each source's columns with
// its pseudo and key columns in its value): the new key columns, then
// each source's in turn — its value columns, its ROWTIME, ROWPARTITION
// and ROWOFFSET, then its key columns. Columns a repartition added and a
// FULL join's synthetic key stay out.
func (b *binder) joinRekeyedStar(rk *planner.Rekey) []int {
	js := b.join
	out := append([]int(nil), rk.Keys...)
	isKey := map[int]bool{}
	for _, k := range rk.Keys {
		isKey[k] = true
	}
	for _, l := range js.leaves {
		own := l.src.RowSchema().Columns
		var vals, pseudo, keys []int
		for i, c := range l.schema.Columns {
			at := l.offset + i
			switch {
			case i >= len(own) || isKey[at] || js.hidden[at] || at == js.synth || c.Window:
			case c.Pseudo:
				pseudo = append(pseudo, at)
			case own[i].Key:
				keys = append(keys, at)
			default:
				vals = append(vals, at)
			}
		}
		out = append(append(append(out, vals...), pseudo...), keys...)
	}
	return out
}

// onSides returns the ON condition's two operands as written, the left
// side's first (after joinCondition has bound it).
func (b *binder) onSides(on ast.ExprNode) (left, right ast.ExprNode) {
	for {
		p, ok := on.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		on = p.Expr
	}
	bin := on.(*ast.BinaryOperationExpr)
	if b.join.swapped {
		return bin.R, bin.L
	}
	return bin.L, bin.R
}

// nestedLeft binds the join on the left of a JOIN (a JOIN b … in a JOIN b
// … JOIN c …) and makes it js's left side: its rows, with the names of
// its sources, keyed by its join key. The left join must give a stream
// (a stream–table or stream–stream join).
func (b *binder) nestedLeft(sel *Select, l *ast.Join, js *joinScope) error {
	inner, err := b.bindJoin(sel, l)
	if err != nil {
		return err
	}
	scope := b.join
	first := scope.sides[0].src // the inner join's left: a source, or its own stand-in
	rows := inner.Schema()
	// The stand-in for the left join's rows: a stream keyed by the join
	// key, named after its first source. How its rows are keyed and
	// partitioned after the repartitions of the join is the planner's
	// (rule CoPartitionJoins); a table join's rows keep the key format
	// and partition count of its first table.
	stand := &catalog.Source{Name: first.Name, Kind: catalog.Stream, KeyFormat: first.KeyFormat, KeyOptions: first.KeyOptions,
		Partitions: first.Partitions, Partitioner: first.Partitioner, Schema: rows}
	if inner.OfTables() {
		// A table–table join's rows are a table keyed like its left
		// table: the next join is a (foreign-key) table–table join.
		stand.Kind = catalog.Table
	}
	left := &js.sides[0]
	left.src, left.schema, left.node, left.inner = stand, rows, inner, scope
	return nil
}

// onPos returns the position of the ON of the join being bound (the
// n-th ON of an N-way join), or -1.
func (b *binder) onPos() int {
	n := len(b.join.leaves) - 1
	if n < 1 {
		return -1
	}
	for _, t := range b.toks {
		if t.kind == tIdent && t.is("ON") {
			if n--; n == 0 {
				return t.pos
			}
		}
	}
	return -1
}

// keysFirst returns cols with the key columns first, the others after
// them, each in their order.
func keysFirst(schema types.Schema, cols []int) []int {
	out := make([]int, 0, len(cols))
	for _, c := range cols {
		if schema.Columns[c].Key {
			out = append(out, c)
		}
	}
	for _, c := range cols {
		if !schema.Columns[c].Key {
			out = append(out, c)
		}
	}
	return out
}

// nthOn returns the position of the statement's n-th ON (-1 for n < 1,
// the text's end when there are fewer).
func (b *binder) nthOn(n int) int {
	if n < 1 {
		return -1
	}
	for _, t := range b.toks {
		if t.kind == tIdent && t.is("ON") {
			if n--; n == 0 {
				return t.pos
			}
		}
	}
	return len(b.text)
}

// joinConditions binds ON's a = b [AND c = d …] and returns each
// equality's stream side and table side, in the order written.
func (b *binder) joinConditions(on ast.ExprNode) (left, right []expr.Expr, err error) {
	for {
		p, ok := on.(*ast.ParenthesesExpr)
		if !ok {
			break
		}
		on = p.Expr
	}
	if bin, ok := on.(*ast.BinaryOperationExpr); ok && bin.Op == opcode.LogicAnd {
		l1, r1, err := b.joinConditions(bin.L)
		if err != nil {
			return nil, nil, err
		}
		l2, r2, err := b.joinConditions(bin.R)
		if err != nil {
			return nil, nil, err
		}
		return append(l1, l2...), append(r1, r2...), nil
	}
	l, r, err := b.joinCondition(on)
	if err != nil {
		return nil, nil, err
	}
	return []expr.Expr{l}, []expr.Expr{r}, nil
}

// projectJoinKey applies ksqlDB's key rules to a persistent query's
// projection exprs (named names) over a join's rows (JoinNode's
// validateKeyPresent and FinalProjectNode): the projection must select
// the join's key column or, failing that, one of the source columns that
// stand for it (the first of them, in ksqlDB's order, becomes the key:
// its references read the key column); the key may appear only once.
// sink names the query's result in errors.
func (b *binder) projectJoinKey(exprs []expr.Expr, names []string, sink string) error {
	js := b.join
	refs := func(pos int) []int {
		var out []int
		for i, e := range exprs {
			if c, ok := e.(*expr.Column); ok && c.Index == pos {
				out = append(out, i)
			}
		}
		return out
	}
	if len(refs(js.key)) == 0 {
		if len(js.viable) == 0 {
			name := js.synthName
			return Errorf(CodeSyntaxError, "Key missing from projection (ie, SELECT). See https://cnfl.io/2LV7ouS.\n"+
				"The query used to build %s must include the join expression %s in its projection (eg, SELECT %s...).\n"+
				"%s was added as a synthetic key column because the join criteria did not match any source column. "+
				"This expression must be included in the projection and may be aliased.", sink, name, name, name)
		}
		found := -1
		for _, v := range js.viable {
			if len(refs(v)) > 0 {
				found = v
				break
			}
		}
		if found < 0 {
			shown := make([]string, len(js.viable))
			for i, v := range js.viable {
				c := b.schema.Columns[v]
				shown[i] = b.show(&expr.Column{Index: v, Name: c.Name, T: c.Type})
			}
			what := "join expression " + shown[0]
			if len(shown) > 1 {
				what = "join expressions " + strings.Join(shown[:len(shown)-1], ", ") + " or " + shown[len(shown)-1]
			}
			return Errorf(CodeSyntaxError, "Key missing from projection (ie, SELECT). \nThe query used to build %s must include the %s in its projection (eg, SELECT %s...).", sink, what, shown[0])
		}
		k := b.schema.Columns[js.key]
		for _, i := range refs(found) {
			exprs[i] = &expr.Column{Index: js.key, Name: k.Name, T: k.Type}
		}
	}
	if r := refs(js.key); len(r) > 1 {
		as := make([]string, len(r))
		for i, n := range r {
			as[i] = names[n]
		}
		sort.Strings(as)
		name := b.schema.Columns[js.key].Name
		if js.synth == js.key {
			name = js.synthName
		}
		return Errorf(CodeDuplicateObject, "The projection contains a key column (`%s`) more than once, aliased as: %s.", name, strings.Join(as, " and "))
	}
	return nil
}

// kafkaValueJoin refuses a join of sources in the KAFKA value format, as
// ksqlDB's analyzer does (queries recorded before keep running them).
func (b *binder) kafkaValueJoin(sel *Select, j *ast.Join) error {
	if sel.LegacyJoinKeys {
		return nil
	}
	var names []string
	var walk func(rs ast.ResultSetNode)
	walk = func(rs ast.ResultSetNode) {
		switch n := rs.(type) {
		case *ast.Join:
			walk(n.Left)
			if n.Right != nil {
				walk(n.Right)
			}
		case *ast.TableSource:
			tn, ok := n.Source.(*ast.TableName)
			if !ok {
				return
			}
			if src, ok := b.cat.Source(tn.Name.O); ok && src.ValueFormat == types.FormatKafka {
				name := n.AsName.O
				if name == "" {
					name = src.Name
				}
				names = append(names, name)
			}
		}
	}
	walk(j)
	if len(names) == 0 {
		return nil
	}
	return b.errAt("JOIN", CodeFeatureNotSupport, "Source(s) %s are using the 'KAFKA' value format. This format does not yet support JOIN.", strings.Join(names, ", "))
}
