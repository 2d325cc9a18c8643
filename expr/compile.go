package expr

import (
	"bytes"
	"errors"
	"fmt"
	"math"

	"github.com/sqlstreams/sqlstreams/types"
)

// Evaluator computes a compiled expression over a row. The datum it returns
// may reference the row's bytes or the evaluator's scratch buffers: it is
// valid until the next call. An error means the record cannot be evaluated
// (a bad record); SQL NULL is not an error.
type Evaluator func(row types.Row) (types.Datum, error)

// Compile turns e into an Evaluator. Type dispatch happens here, once;
// the returned closures do no reflection and no tree walking beyond
// calling their children.
func Compile(e Expr) (Evaluator, error) { return compile(e, nil) }

// scope is the chain of lambdas enclosing the expression being compiled.
// Each compiled lambda owns the slots its parameters are read from; the
// function that calls the lambda writes them before evaluating the body.
type scope struct {
	outer *scope
	names []string
	slots []types.Datum
}

func compile(e Expr, sc *scope) (Evaluator, error) {
	switch e := e.(type) {
	case *Column:
		i := e.Index
		return func(row types.Row) (types.Datum, error) { return row[i], nil }, nil
	case *Literal:
		v := e.V
		return func(types.Row) (types.Datum, error) { return v, nil }, nil
	case *Param:
		return func(types.Row) (types.Datum, error) { return e.value(), nil }, nil
	case *Binary:
		return compileBinary(e, sc)
	case *Unary:
		return compileUnary(e, sc)
	case *IsNull:
		x, err := compile(e.X, sc)
		if err != nil {
			return nil, err
		}
		not := e.Not
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			if err != nil {
				return d, err
			}
			return types.BoolDatum(d.Null != not), nil
		}, nil
	case *Call:
		return compileCall(e, sc)
	case *Cast:
		return compileCast(e, sc)
	case *In:
		ev, err := compileIn(e, sc)
		return nullAs(ev, err, e.KsqlNulls, e.Not)
	case *Between:
		ev, err := compileBetween(e, sc)
		return nullAs(ev, err, e.KsqlNulls, e.Not)
	case *Like:
		return compileLikeNode(e, sc)
	case *Distinct:
		return compileDistinct(e, sc)
	case *IsTrue:
		x, err := compile(e.X, sc)
		if err != nil {
			return nil, err
		}
		want, not := e.Want, e.Not
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			if err != nil {
				return d, err
			}
			return types.BoolDatum((!d.Null && (d.I != 0) == want) != not), nil
		}, nil
	case *Case:
		return compileCase(e, sc)
	case *Subscript:
		return compileSubscript(e, sc)
	case *Field:
		x, err := compile(e.X, sc)
		if err != nil {
			return nil, err
		}
		i := e.Index
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			if err != nil || d.Null || i >= len(d.L) {
				return types.NullDatum, err
			}
			return d.L[i], nil
		}, nil
	case *Array:
		return compileArray(e, sc)
	case *Map:
		return compileMap(e, sc)
	case *Struct:
		return compileStruct(e, sc)
	case *LambdaVar:
		return compileLambdaVar(e, sc)
	case *Lambda:
		return nil, fmt.Errorf("lambda %s can only be an argument of TRANSFORM, FILTER or REDUCE", e)
	}
	return nil, fmt.Errorf("cannot compile %T", e)
}

func compileAll(es []Expr, sc *scope) ([]Evaluator, error) {
	out := make([]Evaluator, len(es))
	for i, e := range es {
		ev, err := compile(e, sc)
		if err != nil {
			return nil, err
		}
		out[i] = ev
	}
	return out, nil
}

