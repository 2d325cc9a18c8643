package types

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzJSONDecode feeds arbitrary bytes to the JSON decoders of a schema
// with every type, wrapped and unwrapped. Decoding must never panic, and a
// record that decodes must survive encode → decode → encode unchanged.
func FuzzJSONDecode(f *testing.F) {
	enc, _ := NewEncoder(FormatJSON, every, every.ValueIndexes())
	good, _ := enc.Encode(nil, everyRow())
	for _, s := range []string{
		string(good), `{}`, `null`, `[]`, `{"ADDRESS":{"TAGS":[{"V":[1,"x"]}]}}`, `{"M":{"a":1,"a":2}}`,
		`{"DEC":"1e-3","TS":"2024-02-29T13:14:15.123+01:00","DT":"2024-02-29","TM":"13:14"}`,
		`{"S":{"x":[1,{"y":null}]},"BY":"AAH","I":"12","D":"NaN"}`, `42`, `"\ud83d\ude00"`, "\x00\x00\x00\x00\x01{}",
	} {
		f.Add([]byte(s))
	}
	type codec struct {
		dec Decoder
		enc Encoder
	}
	var codecs []codec
	add := func(cols []int, o FormatOptions) {
		d, err := NewDecoderOpts(FormatJSON, every, cols, o)
		if err != nil {
			f.Fatal(err)
		}
		e, _ := NewEncoderOpts(FormatJSON, every, cols, o)
		codecs = append(codecs, codec{d, e})
	}
	add(every.ValueIndexes(), FormatOptions{})
	add([]int{13}, FormatOptions{WrapSingleValue: ptr(false)})
	add([]int{12}, FormatOptions{WrapSingleValue: ptr(false)})
	add([]int{0}, FormatOptions{}) // a single key: unwrapped
	// A reader of every other column must not panic either.
	read := make([]bool, every.Len())
	for i := range read {
		read[i] = i%2 == 0
	}
	partial, err := NewDecoderRead(FormatJSON, every, every.ValueIndexes(), read, FormatOptions{})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range codecs {
			checkRoundTrip(t, c.dec, c.enc, data)
		}
		_ = partial.Decode(data, make(Row, every.Len()))
	})
}

// FuzzDelimitedDecode does the same for DELIMITED with every scalar type,
// with ',' and with a multi-byte delimiter.
func FuzzDelimitedDecode(f *testing.F) {
	s, cols := flatSchema(every)
	full := everyRow()
	in := make(Row, len(s.Columns))
	for i, c := range s.Columns {
		in[i] = full[every.Index(c.Name)]
	}
	enc, _ := NewEncoder(FormatDelimited, s, cols)
	good, _ := enc.Encode(nil, in)
	for _, x := range []string{
		string(good), ",,,,,,,,,,", `1,true,2,3,4.5,6.7,"a""b",AAE=,2024-02-29,13:14,2024-02-29T13:14:15Z` + "\r\n",
		`"`, `""`, `"a"b`, "a\nb", ",,,,,,,,,,\n", `1,TRUE,-0,0,-0,0.00,"",,0,0,0`,
	} {
		f.Add([]byte(x))
	}
	var decs []Decoder
	var encs []Encoder
	for _, d := range []rune{',', '€', ' '} {
		dec, err := NewDecoderOpts(FormatDelimited, s, cols, FormatOptions{Delimiter: d})
		if err != nil {
			f.Fatal(err)
		}
		decs = append(decs, dec)
		encs = append(encs, dec.(Encoder))
	}
	one := Schema{Columns: []Column{{Name: "S", Type: StringType}}}
	dec1, _ := NewDecoder(FormatDelimited, one, []int{0})
	decs = append(decs, dec1)
	encs = append(encs, dec1.(Encoder))
	f.Fuzz(func(t *testing.T, data []byte) {
		for i := range decs {
			checkRoundTrip(t, decs[i], encs[i], data)
		}
	})
}

// checkRoundTrip decodes data; when that works, the encoding of the row
// must decode again to a row with the same encoding.
func checkRoundTrip(t *testing.T, dec Decoder, enc Encoder, data []byte) {
	row := make(Row, every.Len())
	if err := dec.Decode(data, row); err != nil {
		return
	}
	e1, err := enc.Encode(nil, row)
	if err != nil {
		t.Fatalf("%q: encode: %v", data, err)
	}
	row2 := make(Row, every.Len())
	if err := dec.Decode(e1, row2); err != nil {
		t.Fatalf("%q: re-encoded as %q, which does not decode: %v", data, e1, err)
	}
	e2, _ := enc.Encode(nil, row2)
	if !bytes.Equal(e1, e2) {
		t.Fatalf("%q: encodes as %q, then as %q", data, e1, e2)
	}
}

// FuzzJSONScan checks the scanner the JSON decoder steps over fields with
// against encoding/json: both must agree on what is valid JSON.
func FuzzJSONScan(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-0.5e+3,"x\u00e9\n",true,false,null,{}]}`, `01`, `-`, `1.`, `1e`, `"\x"`, `"\u12"`, `"a\"b\\"`, `"\\\""`,
		`{"a" 1}`, `{"a":1,}`, `[1,]`, ` [ ] `, `{"a":1} {}`, `tru`, `nul`, `"\ud800"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range data {
			if c < 0x20 {
				t.Skip("the scanner lets control characters in strings through")
			}
		}
		i := skipWS(data, 0)
		_, end, _, err := scanValue(data, i, 0)
		if err == nil {
			err = trailing(data, end)
		}
		if got, want := err == nil, json.Valid(data); got != want {
			t.Fatalf("%q: scanner says valid=%v (%v), encoding/json %v", data, got, err, want)
		}
	})
}
