package expr

import (
	"bytes"
	"slices"

	"github.com/sqlstreams/sqlstreams/types"
)

// ARRAY functions. Elements are compared with Java's equals (NULL equals
// NULL), so ARRAY_DISTINCT keeps one NULL. Results reuse the function's
// scratch list and alias the input elements.

var arrayFunctions = []*Function{
	{
		Name:        "ARRAY_LENGTH",
		Description: "Returns the number of elements of an array.",
		Signatures:  []string{"ARRAY_LENGTH(ARRAY<T>) -> INTEGER"},
		Check:       overloads("ARRAY_LENGTH", ov{in: ps(pArray), out: ret(types.IntType)}),
		New: func([]types.Type) Impl {
			return strict(func(a []types.Datum) (types.Datum, error) { return types.IntDatum(int64(len(a[0].L))), nil })
		},
	},
	{
		Name:        "ARRAY_CONTAINS",
		Description: "Returns whether an array contains a value (NULL finds a NULL element); FALSE for a NULL array.",
		Signatures:  []string{"ARRAY_CONTAINS(ARRAY<T>, T) -> BOOLEAN"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 2 || args[0].Kind != types.Array {
				return types.Type{}, notAccept("ARRAY_CONTAINS", args)
			}
			if _, _, err := prepareCompare(&Literal{T: *args[0].Elem}, &Literal{T: args[1]}, true, "="); err != nil || args[1].Kind == types.String && isTemporal(args[0].Elem.Kind) {
				return types.Type{}, notAccept("ARRAY_CONTAINS", args)
			}
			return types.BooleanType, nil
		},
		New: func(ts []types.Type) Impl {
			cmp := comparer(*ts[0].Elem, ts[1])
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return types.BoolDatum(false), nil
				}
				for _, e := range a[0].L {
					if e.Null || a[1].Null {
						if e.Null && a[1].Null {
							return types.BoolDatum(true), nil
						}
						continue
					}
					if cmp(e, a[1]) == 0 {
						return types.BoolDatum(true), nil
					}
				}
				return types.BoolDatum(false), nil
			}
		},
	},
	{
		Name:        "ARRAY_CONCAT",
		Description: "Concatenates two arrays; NULL when both are NULL, the other one when one is.",
		Signatures:  []string{"ARRAY_CONCAT(ARRAY<T>, ARRAY<T>) -> ARRAY<T>"},
		Check:       commonArrays("ARRAY_CONCAT"),
		coerceTo:    allTo,
		New: func([]types.Type) Impl {
			var out []types.Datum
			return func(a []types.Datum) (types.Datum, error) {
				switch {
				case a[0].Null:
					return a[1], nil
				case a[1].Null:
					return a[0], nil
				}
				out = append(append(out[:0], a[0].L...), a[1].L...)
				return types.Datum{L: out}, nil
			}
		},
	},
	{
		Name:        "ARRAY_DISTINCT",
		Description: "Returns the distinct elements of an array (NULL included), in order of first occurrence.",
		Signatures:  []string{"ARRAY_DISTINCT(ARRAY<T>) -> ARRAY<T>"},
		Check:       overloads("ARRAY_DISTINCT", ov{in: ps(pArray), out: argOr(0, types.UnknownType)}),
		New: func(ts []types.Type) Impl {
			seen := &distinctSet{t: *ts[0].Elem}
			var out []types.Datum
			return strict(func(a []types.Datum) (types.Datum, error) {
				seen.reset(len(a[0].L))
				out = out[:0]
				for _, e := range a[0].L {
					if seen.add(e) {
						out = append(out, e)
					}
				}
				return types.Datum{L: out}, nil
			})
		},
	},
	setOp("ARRAY_EXCEPT", "Returns the distinct elements of the first array that are not in the second, in order.", func(inB bool) bool { return !inB }),
	setOp("ARRAY_INTERSECT", "Returns the distinct elements of the first array that are also in the second, in order.", func(inB bool) bool { return inB }),
	{
		Name:        "ARRAY_UNION",
		Description: "Returns the distinct elements of both arrays, in order of first occurrence.",
		Signatures:  []string{"ARRAY_UNION(ARRAY<T>, ARRAY<T>) -> ARRAY<T>"},
		Check:       commonArrays("ARRAY_UNION"),
		coerceTo:    allTo,
		New: func(ts []types.Type) Impl {
			t, _ := commonTypeOf(ts)
			seen := &distinctSet{t: *t.Elem}
			var out []types.Datum
			return strict(func(a []types.Datum) (types.Datum, error) {
				seen.reset(len(a[0].L) + len(a[1].L))
				out = out[:0]
				for _, l := range [2][]types.Datum{a[0].L, a[1].L} {
					for _, e := range l {
						if seen.add(e) {
							out = append(out, e)
						}
					}
				}
				return types.Datum{L: out}, nil
			})
		},
	},
	{
		Name:        "ARRAY_JOIN",
		Description: "Joins the elements of an array of primitives into a string with a delimiter (default ',').",
		Signatures:  []string{"ARRAY_JOIN(ARRAY<T>) -> STRING", "ARRAY_JOIN(ARRAY<T>, STRING delimiter) -> STRING"},
		Check:       overloads("ARRAY_JOIN", ov{in: ps(primitiveArray, pString), opt: 1, out: ret(types.StringType)}),
		New: func(ts []types.Type) Impl {
			et := *ts[0].Elem
			var buf []byte
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return null()
				}
				sep := []byte(",")
				if len(a) > 1 {
					sep = a[1].B // NULL joins with nothing between
				}
				buf = buf[:0]
				for i, e := range a[0].L {
					if i > 0 {
						buf = append(buf, sep...)
					}
					buf = appendJava(buf, e, et)
				}
				return types.Datum{B: buf}, nil
			}
		},
	},
	arrayExtremum("ARRAY_MAX", "Returns the largest non-NULL element of an array of primitives.", 1),
	arrayExtremum("ARRAY_MIN", "Returns the smallest non-NULL element of an array of primitives.", -1),
	{
		Name:        "ARRAY_REMOVE",
		Description: "Removes every element equal to a value (NULL removes NULLs) from an array.",
		Signatures:  []string{"ARRAY_REMOVE(ARRAY<T>, T) -> ARRAY<T>"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 2 || args[0].Kind != types.Array {
				return types.Type{}, notAccept("ARRAY_REMOVE", args)
			}
			if _, ok := commonType(*args[0].Elem, args[1]); !ok {
				return types.Type{}, notAccept("ARRAY_REMOVE", args)
			}
			return args[0], nil
		},
		coerceTo: func(args []types.Type) []types.Type { return []types.Type{types.UnknownType, *args[0].Elem} },
		New: func(ts []types.Type) Impl {
			et := *ts[0].Elem
			var out []types.Datum
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return null()
				}
				out = out[:0]
				for _, e := range a[0].L {
					if !equalDatum(e, a[1], et) {
						out = append(out, e)
					}
				}
				return types.Datum{L: out}, nil
			}
		},
	},
	{
		Name:        "ARRAY_SORT",
		Description: "Sorts an array of primitives, 'ASC' (default) or 'DESC'; NULLs go last.",
		Signatures:  []string{"ARRAY_SORT(ARRAY<T>) -> ARRAY<T>", "ARRAY_SORT(ARRAY<T>, STRING direction) -> ARRAY<T>"},
		Check:       overloads("ARRAY_SORT", ov{in: ps(primitiveArray, pString), opt: 1, out: argOr(0, types.UnknownType)}),
		validate: validateConst(1, func(b []byte) error {
			if _, ok := sortDirection(b); !ok {
				return typeErrorf("function ARRAY_SORT: direction must be 'ASC' or 'DESC', got '%s'", b)
			}
			return nil
		}),
		New: func(ts []types.Type) Impl {
			et := *ts[0].Elem
			var out []types.Datum
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return null()
				}
				desc := false
				if len(a) > 1 && !a[1].Null {
					var ok bool
					if desc, ok = sortDirection(a[1].B); !ok {
						return types.NullDatum, funcErrorf("ARRAY_SORT", "direction must be 'ASC' or 'DESC', got '%s'", a[1].B)
					}
				}
				out = append(out[:0], a[0].L...)
				slices.SortStableFunc(out, func(x, y types.Datum) int {
					switch {
					case x.Null && y.Null:
						return 0
					case x.Null:
						return 1
					case y.Null:
						return -1
					}
					c := compareDatum(x, y, et)
					if desc {
						return -c
					}
					return c
				})
				return types.Datum{L: out}, nil
			}
		},
	},
	{
		Name:        "SLICE",
		Description: "Returns the elements of an array from one 1-based position to another, both included; NULL when out of range.",
		Signatures:  []string{"SLICE(ARRAY<T>, INTEGER from, INTEGER to) -> ARRAY<T>"},
		Check:       overloads("SLICE", ov{in: ps(pArray, pInt, pInt), out: argOr(0, types.UnknownType)}),
		New: func([]types.Type) Impl {
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return null()
				}
				l := a[0].L
				start, end := int64(0), int64(len(l))
				if !a[1].Null {
					start = a[1].I - 1
				}
				if !a[2].Null {
					end = a[2].I
				}
				if start < 0 || start > end || end > int64(len(l)) {
					return null()
				}
				return types.Datum{L: l[start:end:end]}, nil
			}
		},
	},
	{
		Name:        "ENTRIES",
		Description: "Returns the entries of a map as an array of STRUCT<K, V>, sorted by key when the second argument is true.",
		Signatures:  []string{"ENTRIES(MAP<K, V>, BOOLEAN sorted) -> ARRAY<STRUCT<K K, V V>>"},
		Check: overloads("ENTRIES", ov{in: ps(pMap, pBool), out: func(a []types.Type) types.Type {
			return arrayOf(types.Type{Kind: types.Struct, Fields: []types.Field{{Name: "K", Type: *a[0].KeyType}, {Name: "V", Type: *a[0].Elem}}})
		}}),
		New: func(ts []types.Type) Impl {
			kt := *ts[0].KeyType
			var out, pairs []types.Datum
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return null()
				}
				m := a[0].L
				n := len(m) / 2
				pairs = append(pairs[:0], m...)
				out = out[:0]
				for i := 0; i < n; i++ {
					out = append(out, types.Datum{L: pairs[2*i : 2*i+2 : 2*i+2]})
				}
				if a[1].Bool() {
					slices.SortStableFunc(out, func(x, y types.Datum) int {
						switch {
						case x.L[0].Null:
							return 1
						case y.L[0].Null:
							return -1
						}
						return compareDatum(x.L[0], y.L[0], kt)
					})
				}
				return types.Datum{L: out}, nil
			}
		},
	},
}

