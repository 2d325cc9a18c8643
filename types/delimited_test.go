package types

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestDelimitedRoundTripEveryScalar(t *testing.T) {
	s, cols := flatSchema(every)
	full := everyRow()
	var in Row
	for _, c := range every.Columns {
		i := every.Index(c.Name)
		if s.Index(c.Name) >= 0 {
			in = append(in, full[i])
		}
	}
	for _, c := range []struct {
		delim rune
		want  string
	}{
		{0, `7,true,-2147483648,9223372036854775807,-1.25E-7,-1234.56,"héllo, ""w""` + "\n\tx" + `",AAH+/yIs,19782,47655123,1709212455123`},
		{'|', `7|true|-2147483648|9223372036854775807|-1.25E-7|-1234.56|"héllo, ""w""` + "\n\tx" + `"|AAH+/yIs|19782|47655123|1709212455123`},
		{'\t', "7\ttrue\t-2147483648\t9223372036854775807\t-1.25E-7\t-1234.56\t\"héllo, \"\"w\"\"\n\tx\"\tAAH+/yIs\t19782\t47655123\t1709212455123"},
		{'+', `7+true+-2147483648+9223372036854775807+-1.25E-7+-1234.56+"héllo, ""w""` + "\n\tx" + `"+"AAH+/yIs"+19782+47655123+1709212455123`},
		{'€', `7€true€-2147483648€9223372036854775807€-1.25E-7€-1234.56€"héllo, ""w""` + "\n\tx" + `"€AAH+/yIs€19782€47655123€1709212455123`},
	} {
		o := FormatOptions{Delimiter: c.delim}
		enc, err := NewEncoderOpts(FormatDelimited, s, cols, o)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := NewDecoderOpts(FormatDelimited, s, cols, o)
		if err != nil {
			t.Fatal(err)
		}
		b, err := enc.Encode(nil, in)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("delimiter %q:\n got %s\nwant %s", c.delim, b, c.want)
		}
		out := make(Row, len(in))
		if err := dec.Decode(b, out); err != nil {
			t.Fatalf("delimiter %q: %v", c.delim, err)
		}
		sameRow(t, s, cols, out, in)
		// With a trailing line break, as ksqlDB's tests write records.
		if err := dec.Decode(append(b, '\r', '\n'), out); err != nil {
			t.Fatalf("delimiter %q: %v", c.delim, err)
		}
		sameRow(t, s, cols, out, in)
	}
}

func TestDelimitedNullsAndEmptyStrings(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "S", Type: StringType}, {Name: "I", Type: IntType}, {Name: "BY", Type: BytesType}, {Name: "T", Type: StringType}}}
	cols := []int{0, 1, 2, 3}
	enc, _ := NewEncoder(FormatDelimited, s, cols)
	dec, _ := NewDecoder(FormatDelimited, s, cols)
	row := Row{StringDatum(""), NullDatum, bytesDatum(), NullDatum}
	b, _ := enc.Encode(nil, row)
	if string(b) != `"",,"",` {
		t.Errorf("encoded %s", b)
	}
	out := make(Row, 4)
	if err := dec.Decode(b, out); err != nil {
		t.Fatal(err)
	}
	if out[0].Null || len(out[0].B) != 0 || !out[1].Null || out[2].Null || !out[3].Null {
		t.Errorf("decoded %+v", out)
	}
	// An empty or quoted empty field of another type is NULL; spaces around
	// numbers are ignored, not around strings.
	if err := dec.Decode([]byte(` x ,"","",`), out); err != nil {
		t.Fatal(err)
	}
	if string(out[0].B) != " x " || !out[1].Null || string(out[2].B) != "" || out[2].Null || !out[3].Null {
		t.Errorf("decoded %q %v %v", out[0].B, out[1], out[2])
	}
	if err := dec.Decode([]byte(`a, 42 ,,`), out); err != nil || out[1].I != 42 {
		t.Errorf("decoded %v %v", out[1], err)
	}
	// A Kafka null is all NULL.
	if err := dec.Decode(nil, out); err != nil || !out[0].Null || !out[3].Null {
		t.Errorf("nil: %v", err)
	}
}

