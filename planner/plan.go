package planner

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

// Node is a logical plan node. Nodes are immutable.
type Node interface {
	// Schema is the layout of the rows the node produces.
	Schema() types.Schema
	// Children returns the node's inputs.
	Children() []Node
	// String describes the node alone, on one line, for EXPLAIN.
	String() string
}

var (
	_ Node = (*Scan)(nil)
	_ Node = (*Filter)(nil)
	_ Node = (*Project)(nil)
	_ Node = (*Sink)(nil)
)

// Scan reads a stream or table. Its rows are the source's declared
// columns followed by the pseudo columns.
//
// A scan with Computed reads a table the query computes itself (SQL
// dialect): Source stands in for the table Computed.Plan's rows make,
// which the query writes to an internal topic of its own (keyed by
// Source's key columns, JSON) and reads back, as if it were a source
// table (see Computed).
type Scan struct {
	Source   *catalog.Source
	Computed *Computed
	out      types.Schema
}

// Computed is a table a query computes and joins (a Scan's): a derived
// table or WITH query that aggregates, joined to another table
// (sql/bind_join_derived.go), or a subquery's set (x IN (SELECT c FROM
// t GROUP BY c), a scalar subquery's one-row table: sql/subquery.go),
// the right side of the join the subquery becomes. Lowering adds, as
// sub-topologies of their own, Plan's nodes (names ending in Names'
// suffix) and a sink of its rows (a tombstone for a row that goes) to
// the internal, compacted topic <appid>-<table>-table with
// Source.Partitions partitions (0: the input's); the join reads that
// topic as a table's, keeping it in a store whose changelog it is, so
// that a restart restores the store from it.
//
// A computed stream (Source.Kind Stream: a windowed aggregation's final
// rows joined by an interval join, sql/bind_join_final.go) is written
// to <appid>-<table>-stream instead, not compacted and without keys,
// and read back as a stream: a side of a stream–stream join, or under
// its repartition (physical's computedStreams).
type Computed struct {
	Plan Node
	// Set marks a subquery's set: its names (Names) and EXPLAIN's
	// rendering are the ones subquery sets had first.
	Set bool
}

// Names returns the names lowering gives the computed table of a
// source named name: the topic's <table> (<appid>-<table>-table), its
// sink's (SINK-<sink>) and the suffix of Plan's own node, store and
// topic names. A derived table X: DERIVED-X, DERIVED-X, -X; a
// subquery's set (named SUBQUERY_<t> by the binder): SUBQUERY_<t>,
// SUBQUERY, -SUBQUERY.
func (c *Computed) Names(name string) (table, sink, suffix string) {
	if c.Set {
		return name, "SUBQUERY", "-SUBQUERY"
	}
	return "DERIVED-" + name, "DERIVED-" + name, "-" + name
}

// NewScan returns a scan of src.
func NewScan(src *catalog.Source) *Scan {
	return &Scan{Source: src, out: src.RowSchema()}
}

func (s *Scan) Schema() types.Schema { return s.out }

// OfTable reports whether the scan reads a table.
func (s *Scan) OfTable() bool    { return s.Source.Kind == catalog.Table }
func (s *Scan) Children() []Node { return nil }
func (s *Scan) String() string {
	if s.Computed != nil && !s.Computed.Set && s.Source.Kind == catalog.Stream {
		return fmt.Sprintf("Scan derived STREAM %s (key %s, value %s, event time %s), the rows of:", s.Source.Name, s.Source.KeyFormat, s.Source.ValueFormat, s.Source.TimestampColumn)
	}
	if s.Computed != nil && !s.Computed.Set {
		return fmt.Sprintf("Scan derived TABLE %s (key %s, value %s), the rows of:", s.Source.Name, s.Source.KeyFormat, s.Source.ValueFormat)
	}
	if s.Computed != nil {
		return fmt.Sprintf("Scan %s %s (the subquery's set, computed by the query, key %s, value %s)", s.Source.Kind, s.Source.Name, s.Source.KeyFormat, s.Source.ValueFormat)
	}
	return fmt.Sprintf("Scan %s %s (topic %s, key %s, value %s)", s.Source.Kind, s.Source.Name, s.Source.Topic, s.Source.KeyFormat, s.Source.ValueFormat)
}

// Filter keeps the rows for which Predicate is true.
type Filter struct {
	Input     Node
	Predicate expr.Expr
}

// NewFilter checks that pred is a boolean over input's rows.
func NewFilter(input Node, pred expr.Expr) (*Filter, error) {
	if k := pred.Type().Kind; k != types.Boolean && k != types.Unknown {
		return nil, fmt.Errorf("Should evaluate to boolean but is %s (%s) instead.", strings.ReplaceAll(pred.String(), " := ", ":="), pred.Type().Quoted())
	}
	return &Filter{Input: input, Predicate: pred}, nil
}

