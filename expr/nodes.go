package expr

import (
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

var (
	_ Expr = (*Cast)(nil)
	_ Expr = (*In)(nil)
	_ Expr = (*Between)(nil)
	_ Expr = (*Like)(nil)
	_ Expr = (*Distinct)(nil)
	_ Expr = (*IsTrue)(nil)
	_ Expr = (*Case)(nil)
	_ Expr = (*Subscript)(nil)
	_ Expr = (*Field)(nil)
	_ Expr = (*Array)(nil)
	_ Expr = (*Map)(nil)
	_ Expr = (*Struct)(nil)
	_ Expr = (*Lambda)(nil)
	_ Expr = (*LambdaVar)(nil)
)

// Cast is CAST(X AS T). Implicit marks casts that coercion inserted; they
// print the same.
type Cast struct {
	X        Expr
	T        types.Type
	Implicit bool
}

func (c *Cast) Type() types.Type { return c.T }
func (c *Cast) Children() []Expr { return []Expr{c.X} }
func (c *Cast) String() string   { return "CAST(" + c.X.String() + " AS " + c.T.String() + ")" }

// NewCast builds CAST(x AS to). The conversions are ksqlDB's:
//
//   - between INT, BIGINT, DECIMAL and DOUBLE: to INT and BIGINT truncates
//     toward zero (DOUBLE saturates, BIGINT wraps to INT as in Java); to
//     DECIMAL rounds HALF_UP to the scale;
//   - STRING to BOOLEAN ('true', 't', 'yes', 'y' in any case are true,
//     anything else false), to INT, BIGINT, DECIMAL, DOUBLE (trimmed), to
//     DATE (yyyy-MM-dd), TIME (HH:mm[:ss[.SSS]]) and TIMESTAMP (ISO 8601,
//     date alone or with time and optional offset);
//   - TIMESTAMP to DATE and TIME, DATE to TIMESTAMP;
//   - anything but BYTES to STRING, as ksqlDB prints it (see appendJava);
//   - ARRAY to ARRAY, MAP to MAP elementwise; STRUCT to STRUCT by field
//     name (case-sensitive), target fields missing from the source NULL.
//
// A value that cannot be converted at run time (CAST('x' AS INT), a
// number too large for the target) is NULL, not an error. Conversions
// that ksqlDB does not support at all are a *TypeError here.
func NewCast(x Expr, to types.Type) (Expr, error) {
	from := x.Type()
	if to.Kind == types.Decimal {
		if _, err := DecimalType(to.Precision, to.Scale); err != nil {
			return nil, err
		}
	}
	if !castable(from, to) {
		return nil, typeErrorf("Cast of %s to %s is not supported", from.Quoted(), to.Quoted())
	}
	if l, ok := x.(*Literal); ok && l.V.Null {
		return &Literal{V: types.NullDatum, T: to}, nil
	}
	return &Cast{X: x, T: to}, nil
}

// castable reports whether ksqlDB casts from into to.
func castable(from, to types.Type) bool {
	if from.Kind == types.Unknown || from.Equal(to) {
		return true
	}
	switch {
	case from.IsNumeric() && to.IsNumeric():
		return true
	case to.Kind == types.String:
		return from.Kind != types.Bytes
	case from.Kind == types.String:
		switch to.Kind {
		case types.Boolean, types.Int, types.Bigint, types.Double, types.Decimal, types.Date, types.Time, types.Timestamp:
			return true
		}
	case from.Kind == types.Timestamp:
		return to.Kind == types.Date || to.Kind == types.Time
	case from.Kind == types.Date:
		return to.Kind == types.Timestamp
	case from.Kind == types.Array && to.Kind == types.Array:
		return castable(*from.Elem, *to.Elem)
	case from.Kind == types.Map && to.Kind == types.Map:
		return castable(*from.KeyType, *to.KeyType) && castable(*from.Elem, *to.Elem)
	case from.Kind == types.Struct && to.Kind == types.Struct:
		for _, tf := range to.Fields {
			for _, ff := range from.Fields {
				if ff.Name == tf.Name && !castable(ff.Type, tf.Type) {
					return false
				}
			}
		}
		return true
	}
	return false
}

// In is X [NOT] IN (List...). With SQL's three-valued logic: TRUE when X
// equals an element, otherwise NULL when X or an element is NULL,
// otherwise FALSE; NOT inverts TRUE and FALSE.
type In struct {
	X    Expr
	List []Expr
	Not  bool
	// KsqlNulls: where SQL gives NULL, IN gives FALSE and NOT IN TRUE, as
	// in ksqlDB (a NULL never matches). See KsqlNulls.
	KsqlNulls bool
}

func (n *In) Type() types.Type { return types.BooleanType }
func (n *In) Children() []Expr { return append([]Expr{n.X}, n.List...) }
func (n *In) String() string {
	var b strings.Builder
	b.WriteString("(" + n.X.String())
	if n.Not {
		b.WriteString(" NOT")
	}
	b.WriteString(" IN (")
	writeList(&b, n.List)
	b.WriteString("))")
	return b.String()
}

// NewIn builds x [NOT] IN (list...). x and the elements are coerced to
// one type as ksqlDB coerces a user-written list (userlist.go): x's type
// first, then each element's in order.
func NewIn(x Expr, list []Expr, not bool) (Expr, error) {
	if len(list) == 0 {
		return nil, typeErrorf("IN needs at least one value")
	}
	_, all, err := userList(append([]Expr{x}, list...))
	if err != nil {
		return nil, err
	}
	return &In{X: all[0], List: all[1:], Not: not}, nil
}

// Between is X [NOT] BETWEEN Lo AND Hi, which is Lo <= X AND X <= Hi.
type Between struct {
	X, Lo, Hi Expr
	Not       bool
	// KsqlNulls: where SQL gives NULL, BETWEEN gives FALSE and NOT
	// BETWEEN TRUE, as in ksqlDB. See KsqlNulls.
	KsqlNulls bool
}

func (n *Between) Type() types.Type { return types.BooleanType }
func (n *Between) Children() []Expr { return []Expr{n.X, n.Lo, n.Hi} }
func (n *Between) String() string {
	not := ""
	if n.Not {
		not = " NOT"
	}
	return "(" + n.X.String() + not + " BETWEEN " + n.Lo.String() + " AND " + n.Hi.String() + ")"
}

// NewBetween builds x [NOT] BETWEEN lo AND hi.
func NewBetween(x, lo, hi Expr, not bool) (Expr, error) {
	_, lo2, err := prepareCompare(x, lo, false, "BETWEEN")
	if err != nil {
		return nil, err
	}
	_, hi2, err := prepareCompare(x, hi, false, "BETWEEN")
	if err != nil {
		return nil, err
	}
	if isTemporal(lo.Type().Kind) && x.Type().Kind == types.String ||
		isTemporal(hi.Type().Kind) && x.Type().Kind == types.String {
		return nil, typeErrorf("cannot compare %s with %s and %s in BETWEEN", x.Type(), lo.Type(), hi.Type())
	}
	return &Between{X: x, Lo: lo2, Hi: hi2, Not: not}, nil
}

// Like is X [NOT] LIKE Pattern [ESCAPE Escape]: % matches any run of
// characters, _ exactly one, the escape character makes the next one
// literal. Matching is case-sensitive, as in ksqlDB. Escape is nil when
// there is none.
type Like struct {
	X, Pattern, Escape Expr
	Not                bool
}

func (n *Like) Type() types.Type { return types.BooleanType }
func (n *Like) Children() []Expr {
	if n.Escape != nil {
		return []Expr{n.X, n.Pattern, n.Escape}
	}
	return []Expr{n.X, n.Pattern}
}
func (n *Like) String() string {
	not := ""
	if n.Not {
		not = " NOT"
	}
	s := "(" + n.X.String() + not + " LIKE " + n.Pattern.String()
	if n.Escape != nil {
		s += " ESCAPE " + n.Escape.String()
	}
	return s + ")"
}

// NewLike builds x [NOT] LIKE pattern [ESCAPE escape] over STRING
// operands; escape may be nil. A constant pattern is checked here (an
// escape character at its end is an error) and compiled once.
func NewLike(x, pattern, escape Expr, not bool) (Expr, error) {
	if !isStringish(x.Type()) || !isStringish(pattern.Type()) || escape != nil && !isStringish(escape.Type()) {
		return nil, typeErrorf("LIKE needs STRING operands, got %s and %s", x.Type(), pattern.Type())
	}
	esc := rune(-1)
	if escape != nil {
		l, ok := escape.(*Literal)
		if !ok {
			return nil, typeErrorf("the ESCAPE of LIKE must be a constant")
		}
		if !l.V.Null {
			r := []rune(string(l.V.B))
			if len(r) != 1 {
				return nil, typeErrorf("the ESCAPE of LIKE must be one character, got %q", string(l.V.B))
			}
			esc = r[0]
		}
	}
	if l, ok := pattern.(*Literal); ok && !l.V.Null {
		if _, err := compileLike(l.V.B, esc, nil); err != nil {
			return nil, err
		}
	}
	return &Like{X: x, Pattern: pattern, Escape: escape, Not: not}, nil
}

// Distinct is L IS DISTINCT FROM R (or IS NOT DISTINCT FROM with Not): a
// comparison where NULL equals NULL and differs from any value. It is
// never NULL.
type Distinct struct {
	L, R Expr
	Not  bool
}

func (n *Distinct) Type() types.Type { return types.BooleanType }
func (n *Distinct) Children() []Expr { return []Expr{n.L, n.R} }
func (n *Distinct) String() string {
	if n.Not {
		return "(" + n.L.String() + " IS NOT DISTINCT FROM " + n.R.String() + ")"
	}
	return "(" + n.L.String() + " IS DISTINCT FROM " + n.R.String() + ")"
}

// NewDistinct builds l IS [NOT] DISTINCT FROM r.
func NewDistinct(l, r Expr, not bool) (Expr, error) {
	l2, r2, err := prepareCompare(l, r, true, "IS DISTINCT FROM")
	if err != nil {
		return nil, err
	}
	return &Distinct{L: l2, R: r2, Not: not}, nil
}

// IsTrue is X IS [NOT] TRUE|FALSE: TRUE when X is not NULL and equals
// Want, inverted by Not; never NULL.
type IsTrue struct {
	X    Expr
	Want bool
	Not  bool
}

func (n *IsTrue) Type() types.Type { return types.BooleanType }
func (n *IsTrue) Children() []Expr { return []Expr{n.X} }
func (n *IsTrue) String() string {
	s := "(" + n.X.String() + " IS "
	if n.Not {
		s += "NOT "
	}
	if n.Want {
		return s + "TRUE)"
	}
	return s + "FALSE)"
}

// NewIsTrue builds x IS [NOT] TRUE (want true) or FALSE (want false).
func NewIsTrue(x Expr, want bool, not bool) (Expr, error) {
	if !isBoolish(x.Type()) {
		return nil, typeErrorf("IS TRUE and IS FALSE need a BOOLEAN operand, got %s", x.Type())
	}
	return &IsTrue{X: x, Want: want, Not: not}, nil
}

// Case is CASE [Operand] WHEN … THEN … [ELSE …] END. With an Operand,
// each When is compared with it for equality; without, each When is a
// condition. Thens and Else share the type T (coerced by NewCase). A
// missing Else is NULL.
type Case struct {
	Operand Expr // nil for a searched CASE
	Whens   []Expr
	Thens   []Expr
	Else    Expr // nil when absent
	T       types.Type
}

func (n *Case) Type() types.Type { return n.T }
func (n *Case) Children() []Expr {
	var out []Expr
	if n.Operand != nil {
		out = append(out, n.Operand)
	}
	for i := range n.Whens {
		out = append(out, n.Whens[i], n.Thens[i])
	}
	if n.Else != nil {
		out = append(out, n.Else)
	}
	return out
}
func (n *Case) String() string {
	var b strings.Builder
	b.WriteString("CASE")
	if n.Operand != nil {
		b.WriteString(" " + n.Operand.String())
	}
	for i := range n.Whens {
		b.WriteString(" WHEN " + n.Whens[i].String() + " THEN " + n.Thens[i].String())
	}
	if n.Else != nil {
		b.WriteString(" ELSE " + n.Else.String())
	}
	b.WriteString(" END")
	return b.String()
}

// NewCase builds a CASE. operand is nil for a searched CASE, whose whens
// must be BOOLEAN; otherwise each when must be comparable with operand.
// The result type is the common type of thens and els (els may be nil).
func NewCase(operand Expr, whens, thens []Expr, els Expr) (Expr, error) {
	if len(whens) == 0 || len(whens) != len(thens) {
		return nil, typeErrorf("CASE needs at least one WHEN … THEN …")
	}
	ws := make([]Expr, len(whens))
	for i, w := range whens {
		if operand == nil {
			if !isBoolish(w.Type()) {
				return nil, typeErrorf("CASE WHEN needs a BOOLEAN condition, got %s", w.Type())
			}
			ws[i] = w
			continue
		}
		o2, w2, err := prepareCompare(operand, w, true, "CASE")
		if err != nil {
			return nil, err
		}
		if o2 != operand {
			w2 = coerce(w, operand.Type())
		}
		ws[i] = w2
	}
	results := exprTypes(thens)
	if els != nil {
		results = append(results, els.Type())
	}
	t, ok := commonTypeOf(results)
	if !ok {
		return nil, typeErrorf("CASE results have incompatible types %s", describeArgs(results))
	}
	ts := make([]Expr, len(thens))
	for i, e := range thens {
		ts[i] = coerce(e, t)
	}
	if els != nil {
		els = coerce(els, t)
	}
	return &Case{Operand: operand, Whens: ws, Thens: ts, Else: els, T: t}, nil
}

// Subscript is X[Index]: an ARRAY element, 1-based, negative indexes
// counting from the end (-1 is the last), NULL out of range or at 0; or a
// MAP value by key, NULL when the key is missing.
type Subscript struct {
	X, Index Expr
	T        types.Type
}

func (n *Subscript) Type() types.Type { return n.T }
func (n *Subscript) Children() []Expr { return []Expr{n.X, n.Index} }
func (n *Subscript) String() string   { return n.X.String() + "[" + n.Index.String() + "]" }

// NewSubscript builds x[index] for an ARRAY x (index INT or BIGINT) or a
// MAP x (index comparable with the key type).
func NewSubscript(x, index Expr) (Expr, error) {
	t, it := x.Type(), index.Type()
	switch t.Kind {
	case types.Array:
		if !it.IsIntegral() && it.Kind != types.Unknown {
			return nil, typeErrorf("an ARRAY index must be INTEGER or BIGINT, got %s", it)
		}
		return &Subscript{X: x, Index: index, T: *t.Elem}, nil
	case types.Map:
		kt := *t.KeyType
		if it.Kind != types.Unknown && !it.Equal(kt) {
			if _, ok := commonType(kt, it); !ok || isComposite(it.Kind) {
				return nil, typeErrorf("a key of %s cannot be %s", t, it)
			}
		}
		return &Subscript{X: x, Index: index, T: *t.Elem}, nil
	}
	return nil, typeErrorf("cannot subscript %s: only ARRAY and MAP values have elements", t)
}

// Field is X->Name, a STRUCT field; Index is its position in the type.
type Field struct {
	X     Expr
	Name  string
	Index int
	T     types.Type
}

func (n *Field) Type() types.Type { return n.T }
func (n *Field) Children() []Expr { return []Expr{n.X} }
func (n *Field) String() string   { return n.X.String() + "->" + quoteIdent(n.Name) }

// NewField builds x->name. The name is matched exactly; failing that,
// case-insensitively when exactly one field matches that way. An unknown
// field is a *TypeError.
func NewField(x Expr, name string) (Expr, error) {
	t := x.Type()
	if t.Kind != types.Struct {
		return nil, typeErrorf("cannot access field %s of %s: it is not a STRUCT", name, t)
	}
	idx := -1
	for i, f := range t.Fields {
		if f.Name == name {
			idx = i
			break
		}
	}
	if idx < 0 {
		for i, f := range t.Fields {
			if strings.EqualFold(f.Name, name) {
				if idx >= 0 {
					idx = -2
					break
				}
				idx = i
			}
		}
	}
	if idx < 0 {
		return nil, typeErrorf("%s has no field %s", t, name)
	}
	return &Field{X: x, Name: t.Fields[idx].Name, Index: idx, T: t.Fields[idx].Type}, nil
}

// Array is ARRAY[Elems...].
type Array struct {
	Elems []Expr
	T     types.Type
}

func (n *Array) Type() types.Type { return n.T }
func (n *Array) Children() []Expr { return n.Elems }
func (n *Array) String() string {
	var b strings.Builder
	b.WriteString("ARRAY[")
	writeList(&b, n.Elems)
	b.WriteByte(']')
	return b.String()
}

// NewArray builds ARRAY[elems...]. The elements are coerced to one type
// as ksqlDB coerces a user-written list (userlist.go); at least one must
// have a known type.
func NewArray(elems []Expr) (Expr, error) {
	if len(elems) == 0 {
		return nil, typeErrorf("Array constructor cannot be empty. Please supply at least one element (see https://github.com/confluentinc/ksql/issues/4239).")
	}
	t, out, err := userList(elems)
	if err != nil {
		return nil, typeErrorf("ARRAY elements: %v", err)
	}
	if t.Kind == types.Unknown {
		return nil, typeErrorf("Cannot construct an array with all NULL elements (see https://github.com/confluentinc/ksql/issues/4239). As a workaround, you may cast a NULL value to the desired type.")
	}
	return &Array{Elems: out, T: arrayOf(t)}, nil
}

// Map is MAP(Keys[i] := Values[i], ...).
type Map struct {
	Keys, Values []Expr
	T            types.Type
}

func (n *Map) Type() types.Type { return n.T }
func (n *Map) Children() []Expr {
	out := make([]Expr, 0, 2*len(n.Keys))
	for i := range n.Keys {
		out = append(out, n.Keys[i], n.Values[i])
	}
	return out
}
func (n *Map) String() string {
	var b strings.Builder
	b.WriteString("MAP(")
	for i := range n.Keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(n.Keys[i].String() + " := " + n.Values[i].String())
	}
	b.WriteByte(')')
	return b.String()
}

