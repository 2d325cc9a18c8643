package expr

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// User-written lists (the value and elements of x IN (…), the elements of
// ARRAY[…]) are coerced to one type as ksqlDB's CoercionUtil.coerceUserList
// does, in order: the first non-NULL element's type starts the common
// type, and each further element either coerces into it or widens it.
//
//   - numbers widen INT → BIGINT → DECIMAL → DOUBLE;
//   - a STRING literal joins a numeric list as the number it reads as
//     ('4.000' is a DECIMAL(4, 3), '2147483648' a BIGINT), and a BOOLEAN
//     list as a prefix of yes, true, no or false (any case); one that does
//     not read so is an error ("invalid input syntax for type …");
//   - any other literal (a number, a BOOLEAN) joins a STRING list as its
//     text;
//   - a STRING expression joins a DATE, TIME or TIMESTAMP list (read as
//     one), and the reverse;
//   - ARRAY, MAP and STRUCT constructors coerce element by element, and a
//     STRUCT list has every field any of its elements has.
//
// Other mixes are an error naming both types and the element, as
// ksqlDB's: operator does not exist: BOOLEAN = INTEGER (10).

// userList returns the common type of es and es converted to it: literals
// converted at bind time, other expressions cast. NULL literals take the
// common type. The type is UNKNOWN when every element is an untyped NULL.
func userList(es []Expr) (types.Type, []Expr, error) {
	t := types.UnknownType
	for _, e := range es {
		var err error
		if t, err = resolveUser(e, t); err != nil {
			return types.Type{}, nil, err
		}
	}
	if t.Kind == types.Unknown {
		return t, es, nil
	}
	out := make([]Expr, len(es))
	for i, e := range es {
		c, err := convertUser(e, t)
		if err != nil {
			return types.Type{}, nil, err
		}
		out[i] = c
	}
	return t, out, nil
}

// resolveUser widens target (UNKNOWN before the first typed element) to
// take e.
func resolveUser(e Expr, target types.Type) (types.Type, error) {
	et := e.Type()
	if l, ok := e.(*Literal); ok && l.V.Null && target.Kind != types.Unknown {
		// A NULL takes any type (one a constructor typed already too).
		return target, nil
	}
	switch {
	case target.Kind == types.Unknown:
		return et, nil
	case et.Kind == types.Unknown:
		return target, nil
	}
	mismatch := func() error {
		return typeErrorf("operator does not exist: %s = %s (%s)\nHint: You might need to add explicit type casts.", target.Quoted(), et.Quoted(), strings.ReplaceAll(e.String(), " := ", ":="))
	}
	// An element of a constructor that does not fit: ksqlDB names the
	// constructor's type.
	inner := func(err error) error {
		if strings.HasPrefix(err.Error(), "operator does not exist") {
			return mismatch()
		}
		return err
	}
	switch n := e.(type) {
	case *Array:
		if target.Kind != types.Array {
			return types.Type{}, mismatch()
		}
		el, err := resolveUserElems(*target.Elem, n.Elems)
		if err != nil {
			return types.Type{}, inner(err)
		}
		return arrayOf(el), nil
	case *Map:
		if target.Kind != types.Map {
			return types.Type{}, mismatch()
		}
		k, err := resolveUserElems(*target.KeyType, n.Keys)
		if err != nil {
			return types.Type{}, inner(err)
		}
		v, err := resolveUserElems(*target.Elem, n.Values)
		if err != nil {
			return types.Type{}, inner(err)
		}
		return mapOf(k, v), nil
	case *Struct:
		if target.Kind != types.Struct {
			return types.Type{}, mismatch()
		}
		var fs []types.Field
		seen := map[string]bool{}
		for i, f := range et.Fields {
			seen[f.Name] = true
			ft := f.Type
			if tf, ok := fieldType(target, f.Name); ok {
				var err error
				if ft, err = resolveUser(n.Values[i], tf); err != nil {
					return types.Type{}, inner(err)
				}
			}
			fs = append(fs, types.Field{Name: f.Name, Type: ft})
		}
		for _, f := range target.Fields {
			if !seen[f.Name] {
				fs = append(fs, f)
			}
		}
		return types.Type{Kind: types.Struct, Fields: fs}, nil
	}
	if l, ok := e.(*Literal); ok && !l.V.Null && et.Kind == types.String {
		s := string(l.V.B)
		switch {
		case target.IsNumeric():
			st, err := stringNumberType(s)
			if err != nil {
				return types.Type{}, typeErrorf("invalid input syntax for type %s: %q.", baseName(target), s)
			}
			switch {
			case st.Kind == types.Double || target.Kind == types.Double:
				return types.DoubleType, nil
			case st.Kind == types.Decimal || target.Kind == types.Decimal:
				return widenDecimal(st, target), nil
			case st.Kind == types.Bigint || target.Kind == types.Bigint:
				return types.BigintType, nil
			}
			return types.IntType, nil
		case target.Kind == types.Boolean:
			if _, ok := parseBoolPrefix(s); !ok {
				return types.Type{}, typeErrorf("invalid input syntax for type BOOLEAN: %q.", s)
			}
			return target, nil
		}
	}
	lit, _ := e.(*Literal)
	lax := lit != nil && !lit.V.Null
	if t, ok := userCoercible(lax, et, target); ok {
		return t, nil
	}
	if t, ok := userCoercible(lax, target, et); ok {
		return t, nil
	}
	return types.Type{}, mismatch()
}

