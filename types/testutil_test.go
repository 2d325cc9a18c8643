package types

import (
	"math"
	"testing"
)

func ptr[T any](v T) *T { return &v }

func decType(p, s int) Type      { return Type{Kind: Decimal, Precision: p, Scale: s} }
func arrayOf(t Type) Type        { return Type{Kind: Array, Elem: &t} }
func mapOf(k, v Type) Type       { return Type{Kind: Map, KeyType: &k, Elem: &v} }
func structOf(f ...Field) Type   { return Type{Kind: Struct, Fields: f} }
func listDatum(d ...Datum) Datum { return Datum{L: d} }
func bytesDatum(b ...byte) Datum { return Datum{B: b} }

// address is STRUCT<ZIP INT, CITY STRING, TAGS ARRAY<STRUCT<K STRING, V ARRAY<BIGINT>>>>.
var address = structOf(
	Field{Name: "ZIP", Type: IntType},
	Field{Name: "CITY", Type: StringType},
	Field{Name: "TAGS", Type: arrayOf(structOf(
		Field{Name: "K", Type: StringType},
		Field{Name: "V", Type: arrayOf(BigintType)},
	))},
)

// every holds a column of each type, nested composites included.
var every = Schema{Columns: []Column{
	{Name: "ID", Type: BigintType, Key: true},
	{Name: "B", Type: BooleanType},
	{Name: "I", Type: IntType},
	{Name: "L", Type: BigintType},
	{Name: "D", Type: DoubleType},
	{Name: "DEC", Type: decType(6, 2)},
	{Name: "S", Type: StringType},
	{Name: "BY", Type: BytesType},
	{Name: "DT", Type: DateType},
	{Name: "TM", Type: TimeType},
	{Name: "TS", Type: TimestampType},
	{Name: "ARR", Type: arrayOf(IntType)},
	{Name: "M", Type: mapOf(StringType, DoubleType)},
	{Name: "ADDRESS", Type: address},
}}

// everyRow is a row of every with awkward values.
func everyRow() Row {
	return Row{
		IntDatum(7),
		BoolDatum(true),
		IntDatum(math.MinInt32),
		IntDatum(math.MaxInt64),
		DoubleDatum(-1.25e-7),
		IntDatum(-123456), // -1234.56
		StringDatum("héllo, \"w\"\n\tx"),
		bytesDatum(0, 1, 0xfe, 0xff, '"', ','),
		IntDatum(19782),    // 2024-02-29
		IntDatum(47655123), // 13:14:15.123
		IntDatum(1709212455123),
		listDatum(IntDatum(1), NullDatum, IntDatum(-3)),
		listDatum(StringDatum("a"), DoubleDatum(1.5), StringDatum("b\""), NullDatum),
		listDatum(IntDatum(94107), StringDatum("SF"), listDatum(
			listDatum(StringDatum("k1"), listDatum(IntDatum(1), IntDatum(2))),
			listDatum(StringDatum("k2"), NullDatum),
		)),
	}
}

// sameRow reports the first column of cols where got and want differ in
// their text forms.
func sameRow(t *testing.T, s Schema, cols []int, got, want Row) {
	t.Helper()
	for _, c := range cols {
		ty := s.Columns[c].Type
		if g, w := Text(got[c], ty), Text(want[c], ty); g != w || got[c].Null != want[c].Null {
			t.Errorf("column %s: got %s, want %s", s.Columns[c].Name, g, w)
		}
	}
}

// flat is a schema of scalar columns only.
func flatSchema(s Schema) (Schema, []int) {
	var out Schema
	var cols []int
	for _, c := range s.Columns {
		switch c.Type.Kind {
		case Array, Map, Struct:
			continue
		}
		cols = append(cols, len(out.Columns))
		out.Columns = append(out.Columns, c)
	}
	return out, cols
}