func compileLambdaVar(v *LambdaVar, sc *scope) (Evaluator, error) {
	if sc == nil {
		return nil, fmt.Errorf("lambda variable %s used outside a lambda", v)
	}
	for s := sc; s != nil && v.Name != ""; s = s.outer {
		for j, n := range s.names {
			if n == v.Name {
				slots := s.slots
				return func(types.Row) (types.Datum, error) { return slots[j], nil }, nil
			}
		}
	}
	if v.Index < 0 || v.Index >= len(sc.slots) {
		return nil, fmt.Errorf("lambda variable %s: the lambda has %d parameter(s)", v, len(sc.slots))
	}
	slots, j := sc.slots, v.Index
	return func(types.Row) (types.Datum, error) { return slots[j], nil }, nil
}

func compileUnary(u *Unary, sc *scope) (Evaluator, error) {
	x, err := compile(u.X, sc)
	if err != nil {
		return nil, err
	}
	if u.Op == OpNot {
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			if err != nil || d.Null {
				return d, err
			}
			return types.BoolDatum(d.I == 0), nil
		}, nil
	}
	if t := u.X.Type(); isWide(t) {
		var w wideScratch
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			if err != nil || d.Null {
				return d, err
			}
			types.DecimalValue(&w.r, d, t)
			w.r.Negative = !w.r.Negative
			d, _ = w.datum(t)
			return d, nil
		}, nil
	}
	switch u.X.Type().Kind {
	case types.Double:
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			d.F = -d.F
			return d, err
		}, nil
	case types.Int:
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			d.I = int64(-int32(d.I))
			return d, err
		}, nil
	}
	return func(row types.Row) (types.Datum, error) {
		d, err := x(row)
		d.I = -d.I
		return d, err
	}, nil
}

func compileBinary(b *Binary, sc *scope) (Evaluator, error) {
	l, err := compile(b.L, sc)
	if err != nil {
		return nil, err
	}
	r, err := compile(b.R, sc)
	if err != nil {
		return nil, err
	}
	switch b.Op {
	case OpAnd:
		return func(row types.Row) (types.Datum, error) {
			x, err := l(row)
			if err != nil {
				return x, err
			}
			if !x.Null && x.I == 0 {
				return types.BoolDatum(false), nil
			}
			y, err := r(row)
			if err != nil {
				return y, err
			}
			if !y.Null && y.I == 0 {
				return types.BoolDatum(false), nil
			}
			if x.Null || y.Null {
				return types.NullDatum, nil
			}
			return types.BoolDatum(true), nil
		}, nil
	case OpOr:
		return func(row types.Row) (types.Datum, error) {
			x, err := l(row)
			if err != nil {
				return x, err
			}
			if !x.Null && x.I != 0 {
				return types.BoolDatum(true), nil
			}
			y, err := r(row)
			if err != nil {
				return y, err
			}
			if !y.Null && y.I != 0 {
				return types.BoolDatum(true), nil
			}
			if x.Null || y.Null {
				return types.NullDatum, nil
			}
			return types.BoolDatum(false), nil
		}, nil
	case OpConcat:
		var buf []byte
		return func(row types.Row) (types.Datum, error) {
			x, err := l(row)
			if err != nil || x.Null {
				return types.NullDatum, err
			}
			y, err := r(row)
			if err != nil || y.Null {
				return types.NullDatum, err
			}
			buf = append(append(buf[:0], x.B...), y.B...)
			return types.Datum{B: buf}, nil
		}, nil
	case OpEQ, OpNE, OpLT, OpLE, OpGT, OpGE:
		// A NULL operand gives NULL, or FALSE with ksqlDB's NULLs.
		null := types.NullDatum
		if b.KsqlNulls {
			null = types.BoolDatum(false)
		}
		if ev := compileColumnCompare(b, null); ev != nil {
			return ev, nil
		}
		return compileCompare(b.Op, b.L.Type(), b.R.Type(), l, r, null), nil
	}
	ev, err := compileArith(b, l, r)
	if err != nil || sc == nil {
		return ev, err
	}
	// Inside a lambda, arithmetic that gives NULL (a NULL operand, a
	// division by zero) fails the whole function call, which is then
	// NULL: ksqlDB's generated Java throws there and the call is lost.
	return func(row types.Row) (types.Datum, error) {
		d, err := ev(row)
		if err == nil && d.Null {
			return d, errLambdaNull
		}
		return d, err
	}, nil
}