// NewMap builds MAP(k := v, ...). Keys share a primitive type and values
// one type, each list coerced as ksqlDB coerces a user-written one
// (userlist.go). At run time a later duplicate key replaces an earlier one
// and entries whose key is NULL are left out.
func NewMap(keys, values []Expr) (Expr, error) {
	if len(keys) == 0 || len(keys) != len(values) {
		return nil, typeErrorf("Map constructor cannot be empty. Please supply at least one key value pair (see https://github.com/confluentinc/ksql/issues/4239).")
	}
	kt, ks, err := userList(keys)
	if err != nil {
		return nil, typeErrorf("MAP keys: %v", err)
	}
	if isComposite(kt.Kind) {
		return nil, typeErrorf("MAP keys must share one primitive type, got %s", describeArgs(exprTypes(keys)))
	}
	vt, vs, err := userList(values)
	if err != nil {
		return nil, typeErrorf("MAP values: %v", err)
	}
	if kt.Kind == types.Unknown {
		return nil, typeErrorf("Cannot construct a map with all NULL keys: CAST one of them")
	}
	if vt.Kind == types.Unknown {
		return nil, typeErrorf("Cannot construct a map with all NULL values: CAST one of them")
	}
	return &Map{Keys: ks, Values: vs, T: mapOf(kt, vt)}, nil
}

