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

func TestSQLLiteral(t *testing.T) {
	st := types.Type{Kind: types.Struct, Fields: []types.Field{{Name: "A", Type: types.IntType}, {Name: "B", Type: types.StringType}}}
	arr := types.Type{Kind: types.Array, Elem: &types.IntType}
	m := types.Type{Kind: types.Map, KeyType: &types.StringType, Elem: &types.DoubleType}
	for _, c := range []struct {
		json string
		t    types.Type
		want string
	}{
		{`null`, types.IntType, "NULL"},
		{`42`, types.BigintType, "42"},
		{`"42"`, types.IntType, "42"},
		{`-1.5e3`, types.DoubleType, "-1.5e3"},
		{`"it's \\ x"`, types.StringType, `'it''s \ x'`},
		{`7`, types.StringType, "'7'"},
		{`true`, types.BooleanType, "TRUE"},
		{`"FALSE"`, types.BooleanType, "FALSE"},
		{`1709212455123`, types.TimestampType, "'2024-02-29T13:14:15.123'"},
		{`19782`, types.DateType, "'2024-02-29'"},
		{`"AQI="`, types.BytesType, "TO_BYTES('AQI=', 'base64')"},
		{`[1, null]`, arr, "ARRAY[1, CAST(NULL AS INTEGER)]"},
		{`{"b": 2, "a": 1}`, m, "MAP('a' := 1, 'b' := 2)"},
		{`{"b": "x"}`, st, `STRUCT("A" := CAST(NULL AS INTEGER), "B" := 'x')`},
	} {
		var v any
		dec := json.NewDecoder(strings.NewReader(c.json))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		got, err := sqlLiteral(v, c.t)
		if err != nil || got != c.want {
			t.Errorf("sqlLiteral(%s, %s) = %q, %v; want %q", c.json, c.t, got, err, c.want)
		}
	}
	for _, c := range []struct {
		json string
		t    types.Type
	}{
		{`"x"`, types.IntType}, {`1.5`, types.TimestampType}, {`[1]`, types.StringType},
		{`{"C": 1}`, st}, {`"%%%"`, types.BytesType}, {`1`, types.BooleanType},
	} {
		var v any
		dec := json.NewDecoder(strings.NewReader(c.json))
		dec.UseNumber()
		dec.Decode(&v)
		if got, err := sqlLiteral(v, c.t); err == nil {
			t.Errorf("sqlLiteral(%s, %s) = %q, want an error", c.json, c.t, got)
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
