package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

const ordersProto = `syntax = "proto3";
package shop;
import "google/protobuf/wrappers.proto";
message Order {
  string id = 1;
  int64 qty = 2;
  google.protobuf.StringValue note = 3;
  oneof pay { string card = 4; int64 cash = 5; }
}
`

// protoc runs Google's protobuf compiler (Debian protobuf-compiler) with
// the .proto text in dir and in on stdin.
func protoc(t *testing.T, dir, proto string, in []byte, args ...string) []byte {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "s.proto"), []byte(proto), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("protoc", append([]string{"-I", dir, "-I", "/usr/include", "s.proto"}, args...)...)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("protoc %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes()
}

// TestProtobufAndJSONSREndToEnd: Protobuf records encoded by protoc, with
// a schema registered by franz-go's pkg/sr, feed a stream whose columns
// are inferred from the registry (wrappers and a oneof as ksqlDB maps
// them); one CSAS writes JSON_SR that Confluent's Python JSON Schema
// deserializer validates and reads, another writes PROTOBUF that protoc
// decodes with the schema the sink registered.
func TestProtobufAndJSONSREndToEnd(t *testing.T) {
	for _, tool := range []string{"protoc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing (run scripts/deps.sh): %v", tool, err)
		}
	}
	if err := exec.Command(python, "-c", "import confluent_kafka.schema_registry.json_schema, jsonschema").Run(); err != nil {
		t.Fatalf("%s cannot import the JSON Schema deserializer (run scripts/deps.sh): %v", python, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := startServer(t)
	regURL := "http://" + s.RegistryAddr
	srcl, err := sr.NewClient(sr.URLs(regURL))
	if err != nil {
		t.Fatal(err)
	}
	id, err := srcl.RegisterSchema(ctx, "orders-value", sr.Schema{Type: sr.TypeProtobuf, Schema: ordersProto}, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var h sr.ConfluentHeader
	record := func(text string) []byte {
		v, _ := h.AppendEncode(nil, id, []int{0})
		return append(v, protoc(t, dir, ordersProto, []byte(text), "--encode=shop.Order")...)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx,
		&kgo.Record{Topic: "orders", Key: []byte("k1"), Value: record(`id: "o1" qty: 3 note { value: "gift" } cash: 7`)},
		&kgo.Record{Topic: "orders", Key: []byte("k2"), Value: record(`id: "o2" qty: 1 card: "visa"`)},
		&kgo.Record{Topic: "orders", Key: []byte("k3"), Value: record(`id: "o3" qty: 5`)},
	).FirstErr(); err != nil {
		t.Fatal(err)
	}

	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `SET 'auto.offset.reset' = 'earliest'`)
	exec1(t, ctx, conn, `CREATE STREAM orders WITH (KAFKA_TOPIC='orders', VALUE_FORMAT='PROTOBUF')`)
	// Inferred names are upper-cased, as ksqlDB's are.
	want := []string{"ID|STRING", "QTY|BIGINT", "NOTE|STRING", "PAY_0|STRUCT<CARD STRING, CASH BIGINT>"}
	if got := rows(t, ctx, conn, "DESCRIBE orders"); !slices.Equal(got, want) {
		t.Fatalf("DESCRIBE orders: %v, want %v", got, want)
	}
	exec1(t, ctx, conn, `CREATE STREAM big WITH (VALUE_FORMAT='JSON_SR') AS SELECT id, qty, note FROM orders WHERE qty > 1 EMIT CHANGES`)
	exec1(t, ctx, conn, `CREATE STREAM bigpb WITH (VALUE_FORMAT='PROTOBUF') AS SELECT id, note, pay_0 FROM orders WHERE qty > 1 EMIT CHANGES`)

	// JSON_SR, read by Confluent's deserializer against the registered
	// JSON Schema.
	cmd := exec.Command(python, filepath.Join("testdata", "jsonsr_consume.py"), s.KafkaAddr, regURL, "BIG", "2")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("jsonsr_consume.py: %v\n%s%s", err, out.String(), errb.String())
	}
	// The stream has no key column, so the sink's records have no key.
	got := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	slices.Sort(got)
	want = []string{"\t" + `{"ID": "o1", "NOTE": "gift", "QTY": 3}`, "\t" + `{"ID": "o3", "NOTE": null, "QTY": 5}`}
	if !slices.Equal(got, want) {
		t.Errorf("BIG as Confluent's JSON Schema deserializer reads it:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// PROTOBUF, decoded by protoc with the schema under BIGPB-value.
	sink, err := srcl.SchemaByVersion(ctx, "BIGPB-value", -1)
	if err != nil {
		t.Fatal(err)
	}
	var decoded []string
	deadline := time.Now().Add(time.Minute)
	for len(decoded) < 2 && time.Now().Before(deadline) {
		decoded = decoded[:0]
		for _, v := range readRaw(t, ctx, s.KafkaAddr, "BIGPB") {
			gotID, rest, err := h.DecodeID(v)
			if err != nil || gotID != sink.ID || rest[0] != 0 {
				t.Fatalf("BIGPB record header: ID %d (sink schema %d), %v", gotID, sink.ID, err)
			}
			text := protoc(t, dir, sink.Schema.Schema, rest[1:], "--decode=ConnectDefault1")
			decoded = append(decoded, strings.Join(strings.Fields(string(text)), " "))
		}
	}
	// proto3 cannot hold NULL scalars: they are absent, as ksqlDB
	// writes them; a NULL struct is an absent message.
	slices.Sort(decoded)
	want = []string{`ID: "o1" NOTE: "gift" PAY_0 { CASH: 7 }`, `ID: "o3"`}
	if !slices.Equal(decoded, want) {
		t.Errorf("BIGPB as protoc decodes it:\n%s\nwant:\n%s\nschema:\n%s", strings.Join(decoded, "\n"), strings.Join(want, "\n"), sink.Schema.Schema)
	}
}
