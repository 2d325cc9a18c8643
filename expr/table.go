package expr

import (
	"sort"
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// TableFunction is a table function: it turns one input row into zero or
// more output rows, one per element of its argument. The executor
// evaluates the argument with an ordinary Evaluator, then emits one row
// per element of Expand's result (none for NULL).
type TableFunction struct {
	// Name is the upper-case name users call it by.
	Name string
	// Description is one line for SHOW FUNCTIONS and DESCRIBE FUNCTION.
	Description string
	// Signatures lists the accepted forms, e.g. "EXPLODE(ARRAY<T>) -> T".
	Signatures []string
	// Check returns the type of the values the function produces (one
	// per output row) for the argument types, or a *TypeError.
	Check func(args []types.Type) (types.Type, error)
	// Expand returns the values for one evaluated argument list. The
	// slice aliases the arguments: it is valid as long as they are.
	Expand func(args []types.Datum) []types.Datum
}

// LookupTable finds a table function by name, case-insensitively.
func LookupTable(name string) (*TableFunction, bool) {
	f, ok := tableRegistry[strings.ToUpper(name)]
	return f, ok
}

// TableFunctions returns every table function, sorted by name.
func TableFunctions() []*TableFunction {
	out := make([]*TableFunction, 0, len(tableRegistry))
	for _, f := range tableRegistry {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ExplodeElements returns the elements of an ARRAY value, one output row
// each for EXPLODE; nil (no rows) for NULL. The slice aliases d.
func ExplodeElements(d types.Datum) []types.Datum {
	if d.Null {
		return nil
	}
	return d.L
}

var tableRegistry = map[string]*TableFunction{
	"EXPLODE": {
		Name:        "EXPLODE",
		Description: "Outputs one row per element of an array (none for an empty or NULL array).",
		Signatures:  []string{"EXPLODE(ARRAY<T>) -> T"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 1 || args[0].Kind != types.Array {
				return types.Type{}, notAccept("EXPLODE", args)
			}
			return *args[0].Elem, nil
		},
		Expand: func(args []types.Datum) []types.Datum { return ExplodeElements(args[0]) },
	},
	"CUBE_EXPLODE": {
		Name:        "CUBE_EXPLODE",
		Description: "Outputs one row per combination of an array's elements, each kept or NULL (a NULL element only as NULL), from all NULL to all kept.",
		Signatures:  []string{"CUBE_EXPLODE(ARRAY<T>) -> ARRAY<T>"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 1 || args[0].Kind != types.Array {
				return types.Type{}, notAccept("CUBE_EXPLODE", args)
			}
			return args[0], nil
		},
		Expand: func(args []types.Datum) []types.Datum { return CubeCombinations(args[0]) },
	},
}

// CubeCombinations returns CUBE_EXPLODE's rows for an ARRAY value: every
// combination of its non-NULL elements kept or NULL, counting in binary
// with the first element as the highest bit, as ksqlDB orders them. NULL
// gives none.
func CubeCombinations(d types.Datum) []types.Datum {
	if d.Null {
		return nil
	}
	var present []int
	for i, e := range d.L {
		if !e.Null {
			present = append(present, i)
		}
	}
	if len(present) > 20 {
		present = present[:20] // 2^20 rows is already more than anyone wants
	}
	n := 1 << len(present)
	out := make([]types.Datum, n)
	for m := 0; m < n; m++ {
		row := make([]types.Datum, len(d.L))
		for i := range row {
			row[i] = types.NullDatum
		}
		for j, p := range present {
			if m&(1<<(len(present)-1-j)) != 0 {
				row[p] = d.L[p]
			}
		}
		out[m] = types.Datum{L: row}
	}
	return out
}
