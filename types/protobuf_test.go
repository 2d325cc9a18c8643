package types_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/bufbuild/protocompile"
	"github.com/twmb/franz-go/pkg/sr"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	. "github.com/sqlstreams/sqlstreams/types"
)

// The PROTOBUF tests check our bytes against Google's protobuf runtime
// (dynamicpb over descriptors protocompile builds), never against our own
// decoder alone.

// message compiles a .proto and returns the descriptor of its message
// named name.
func message(t *testing.T, text, name string) protoreflect.MessageDescriptor {
	t.Helper()
	comp := protocompile.Compiler{Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
		Accessor: protocompile.SourceAccessorFromMap(map[string]string{"t.proto": text,
			"google/type/date.proto":       "syntax = \"proto3\";\npackage google.type;\nmessage Date { int32 year = 1; int32 month = 2; int32 day = 3; }\n",
			"google/type/timeofday.proto":  "syntax = \"proto3\";\npackage google.type;\nmessage TimeOfDay { int32 hours = 1; int32 minutes = 2; int32 seconds = 3; int32 nanos = 4; }\n",
			"confluent/type/decimal.proto": "syntax = \"proto3\";\npackage confluent.type;\nmessage Decimal { bytes value = 1; uint32 precision = 2; int32 scale = 3; }\n",
		})})}
	files, err := comp.Compile(context.Background(), "t.proto")
	if err != nil {
		t.Fatal(err)
	}
	md := files[0].Messages().ByName(protoreflect.Name(name))
	if md == nil {
		t.Fatalf("no message %s", name)
	}
	return md
}

// protoRow is a row of everyAvro that protobuf can hold (no NULL array
// elements or map values).
func protoRow() Row {
	r := everyAvroRow()
	r[11] = listD(IntDatum(1), IntDatum(-3))
	r[12] = listD(StringDatum("a"), DoubleDatum(1.5))
	r[13] = listD(IntDatum(94107), StringDatum("SF"), listD(
		listD(StringDatum("k1"), listD(IntDatum(1), IntDatum(2))),
		listD(StringDatum("k2"), listD()),
	))
	return r
}

// TestProtobufRoundTrip writes a row of every type: Google's runtime reads
// it with the schema registered under the subject, and so do we.
func TestProtobufRoundTrip(t *testing.T) {
	reg := startRegistry(t)
	cols := everyAvro.ValueIndexes()
	o := FormatOptions{Schemas: reg, Subject: "every-value"}
	enc, err := NewEncoderOpts(FormatProtobuf, everyAvro, cols, o)
	if err != nil {
		t.Fatal(err)
	}
	want := protoRow()
	out, err := enc.Encode(nil, want)
	if err != nil {
		t.Fatal(err)
	}
	id, latest, err := reg.Latest("every-value")
	if err != nil || latest.Type != SchemaTypeProtobuf {
		t.Fatalf("registered %+v, %v", latest, err)
	}
	for _, frag := range []string{"message ConnectDefault1 {", "google.protobuf.Timestamp TS = 10;", "repeated int32 ARR = 11;",
		"map<string, double> M = 12;", "confluent.type.Decimal DEC = 5;", "message ConnectDefault2 {", "repeated ConnectDefault3 TAGS = 3;"} {
		if !strings.Contains(latest.Text, frag) {
			t.Errorf("registered schema lacks %q:\n%s", frag, latest.Text)
		}
	}
	var h sr.ConfluentHeader
	gotID, rest, err := h.DecodeID(out)
	if err != nil || gotID != id || rest[0] != 0 {
		t.Fatalf("header: ID %d (latest %d), %v, index byte %d", gotID, id, err, rest[0])
	}
	md := message(t, latest.Text, "ConnectDefault1")
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(rest[1:], m); err != nil {
		t.Fatalf("Google's runtime cannot read what we wrote: %v", err)
	}
	get := func(name string) protoreflect.Value { return m.Get(md.Fields().ByName(protoreflect.Name(name))) }
	ts := get("TS").Message()
	if get("S").String() != "héllo" || get("L").Int() != math.MaxInt64 || get("ARR").List().Get(1).Int() != -3 ||
		get("M").Map().Get(protoreflect.ValueOfString("a").MapKey()).Float() != 1.5 ||
		ts.Get(ts.Descriptor().Fields().ByName("seconds")).Int() != 1709212455 ||
		ts.Get(ts.Descriptor().Fields().ByName("nanos")).Int() != 123_000_000 {
		t.Errorf("Google's runtime read %v", m)
	}
	dec, err := NewDecoderOpts(FormatProtobuf, everyAvro, cols, o)
	if err != nil {
		t.Fatal(err)
	}
	got := make(Row, everyAvro.Len())
	for range 2 {
		if err := dec.Decode(out, got); err != nil {
			t.Fatal(err)
		}
		sameText(t, everyAvro, cols, got, want)
	}
}