// errLambdaNull is how arithmetic inside a lambda body fails its function
// call (see compileBinary); the call turns it into NULL.
var errLambdaNull = errors.New("NULL arithmetic inside a lambda")

// nullAs wraps a boolean evaluator so that its NULL becomes v, when on
// (ksqlDB's NULL comparisons); otherwise ev is returned as it is.
func nullAs(ev Evaluator, err error, on, v bool) (Evaluator, error) {
	if err != nil || !on {
		return ev, err
	}
	return func(row types.Row) (types.Datum, error) {
		d, err := ev(row)
		if err == nil && d.Null {
			return types.BoolDatum(v), nil
		}
		return d, err
	}, nil
}

// compileColumnCompare specializes the commonest filter, an integer
// column against an integer constant (price > 1000): it reads the column
// in place, with no call for either side. nil when b is not of that form.
// null is the answer for a NULL column.
func compileColumnCompare(b *Binary, null types.Datum) Evaluator {
	c, ok := b.L.(*Column)
	lit, ok2 := b.R.(*Literal)
	if !ok || !ok2 || lit.V.Null || !intLike(c.T) || !intLike(lit.T) {
		return nil
	}
	i, y, op := c.Index, lit.V.I, b.Op
	return func(row types.Row) (types.Datum, error) {
		x := &row[i]
		if x.Null {
			return null, nil
		}
		var v bool
		switch op {
		case OpEQ:
			v = x.I == y
		case OpNE:
			v = x.I != y
		case OpLT:
			v = x.I < y
		case OpLE:
			v = x.I <= y
		case OpGT:
			v = x.I > y
		default:
			v = x.I >= y
		}
		return types.BoolDatum(v), nil
	}
}

// intLike reports whether values of t compare as Datum.I.
func intLike(t types.Type) bool {
	switch t.Kind {
	case types.Int, types.Bigint, types.Boolean, types.Date, types.Time, types.Timestamp:
		return true
	}
	return false
}

// compileCompare specializes the common comparisons so that they cost a
// call per operand and nothing more. null is the answer when an operand
// is NULL (NULL, or FALSE with ksqlDB's NULLs).
func compileCompare(op Op, lt, rt types.Type, l, r Evaluator, null types.Datum) Evaluator {
	if intLike(lt) && intLike(rt) {
		return func(row types.Row) (types.Datum, error) {
			x, err := l(row)
			if err != nil || x.Null {
				return null, err
			}
			y, err := r(row)
			if err != nil || y.Null {
				return null, err
			}
			var v bool
			switch op {
			case OpEQ:
				v = x.I == y.I
			case OpNE:
				v = x.I != y.I
			case OpLT:
				v = x.I < y.I
			case OpLE:
				v = x.I <= y.I
			case OpGT:
				v = x.I > y.I
			default:
				v = x.I >= y.I
			}
			return types.BoolDatum(v), nil
		}
	}
	if lt.Kind == types.String && rt.Kind == types.String && (op == OpEQ || op == OpNE) {
		ne := op == OpNE
		return func(row types.Row) (types.Datum, error) {
			x, err := l(row)
			if err != nil || x.Null {
				return null, err
			}
			y, err := r(row)
			if err != nil || y.Null {
				return null, err
			}
			return types.BoolDatum(bytes.Equal(x.B, y.B) != ne), nil
		}
	}
	cmp := comparer(lt, rt)
	test := cmpTest(op)
	return func(row types.Row) (types.Datum, error) {
		x, err := l(row)
		if err != nil || x.Null {
			return null, err
		}
		y, err := r(row)
		if err != nil || y.Null {
			return null, err
		}
		return types.BoolDatum(test(cmp(x, y))), nil
	}
}

