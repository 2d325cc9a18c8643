package types

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// TestKafkaJavaBytes compares with the bytes Kafka's Java serializers
// write (IntegerSerializer, LongSerializer, DoubleSerializer,
// StringSerializer, ByteBufferSerializer).
func TestKafkaJavaBytes(t *testing.T) {
	for _, c := range []struct {
		t     Type
		d     Datum
		bytes string
	}{
		{IntType, IntDatum(math.MinInt32), "\x80\x00\x00\x00"},
		{IntType, IntDatum(42), "\x00\x00\x00\x2a"},
		{BigintType, IntDatum(1700000000123), "\x00\x00\x01\x8b\xcf\xe5\x68\x7b"},
		{BigintType, IntDatum(-1), "\xff\xff\xff\xff\xff\xff\xff\xff"},
		{DoubleType, DoubleDatum(-0.5), "\xbf\xe0\x00\x00\x00\x00\x00\x00"},
		{DoubleType, DoubleDatum(3.25), "\x40\x0a\x00\x00\x00\x00\x00\x00"},
		{StringType, StringDatum("é"), "\xc3\xa9"},
		{StringType, StringDatum(""), ""},
		{BytesType, bytesDatum(0, 0xff), "\x00\xff"},
	} {
		s := Schema{Columns: []Column{{Name: "V", Type: c.t}}}
		enc, err := NewEncoder(FormatKafka, s, []int{0})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := enc.Encode(nil, Row{c.d})
		if string(b) != c.bytes {
			t.Errorf("%s %s: encoded %x, want %x", c.t, Text(c.d, c.t), b, c.bytes)
		}
		dec, _ := NewDecoder(FormatKafka, s, []int{0})
		row := make(Row, 1)
		if err := dec.Decode([]byte(c.bytes), row); err != nil || row[0].Null || Text(row[0], c.t) != Text(c.d, c.t) {
			t.Errorf("%s: decoded %s (%v)", c.t, Text(row[0], c.t), err)
		}
	}
	// Wrong lengths are bad records, including empty.
	for _, ty := range []Type{IntType, BigintType, DoubleType} {
		s := Schema{Columns: []Column{{Name: "V", Type: ty}}}
		dec, _ := NewDecoder(FormatKafka, s, []int{0})
		for _, in := range []string{"", "\x00", "\x00\x00\x00\x00\x00"} {
			if err := dec.Decode([]byte(in), make(Row, 1)); !errors.Is(err, ErrBadRecord) {
				t.Errorf("%s %x: %v", ty, in, err)
			}
		}
	}
}

func TestKafkaRefusals(t *testing.T) {
	for _, i := range []int{1, 5, 8, 9, 10, 11, 12, 13} {
		_, err := NewDecoder(FormatKafka, every, []int{i})
		want := "The 'KAFKA' format does not support type '" + every.Columns[i].Type.Kind.String() + "'"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", every.Columns[i].Type, err)
		}
	}
	_, err := NewEncoder(FormatKafka, every, []int{2, 3})
	if err == nil || !strings.Contains(err.Error(), "only supports a single field. Got: [`I` INTEGER, `L` BIGINT]") {
		t.Errorf("two columns: %v", err)
	}
	if _, err := NewEncoderOpts(FormatKafka, every, []int{2}, FormatOptions{WrapSingleValue: ptr(true)}); err == nil {
		t.Error("KAFKA accepted WRAP_SINGLE_VALUE=true")
	}
	// No columns: ksqlDB's void serde.
	c, err := NewEncoder(FormatKafka, every, nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := c.Encode([]byte("x"), everyRow()); string(b) != "x" {
		t.Errorf("void encoded %q", b)
	}
}

