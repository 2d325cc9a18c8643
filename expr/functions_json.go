package expr

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/valyala/fastjson"

	"github.com/sqlstreams/sqlstreams/types"
)

// JSON functions over STRING values holding JSON text. Text that is not
// JSON gives NULL (FALSE for the predicates). Values come back as compact
// JSON text, except that EXTRACTJSONFIELD returns a JSON string's content
// unquoted, as ksqlDB does. EXTRACTJSONFIELD of a JSON null is SQL NULL
// (ksqlDB returns the text 'null'; a NULL is what CAST and IS NULL
// expect).

var jsonFunctions = []*Function{
	{
		Name:        "EXTRACTJSONFIELD",
		Description: "Returns the value at a JSONPath ($.a.b[0], $['a']) in a JSON string, as a STRING; NULL when the path does not exist.",
		Signatures:  []string{"EXTRACTJSONFIELD(STRING json, STRING path) -> STRING"},
		Check:       exactly("EXTRACTJSONFIELD", types.StringType, types.StringType, types.StringType),
		validate: validateConst(1, func(b []byte) error {
			if _, err := parseJSONPath(string(b)); err != nil {
				return typeErrorf("function EXTRACTJSONFIELD: %v", err)
			}
			return nil
		}),
		New: func([]types.Type) Impl {
			paths := &cache[[]string]{compile: func(s string) ([]string, error) {
				p, err := parseJSONPath(s)
				if err != nil {
					return nil, funcErrorf("EXTRACTJSONFIELD", "%v", err)
				}
				return p, nil
			}}
			var p fastjson.Parser
			var buf []byte
			return strict(func(a []types.Datum) (types.Datum, error) {
				path, err := paths.get(a[1].B)
				if err != nil {
					return types.NullDatum, err
				}
				v, err := p.ParseBytes(a[0].B)
				if err != nil {
					return null()
				}
				for _, tok := range path {
					switch v.Type() {
					case fastjson.TypeArray:
						i, err := strconv.Atoi(tok)
						if err != nil {
							return null()
						}
						arr, _ := v.Array()
						if i < 0 || i >= len(arr) {
							return null()
						}
						v = arr[i]
					case fastjson.TypeObject:
						o, _ := v.Object()
						if v = o.Get(tok); v == nil {
							return null()
						}
					default:
						return null()
					}
				}
				switch v.Type() {
				case fastjson.TypeNull:
					return null()
				case fastjson.TypeString:
					s, _ := v.StringBytes()
					return types.Datum{B: s}, nil
				}
				buf = v.MarshalTo(buf[:0])
				return types.Datum{B: buf}, nil
			})
		},
	},
	{
		Name:        "IS_JSON_STRING",
		Description: "Returns whether a string holds a valid JSON value; FALSE for NULL.",
		Signatures:  []string{"IS_JSON_STRING(STRING) -> BOOLEAN"},
		Check:       exactly("IS_JSON_STRING", types.BooleanType, types.StringType),
		New: func([]types.Type) Impl {
			return func(a []types.Datum) (types.Datum, error) {
				return types.BoolDatum(!a[0].Null && len(javaTrim(a[0].B)) > 0 && fastjson.ValidateBytes(a[0].B) == nil), nil
			}
		},
	},
	{
		Name:        "JSON_ARRAY_LENGTH",
		Description: "Returns the length of the top-level array of a JSON string; NULL when it is not an array.",
		Signatures:  []string{"JSON_ARRAY_LENGTH(STRING) -> INTEGER"},
		Check:       exactly("JSON_ARRAY_LENGTH", types.IntType, types.StringType),
		New: func([]types.Type) Impl {
			var p fastjson.Parser
			return strict(func(a []types.Datum) (types.Datum, error) {
				v, err := p.ParseBytes(a[0].B)
				if err != nil || v.Type() != fastjson.TypeArray {
					return null()
				}
				arr, _ := v.Array()
				return types.IntDatum(int64(len(arr))), nil
			})
		},
	},
	{
		Name:        "JSON_ARRAY_CONTAINS",
		Description: "Returns whether the top-level array of a JSON string contains a value; FALSE when it is not an array.",
		Signatures:  []string{"JSON_ARRAY_CONTAINS(STRING json, T) -> BOOLEAN, for T BOOLEAN, INTEGER, BIGINT, DOUBLE or STRING"},
		Check: overloads("JSON_ARRAY_CONTAINS", ov{in: ps(pString, kinds(types.Boolean, types.Int, types.Bigint, types.Double, types.String)),
			out: ret(types.BooleanType)}),
		New: func(ts []types.Type) Impl {
			var p fastjson.Parser
			t := ts[1]
			return func(a []types.Datum) (types.Datum, error) {
				if a[0].Null {
					return types.BoolDatum(false), nil
				}
				v, err := p.ParseBytes(a[0].B)
				if err != nil || v.Type() != fastjson.TypeArray {
					return types.BoolDatum(false), nil
				}
				arr, _ := v.Array()
				for _, e := range arr {
					if jsonEquals(e, a[1], t) {
						return types.BoolDatum(true), nil
					}
				}
				return types.BoolDatum(false), nil
			}
		},
	},
	{
		Name:        "JSON_CONCAT",
		Description: "Concatenates JSON strings: objects merge their keys (later values win), otherwise values concatenate as arrays; NULL when any is NULL or not JSON.",
		Signatures:  []string{"JSON_CONCAT(STRING, STRING, ...) -> STRING"},
		Check:       overloads("JSON_CONCAT", ov{in: ps(pString), rest: pString, out: ret(types.StringType)}),
		New: func(ts []types.Type) Impl {
			parsers := make([]fastjson.Parser, len(ts))
			vals := make([]*fastjson.Value, len(ts))
			var buf []byte
			var keys []string
			return strict(func(a []types.Datum) (types.Datum, error) {
				allObjects := true
				for i, d := range a {
					v, err := parsers[i].ParseBytes(d.B)
					if err != nil {
						return null()
					}
					vals[i] = v
					allObjects = allObjects && v.Type() == fastjson.TypeObject
				}
				buf = buf[:0]
				if allObjects {
					keys = keys[:0]
					for _, v := range vals {
						o, _ := v.Object()
						o.Visit(func(k []byte, _ *fastjson.Value) {
							for _, have := range keys {
								if have == string(k) {
									return
								}
							}
							keys = append(keys, string(k))
						})
					}
					buf = append(buf, '{')
					for i, k := range keys {
						if i > 0 {
							buf = append(buf, ',')
						}
						var last *fastjson.Value
						for _, v := range vals {
							if x := v.Get(k); x != nil {
								last = x
							}
						}
						buf = types.AppendJSONString(buf, []byte(k))
						buf = append(buf, ':')
						buf = last.MarshalTo(buf)
					}
					return types.Datum{B: append(buf, '}')}, nil
				}
				buf = append(buf, '[')
				first := true
				for _, v := range vals {
					items := []*fastjson.Value{v}
					if v.Type() == fastjson.TypeArray {
						items, _ = v.Array()
					}
					for _, it := range items {
						if !first {
							buf = append(buf, ',')
						}
						first = false
						buf = it.MarshalTo(buf)
					}
				}
				return types.Datum{B: append(buf, ']')}, nil
			})
		},
	},
	{
		Name:        "JSON_KEYS",
		Description: "Returns the top-level keys of a JSON object string; NULL when it is not an object.",
		Signatures:  []string{"JSON_KEYS(STRING) -> ARRAY<STRING>"},
		Check:       exactly("JSON_KEYS", arrayOf(types.StringType), types.StringType),
		New: func([]types.Type) Impl {
			var p fastjson.Parser
			var a arena
			var out []types.Datum
			return strict(func(args []types.Datum) (types.Datum, error) {
				v, err := p.ParseBytes(args[0].B)
				if err != nil || v.Type() != fastjson.TypeObject {
					return null()
				}
				a.reset()
				out = out[:0]
				o, _ := v.Object()
				o.Visit(func(k []byte, _ *fastjson.Value) {
					out = append(out, types.Datum{B: a.bytes(k)})
				})
				return types.Datum{L: out}, nil
			})
		},
	},
	{
		Name:        "JSON_RECORDS",
		Description: "Returns the top-level entries of a JSON object string as a map from key to the value's JSON text; NULL when it is not an object.",
		Signatures:  []string{"JSON_RECORDS(STRING) -> MAP<STRING, STRING>"},
		Check:       exactly("JSON_RECORDS", mapOf(types.StringType, types.StringType), types.StringType),
		New: func([]types.Type) Impl {
			var p fastjson.Parser
			var a arena
			var out []types.Datum
			return strict(func(args []types.Datum) (types.Datum, error) {
				v, err := p.ParseBytes(args[0].B)
				if err != nil || v.Type() != fastjson.TypeObject {
					return null()
				}
				a.reset()
				out = out[:0]
				o, _ := v.Object()
				o.Visit(func(k []byte, x *fastjson.Value) {
					key := types.Datum{B: a.bytes(k)}
					start := len(a.b)
					a.b = x.MarshalTo(a.b)
					val := types.Datum{B: a.since(start)}
					if j := mapFind(out, key, types.StringType); j >= 0 {
						out[j+1] = val
						return
					}
					out = append(out, key, val)
				})
				return types.Datum{L: out}, nil
			})
		},
	},
	{
		Name:        "JSON_ITEMS",
		Description: "Returns the elements of a JSON array string as JSON texts; NULL when it is not an array.",
		Signatures:  []string{"JSON_ITEMS(STRING) -> ARRAY<STRING>"},
		Check:       exactly("JSON_ITEMS", arrayOf(types.StringType), types.StringType),
		New: func([]types.Type) Impl {
			var p fastjson.Parser
			var a arena
			var out []types.Datum
			return strict(func(args []types.Datum) (types.Datum, error) {
				v, err := p.ParseBytes(args[0].B)
				if err != nil || v.Type() != fastjson.TypeArray {
					return null()
				}
				a.reset()
				out = out[:0]
				arr, _ := v.Array()
				for _, x := range arr {
					start := len(a.b)
					a.b = x.MarshalTo(a.b)
					out = append(out, types.Datum{B: a.since(start)})
				}
				return types.Datum{L: out}, nil
			})
		},
	},
	{
		Name:        "TO_JSON_STRING",
		Description: "Returns any value as JSON text: DATE, TIME and TIMESTAMP as ISO strings, BYTES as base64, STRUCT as an object.",
		Signatures:  []string{"TO_JSON_STRING(T) -> STRING"},
		Check: func(args []types.Type) (types.Type, error) {
			if len(args) != 1 {
				return types.Type{}, notAccept("TO_JSON_STRING", args)
			}
			return types.StringType, nil
		},
		New: func(ts []types.Type) Impl {
			t := ts[0]
			var buf []byte
			return func(a []types.Datum) (types.Datum, error) {
				buf = appendJSON(buf[:0], a[0], t)
				return types.Datum{B: buf}, nil
			}
		},
	},
}