func cmpTest(op Op) func(int) bool {
	switch op {
	case OpEQ:
		return func(c int) bool { return c == 0 }
	case OpNE:
		return func(c int) bool { return c != 0 }
	case OpLT:
		return func(c int) bool { return c < 0 }
	case OpLE:
		return func(c int) bool { return c <= 0 }
	case OpGT:
		return func(c int) bool { return c > 0 }
	}
	return func(c int) bool { return c >= 0 }
}

// compileArith compiles + - * / %. Integer arithmetic wraps on overflow as
// Java's (and so ksqlDB's) does; INT results wrap at 32 bits. Integer
// division or modulo by zero yields NULL. DECIMAL follows decimal.go.
func compileArith(b *Binary, l, r Evaluator) (Evaluator, error) {
	op := b.Op
	switch b.T.Kind {
	case types.Double:
		fl, fr := asFloat(b.L.Type()), asFloat(b.R.Type())
		return func(row types.Row) (types.Datum, error) {
			x, err := l(row)
			if err != nil || x.Null {
				return types.NullDatum, err
			}
			y, err := r(row)
			if err != nil || y.Null {
				return types.NullDatum, err
			}
			p, q := fl(x), fr(y)
			var v float64
			switch op {
			case OpAdd:
				v = p + q
			case OpSub:
				v = p - q
			case OpMul:
				v = p * q
			case OpDiv:
				v = p / q
			case OpMod:
				v = math.Mod(p, q)
			}
			return types.DoubleDatum(v), nil
		}, nil
	case types.Decimal:
		if isWide(b.T) || isWide(b.L.Type()) || isWide(b.R.Type()) {
			return compileWideArith(op, b.L.Type(), b.R.Type(), b.T, l, r), nil
		}
		_, sx := asDecimal(b.L.Type())
		_, sy := asDecimal(b.R.Type())
		p, s := b.T.Precision, b.T.Scale
		return func(row types.Row) (types.Datum, error) {
			x, err := l(row)
			if err != nil || x.Null {
				return types.NullDatum, err
			}
			y, err := r(row)
			if err != nil || y.Null {
				return types.NullDatum, err
			}
			v, ok := decArith(op, x.I, sx, y.I, sy, p, s)
			if !ok {
				return types.NullDatum, nil
			}
			return types.IntDatum(v), nil
		}, nil
	}
	if f, ok := compileIntTree(b); ok {
		return func(row types.Row) (types.Datum, error) {
			v, null := f(row)
			if null {
				return types.NullDatum, nil
			}
			return types.IntDatum(v), nil
		}, nil
	}
	narrow := b.T.Kind == types.Int
	if lit, ok := b.R.(*Literal); ok && !lit.V.Null && intLike(lit.T) {
		// f(x) op constant: no call for the constant.
		y := lit.V.I
		return func(row types.Row) (types.Datum, error) {
			x, err := l(row)
			if err != nil || x.Null {
				return types.NullDatum, err
			}
			return intArith(op, x.I, y, narrow)
		}, nil
	}
	return func(row types.Row) (types.Datum, error) {
		x, err := l(row)
		if err != nil || x.Null {
			return types.NullDatum, err
		}
		y, err := r(row)
		if err != nil || y.Null {
			return types.NullDatum, err
		}
		return intArith(op, x.I, y.I, narrow)
	}, nil
}

// intFunc evaluates integer arithmetic: its value, or NULL.
type intFunc func(row types.Row) (v int64, null bool)