func TestParseDelimiter(t *testing.T) {
	for in, want := range map[string]rune{",": ',', "|": '|', ";": ';', "TAB": '\t', "tab": '\t', "SPACE": ' ', "€": '€'} {
		if got, err := ParseDelimiter(in); err != nil || got != want {
			t.Errorf("%q: %q %v", in, got, err)
		}
	}
	for _, in := range []string{"", " ", "\t", "ab", "COMMA", `"`, "\n", "\xff"} {
		if _, err := ParseDelimiter(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestNormalizeFormat(t *testing.T) {
	for in, want := range map[string]string{"json": FormatJSON, "Kafka": FormatKafka, "none": FormatNone, "delimited": FormatDelimited, "avro": FormatAvro, "json_sr": FormatJSONSR, "protobuf": FormatProtobuf, "Protobuf_NoSR": FormatProtobufNoSR} {
		if got, err := NormalizeFormat(in); err != nil || got != want {
			t.Errorf("%s: %s %v", in, got, err)
		}
	}
	if _, err := NormalizeFormat("xml"); err == nil {
		t.Error("xml accepted")
	}
	if _, err := NewDecoderOpts(FormatNone, every, nil, FormatOptions{WrapSingleValue: ptr(false)}); err == nil {
		t.Error("NONE accepted WRAP_SINGLE_VALUE")
	}
	if _, err := NewDecoder(FormatNone, every, []int{1}); err == nil {
		t.Error("NONE accepted a column")
	}
}

func TestAppendTextEveryType(t *testing.T) {
	row := everyRow()
	want := []string{
		"7", "true", "-2147483648", "9223372036854775807", "-1.25e-07", "-1234.56",
		"héllo, \"w\"\n\tx", `\x0001feff222c`, "2024-02-29", "13:14:15.123", "2024-02-29T13:14:15.123",
		"[1,null,-3]", `{"a":1.5,"b\"":null}`,
		`{"ZIP":94107,"CITY":"SF","TAGS":[{"K":"k1","V":[1,2]},{"K":"k2","V":null}]}`,
	}
	for i, c := range every.Columns {
		if got := Text(row[i], c.Type); got != want[i] {
			t.Errorf("%s: %q, want %q", c.Type, got, want[i])
		}
	}
	for _, c := range []struct {
		d    Datum
		t    Type
		want string
	}{
		{IntDatum(-1), DateType, "1969-12-31"},
		{IntDatum(0), DateType, "1970-01-01"},
		{IntDatum(2932896), DateType, "9999-12-31"},
		{IntDatum(-719528), DateType, "0000-01-01"},
		{IntDatum(0), TimeType, "00:00:00.000"},
		{IntDatum(msPerDay - 1), TimeType, "23:59:59.999"},
		{IntDatum(-1), TimestampType, "1969-12-31T23:59:59.999"},
		{IntDatum(1230), decType(5, 3), "1.230"},
		{IntDatum(-5), decType(3, 2), "-0.05"},
		{IntDatum(math.MinInt64), decType(18, 18), "-9.223372036854775808"},
		{IntDatum(7), decType(3, 0), "7"},
		{DoubleDatum(20), DoubleType, "20"},
		{Datum{B: []byte{}}, BytesType, `\x`},
		{listDatum(IntDatum(1), StringDatum("x")), mapOf(IntType, StringType), `{"1":"x"}`},
		{listDatum(bytesDatum(1), IntDatum(1230)), structOf(Field{Name: "b", Type: BytesType}, Field{Name: "d", Type: decType(6, 3)}), `{"b":"AQ==","d":1.230}`},
		{NullDatum, address, "NULL"},
	} {
		if got := Text(c.d, c.t); got != c.want {
			t.Errorf("%s: %q, want %q", c.t, got, c.want)
		}
	}
}

func TestParseDecimal(t *testing.T) {
	for _, c := range []struct {
		in    string
		scale int
		want  int64
		err   error
	}{
		{"12.3", 2, 1230, nil},
		{"-0.05", 2, -5, nil},
		{"+7", 0, 7, nil},
		{".5", 1, 5, nil},
		{"5.", 0, 5, nil},
		{"1.500000000000000000000000", 1, 15, nil},
		{"000000000000000000000001", 0, 1, nil},
		{"1.25e2", 0, 125, nil},
		{"125E-2", 2, 125, nil},
		{"0e99999999", 0, 0, nil},
		{"-9223372036854775808", 0, math.MinInt64, nil},
		{"9223372036854775807", 0, math.MaxInt64, nil},
		{"9223372036854775808", 0, 0, errRange},
		{"1e19", 0, 0, errRange},
		{"1.25", 1, 0, errRounding},
		{"1e-1", 0, 0, errRounding},
		{"", 0, 0, errNotNumber},
		{"-", 0, 0, errNotNumber},
		{".", 0, 0, errNotNumber},
		{"1e", 0, 0, errNotNumber},
		{"1.2.3", 0, 0, errNotNumber},
		{"0x10", 0, 0, errNotNumber},
		{" 1", 0, 0, errNotNumber},
	} {
		got, err := parseDecimal([]byte(c.in), c.scale)
		if got != c.want || err != c.err {
			t.Errorf("%q scale %d: %d %v, want %d %v", c.in, c.scale, got, err, c.want, c.err)
		}
	}
}

func TestParseTemporal(t *testing.T) {
	for _, c := range []struct {
		in   string
		k    Kind
		want int64
		ok   bool
	}{
		{"2024-02-29", Date, 19782, true},
		{"1969-12-31", Date, -1, true},
		{"0001-01-01", Date, -719162, true},
		{"2023-02-29", Date, 0, false},
		{"2024-2-29", Date, 0, false},
		{"2024-02-29T00:00", Date, 0, false},
		{"13:14", Time, 47640000, true},
		{"13:14:15", Time, 47655000, true},
		{"13:14:15.1", Time, 47655100, true},
		{"13:14:15.123456789", Time, 47655123, true},
		{"13:14:15.", Time, 0, false},
		{"13:60", Time, 0, false},
		{"1:14", Time, 0, false},
		{"-1", Time, 0, false},
		{"2024-02-29T13:14:15.123", Timestamp, 1709212455123, true},
		{"2024-02-29 13:14:15.123Z", Timestamp, 1709212455123, true},
		{"2024-02-29T14:14:15.123+01:00", Timestamp, 1709212455123, true},
		{"2024-02-29T12:14:15.123-0100", Timestamp, 1709212455123, true},
		{"2024-02-29T15:14:15.123+02", Timestamp, 1709212455123, true},
		{"2024-02-29T13:14", Timestamp, 1709212440000, true},
		{"2024-02-29", Timestamp, 1709164800000, true},
		{"1709212455123", Timestamp, 1709212455123, true},
		{"-5", Timestamp, -5, true},
		{"2024-02-29T", Timestamp, 0, false},
		{"2024-02-29T13:14:15+1", Timestamp, 0, false},
		{"2024-02-29T13:14:15 ", Timestamp, 0, false},
	} {
		got, err := parseTemporal([]byte(c.in), c.k)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%s %q: %d %v, want %d ok=%v", c.k, c.in, got, err, c.want, c.ok)
		}
	}
	// The civil calendar conversions agree with each other across 800 years.
	for d := int64(-146097 * 2); d < 146097*2; d += 7 {
		y, m, dd := CivilFromDays(d)
		if DaysFromCivil(y, m, dd) != d || m < 1 || m > 12 || dd < 1 || dd > daysIn(y, m) {
			t.Fatalf("day %d: %d-%d-%d", d, y, m, dd)
		}
	}
}

// TestFlatDecodersDoNotAllocate pins the steady-state rule of DESIGN.md.
func TestFlatDecodersDoNotAllocate(t *testing.T) {
	s, cols := flatSchema(every)
	full := everyRow()
	in := make(Row, len(s.Columns))
	for i, c := range s.Columns {
		in[i] = full[every.Index(c.Name)]
	}
	for _, f := range []string{FormatJSON, FormatDelimited} {
		enc, _ := NewEncoder(f, s, cols)
		dec, _ := NewDecoder(f, s, cols)
		b, _ := enc.Encode(nil, in)
		row := make(Row, len(in))
		var buf []byte
		allocs := testing.AllocsPerRun(200, func() {
			if err := dec.Decode(b, row); err != nil {
				t.Fatal(err)
			}
			buf, _ = enc.Encode(buf[:0], row)
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per record", f, allocs)
		}
	}
}