// resolveUserElems is the common type of a constructor's elements with
// target.
func resolveUserElems(target types.Type, es []Expr) (types.Type, error) {
	t := target
	for _, e := range es {
		var err error
		if t, err = resolveUser(e, t); err != nil {
			return types.Type{}, err
		}
	}
	return t, nil
}

func fieldType(t types.Type, name string) (types.Type, bool) {
	for _, f := range t.Fields {
		if f.Name == name {
			return f.Type, true
		}
	}
	return types.Type{}, false
}

// userCoercible is ksqlDB's DefaultSqlValueCoercer.canCoerce: the type
// values of from take to join to (STRICT; lax adds the conversions
// between STRING and the other scalar types that literals get).
func userCoercible(lax bool, from, to types.Type) (types.Type, bool) {
	switch {
	case from.Kind == types.Unknown:
		return to, true
	case from.IsNumeric() && to.IsNumeric():
		switch {
		case to.Kind == types.Double:
			return to, true
		case from.Kind == types.Double:
			return types.Type{}, false
		case to.Kind == types.Decimal:
			return widenDecimal(from, to), true
		case from.Kind == types.Decimal:
			return types.Type{}, false
		case from.Kind == types.Int || from.Kind == to.Kind:
			return to, true
		}
		return types.Type{}, false
	case from.Kind == types.Array && to.Kind == types.Array:
		e, ok := userCoercible(lax, *from.Elem, *to.Elem)
		return arrayOf(e), ok
	case from.Kind == types.Map && to.Kind == types.Map:
		k, ok1 := userCoercible(lax, *from.KeyType, *to.KeyType)
		v, ok2 := userCoercible(lax, *from.Elem, *to.Elem)
		return mapOf(k, v), ok1 && ok2
	case from.Kind == types.Struct && to.Kind == types.Struct:
		var fs []types.Field
		seen := map[string]bool{}
		for _, f := range from.Fields {
			seen[f.Name] = true
			ft := f.Type
			if tf, ok := fieldType(to, f.Name); ok {
				if ft, ok = userCoercible(lax, f.Type, tf); !ok {
					return types.Type{}, false
				}
			}
			fs = append(fs, types.Field{Name: f.Name, Type: ft})
		}
		for _, f := range to.Fields {
			if !seen[f.Name] {
				fs = append(fs, f)
			}
		}
		return types.Type{Kind: types.Struct, Fields: fs}, true
	case from.Kind == types.String && (isTemporal(to.Kind) || to.Kind == types.Bytes):
		return to, true
	case from.Kind == types.Date && to.Kind == types.Timestamp:
		// Not in ksqlDB's list coercion, but its comparisons read a DATE
		// against a TIMESTAMP as midnight, and IN did so here before.
		return to, true
	case from.Kind == to.Kind && !isComposite(from.Kind):
		return to, true
	case lax && to.Kind == types.String:
		return to, from.Kind != types.Bytes && !isComposite(from.Kind)
	case lax && from.Kind == types.String:
		return to, to.Kind == types.Boolean || to.IsNumeric()
	}
	return types.Type{}, false
}