// compileIntTree compiles e when it is integer arithmetic over integer
// columns and constants alone (price * 908 / 1000): the intermediate
// results stay int64s in registers rather than Datums returned through
// memory, and a column or constant operand costs no call. ok is false for
// anything else.
func compileIntTree(e Expr) (f intFunc, ok bool) {
	switch n := e.(type) {
	case *Column:
		if !intLike(n.T) {
			return nil, false
		}
		i := n.Index
		return func(row types.Row) (int64, bool) {
			d := &row[i]
			return d.I, d.Null
		}, true
	case *Literal:
		if !intLike(n.T) {
			return nil, false
		}
		v, null := n.V.I, n.V.Null
		return func(types.Row) (int64, bool) { return v, null }, true
	case *Binary:
		switch n.Op {
		case OpAdd, OpSub, OpMul, OpDiv, OpMod:
		default:
			return nil, false
		}
		if n.T.Kind != types.Int && n.T.Kind != types.Bigint {
			return nil, false
		}
		op, narrow := n.Op, n.T.Kind == types.Int
		l, ok := compileIntTree(n.L)
		if !ok {
			return nil, false
		}
		if lit, ok := n.R.(*Literal); ok && !lit.V.Null && intLike(lit.T) {
			y := lit.V.I
			if c, ok := n.L.(*Column); ok {
				i := c.Index
				return func(row types.Row) (int64, bool) {
					x := &row[i]
					if x.Null {
						return 0, true
					}
					return intOp(op, x.I, y, narrow)
				}, true
			}
			return func(row types.Row) (int64, bool) {
				x, null := l(row)
				if null {
					return 0, true
				}
				return intOp(op, x, y, narrow)
			}, true
		}
		r, ok := compileIntTree(n.R)
		if !ok {
			return nil, false
		}
		return func(row types.Row) (int64, bool) {
			x, null := l(row)
			if null {
				return 0, true
			}
			y, null := r(row)
			if null {
				return 0, true
			}
			return intOp(op, x, y, narrow)
		}, true
	}
	return nil, false
}

// intArith applies an integer operator as ksqlDB does: division or modulo
// by zero is NULL, overflow wraps (to 32 bits when narrow).
func intArith(op Op, x, y int64, narrow bool) (types.Datum, error) {
	v, null := intOp(op, x, y, narrow)
	if null {
		return types.NullDatum, nil
	}
	return types.IntDatum(v), nil
}

// intOp is intArith on plain values; null reports a division by zero.
func intOp(op Op, x, y int64, narrow bool) (v int64, null bool) {
	switch op {
	case OpAdd:
		v = x + y
	case OpSub:
		v = x - y
	case OpMul:
		v = x * y
	case OpDiv:
		if y == 0 {
			return 0, true
		}
		if y == -1 { // avoid the MinInt64 / -1 trap; wraps like Java
			v = -x
		} else {
			v = x / y
		}
	case OpMod:
		if y == 0 {
			return 0, true
		}
		if y == -1 {
			v = 0
		} else {
			v = x % y
		}
	}
	if narrow {
		v = int64(int32(v))
	}
	return v, false
}

func compileIn(n *In, sc *scope) (Evaluator, error) {
	x, err := compile(n.X, sc)
	if err != nil {
		return nil, err
	}
	xt := n.X.Type()
	not := n.Not
	// A list of constants of x's own integer or string type becomes a set.
	if set, ok := constSet(xt, n.List); ok {
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			if err != nil || d.Null {
				return types.NullDatum, err
			}
			if set.has(d) {
				return types.BoolDatum(!not), nil
			}
			if set.hasNull {
				return types.NullDatum, nil
			}
			return types.BoolDatum(not), nil
		}, nil
	}
	list, err := compileAll(n.List, sc)
	if err != nil {
		return nil, err
	}
	cmps := make([]func(a, b types.Datum) int, len(list))
	for i, e := range n.List {
		cmps[i] = comparer(xt, e.Type())
	}
	return func(row types.Row) (types.Datum, error) {
		d, err := x(row)
		if err != nil || d.Null {
			return types.NullDatum, err
		}
		sawNull := false
		for i, ev := range list {
			e, err := ev(row)
			if err != nil {
				return e, err
			}
			if e.Null {
				sawNull = true
				continue
			}
			if cmps[i](d, e) == 0 {
				return types.BoolDatum(!not), nil
			}
		}
		if sawNull {
			return types.NullDatum, nil
		}
		return types.BoolDatum(not), nil
	}, nil
}

