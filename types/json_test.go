package types

import (
	"errors"
	"strings"
	"testing"
)

func TestJSONRoundTripEveryType(t *testing.T) {
	cols := every.ValueIndexes()
	enc, err := NewEncoder(FormatJSON, every, cols)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewDecoder(FormatJSON, every, cols)
	if err != nil {
		t.Fatal(err)
	}
	in := everyRow()
	b, err := enc.Encode(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"B":true,"I":-2147483648,"L":9223372036854775807,"D":-1.25e-07,"DEC":-1234.56,` +
		`"S":"héllo, \"w\"\n\tx","BY":"AAH+/yIs","DT":19782,"TM":47655123,"TS":1709212455123,` +
		`"ARR":[1,null,-3],"M":{"a":1.5,"b\"":null},` +
		`"ADDRESS":{"ZIP":94107,"CITY":"SF","TAGS":[{"K":"k1","V":[1,2]},{"K":"k2","V":null}]}}`
	if string(b) != want {
		t.Errorf("encoded\n got %s\nwant %s", b, want)
	}
	out := make(Row, every.Len())
	if err := dec.Decode(b, out); err != nil {
		t.Fatal(err)
	}
	sameRow(t, every, cols, out, in)
	// Every column NULL.
	nulls := make(Row, every.Len())
	for i := range nulls {
		nulls[i] = NullDatum
	}
	b, _ = enc.Encode(nil, nulls)
	if err := dec.Decode(b, out); err != nil {
		t.Fatal(err)
	}
	sameRow(t, every, cols, out, nulls)
}

func TestJSONReadsKsqlDBForms(t *testing.T) {
	s := Schema{Columns: []Column{
		{Name: "I", Type: IntType}, {Name: "L", Type: BigintType}, {Name: "D", Type: DoubleType},
		{Name: "DEC", Type: decType(4, 2)}, {Name: "S", Type: StringType}, {Name: "BY", Type: BytesType},
		{Name: "DT", Type: DateType}, {Name: "TM", Type: TimeType}, {Name: "TS", Type: TimestampType},
	}}
	cols := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	dec, err := NewDecoder(FormatJSON, s, cols)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{`{"I":"42","L":"-7","D":"1.5","DEC":"1.5","S":12.50,"BY":"AAH+","DT":"2024-02-29","TM":"13:14:15.123","TS":"2024-02-29T13:14:15.123Z"}`,
			`42|-7|1.5|1.50|12.50|\x0001fe|2024-02-29|13:14:15.123|2024-02-29T13:14:15.123`},
		{`{"i":4.0,"l":1e3,"d":3,"dec":12,"s":{"a":[1, true]},"by":"AAH","dt":-1,"tm":0,"ts":0}`,
			`4|1000|3|12.00|{"a":[1,true]}|\x0001|1969-12-31|00:00:00.000|1970-01-01T00:00:00.000`},
		{`{"DEC":-0.5,"S":[1,"x"],"S":"later ignored","TS":"2024-02-29 14:14:15+01:00","TM":"23:59","DT":"19782"}`,
			`NULL|NULL|NULL|-0.50|[1,"x"]|NULL|2024-02-29|23:59:00.000|2024-02-29T13:14:15.000`},
		{`{"DEC":"99.990","TS":"2024-02-29","S":true,"TM":"00:00:01","D":-0}`,
			`NULL|NULL|-0|99.99|true|NULL|NULL|00:00:01.000|2024-02-29T00:00:00.000`},
		{`null`, `NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL`},
	} {
		row := make(Row, s.Len())
		if err := dec.Decode([]byte(c.in), row); err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		var got []string
		for _, i := range cols {
			got = append(got, Text(row[i], s.Columns[i].Type))
		}
		if g := strings.Join(got, "|"); g != c.want {
			t.Errorf("%s\n got %s\nwant %s", c.in, g, c.want)
		}
	}
}

func TestJSONStructFieldsMatchCaseInsensitively(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "ADDRESS", Type: address}, {Name: "Quoted", Type: StringType}, {Name: "QUOTED", Type: StringType}}}
	dec, err := NewDecoder(FormatJSON, s, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, 3)
	in := `{"address":{"city":"SF","Zip":1,"unknown":{"deep":[1]},"tAgS":[{"k":"a"}]},"quoted":"first","QUOTED":"exact","Quoted":"exact too"}`
	if err := dec.Decode([]byte(in), row); err != nil {
		t.Fatal(err)
	}
	if got, want := Text(row[0], address), `{"ZIP":1,"CITY":"SF","TAGS":[{"K":"a","V":null}]}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	// An exact match wins over an earlier case-insensitive one.
	if string(row[1].B) != "exact too" || string(row[2].B) != "exact" {
		t.Errorf("got %q %q", row[1].B, row[2].B)
	}
	// Otherwise the first case-insensitive match is used, as in ksqlDB.
	if err := dec.Decode([]byte(`{"address":{"zip":1,"ZIp":2}}`), row); err != nil || row[0].L[0].I != 1 {
		t.Errorf("got %s (%v)", Text(row[0], address), err)
	}
}

