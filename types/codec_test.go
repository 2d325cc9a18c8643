package types

import (
	"errors"
	"math"
	"testing"
)

var pageviews = Schema{Columns: []Column{
	{Name: "USERID", Type: StringType, Key: true},
	{Name: "PAGEID", Type: StringType},
	{Name: "VIEWTIME", Type: BigintType},
	{Name: "SCORE", Type: DoubleType},
	{Name: "OK", Type: BooleanType},
	{Name: "SMALL", Type: IntType},
}}

func TestJSONDecode(t *testing.T) {
	dec, err := NewDecoder(FormatJSON, pageviews, pageviews.ValueIndexes())
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, pageviews.Len())
	row[0] = StringDatum("key stays")
	// Field names match case-insensitively; unknown fields are skipped;
	// missing ones are NULL; numbers read into STRING keep their text.
	if err := dec.Decode([]byte(`{"pageId":"ca\"rt","ViewTime":42,"extra":{"x":[1,2]},"ok":true,"small":-7,"score":null}`), row); err != nil {
		t.Fatal(err)
	}
	got := []string{Text(row[0], StringType), Text(row[1], StringType), Text(row[2], BigintType), Text(row[3], DoubleType), Text(row[4], BooleanType), Text(row[5], IntType)}
	want := []string{"key stays", `ca"rt`, "42", "NULL", "true", "-7"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("column %d: got %q, want %q", i, got[i], want[i])
		}
	}
	if err := dec.Decode([]byte(`{"PAGEID":12.50}`), row); err != nil || string(row[1].B) != "12.50" || !row[2].Null {
		t.Errorf("number into STRING: %v %q null=%v", err, row[1].B, row[2].Null)
	}
}

func TestJSONBadRecords(t *testing.T) {
	dec, err := NewDecoder(FormatJSON, pageviews, pageviews.ValueIndexes())
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, pageviews.Len())
	for _, in := range []string{
		`not json`, `[1,2]`, `"str"`, `{"VIEWTIME":"x"}`, `{"VIEWTIME":1.5}`,
		`{"SMALL":3000000000}`, `{"OK":"yes"}`, `{"SCORE":"one"}`, `{"SCORE":[1]}`, `{"PAGEID":"x"`, ``,
	} {
		if err := dec.Decode([]byte(in), row); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: got %v, want a bad record", in, err)
		}
	}
}

func TestJSONEncode(t *testing.T) {
	enc, err := NewEncoder(FormatJSON, pageviews, pageviews.ValueIndexes())
	if err != nil {
		t.Fatal(err)
	}
	row := Row{StringDatum("u1"), StringDatum("a\"b\\c\n\x01é"), IntDatum(-5), DoubleDatum(20), BoolDatum(false), NullDatum}
	got, err := enc.Encode([]byte("prefix:"), row)
	if err != nil {
		t.Fatal(err)
	}
	want := `prefix:{"PAGEID":"a\"b\\c\n\u0001é","VIEWTIME":-5,"SCORE":20.0,"OK":false,"SMALL":null}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	row[3] = DoubleDatum(math.NaN())
	if got, _ := enc.Encode(nil, row); string(got) != `{"PAGEID":"a\"b\\c\n\u0001é","VIEWTIME":-5,"SCORE":"NaN","OK":false,"SMALL":null}` {
		t.Errorf("NaN: %s", got)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	enc, _ := NewEncoder(FormatJSON, pageviews, pageviews.ValueIndexes())
	dec, _ := NewDecoder(FormatJSON, pageviews, pageviews.ValueIndexes())
	in := Row{NullDatum, StringDatum("héllo \"w\"\t"), IntDatum(math.MinInt64), DoubleDatum(-1.25e-7), BoolDatum(true), IntDatum(math.MaxInt32)}
	b, err := enc.Encode(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	out := make(Row, len(in))
	if err := dec.Decode(b, out); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(in); i++ {
		ty := pageviews.Columns[i].Type
		if Text(in[i], ty) != Text(out[i], ty) {
			t.Errorf("column %d: %s became %s", i, Text(in[i], ty), Text(out[i], ty))
		}
	}
}

// TestKafkaFormat checks the byte layouts of Kafka's Java serializers.
func TestKafkaFormat(t *testing.T) {
	for _, c := range []struct {
		t     Type
		d     Datum
		bytes string
	}{
		{StringType, StringDatum("u1"), "u1"},
		{IntType, IntDatum(-2), "\xff\xff\xff\xfe"},
		{BigintType, IntDatum(258), "\x00\x00\x00\x00\x00\x00\x01\x02"},
		{DoubleType, DoubleDatum(1), "\x3f\xf0\x00\x00\x00\x00\x00\x00"},
	} {
		s := Schema{Columns: []Column{{Name: "K", Type: c.t, Key: true}}}
		enc, err := NewEncoder(FormatKafka, s, []int{0})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := enc.Encode(nil, Row{c.d})
		if string(b) != c.bytes {
			t.Errorf("%s: encoded %x, want %x", c.t, b, c.bytes)
		}
		dec, _ := NewDecoder(FormatKafka, s, []int{0})
		row := make(Row, 1)
		if err := dec.Decode(b, row); err != nil || Text(row[0], c.t) != Text(c.d, c.t) {
			t.Errorf("%s: decoded %s (%v)", c.t, Text(row[0], c.t), err)
		}
		if c.t.Kind != String {
			if err := dec.Decode([]byte("xyz"), row); !errors.Is(err, ErrBadRecord) {
				t.Errorf("%s: short input: %v", c.t, err)
			}
		}
		if err := dec.Decode(nil, row); err != nil || !row[0].Null {
			t.Errorf("%s: nil key should be NULL", c.t)
		}
	}
	if _, err := NewDecoder(FormatKafka, pageviews, []int{1, 2}); err == nil {
		t.Error("KAFKA format accepted two columns")
	}
}