const kitchen = `syntax = "proto3";
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
package acme;
message Other { string x = 1; }
message Order {
  enum Status { NEW = 0; SHIPPED = 1; }
  message Line { string sku = 1; sint32 qty = 2; }
  uint64 unknown_to_the_stream = 15;
  sint64 id = 1;
  uint32 small = 2;
  fixed64 big = 3;
  float ratio = 4;
  Status status = 5;
  google.protobuf.StringValue note = 6;
  google.protobuf.Int64Value maybe = 7;
  optional int32 opt = 8;
  oneof pay { string card = 9; int64 cash = 10; }
  google.protobuf.Timestamp at = 11;
  map<string, int32> counts = 12;
  repeated int64 nums = 13;
  repeated Line lines = 14;
}`

var orders = Schema{Columns: []Column{
	{Name: "ID", Type: BigintType},
	{Name: "SMALL", Type: BigintType},
	{Name: "BIG", Type: BigintType},
	{Name: "RATIO", Type: DoubleType},
	{Name: "STATUS", Type: StringType},
	{Name: "NOTE", Type: StringType},
	{Name: "MAYBE", Type: BigintType},
	{Name: "OPT", Type: IntType},
	{Name: "PAY_0", Type: structT(Field{Name: "CARD", Type: StringType}, Field{Name: "CASH", Type: BigintType})},
	{Name: "AT", Type: TimestampType},
	{Name: "COUNTS", Type: mapT(StringType, IntType)},
	{Name: "NUMS", Type: arrayT(BigintType)},
	{Name: "LINES", Type: arrayT(structT(Field{Name: "SKU", Type: StringType}, Field{Name: "QTY", Type: IntType}))},
}}

func ordersText(r Row) string {
	var parts []string
	for i, c := range orders.Columns {
		parts = append(parts, Text(r[i], c.Type))
	}
	return strings.Join(parts, "|")
}