// widenDecimal is ksqlDB's DecimalUtil.widen: enough integer digits and
// scale for both, within the DECIMAL precision sqlstreams holds.
func widenDecimal(a, b types.Type) types.Type {
	p1, s1 := asDecimal(a)
	p2, s2 := asDecimal(b)
	s := max(s1, s2)
	p := max(p1-s1, p2-s2) + s
	limit := types.ShortDecimalPrecision // as before wide DECIMALs, for the types of running queries
	if isWide(a) || isWide(b) {
		limit = types.MaxDecimalPrecision
	}
	if p > limit {
		p = limit
		s = min(s, p)
	}
	return types.Type{Kind: types.Decimal, Precision: p, Scale: s}
}

// baseName is a type's name without parameters, as ksqlDB's messages
// name it (DECIMAL, not DECIMAL(4, 2)).
func baseName(t types.Type) string {
	s := t.String()
	if i := strings.IndexByte(s, '('); i > 0 {
		return s[:i]
	}
	return s
}

// stringNumberType is the type of the number s reads as: INT or BIGINT
// for an integer that fits (strictly inside the range, as ksqlDB has
// it), otherwise DECIMAL with its digits and scale.
func stringNumberType(s string) (types.Type, error) {
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return types.Type{}, err
	}
	if !strings.ContainsAny(s, ".eE") {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			if v > math.MinInt32 && v < math.MaxInt32 {
				return types.IntType, nil
			}
			if v > math.MinInt64 && v < math.MaxInt64 {
				return types.BigintType, nil
			}
		}
	}
	if strings.ContainsAny(s, "eE") {
		// A BigDecimal in scientific notation: its digits and scale.
		f, _ := strconv.ParseFloat(s, 64)
		s = strconv.FormatFloat(f, 'f', -1, 64)
	}
	l, err := DecimalLiteral(s)
	if err != nil {
		return types.DoubleType, nil
	}
	return l.T, nil
}

// parseBoolPrefix reads s as ksqlDB's SqlBooleans.parseBooleanExact does:
// a non-empty prefix of "true" or "yes" is TRUE, of "false" or "no"
// FALSE, in any case.
func parseBoolPrefix(s string) (v, ok bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return false, false
	}
	switch {
	case strings.HasPrefix("true", s), strings.HasPrefix("yes", s):
		return true, true
	case strings.HasPrefix("false", s), strings.HasPrefix("no", s):
		return false, true
	}
	return false, false
}

// convertUser converts e to the list's common type t: a literal at bind
// time (as ksqlDB's LAX coercer would), anything else with an implicit
// CAST.
func convertUser(e Expr, t types.Type) (Expr, error) {
	et := e.Type()
	if et.Equal(t) || et.Kind == types.Unknown {
		return coerce(e, t), nil
	}
	if l, ok := e.(*Literal); ok && !l.V.Null {
		if et.Kind == types.String && t.Kind == types.Boolean {
			v, _ := parseBoolPrefix(string(l.V.B))
			return &Literal{V: types.BoolDatum(v), T: t}, nil
		}
		if c, ok := coerceLiteral(e, t); ok {
			return c, nil
		}
		return nil, typeErrorf("invalid input syntax for type %s: %q.", baseName(t), fmt.Sprint(e))
	}
	if !castable(et, t) {
		return nil, typeErrorf("operator does not exist: %s = %s (%s)\nHint: You might need to add explicit type casts.", t.Quoted(), et.Quoted(), e)
	}
	return &Cast{X: e, T: t, Implicit: true}, nil
}