func TestJSONBadRecordsNameThePath(t *testing.T) {
	cols := every.ValueIndexes()
	dec, err := NewDecoder(FormatJSON, every, cols)
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, every.Len())
	for _, c := range []struct{ in, msg string }{
		{`{"ADDRESS":{"ZIP":"x"}}`, `field ADDRESS.ZIP: want INTEGER, got "x"`},
		{`{"address":{"zip":true}}`, `field ADDRESS.ZIP: want INTEGER, got boolean`},
		{`{"ADDRESS":{"TAGS":[{"V":[1]},{"V":[1,"a"]}]}}`, `field ADDRESS.TAGS[1].V[1]: want BIGINT, got "a"`},
		{`{"ADDRESS":[]}`, `field ADDRESS: want STRUCT<ZIP INTEGER, CITY STRING, TAGS ARRAY<STRUCT<K STRING, V ARRAY<BIGINT>>>>, got array`},
		{`{"M":{"a":1,"b":"x"}}`, `field M['b']: want DOUBLE, got "x"`},
		{`{"M":[1]}`, `field M: want MAP<STRING, DOUBLE>, got array`},
		{`{"ARR":{"a":1}}`, `field ARR: want ARRAY<INTEGER>, got object`},
		{`{"I":2147483648}`, `field I: 2147483648 overflows INTEGER`},
		{`{"I":-2147483649}`, `field I: -2147483649 overflows INTEGER`},
		{`{"L":9223372036854775808}`, `field L: 9223372036854775808 overflows BIGINT`},
		{`{"I":1.5}`, `field I: want INTEGER, got 1.5`},
		{`{"DEC":1.234}`, `field DEC: cannot fit 1.234 into DECIMAL(6, 2) without rounding`},
		{`{"DEC":"10000"}`, `field DEC: 10000 does not fit DECIMAL(6, 2)`},
		{`{"DEC":"1,5"}`, `field DEC: want DECIMAL(6, 2), got "1,5"`},
		{`{"DEC":false}`, `field DEC: want DECIMAL(6, 2), got boolean`},
		{`{"BY":"not base64!"}`, `field BY: invalid base64 for BYTES`},
		{`{"BY":12}`, `field BY: want BYTES, got number`},
		{`{"B":"true"}`, `field B: want BOOLEAN, got string`},
		{`{"DT":"2023-02-29"}`, `field DT: want DATE, got "2023-02-29"`},
		{`{"DT":1e10}`, `field DT: 1e10 overflows DATE`},
		{`{"TM":86400000}`, `field TM: TIME 86400000 is not within a day`},
		{`{"TM":"25:00"}`, `field TM: want TIME, got "25:00"`},
		{`{"TS":"2024-02-29T13:14:15+5"}`, `field TS: want TIMESTAMP`},
		{`{"TS":1.5}`, `field TS: want TIMESTAMP, got 1.5`},
		{`{"D":"x"}`, `field D: want DOUBLE, got "x"`},
		{`{"I":"` + strings.Repeat("9", 100) + `"}`, `field I: ` + strings.Repeat("9", 40) + `… overflows INTEGER`},
		{`{"B":true`, `invalid JSON`},
		{``, `invalid JSON`},
		{`{"B":true} x`, `invalid JSON`},
		{`[{"B":true}]`, `JSON value is array, not an object`},
		{`42`, `JSON value is number, not an object`},
	} {
		err := dec.Decode([]byte(c.in), row)
		if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s:\n got %v\nwant a bad record containing %q", c.in, err, c.msg)
		}
	}
	// The decoder recovers: the next good record decodes whole.
	if err := dec.Decode([]byte(`{"ADDRESS":{"ZIP":5,"TAGS":[{"V":[9]}]}}`), row); err != nil || Text(row[13], address) != `{"ZIP":5,"CITY":null,"TAGS":[{"K":null,"V":[9]}]}` {
		t.Errorf("after errors: %s %v", Text(row[13], address), err)
	}
}

