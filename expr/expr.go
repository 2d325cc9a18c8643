package expr

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// Expr is a typed scalar expression tree node. Nodes are immutable.
type Expr interface {
	// Type is the SQL type the expression evaluates to.
	Type() types.Type
	// String renders the expression in SQL, for EXPLAIN and messages.
	String() string
	// Children returns the direct sub-expressions.
	Children() []Expr
}

var (
	_ Expr = (*Column)(nil)
	_ Expr = (*Literal)(nil)
	_ Expr = (*Binary)(nil)
	_ Expr = (*Unary)(nil)
	_ Expr = (*IsNull)(nil)
	_ Expr = (*Call)(nil)
)

// Column reads the input row's column at Index.
type Column struct {
	Index int
	Name  string
	T     types.Type
}

func (c *Column) Type() types.Type { return c.T }
func (c *Column) String() string   { return quoteIdent(c.Name) }
func (c *Column) Children() []Expr { return nil }

// Literal is a constant.
type Literal struct {
	V types.Datum
	T types.Type
}

func (l *Literal) Type() types.Type { return l.T }
func (l *Literal) Children() []Expr { return nil }
func (l *Literal) String() string {
	if l.V.Null {
		return "NULL"
	}
	if l.T.Kind == types.String {
		return "'" + strings.ReplaceAll(string(l.V.B), "'", "''") + "'"
	}
	return types.Text(l.V, l.T)
}

// Op is a unary or binary operator.
type Op uint8

// Operators.
const (
	OpAdd Op = iota + 1
	OpSub
	OpMul
	OpDiv
	OpMod
	OpConcat
	OpEQ
	OpNE
	OpLT
	OpLE
	OpGT
	OpGE
	OpAnd
	OpOr
	OpNot
	OpNeg
)

var opNames = map[Op]string{
	OpAdd: "+", OpSub: "-", OpMul: "*", OpDiv: "/", OpMod: "%", OpConcat: "||",
	OpEQ: "=", OpNE: "<>", OpLT: "<", OpLE: "<=", OpGT: ">", OpGE: ">=",
	OpAnd: "AND", OpOr: "OR", OpNot: "NOT", OpNeg: "-",
}

func (o Op) String() string { return opNames[o] }

// Binary applies a binary operator. Build it with NewBinary, which checks
// and derives types.
type Binary struct {
	Op   Op
	L, R Expr
	T    types.Type
	// KsqlNulls makes a comparison with a NULL operand FALSE, as ksqlDB's
	// are, rather than NULL (SQL). Set it with KsqlNulls.
	KsqlNulls bool
}

func (b *Binary) Type() types.Type { return b.T }
func (b *Binary) Children() []Expr { return []Expr{b.L, b.R} }
func (b *Binary) String() string {
	return "(" + b.L.String() + " " + b.Op.String() + " " + b.R.String() + ")"
}

// Unary applies NOT or unary minus.
type Unary struct {
	Op Op
	X  Expr
}

func (u *Unary) Type() types.Type { return u.X.Type() }
func (u *Unary) Children() []Expr { return []Expr{u.X} }
func (u *Unary) String() string {
	if u.Op == OpNot {
		return "(NOT " + u.X.String() + ")"
	}
	return "(-" + u.X.String() + ")"
}

// IsNull is X IS NULL, or X IS NOT NULL when Not is set.
type IsNull struct {
	X   Expr
	Not bool
}

func (n *IsNull) Type() types.Type { return types.BooleanType }
func (n *IsNull) Children() []Expr { return []Expr{n.X} }
func (n *IsNull) String() string {
	if n.Not {
		return "(" + n.X.String() + " IS NOT NULL)"
	}
	return "(" + n.X.String() + " IS NULL)"
}

// Call calls a scalar function from the registry.
type Call struct {
	Fn   *Function
	Args []Expr
	T    types.Type
}