// inSet is the constant list of an IN over integers or strings.
type inSet struct {
	ints    map[int64]struct{}
	strs    map[string]struct{}
	hasNull bool
}

func (s *inSet) has(d types.Datum) bool {
	if s.ints != nil {
		_, ok := s.ints[d.I]
		return ok
	}
	_, ok := s.strs[string(d.B)]
	return ok
}

func constSet(xt types.Type, list []Expr) (*inSet, bool) {
	s := &inSet{}
	switch xt.Kind {
	case types.Int, types.Bigint, types.Date, types.Time, types.Timestamp, types.Boolean:
		s.ints = map[int64]struct{}{}
	case types.String, types.Bytes:
		s.strs = map[string]struct{}{}
	default:
		return nil, false
	}
	for _, e := range list {
		l, ok := e.(*Literal)
		if !ok {
			return nil, false
		}
		if l.V.Null {
			s.hasNull = true
			continue
		}
		lt := l.T
		if s.ints != nil && (lt.Kind == xt.Kind || lt.IsIntegral() && xt.IsIntegral()) {
			s.ints[l.V.I] = struct{}{}
		} else if s.strs != nil && lt.Kind == xt.Kind {
			s.strs[string(l.V.B)] = struct{}{}
		} else {
			return nil, false
		}
	}
	return s, true
}

func compileBetween(n *Between, sc *scope) (Evaluator, error) {
	evs, err := compileAll([]Expr{n.X, n.Lo, n.Hi}, sc)
	if err != nil {
		return nil, err
	}
	x, lo, hi := evs[0], evs[1], evs[2]
	cl, ch := comparer(n.X.Type(), n.Lo.Type()), comparer(n.X.Type(), n.Hi.Type())
	not := n.Not
	return func(row types.Row) (types.Datum, error) {
		d, err := x(row)
		if err != nil || d.Null {
			return types.NullDatum, err
		}
		a, err := lo(row)
		if err != nil {
			return a, err
		}
		b, err := hi(row)
		if err != nil {
			return b, err
		}
		// lo <= x AND x <= hi, three-valued
		var geLo, leHi, nullLo, nullHi bool
		if a.Null {
			nullLo = true
		} else {
			geLo = cl(d, a) >= 0
		}
		if b.Null {
			nullHi = true
		} else {
			leHi = ch(d, b) <= 0
		}
		switch {
		case !nullLo && !geLo, !nullHi && !leHi:
			return types.BoolDatum(not), nil
		case nullLo || nullHi:
			return types.NullDatum, nil
		}
		return types.BoolDatum(!not), nil
	}, nil
}

func compileDistinct(n *Distinct, sc *scope) (Evaluator, error) {
	l, err := compile(n.L, sc)
	if err != nil {
		return nil, err
	}
	r, err := compile(n.R, sc)
	if err != nil {
		return nil, err
	}
	cmp := comparer(n.L.Type(), n.R.Type())
	not := n.Not
	return func(row types.Row) (types.Datum, error) {
		x, err := l(row)
		if err != nil {
			return x, err
		}
		y, err := r(row)
		if err != nil {
			return y, err
		}
		var distinct bool
		switch {
		case x.Null || y.Null:
			distinct = x.Null != y.Null
		default:
			distinct = cmp(x, y) != 0
		}
		return types.BoolDatum(distinct != not), nil
	}, nil
}