// protoRecord registers text under subject and returns m marshalled by
// Google's runtime behind the header, naming the message by index.
func protoRecord(t *testing.T, reg SchemaSource, subject, text string, index []int, m proto.Message) []byte {
	t.Helper()
	id, err := reg.Register(subject, RegisteredSchema{Type: SchemaTypeProtobuf, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	payload, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var h sr.ConfluentHeader
	out, _ := h.AppendEncode(nil, id, index)
	return append(out, payload...)
}

// TestProtobufReadsWhatGoogleWrites: records marshalled by Google's
// runtime, with wire kinds, wrappers, optional, oneof, enums, maps,
// packed and message lists, read as ksqlDB reads them.
func TestProtobufReadsWhatGoogleWrites(t *testing.T) {
	reg := startRegistry(t)
	md := message(t, kitchen, "Order")
	set := func(m *dynamicpb.Message, name string, v protoreflect.Value) {
		m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(name)), v)
	}
	full := dynamicpb.NewMessage(md)
	set(full, "unknown_to_the_stream", protoreflect.ValueOfUint64(9))
	set(full, "id", protoreflect.ValueOfInt64(-42))
	set(full, "small", protoreflect.ValueOfUint32(4000000000))
	set(full, "big", protoreflect.ValueOfUint64(1<<40))
	set(full, "ratio", protoreflect.ValueOfFloat32(0.5))
	set(full, "status", protoreflect.ValueOfEnum(1))
	note := dynamicpb.NewMessage(md.Fields().ByName("note").Message())
	set(note, "value", protoreflect.ValueOfString(""))
	set(full, "note", protoreflect.ValueOfMessage(note))
	set(full, "opt", protoreflect.ValueOfInt32(0))
	set(full, "cash", protoreflect.ValueOfInt64(77))
	at := dynamicpb.NewMessage(md.Fields().ByName("at").Message())
	set(at, "seconds", protoreflect.ValueOfInt64(-1))
	set(at, "nanos", protoreflect.ValueOfInt32(500_000_000))
	set(full, "at", protoreflect.ValueOfMessage(at))
	counts := full.Mutable(md.Fields().ByName("counts")).Map()
	counts.Set(protoreflect.ValueOfString("k").MapKey(), protoreflect.ValueOfInt32(3))
	nums := full.Mutable(md.Fields().ByName("nums")).List()
	nums.Append(protoreflect.ValueOfInt64(1))
	nums.Append(protoreflect.ValueOfInt64(-2))
	lines := full.Mutable(md.Fields().ByName("lines")).List()
	line := dynamicpb.NewMessage(md.Fields().ByName("lines").Message())
	set(line, "sku", protoreflect.ValueOfString("s1"))
	set(line, "qty", protoreflect.ValueOfInt32(-5))
	lines.Append(protoreflect.ValueOfMessage(line))

	dec, err := NewDecoderOpts(FormatProtobuf, orders, orders.ValueIndexes(), FormatOptions{Schemas: reg})
	if err != nil {
		t.Fatal(err)
	}
	row := make(Row, orders.Len())
	// Order is the second message of the file: indexes [1].
	rec := protoRecord(t, reg, "orders-value", kitchen, []int{1}, full)
	if err := dec.Decode(rec, row); err != nil {
		t.Fatal(err)
	}
	want := `-42|4000000000|1099511627776|0.5|SHIPPED||NULL|0|{"CARD":null,"CASH":77}|1969-12-31T23:59:59.500|{"k":3}|[1,-2]|[{"SKU":"s1","QTY":-5}]`
	if got := ordersText(row); got != want {
		t.Errorf("full order:\n got %s\nwant %s", got, want)
	}
	// An empty message: proto3 defaults, NULL for absent messages,
	// wrappers, optional fields and oneofs, empty lists.
	rec = protoRecord(t, reg, "orders-value", kitchen, []int{1}, dynamicpb.NewMessage(md))
	if err := dec.Decode(rec, row); err != nil {
		t.Fatal(err)
	}
	want = `0|0|0|0|NEW|NULL|NULL|NULL|NULL|NULL|{}|[]|[]`
	if got := ordersText(row); got != want {
		t.Errorf("empty order:\n got %s\nwant %s", got, want)
	}
	// The other message of the file does not fit the columns: a bad
	// record naming the schema ID, as is a truncated record.
	other := dynamicpb.NewMessage(message(t, kitchen, "Other"))
	if err := dec.Decode(protoRecord(t, reg, "orders-value", kitchen, []int{0}, other), row); err != nil {
		t.Errorf("Other has no fields of the columns: %v", err)
	}
	bad := map[string][]byte{
		"truncated":         rec[:len(rec)-0][:7],
		"unknown schema ID": append([]byte{0, 0, 0, 0x30, 0x39, 0}, rec[6:]...),
		"no header":         []byte{0x08, 0x01},
		"bad index":         append([]byte{0, 0, 0, 0, 1, 2, 40}, rec[6:]...),
	}
	full2, _ := proto.Marshal(full)
	bad["truncated"] = append(append([]byte{}, rec[:6]...), full2[:len(full2)-3]...)
	for name, b := range bad {
		if err := dec.Decode(b, row); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: %v, want a bad record", name, err)
		}
	}
	wrongType := `syntax = "proto3"; message W { string id = 1; }`
	w := dynamicpb.NewMessage(message(t, wrongType, "W"))
	err = dec.Decode(protoRecord(t, reg, "w-value", wrongType, []int{0}, w), row)
	if !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "cannot be read as the columns") {
		t.Errorf("a string field for a BIGINT column: %v", err)
	}
}