func (f *Filter) Schema() types.Schema { return f.Input.Schema() }
func (f *Filter) Children() []Node     { return []Node{f.Input} }
func (f *Filter) String() string       { return "Filter " + f.Predicate.String() }

// Project computes the output columns. A column that passes an input key
// column through unchanged stays a key column.
type Project struct {
	Input Node
	Exprs []expr.Expr
	out   types.Schema
}

// NewProject builds a projection of exprs named names over input.
func NewProject(input Node, exprs []expr.Expr, names []string) (*Project, error) {
	in := input.Schema()
	cols := make([]types.Column, len(exprs))
	for i, e := range exprs {
		for j := 0; j < i; j++ {
			if cols[j].Name == names[i] {
				return nil, fmt.Errorf("Duplicate value columns found in schema: `%s` %s; give one an alias with AS", names[i], e.Type())
			}
		}
		t := e.Type()
		if t.Kind == types.Unknown {
			return nil, untypedError(e)
		}
		cols[i] = types.Column{Name: names[i], Type: t}
		if c, ok := e.(*expr.Column); ok && in.Columns[c.Index].Key {
			cols[i].Key = true
		}
	}
	return &Project{Input: input, Exprs: exprs, out: types.Schema{Columns: cols}}, nil
}

// untypedError refuses the projection of e, whose type is unknown (it is
// NULL whatever the row), in ksqlDB's words.
func untypedError(e expr.Expr) error {
	switch x := e.(type) {
	case *expr.Literal:
		return fmt.Errorf("Can't infer a type of null. Please explicitly cast it to a required type, e.g. CAST(null AS VARCHAR).")
	case *expr.Case:
		return fmt.Errorf("Invalid Case expression. All case branches have NULL type: CAST one of them")
	case *expr.Call:
		nulls := make([]string, len(x.Args))
		for i := range nulls {
			nulls[i] = "null"
		}
		return fmt.Errorf("Function '%s' cannot be resolved due to ambiguous method parameters (%s). CAST one of them.", x.Fn.Name, strings.Join(nulls, ", "))
	}
	return fmt.Errorf("cannot infer the type of %s; CAST it", e)
}

func (p *Project) Schema() types.Schema { return p.out }
func (p *Project) Children() []Node     { return []Node{p.Input} }
func (p *Project) String() string {
	parts := make([]string, len(p.Exprs))
	for i, e := range p.Exprs {
		parts[i] = e.String() + " AS " + p.out.Columns[i].Name
	}
	return "Project " + strings.Join(parts, ", ")
}

// MissingKeys returns the names of the input's key columns that the
// projection does not pass through. ksqlDB requires a persistent query's
// projection to include them.
func (p *Project) MissingKeys() []string {
	if overGlobal(p.Input) {
		return nil // a global aggregate's key is internal (Aggregate.Global)
	}
	in := p.Input.Schema()
	var missing []string
	for _, k := range in.KeyIndexes() {
		found := false
		for _, e := range p.Exprs {
			if c, ok := e.(*expr.Column); ok && c.Index == k {
				found = true
			}
		}
		if !found {
			missing = append(missing, in.Columns[k].Name)
		}
	}
	return missing
}

// Sink writes its input to Target's topic.
type Sink struct {
	Input  Node
	Target *catalog.Source
	// Dialect is the query's (see Dialect); Rules the planner's rules
	// that rewrote it, for EXPLAIN and the planner's tests.
	Dialect Dialect
	Rules   []string
}

func (s *Sink) Schema() types.Schema { return s.Input.Schema() }
func (s *Sink) Children() []Node     { return []Node{s.Input} }
func (s *Sink) String() string {
	return fmt.Sprintf("Sink %s %s (topic %s, key %s, value %s)", s.Target.Kind, s.Target.Name, s.Target.Topic, s.Target.KeyFormat, s.Target.ValueFormat)
}

// Query is a planned SELECT: a push query (Emit set) or a pull query.
type Query struct {
	Root  Node
	Emit  string // "CHANGES", "FINAL" or "" for a pull query
	Limit int64  // -1 for none
	// Dialect is the query's (see Dialect); Rules the planner's rules
	// that rewrote it.
	Dialect Dialect
	Rules   []string
}

// Sources returns the catalog sources the plan reads, in tree order.
func Sources(n Node) []*catalog.Source {
	var out []*catalog.Source
	var walk func(Node)
	walk = func(n Node) {
		if s, ok := n.(*Scan); ok && s.Computed != nil {
			walk(s.Computed.Plan) // a computed table's: what its plan reads
			return
		} else if ok {
			out = append(out, s.Source)
		}
		for _, c := range n.Children() {
			walk(c)
		}
	}
	walk(n)
	return out
}

