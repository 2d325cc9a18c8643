package sql

import (
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/types"
)

// UNION ALL of streams: SELECT … FROM s1 WHERE … UNION ALL SELECT … FROM
// s2 … [EMIT CHANGES], as a push query or the SELECT of CREATE STREAM …
// AS / INSERT INTO … SELECT. Each branch is bound as a SELECT of its own
// (its own FROM, WHERE, projection, table functions, joins); the branches'
// rows must have one layout: as many columns, of the same types, with the
// key columns at the same positions (so that every branch's records are
// keyed, and placed in the result's partitions, alike). The result takes
// the first branch's column names, and its source's formats and partition
// count, as a single SELECT takes its source's; every record is written to
// the partition its key hashes to (murmur2), whichever branch it came
// from, so branches reading topics of different partition counts place
// each key in one partition of the result.
//
// Refused, with the branch's position: UNION (without ALL), EXCEPT,
// INTERSECT, ORDER BY, branches over tables or windowed streams, with
// GROUP BY, WINDOW, PARTITION BY or window table functions, and
// placeholders.

// unionBranches checks a set operation TiDB parsed and returns its
// branches, in order.
func (sel *Select) unionBranches(u *ast.SetOprStmt) ([]*ast.SelectStmt, error) {
	pos := sel.branchPositions()
	at := func(i int) int {
		if i < len(pos) {
			return pos[i]
		}
		return pos[0]
	}
	if u.OrderBy != nil || u.SelectList.OrderBy != nil {
		return nil, errorAt(sel.text, sel.keywordPos("ORDER", at(0)), CodeFeatureNotSupport, "ORDER BY is not supported on streams")
	}
	if u.With != nil || u.SelectList.With != nil {
		return nil, errorAt(sel.text, at(0), CodeFeatureNotSupport, "WITH before a UNION ALL is not supported")
	}
	var out []*ast.SelectStmt
	var walk func(l *ast.SetOprSelectList) error
	walk = func(l *ast.SetOprSelectList) error {
		for _, n := range l.Selects {
			i := len(out)
			var op *ast.SetOprType
			switch n := n.(type) {
			case *ast.SelectStmt:
				op = n.AfterSetOperator
			case *ast.SetOprSelectList:
				op = n.AfterSetOperator
			}
			if i > 0 && op != nil && *op != ast.UnionAll {
				what := op.String()
				if *op == ast.Union {
					return errorAt(sel.text, at(i), CodeFeatureNotSupport, "UNION (without ALL) is not supported: its rows are distinct; write UNION ALL")
				}
				return errorAt(sel.text, at(i), CodeFeatureNotSupport, "%s is not supported; UNION ALL is", what)
			}
			switch n := n.(type) {
			case *ast.SelectStmt:
				if n.Kind != ast.SelectStmtKindSelect {
					return errorAt(sel.text, at(i), CodeFeatureNotSupport, "UNION ALL takes SELECTs")
				}
				if n.OrderBy != nil || n.Limit != nil {
					return errorAt(sel.text, at(i), CodeFeatureNotSupport, "a UNION ALL branch takes no ORDER BY or LIMIT (LIMIT goes after the last branch)")
				}
				out = append(out, n)
			case *ast.SetOprSelectList:
				if err := walk(n); err != nil {
					return err
				}
			default:
				return errorAt(sel.text, at(i), CodeFeatureNotSupport, "UNION ALL takes SELECTs")
			}
		}
		return nil
	}
	if err := walk(u.SelectList); err != nil {
		return nil, err
	}
	switch {
	case sel.tvf != nil:
		return nil, errorAt(sel.text, sel.tvf.pos, CodeFeatureNotSupport, "a window table function in a UNION ALL branch is not supported")
	case sel.window != nil:
		return nil, errorAt(sel.text, sel.window.pos, CodeFeatureNotSupport, "WINDOW in a UNION ALL branch is not supported")
	case sel.partitionBy > 0:
		return nil, errorAt(sel.text, sel.toks[sel.partitionBy-2].pos, CodeFeatureNotSupport, "PARTITION BY in a UNION ALL branch is not supported")
	}
	if u.Limit != nil {
		if u.Limit.Offset != nil {
			return nil, errorAt(sel.text, offsetPos(sel), CodeFeatureNotSupport, "LIMIT with OFFSET is not supported")
		}
		n, ok := intValue(u.Limit.Count)
		if !ok || n < 0 {
			return nil, errorAt(sel.text, lastPosOf(sel, "LIMIT"), CodeSyntaxError, "LIMIT takes a non-negative integer")
		}
		sel.Limit = n
	}
	sel.union = out
	return out, nil
}