func compileCase(n *Case, sc *scope) (Evaluator, error) {
	whens, err := compileAll(n.Whens, sc)
	if err != nil {
		return nil, err
	}
	thens, err := compileAll(n.Thens, sc)
	if err != nil {
		return nil, err
	}
	els := Evaluator(func(types.Row) (types.Datum, error) { return types.NullDatum, nil })
	if n.Else != nil {
		if els, err = compile(n.Else, sc); err != nil {
			return nil, err
		}
	}
	if n.Operand == nil {
		if len(whens) == 1 {
			// CASE WHEN c THEN constant [ELSE constant] END, as an
			// aggregate's FILTER is written: the constants with no call.
			then, ok1 := n.Thens[0].(*Literal)
			elseV, ok2 := types.NullDatum, n.Else == nil
			if l, ok := n.Else.(*Literal); ok {
				elseV, ok2 = l.V, true
			}
			if ok1 && ok2 {
				w, thenV := whens[0], then.V
				return func(row types.Row) (types.Datum, error) {
					c, err := w(row)
					if err != nil {
						return c, err
					}
					if !c.Null && c.I != 0 {
						return thenV, nil
					}
					return elseV, nil
				}, nil
			}
		}
		return func(row types.Row) (types.Datum, error) {
			for i, w := range whens {
				c, err := w(row)
				if err != nil {
					return c, err
				}
				if !c.Null && c.I != 0 {
					return thens[i](row)
				}
			}
			return els(row)
		}, nil
	}
	op, err := compile(n.Operand, sc)
	if err != nil {
		return nil, err
	}
	cmps := make([]func(a, b types.Datum) int, len(whens))
	for i, w := range n.Whens {
		cmps[i] = comparer(n.Operand.Type(), w.Type())
	}
	return func(row types.Row) (types.Datum, error) {
		o, err := op(row)
		if err != nil {
			return o, err
		}
		if !o.Null {
			for i, w := range whens {
				c, err := w(row)
				if err != nil {
					return c, err
				}
				if !c.Null && cmps[i](o, c) == 0 {
					return thens[i](row)
				}
			}
		}
		return els(row)
	}, nil
}

func compileSubscript(n *Subscript, sc *scope) (Evaluator, error) {
	x, err := compile(n.X, sc)
	if err != nil {
		return nil, err
	}
	idx, err := compile(n.Index, sc)
	if err != nil {
		return nil, err
	}
	xt := n.X.Type()
	if xt.Kind == types.Array {
		return func(row types.Row) (types.Datum, error) {
			a, err := x(row)
			if err != nil || a.Null {
				return types.NullDatum, err
			}
			i, err := idx(row)
			if err != nil || i.Null {
				return types.NullDatum, err
			}
			if e, ok := arrayAt(a.L, i.I); ok {
				return e, nil
			}
			return types.NullDatum, nil
		}, nil
	}
	cmp := comparer(*xt.KeyType, n.Index.Type())
	return func(row types.Row) (types.Datum, error) {
		m, err := x(row)
		if err != nil || m.Null {
			return types.NullDatum, err
		}
		k, err := idx(row)
		if err != nil || k.Null {
			return types.NullDatum, err
		}
		for i := 0; i+1 < len(m.L); i += 2 {
			if !m.L[i].Null && cmp(m.L[i], k) == 0 {
				return m.L[i+1], nil
			}
		}
		return types.NullDatum, nil
	}, nil
}

// arrayAt is l[i] with ksqlDB's indexing: 1-based, negative from the end.
func arrayAt(l []types.Datum, i int64) (types.Datum, bool) {
	n := int64(len(l))
	switch {
	case i > 0 && i <= n:
		return l[i-1], true
	case i < 0 && -i <= n:
		return l[n+i], true
	}
	return types.Datum{}, false
}

func compileArray(n *Array, sc *scope) (Evaluator, error) { return compileList(n.Elems, sc) }