// Struct is STRUCT(Names[i] := Values[i], ...).
type Struct struct {
	Names  []string
	Values []Expr
	T      types.Type
}

func (n *Struct) Type() types.Type { return n.T }
func (n *Struct) Children() []Expr { return n.Values }
func (n *Struct) String() string {
	var b strings.Builder
	b.WriteString("STRUCT(")
	for i := range n.Names {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(quoteIdent(n.Names[i]) + " := " + n.Values[i].String())
	}
	b.WriteByte(')')
	return b.String()
}

// NewStruct builds STRUCT(name := value, ...); field names must be
// distinct and field values typed (CAST a NULL).
func NewStruct(names []string, values []Expr) (Expr, error) {
	if len(names) != len(values) {
		return nil, typeErrorf("STRUCT needs a name for every value")
	}
	fs := make([]types.Field, len(names))
	for i, n := range names {
		for _, m := range names[:i] {
			if m == n {
				return nil, typeErrorf("Duplicate field names found in STRUCT: %s appears twice", n)
			}
		}
		t := values[i].Type()
		if t.Kind == types.Unknown {
			return nil, typeErrorf("STRUCT field %s is an untyped NULL: CAST it", n)
		}
		fs[i] = types.Field{Name: n, Type: t}
	}
	return &Struct{Names: names, Values: values, T: types.Type{Kind: types.Struct, Fields: fs}}, nil
}