func TestJSONWrapSingleValue(t *testing.T) {
	for _, c := range []struct {
		t          Type
		wrapped    string
		unwrapped  string
		nullUnwrap string
	}{
		{BigintType, `{"V":42}`, `42`, `null`},
		{StringType, `{"V":"x"}`, `"x"`, `null`},
		{arrayOf(IntType), `{"V":[1,2]}`, `[1,2]`, `null`},
		{structOf(Field{Name: "A", Type: IntType}), `{"V":{"A":1}}`, `{"A":1}`, `null`},
	} {
		s := Schema{Columns: []Column{{Name: "V", Type: c.t}}}
		var d Datum
		switch c.t.Kind {
		case Bigint:
			d = IntDatum(42)
		case String:
			d = StringDatum("x")
		case Array:
			d = listDatum(IntDatum(1), IntDatum(2))
		case Struct:
			d = listDatum(IntDatum(1))
		}
		for _, o := range []struct {
			wrap *bool
			want string
		}{{nil, c.wrapped}, {ptr(true), c.wrapped}, {ptr(false), c.unwrapped}} {
			opts := FormatOptions{WrapSingleValue: o.wrap}
			enc, err := NewEncoderOpts(FormatJSON, s, []int{0}, opts)
			if err != nil {
				t.Fatal(err)
			}
			dec, err := NewDecoderOpts(FormatJSON, s, []int{0}, opts)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := enc.Encode(nil, Row{d})
			if string(b) != o.want {
				t.Errorf("%s wrap=%v: encoded %s, want %s", c.t, o.wrap, b, o.want)
			}
			row := make(Row, 1)
			if err := dec.Decode(b, row); err != nil || Text(row[0], c.t) != Text(d, c.t) {
				t.Errorf("%s wrap=%v: decoded %s (%v)", c.t, o.wrap, Text(row[0], c.t), err)
			}
			if b, _ := enc.Encode(nil, Row{NullDatum}); o.wrap != nil && !*o.wrap && string(b) != c.nullUnwrap {
				t.Errorf("%s: NULL unwrapped is %s", c.t, b)
			}
			if err := dec.Decode([]byte("null"), row); err != nil || !row[0].Null {
				t.Errorf("%s wrap=%v: top-level null: %v %v", c.t, o.wrap, row[0], err)
			}
		}
	}
	s := Schema{Columns: []Column{{Name: "A", Type: IntType}, {Name: "B", Type: IntType}}}
	for _, w := range []bool{true, false} {
		if _, err := NewDecoderOpts(FormatJSON, s, []int{0, 1}, FormatOptions{WrapSingleValue: &w}); err == nil {
			t.Errorf("WRAP_SINGLE_VALUE=%v accepted for two columns", w)
		}
	}
	// Unwrapped, a value of the wrong shape is a bad record naming the column.
	dec, _ := NewDecoderOpts(FormatJSON, every, []int{13}, FormatOptions{WrapSingleValue: ptr(false)})
	row := make(Row, every.Len())
	if err := dec.Decode([]byte(`{"ZIP":"x"}`), row); err == nil || !strings.Contains(err.Error(), "field ADDRESS.ZIP: want INTEGER") {
		t.Errorf("got %v", err)
	}
}

// TestJSONKeys follows ksqlDB: a single key column is the bare JSON value,
// several key columns are the fields of one object.
func TestJSONKeys(t *testing.T) {
	one := Schema{Columns: []Column{{Name: "ID", Type: StringType, Key: true}, {Name: "V", Type: IntType}}}
	enc, _ := NewEncoder(FormatJSON, one, one.KeyIndexes())
	dec, _ := NewDecoder(FormatJSON, one, one.KeyIndexes())
	b, _ := enc.Encode(nil, Row{StringDatum("u1"), IntDatum(1)})
	if string(b) != `"u1"` {
		t.Errorf("single key: %s", b)
	}
	row := make(Row, 2)
	if err := dec.Decode([]byte(`"u2"`), row); err != nil || string(row[0].B) != "u2" {
		t.Errorf("single key decode: %v %v", row[0], err)
	}
	if err := dec.Decode(nil, row); err != nil || !row[0].Null {
		t.Errorf("nil key: %v %v", row[0], err)
	}

	multi := Schema{Columns: []Column{
		{Name: "ORGID", Type: BigintType, Key: true},
		{Name: "ID", Type: StringType, Key: true},
		{Name: "V", Type: IntType},
	}}
	enc, _ = NewEncoder(FormatJSON, multi, multi.KeyIndexes())
	dec, _ = NewDecoder(FormatJSON, multi, multi.KeyIndexes())
	b, _ = enc.Encode(nil, Row{IntDatum(120), StringDatum("bob"), IntDatum(1)})
	if string(b) != `{"ORGID":120,"ID":"bob"}` {
		t.Errorf("multi key: %s", b)
	}
	row = make(Row, 3)
	row[2] = IntDatum(99)
	if err := dec.Decode([]byte(`{"id":"x","orgid":1}`), row); err != nil || row[0].I != 1 || string(row[1].B) != "x" || row[2].I != 99 {
		t.Errorf("multi key decode: %v %v", row, err)
	}
}

