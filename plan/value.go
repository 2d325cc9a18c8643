package plan

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// The value encoding. A node's op, and everything it holds, is encoded
// by reflection: a struct as a JSON object of its non-zero exported
// fields by Go field name, a slice as an array (nil left out, empty
// kept as []), a pointer as its element (nil left out), []byte in
// base64, scalars as JSON scalars. The exceptions, where a value is not
// plain data or its Go form would not survive a renumbering:
//
//	physical.Op          {"kind": <type name>, "op": <the struct>}
//	expr.Expr            {"kind": <type name>, ...the struct's fields}
//	*physical.Store      the store's index in the plan's store table
//	*expr.Function       its name (the registry's)
//	*expr.AggregateFunction {"name", "variant", "retracting"}
//	*expr.TableFunction  its name
//	types.Kind, expr.Op, types.Partitioner, catalog.Kind  their names
//	types.Type           a scalar type by its kind's name ("STRING")
//	types.SchemaSource   true when set: the decoder gives the server's
//	                     registry back in its place
//	float64              a number, or "NaN", "+Inf", "-Inf"
//
// A field renamed or retyped breaks the plans recorded before it: the
// historical plans test (testdata/historical_plans) fails on such a
// change, which must then keep the old name readable.

var (
	exprType = reflect.TypeFor[expr.Expr]()
	opType   = reflect.TypeFor[physical.Op]()
	storePtr = reflect.TypeFor[*physical.Store]()
	fnPtr    = reflect.TypeFor[*expr.Function]()
	aggPtr   = reflect.TypeFor[*expr.AggregateFunction]()
	tablePtr = reflect.TypeFor[*expr.TableFunction]()
	kindType = reflect.TypeFor[types.Kind]()
	typeType = reflect.TypeFor[types.Type]()
	// partitionerType and sourceKindType are encoded by name.
	partitionerType = reflect.TypeFor[types.Partitioner]()
	sourceKindType  = reflect.TypeFor[catalog.Kind]()
	exprOpType      = reflect.TypeFor[expr.Op]()
	schemasType     = reflect.TypeFor[types.SchemaSource]()
	bytesType       = reflect.TypeFor[[]byte]()
	float64Type     = reflect.TypeFor[float64]()
	opKinds         = kindTable[physical.Op](opList)
	exprKinds       = kindTable[expr.Expr](exprList)
	typeKinds       = nameTable(int(types.Struct)+1, func(i int) string { return types.Kind(i).String() })
	exprOpNames     = map[expr.Op]string{expr.OpAdd: "ADD", expr.OpSub: "SUB", expr.OpMul: "MUL", expr.OpDiv: "DIV", expr.OpMod: "MOD", expr.OpConcat: "CONCAT", expr.OpEQ: "EQ", expr.OpNE: "NE", expr.OpLT: "LT", expr.OpLE: "LE", expr.OpGT: "GT", expr.OpGE: "GE", expr.OpAnd: "AND", expr.OpOr: "OR", expr.OpNot: "NOT", expr.OpNeg: "NEG"}
	exprOpByName    = func() map[string]expr.Op {
		m := map[string]expr.Op{}
		for op, n := range exprOpNames {
			m[n] = op
		}
		return m
	}()
)

// opList is every node kind a plan may hold: a new kind in physical is
// added here too (encoding a topology with a kind missing here fails).
var opList = []physical.Op{
	&physical.Source{}, &physical.Filter{}, &physical.Project{}, &physical.Rekey{}, &physical.FlatMap{},
	&physical.TableChanges{}, &physical.Aggregate{}, &physical.Materialize{}, &physical.StreamTableJoin{},
	&physical.TableTableJoin{}, &physical.StreamStreamJoin{}, &physical.Repartition{}, &physical.Sink{},
	&physical.ForeignKeyJoin{}, &physical.ForeignKeySubscriptions{}, &physical.TableRepartition{},
	&physical.Merge{}, &physical.TopN{},
}

