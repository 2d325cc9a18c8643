package registry_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/registry"
	"github.com/sqlstreams/sqlstreams/types"
)

// startBroker starts an in-memory Kafka broker for the registry's topic.
func startBroker(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// serve opens the embedded registry on brokers and serves it over real
// HTTP; it returns a pkg/sr client of it and a function that closes it.
func serve(t *testing.T, brokers []string) (*sr.Client, func()) {
	t.Helper()
	reg, err := registry.Open(context.Background(), registry.Config{Kafka: kafka.Plain(brokers...), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(reg.Handler())
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	stop := func() {
		if !closed {
			closed = true
			srv.Close()
			reg.Close()
		}
	}
	t.Cleanup(stop)
	return cl, stop
}

const (
	userV1 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"}]}`
	// v2 adds a field with a default: BACKWARD compatible.
	userV2 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"email","type":["null","string"],"default":null}]}`
	// v3 adds a field without a default: not BACKWARD compatible.
	userV3 = `{"type":"record","name":"User","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"age","type":"int"}]}`
)

func avroSchema(text string) sr.Schema { return sr.Schema{Schema: text, Type: sr.TypeAvro} }

func srCode(err error) int {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return re.ErrorCode
	}
	return 0
}

// TestRegistryAPI drives the embedded registry with franz-go's pkg/sr
// client over HTTP: registration, IDs shared across subjects, versions,
// lookups, BACKWARD checks, /config levels and deletes.
func TestRegistryAPI(t *testing.T) {
	ctx := context.Background()
	cl, _ := serve(t, startBroker(t))

	id1, err := cl.RegisterSchema(ctx, "users-value", avroSchema(userV1), -1, -1)
	if err != nil || id1 != 1 {
		t.Fatalf("first registration: id %d, %v; want 1", id1, err)
	}
	if again, err := cl.RegisterSchema(ctx, "users-value", avroSchema(userV1), -1, -1); err != nil || again != id1 {
		t.Fatalf("same schema again: id %d, %v; want %d", again, err, id1)
	}
	other, err := cl.CreateSchema(ctx, "copy-value", avroSchema(userV1))
	if err != nil || other.ID != id1 || other.Version != 1 {
		t.Fatalf("same schema, other subject: %+v, %v; want ID %d version 1", other, err, id1)
	}
	id2, err := cl.RegisterSchema(ctx, "users-value", avroSchema(userV2), -1, -1)
	if err != nil || id2 != 2 {
		t.Fatalf("compatible evolution: id %d, %v; want 2", id2, err)
	}
	_, err = cl.RegisterSchema(ctx, "users-value", avroSchema(userV3), -1, -1)
	if code := srCode(err); code != 409 {
		t.Fatalf("a field without a default under BACKWARD: %v (code %d), want error code 409", err, code)
	}
	res, err := cl.CheckCompatibility(ctx, "users-value", -1, avroSchema(userV3))
	if err != nil || res.Is {
		t.Fatalf("compatibility check of v3: %+v, %v; want not compatible", res, err)
	}
	if g := cl.Compatibility(ctx); g[0].Err != nil || g[0].Level != sr.CompatBackward {
		t.Fatalf("global level %v, %v; want BACKWARD", g[0].Level, g[0].Err)
	}
	if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatNone}, "users-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	id3, err := cl.RegisterSchema(ctx, "users-value", avroSchema(userV3), -1, -1)
	if err != nil || id3 != 3 {
		t.Fatalf("v3 under NONE: id %d, %v; want 3", id3, err)
	}

	if vs, err := cl.SubjectVersions(ctx, "users-value"); err != nil || !slices.Equal(vs, []int{1, 2, 3}) {
		t.Fatalf("versions %v, %v", vs, err)
	}
	latest, err := cl.SchemaByVersion(ctx, "users-value", -1)
	if err != nil || latest.ID != 3 || latest.Version != 3 || latest.Schema.Schema != userV3 {
		t.Fatalf("latest %+v, %v", latest, err)
	}
	byID, err := cl.SchemaByID(ctx, 2)
	if err != nil || byID.Schema != userV2 {
		t.Fatalf("schema 2: %+v, %v", byID, err)
	}
	if _, err := cl.SchemaByID(ctx, 99); srCode(err) != 40403 {
		t.Fatalf("unknown ID: %v, want 40403", err)
	}
	found, err := cl.LookupSchema(ctx, "users-value", avroSchema(userV2))
	if err != nil || found.ID != 2 || found.Version != 2 {
		t.Fatalf("lookup v2: %+v, %v", found, err)
	}
	if subs, err := cl.Subjects(ctx); err != nil || !slices.Equal(subs, []string{"copy-value", "users-value"}) {
		t.Fatalf("subjects %v, %v", subs, err)
	}

	// Soft delete, then permanent; the ID stays readable.
	if vs, err := cl.DeleteSubject(ctx, "copy-value", sr.SoftDelete); err != nil || !slices.Equal(vs, []int{1}) {
		t.Fatalf("soft delete: %v, %v", vs, err)
	}
	if subs, _ := cl.Subjects(ctx); !slices.Equal(subs, []string{"users-value"}) {
		t.Fatalf("subjects after delete: %v", subs)
	}
	if _, err := cl.DeleteSubject(ctx, "copy-value", sr.HardDelete); err != nil {
		t.Fatalf("permanent delete: %v", err)
	}
	if _, err := cl.SchemaByVersion(ctx, "copy-value", 1); srCode(err) != 40401 {
		t.Fatalf("deleted subject: %v, want 40401", err)
	}
	if s, err := cl.SchemaByID(ctx, id1); err != nil || s.Schema != userV1 {
		t.Fatalf("ID %d after its other subject was deleted: %v", id1, err)
	}

	// A schema that is not Avro is refused.
	if _, err := cl.RegisterSchema(ctx, "bad-value", avroSchema(`{"type":"recrod"}`), -1, -1); srCode(err) != 42201 {
		t.Fatalf("invalid schema: %v, want 42201", err)
	}
}