func TestJSONRefusesNonStringMapKeys(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "M", Type: arrayOf(mapOf(IntType, StringType))}}}
	_, err := NewDecoder(FormatJSON, s, []int{0})
	if err == nil || !strings.Contains(err.Error(), "JSON only supports MAP types with STRING keys") || !strings.Contains(err.Error(), "column M") {
		t.Errorf("got %v", err)
	}
	if _, err := NewEncoder(FormatJSON, s, []int{0}); err == nil {
		t.Error("encoder accepted MAP<INTEGER, STRING>")
	}
	bad := Schema{Columns: []Column{{Name: "X", Type: decType(MaxDecimalPrecision+1, 2)}}}
	if _, err := NewDecoder(FormatJSON, bad, []int{0}); err == nil {
		t.Error("DECIMAL(1001, 2) accepted")
	}
}

func TestJSONSchemaRegistryPrefix(t *testing.T) {
	dec, _ := NewDecoder(FormatJSON, pageviews, pageviews.ValueIndexes())
	row := make(Row, pageviews.Len())
	if err := dec.Decode([]byte("\x00\x00\x00\x00\x07{\"PAGEID\":\"p\"}"), row); err != nil || string(row[1].B) != "p" {
		t.Errorf("got %v %v", row[1], err)
	}
}