// primitiveArray accepts an ARRAY whose elements are not composite.
func primitiveArray(t types.Type) bool {
	return t.Kind == types.Array && !isComposite(t.Elem.Kind)
}

// commonArrays checks two arrays with a common type.
func commonArrays(name string) func([]types.Type) (types.Type, error) {
	return func(args []types.Type) (types.Type, error) {
		if len(args) != 2 || !pArray(args[0]) && args[0].Kind != types.Unknown || !pArray(args[1]) && args[1].Kind != types.Unknown {
			return types.Type{}, notAccept(name, args)
		}
		t, ok := commonType(args[0], args[1])
		if !ok || t.Kind != types.Array {
			return types.Type{}, notAccept(name, args)
		}
		return t, nil
	}
}

func setOp(name, desc string, keep func(inB bool) bool) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(ARRAY<T>, ARRAY<T>) -> ARRAY<T>"},
		Check:       commonArrays(name),
		coerceTo:    allTo,
		New: func(ts []types.Type) Impl {
			t, _ := commonTypeOf(ts)
			inB := &distinctSet{t: *t.Elem}
			seen := &distinctSet{t: *t.Elem}
			var out []types.Datum
			return strict(func(a []types.Datum) (types.Datum, error) {
				inB.reset(len(a[1].L))
				for _, e := range a[1].L {
					inB.add(e)
				}
				seen.reset(len(a[0].L))
				out = out[:0]
				for _, e := range a[0].L {
					if keep(inB.has(e)) && seen.add(e) {
						out = append(out, e)
					}
				}
				return types.Datum{L: out}, nil
			})
		},
	}
}

func arrayExtremum(name, desc string, sign int) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(ARRAY<T>) -> T"},
		Check: overloads(name, ov{in: ps(primitiveArray), out: func(a []types.Type) types.Type {
			return *a[0].Elem
		}}),
		New: func(ts []types.Type) Impl {
			et := *ts[0].Elem
			return strict(func(a []types.Datum) (types.Datum, error) {
				best := types.NullDatum
				for _, e := range a[0].L {
					if e.Null {
						continue
					}
					if best.Null || compareDatum(e, best, et)*sign > 0 {
						best = e
					}
				}
				return best, nil
			})
		},
	}
}

func sortDirection(b []byte) (desc bool, ok bool) {
	switch {
	case bytes.EqualFold(b, []byte("ASC")):
		return false, true
	case bytes.EqualFold(b, []byte("DESC")):
		return true, true
	}
	return false, false
}
