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

// bid is a Nexmark Bid as `sqlstreams datagen nexmark` writes it.
var bid = []byte(`{"auction":1007,"bidder":2001,"price":43219,"channel":"Google","url":"https://www.nexmark.com/jchs/gmp/item.htm?query=1&channel_id=1509949440","dateTime":1700000000123,"extra":"jjjnqqvmhtwqhlnpwqfivvusnxmjqfchevfyvmhtqvkjsyvryshmhqgybeqjqwemthmrsrcvqoqrgcuqnpvwhnxqwqffjnjcqhxyhxymvzlwudyfeeurfrbirpzigmyfxtoxgkfcikjgrtmkynlgytogitqihrywjqjxhbtljmqsjfqfohjbijvrfbynkirw"}`)

var bids = Schema{Columns: []Column{
	{Name: "AUCTION", Type: BigintType, Key: true},
	{Name: "BIDDER", Type: BigintType},
	{Name: "PRICE", Type: BigintType},
	{Name: "CHANNEL", Type: StringType},
	{Name: "URL", Type: StringType},
	{Name: "DATETIME", Type: BigintType},
	{Name: "EXTRA", Type: StringType},
}}

// BenchmarkJSONDecodeBid decodes every column of a Bid.
func BenchmarkJSONDecodeBid(b *testing.B) {
	dec, _ := NewDecoder(FormatJSON, bids, bids.ValueIndexes())
	benchDecode(b, dec, bid, bids.Len())
}

// BenchmarkJSONDecodeBidRead decodes the three columns Nexmark q1/q2
// read (bidder, price, channel) and steps over the others.
func BenchmarkJSONDecodeBidRead(b *testing.B) {
	dec, _ := NewDecoderRead(FormatJSON, bids, bids.ValueIndexes(), []bool{false, true, true, true, false, false, false}, FormatOptions{})
	benchDecode(b, dec, bid, bids.Len())
}
