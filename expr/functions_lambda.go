package expr

import (
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// Lambda functions: TRANSFORM, FILTER and REDUCE.
//
// A lambda argument is a *Lambda node whose parameters the body reads
// through LambdaVar nodes. Compiling the call compiles each lambda body
// once, with its own parameter slots; evaluating the call writes each
// element into the slots and evaluates the body, so an element costs no
// allocation. Results that hold bytes or elements are copied into the
// call's arena, because the body's evaluators reuse their buffers from
// one element to the next.
//
// The binder binds a lambda body after asking LambdaParamTypes for the
// parameter types, then builds NewLambda(params, types, body) and passes
// it to NewCall like any argument.

var lambdaFunctions = []*Function{
	{
		Name:        "TRANSFORM",
		Description: "Applies a lambda to every element of an array, or two lambdas to the keys and values of a map.",
		Signatures:  []string{"TRANSFORM(ARRAY<T>, T => U) -> ARRAY<U>", "TRANSFORM(MAP<K, V>, (K, V) => K2, (K, V) => V2) -> MAP<K2, V2>"},
		Check: func(args []types.Type) (types.Type, error) {
			switch {
			case len(args) >= 2 && args[len(args)-1].Kind == types.Unknown || len(args) == 3 && args[1].Kind == types.Unknown:
				return types.Type{}, typeErrorf("function TRANSFORM: a lambda returns an untyped NULL; CAST it")
			case len(args) == 2 && args[0].Kind == types.Array:
				return arrayOf(args[1]), nil
			case len(args) == 3 && args[0].Kind == types.Map:
				if isComposite(args[1].Kind) {
					return types.Type{}, typeErrorf("function TRANSFORM: map keys cannot be %s", args[1])
				}
				return mapOf(args[1], args[2]), nil
			}
			return types.Type{}, notAccept("TRANSFORM", args)
		},
		validate:  validateLambdas("TRANSFORM"),
		New:       lambdaOnly("TRANSFORM"),
		newLambda: newTransform,
	},
	{
		Name:        "FILTER",
		Description: "Keeps the elements of an array, or the entries of a map, for which a lambda is true.",
		Signatures:  []string{"FILTER(ARRAY<T>, T => BOOLEAN) -> ARRAY<T>", "FILTER(MAP<K, V>, (K, V) => BOOLEAN) -> MAP<K, V>"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 2 || args[0].Kind != types.Array && args[0].Kind != types.Map {
				return types.Type{}, notAccept("FILTER", args)
			}
			if !isBoolish(args[1]) {
				return types.Type{}, typeErrorf("function FILTER: the lambda must return BOOLEAN, not %s", args[1])
			}
			return args[0], nil
		},
		validate:  validateLambdas("FILTER"),
		New:       lambdaOnly("FILTER"),
		newLambda: newFilter,
	},
	{
		Name:        "REDUCE",
		Description: "Folds an array or map into a value: a lambda combines the state (starting at the initial value) with each element. NULL when the initial state is NULL.",
		Signatures:  []string{"REDUCE(ARRAY<T>, S, (S, T) => S) -> S", "REDUCE(MAP<K, V>, S, (S, K, V) => S) -> S"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 3 || args[0].Kind != types.Array && args[0].Kind != types.Map {
				return types.Type{}, notAccept("REDUCE", args)
			}
			if args[1].Kind == types.Unknown {
				return types.Type{}, typeErrorf("function REDUCE: the initial state cannot be an untyped NULL; CAST it")
			}
			if !reduceBodyFits(args[2], args[1]) {
				return types.Type{}, typeErrorf("function REDUCE: the lambda returns %s but the state is %s; CAST the initial state to %s", args[2], args[1], args[2])
			}
			return args[1], nil
		},
		// the body is converted to the state's type (a DECIMAL sum grows
		// its precision, an INT body feeds a BIGINT state)
		coerceTo: func(args []types.Type) []types.Type {
			return []types.Type{types.UnknownType, types.UnknownType, args[1]}
		},
		validate:  validateLambdas("REDUCE"),
		New:       lambdaOnly("REDUCE"),
		newLambda: newReduce,
	},
}

// lambdaOnly is the New of a function that takes lambdas: Compile builds
// such calls itself, so an Impl made this way only reports the misuse.
func lambdaOnly(name string) func([]types.Type) Impl {
	return func([]types.Type) Impl {
		return func([]types.Datum) (types.Datum, error) {
			return types.NullDatum, funcErrorf(name, "takes lambdas and runs only through Compile")
		}
	}
}

// reduceBodyFits reports whether a REDUCE lambda returning body can feed
// a state of type state: the same type, a type that widens to it, or a
// DECIMAL into a DECIMAL state (rounded, NULL on overflow).
func reduceBodyFits(body, state types.Type) bool {
	if body.Kind == types.Unknown || body.Equal(state) {
		return true
	}
	if body.Kind == types.Decimal && state.Kind == types.Decimal {
		return true
	}
	c, ok := commonType(body, state)
	return ok && c.Equal(state)
}

// LambdaParamTypes returns the parameter types of a lambda with nParams
// parameters at argument position lambdaPos (0-based) of a call of fn,
// given the types of the arguments before it:
//
//	TRANSFORM(ARRAY<T>, x => …)                 x: T
//	TRANSFORM(MAP<K, V>, (k, v) => …, (k, v) => …)   k: K, v: V (positions 1 and 2)
//	FILTER(ARRAY<T>, x => …)                    x: T
//	FILTER(MAP<K, V>, (k, v) => …)              k: K, v: V
//	REDUCE(ARRAY<T>, s0, (s, x) => …)           s: type of s0, x: T
//	REDUCE(MAP<K, V>, s0, (s, k, v) => …)       s: type of s0, k: K, v: V
func LambdaParamTypes(fn string, argTypes []types.Type, lambdaPos int, nParams int) ([]types.Type, error) {
	name := strings.ToUpper(fn)
	switch name {
	case "TRANSFORM", "FILTER", "REDUCE":
	default:
		return nil, typeErrorf("function %s does not accept a lambda", name)
	}
	if len(argTypes) < 1 || lambdaPos < 1 {
		return nil, typeErrorf("function %s: the first argument must be an ARRAY or a MAP, not a lambda", name)
	}
	coll := argTypes[0]
	var want []types.Type
	switch coll.Kind {
	case types.Array:
		want = []types.Type{*coll.Elem}
	case types.Map:
		want = []types.Type{*coll.KeyType, *coll.Elem}
	default:
		return nil, typeErrorf("function %s needs an ARRAY or a MAP as its first argument, got %s", name, coll)
	}
	okPos := lambdaPos == 1 || name == "TRANSFORM" && coll.Kind == types.Map && lambdaPos == 2
	if name == "REDUCE" {
		okPos = lambdaPos == 2
		if len(argTypes) < 2 {
			return nil, typeErrorf("function REDUCE needs an initial state before the lambda")
		}
		if argTypes[1].Kind == types.Unknown {
			return nil, typeErrorf("function REDUCE: the initial state cannot be an untyped NULL; CAST it")
		}
		want = append([]types.Type{argTypes[1]}, want...)
	}
	if !okPos {
		return nil, typeErrorf("function %s does not take a lambda at argument %d", name, lambdaPos+1)
	}
	if nParams != len(want) {
		return nil, typeErrorf("function %s over %s needs a lambda with %d parameter(s), got %d", name, coll, len(want), nParams)
	}
	return want, nil
}

// validateLambdas checks that lambdas sit where the function takes them,
// with the parameters LambdaParamTypes gives.
func validateLambdas(name string) func([]Expr) error {
	return func(args []Expr) error {
		ts := exprTypes(args)
		for i, a := range args {
			l, isLambda := a.(*Lambda)
			wantLambda := i >= 1 && !(name == "REDUCE" && i == 1)
			if isLambda != wantLambda {
				if wantLambda {
					return typeErrorf("function %s needs a lambda as argument %d", name, i+1)
				}
				return typeErrorf("function %s does not take a lambda as argument %d", name, i+1)
			}
			if !isLambda {
				continue
			}
			want, err := LambdaParamTypes(name, ts[:i], i, len(l.Params))
			if err != nil {
				return err
			}
			for j, t := range want {
				if j < len(l.ParamTypes) && !l.ParamTypes[j].Equal(t) {
					return typeErrorf("function %s: lambda parameter %s is %s but should be %s", name, l.Params[j], l.ParamTypes[j], t)
				}
			}
		}
		return nil
	}
}

func newTransform(ts []types.Type, lambdas []*compiledLambda) lambdaImpl {
	var a arena
	var out []types.Datum
	if ts[0].Kind == types.Array {
		l := lambdas[1]
		copyOut := !fixedWidth(l.T)
		return func(row types.Row, args []types.Datum) (types.Datum, error) {
			if args[0].Null {
				return null()
			}
			a.reset()
			out = out[:0]
			for _, e := range args[0].L {
				l.Slots[0] = e
				r, err := l.Body(row)
				if err != nil {
					return r, err
				}
				if copyOut {
					r = a.clone(r)
				}
				out = append(out, r)
			}
			return types.Datum{L: out}, nil
		}
	}
	kl, vl := lambdas[1], lambdas[2]
	kt := kl.T
	copyK, copyV := !fixedWidth(kl.T), !fixedWidth(vl.T)
	return func(row types.Row, args []types.Datum) (types.Datum, error) {
		if args[0].Null {
			return null()
		}
		a.reset()
		out = out[:0]
		m := args[0].L
		for i := 0; i+1 < len(m); i += 2 {
			kl.Slots[0], kl.Slots[1] = m[i], m[i+1]
			k, err := kl.Body(row)
			if err != nil {
				return k, err
			}
			if copyK {
				k = a.clone(k)
			}
			vl.Slots[0], vl.Slots[1] = m[i], m[i+1]
			v, err := vl.Body(row)
			if err != nil {
				return v, err
			}
			if copyV {
				v = a.clone(v)
			}
			if mapFind(out, k, kt) >= 0 {
				// Two entries with one new key: ksqlDB's collector
				// throws, and the call is NULL.
				return null()
			}
			out = append(out, k, v)
		}
		return types.Datum{L: out}, nil
	}
}

func newFilter(ts []types.Type, lambdas []*compiledLambda) lambdaImpl {
	l := lambdas[1]
	var out []types.Datum
	step := 1
	if ts[0].Kind == types.Map {
		step = 2
	}
	return func(row types.Row, args []types.Datum) (types.Datum, error) {
		if args[0].Null {
			return null()
		}
		out = out[:0]
		c := args[0].L
		for i := 0; i+step <= len(c); i += step {
			copy(l.Slots, c[i:i+step])
			r, err := l.Body(row)
			if err != nil {
				return r, err
			}
			if r.Bool() {
				out = append(out, c[i:i+step]...)
			}
		}
		return types.Datum{L: out}, nil
	}
}

func newReduce(ts []types.Type, lambdas []*compiledLambda) lambdaImpl {
	l := lambdas[2]
	var arenas [2]arena
	copyOut := !fixedWidth(ts[1])
	step := 1
	if ts[0].Kind == types.Map {
		step = 2
	}
	return func(row types.Row, args []types.Datum) (types.Datum, error) {
		acc := args[1]
		if acc.Null {
			return null()
		}
		if args[0].Null {
			return acc, nil
		}
		c := args[0].L
		for i, n := 0, 0; i+step <= len(c); i, n = i+step, n+1 {
			l.Slots[0] = acc
			copy(l.Slots[1:], c[i:i+step])
			r, err := l.Body(row)
			if err != nil {
				return r, err
			}
			if copyOut {
				a := &arenas[n%2]
				a.reset()
				r = a.clone(r)
			}
			acc = r
		}
		return acc, nil
	}
}
