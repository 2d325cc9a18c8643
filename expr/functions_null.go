package expr

import (
	"github.com/sqlstreams/sqlstreams/types"
)

// Conditional and NULL functions: COALESCE, IFNULL, NULLIF, AS_VALUE.
// Their arguments are coerced to one common type first.

var nullFunctions = []*Function{
	{
		Name:        "COALESCE",
		Description: "Returns the first argument that is not NULL.",
		Signatures:  []string{"COALESCE(T, T, ...) -> T"},
		Check:       commonCheck("COALESCE", 1, nil),
		coerceTo:    allTo,
		New: func([]types.Type) Impl {
			return func(a []types.Datum) (types.Datum, error) {
				for _, d := range a {
					if !d.Null {
						return d, nil
					}
				}
				return null()
			}
		},
	},
	{
		Name:        "IFNULL",
		Description: "Returns the first argument, or the second when the first is NULL.",
		Signatures:  []string{"IFNULL(T, T) -> T"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 2 {
				return types.Type{}, notAccept("IFNULL", args)
			}
			return commonCheck("IFNULL", 2, nil)(args)
		},
		coerceTo: allTo,
		New: func([]types.Type) Impl {
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return a[1], nil
				}
				return a[0], nil
			}
		},
	},
	{
		Name:        "NULLIF",
		Description: "Returns NULL when the two arguments are equal, otherwise the first.",
		Signatures:  []string{"NULLIF(T, T) -> T"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 2 {
				return types.Type{}, notAccept("NULLIF", args)
			}
			return commonCheck("NULLIF", 2, nil)(args)
		},
		coerceTo: allTo,
		New: func(ts []types.Type) Impl {
			t, _ := commonTypeOf(ts)
			return func(a []types.Datum) (types.Datum, error) {
				if !a[0].Null && !a[1].Null && equalDatum(a[0], a[1], t) {
					return null()
				}
				return a[0], nil
			}
		},
	},
	{
		Name:        "AS_VALUE",
		Description: "Copies a key column into the value; as an expression it returns its argument.",
		Signatures:  []string{"AS_VALUE(T) -> T"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 1 {
				return types.Type{}, notAccept("AS_VALUE", args)
			}
			return args[0], nil
		},
		New: func([]types.Type) Impl {
			return func(a []types.Datum) (types.Datum, error) { return a[0], nil }
		},
	},
}