// exprList is every expression node kind.
var exprList = []expr.Expr{
	&expr.Column{}, &expr.Literal{}, &expr.Binary{}, &expr.Unary{}, &expr.IsNull{}, &expr.Call{},
	&expr.Cast{}, &expr.In{}, &expr.Between{}, &expr.Like{}, &expr.Distinct{}, &expr.IsTrue{},
	&expr.Case{}, &expr.Subscript{}, &expr.Field{}, &expr.Array{}, &expr.Map{}, &expr.Struct{},
	&expr.Lambda{}, &expr.LambdaVar{},
}

// kindTable maps the struct type names of a list of pointers to their
// types, both ways.
type kinds struct {
	byName map[string]reflect.Type
	byType map[reflect.Type]string
}

func kindTable[T any](list []T) kinds {
	k := kinds{byName: map[string]reflect.Type{}, byType: map[reflect.Type]string{}}
	for _, v := range list {
		t := reflect.TypeOf(v)
		k.byName[t.Elem().Name()] = t
		k.byType[t] = t.Elem().Name()
	}
	return k
}

func nameTable(n int, name func(int) string) map[string]int {
	m := map[string]int{}
	for i := range n {
		m[name(i)] = i
	}
	return m
}

// encoder encodes one topology's values; stores collects the distinct
// stores in the order first met.
type encoder struct {
	stores  []*physical.Store
	storeIx map[*physical.Store]int
}

func (e *encoder) store(s *physical.Store) int {
	if i, ok := e.storeIx[s]; ok {
		return i
	}
	if e.storeIx == nil {
		e.storeIx = map[*physical.Store]int{}
	}
	e.storeIx[s] = len(e.stores)
	e.stores = append(e.stores, s)
	return len(e.stores) - 1
}

