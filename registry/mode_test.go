package registry_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// TestImportMode: a registration with an ID is refused in READWRITE mode,
// takes that ID in IMPORT mode (and survives a restart from the schemas
// topic), later automatic IDs go past it, and READONLY refuses writes.
func TestImportMode(t *testing.T) {
	ctx := context.Background()
	brokers := startBroker(t)
	cl, stop := serve(t, brokers)
	s := sr.Schema{Schema: userV1}
	if _, err := cl.RegisterSchema(ctx, "imp-value", s, 42, 1); err == nil {
		t.Fatal("a registration with an ID outside IMPORT mode succeeded")
	}
	if r := cl.SetMode(ctx, sr.ModeImport, "imp-value"); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	id, err := cl.RegisterSchema(ctx, "imp-value", s, 42, 1)
	if err != nil || id != 42 {
		t.Fatalf("import: id %d, %v; want 42", id, err)
	}
	if _, err := cl.RegisterSchema(ctx, "imp-value", sr.Schema{Schema: userV2}, 42, 2); err == nil {
		t.Fatal("a different schema took a used ID")
	}
	stop()
	cl, _ = serve(t, brokers)
	if m := cl.Mode(ctx, "imp-value"); m[0].Err != nil || m[0].Mode != sr.ModeImport {
		t.Fatalf("mode after restart %v, %v; want IMPORT", m[0].Mode, m[0].Err)
	}
	got, err := cl.SchemaByID(ctx, 42)
	if err != nil || got.Schema != userV1 {
		t.Fatalf("schema 42 after restart: %q, %v", got.Schema, err)
	}
	next, err := cl.RegisterSchema(ctx, "other-value", sr.Schema{Schema: userV2}, -1, -1)
	if err != nil || next != 43 {
		t.Fatalf("automatic ID %d, %v; want 43", next, err)
	}
	if r := cl.SetMode(ctx, sr.ModeReadOnly); r[0].Err != nil {
		t.Fatal(r[0].Err)
	}
	if _, err := cl.RegisterSchema(ctx, "third-value", sr.Schema{Schema: userV1}, -1, -1); err == nil {
		t.Fatal("READONLY accepted a registration")
	}
}
