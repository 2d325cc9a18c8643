package expr

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

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
	// naming the function and the types it was given. A lambda argument
	// is given as the type of its body.
	Check func(args []types.Type) (types.Type, error)
	// New returns the implementation for checked argument types. It is
	// called once per compiled call and may keep scratch state. The
	// functions that take lambdas (TRANSFORM, FILTER, REDUCE) are built by
	// Compile another way; their New only returns an error.
	New func(args []types.Type) Impl

	// coerceTo gives the types the arguments are converted to before the
	// call (a common type for COALESCE and friends); optional.
	coerceTo func(args []types.Type) []types.Type
	// validate checks constant arguments (patterns, units, encodings) at
	// statement time; optional.
	validate func(args []Expr) error
	// newLambda builds functions that take lambda arguments; lambdas[i]
	// is the compiled lambda at argument i (nil elsewhere).
	newLambda func(args []types.Type, lambdas []*compiledLambda) lambdaImpl
}

// Impl computes a function over evaluated arguments. args is reused by the
// caller; the result follows Evaluator's validity rule.
type Impl func(args []types.Datum) (types.Datum, error)

// lambdaImpl is Impl for functions with lambda arguments, which evaluate
// the lambda bodies over the same row; lambda positions in args are unset.
type lambdaImpl func(row types.Row, args []types.Datum) (types.Datum, error)

