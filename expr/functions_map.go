package expr

import (
	"github.com/sqlstreams/sqlstreams/types"
)

// MAP functions. A MAP value is its entries interleaved (k0, v0, k1, v1,
// …) in insertion order; results keep that order.

var mapFunctions = []*Function{
	{
		Name:        "MAP_KEYS",
		Description: "Returns the keys of a map as an array.",
		Signatures:  []string{"MAP_KEYS(MAP<K, V>) -> ARRAY<K>"},
		Check:       overloads("MAP_KEYS", ov{in: ps(pMap), out: func(a []types.Type) types.Type { return arrayOf(*a[0].KeyType) }}),
		New:         func([]types.Type) Impl { return mapHalf(0) },
	},
	{
		Name:        "MAP_VALUES",
		Description: "Returns the values of a map as an array.",
		Signatures:  []string{"MAP_VALUES(MAP<K, V>) -> ARRAY<V>"},
		Check:       overloads("MAP_VALUES", ov{in: ps(pMap), out: func(a []types.Type) types.Type { return arrayOf(*a[0].Elem) }}),
		New:         func([]types.Type) Impl { return mapHalf(1) },
	},
	{
		Name:        "MAP_UNION",
		Description: "Returns the entries of both maps; for a key in both, the second map's value. NULL when both are NULL.",
		Signatures:  []string{"MAP_UNION(MAP<K, V>, MAP<K, V>) -> MAP<K, V>"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 2 {
				return types.Type{}, notAccept("MAP_UNION", args)
			}
			t, ok := commonTypeOf(args)
			if !ok || t.Kind != types.Map {
				return types.Type{}, notAccept("MAP_UNION", args)
			}
			return t, nil
		},
		coerceTo: allTo,
		New: func(ts []types.Type) Impl {
			t, _ := commonTypeOf(ts)
			kt := *t.KeyType
			var out []types.Datum
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null && a[1].Null {
					return null()
				}
				out = out[:0]
				for _, m := range a {
					if m.Null {
						continue
					}
					for i := 0; i+1 < len(m.L); i += 2 {
						if j := mapFind(out, m.L[i], kt); j >= 0 {
							out[j+1] = m.L[i+1]
							continue
						}
						out = append(out, m.L[i], m.L[i+1])
					}
				}
				return types.Datum{L: out}, nil
			}
		},
	},
	{
		Name:        "AS_MAP",
		Description: "Builds a map from an array of keys and an array of values, pairing them by position.",
		Signatures:  []string{"AS_MAP(ARRAY<K>, ARRAY<V>) -> MAP<K, V>"},
		Check: overloads("AS_MAP", ov{in: ps(primitiveArray, pArray), out: func(a []types.Type) types.Type {
			return mapOf(*a[0].Elem, *a[1].Elem)
		}}),
		New: func(ts []types.Type) Impl {
			kt := *ts[0].Elem
			var out []types.Datum
			return strict(func(a []types.Datum) (types.Datum, error) {
				ks, vs := a[0].L, a[1].L
				out = out[:0]
				for i, k := range ks {
					if k.Null {
						continue
					}
					v := types.NullDatum
					if i < len(vs) {
						v = vs[i]
					}
					if j := mapFind(out, k, kt); j >= 0 {
						out[j+1] = v
						continue
					}
					out = append(out, k, v)
				}
				return types.Datum{L: out}, nil
			})
		},
	},
}

// mapHalf returns the keys (0) or values (1) of a map.
func mapHalf(half int) Impl {
	var out []types.Datum
	return strict(func(a []types.Datum) (types.Datum, error) {
		out = out[:0]
		for i := half; i < len(a[0].L); i += 2 {
			out = append(out, a[0].L[i])
		}
		return types.Datum{L: out}, nil
	})
}
