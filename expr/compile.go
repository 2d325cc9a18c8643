package expr

import (
	"bytes"
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
func Compile(e Expr) (Evaluator, error) {
	switch e := e.(type) {
	case *Column:
		i := e.Index
		return func(row types.Row) (types.Datum, error) { return row[i], nil }, nil
	case *Literal:
		v := e.V
		return func(types.Row) (types.Datum, error) { return v, nil }, nil
	case *Binary:
		return compileBinary(e)
	case *Unary:
		return compileUnary(e)
	case *IsNull:
		x, err := Compile(e.X)
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
		return compileCall(e)
	}
	return nil, fmt.Errorf("cannot compile %T", e)
}

func compileUnary(u *Unary) (Evaluator, error) {
	x, err := Compile(u.X)
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

func compileBinary(b *Binary) (Evaluator, error) {
	l, err := Compile(b.L)
	if err != nil {
		return nil, err
	}
	r, err := Compile(b.R)
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
				return x, err
			}
			y, err := r(row)
			if err != nil || y.Null {
				return y, err
			}
			buf = append(append(buf[:0], x.B...), y.B...)
			return types.Datum{B: buf}, nil
		}, nil
	case OpEQ, OpNE, OpLT, OpLE, OpGT, OpGE:
		cmp := comparer(b.L.Type(), b.R.Type())
		test := cmpTest(b.Op)
		return func(row types.Row) (types.Datum, error) {
			x, err := l(row)
			if err != nil || x.Null {
				return types.NullDatum, err
			}
			y, err := r(row)
			if err != nil || y.Null {
				return types.NullDatum, err
			}
			return types.BoolDatum(test(cmp(x, y))), nil
		}, nil
	}
	return compileArith(b, l, r)
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

// comparer returns a three-way comparison for values of types a and b,
// which NewBinary has checked are comparable.
func comparer(a, b types.Type) func(x, y types.Datum) int {
	if a.Kind == types.Unknown {
		a = b
	}
	switch {
	case a.Kind == types.Double || b.Kind == types.Double:
		fa, fb := asFloat(a), asFloat(b)
		return func(x, y types.Datum) int {
			p, q := fa(x), fb(y)
			switch {
			case p < q:
				return -1
			case p > q:
				return 1
			}
			return 0
		}
	case a.Kind == types.String || a.Kind == types.Bytes:
		return func(x, y types.Datum) int { return bytes.Compare(x.B, y.B) }
	}
	return func(x, y types.Datum) int {
		switch {
		case x.I < y.I:
			return -1
		case x.I > y.I:
			return 1
		}
		return 0
	}
}

func asFloat(t types.Type) func(types.Datum) float64 {
	if t.Kind == types.Double {
		return func(d types.Datum) float64 { return d.F }
	}
	return func(d types.Datum) float64 { return float64(d.I) }
}

// compileArith compiles + - * / %. Integer arithmetic wraps on overflow as
// Java's (and so ksqlDB's) does; INT results wrap at 32 bits. Integer
// division or modulo by zero yields NULL.
func compileArith(b *Binary, l, r Evaluator) (Evaluator, error) {
	op := b.Op
	if b.T.Kind == types.Double {
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
	}
	narrow := b.T.Kind == types.Int
	return func(row types.Row) (types.Datum, error) {
		x, err := l(row)
		if err != nil || x.Null {
			return types.NullDatum, err
		}
		y, err := r(row)
		if err != nil || y.Null {
			return types.NullDatum, err
		}
		var v int64
		switch op {
		case OpAdd:
			v = x.I + y.I
		case OpSub:
			v = x.I - y.I
		case OpMul:
			v = x.I * y.I
		case OpDiv:
			if y.I == 0 {
				return types.NullDatum, nil
			}
			if y.I == -1 { // avoid the MinInt64 / -1 trap; wraps like Java
				v = -x.I
			} else {
				v = x.I / y.I
			}
		case OpMod:
			if y.I == 0 {
				return types.NullDatum, nil
			}
			if y.I == -1 {
				v = 0
			} else {
				v = x.I % y.I
			}
		}
		if narrow {
			v = int64(int32(v))
		}
		return types.IntDatum(v), nil
	}, nil
}

func compileCall(c *Call) (Evaluator, error) {
	args := make([]Evaluator, len(c.Args))
	argTypes := make([]types.Type, len(c.Args))
	for i, a := range c.Args {
		ev, err := Compile(a)
		if err != nil {
			return nil, err
		}
		args[i] = ev
		argTypes[i] = a.Type()
	}
	impl := c.Fn.New(argTypes)
	vals := make([]types.Datum, len(args))
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