// branchPositions returns the offsets of the SELECT keywords outside
// parentheses: the UNION ALL branches', in order.
func (sel *Select) branchPositions() []int {
	if sel.branchPos != nil {
		return sel.branchPos
	}
	var out []int
	d := 0
	for _, t := range sel.toks {
		switch {
		case isPunct(t, "("):
			d++
		case isPunct(t, ")"):
			d--
		case d == 0 && t.is("SELECT"):
			out = append(out, t.pos)
		}
	}
	if len(out) == 0 {
		out = append(out, 0)
	}
	return out
}

// bindUnion binds each branch as a SELECT and the UNION ALL of them.
func bindUnion(sel *Select, cat Catalog) (*planner.Query, error) {
	pos := sel.branchPositions()
	if sel.Emit == "" && !sel.persistent && !sel.inserting && !sel.derivedUnion {
		return nil, errorAt(sel.text, pos[0], CodeFeatureNotSupport, "Pull queries don't support UNION ALL: it reads streams. Add EMIT CHANGES for a push query.")
	}
	if sel.Emit == "FINAL" {
		return nil, errorAt(sel.text, pos[0], CodeFeatureNotSupport, "EMIT FINAL is only supported for windowed aggregations.")
	}
	if sel.nParams > 0 {
		return nil, errorAt(sel.text, pos[0], CodeFeatureNotSupport, "placeholders in a UNION ALL are not supported")
	}
	var projs []*planner.Project
	tables := 0 // branches that read tables
	for i, branch := range sel.union {
		at := pos[min(i, len(pos)-1)]
		bs := *sel
		bs.stmt, bs.union, bs.Limit, bs.unionBranch = branch, nil, -1, true
		q, err := BindSelect(&bs, cat)
		if err != nil {
			return nil, err
		}
		readsTable := false
		for _, s := range planner.Sources(q.Root) {
			readsTable = readsTable || s.Kind == catalog.Table
		}
		isTable := readsTable && planner.IsTable(q.Root)
		for _, s := range planner.Sources(q.Root) {
			switch {
			case s.Kind == catalog.Table && !sel.derivedUnion:
				return nil, errorAt(sel.text, at, CodeFeatureNotSupport, "UNION ALL reads streams: branch %d reads the table %s (a UNION ALL of tables is supported as the input of an aggregation: SELECT k, SUM(v) FROM (SELECT … FROM t1 UNION ALL SELECT … FROM t2) x GROUP BY k)", i+1, s.Name)
			case s.Kind == catalog.Table && (!isTable || findJoin(q.Root) != nil):
				return nil, errorAt(sel.text, at, CodeFeatureNotSupport, "UNION ALL branch %d reads the table %s in a join: a branch of a UNION ALL of tables reads one table", i+1, s.Name)
			case s.Windowed():
				return nil, errorAt(sel.text, at, CodeFeatureNotSupport, "UNION ALL of windowed streams is not supported: branch %d reads %s", i+1, s.Name)
			}
		}
		proj, ok := q.Root.(*planner.Project)
		if !ok || findAggregate(q.Root) != nil {
			return nil, errorAt(sel.text, at, CodeFeatureNotSupport, "a UNION ALL branch with GROUP BY is not supported: UNION ALL of streams")
		}
		if isTable {
			tables++
		}
		if sel.derivedUnion && tables > 0 && tables <= i {
			return nil, errorAt(sel.text, at, CodeFeatureNotSupport, "UNION ALL of a stream and a table is not supported: its branches read streams, or all read tables")
		}
		if (sel.persistent || sel.inserting) && !isTable {
			if missing := proj.MissingKeys(); len(missing) > 0 && findJoin(q.Root) == nil {
				return nil, errorAt(sel.text, at, CodeFeatureNotSupport, "UNION ALL branch %d must include its key column %s in its projection", i+1, strings.Join(missing, ", "))
			}
		}
		projs = append(projs, proj)
	}
	if err := widenBranches(projs); err != nil {
		return nil, err
	}
	if tables > 0 {
		return bindTableUnion(sel, projs)
	}
	inputs := make([]planner.Node, len(projs))
	for i, p := range projs {
		if i > 0 {
			if err := unionCompatible(sel, sel.union[i], i, projs[0], p); err != nil {
				return nil, err
			}
		}
		inputs[i] = p
	}
	u, err := planner.NewUnion(inputs)
	if err != nil {
		return nil, errorAt(sel.text, pos[0], CodeDatatypeMismatch, "%v", err)
	}
	s := u.Schema()
	exprs := make([]expr.Expr, len(s.Columns))
	names := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		exprs[i] = &expr.Column{Index: i, Name: c.Name, T: c.Type}
		names[i] = c.Name
	}
	proj, err := planner.NewProject(u, exprs, names)
	if err != nil {
		return nil, Errorf(CodeDatatypeMismatch, "%v", err)
	}
	return &planner.Query{Root: proj, Emit: sel.Emit, Limit: sel.Limit}, nil
}