func (c *Call) Type() types.Type { return c.T }
func (c *Call) Children() []Expr { return c.Args }
func (c *Call) String() string {
	var b strings.Builder
	b.WriteString(c.Fn.Name)
	b.WriteByte('(')
	for i, a := range c.Args {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	b.WriteByte(')')
	return b.String()
}

// TypeError is returned when operand types do not fit an operator or
// function.
type TypeError struct{ Msg string }

func (e *TypeError) Error() string { return e.Msg }

func typeErrorf(format string, args ...any) error {
	return &TypeError{Msg: fmt.Sprintf(format, args...)}
}

// NewBinary builds l op r, checking the operand types and deriving the
// result type as ksqlDB does:
//
//   - INT op INT is INT, with BIGINT it is BIGINT, with DOUBLE it is
//     DOUBLE; with DECIMAL (and no DOUBLE) it is a DECIMAL whose precision
//     and scale follow the rules in decimal.go.
//   - STRING + STRING and STRING || STRING concatenate.
//   - Comparisons accept numbers of any kinds together, same-kind
//     STRING, BOOLEAN, BYTES, DATE, TIME, TIMESTAMP, a STRING against a
//     DATE, TIME or TIMESTAMP (read as that type), DATE against TIMESTAMP,
//     and ARRAY, MAP, STRUCT of compatible types for = and <> only.
//
// INT and BIGINT arithmetic wraps on overflow as Java's does (INT at 32
// bits). Integer and DECIMAL division or modulo by zero is NULL; DOUBLE
// division follows IEEE 754 (Infinity, NaN), as in ksqlDB. DECIMAL
// overflow is NULL.
func NewBinary(op Op, l, r Expr) (Expr, error) {
	lt, rt := l.Type(), r.Type()
	switch op {
	case OpAdd, OpSub, OpMul, OpDiv, OpMod:
		if op == OpAdd && isStringish(lt) && isStringish(rt) && (lt.Kind == types.String || rt.Kind == types.String) {
			return &Binary{Op: OpConcat, L: l, R: r, T: types.StringType}, nil
		}
		t, ok := numericResult(op, lt, rt)
		if !ok {
			return nil, typeErrorf("operator %s cannot be applied to %s and %s", op, lt, rt)
		}
		return &Binary{Op: op, L: l, R: r, T: t}, nil
	case OpConcat:
		if !isStringish(lt) || !isStringish(rt) {
			return nil, typeErrorf("operator || needs STRING operands, got %s and %s", lt, rt)
		}
		return &Binary{Op: op, L: l, R: r, T: types.StringType}, nil
	case OpEQ, OpNE, OpLT, OpLE, OpGT, OpGE:
		l2, r2, err := prepareCompare(l, r, op == OpEQ || op == OpNE, op.String())
		if err != nil {
			return nil, err
		}
		return &Binary{Op: op, L: l2, R: r2, T: types.BooleanType}, nil
	case OpAnd, OpOr:
		if !isBoolish(lt) || !isBoolish(rt) {
			return nil, typeErrorf("operator %s needs BOOLEAN operands, got %s and %s", op, lt, rt)
		}
		return &Binary{Op: op, L: l, R: r, T: types.BooleanType}, nil
	}
	return nil, typeErrorf("unknown operator %d", op)
}

// KsqlNulls returns e with ksqlDB's NULL comparisons if e is a
// comparison (=, <>, <, <=, >, >=), an IN or a BETWEEN: a NULL operand
// makes it FALSE, and its NOT form TRUE, where SQL makes both NULL. Other
// expressions are returned as they are. AND, OR and NOT keep SQL's
// three-valued logic in both modes (ksqlDB's fail on a NULL operand,
// which leaves the column NULL too). e must be freshly built: it is
// copied, not changed.
func KsqlNulls(e Expr) Expr {
	switch n := e.(type) {
	case *Binary:
		switch n.Op {
		case OpEQ, OpNE, OpLT, OpLE, OpGT, OpGE:
			c := *n
			c.KsqlNulls = true
			return &c
		}
	case *In:
		c := *n
		c.KsqlNulls = true
		return &c
	case *Between:
		c := *n
		c.KsqlNulls = true
		return &c
	}
	return e
}

// NewUnary builds NOT x or -x.
func NewUnary(op Op, x Expr) (Expr, error) {
	t := x.Type()
	switch op {
	case OpNot:
		if !isBoolish(t) {
			return nil, typeErrorf("NOT needs a BOOLEAN operand, got %s", t)
		}
	case OpNeg:
		if !t.IsNumeric() && t.Kind != types.Unknown {
			return nil, typeErrorf("unary minus needs a numeric operand, got %s", t)
		}
	default:
		return nil, typeErrorf("unknown unary operator %s", op)
	}
	return &Unary{Op: op, X: x}, nil
}

func isStringish(t types.Type) bool { return t.Kind == types.String || t.Kind == types.Unknown }
func isBoolish(t types.Type) bool   { return t.Kind == types.Boolean || t.Kind == types.Unknown }

// numericResult is the type of arithmetic on a and b. Unknown is the type
// of a NULL literal and adopts the other side's type.
func numericResult(op Op, a, b types.Type) (types.Type, bool) {
	if a.Kind == types.Unknown {
		a = b
	}
	if b.Kind == types.Unknown {
		b = a
	}
	if a.Kind == types.Unknown {
		return types.IntType, true
	}
	if !a.IsNumeric() || !b.IsNumeric() {
		return types.Type{}, false
	}
	switch {
	case a.Kind == types.Double || b.Kind == types.Double:
		return types.DoubleType, true
	case a.Kind == types.Decimal || b.Kind == types.Decimal:
		return decimalResult(op, a, b), true
	case a.Kind == types.Bigint || b.Kind == types.Bigint:
		return types.BigintType, true
	}
	return types.IntType, true
}

// quoteIdent renders an identifier, quoting it when it is not upper-case
// letters, digits and underscores.
func quoteIdent(s string) string {
	for i, c := range s {
		if !(c >= 'A' && c <= 'Z' || c == '_' || (i > 0 && c >= '0' && c <= '9')) {
			return "`" + strings.ReplaceAll(s, "`", "``") + "`"
		}
	}
	if s == "" {
		return "``"
	}
	return s
}

// IntLiteral is a BIGINT or INT literal.
func IntLiteral(v int64) *Literal {
	if v >= -1<<31 && v < 1<<31 {
		return &Literal{V: types.IntDatum(v), T: types.IntType}
	}
	return &Literal{V: types.IntDatum(v), T: types.BigintType}
}

// ParseNumberLiteral turns a numeric literal's text into an INT, BIGINT
// or DOUBLE literal.
func ParseNumberLiteral(s string) (*Literal, error) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return IntLiteral(i), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil, fmt.Errorf("bad number %q", s)
	}
	return &Literal{V: types.DoubleDatum(f), T: types.DoubleType}, nil
}

// StringLiteral is a STRING literal.
func StringLiteral(s string) *Literal {
	return &Literal{V: types.StringDatum(s), T: types.StringType}
}

// NullLiteral is an untyped NULL; it adopts the type its context needs.
func NullLiteral() *Literal { return &Literal{V: types.NullDatum, T: types.UnknownType} }

// BoolLiteral is TRUE or FALSE.
func BoolLiteral(v bool) *Literal { return &Literal{V: types.BoolDatum(v), T: types.BooleanType} }

// MarkColumns sets used[i] for every input column i that e reads.
func MarkColumns(e Expr, used []bool) {
	if c, ok := e.(*Column); ok {
		if c.Index >= 0 && c.Index < len(used) {
			used[c.Index] = true
		}
		return
	}
	for _, ch := range e.Children() {
		MarkColumns(ch, used)
	}
}
