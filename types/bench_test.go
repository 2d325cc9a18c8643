package types

import "testing"

var sink []byte

// flatRecord is a ~150-byte JSON value of pageviews with one field the
// schema does not declare.
var flatRecord = []byte(`{"PAGEID":"page_42","VIEWTIME":1700000000123,"SCORE":3.25,"OK":true,"SMALL":12,"IGNORED":"some other text here","MORE":[1,2,3],"REF":"https://ex.io/p"}`)

func benchDecode(b *testing.B, dec Decoder, in []byte, n int) {
	row := make(Row, n)
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for i := 0; i < b.N; i++ {
		if err := dec.Decode(in, row); err != nil {
			b.Fatal(err)
		}
	}
}

func benchEncode(b *testing.B, enc Encoder, row Row) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		sink, _ = enc.Encode(sink[:0], row)
	}
	b.SetBytes(int64(len(sink)))
}

func pageviewsRow() Row {
	return Row{StringDatum("u1"), StringDatum("page_42"), IntDatum(1700000000123), DoubleDatum(3.25), BoolDatum(true), IntDatum(12)}
}

func BenchmarkJSONDecode(b *testing.B) {
	dec, _ := NewDecoder(FormatJSON, pageviews, pageviews.ValueIndexes())
	benchDecode(b, dec, flatRecord, pageviews.Len())
}

func BenchmarkJSONEncode(b *testing.B) {
	enc, _ := NewEncoder(FormatJSON, pageviews, pageviews.ValueIndexes())
	benchEncode(b, enc, pageviewsRow())
}

// BenchmarkJSONDecodeEveryType decodes a record with a column of every
// type, nested composites included.
func BenchmarkJSONDecodeEveryType(b *testing.B) {
	enc, _ := NewEncoder(FormatJSON, every, every.ValueIndexes())
	in, _ := enc.Encode(nil, everyRow())
	dec, _ := NewDecoder(FormatJSON, every, every.ValueIndexes())
	benchDecode(b, dec, in, every.Len())
}

func BenchmarkJSONEncodeEveryType(b *testing.B) {
	enc, _ := NewEncoder(FormatJSON, every, every.ValueIndexes())
	benchEncode(b, enc, everyRow())
}

func BenchmarkDelimitedDecode(b *testing.B) {
	dec, _ := NewDecoder(FormatDelimited, pageviews, pageviews.ValueIndexes())
	benchDecode(b, dec, []byte(`page_42,1700000000123,3.25,true,12`), pageviews.Len())
}

func BenchmarkDelimitedEncode(b *testing.B) {
	enc, _ := NewEncoder(FormatDelimited, pageviews, pageviews.ValueIndexes())
	benchEncode(b, enc, pageviewsRow())
}

// BenchmarkDelimitedDecodeEveryScalar decodes every scalar type, a quoted
// string with doubled quotes and base64 bytes included.
func BenchmarkDelimitedDecodeEveryScalar(b *testing.B) {
	s, cols := flatSchema(every)
	full := everyRow()
	row := make(Row, len(s.Columns))
	for i, c := range s.Columns {
		row[i] = full[every.Index(c.Name)]
	}
	enc, _ := NewEncoder(FormatDelimited, s, cols)
	in, _ := enc.Encode(nil, row)
	dec, _ := NewDecoder(FormatDelimited, s, cols)
	benchDecode(b, dec, in, len(row))
}

func BenchmarkKafkaDecode(b *testing.B) {
	s := Schema{Columns: []Column{{Name: "K", Type: BigintType, Key: true}}}
	dec, _ := NewDecoder(FormatKafka, s, []int{0})
	benchDecode(b, dec, []byte("\x00\x00\x01\x8b\xcf\xe5\x68\x7b"), 1)
}
