package types_test

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/sqlstreams/sqlstreams/types"
)

func wdec(p, s int) Type { return Type{Kind: Decimal, Precision: p, Scale: s} }

// wideSchema has wide DECIMALs beside a short one, nested too.
var wideSchema = Schema{Columns: []Column{
	{Name: "ID", Type: StringType, Key: true},
	{Name: "W", Type: wdec(21, 19)},
	{Name: "BIG", Type: wdec(38, 0)},
	{Name: "S", Type: wdec(6, 2)},
	{Name: "ARR", Type: arrayT(wdec(20, 10))},
}}

func wideRow(t *testing.T) Row {
	t.Helper()
	dec := func(s string, typ Type) Datum {
		d, _, err := ParseDecimalDatum([]byte(s), typ, nil)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return Row{
		StringDatum("k"),
		dec("-10.1234512345123451234", wdec(21, 19)),
		dec("-99999999999999999999999999999999999999", wdec(38, 0)),
		IntDatum(-123456),
		listD(dec("1234567890.0123456789", wdec(20, 10)), dec("-0.5", wdec(20, 10)), dec("0", wdec(20, 10))),
	}
}

// TestWideDecimalCodecs round-trips wide DECIMALs through every format
// that carries decimals, and checks what each writes.
func TestWideDecimalCodecs(t *testing.T) {
	reg := startRegistry(t)
	cols := wideSchema.ValueIndexes()
	want := wideRow(t)
	for _, c := range []struct {
		format string
		opts   FormatOptions
		cols   []int
		wire   string // a fragment of the encoded value, for the text formats
	}{
		{FormatJSON, FormatOptions{}, cols, `"W":-10.1234512345123451234,"BIG":-99999999999999999999999999999999999999,"S":-1234.56,"ARR":[1234567890.0123456789,-0.5000000000,0.0000000000]`},
		{FormatDelimited, FormatOptions{}, cols[:3], `-10.1234512345123451234,-99999999999999999999999999999999999999,-1234.56`},
		{FormatAvro, FormatOptions{Schemas: reg, Subject: "wide-value"}, cols, ""},
		{FormatProtobuf, FormatOptions{Schemas: reg, Subject: "wide-proto-value"}, cols, ""},
		{FormatProtobufNoSR, FormatOptions{}, cols, ""},
	} {
		enc, err := NewEncoderOpts(c.format, wideSchema, c.cols, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		out, err := enc.Encode(nil, want)
		if err != nil {
			t.Fatalf("%s: encode: %v", c.format, err)
		}
		if c.wire != "" && !strings.Contains(string(out), c.wire) {
			t.Errorf("%s wrote %s, want it to contain %s", c.format, out, c.wire)
		}
		dec, err := NewDecoderOpts(c.format, wideSchema, c.cols, c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.format, err)
		}
		row := make(Row, wideSchema.Len())
		if err := dec.Decode(out, row); err != nil {
			t.Fatalf("%s: decode %x: %v", c.format, out, err)
		}
		sameText(t, wideSchema, c.cols, row, want)
		for _, i := range c.cols {
			if wideSchema.Columns[i].Type.IsWideDecimal() && !bytes.Equal(row[i].B, want[i].B) {
				t.Errorf("%s: column %s bytes %x, want the canonical %x", c.format, wideSchema.Columns[i].Name, row[i].B, want[i].B)
			}
		}
	}
}

func TestWideDecimalJSONInputs(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "W", Type: wdec(21, 19)}}}
	dec, _ := NewDecoder(FormatJSON, s, []int{0})
	row := make(Row, 1)
	for in, want := range map[string]string{
		`{"W":10.1234512345123451234}`:   "10.1234512345123451234",
		`{"W":"10.1234512345123451234"}`: "10.1234512345123451234",
		`{"W":1e1}`:                      "10.0000000000000000000",
		`{"W":null}`:                     "NULL",
	} {
		if err := dec.Decode([]byte(in), row); err != nil || Text(row[0], s.Columns[0].Type) != want {
			t.Errorf("%s: %s %v", in, Text(row[0], s.Columns[0].Type), err)
		}
	}
	for _, in := range []string{`{"W":100}`, `{"W":"x"}`, `{"W":true}`} {
		if err := dec.Decode([]byte(in), row); err == nil {
			t.Errorf("%s accepted", in)
		}
	}
}