func TestDelimitedReadsOtherForms(t *testing.T) {
	s := Schema{Columns: []Column{
		{Name: "B", Type: BooleanType}, {Name: "D", Type: DoubleType}, {Name: "DEC", Type: decType(4, 2)},
		{Name: "DT", Type: DateType}, {Name: "TM", Type: TimeType}, {Name: "TS", Type: TimestampType},
	}}
	cols := []int{0, 1, 2, 3, 4, 5}
	dec, _ := NewDecoder(FormatDelimited, s, cols)
	for _, c := range []struct{ in, want string }{
		{`TRUE,1.0E10,01.12,2024-02-29,13:14:15.5,2024-02-29T13:14:15.123Z`, `true|1e+10|1.12|2024-02-29|13:14:15.500|2024-02-29T13:14:15.123`},
		{`false,NaN,-1,0,0,0`, `false|NaN|-1.00|1970-01-01|00:00:00.000|1970-01-01T00:00:00.000`},
		{`False,-Infinity,.5,-1,86399999,-1`, `false|-Inf|0.50|1969-12-31|23:59:59.999|1969-12-31T23:59:59.999`},
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
	enc, _ := NewEncoder(FormatDelimited, s, cols)
	b, _ := enc.Encode(nil, Row{BoolDatum(false), DoubleDatum(math.Inf(1)), IntDatum(5), IntDatum(1), IntDatum(2), IntDatum(3)})
	if string(b) != "false,Infinity,0.05,1,2,3" {
		t.Errorf("encoded %s", b)
	}
}

func TestDelimitedBadRecords(t *testing.T) {
	s := Schema{Columns: []Column{
		{Name: "I", Type: IntType}, {Name: "S", Type: StringType}, {Name: "DEC", Type: decType(4, 2)},
		{Name: "BY", Type: BytesType}, {Name: "B", Type: BooleanType}, {Name: "TS", Type: TimestampType},
	}}
	cols := []int{0, 1, 2, 3, 4, 5}
	dec, _ := NewDecoder(FormatDelimited, s, cols)
	row := make(Row, s.Len())
	for _, c := range []struct{ in, msg string }{
		{`1,a,1.5,,true`, `has 5 fields, want 6`},
		{`1,a,1.5,,true,1,extra`, `has 7 fields, want 6`},
		{``, `has 1 fields, want 6`},
		{`x,a,1.5,,true,1`, `field I: want INTEGER, got "x"`},
		{`2147483648,a,,,,`, `field I: 2147483648 overflows INTEGER`},
		{`1.5,a,,,,`, `field I: want INTEGER, got 1.5`},
		{`1,a,1.234,,,`, `field DEC: cannot fit 1.234 into DECIMAL(4, 2) without rounding`},
		{`1,a,100,,,`, `field DEC: 100 does not fit DECIMAL(4, 2)`},
		{`1,a,,@@@,,`, `field BY: invalid base64`},
		{`1,a,,,yes,`, `field B: want BOOLEAN, got "yes"`},
		{`1,a,,,,2024-13-01`, `field TS: want TIMESTAMP, got "2024-13-01"`},
		{`1,"a,,,,`, `unterminated quoted field`},
		{`1,"a"b,,,,`, `unexpected character after a quoted field`},
		{"1,a,,,,\n2,b,,,,", `more than one line`},
		{"1,a\n,,,,", `more than one line`},
		{"1,x,,,,\n\n", `more than one line`},
	} {
		err := dec.Decode([]byte(c.in), row)
		if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%q:\n got %v\nwant a bad record containing %q", c.in, err, c.msg)
		}
	}
	// Quotes inside an unquoted field are taken literally, as commons-csv does.
	if err := dec.Decode([]byte(`1,a"b,,,,`), row); err != nil || string(row[1].B) != `a"b` {
		t.Errorf("got %q %v", row[1].B, err)
	}
}

// TestDelimitedKeys checks multi-column keys: ksqlDB's example splits a key
// of 120,21 into ORGID and ID.
func TestDelimitedKeys(t *testing.T) {
	s := Schema{Columns: []Column{
		{Name: "ORGID", Type: BigintType, Key: true},
		{Name: "ID", Type: BigintType, Key: true},
		{Name: "NAME", Type: StringType},
		{Name: "AGE", Type: IntType},
	}}
	kdec, err := NewDecoder(FormatDelimited, s, s.KeyIndexes())
	if err != nil {
		t.Fatal(err)
	}
	vdec, _ := NewDecoder(FormatDelimited, s, s.ValueIndexes())
	row := make(Row, 4)
	if err := kdec.Decode([]byte("120,21"), row); err != nil {
		t.Fatal(err)
	}
	if err := vdec.Decode([]byte("bob,49"), row); err != nil {
		t.Fatal(err)
	}
	if row[0].I != 120 || row[1].I != 21 || string(row[2].B) != "bob" || row[3].I != 49 {
		t.Errorf("got %v", row)
	}
	kenc, _ := NewEncoder(FormatDelimited, s, s.KeyIndexes())
	if b, _ := kenc.Encode(nil, row); string(b) != "120,21" {
		t.Errorf("key %s", b)
	}
}

