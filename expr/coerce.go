package expr

import (
	"bytes"

	"github.com/sqlstreams/sqlstreams/types"
)

// Implicit coercion, as ksqlDB applies it when values of different types
// meet in one ARRAY, MAP, CASE, IN list or function argument list:
//
//	INT → BIGINT → DECIMAL → DOUBLE   (numbers widen)
//	NULL (UNKNOWN) → anything
//	ARRAY, MAP, STRUCT                elementwise, when the parts coerce
//
// Strings never turn into numbers implicitly. Comparisons additionally
// read a STRING compared with a DATE, TIME or TIMESTAMP as that type (as
// ksqlDB does for WHERE ts > '2021-01-01T00:00:00'), and a DATE compared
// with a TIMESTAMP as midnight of that day.

// commonType returns the type both a and b coerce to.
func commonType(a, b types.Type) (types.Type, bool) {
	switch {
	case a.Kind == types.Unknown:
		return b, true
	case b.Kind == types.Unknown:
		return a, true
	case a.Equal(b):
		return a, true
	case a.IsNumeric() && b.IsNumeric():
		switch {
		case a.Kind == types.Double || b.Kind == types.Double:
			return types.DoubleType, true
		case a.Kind == types.Decimal || b.Kind == types.Decimal:
			return widenDecimal(a, b), true
		case a.Kind == types.Bigint || b.Kind == types.Bigint:
			return types.BigintType, true
		}
		return types.IntType, true
	}
	if a.Kind != b.Kind {
		return types.Type{}, false
	}
	switch a.Kind {
	case types.Array:
		e, ok := commonType(*a.Elem, *b.Elem)
		if !ok {
			return types.Type{}, false
		}
		return arrayOf(e), true
	case types.Map:
		k, ok1 := commonType(*a.KeyType, *b.KeyType)
		v, ok2 := commonType(*a.Elem, *b.Elem)
		if !ok1 || !ok2 {
			return types.Type{}, false
		}
		return mapOf(k, v), true
	case types.Struct:
		if len(a.Fields) != len(b.Fields) {
			return types.Type{}, false
		}
		fs := make([]types.Field, len(a.Fields))
		for i := range a.Fields {
			if a.Fields[i].Name != b.Fields[i].Name {
				return types.Type{}, false
			}
			t, ok := commonType(a.Fields[i].Type, b.Fields[i].Type)
			if !ok {
				return types.Type{}, false
			}
			fs[i] = types.Field{Name: a.Fields[i].Name, Type: t}
		}
		return types.Type{Kind: types.Struct, Fields: fs}, true
	}
	return types.Type{}, false
}

// commonTypeOf folds commonType over ts; UNKNOWN when all are UNKNOWN.
func commonTypeOf(ts []types.Type) (types.Type, bool) {
	t := types.UnknownType
	for _, u := range ts {
		var ok bool
		if t, ok = commonType(t, u); !ok {
			return types.Type{}, false
		}
	}
	return t, true
}

// coerce returns e as type t: e itself when it has that type, a typed NULL
// for a NULL literal, otherwise an implicit CAST.
func coerce(e Expr, t types.Type) Expr {
	et := e.Type()
	if et.Equal(t) || t.Kind == types.Unknown {
		return e
	}
	if l, ok := e.(*Literal); ok && (l.V.Null || et.Kind == types.Unknown) {
		return &Literal{V: types.NullDatum, T: t}
	}
	return &Cast{X: e, T: t, Implicit: true}
}

func exprTypes(es []Expr) []types.Type {
	ts := make([]types.Type, len(es))
	for i, e := range es {
		ts[i] = e.Type()
	}
	return ts
}

func isTemporal(k types.Kind) bool {
	return k == types.Date || k == types.Time || k == types.Timestamp
}

func isComposite(k types.Kind) bool {
	return k == types.Array || k == types.Map || k == types.Struct
}