// Lambda is (Params...) => Body, an argument of TRANSFORM, FILTER or
// REDUCE. Its Type is the type of Body. A Lambda evaluates only inside the
// function call that receives it.
type Lambda struct {
	Params     []string
	ParamTypes []types.Type
	Body       Expr
}

func (n *Lambda) Type() types.Type { return n.Body.Type() }
func (n *Lambda) Children() []Expr { return []Expr{n.Body} }
func (n *Lambda) String() string {
	ps := strings.Join(n.Params, ", ")
	if len(n.Params) != 1 {
		ps = "(" + ps + ")"
	}
	return "(" + ps + " => " + n.Body.String() + ")"
}

// NewLambda builds (params...) => body; paramTypes come from
// LambdaParamTypes.
func NewLambda(params []string, paramTypes []types.Type, body Expr) *Lambda {
	return &Lambda{Params: params, ParamTypes: paramTypes, Body: body}
}

// LambdaVar is a lambda parameter used in a lambda body. It is resolved
// by Name against the enclosing lambdas, innermost first, which is how a
// nested lambda reads its outer lambda's parameters; when no enclosing
// lambda declares Name, Index picks the innermost lambda's Index-th
// parameter.
type LambdaVar struct {
	Index int
	Name  string
	T     types.Type
}

func (n *LambdaVar) Type() types.Type { return n.T }
func (n *LambdaVar) Children() []Expr { return nil }
func (n *LambdaVar) String() string {
	if n.Name == "" {
		return "$" + strconv.Itoa(n.Index)
	}
	return quoteIdent(n.Name)
}

// NewLambdaVar refers to the index-th parameter (named name, of type t)
// of the innermost lambda that declares name; see LambdaVar.
func NewLambdaVar(index int, name string, t types.Type) Expr {
	return &LambdaVar{Index: index, Name: name, T: t}
}

func writeList(b *strings.Builder, es []Expr) {
	for i, e := range es {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(e.String())
	}
}