func TestDelimitedRefusals(t *testing.T) {
	for _, i := range []int{11, 12, 13} {
		_, err := NewDecoder(FormatDelimited, every, []int{1, i})
		if err == nil || !strings.Contains(err.Error(), "The 'DELIMITED' format does not support type '"+every.Columns[i].Type.Kind.String()) {
			t.Errorf("%s: %v", every.Columns[i].Type, err)
		}
	}
	for _, d := range []rune{'"', '\n', '\r'} {
		if _, err := NewEncoderOpts(FormatDelimited, pageviews, []int{1}, FormatOptions{Delimiter: d}); err == nil {
			t.Errorf("delimiter %q accepted", d)
		}
	}
	if _, err := NewDecoderOpts(FormatDelimited, pageviews, []int{1}, FormatOptions{WrapSingleValue: ptr(true)}); err == nil {
		t.Error("DELIMITED accepted WRAP_SINGLE_VALUE=true")
	}
	if _, err := NewDecoderOpts(FormatDelimited, pageviews, []int{1}, FormatOptions{WrapSingleValue: ptr(false)}); err != nil {
		t.Errorf("DELIMITED refused WRAP_SINGLE_VALUE=false: %v", err)
	}
	if _, err := NewDecoderOpts(FormatJSON, pageviews, []int{1}, FormatOptions{Delimiter: ';'}); err == nil {
		t.Error("JSON accepted a delimiter")
	}
}

// TestDelimitedDecodeThenEncode checks that one codec can decode a row and
// encode it again: encoding must not clobber the buffers decoded values
// alias.
func TestDelimitedDecodeThenEncode(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "A", Type: StringType}, {Name: "B", Type: StringType}, {Name: "C", Type: BytesType}}}
	cols := []int{0, 1, 2}
	dec, _ := NewDecoder(FormatDelimited, s, cols)
	enc := dec.(Encoder)
	in := `"a""b","c,d","AAE="`
	row := make(Row, 3)
	if err := dec.Decode([]byte(in), row); err != nil {
		t.Fatal(err)
	}
	if b, _ := enc.Encode(nil, row); string(b) != `"a""b","c,d",AAE=` {
		t.Errorf("got %s", b)
	}
}

// TestDelimitedKsqlQuoting pins the quoting of FormatOptions.KsqlQuoting:
// Commons CSV 1.4's MINIMAL mode, which quotes by a field's first and last
// characters as well as by the characters that need it.
func TestDelimitedKsqlQuoting(t *testing.T) {
	s := Schema{Columns: []Column{{Name: "A", Type: StringType}, {Name: "B", Type: StringType}, {Name: "I", Type: IntType}}}
	cols := []int{0, 1, 2}
	enc, err := NewEncoderOpts(FormatDelimited, s, cols, FormatOptions{KsqlQuoting: true})
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := NewEncoder(FormatDelimited, s, cols)
	for _, c := range []struct {
		a, b      string
		i         int64
		ksql, old string
	}{
		{"x", "y", 1, `x,y,1`, `x,y,1`},
		// a first field starting with other than a letter or digit
		{"-x", "-y", -10, `"-x",-y,-10`, `-x,-y,-10`},
		// any field starting with a character up to '#', or ending with one up to ' '
		{"!", "#a", 2, `"!","#a",2`, `!,#a,2`},
		{"a ", " b", 3, `"a "," b",3`, `a , b,3`},
		{"a\tb\t", "$", 4, "\"a\tb\t\",$,4", "a\tb\t,$,4"},
		// the empty string is quoted only as the first field
		{"", "", 5, `"",,5`, `"","",5`},
		{"a,b", `q"`, 6, `"a,b","q""",6`, `"a,b","q""",6`},
	} {
		row := Row{StringDatum(c.a), StringDatum(c.b), IntDatum(c.i)}
		if b, _ := enc.Encode(nil, row); string(b) != c.ksql {
			t.Errorf("ksql quoting of %q %q %d: %s, want %s", c.a, c.b, c.i, b, c.ksql)
		}
		if b, _ := plain.Encode(nil, row); string(b) != c.old {
			t.Errorf("plain quoting of %q %q %d: %s, want %s", c.a, c.b, c.i, b, c.old)
		}
	}
	// A single negative number is a first field too.
	one, _ := NewEncoderOpts(FormatDelimited, s, []int{2}, FormatOptions{KsqlQuoting: true})
	if b, _ := one.Encode(nil, Row{{}, {}, IntDatum(-5)}); string(b) != `"-5"` {
		t.Errorf("single -5: %s", b)
	}
}

// TestAppendJavaDouble: doubles are written as Java's Double.toString
// writes them (DELIMITED values, DOUBLEs cast to STRING), as ksqlDB does.
func TestAppendJavaDouble(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{math.SmallestNonzeroFloat64, "4.9E-324"}, {-math.SmallestNonzeroFloat64, "-4.9E-324"},
		{math.MaxFloat64, "1.7976931348623157E308"}, {2.2250738585072014e-308, "2.2250738585072014E-308"},
		{1e10, "1.0E10"}, {1e-5, "1.0E-5"}, {-1.25e-7, "-1.25E-7"}, {1e7, "1.0E7"}, {9999999, "9999999.0"},
		{0.001, "0.001"}, {123, "123.0"}, {math.Copysign(0, -1), "-0.0"}, {math.NaN(), "NaN"}, {math.Inf(-1), "-Infinity"},
	} {
		if got := string(AppendJavaDouble(nil, c.f)); got != c.want {
			t.Errorf("%g: got %s, want %s", c.f, got, c.want)
		}
	}
}