// prepareCompare checks that l and r can be compared (with equality only
// when eqOnly) and returns them with any implicit casts the comparison
// needs. what names the operator for the error message.
func prepareCompare(l, r Expr, eqOnly bool, what string) (Expr, Expr, error) {
	a, b := l.Type(), r.Type()
	switch {
	case a.Kind == types.Unknown || b.Kind == types.Unknown:
		return l, r, nil
	case a.IsNumeric() && b.IsNumeric():
		return l, r, nil
	case a.IsNumeric() && isStringLiteral(r):
		// ksqlDB coerces a string literal that reads as a number to
		// the other side's type: n IN (1, '5'), n = '5'.
		if c, ok := coerceLiteral(r, a); ok {
			return l, c, nil
		}
	case b.IsNumeric() && isStringLiteral(l):
		if c, ok := coerceLiteral(l, b); ok {
			return c, r, nil
		}
	case isTemporal(a.Kind) && b.Kind == types.String:
		return l, coerce(r, a), nil
	case isTemporal(b.Kind) && a.Kind == types.String:
		return coerce(l, b), r, nil
	case a.Kind == types.Date && b.Kind == types.Timestamp:
		return coerce(l, b), r, nil
	case a.Kind == types.Timestamp && b.Kind == types.Date:
		return l, coerce(r, a), nil
	case isComposite(a.Kind) || isComposite(b.Kind):
		t, ok := commonType(a, b)
		if !ok {
			break
		}
		if !eqOnly {
			return nil, nil, typeErrorf("cannot compare %s with %s using %s: only = and <> apply to %s values", a, b, what, t.Kind)
		}
		return coerce(l, t), coerce(r, t), nil
	case a.Kind == b.Kind:
		switch a.Kind {
		case types.String, types.Boolean, types.Bytes, types.Date, types.Time, types.Timestamp:
			return l, r, nil
		}
	}
	return nil, nil, typeErrorf("cannot compare %s with %s", a, b)
}

// comparer returns a three-way comparison of non-NULL values of types a
// and b, which prepareCompare has accepted. For composite types it only
// tells equal (0) from different (1).
func comparer(a, b types.Type) func(x, y types.Datum) int {
	if a.Kind == types.Unknown {
		a = b
	}
	if b.Kind == types.Unknown {
		b = a
	}
	switch {
	case a.Kind == types.Double || b.Kind == types.Double:
		fa, fb := asFloat(a), asFloat(b)
		return func(x, y types.Datum) int { return cmpFloatSQL(fa(x), fb(y)) }
	case isWide(a) || isWide(b):
		return wideCompare(a, b)
	case a.Kind == types.Decimal || b.Kind == types.Decimal:
		_, sa := asDecimal(a)
		_, sb := asDecimal(b)
		if sa == sb {
			return func(x, y types.Datum) int { return cmpInt(x.I, y.I) }
		}
		return func(x, y types.Datum) int { return decCompare(x.I, sa, y.I, sb) }
	case a.Kind == types.String || a.Kind == types.Bytes:
		return func(x, y types.Datum) int { return bytes.Compare(x.B, y.B) }
	case isComposite(a.Kind):
		t := a
		return func(x, y types.Datum) int {
			if equalDatum(x, y, t) {
				return 0
			}
			return 1
		}
	}
	return func(x, y types.Datum) int { return cmpInt(x.I, y.I) }
}

// cmpFloatSQL compares as Java's primitive operators do, except that it
// must return something for NaN: NaN equals NaN and is above numbers, as
// Double.compare has it.
func cmpFloatSQL(p, q float64) int {
	switch {
	case p < q:
		return -1
	case p > q:
		return 1
	case p == q:
		return 0
	}
	return cmpFloat(p, q)
}

func asFloat(t types.Type) func(types.Datum) float64 {
	switch t.Kind {
	case types.Double:
		return func(d types.Datum) float64 { return d.F }
	case types.Decimal:
		if isWide(t) {
			return func(d types.Datum) float64 { return wideToFloat(d, t) }
		}
		s := t.Scale
		return func(d types.Datum) float64 { return decToFloat(d.I, s) }
	}
	return func(d types.Datum) float64 { return float64(d.I) }
}

func arrayOf(e types.Type) types.Type {
	return types.Type{Kind: types.Array, Elem: &e}
}

func mapOf(k, v types.Type) types.Type {
	return types.Type{Kind: types.Map, KeyType: &k, Elem: &v}
}

// coerceLiteral converts the constant e to type t at bind time; ok is
// false when the value does not convert.
func coerceLiteral(e Expr, t types.Type) (Expr, bool) {
	c, err := NewCast(e, t)
	if err != nil {
		return nil, false
	}
	ev, err := Compile(c)
	if err != nil {
		return nil, false
	}
	d, err := ev(nil)
	if err != nil || d.Null {
		return nil, false
	}
	return &Literal{V: d.Clone(), T: t}, true
}

// isStringLiteral reports whether e is a non-NULL STRING constant.
func isStringLiteral(e Expr) bool {
	l, ok := e.(*Literal)
	return ok && !l.V.Null && l.T.Kind == types.String
}