// compileList evaluates exprs into one reused element slice: the value of
// an ARRAY constructor, or of a STRUCT's fields in order.
func compileList(exprs []Expr, sc *scope) (Evaluator, error) {
	elems, err := compileAll(exprs, sc)
	if err != nil {
		return nil, err
	}
	out := make([]types.Datum, len(elems))
	return func(row types.Row) (types.Datum, error) {
		for i, ev := range elems {
			d, err := ev(row)
			if err != nil {
				return d, err
			}
			out[i] = d
		}
		return types.Datum{L: out}, nil
	}, nil
}

func compileMap(n *Map, sc *scope) (Evaluator, error) {
	keys, err := compileAll(n.Keys, sc)
	if err != nil {
		return nil, err
	}
	vals, err := compileAll(n.Values, sc)
	if err != nil {
		return nil, err
	}
	kt := *n.T.KeyType
	out := make([]types.Datum, 0, 2*len(keys))
	return func(row types.Row) (types.Datum, error) {
		out = out[:0]
		for i := range keys {
			k, err := keys[i](row)
			if err != nil {
				return k, err
			}
			v, err := vals[i](row)
			if err != nil {
				return v, err
			}
			if k.Null {
				continue
			}
			if j := mapFind(out, k, kt); j >= 0 {
				out[j+1] = v
				continue
			}
			out = append(out, k, v)
		}
		return types.Datum{L: out}, nil
	}, nil
}

func compileStruct(n *Struct, sc *scope) (Evaluator, error) { return compileList(n.Values, sc) }

// compiledLambda is a lambda argument ready to call: write the parameters
// into Slots, then evaluate Body over the row.
type compiledLambda struct {
	Slots []types.Datum
	Body  Evaluator
	T     types.Type // the body's type
}

func compileCall(c *Call, sc *scope) (Evaluator, error) {
	args := make([]Evaluator, len(c.Args))
	argTypes := make([]types.Type, len(c.Args))
	var lambdas []*compiledLambda
	for i, a := range c.Args {
		argTypes[i] = a.Type()
		if l, ok := a.(*Lambda); ok {
			if c.Fn.newLambda == nil {
				return nil, fmt.Errorf("function %s does not take a lambda", c.Fn.Name)
			}
			inner := &scope{outer: sc, names: l.Params, slots: make([]types.Datum, len(l.Params))}
			body, err := compile(l.Body, inner)
			if err != nil {
				return nil, err
			}
			if lambdas == nil {
				lambdas = make([]*compiledLambda, len(c.Args))
			}
			lambdas[i] = &compiledLambda{Slots: inner.slots, Body: body, T: l.Body.Type()}
			continue
		}
		ev, err := compile(a, sc)
		if err != nil {
			return nil, err
		}
		args[i] = ev
	}
	vals := make([]types.Datum, len(args))
	if c.Fn.newLambda != nil {
		impl := c.Fn.newLambda(argTypes, lambdas)
		return func(row types.Row) (types.Datum, error) {
			for i, a := range args {
				if a == nil {
					continue
				}
				d, err := a(row)
				if err != nil {
					return d, err
				}
				vals[i] = d
			}
			d, err := impl(row, vals)
			if err == errLambdaNull {
				return types.NullDatum, nil
			}
			return d, err
		}, nil
	}
	impl := c.Fn.New(argTypes)
	switch len(args) {
	case 1:
		a0 := args[0]
		return func(row types.Row) (types.Datum, error) {
			d, err := a0(row)
			if err != nil {
				return d, err
			}
			vals[0] = d
			return impl(vals)
		}, nil
	case 2:
		a0, a1 := args[0], args[1]
		return func(row types.Row) (types.Datum, error) {
			d, err := a0(row)
			if err != nil {
				return d, err
			}
			vals[0] = d
			if d, err = a1(row); err != nil {
				return d, err
			}
			vals[1] = d
			return impl(vals)
		}, nil
	}
	return func(row types.Row) (types.Datum, error) {
		for i, a := range args {
			d, err := a(row)
			if err != nil {
				return d, err
			}
			vals[i] = d
		}
		return impl(vals)
	}, nil
}
