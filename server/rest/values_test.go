package rest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/types"
)

func TestTypeNameAndValues(t *testing.T) {
	st := types.Type{Kind: types.Struct, Fields: []types.Field{{Name: "A", Type: types.IntType}, {Name: "b c", Type: types.TimestampType}}}
	arr := types.Type{Kind: types.Array, Elem: &types.DateType}
	m := types.Type{Kind: types.Map, KeyType: &types.StringType, Elem: &st}
	dec := types.Type{Kind: types.Decimal, Precision: 4, Scale: 2}
	if got := typeName(m); got != "MAP<STRING, STRUCT<`A` INTEGER, `b c` TIMESTAMP>>" {
		t.Errorf("typeName = %s", got)
	}
	row := types.Row{
		{L: []types.Datum{types.StringDatum("k"), {L: []types.Datum{types.IntDatum(1), {I: 0}}}}},
		{L: []types.Datum{{I: 19782}, types.NullDatum}},
		{I: 1234},
		types.NullDatum,
	}
	cols := []types.Column{{Name: "M", Type: m}, {Name: "D", Type: arr}, {Name: "X", Type: dec}, {Name: "N", Type: types.StringType}}
	got := string(appendRow(nil, row, cols))
	want := `[{"k":{"A":1,"b c":"1970-01-01T00:00:00.000"}},["2024-02-29",null],12.34,null]`
	if got != want {
		t.Errorf("appendRow = %s, want %s", got, want)
	}
	if got := schemaString(cols[2:]); got != "`X` DECIMAL(4, 2), `N` STRING" {
		t.Errorf("schemaString = %s", got)
	}
}

// TestJSONDatum: /inserts-stream's JSON values become values of the
// columns' types (shown as the JSON the server writes them back as), with
// the coercions INSERT … VALUES applies to literals.
func TestJSONDatum(t *testing.T) {
	st := types.Type{Kind: types.Struct, Fields: []types.Field{{Name: "A", Type: types.IntType}, {Name: "B", Type: types.StringType}}}
	arr := types.Type{Kind: types.Array, Elem: &types.IntType}
	m := types.Type{Kind: types.Map, KeyType: &types.StringType, Elem: &types.DoubleType}
	dec62 := types.Type{Kind: types.Decimal, Precision: 6, Scale: 2}
	wide := types.Type{Kind: types.Decimal, Precision: 30, Scale: 10}
	for _, c := range []struct {
		json string
		t    types.Type
		want string
	}{
		{`null`, types.IntType, "null"},
		{`42`, types.BigintType, "42"},
		{`"42"`, types.IntType, "42"},
		{`-1.5e3`, types.DoubleType, "-1500.0"},
		{`12.5`, dec62, "12.50"},
		{`"12.5"`, dec62, "12.50"},
		{`12345678901234567890.0123456789`, wide, "12345678901234567890.0123456789"},
		{`"it's \\ x"`, types.StringType, `"it's \\ x"`},
		{`7`, types.StringType, `"7"`},
		{`true`, types.StringType, `"true"`},
		{`true`, types.BooleanType, "true"},
		{`"FALSE"`, types.BooleanType, "false"},
		{`1709212455123`, types.TimestampType, "1709212455123"},
		{`"2024-02-29T13:14:15.123"`, types.TimestampType, "1709212455123"},
		{`19782`, types.DateType, "19782"},
		{`"2024-02-29"`, types.DateType, "19782"},
		{`"AQI="`, types.BytesType, `"AQI="`},
		{`[1, null]`, arr, "[1,null]"},
		{`{"b": 2, "a": 1}`, m, `{"a":1.0,"b":2.0}`},
		{`{"b": "x"}`, st, `{"A":null,"B":"x"}`},
	} {
		var v any
		dec := json.NewDecoder(strings.NewReader(c.json))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		d, err := jsonDatum(v, c.t)
		if got := string(types.AppendJSONValue(nil, d, c.t)); err != nil || got != c.want {
			t.Errorf("jsonDatum(%s, %s) = %s, %v; want %s", c.json, c.t, got, err, c.want)
		}
	}
	for _, c := range []struct {
		json string
		t    types.Type
	}{
		{`"x"`, types.IntType}, {`1.5`, types.TimestampType}, {`[1]`, types.StringType},
		{`{"C": 1}`, st}, {`"%%%"`, types.BytesType}, {`1`, types.BooleanType},
		{`3000000000`, types.IntType}, {`12345.5`, dec62}, {`"2024-13-45"`, types.DateType},
	} {
		var v any
		dec := json.NewDecoder(strings.NewReader(c.json))
		dec.UseNumber()
		dec.Decode(&v)
		if d, err := jsonDatum(v, c.t); err == nil {
			t.Errorf("jsonDatum(%s, %s) = %s, want an error", c.json, c.t, types.AppendJSONValue(nil, d, c.t))
		}
	}
}

func TestParseSignature(t *testing.T) {
	args, ret := parseSignature("CONCAT_WS(STRING separator, STRING, ...) -> STRING")
	if ret != "STRING" || len(args) != 2 || args[0].Name != "separator" || args[0].Type != "STRING" ||
		args[1].Name != "" || !args[1].IsVariadic {
		t.Errorf("CONCAT_WS: %+v -> %s", args, ret)
	}
	args, ret = parseSignature("MAP_KEYS(MAP<STRING, INTEGER> m) -> ARRAY<STRING>")
	if ret != "ARRAY<STRING>" || len(args) != 1 || args[0].Type != "MAP<STRING, INTEGER>" || args[0].Name != "m" {
		t.Errorf("MAP_KEYS: %+v -> %s", args, ret)
	}
	if args, ret := parseSignature("NOW() -> TIMESTAMP"); len(args) != 0 || ret != "TIMESTAMP" {
		t.Errorf("NOW: %+v -> %s", args, ret)
	}
}

func TestSubstitute(t *testing.T) {
	got := substitute("SELECT ${col} FROM ${Src} WHERE X = ${n} AND ${missing}", map[string]any{"COL": "a", "src": "S", "n": json.Number("3")})
	if got != "SELECT a FROM S WHERE X = 3 AND ${missing}" {
		t.Errorf("substitute = %s", got)
	}
}