// Explain renders the plan as an indented tree, root first.
func Explain(n Node) string {
	var b strings.Builder
	var walk func(Node, int)
	walk = func(n Node, depth int) {
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteString(n.String())
		b.WriteString("\n")
		b.WriteString(strings.Repeat("  ", depth+1))
		b.WriteString("schema: ")
		b.WriteString(n.Schema().String())
		b.WriteString("\n")
		for _, c := range n.Children() {
			walk(c, depth+1)
		}
		if s, ok := n.(*Scan); ok && s.Computed != nil && !s.Computed.Set {
			walk(s.Computed.Plan, depth+1) // a derived table's rows
		}
	}
	walk(n, 0)
	return b.String()
}

var _ Node = (*Rekey)(nil)

// Rekey is PARTITION BY: its rows carry new key columns computed from
// Exprs. A key expression that is a plain column makes that column the key;
// any other expression adds a key column named KSQL_COL_<n>. The input's
// old key columns become value columns. PARTITION BY NULL leaves the rows
// without a key: Exprs and Keys are empty.
type Rekey struct {
	Input Node
	Exprs []expr.Expr
	// Keys are the output positions of the key columns, one per expression.
	Keys []int
	// SameRows marks a Rekey by the input's own key columns, its rows
	// as they were: rule CoPartitionJoins's, for a join side keyed by
	// the join key but partitioned otherwise than the other side.
	SameRows bool
	out      types.Schema
}

// NewRekey builds a PARTITION BY over input. names[i], when given and
// not empty, names the key column of a key expression that is not a
// plain column (default KSQL_COL_<i>).
func NewRekey(input Node, exprs []expr.Expr, names []string) (*Rekey, error) {
	in := input.Schema()
	cols := make([]types.Column, len(in.Columns))
	copy(cols, in.Columns)
	for i := range cols {
		cols[i].Key = false
	}
	r := &Rekey{Input: input, Exprs: exprs}
	if len(exprs) == 1 && exprs[0].Type().Kind == types.Unknown {
		// PARTITION BY NULL: no key at all, as in ksqlDB (the result's
		// key format is NONE).
		r.Exprs = nil
		r.out = types.Schema{Columns: cols}
		return r, nil
	}
	for i, e := range exprs {
		if e.Type().Kind == types.Unknown {
			return nil, fmt.Errorf("Cannot PARTITION BY multiple columns including NULL")
		}
		if c, ok := e.(*expr.Column); ok && !in.Columns[c.Index].Pseudo {
			if cols[c.Index].Key {
				return nil, fmt.Errorf("PARTITION BY names %s twice", c.Name)
			}
			cols[c.Index].Key = true
			r.Keys = append(r.Keys, c.Index)
			continue
		}
		name := "KSQL_COL_" + strconv.Itoa(i)
		if i < len(names) && names[i] != "" {
			name = names[i]
		}
		cols = append(cols, types.Column{Name: name, Type: e.Type(), Key: true})
		r.Keys = append(r.Keys, len(cols)-1)
	}
	r.out = types.Schema{Columns: cols}
	return r, nil
}

func (r *Rekey) Schema() types.Schema { return r.out }
func (r *Rekey) Children() []Node     { return []Node{r.Input} }
func (r *Rekey) String() string {
	parts := make([]string, len(r.Exprs))
	for i, e := range r.Exprs {
		parts[i] = e.String()
	}
	return "Rekey PARTITION BY " + strings.Join(parts, ", ")
}

var _ Node = (*FlatMap)(nil)

// FlatMap applies table functions (EXPLODE) from the SELECT list: each
// input row becomes one row per element; with several table functions the
// longest result decides the row count and the shorter ones give NULLs, as
// in ksqlDB. Its rows are the input's columns followed by one column per
// table function, named KSQL_SYNTH_<n>.
type FlatMap struct {
	Input Node
	Fns   []*expr.TableFunction
	Args  [][]expr.Expr
	out   types.Schema
}

// NewFlatMap builds the table function calls fns(args) over input.
func NewFlatMap(input Node, fns []*expr.TableFunction, args [][]expr.Expr) (*FlatMap, error) {
	in := input.Schema()
	cols := append([]types.Column(nil), in.Columns...)
	for i, fn := range fns {
		ts := make([]types.Type, len(args[i]))
		for j, a := range args[i] {
			ts[j] = a.Type()
		}
		t, err := fn.Check(ts)
		if err != nil {
			return nil, err
		}
		cols = append(cols, types.Column{Name: "KSQL_SYNTH_" + strconv.Itoa(i), Type: t})
	}
	return &FlatMap{Input: input, Fns: fns, Args: args, out: types.Schema{Columns: cols}}, nil
}

func (f *FlatMap) Schema() types.Schema { return f.out }
func (f *FlatMap) Children() []Node     { return []Node{f.Input} }
func (f *FlatMap) String() string {
	parts := make([]string, len(f.Fns))
	for i, fn := range f.Fns {
		args := make([]string, len(f.Args[i]))
		for j, a := range f.Args[i] {
			args[j] = a.String()
		}
		parts[i] = fn.Name + "(" + strings.Join(args, ", ") + ")"
	}
	return "FlatMap " + strings.Join(parts, ", ")
}
