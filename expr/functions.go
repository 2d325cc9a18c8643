package expr

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/types"
)

// Function is a scalar function in the registry.
type Function struct {
	// Name is the upper-case name users call it by.
	Name string
	// Description is one line for SHOW FUNCTIONS and DESCRIBE FUNCTION.
	Description string
	// Signatures lists the accepted forms, e.g. "UCASE(STRING) -> STRING".
	Signatures []string
	// Check returns the result type for the argument types, or an error
	// naming the function and the types it was given.
	Check func(args []types.Type) (types.Type, error)
	// New returns the implementation for checked argument types. It is
	// called once per compiled call and may keep scratch state.
	New func(args []types.Type) Impl
}

// Impl computes a function over evaluated arguments. args is reused by the
// caller; the result follows Evaluator's validity rule.
type Impl func(args []types.Datum) (types.Datum, error)

// NewCall type-checks a call of fn and builds it.
func NewCall(fn *Function, args []Expr) (Expr, error) {
	ts := make([]types.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	t, err := fn.Check(ts)
	if err != nil {
		return nil, err
	}
	return &Call{Fn: fn, Args: args, T: t}, nil
}

// Lookup finds a scalar function by name, case-insensitively.
func Lookup(name string) (*Function, bool) {
	f, ok := registry[strings.ToUpper(name)]
	return f, ok
}

// Functions returns every scalar function, sorted by name.
func Functions() []*Function {
	out := make([]*Function, 0, len(registry))
	for _, f := range registry {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

var registry = buildRegistry(
	stringToString("UCASE", "Converts a string to upper case.", bytes.ToUpper),
	stringToString("LCASE", "Converts a string to lower case.", bytes.ToLower),
	stringToString("TRIM", "Removes leading and trailing white space.", bytes.TrimSpace),
	&Function{
		Name:        "LEN",
		Description: "Returns the number of characters in a string.",
		Signatures:  []string{"LEN(STRING) -> INTEGER"},
		Check:       exactly("LEN", types.IntType, types.StringType),
		New: func([]types.Type) Impl {
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return types.NullDatum, nil
				}
				return types.IntDatum(int64(utf8.RuneCount(a[0].B))), nil
			}
		},
	},
	&Function{
		Name:        "CONCAT",
		Description: "Concatenates strings; NULL arguments are skipped.",
		Signatures:  []string{"CONCAT(STRING, ...) -> STRING"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) == 0 {
				return types.Type{}, typeErrorf("function CONCAT needs at least one argument")
			}
			for _, a := range args {
				if !isStringish(a) {
					return types.Type{}, typeErrorf("function CONCAT does not accept %s", describeArgs(args))
				}
			}
			return types.StringType, nil
		},
		New: func([]types.Type) Impl {
			var buf []byte
			return func(a []types.Datum) (types.Datum, error) {
				buf = buf[:0]
				for _, d := range a {
					if !d.Null {
						buf = append(buf, d.B...)
					}
				}
				return types.Datum{B: buf}, nil
			}
		},
	},
	&Function{
		Name:        "ABS",
		Description: "Returns the absolute value of a number.",
		Signatures:  []string{"ABS(INTEGER) -> INTEGER", "ABS(BIGINT) -> BIGINT", "ABS(DOUBLE) -> DOUBLE"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 1 || !(args[0].IsIntegral() || args[0].Kind == types.Double) {
				return types.Type{}, typeErrorf("function ABS does not accept %s", describeArgs(args))
			}
			return args[0], nil
		},
		New: func(args []types.Type) Impl {
			dbl := args[0].Kind == types.Double
			return func(a []types.Datum) (types.Datum, error) {
				d := a[0]
				if dbl && d.F < 0 {
					d.F = -d.F
				} else if !dbl && d.I < 0 {
					d.I = -d.I
				}
				return d, nil
			}
		},
	},
	&Function{
		Name:        "COALESCE",
		Description: "Returns the first argument that is not NULL.",
		Signatures:  []string{"COALESCE(T, T, ...) -> T"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) == 0 {
				return types.Type{}, typeErrorf("function COALESCE needs at least one argument")
			}
			t := types.UnknownType
			for _, a := range args {
				if a.Kind == types.Unknown {
					continue
				}
				if t.Kind != types.Unknown && !t.Equal(a) {
					return types.Type{}, typeErrorf("function COALESCE does not accept %s: arguments must share one type", describeArgs(args))
				}
				t = a
			}
			return t, nil
		},
		New: func([]types.Type) Impl {
			return func(a []types.Datum) (types.Datum, error) {
				for _, d := range a {
					if !d.Null {
						return d, nil
					}
				}
				return types.NullDatum, nil
			}
		},
	},
)

func buildRegistry(fns ...*Function) map[string]*Function {
	m := make(map[string]*Function, len(fns))
	for _, f := range fns {
		m[f.Name] = f
	}
	return m
}

func stringToString(name, desc string, fn func([]byte) []byte) *Function {
	return &Function{
		Name:        name,
		Description: desc,
		Signatures:  []string{name + "(STRING) -> STRING"},
		Check:       exactly(name, types.StringType, types.StringType),
		New: func([]types.Type) Impl {
			var buf []byte
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return types.NullDatum, nil
				}
				// bytes.ToUpper and friends allocate; copy into scratch
				// first and transform ASCII in place where possible.
				buf = append(buf[:0], a[0].B...)
				if isASCII(buf) && name != "TRIM" {
					asciiMap(buf, name == "UCASE")
					return types.Datum{B: buf}, nil
				}
				return types.Datum{B: fn(buf)}, nil
			}
		},
	}
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func asciiMap(b []byte, upper bool) {
	for i, c := range b {
		if upper && c >= 'a' && c <= 'z' {
			b[i] = c - 32
		} else if !upper && c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
}

// exactly checks for one fixed argument list.
func exactly(name string, result types.Type, params ...types.Type) func([]types.Type) (types.Type, error) {
	return func(args []types.Type) (types.Type, error) {
		if len(args) != len(params) {
			return types.Type{}, typeErrorf("function %s takes %d argument(s), got %d", name, len(params), len(args))
		}
		for i, p := range params {
			if args[i].Kind != types.Unknown && !args[i].Equal(p) {
				return types.Type{}, typeErrorf("function %s does not accept %s", name, describeArgs(args))
			}
		}
		return result, nil
	}
}

func describeArgs(args []types.Type) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.String()
	}
	return fmt.Sprintf("(%s)", strings.Join(parts, ", "))
}
