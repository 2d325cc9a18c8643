package sql

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"

	"github.com/sqlstreams/sqlstreams/types"
)

// aliasGen names the expressions a SELECT leaves unnamed, as ksqlDB's
// ColumnNames.columnAliasGenerator does: KSQL_COL_0, KSQL_COL_1, … in the
// order they are needed, skipping numbers the sources' own column names
// use; a struct dereference (s->f) is named after its field, F, then F_1,
// F_2, … when the name is taken. One generator serves a whole SELECT list
// (or PARTITION BY list), so the numbers count generated names, not
// positions.
//
// A generator made with positional set names every expression
// KSQL_COL_<its position in the list>, as sqlstreams did before: queries
// recorded then keep their column names when replayed.
type aliasGen struct {
	used       map[string]map[int]bool
	next       map[string]int
	positional bool
}

const generatedPrefix = "KSQL_COL"

// numbered splits NAME_12 into NAME and 12; a name without a numeric
// suffix is number 0.
var numbered = regexp.MustCompile(`^(.*?)(?:_(\d+))?$`)

func splitNumbered(name string) (string, int) {
	m := numbered.FindStringSubmatch(name)
	if m == nil || m[2] == "" {
		return name, 0
	}
	n, err := strconv.Atoi(m[2])
	if err != nil {
		return name, 0
	}
	return m[1], n
}

func newAliasGen(schemas ...types.Schema) *aliasGen {
	g := &aliasGen{used: map[string]map[int]bool{}, next: map[string]int{}}
	for _, s := range schemas {
		for _, c := range s.Columns {
			if c.Pseudo || c.Window {
				continue
			}
			base, n := splitNumbered(c.Name)
			if g.used[base] == nil {
				g.used[base] = map[int]bool{}
			}
			g.used[base][n] = true
		}
	}
	return g
}

// nextWith returns the next free name with prefix; numbers start at 0,
// and 0 is written without a suffix except for KSQL_COL.
func (g *aliasGen) nextWith(prefix string) string {
	for {
		idx := g.next[prefix]
		g.next[prefix]++
		if g.used[prefix][idx] {
			continue
		}
		if idx == 0 && prefix != generatedPrefix {
			return prefix
		}
		return prefix + "_" + strconv.Itoa(idx)
	}
}

// forExpr names an unnamed expression n at position pos of its list.
func (g *aliasGen) forExpr(n ast.ExprNode, pos int) string {
	if g.positional {
		return generatedPrefix + "_" + strconv.Itoa(pos)
	}
	if f := derefField(n); f != "" {
		base, _ := splitNumbered(f)
		return g.nextWith(base)
	}
	return g.nextWith(generatedPrefix)
}

// derefField returns the field name of a struct dereference (the
// rewritten s->f), or "".
func derefField(n ast.ExprNode) string {
	call, ok := unparen(n).(*ast.FuncCallExpr)
	if !ok || !strings.EqualFold(call.FnName.O, "__FIELD") || len(call.Args) != 2 {
		return ""
	}
	v, ok := call.Args[1].(*driver.ValueExpr)
	if !ok {
		return ""
	}
	return v.GetString()
}

// newAliasGen returns the alias generator of one list of sel.
func (b *binder) newAliasGen(sel *Select) *aliasGen {
	g := newAliasGen(b.sourceSchemas()...)
	g.positional = sel.PositionalAliases
	return g
}

// sourceSchemas are the schemas of the sources a SELECT reads, for the
// alias generator.
func (b *binder) sourceSchemas() []types.Schema {
	if b.join != nil {
		var out []types.Schema
		for _, s := range b.join.sides {
			if s.src != nil {
				out = append(out, s.src.Schema)
			}
		}
		return out
	}
	if b.src != nil {
		return []types.Schema{b.src.Schema}
	}
	return nil
}

// unparen strips parentheses around n.
func unparen(n ast.ExprNode) ast.ExprNode {
	for {
		p, ok := n.(*ast.ParenthesesExpr)
		if !ok {
			return n
		}
		n = p.Expr
	}
}