// bindTableUnion binds a UNION ALL of tables (a derived table or CTE
// that an aggregation reads, fromSubquery): the branches' columns pair up
// by type only, since its rows have no key.
func bindTableUnion(sel *Select, projs []*planner.Project) (*planner.Query, error) {
	pos := sel.branchPositions()
	inputs := make([]planner.Node, len(projs))
	for i, p := range projs {
		if i > 0 {
			fs, ps := projs[0].Schema(), p.Schema()
			at := pos[min(i, len(pos)-1)]
			if len(fs.Columns) != len(ps.Columns) {
				return nil, errorAt(sel.text, at, CodeDatatypeMismatch, "UNION ALL branch %d has %d columns, branch 1 has %d: each branch selects as many columns, of the same types", i+1, len(ps.Columns), len(fs.Columns))
			}
			for j, c := range ps.Columns {
				if f := fs.Columns[j]; c.Type.String() != f.Type.String() {
					cpos := at
					if br := sel.union[i]; j < len(br.Fields.Fields) && br.Fields.Fields[j].WildCard == nil {
						cpos = sel.rw.orig(br.Fields.Fields[j].Offset)
					}
					return nil, errorAt(sel.text, cpos, CodeDatatypeMismatch, "UNION ALL column %d: branch %d's %s is %s, branch 1's %s is %s; CAST one of them", j+1, i+1, c.Name, c.Type, f.Name, f.Type)
				}
			}
		}
		inputs[i] = p
	}
	u, err := planner.NewTableUnion(inputs)
	if err != nil {
		return nil, errorAt(sel.text, pos[0], CodeDatatypeMismatch, "%v", err)
	}
	return &planner.Query{Root: u, Emit: sel.Emit, Limit: -1}, nil
}

// unionCompatible checks that branch i's projection p has the layout of
// the first branch's, naming the first column that differs.
func unionCompatible(sel *Select, branch *ast.SelectStmt, i int, first, p *planner.Project) error {
	pos := sel.branchPositions()
	at := pos[min(i, len(pos)-1)]
	fs, ps := first.Schema(), p.Schema()
	if len(fs.Columns) != len(ps.Columns) {
		return errorAt(sel.text, at, CodeDatatypeMismatch, "UNION ALL branch %d has %d columns, branch 1 has %d: each branch selects as many columns, of the same types", i+1, len(ps.Columns), len(fs.Columns))
	}
	for j, c := range ps.Columns {
		f := fs.Columns[j]
		cpos := at
		if j < len(branch.Fields.Fields) && branch.Fields.Fields[j].WildCard == nil {
			cpos = sel.rw.orig(branch.Fields.Fields[j].Offset)
		}
		switch {
		case c.Type.String() != f.Type.String():
			return errorAt(sel.text, cpos, CodeDatatypeMismatch, "UNION ALL column %d: branch %d's %s is %s, branch 1's %s is %s; CAST one of them", j+1, i+1, c.Name, c.Type, f.Name, f.Type)
		case c.Key != f.Key:
			kind := func(k bool) string {
				if k {
					return "a key column"
				}
				return "a value column"
			}
			return errorAt(sel.text, cpos, CodeDatatypeMismatch, "UNION ALL column %d: branch %d's %s is %s, branch 1's %s is %s; each branch's key columns come at the same positions", j+1, i+1, c.Name, kind(c.Key), f.Name, kind(f.Key))
		}
	}
	return nil
}

// numericRank orders the numeric types a UNION ALL column widens to.
var numericRank = map[types.Kind]int{types.Int: 1, types.Bigint: 2, types.Double: 3}

// widenBranches makes a value column that is INT in one branch and
// BIGINT or DOUBLE in another the widest of them in every branch (a CAST
// in the branch's projection), as SQL's UNION does. Other differences
// are errors (unionCompatible); key columns are never cast: a key's
// bytes decide its partition.
func widenBranches(projs []*planner.Project) error {
	n := len(projs[0].Schema().Columns)
	for _, p := range projs[1:] {
		if len(p.Schema().Columns) != n {
			return nil // unionCompatible says so
		}
	}
	for j := range n {
		widest := projs[0].Schema().Columns[j].Type
		ok := true
		for _, p := range projs {
			c := p.Schema().Columns[j]
			r, numeric := numericRank[c.Type.Kind]
			if !numeric || c.Key {
				ok = false
				break
			}
			if r > numericRank[widest.Kind] {
				widest = c.Type
			}
		}
		if !ok {
			continue
		}
		for i, p := range projs {
			if p.Schema().Columns[j].Type.Kind == widest.Kind {
				continue
			}
			exprs := slices.Clone(p.Exprs)
			cast, err := expr.NewCast(exprs[j], widest)
			if err != nil {
				return err
			}
			exprs[j] = cast
			names := make([]string, len(exprs))
			for k, c := range p.Schema().Columns {
				names[k] = c.Name
			}
			np, err := planner.NewProject(p.Input, exprs, names)
			if err != nil {
				return err
			}
			projs[i] = np
		}
	}
	return nil
}