// TestRegistryRestart reopens the registry on the same topic: every
// subject, version, ID and level is back, and new IDs continue after the
// old ones.
func TestRegistryRestart(t *testing.T) {
	ctx := context.Background()
	brokers := startBroker(t)
	cl, stop := serve(t, brokers)
	for _, s := range []string{userV1, userV2} {
		if _, err := cl.RegisterSchema(ctx, "users-value", avroSchema(s), -1, -1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.RegisterSchema(ctx, "gone-value", avroSchema(`"string"`), -1, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteSubject(ctx, "gone-value", sr.SoftDelete); err != nil {
		t.Fatal(err)
	}
	if r := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, "users-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	before, err := cl.Schemas(ctx, "users-value")
	if err != nil {
		t.Fatal(err)
	}
	stop()

	cl, _ = serve(t, brokers)
	after, err := cl.Schemas(ctx, "users-value")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != 2 || len(before) != 2 {
		t.Fatalf("versions before %d, after %d; want 2", len(before), len(after))
	}
	for i := range before {
		if before[i].ID != after[i].ID || before[i].Version != after[i].Version || before[i].Schema.Schema != after[i].Schema.Schema {
			t.Errorf("version %d: before %+v, after %+v", i+1, before[i], after[i])
		}
	}
	if subs, _ := cl.Subjects(ctx); !slices.Equal(subs, []string{"users-value"}) {
		t.Errorf("subjects after restart: %v (the soft-deleted one must stay deleted)", subs)
	}
	if r := cl.Compatibility(ctx, "users-value"); r[0].Err != nil || r[0].Level != sr.CompatFull {
		t.Errorf("subject level after restart: %v, %v; want FULL", r[0].Level, r[0].Err)
	}
	id, err := cl.RegisterSchema(ctx, "other-value", avroSchema(`"long"`), -1, -1)
	if err != nil || id != 4 {
		t.Errorf("a new schema after restart: id %d, %v; want 4 (IDs are never reused)", id, err)
	}
	if s, err := cl.SchemaByID(ctx, 3); err != nil || s.Schema != `"string"` {
		t.Errorf("ID 3 of the deleted subject after restart: %+v, %v", s, err)
	}
}

// TestClientBasicAuthTLS: the formats' client reaches a registry over
// https with basic auth (the embedded one behind a TLS server that checks
// credentials, as a production registry would), and tells a missing
// schema (types.ErrSchemaNotFound) from other failures.
func TestClientBasicAuthTLS(t *testing.T) {
	reg, err := registry.Open(context.Background(), registry.Config{Kafka: kafka.Plain(startBroker(t)...), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	h := reg.Handler()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		if u, p, ok := q.BasicAuth(); !ok || u != "ann" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error_code":401,"message":"Unauthorized"}`)
			return
		}
		h.ServeHTTP(w, q)
	}))
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tlsCfg := &tls.Config{RootCAs: pool}

	cl, err := registry.NewClient(registry.ClientConfig{URL: srv.URL, Username: "ann", Password: "s3cret", TLS: tlsCfg})
	if err != nil {
		t.Fatal(err)
	}
	id, err := cl.Register("users-value", types.RegisteredSchema{Type: types.SchemaTypeAvro, Text: userV1})
	if err != nil || id != 1 {
		t.Fatalf("register over https with basic auth: %d, %v", id, err)
	}
	if s, err := cl.SchemaByID(id); err != nil || s.Text != userV1 {
		t.Fatalf("schema %d: %+v, %v", id, s, err)
	}
	if lid, s, err := cl.Latest("users-value"); err != nil || lid != id || s.Text != userV1 {
		t.Fatalf("latest: %d %+v %v", lid, s, err)
	}
	if _, err := cl.SchemaByID(77); !errors.Is(err, types.ErrSchemaNotFound) {
		t.Errorf("unknown ID: %v, want ErrSchemaNotFound", err)
	}
	wrong, _ := registry.NewClient(registry.ClientConfig{URL: srv.URL, Username: "ann", Password: "nope", TLS: tlsCfg})
	if _, err := wrong.SchemaByID(1); err == nil || errors.Is(err, types.ErrSchemaNotFound) {
		t.Errorf("wrong password: %v, want an error that is not 'not found'", err)
	}
	untrusted, _ := registry.NewClient(registry.ClientConfig{URL: srv.URL, Username: "ann", Password: "s3cret"})
	if _, err := untrusted.SchemaByID(1); err == nil {
		t.Errorf("a server certificate outside the system roots was trusted")
	}
}

// TestRegistryProtobuf: .proto schemas are compiled when registered and
// checked for BACKWARD compatibility by field number.
func TestRegistryProtobuf(t *testing.T) {
	ctx := context.Background()
	cl, _ := serve(t, startBroker(t))
	proto := func(body string) sr.Schema {
		return sr.Schema{Type: sr.TypeProtobuf, Schema: "syntax = \"proto3\";\npackage acme;\nimport \"google/protobuf/timestamp.proto\";\n" + body}
	}
	v1 := proto("message User { int64 id = 1; string name = 2; google.protobuf.Timestamp at = 3; }")
	if _, err := cl.RegisterSchema(ctx, "users-value", v1, -1, -1); err != nil {
		t.Fatal(err)
	}
	// Added field, renamed field, int64 read as uint64: compatible.
	v2 := proto("message User { uint64 id = 1; string full_name = 2; google.protobuf.Timestamp at = 3; repeated string tags = 4; }")
	if id, err := cl.RegisterSchema(ctx, "users-value", v2, -1, -1); err != nil || id != 2 {
		t.Fatalf("compatible v2: %d, %v", id, err)
	}
	for name, body := range map[string]string{
		"a string field becomes a number": "message User { uint64 id = 1; int32 full_name = 2; }",
		"a single field becomes repeated": "message User { repeated uint64 id = 1; }",
		"the message is gone":             "message Account { int64 id = 1; }",
	} {
		if _, err := cl.RegisterSchema(ctx, "users-value", proto(body), -1, -1); srCode(err) != 409 {
			t.Errorf("%s: %v, want error code 409", name, err)
		}
	}
	if _, err := cl.RegisterSchema(ctx, "users-value", proto("message User { int64 id = 1 }"), -1, -1); srCode(err) != 42201 {
		t.Errorf("a .proto that does not compile: %v, want 42201", err)
	}
	if _, err := cl.RegisterSchema(ctx, "users-value", avroSchema(userV1), -1, -1); srCode(err) != 409 {
		t.Errorf("an Avro schema under a protobuf subject: %v, want 409", err)
	}
}

// TestRegistryJSONSchema: JSON schemas are checked for BACKWARD
// compatibility in the common cases.
func TestRegistryJSONSchema(t *testing.T) {
	ctx := context.Background()
	cl, _ := serve(t, startBroker(t))
	js := func(s string) sr.Schema { return sr.Schema{Type: sr.TypeJSON, Schema: s} }
	v1 := `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id"]}`
	if _, err := cl.RegisterSchema(ctx, "j-value", js(v1), -1, -1); err != nil {
		t.Fatal(err)
	}
	v2 := `{"type":"object","properties":{"id":{"type":"number"},"name":{"type":["string","null"]},"tags":{"type":"array","items":{"type":"string"}}},"required":["id"]}`
	if id, err := cl.RegisterSchema(ctx, "j-value", js(v2), -1, -1); err != nil || id != 2 {
		t.Fatalf("widened and added: %d, %v", id, err)
	}
	for name, s := range map[string]string{
		"a type narrowed":      `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":["string","null"]}}}`,
		"a new required field": `{"type":"object","properties":{"id":{"type":"number"},"email":{"type":"string"}},"required":["id","email"]}`,
		"an item type changed": `{"type":"object","properties":{"tags":{"type":"array","items":{"type":"integer"}}}}`,
	} {
		if _, err := cl.RegisterSchema(ctx, "j-value", js(s), -1, -1); srCode(err) != 409 {
			t.Errorf("%s: %v, want 409", name, err)
		}
	}
	if _, err := cl.RegisterSchema(ctx, "j-value", js(`{"type":`), -1, -1); srCode(err) != 42201 {
		t.Errorf("not JSON: %v, want 42201", err)
	}
}

// TestRegistryAvroCompatibility: BACKWARD checks follow Avro schema
// resolution as twmb/avro implements it — a widened type and a renamed
// field with its old name as an alias pass; a narrowed type, an enum
// symbol the reader lacks (no enum default) and a changed decimal scale
// (the specification's rule, which Confluent does not apply) are refused.
func TestRegistryAvroCompatibility(t *testing.T) {
	ctx := context.Background()
	cl, _ := serve(t, startBroker(t))
	rec := func(field string) sr.Schema {
		return avroSchema(`{"type":"record","name":"R","fields":[` + field + `]}`)
	}
	cases := []struct {
		name          string
		first, second sr.Schema
		ok            bool
	}{
		{"int widened to long", rec(`{"name":"a","type":"int"}`), rec(`{"name":"a","type":"long"}`), true},
		{"renamed, old name as alias", rec(`{"name":"a","type":"int"}`), rec(`{"name":"b","type":"int","aliases":["a"]}`), true},
		{"long narrowed to int", rec(`{"name":"a","type":"long"}`), rec(`{"name":"a","type":"int"}`), false},
		{"enum symbol removed", rec(`{"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}}`), rec(`{"name":"e","type":{"type":"enum","name":"E","symbols":["A"]}}`), false},
		{"decimal scale changed", rec(`{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}}`), rec(`{"name":"d","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":3}}`), false},
	}
	for i, c := range cases {
		subj := fmt.Sprintf("compat-%d-value", i)
		if _, err := cl.RegisterSchema(ctx, subj, c.first, -1, -1); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, err := cl.RegisterSchema(ctx, subj, c.second, -1, -1)
		if c.ok && err != nil {
			t.Errorf("%s: refused: %v", c.name, err)
		}
		if !c.ok && srCode(err) != 409 {
			t.Errorf("%s: %v, want error code 409", c.name, err)
		}
	}
}

// TestRegistryIdentity: a schema registered again in another text form —
// other whitespace, other key order, as Confluent's Python client prints
// Avro — is the schema already registered: its ID and version come back,
// no version is added, the first text stays the one served, and the
// lookup finds it; also after the registry is reopened on its topic. A
// really different schema, or the same text with other references, is a
// new version.
func TestRegistryIdentity(t *testing.T) {
	ctx := context.Background()
	brokers := startBroker(t)
	cl, stop := serve(t, brokers)
	js := func(s string) sr.Schema { return sr.Schema{Type: sr.TypeJSON, Schema: s} }
	proto := func(s string) sr.Schema { return sr.Schema{Type: sr.TypeProtobuf, Schema: s} }

	// userV1 with field attributes and record keys in another order,
	// "string" spelled as an object, and whitespace.
	userV1Again := "{\n  \"fields\": [\n    {\"type\": \"long\", \"name\": \"id\"},\n    {\"type\": {\"type\": \"string\"}, \"name\": \"name\"}\n  ],\n  \"name\": \"User\",\n  \"type\": \"record\"\n}\n"
	const jsonV1 = `{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}},"required":["id"]}`
	jsonV1Again := "{ \"required\": [\"id\"],\n  \"properties\": {\"name\": {\"type\": \"string\"}, \"id\": {\"type\": \"integer\"}},\n  \"type\": \"object\" }"
	const protoV1 = "syntax = \"proto3\";\npackage acme;\nmessage User { int64 id = 1; string name = 2; }\n"
	protoV1Again := "// A user.\nsyntax = \"proto3\";\n\npackage acme;\n\nmessage User {\n  int64 id = 1; // the key\n  string name = 2;\n}\n"

	register := func(subj string, s sr.Schema, wantID int, wantVersions ...int) {
		t.Helper()
		id, err := cl.RegisterSchema(ctx, subj, s, -1, -1)
		if err != nil || id != wantID {
			t.Fatalf("registering under %s: id %d, %v; want %d", subj, id, err, wantID)
		}
		if vs, err := cl.SubjectVersions(ctx, subj); err != nil || !slices.Equal(vs, wantVersions) {
			t.Fatalf("versions of %s: %v, %v; want %v", subj, vs, err, wantVersions)
		}
	}
	lookup := func(subj string, s sr.Schema, wantID, wantVersion int) {
		t.Helper()
		got, err := cl.LookupSchema(ctx, subj, s)
		if err != nil || got.ID != wantID || got.Version != wantVersion {
			t.Fatalf("lookup under %s: %+v, %v; want ID %d version %d", subj, got, err, wantID, wantVersion)
		}
	}

	register("orders-value", avroSchema(userV1), 1, 1)
	register("orders-value", avroSchema(userV1Again), 1, 1)
	lookup("orders-value", avroSchema(userV1Again), 1, 1)
	if got, err := cl.SchemaByVersion(ctx, "orders-value", 1); err != nil || got.Schema.Schema != userV1 {
		t.Fatalf("version 1 after re-registration: %q, %v; want the first text", got.Schema.Schema, err)
	}
	register("orders-value", avroSchema(userV2), 2, 1, 2)
	// Another subject gets the ID of the same schema in another form.
	register("copy-value", avroSchema(userV1Again), 1, 1)

	register("j-value", js(jsonV1), 3, 1)
	register("j-value", js(jsonV1Again), 3, 1)
	lookup("j-value", js(jsonV1Again), 3, 1)
	register("j-value", js(`{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},"tag":{"type":"string"}},"required":["id"]}`), 4, 1, 2)

	register("p-value", proto(protoV1), 5, 1)
	register("p-value", proto(protoV1Again), 5, 1)
	lookup("p-value", proto(protoV1Again), 5, 1)

	// References are part of the identity: the same text over another
	// version of its reference is another schema.
	const addrV1 = `{"type":"record","name":"Address","fields":[{"name":"city","type":"string"}]}`
	const addrV2 = `{"type":"record","name":"Address","fields":[{"name":"city","type":"string"},{"name":"zip","type":"string","default":""}]}`
	register("addr", avroSchema(addrV1), 6, 1)
	register("addr", avroSchema(addrV2), 7, 1, 2)
	const shipment = `{"type":"record","name":"Shipment","fields":[{"name":"to","type":"Address"}]}`
	withRef := func(v int) sr.Schema {
		s := avroSchema(shipment)
		s.References = []sr.SchemaReference{{Name: "Address", Subject: "addr", Version: v}}
		return s
	}
	register("ship-value", withRef(1), 8, 1)
	register("ship-value", withRef(2), 9, 1, 2)
	register("ship-value", withRef(1), 8, 1, 2)
	stop()

	// Reopened on the same topic, the identities are recomputed.
	cl, _ = serve(t, brokers)
	register("orders-value", avroSchema(userV1Again), 1, 1, 2)
	lookup("orders-value", avroSchema(userV1Again), 1, 1)
	register("j-value", js(jsonV1Again), 3, 1, 2)
	register("p-value", proto(protoV1Again), 5, 1)
	register("ship-value", withRef(2), 9, 1, 2)
	register("new-value", avroSchema(userV1Again), 1, 1)
	if got, err := cl.SchemaByID(ctx, 1); err != nil || got.Schema != userV1 {
		t.Fatalf("ID 1 after restart: %q, %v; want the first text", got.Schema, err)
	}
}

// pyRegister registers argv[3] under argv[2] at the registry argv[1] with
// the schema registry client of Confluent's Python AvroProducer (its
// serializer registers through CachedSchemaRegistryClient.register), which
// posts the schema as avro-python prints it: other key order, "doc" last.
const pyRegister = `
import sys
from confluent_kafka.avro import CachedSchemaRegistryClient, loads
print(CachedSchemaRegistryClient({"url": sys.argv[1]}).register(sys.argv[2], loads(sys.argv[3])))
`

// TestRegistryIdentityPython reproduces issue 35: an Avro schema
// registered by sqlstreams, then by Confluent's Python client, stays one
// version with one ID.
func TestRegistryIdentityPython(t *testing.T) {
	const python = "/usr/bin/python3"
	testtool.Probe(t, "apt-get install python3-confluent-kafka python3-avro; scripts/deps.sh does", python, "-c", "import confluent_kafka.avro")
	ctx := context.Background()
	reg, err := registry.Open(ctx, registry.Config{Kafka: kafka.Plain(startBroker(t)...), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	srv := httptest.NewServer(reg.Handler())
	t.Cleanup(srv.Close)
	cl, err := sr.NewClient(sr.URLs(srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	const order = `{"type":"record","name":"Order","namespace":"shop","doc":"an order","fields":[{"name":"id","type":"long"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},{"name":"note","type":["null","string"],"default":null}]}`
	id, err := cl.RegisterSchema(ctx, "orders-value", avroSchema(order), -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		out, err := exec.Command(python, "-c", pyRegister, srv.URL, "orders-value", order).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != strconv.Itoa(id) {
			t.Fatalf("Python registration %d: %s, %v; want ID %d", i+1, out, err, id)
		}
	}
	if vs, err := cl.SubjectVersions(ctx, "orders-value"); err != nil || !slices.Equal(vs, []int{1}) {
		t.Fatalf("versions after the Python client registered: %v, %v; want [1]", vs, err)
	}
}