// NewCall type-checks a call of fn and builds it.
func NewCall(fn *Function, args []Expr) (Expr, error) {
	ts := make([]types.Type, len(args))
	for i, a := range args {
		ts[i] = a.Type()
		if _, ok := a.(*Lambda); ok && fn.newLambda == nil {
			return nil, typeErrorf("function %s does not accept a lambda", fn.Name)
		}
	}
	t, err := fn.Check(ts)
	if err != nil {
		return nil, err
	}
	if fn.coerceTo != nil {
		targets := fn.coerceTo(ts)
		args = append([]Expr(nil), args...)
		for i, t := range targets {
			if t.Kind == types.Unknown || i >= len(args) {
				continue
			}
			if l, ok := args[i].(*Lambda); ok {
				args[i] = &Lambda{Params: l.Params, ParamTypes: l.ParamTypes, Body: coerce(l.Body, t)}
				continue
			}
			args[i] = coerce(args[i], t)
		}
	}
	if fn.validate != nil {
		if err := fn.validate(args); err != nil {
			return nil, err
		}
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
	nullFunctions,
	stringFunctions,
	mathFunctions,
	timeFunctions,
	jsonFunctions,
	arrayFunctions,
	mapFunctions,
	urlFunctions,
	sqlFunctions,
	hashFunctions,
	lambdaFunctions,
)

func buildRegistry(lists ...[]*Function) map[string]*Function {
	m := make(map[string]*Function)
	for _, l := range lists {
		for _, f := range l {
			if _, dup := m[f.Name]; dup {
				panic("expr: function " + f.Name + " registered twice")
			}
			m[f.Name] = f
		}
	}
	return m
}

// Signature checking. A parameter kind (pk) says which argument types a
// parameter takes; an overload (ov) is a parameter list with optional
// trailing parameters or a variadic tail, and a result. overloads tries
// them in order.

type pk func(types.Type) bool

// kinds accepts the listed kinds and an untyped NULL.
func kinds(ks ...types.Kind) pk {
	return func(t types.Type) bool {
		if t.Kind == types.Unknown {
			return true
		}
		for _, k := range ks {
			if t.Kind == k {
				return true
			}
		}
		return false
	}
}

// strictKinds is kinds without the untyped NULL, for parameters whose
// type the result depends on (collections).
func strictKinds(ks ...types.Kind) pk {
	return func(t types.Type) bool {
		for _, k := range ks {
			if t.Kind == k {
				return true
			}
		}
		return false
	}
}

var (
	pString    = kinds(types.String)
	pBytes     = kinds(types.Bytes)
	pBool      = kinds(types.Boolean)
	pInt       = kinds(types.Int, types.Bigint) // INT parameters take a BIGINT too
	pBigint    = kinds(types.Int, types.Bigint)
	pDouble    = kinds(types.Int, types.Bigint, types.Double, types.Decimal)
	pNumeric   = kinds(types.Int, types.Bigint, types.Double, types.Decimal)
	pDate      = kinds(types.Date)
	pTime      = kinds(types.Time)
	pTimestamp = kinds(types.Timestamp)
	pArray     = strictKinds(types.Array)
	pMap       = strictKinds(types.Map)
	pAny       = func(types.Type) bool { return true }
)

type ov struct {
	in   []pk
	opt  int // how many trailing parameters of in may be left out
	rest pk  // variadic tail; nil for none
	out  func(args []types.Type) types.Type
}

func ps(p ...pk) []pk { return p }

func ret(t types.Type) func([]types.Type) types.Type {
	return func([]types.Type) types.Type { return t }
}

// argOr is the type of argument i, or def when it is an untyped NULL.
func argOr(i int, def types.Type) func([]types.Type) types.Type {
	return func(a []types.Type) types.Type {
		if a[i].Kind == types.Unknown {
			return def
		}
		return a[i]
	}
}

func (o ov) matches(args []types.Type) bool {
	if len(args) < len(o.in)-o.opt || len(args) > len(o.in) && o.rest == nil {
		return false
	}
	for i, a := range args {
		p := o.rest
		if i < len(o.in) {
			p = o.in[i]
		}
		if !p(a) {
			return false
		}
	}
	return true
}

func overloads(name string, ovs ...ov) func([]types.Type) (types.Type, error) {
	return func(args []types.Type) (types.Type, error) {
		for _, o := range ovs {
			if o.matches(args) {
				return o.out(args), nil
			}
		}
		return types.Type{}, notAccept(name, args)
	}
}

func notAccept(name string, args []types.Type) error {
	return typeErrorf("Function '%s' does not accept parameters %s.", name, describeArgs(args))
}

// exactly checks for one fixed argument list.
func exactly(name string, result types.Type, params ...types.Type) func([]types.Type) (types.Type, error) {
	return func(args []types.Type) (types.Type, error) {
		if len(args) != len(params) {
			return types.Type{}, notAccept(name, args)
		}
		for i, p := range params {
			if args[i].Kind != types.Unknown && !args[i].Equal(p) {
				return types.Type{}, notAccept(name, args)
			}
		}
		return result, nil
	}
}

func describeArgs(args []types.Type) string {
	parts := make([]string, len(args))
	for i, a := range args {
		if a.Kind == types.Unknown {
			parts[i] = "NULL"
		} else {
			parts[i] = a.String()
		}
	}
	return fmt.Sprintf("(%s)", strings.Join(parts, ", "))
}

// strict wraps an implementation so that any NULL argument gives NULL,
// the rule for most functions.
func strict(f Impl) Impl {
	return func(a []types.Datum) (types.Datum, error) {
		for _, d := range a {
			if d.Null {
				return types.NullDatum, nil
			}
		}
		return f(a)
	}
}

// constArg returns the value of args[i] when it is a literal that is not
// NULL.
func constArg(args []Expr, i int) ([]byte, bool) {
	if i >= len(args) {
		return nil, false
	}
	l, ok := args[i].(*Literal)
	if !ok || l.V.Null {
		return nil, false
	}
	return l.V.B, true
}

// validateConst runs check on argument i when it is a constant.
func validateConst(i int, check func(b []byte) error) func([]Expr) error {
	return func(args []Expr) error {
		if b, ok := constArg(args, i); ok {
			return check(b)
		}
		return nil
	}
}

// cache remembers the compiled form of the last string argument it saw
// (a pattern, a time zone, an encoding): a constant argument compiles
// once; a varying one recompiles when it changes.
type cache[T any] struct {
	key     []byte
	val     T
	err     error
	valid   bool
	compile func(string) (T, error)
}

func (c *cache[T]) get(b []byte) (T, error) {
	if c.valid && bytes.Equal(c.key, b) {
		return c.val, c.err
	}
	c.key = append(c.key[:0], b...)
	c.val, c.err = c.compile(string(b))
	c.valid = true
	return c.val, c.err
}

// null is a NULL result.
func null() (types.Datum, error) { return types.NullDatum, nil }

// funcErrorf is a run-time error of function name: a bad record.
func funcErrorf(name, format string, args ...any) error {
	return fmt.Errorf("function %s: %s", name, fmt.Sprintf(format, args...))
}

// allTo coerces every argument to the common type of all of them.
func allTo(args []types.Type) []types.Type {
	t, _ := commonTypeOf(args)
	out := make([]types.Type, len(args))
	for i := range out {
		out[i] = t
	}
	return out
}

// commonCheck accepts arguments with a common type of the kinds ok
// allows, and returns that type; at least min arguments.
func commonCheck(name string, min int, ok func(types.Type) bool) func([]types.Type) (types.Type, error) {
	return func(args []types.Type) (types.Type, error) {
		if len(args) < min {
			return types.Type{}, notAccept(name, args)
		}
		t, good := commonTypeOf(args)
		if !good || t.Kind != types.Unknown && ok != nil && !ok(t) {
			return types.Type{}, notAccept(name, args)
		}
		return t, nil
	}
}
