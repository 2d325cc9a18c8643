package types_test

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/registry"
	. "github.com/sqlstreams/sqlstreams/types"
)

// The AVRO tests run against the embedded registry over real HTTP, on an
// in-memory broker; writer data comes from twmb/avro's own encoder.

func startRegistry(tb testing.TB) *registry.Client {
	tb.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	reg, err := registry.Open(context.Background(), registry.Config{Kafka: kafka.Plain(c.ListenAddrs()...), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(reg.Close)
	srv := httptest.NewServer(reg.Handler())
	tb.Cleanup(srv.Close)
	cl, err := registry.NewClient(registry.ClientConfig{URL: srv.URL})
	if err != nil {
		tb.Fatal(err)
	}
	return cl
}

func structT(f ...Field) Type { return Type{Kind: Struct, Fields: f} }
func arrayT(t Type) Type      { return Type{Kind: Array, Elem: &t} }
func mapT(k, v Type) Type     { return Type{Kind: Map, KeyType: &k, Elem: &v} }
func listD(d ...Datum) Datum  { return Datum{L: d} }

var everyAvro = Schema{Columns: []Column{
	{Name: "ID", Type: BigintType, Key: true},
	{Name: "B", Type: BooleanType},
	{Name: "I", Type: IntType},
	{Name: "L", Type: BigintType},
	{Name: "D", Type: DoubleType},
	{Name: "DEC", Type: Type{Kind: Decimal, Precision: 6, Scale: 2}},
	{Name: "S", Type: StringType},
	{Name: "BY", Type: BytesType},
	{Name: "DT", Type: DateType},
	{Name: "TM", Type: TimeType},
	{Name: "TS", Type: TimestampType},
	{Name: "ARR", Type: arrayT(IntType)},
	{Name: "M", Type: mapT(StringType, DoubleType)},
	{Name: "ADDRESS", Type: structT(
		Field{Name: "ZIP", Type: IntType},
		Field{Name: "CITY", Type: StringType},
		Field{Name: "TAGS", Type: arrayT(structT(Field{Name: "K", Type: StringType}, Field{Name: "V", Type: arrayT(BigintType)}))},
	)},
}}

func everyAvroRow() Row {
	return Row{
		IntDatum(7), BoolDatum(true), IntDatum(math.MinInt32), IntDatum(math.MaxInt64),
		DoubleDatum(-1.25e-7), IntDatum(-123456), StringDatum("héllo"), {B: []byte{0, 1, 0xfe, 0xff}},
		IntDatum(19782), IntDatum(47655123), IntDatum(1709212455123),
		listD(IntDatum(1), NullDatum, IntDatum(-3)),
		listD(StringDatum("a"), DoubleDatum(1.5), StringDatum("b"), NullDatum),
		listD(IntDatum(94107), StringDatum("SF"), listD(
			listD(StringDatum("k1"), listD(IntDatum(1), IntDatum(2))),
			listD(StringDatum("k2"), NullDatum),
		)),
	}
}

func sameText(t *testing.T, s Schema, cols []int, got, want Row) {
	t.Helper()
	for _, c := range cols {
		ty := s.Columns[c].Type
		if g, w := Text(got[c], ty), Text(want[c], ty); g != w || got[c].Null != want[c].Null {
			t.Errorf("column %s: got %s, want %s", s.Columns[c].Name, g, w)
		}
	}
}

// TestAvroRoundTripEveryType writes a row of every type, checks that
// twmb/avro reads the bytes with the schema the encoder registered under
// the subject, and reads them back.
func TestAvroRoundTripEveryType(t *testing.T) {
	reg := startRegistry(t)
	cols := everyAvro.ValueIndexes()
	o := FormatOptions{Schemas: reg, Subject: "every-value"}
	enc, err := NewEncoderOpts(FormatAvro, everyAvro, cols, o)
	if err != nil {
		t.Fatal(err)
	}
	want := everyAvroRow()
	out, err := enc.Encode(nil, want)
	if err != nil {
		t.Fatal(err)
	}
	id, latest, err := reg.Latest("every-value")
	if err != nil {
		t.Fatal(err)
	}
	var h sr.ConfluentHeader
	gotID, payload, err := h.DecodeID(out)
	if err != nil || gotID != id {
		t.Fatalf("header: ID %d, %v; the subject's latest is %d", gotID, err, id)
	}
	for _, frag := range []string{`"name":"io.confluent.ksql.avro_schemas.KsqlDataSourceSchema"`,
		`{"logicalType":"decimal","precision":6,"scale":2,"type":"bytes"}`, `"logicalType":"timestamp-millis"`,
		`"name":"io.confluent.ksql.avro_schemas.KsqlDataSourceSchema_ADDRESS"`, `{"name":"S","type":["null","string"],"default":null}`} {
		if !strings.Contains(latest.Text, frag) {
			t.Errorf("registered schema lacks %s:\n%s", frag, latest.Text)
		}
	}
	sch, err := avro.Parse(latest.Text)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := unmarshal(sch, payload, &m); err != nil {
		t.Fatalf("twmb/avro cannot read what the encoder wrote: %v", err)
	}
	arr, _ := union(m["ARR"]).([]any)
	if union(m["S"]) != "héllo" || union(m["L"]) != int64(math.MaxInt64) || len(arr) != 3 || fmt.Sprint(arr[2]) != "-3" || fmt.Sprint(m["DEC"]) != "-30864/25" {
		t.Errorf("twmb/avro read %v", m)
	}
	dec, err := NewDecoderOpts(FormatAvro, everyAvro, cols, o)
	if err != nil {
		t.Fatal(err)
	}
	got := make(Row, everyAvro.Len())
	for range 2 { // the second decode reuses the row's slices
		if err := dec.Decode(out, got); err != nil {
			t.Fatal(err)
		}
		sameText(t, everyAvro, cols, got, want)
	}
	nulls := make(Row, everyAvro.Len())
	for i := range nulls {
		nulls[i] = NullDatum
	}
	out, err = enc.Encode(nil, nulls)
	if err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(out, got); err != nil {
		t.Fatal(err)
	}
	sameText(t, everyAvro, cols, got, nulls)
}

// TestAvroDoesNotAllocate pins the steady-state rule of DESIGN.md for
// AVRO: once a writer schema's plan is made, reading a record of every
// type into a reused row, and writing it, allocate nothing; nor does
// stepping over writer fields no column reads.
func TestAvroDoesNotAllocate(t *testing.T) {
	reg := startRegistry(t)
	cols := everyAvro.ValueIndexes()
	o := FormatOptions{Schemas: reg, Subject: "every-value"}
	enc, err := NewEncoderOpts(FormatAvro, everyAvro, cols, o)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewDecoderOpts(FormatAvro, everyAvro, cols, o)
	if err != nil {
		t.Fatal(err)
	}
	in := everyAvroRow()
	b, err := enc.Encode(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, everyAvro.Len())
	if err := dec.Decode(b, row); err != nil {
		t.Fatal(err)
	}
	var buf []byte
	allocs := testing.AllocsPerRun(200, func() {
		if err := dec.Decode(b, row); err != nil {
			t.Fatal(err)
		}
		if buf, err = enc.Encode(buf[:0], row); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("every type: %.1f allocations per record", allocs)
	}

	ucols := users.ValueIndexes()
	udec, err := NewDecoderOpts(FormatAvro, users, ucols, FormatOptions{Schemas: reg})
	if err != nil {
		t.Fatal(err)
	}
	rec := writerRecord(t, reg, "skip-value",
		`{"type":"record","name":"u","fields":[{"name":"extra","type":{"type":"array","items":{"type":"map","values":["null","string"]}}},{"name":"id","type":"long"},{"name":"f","type":{"type":"fixed","name":"F","size":3}},{"name":"name","type":"string"},{"name":"r","type":{"type":"record","name":"R","fields":[{"name":"x","type":"double"},{"name":"y","type":"boolean"}]}}]}`,
		map[string]any{"extra": []any{map[string]any{"a": "b", "c": nil}}, "id": int64(2), "f": []byte("abc"), "name": "bob", "r": map[string]any{"x": 1.5, "y": true}})
	urow := make(Row, users.Len())
	allocs = testing.AllocsPerRun(200, func() {
		if err := udec.Decode(rec, urow); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("skipping writer fields: %.1f allocations per record", allocs)
	}
	if got := Text(urow[0], BigintType) + "|" + Text(urow[1], StringType); got != "2|bob" {
		t.Errorf("read %s, want 2|bob", got)
	}
}

// union unwraps the tagged form of a union value, {"type": v}, that some
// Avro libraries decode into; twmb/avro decodes the value itself.
func union(v any) any {
	if m, ok := v.(map[string]any); ok && len(m) == 1 {
		for _, x := range m {
			return x
		}
	}
	return v
}

// writerRecord registers writer under subject and returns v encoded with
// it by twmb/avro, behind the Confluent header.
func writerRecord(t testing.TB, reg *registry.Client, subject, writer string, v any) []byte {
	t.Helper()
	id, err := reg.Register(subject, RegisteredSchema{Type: SchemaTypeAvro, Text: writer})
	if err != nil {
		t.Fatalf("registering %s: %v", writer, err)
	}
	sch, err := avro.Parse(writer)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := sch.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	var h sr.ConfluentHeader
	out, _ := h.AppendEncode(nil, id, nil)
	return append(out, payload...)
}

var users = Schema{Columns: []Column{
	{Name: "ID", Type: BigintType},
	{Name: "NAME", Type: StringType},
	{Name: "EMAIL", Type: StringType},
	{Name: "SCORE", Type: DoubleType},
}}

// TestAvroSchemaEvolution reads records written with other writer schemas
// than the columns: Avro schema resolution, as ksqlDB reads evolving
// topics.
func TestAvroSchemaEvolution(t *testing.T) {
	reg := startRegistry(t)
	cols := users.ValueIndexes()
	dec, err := NewDecoderOpts(FormatAvro, users, cols, FormatOptions{Schemas: reg})
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, users.Len())
	cases := []struct {
		name, writer string
		v            any
		want         string // ID|NAME|EMAIL|SCORE
	}{
		{"older writer without a column (added later with a default)",
			`{"type":"record","name":"u","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`,
			map[string]any{"id": int64(1), "name": "ann"}, "1|ann|NULL|NULL"},
		{"newer writer with a field no column has (removed), before the others",
			`{"type":"record","name":"u","fields":[{"name":"extra","type":{"type":"array","items":{"type":"map","values":"string"}}},{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"email","type":["null","string"],"default":null}]}`,
			map[string]any{"extra": []any{map[string]any{"a": "b"}}, "id": int64(2), "name": "bob", "email": "b@x"}, "2|bob|b@x|NULL"},
		{"renamed field whose alias is the column",
			`{"type":"record","name":"u","fields":[{"name":"id","type":"long"},{"name":"full_name","aliases":["name"],"type":"string"}]}`,
			map[string]any{"id": int64(3), "full_name": "cy"}, "3|cy|NULL|NULL"},
		{"types widened: int to BIGINT, float to DOUBLE, bytes to STRING",
			`{"type":"record","name":"u","fields":[{"name":"id","type":"int"},{"name":"name","type":"bytes"},{"name":"score","type":"float"}]}`,
			map[string]any{"id": int32(4), "name": []byte("dee"), "score": float32(2.5)}, "4|dee|NULL|2.5"},
		{"enum read as STRING",
			`{"type":"record","name":"u","fields":[{"name":"id","type":"long"},{"name":"name","type":{"type":"enum","name":"N","symbols":["X","Y"]}}]}`,
			map[string]any{"id": int64(5), "name": "Y"}, "5|Y|NULL|NULL"},
		{"a recursive writer record, its recursive field stepped over",
			`{"type":"record","name":"u","namespace":"n","fields":[{"name":"id","type":"long"},{"name":"next","type":["null","u"]},{"name":"name","type":"string"}]}`,
			map[string]any{"id": int64(6), "next": map[string]any{"id": int64(7), "next": map[string]any{"id": int64(8), "next": nil, "name": "z"}, "name": "y"}, "name": "eve"}, "6|eve|NULL|NULL"},
	}
	for _, c := range cases {
		rec := writerRecord(t, reg, "evolve-"+c.name, c.writer, c.v)
		if err := dec.Decode(rec, row); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		var got []string
		for i, col := range users.Columns {
			got = append(got, Text(row[i], col.Type))
		}
		if g := strings.Join(got, "|"); g != c.want {
			t.Errorf("%s: got %s, want %s", c.name, g, c.want)
		}
	}
}

// TestAvroBadRecords: records that cannot be read are bad records (skipped
// and counted by the source), never a panic, and say which schema ID.
func TestAvroBadRecords(t *testing.T) {
	reg := startRegistry(t)
	cols := users.ValueIndexes()
	dec, err := NewDecoderOpts(FormatAvro, users, cols, FormatOptions{Schemas: reg})
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, users.Len())
	good := writerRecord(t, reg, "u-value",
		`{"type":"record","name":"u","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`,
		map[string]any{"id": int64(1), "name": "a fairly long name"})
	incompatible := writerRecord(t, reg, "other-value",
		`{"type":"record","name":"u","fields":[{"name":"id","type":"string"}]}`, map[string]any{"id": "x"})
	unknownID := append([]byte{0, 0, 0, 0x30, 0x39}, good[5:]...)
	cases := map[string]struct {
		data []byte
		want string
	}{
		"unknown schema ID":          {unknownID, "schema ID 12345"},
		"truncated payload":          {good[:len(good)-4], "schema ID 1"},
		"header only":                {good[:5], "schema ID 1"},
		"no magic byte":              {[]byte(`{"ID":1}`), "wire format"},
		"shorter than a header":      {[]byte{0, 0, 1}, "wire format"},
		"incompatible writer":        {incompatible, "schema ID 2 cannot be read"},
		"string length past the end": {append(append([]byte{}, good[:6]...), 0x7e, 'x'), "schema ID 1"},
	}
	for name, c := range cases {
		err := dec.Decode(c.data, row)
		if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want a bad record mentioning %q", name, err, c.want)
		}
	}
	if err := dec.Decode(good, row); err != nil || Text(row[1], StringType) != "a fairly long name" {
		t.Fatalf("a good record after bad ones: %v %s", err, Text(row[1], StringType))
	}
}

// TestAvroSchemaIDAndFullName: VALUE_SCHEMA_ID writes with an existing
// schema (its field order, its nullable and non-null fields), and
// VALUE_AVRO_SCHEMA_FULL_NAME names the registered record.
func TestAvroSchemaIDAndFullName(t *testing.T) {
	reg := startRegistry(t)
	cols := users.ValueIndexes()
	existing := `{"type":"record","name":"com.acme.User","fields":[{"name":"score","type":"double"},{"name":"id","type":"long"},{"name":"name","type":["null","string"]},{"name":"email","type":["null","string"]}]}`
	id, err := reg.Register("given-value", RegisteredSchema{Type: SchemaTypeAvro, Text: existing})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := NewEncoderOpts(FormatAvro, users, cols, FormatOptions{Schemas: reg, SchemaID: id})
	if err != nil {
		t.Fatal(err)
	}
	out, err := enc.Encode(nil, Row{IntDatum(9), StringDatum("zed"), NullDatum, DoubleDatum(1.5)})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := unmarshal(avro.MustParse(existing), out[5:], &m); err != nil {
		t.Fatal(err)
	}
	if m["score"] != 1.5 || m["id"] != int64(9) || union(m["name"]) != "zed" || m["email"] != nil {
		t.Errorf("written with schema %d, twmb/avro reads %v", id, m)
	}
	if _, err := enc.Encode(nil, Row{IntDatum(9), StringDatum("zed"), NullDatum, NullDatum}); err == nil {
		t.Errorf("a NULL for the non-null field score was written")
	}

	named, err := NewEncoderOpts(FormatAvro, users, cols, FormatOptions{Schemas: reg, Subject: "named-value", FullName: "com.acme.Named"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := named.Encode(nil, Row{IntDatum(1), NullDatum, NullDatum, NullDatum}); err != nil {
		t.Fatal(err)
	}
	_, s, err := reg.Latest("named-value")
	if err != nil || !strings.Contains(s.Text, `"name":"com.acme.Named"`) {
		t.Errorf("schema under named-value: %s, %v", s.Text, err)
	}
}

// TestAvroUnwrappedSingleValue: WRAP_SINGLE_VALUE=false writes the one
// column as the whole value.
func TestAvroUnwrappedSingleValue(t *testing.T) {
	reg := startRegistry(t)
	s := Schema{Columns: []Column{{Name: "V", Type: BigintType}}}
	f := false
	o := FormatOptions{Schemas: reg, Subject: "single-value", WrapSingleValue: &f}
	enc, err := NewEncoderOpts(FormatAvro, s, []int{0}, o)
	if err != nil {
		t.Fatal(err)
	}
	out, err := enc.Encode(nil, Row{IntDatum(42)})
	if err != nil {
		t.Fatal(err)
	}
	_, latest, _ := reg.Latest("single-value")
	if latest.Text != `["null","long"]` {
		t.Errorf("unwrapped schema %s", latest.Text)
	}
	dec, _ := NewDecoderOpts(FormatAvro, s, []int{0}, o)
	row := make(Row, 1)
	if err := dec.Decode(out, row); err != nil || row[0].I != 42 {
		t.Errorf("read back %v, %v", row[0], err)
	}
	if _, err := NewDecoderOpts(FormatAvro, users, users.ValueIndexes(), o); err == nil {
		t.Errorf("WRAP_SINGLE_VALUE=false with four columns was accepted")
	}
	if _, err := NewDecoderOpts(FormatAvro, Schema{Columns: []Column{{Name: "M", Type: mapT(IntType, IntType)}}}, []int{0}, FormatOptions{}); err == nil {
		t.Errorf("a MAP with INT keys was accepted")
	}
}

// bench is the pageviews-like record of the JSON benchmarks.
var benchSchema = Schema{Columns: []Column{
	{Name: "USERID", Type: StringType, Key: true},
	{Name: "PAGEID", Type: StringType},
	{Name: "VIEWTIME", Type: BigintType},
	{Name: "SCORE", Type: DoubleType},
	{Name: "OK", Type: BooleanType},
	{Name: "SMALL", Type: IntType},
}}

func benchRow() Row {
	return Row{StringDatum("u1"), StringDatum("page_42"), IntDatum(1700000000123), DoubleDatum(3.25), BoolDatum(true), IntDatum(12)}
}

func benchCodec(b *testing.B, format string, decode bool) {
	o := FormatOptions{}
	if format != FormatJSON {
		o = FormatOptions{Schemas: startRegistry(b), Subject: "bench-value"}
	}
	cols := benchSchema.ValueIndexes()
	enc, err := NewEncoderOpts(format, benchSchema, cols, o)
	if err != nil {
		b.Fatal(err)
	}
	in, err := enc.Encode(nil, benchRow())
	if err != nil {
		b.Fatal(err)
	}
	dec, err := NewDecoderOpts(format, benchSchema, cols, o)
	if err != nil {
		b.Fatal(err)
	}
	row := make(Row, benchSchema.Len())
	src := benchRow()
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	b.ResetTimer()
	var out []byte
	for i := 0; i < b.N; i++ {
		if decode {
			err = dec.Decode(in, row)
		} else {
			out, err = enc.Encode(out[:0], src)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkCodecs compares the registry formats with JSON on the same
// pageviews record.
func BenchmarkCodecs(b *testing.B) {
	for _, f := range []string{FormatJSON, FormatAvro, FormatJSONSR, FormatProtobuf} {
		b.Run(f+"/decode", func(b *testing.B) { benchCodec(b, f, true) })
		b.Run(f+"/encode", func(b *testing.B) { benchCodec(b, f, false) })
	}
}

// TestAvroColumns: schema inference maps Avro types back as ksqlDB does;
// the schema AvroSchema writes for columns infers those columns again.
func TestAvroColumns(t *testing.T) {
	cols := everyAvro.ValueIndexes()
	var names []string
	var typs []Type
	for _, c := range cols {
		names = append(names, everyAvro.Columns[c].Name)
		typs = append(typs, everyAvro.Columns[c].Type)
	}
	text := AvroSchema(names, typs, true, "x.Y")
	got, wrapped, err := AvroColumns(RegisteredSchema{Text: text}, "ROWVAL")
	if err != nil || !wrapped || len(got) != len(cols) {
		t.Fatalf("inferred %v, %v, %v", got, wrapped, err)
	}
	for i, c := range got {
		if c.Name != names[i] || !c.Type.Equal(typs[i]) {
			t.Errorf("column %d: inferred %s %s, want %s %s", i, c.Name, c.Type, names[i], typs[i])
		}
	}
	foreign := `{"type":"record","name":"r","fields":[
		{"name":"f","type":"float"},{"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}},
		{"name":"fx","type":{"type":"fixed","name":"F","size":4}},
		{"name":"us","type":{"type":"long","logicalType":"timestamp-micros"}},
		{"name":"tu","type":{"type":"long","logicalType":"time-micros"}},
		{"name":"dd","type":{"type":"fixed","name":"D","size":8,"logicalType":"decimal","precision":10,"scale":3}}]}`
	got, _, err = AvroColumns(RegisteredSchema{Text: foreign}, "ROWVAL")
	var desc []string
	for _, c := range got {
		desc = append(desc, c.Name+" "+c.Type.String())
	}
	if want := "f DOUBLE, e STRING, fx BYTES, us TIMESTAMP, tu TIME, dd DECIMAL(10, 3)"; err != nil || strings.Join(desc, ", ") != want {
		t.Errorf("inferred %s, %v; want %s", strings.Join(desc, ", "), err, want)
	}
	got, wrapped, err = AvroColumns(RegisteredSchema{Text: `["null","long"]`}, "ROWVAL")
	if err != nil || wrapped || len(got) != 1 || got[0].Name != "ROWVAL" || got[0].Type.Kind != Bigint {
		t.Errorf("a primitive value: %v %v %v", got, wrapped, err)
	}
	if _, _, err := AvroColumns(RegisteredSchema{Text: `{"type":"record","name":"r","fields":[{"name":"u","type":["int","string"]}]}`}, "ROWVAL"); err == nil {
		t.Errorf("a union of int and string was inferred")
	}
}

// TestSchemaReferences: writer schemas that reference other registered
// schemas (an Avro named type, a .proto import) are read and inferred
// with the referenced schemas fetched from the registry.
func TestSchemaReferences(t *testing.T) {
	reg := startRegistry(t)
	address := `{"type":"record","name":"Address","namespace":"com.acme","fields":[{"name":"city","type":"string"},{"name":"zip","type":"int"}]}`
	person := `{"type":"record","name":"Person","namespace":"com.acme","fields":[{"name":"name","type":"string"},{"name":"addr","type":"com.acme.Address"}]}`
	if _, err := reg.Register("address", RegisteredSchema{Type: SchemaTypeAvro, Text: address}); err != nil {
		t.Fatal(err)
	}
	ref := []SchemaRef{{Name: "com.acme.Address", Subject: "address", Version: 1}}
	id, err := reg.Register("people-value", RegisteredSchema{Type: SchemaTypeAvro, Text: person, References: ref})
	if err != nil {
		t.Fatal(err)
	}
	var cache avro.SchemaCache
	if _, err := cache.Parse(address); err != nil {
		t.Fatal(err)
	}
	sch, err := cache.Parse(person)
	if err != nil {
		t.Fatal(err)
	}
	payload, err := sch.Encode(map[string]any{"name": "ann", "addr": map[string]any{"city": "Oslo", "zip": int32(150)}})
	if err != nil {
		t.Fatal(err)
	}
	var h sr.ConfluentHeader
	rec, _ := h.AppendEncode(nil, id, nil)
	rec = append(rec, payload...)

	rs, err := reg.SchemaByID(id)
	if err != nil {
		t.Fatal(err)
	}
	cols, _, err := SchemaColumns(reg, FormatAvro, rs, "ROWVAL")
	if err != nil {
		t.Fatalf("inferring through a reference: %v", err)
	}
	s := Schema{Columns: cols}
	if got := s.String(); !strings.Contains(got, "addr STRUCT<city STRING, zip INTEGER>") {
		t.Errorf("inferred %s", got)
	}
	dec, err := NewDecoderOpts(FormatAvro, s, s.ValueIndexes(), FormatOptions{Schemas: reg})
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, len(cols))
	if err := dec.Decode(rec, row); err != nil {
		t.Fatal(err)
	}
	if got := Text(row[0], cols[0].Type) + " " + Text(row[1], cols[1].Type); got != `ann {"city":"Oslo","zip":150}` {
		t.Errorf("read %s", got)
	}

	// A .proto importing another registered .proto.
	if _, err := reg.Register("acme-address", RegisteredSchema{Type: SchemaTypeProtobuf,
		Text: "syntax = \"proto3\";\npackage acme;\nmessage Address { string city = 1; }\n"}); err != nil {
		t.Fatal(err)
	}
	order := RegisteredSchema{Type: SchemaTypeProtobuf, Text: "syntax = \"proto3\";\npackage acme;\nimport \"acme/address.proto\";\nmessage Order { int64 id = 1; Address ship_to = 2; }\n",
		References: []SchemaRef{{Name: "acme/address.proto", Subject: "acme-address", Version: 1}}}
	if _, err := reg.Register("orders-value", order); err != nil {
		t.Fatal(err)
	}
	cols, _, err = SchemaColumns(reg, FormatProtobuf, order, "ROWVAL")
	if err != nil || (Schema{Columns: cols}).String() != "id BIGINT, ship_to STRUCT<city STRING>" {
		t.Errorf("inferred from a .proto with an import: %v, %v", Schema{Columns: cols}, err)
	}
}

// TestRegistryDownIsNotABadRecord: when the registry does not answer, a
// record is not skipped as bad: the error wraps ErrRegistry, which fails
// the query so that it retries the record after a restart.
func TestRegistryDownIsNotABadRecord(t *testing.T) {
	srv := httptest.NewServer(nil)
	url := srv.URL
	srv.Close() // nothing listens there any more
	down, err := registry.NewClient(registry.ClientConfig{URL: url, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cols := users.ValueIndexes()
	row := make(Row, users.Len())
	for _, f := range []string{FormatAvro, FormatProtobuf, FormatJSONSR} {
		o := FormatOptions{Schemas: down, Subject: "u-value"}
		dec, err := NewDecoderOpts(f, users, cols, o)
		if err != nil {
			t.Fatal(err)
		}
		if f != FormatJSONSR { // JSON_SR reads without asking the registry
			err = dec.Decode([]byte{0, 0, 0, 0, 7, 0, 2}, row)
			if !errors.Is(err, ErrRegistry) || errors.Is(err, ErrBadRecord) {
				t.Errorf("%s decode with the registry down: %v; want ErrRegistry, not a bad record", f, err)
			}
		}
		enc, _ := NewEncoderOpts(f, users, cols, o)
		if _, err := enc.Encode(nil, Row{IntDatum(1), NullDatum, NullDatum, NullDatum}); !errors.Is(err, ErrRegistry) {
			t.Errorf("%s encode with the registry down: %v; want ErrRegistry", f, err)
		}
		noReg, _ := NewDecoderOpts(f, users, cols, FormatOptions{})
		if err := noReg.Decode([]byte{0, 0, 0, 0, 7, 0, 2}, row); f != FormatJSONSR && !errors.Is(err, ErrRegistry) {
			t.Errorf("%s without a registry: %v; want ErrRegistry", f, err)
		}
	}
}

// TestAvroReaderDefaults: columns inferred from a schema read the
// defaults it gives fields that older writer schemas lack.
func TestAvroReaderDefaults(t *testing.T) {
	reg := startRegistry(t)
	old := writerRecord(t, reg, "d-value", `{"type":"record","name":"u","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`,
		map[string]any{"id": int64(1), "name": "ann"})
	reader := `{"type":"record","name":"u","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},` +
		`{"name":"email","type":"string","default":"none"},{"name":"score","type":["double","null"],"default":1.5}]}`
	rid, err := reg.Register("d-value", RegisteredSchema{Type: SchemaTypeAvro, Text: reader})
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewDecoderOpts(FormatAvro, users, users.ValueIndexes(), FormatOptions{Schemas: reg, ReaderSchemaID: rid})
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, users.Len())
	if err := dec.Decode(old, row); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, c := range users.Columns {
		got = append(got, Text(row[i], c.Type))
	}
	if g := strings.Join(got, "|"); g != "1|ann|none|1.5" {
		t.Errorf("an old record read with the reader's defaults: %s, want 1|ann|none|1.5", g)
	}
}

// TestAvroWritesWithTheInferredSchema: an encoder of columns inferred from
// a registered schema writes with that schema, not one of its own.
func TestAvroWritesWithTheInferredSchema(t *testing.T) {
	reg := startRegistry(t)
	text := `{"type":"record","name":"pageview","namespace":"com.example","fields":[{"name":"pageid","type":"string"},{"name":"viewtime","type":"long"}]}`
	id, err := reg.Register("pv-value", RegisteredSchema{Type: SchemaTypeAvro, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	cols, _, err := SchemaColumns(reg, FormatAvro, RegisteredSchema{Text: text}, "ROWVAL")
	if err != nil {
		t.Fatal(err)
	}
	s := Schema{Columns: cols}
	enc, err := NewEncoderOpts(FormatAvro, s, s.ValueIndexes(), FormatOptions{Schemas: reg, Subject: "pv-value", ReaderSchemaID: id})
	if err != nil {
		t.Fatal(err)
	}
	out, err := enc.Encode(nil, Row{StringDatum("cart"), IntDatum(5)})
	if err != nil {
		t.Fatal(err)
	}
	var h sr.ConfluentHeader
	gotID, payload, _ := h.DecodeID(out)
	var m map[string]any
	if err := unmarshal(avro.MustParse(text), payload, &m); gotID != id || err != nil || m["pageid"] != "cart" || m["viewtime"] != int64(5) {
		t.Errorf("wrote with ID %d (want %d): %v, %v", gotID, id, m, err)
	}
	if vs, _ := reg.SR().SubjectVersions(context.Background(), "pv-value"); len(vs) != 1 {
		t.Errorf("pv-value has versions %v; the encoder registered a schema of its own", vs)
	}
}

// TestAvroReaderAliases: columns inferred from a schema that renamed a
// field (keeping the old name as an alias) read records written with the
// old name.
func TestAvroReaderAliases(t *testing.T) {
	reg := startRegistry(t)
	old := writerRecord(t, reg, "a-value", `{"type":"record","name":"u","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`,
		map[string]any{"id": int64(1), "name": "ann"})
	renamed := `{"type":"record","name":"u","fields":[{"name":"id","type":"long"},{"name":"full_name","aliases":["name"],"type":"string"}]}`
	rid, err := reg.Register("a-value", RegisteredSchema{Type: SchemaTypeAvro, Text: renamed})
	if err != nil {
		t.Fatal(err)
	}
	cols, _, err := SchemaColumns(reg, FormatAvro, RegisteredSchema{Text: renamed}, "ROWVAL")
	if err != nil {
		t.Fatal(err)
	}
	s := Schema{Columns: cols}
	dec, err := NewDecoderOpts(FormatAvro, s, s.ValueIndexes(), FormatOptions{Schemas: reg, ReaderSchemaID: rid})
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, len(cols))
	if err := dec.Decode(old, row); err != nil {
		t.Fatal(err)
	}
	if got := Text(row[0], cols[0].Type) + "|" + Text(row[1], cols[1].Type); got != "1|ann" {
		t.Errorf("read %s (columns %v), want 1|ann", got, s)
	}
}

// unmarshal decodes payload, which must be all of one value of sch, as
// twmb/avro does for a generic map.
func unmarshal(sch *avro.Schema, payload []byte, m *map[string]any) error {
	rest, err := sch.Decode(payload, m)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("%d bytes after the value", len(rest))
	}
	return err
}

// BenchmarkAvroEveryType reads and writes the row of every type
// (TestAvroRoundTripEveryType's: nested arrays, maps, structs, decimals),
// and reads a record whose writer schema has fields no column reads (an
// array of maps, a fixed, a record: stepped over).
func BenchmarkAvroEveryType(b *testing.B) {
	reg := startRegistry(b)
	cols := everyAvro.ValueIndexes()
	o := FormatOptions{Schemas: reg, Subject: "every-value"}
	enc, err := NewEncoderOpts(FormatAvro, everyAvro, cols, o)
	if err != nil {
		b.Fatal(err)
	}
	dec, err := NewDecoderOpts(FormatAvro, everyAvro, cols, o)
	if err != nil {
		b.Fatal(err)
	}
	src := everyAvroRow()
	in, err := enc.Encode(nil, src)
	if err != nil {
		b.Fatal(err)
	}
	row := make(Row, everyAvro.Len())
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		for i := 0; i < b.N; i++ {
			if err := dec.Decode(in, row); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(in)))
		var out []byte
		for i := 0; i < b.N; i++ {
			if out, err = enc.Encode(out[:0], src); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The same record with blocks as most writers write them (an item
	// count) and with a byte size per block (as hamba/avro writes them),
	// which a reader steps over at once; given as bytes, so that no
	// encoding library decides the form.
	const skipWriter = `{"type":"record","name":"u","fields":[{"name":"extra","type":{"type":"array","items":{"type":"map","values":["null","string"]}}},{"name":"id","type":"long"},{"name":"f","type":{"type":"fixed","name":"F","size":3}},{"name":"name","type":"string"},{"name":"r","type":{"type":"record","name":"R","fields":[{"name":"x","type":"double"},{"name":"y","type":"boolean"}]}}]}`
	skipID, err := reg.Register("skip-value", RegisteredSchema{Type: SchemaTypeAvro, Text: skipWriter})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, payload string }{
		{"skip", "040402630002610202620002026402026500000461626306626f62000000000000f83f01"},
		{"skip-sized", "03260310026300026102026200010a026402026500000461626306626f62000000000000f83f01"},
	} {
		b.Run(c.name, func(b *testing.B) {
			ucols := users.ValueIndexes()
			udec, err := NewDecoderOpts(FormatAvro, users, ucols, FormatOptions{Schemas: reg})
			if err != nil {
				b.Fatal(err)
			}
			var h sr.ConfluentHeader
			rec, _ := h.AppendEncode(nil, skipID, nil)
			payload, _ := hex.DecodeString(c.payload)
			rec = append(rec, payload...)
			urow := make(Row, users.Len())
			if err := udec.Decode(rec, urow); err != nil || Text(urow[1], StringType) != "bob" {
				b.Fatalf("%v %s", err, Text(urow[1], StringType))
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(rec)))
			for i := 0; i < b.N; i++ {
				if err := udec.Decode(rec, urow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