// TestProtobufNoSR writes and reads the bare encoding, no header, and
// Google's runtime reads it with the columns' schema.
func TestProtobufNoSR(t *testing.T) {
	cols := users.ValueIndexes()
	enc, err := NewEncoderOpts(FormatProtobufNoSR, users, cols, FormatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := enc.Encode(nil, Row{IntDatum(7), StringDatum("ann"), NullDatum, DoubleDatum(2.5)})
	if err != nil {
		t.Fatal(err)
	}
	md := message(t, ProtobufSchema([]string{"ID", "NAME", "EMAIL", "SCORE"}, []Type{BigintType, StringType, StringType, DoubleType}), "ConnectDefault1")
	m := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(out, m); err != nil || m.Get(md.Fields().ByName("NAME")).String() != "ann" {
		t.Fatalf("Google's runtime: %v %v", m, err)
	}
	dec, _ := NewDecoderOpts(FormatProtobufNoSR, users, cols, FormatOptions{})
	row := make(Row, users.Len())
	if err := dec.Decode(out, row); err != nil {
		t.Fatal(err)
	}
	var got []string
	for i, c := range users.Columns {
		got = append(got, Text(row[i], c.Type))
	}
	if g := strings.Join(got, "|"); g != "7|ann||2.5" {
		t.Errorf("read back %s (a NULL STRING is written absent and reads as \"\")", g)
	}
}

// TestProtobufColumns: inference from a .proto.
func TestProtobufColumns(t *testing.T) {
	cols, err := ProtobufColumns(RegisteredSchema{Type: SchemaTypeProtobuf, Text: strings.Replace(kitchen, "message Other { string x = 1; }\n", "", 1)})
	if err != nil {
		t.Fatal(err)
	}
	var desc []string
	for _, c := range cols {
		desc = append(desc, c.Name+" "+c.Type.String())
	}
	want := "unknown_to_the_stream BIGINT, id BIGINT, small BIGINT, big BIGINT, ratio DOUBLE, status STRING, note STRING, maybe BIGINT, opt INTEGER, pay_0 STRUCT<card STRING, cash BIGINT>, at TIMESTAMP, counts MAP<STRING, INTEGER>, nums ARRAY<BIGINT>, lines ARRAY<STRUCT<sku STRING, qty INTEGER>>"
	if got := strings.Join(desc, ", "); got != want {
		t.Errorf("inferred\n %s\nwant\n %s", got, want)
	}
}

// TestProtobufFieldNumbers: columns inferred from a schema follow its
// field numbers, so a writer that renamed a field still fills the column.
func TestProtobufFieldNumbers(t *testing.T) {
	reg := startRegistry(t)
	v1 := "syntax = \"proto3\";\nmessage U { int64 id = 1; string name = 2; }\n"
	v2 := "syntax = \"proto3\";\nmessage U { int64 id = 1; string full_name = 2; string email = 3; }\n"
	rid, err := reg.Register("u-value", RegisteredSchema{Type: SchemaTypeProtobuf, Text: v1})
	if err != nil {
		t.Fatal(err)
	}
	cols, _, err := SchemaColumns(reg, FormatProtobuf, RegisteredSchema{Type: SchemaTypeProtobuf, Text: v1}, "ROWVAL")
	if err != nil {
		t.Fatal(err)
	}
	s := Schema{Columns: cols}
	dec, err := NewDecoderOpts(FormatProtobuf, s, s.ValueIndexes(), FormatOptions{Schemas: reg, ReaderSchemaID: rid})
	if err != nil {
		t.Fatal(err)
	}
	md := message(t, v2, "U")
	m := dynamicpb.NewMessage(md)
	m.Set(md.Fields().ByName("id"), protoreflect.ValueOfInt64(9))
	m.Set(md.Fields().ByName("full_name"), protoreflect.ValueOfString("ann"))
	m.Set(md.Fields().ByName("email"), protoreflect.ValueOfString("a@x"))
	row := make(Row, len(cols))
	if err := dec.Decode(protoRecord(t, reg, "u-value", v2, []int{0}, m), row); err != nil {
		t.Fatal(err)
	}
	if got := Text(row[0], cols[0].Type) + "|" + Text(row[1], cols[1].Type); got != "9|ann" {
		t.Errorf("read %s, want 9|ann (field 2 renamed name → full_name)", got)
	}
}
