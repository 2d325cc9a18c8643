package types_test

import (
	"errors"
	"testing"

	. "github.com/sqlstreams/sqlstreams/types"
)

// fuzzRegistryDecode feeds arbitrary bytes to a decoder of format over
// everyAvro: it must never panic, and every error must be a bad record
// (the schema IDs it meets are either registered or unknown).
func fuzzRegistryDecode(f *testing.F, format string) {
	reg := startRegistry(f)
	cols := everyAvro.ValueIndexes()
	o := FormatOptions{Schemas: reg, Subject: "fuzz-value"}
	enc, err := NewEncoderOpts(format, everyAvro, cols, o)
	if err != nil {
		f.Fatal(err)
	}
	good, err := enc.Encode(nil, protoRow())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{0, 0, 0, 0, 1})
	f.Add([]byte{0, 0, 0, 0, 9, 0, 2})
	dec, err := NewDecoderOpts(format, everyAvro, cols, o)
	if err != nil {
		f.Fatal(err)
	}
	row := make(Row, everyAvro.Len())
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := dec.Decode(data, row); err != nil && !errors.Is(err, ErrBadRecord) {
			t.Fatalf("%x: %v is not a bad record", data, err)
		}
	})
}

func FuzzAvroDecode(f *testing.F)     { fuzzRegistryDecode(f, FormatAvro) }
func FuzzProtobufDecode(f *testing.F) { fuzzRegistryDecode(f, FormatProtobuf) }