// value encodes v into a tree of JSON values.
func (e *encoder) value(v reflect.Value) (any, error) {
	t := v.Type()
	switch t {
	case storePtr:
		return e.store(v.Interface().(*physical.Store)), nil
	case fnPtr:
		return v.Interface().(*expr.Function).Name, nil
	case tablePtr:
		return v.Interface().(*expr.TableFunction).Name, nil
	case aggPtr:
		f := v.Interface().(*expr.AggregateFunction)
		m := map[string]any{"name": f.Name}
		if f.Variant != "" {
			m["variant"] = f.Variant
		}
		if f.Retracting {
			m["retracting"] = true
		}
		return m, nil
	case kindType:
		return types.Kind(v.Uint()).String(), nil
	case partitionerType:
		return types.Partitioner(v.Uint()).String(), nil
	case sourceKindType:
		return catalog.Kind(v.Uint()).String(), nil
	case typeType:
		if t := v.Interface().(types.Type); (t.Kind != types.Decimal || t.Precision == 0) && t.Elem == nil && t.KeyType == nil && t.Fields == nil {
			return t.Kind.String(), nil // a scalar type by its kind's name
		}
	case exprOpType:
		n, ok := exprOpNames[expr.Op(v.Uint())]
		if !ok {
			return nil, fmt.Errorf("unknown operator %d", v.Uint())
		}
		return n, nil
	case bytesType:
		return base64.StdEncoding.EncodeToString(v.Bytes()), nil
	case float64Type:
		f := v.Float()
		switch {
		case math.IsNaN(f):
			return "NaN", nil
		case math.IsInf(f, 1):
			return "+Inf", nil
		case math.IsInf(f, -1):
			return "-Inf", nil
		}
		return f, nil
	case exprType:
		return e.tagged(v, exprKinds, false)
	case opType:
		return e.tagged(v, opKinds, true)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return e.value(v.Elem())
	case reflect.Struct:
		m := map[string]any{}
		for i := range t.NumField() {
			f := t.Field(i)
			fv := v.Field(i)
			if fv.IsZero() {
				continue
			}
			if f.Type == schemasType {
				m[f.Name] = true // the server's registry, given back at decoding
				continue
			}
			if !f.IsExported() {
				return nil, fmt.Errorf("%s.%s is unexported: a plan cannot hold it", t, f.Name)
			}
			x, err := e.value(fv)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
			}
			m[f.Name] = x
		}
		return m, nil
	case reflect.Slice:
		out := make([]any, v.Len())
		for i := range out {
			x, err := e.value(v.Index(i))
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case reflect.Bool:
		return v.Bool(), nil
	case reflect.String:
		return v.String(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint(), nil
	}
	return nil, fmt.Errorf("cannot encode a %s", t)
}

// tagged encodes an interface value with its kind: ops as {kind, op},
// expressions with the kind among the fields.
func (e *encoder) tagged(v reflect.Value, k kinds, nested bool) (any, error) {
	if v.IsNil() {
		return nil, nil
	}
	c := v.Elem()
	name, ok := k.byType[c.Type()]
	if !ok {
		return nil, fmt.Errorf("%s is not a kind a plan knows", c.Type())
	}
	x, err := e.value(c)
	if err != nil {
		return nil, err
	}
	if nested {
		return map[string]any{"kind": name, "op": x}, nil
	}
	m := x.(map[string]any)
	m["kind"] = name
	return m, nil
}

// decoder decodes one topology's values.
type decoder struct {
	stores  []*physical.Store
	schemas types.SchemaSource
}

func (d *decoder) value(x any, v reflect.Value) error {
	t := v.Type()
	switch t {
	case storePtr:
		i, err := intOf(x)
		if err != nil || i < 0 || int(i) >= len(d.stores) {
			return fmt.Errorf("store %v: not in the plan's stores", x)
		}
		v.Set(reflect.ValueOf(d.stores[i]))
		return nil
	case fnPtr:
		name, _ := x.(string)
		f, ok := expr.Lookup(name)
		if !ok {
			return fmt.Errorf("unknown function %q", name)
		}
		v.Set(reflect.ValueOf(f))
		return nil
	case tablePtr:
		name, _ := x.(string)
		f, ok := expr.LookupTable(name)
		if !ok {
			return fmt.Errorf("unknown table function %q", name)
		}
		v.Set(reflect.ValueOf(f))
		return nil
	case aggPtr:
		m, ok := x.(map[string]any)
		if !ok {
			return fmt.Errorf("aggregate function: want an object, got %T", x)
		}
		name, _ := m["name"].(string)
		variant, _ := m["variant"].(string)
		retracting, _ := m["retracting"].(bool)
		f, err := expr.ResolveAggregate(name, variant, retracting)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(f))
		return nil
	case kindType:
		name, _ := x.(string)
		k, ok := typeKinds[name]
		if !ok {
			return fmt.Errorf("unknown type kind %q", name)
		}
		v.SetUint(uint64(k))
		return nil
	case partitionerType:
		name, _ := x.(string)
		p, err := types.ParsePartitioner(name)
		if err != nil || p.String() != name {
			return fmt.Errorf("unknown partitioner %q", name)
		}
		v.SetUint(uint64(p))
		return nil
	case sourceKindType:
		switch x {
		case catalog.Stream.String():
			v.SetUint(uint64(catalog.Stream))
		case catalog.Table.String():
			v.SetUint(uint64(catalog.Table))
		default:
			return fmt.Errorf("unknown source kind %v", x)
		}
		return nil
	case typeType:
		if name, ok := x.(string); ok {
			k, ok := typeKinds[name]
			if !ok {
				return fmt.Errorf("unknown type %q", name)
			}
			v.Set(reflect.ValueOf(types.Type{Kind: types.Kind(k)}))
			return nil
		}
	case exprOpType:
		name, _ := x.(string)
		op, ok := exprOpByName[name]
		if !ok {
			return fmt.Errorf("unknown operator %q", name)
		}
		v.SetUint(uint64(op))
		return nil
	case bytesType:
		s, ok := x.(string)
		if !ok {
			return fmt.Errorf("bytes: want a string, got %T", x)
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return err
		}
		if b == nil {
			b = []byte{}
		}
		v.SetBytes(b)
		return nil
	case float64Type:
		switch x {
		case "NaN":
			v.SetFloat(math.NaN())
			return nil
		case "+Inf":
			v.SetFloat(math.Inf(1))
			return nil
		case "-Inf":
			v.SetFloat(math.Inf(-1))
			return nil
		}
		n, ok := x.(json.Number)
		if !ok {
			return fmt.Errorf("want a number, got %T", x)
		}
		f, err := n.Float64()
		if err != nil {
			return err
		}
		v.SetFloat(f)
		return nil
	case exprType:
		return d.tagged(x, v, exprKinds, false)
	case opType:
		return d.tagged(x, v, opKinds, true)
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if err := d.value(x, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
		return nil
	case reflect.Struct:
		m, ok := x.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want an object, got %T", t, x)
		}
		for name, fx := range m {
			f, ok := t.FieldByName(name)
			if !ok || !f.IsExported() || len(f.Index) != 1 {
				return fmt.Errorf("%s has no field %s: the plan is from a newer version", t, name)
			}
			if f.Type == schemasType {
				if fx == true && d.schemas != nil {
					v.FieldByIndex(f.Index).Set(reflect.ValueOf(&d.schemas).Elem())
				}
				continue
			}
			if err := d.value(fx, v.FieldByIndex(f.Index)); err != nil {
				return fmt.Errorf("%s.%s: %w", t.Name(), name, err)
			}
		}
		return nil
	case reflect.Slice:
		xs, ok := x.([]any)
		if !ok {
			return fmt.Errorf("%s: want an array, got %T", t, x)
		}
		s := reflect.MakeSlice(t, len(xs), len(xs))
		for i, ex := range xs {
			if err := d.value(ex, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Bool:
		b, ok := x.(bool)
		if !ok {
			return fmt.Errorf("want a boolean, got %T", x)
		}
		v.SetBool(b)
		return nil
	case reflect.String:
		s, ok := x.(string)
		if !ok {
			return fmt.Errorf("want a string, got %T", x)
		}
		v.SetString(s)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := intOf(x)
		if err != nil {
			return err
		}
		if v.OverflowInt(i) {
			return fmt.Errorf("%d overflows %s", i, t)
		}
		v.SetInt(i)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := x.(json.Number)
		if !ok {
			return fmt.Errorf("want a number, got %T", x)
		}
		u, err := strconv.ParseUint(string(n), 10, 64)
		if err != nil {
			return err
		}
		if v.OverflowUint(u) {
			return fmt.Errorf("%d overflows %s", u, t)
		}
		v.SetUint(u)
		return nil
	}
	return fmt.Errorf("cannot decode a %s", t)
}

func (d *decoder) tagged(x any, v reflect.Value, k kinds, nested bool) error {
	if x == nil {
		return nil
	}
	m, ok := x.(map[string]any)
	if !ok {
		return fmt.Errorf("want an object, got %T", x)
	}
	name, _ := m["kind"].(string)
	t, ok := k.byName[name]
	if !ok {
		return fmt.Errorf("unknown kind %q", name)
	}
	var body any
	if nested {
		body = m["op"]
		if body == nil {
			body = map[string]any{}
		}
	} else {
		fields := make(map[string]any, len(m))
		for f, fx := range m {
			if f != "kind" {
				fields[f] = fx
			}
		}
		body = fields
	}
	p := reflect.New(t.Elem())
	if err := d.value(body, p.Elem()); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	v.Set(p)
	return nil
}

func intOf(x any) (int64, error) {
	n, ok := x.(json.Number)
	if !ok {
		return 0, fmt.Errorf("want a number, got %T", x)
	}
	return n.Int64()
}