// jsonEquals compares a JSON value with a SQL value of type t.
func jsonEquals(v *fastjson.Value, d types.Datum, t types.Type) bool {
	if d.Null {
		return v.Type() == fastjson.TypeNull
	}
	switch t.Kind {
	case types.Boolean:
		return v.Type() == fastjson.TypeTrue && d.I != 0 || v.Type() == fastjson.TypeFalse && d.I == 0
	case types.Int, types.Bigint:
		if v.Type() != fastjson.TypeNumber {
			return false
		}
		n, err := v.Int64()
		return err == nil && n == d.I
	case types.Double:
		if v.Type() != fastjson.TypeNumber {
			return false
		}
		f, err := v.Float64()
		return err == nil && f == d.F
	case types.String:
		s, err := v.StringBytes()
		return err == nil && string(s) == string(d.B)
	}
	return false
}

// parseJSONPath splits a JSONPath of the form $.a.b[0]['c']["d"] into its
// keys and indexes. Wildcards and filters are not supported: the result
// is one value.
func parseJSONPath(p string) ([]string, error) {
	if !strings.HasPrefix(p, "$") {
		return nil, fmt.Errorf("JSON path %q must start with $", p)
	}
	var toks []string
	s := p[1:]
	for len(s) > 0 {
		switch s[0] {
		case '.':
			s = s[1:]
			j := 0
			for j < len(s) && s[j] != '.' && s[j] != '[' {
				j++
			}
			if j == 0 || s[:j] == "*" {
				return nil, fmt.Errorf("JSON path %q: expected a field name after '.'", p)
			}
			toks = append(toks, s[:j])
			s = s[j:]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, fmt.Errorf("JSON path %q: missing ]", p)
			}
			in := strings.TrimSpace(s[1:end])
			if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
				// a quoted name may contain ]: find the closing quote first
				q := in[0]
				close := strings.IndexByte(s[2:], q)
				if close < 0 {
					return nil, fmt.Errorf("JSON path %q: unterminated quote", p)
				}
				name := s[2 : 2+close]
				rest := s[2+close+1:]
				if !strings.HasPrefix(strings.TrimLeft(rest, " "), "]") {
					return nil, fmt.Errorf("JSON path %q: missing ]", p)
				}
				toks = append(toks, name)
				s = strings.TrimLeft(rest, " ")[1:]
				continue
			}
			if _, err := strconv.Atoi(in); err != nil {
				return nil, fmt.Errorf("JSON path %q: [%s] is not an index or a quoted name", p, in)
			}
			toks = append(toks, in)
			s = s[end+1:]
		default:
			return nil, fmt.Errorf("JSON path %q: unexpected %q", p, s[0])
		}
	}
	return toks, nil
}