// TestJSONReusesElementSlices checks that composite values are decoded
// into the slices the row already holds.
func TestJSONReusesElementSlices(t *testing.T) {
	cols := every.ValueIndexes()
	enc, _ := NewEncoder(FormatJSON, every, cols)
	dec, _ := NewDecoder(FormatJSON, every, cols)
	in, _ := enc.Encode(nil, everyRow())
	row := make(Row, every.Len())
	if err := dec.Decode(in, row); err != nil {
		t.Fatal(err)
	}
	arr, tags := &row[11].L[0], &row[13].L[2].L[0]
	if err := dec.Decode([]byte(`{"ARR":null}`), row); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(in, row); err != nil {
		t.Fatal(err)
	}
	if &row[11].L[0] != arr || &row[13].L[2].L[0] != tags {
		t.Error("element slices were reallocated")
	}
	allocs := testing.AllocsPerRun(100, func() {
		if err := dec.Decode(in, row); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("nested decode allocates %.1f times per record", allocs)
	}
}

// TestJSONDecoderRead checks a decoder that reads only some columns: the
// others stay NULL, are stepped over whatever they hold, and only a JSON
// kind that cannot fit their type makes the record bad.
func TestJSONDecoderRead(t *testing.T) {
	read := make([]bool, every.Len())
	read[3], read[6], read[13] = true, true, true // L, S, ADDRESS
	dec, err := NewDecoderRead(FormatJSON, every, every.ValueIndexes(), read, FormatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, every.Len())
	in := `{"b":true,"I":99999999999,"l":"42","D":"not a number","other":{"x":[1,2,{"y":"\u00e9"}]},"s":"a\"b\u00e9\n","ARR":[1,"x"],"address":{"zip":5},"M":{"a":"not a double"}}`
	if err := dec.Decode([]byte(in), row); err != nil {
		t.Fatal(err)
	}
	if row[3].I != 42 || string(row[6].B) != "a\"bé\n" || Text(row[13], address) != `{"ZIP":5,"CITY":null,"TAGS":null}` {
		t.Errorf("read columns: L=%v S=%q ADDRESS=%s", row[3], row[6].B, Text(row[13], address))
	}
	for _, c := range []int{1, 2, 4, 11, 12} {
		if !row[c].Null {
			t.Errorf("column %s not read but holds %v", every.Columns[c].Name, row[c])
		}
	}
	for _, c := range []struct{ in, msg string }{
		{`{"B":1}`, `field B: want BOOLEAN, got number`},
		{`{"I":[1]}`, `field I: want INTEGER, got array`},
		{`{"ARR":{}}`, `field ARR: want ARRAY<INTEGER>, got object`},
		{`{"M":[]}`, `field M: want MAP<STRING, DOUBLE>, got array`},
		{`{"BY":true}`, `field BY: want BYTES, got boolean`},
		{`{"L":"x"}`, `field L: want BIGINT, got "x"`},
		{`{"I":1,"D":[1,}`, `invalid JSON: unexpected '}' at offset 14`},
		{`{"D":"abc`, `invalid JSON: unterminated string at offset 5`},
	} {
		err := dec.Decode([]byte(c.in), row)
		if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s:\n got %v\nwant a bad record containing %q", c.in, err, c.msg)
		}
	}
	// Unread fields cost no allocations either.
	data := []byte(in)
	allocs := testing.AllocsPerRun(100, func() {
		if err := dec.Decode(data, row); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("decode allocates %.1f times per record", allocs)
	}
}

// TestJSONSyntax checks what the decoder takes for JSON: the syntax of
// RFC 8259 whole (also in fields it does not convert), with the offset of
// the first error.
func TestJSONSyntax(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "A", Type: StringType}, {Name: "N", Type: DoubleType}}}
	dec, err := NewDecoder(FormatJSON, s, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, 2)
	for _, c := range []struct{ in, a string }{
		{` { "a" : "x" , "n" : -1.5e+3 } `, "x"},
		{`{"\u0061":"esc\/aped \ud83d\ude00","x":{"deep":[[[]]]}}`, "esc/aped 😀"},
		{`{"A":{"k": [1, 2]}}`, `{"k":[1,2]}`},
		{`{"A":12.50}`, "12.50"},
		{`{"A":false}`, "false"},
		{`{}`, ""},
	} {
		if err := dec.Decode([]byte(c.in), row); err != nil {
			t.Errorf("%s: %v", c.in, err)
		} else if string(row[0].B) != c.a {
			t.Errorf("%s: A = %q, want %q", c.in, row[0].B, c.a)
		}
	}
	for _, c := range []struct{ in, msg string }{
		{`{"a":01}`, `invalid number at offset 5`},
		{`{"a":1.}`, `invalid number at offset 5`},
		{`{"a":-}`, `invalid number at offset 5`},
		{`{"a":"x\"}`, `unterminated string at offset 5`},
		{`{"a":"\x"}`, `invalid escape at offset 6`},
		{`{"a":"\u12G4"}`, `invalid \u escape at offset 6`},
		{`{"a" 1}`, `expected ':' at offset 5`},
		{`{"a":1,}`, `expected a field name at offset 7`},
		{`{"a":1 "b":2}`, `expected ',' or '}' at offset 7`},
		{`{"a":tru}`, `invalid literal at offset 5`},
		{`{"a":1}}`, `unexpected data after the value at offset 7`},
		{`{"x":` + strings.Repeat("[", 301) + strings.Repeat("]", 301) + `}`, `too deeply nested`},
		{`nul`, `invalid literal at offset 0`},
	} {
		err := dec.Decode([]byte(c.in), row)
		if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "invalid JSON: "+c.msg) {
			t.Errorf("%s:\n got %v\nwant a bad record containing %q", c.in, err, c.msg)
		}
	}
}

// TestJSONFieldOrderChanges checks that the decoder, which remembers the
// field names it saw at each position, reads records whose fields move,
// change case, or are written with escapes.
func TestJSONFieldOrderChanges(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "A", Type: BigintType}, {Name: "B", Type: StringType}, {Name: "a", Type: BigintType}}}
	dec, err := NewDecoder(FormatJSON, s, []int{0, 1, 2})
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, 3)
	for _, c := range []struct{ in, want string }{
		{`{"A":1,"B":"x","a":2}`, "1 x 2"},
		{`{"B":"y","A":3}`, "3 y NULL"},
		{`{"b":"z","\u0041":4,"a":5}`, "4 z 5"},
		{`{"A":6,"B":"w","a":7}`, "6 w 7"},
		{`{"a":8,"B":"v"}`, "NULL v 8"}, // a field fills one column: the exact match
		{`{"AB":9,"B":"u"}`, "NULL u NULL"},
	} {
		if err := dec.Decode([]byte(c.in), row); err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if got := Text(row[0], BigintType) + " " + Text(row[1], StringType) + " " + Text(row[2], BigintType); got != c.want {
			t.Errorf("%s: got %s, want %s", c.in, got, c.want)
		}
	}
}
