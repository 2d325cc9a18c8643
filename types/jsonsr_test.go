package types_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	. "github.com/sqlstreams/sqlstreams/types"
)

// TestJSONSRRoundTrip writes every type as JSON_SR: the header names the
// JSON schema registered under the subject, the text after it is the JSON
// format's, and it reads back.
func TestJSONSRRoundTrip(t *testing.T) {
	reg := startRegistry(t)
	cols := everyAvro.ValueIndexes()
	o := FormatOptions{Schemas: reg, Subject: "every-value"}
	enc, err := NewEncoderOpts(FormatJSONSR, everyAvro, cols, o)
	if err != nil {
		t.Fatal(err)
	}
	want := everyAvroRow()
	out, err := enc.Encode(nil, want)
	if err != nil {
		t.Fatal(err)
	}
	id, latest, err := reg.Latest("every-value")
	if err != nil || latest.Type != SchemaTypeJSON {
		t.Fatalf("registered %+v, %v", latest, err)
	}
	var h sr.ConfluentHeader
	gotID, payload, err := h.DecodeID(out)
	if err != nil || gotID != id || !strings.HasPrefix(string(payload), `{"B":true,"I":-2147483648,`) {
		t.Fatalf("header ID %d (latest %d), %v; payload %s", gotID, id, err, payload)
	}
	dec, err := NewDecoderOpts(FormatJSONSR, everyAvro, cols, o)
	if err != nil {
		t.Fatal(err)
	}
	got := make(Row, everyAvro.Len())
	if err := dec.Decode(out, got); err != nil {
		t.Fatal(err)
	}
	sameText(t, everyAvro, cols, got, want)
	if err := dec.Decode(payload, got); !errors.Is(err, ErrBadRecord) {
		t.Errorf("JSON without the header: %v, want a bad record", err)
	}

	// Inference gives the columns back, in order.
	inferred, wrapped, err := SchemaColumns(reg, FormatJSONSR, latest, "ROWVAL")
	if err != nil || !wrapped || len(inferred) != len(cols) {
		t.Fatalf("inferred %v, %v, %v", inferred, wrapped, err)
	}
	for i, c := range inferred {
		w := everyAvro.Columns[cols[i]]
		if c.Name != w.Name || !c.Type.Equal(w.Type) {
			t.Errorf("column %d: inferred %s %s, want %s %s", i, c.Name, c.Type, w.Name, w.Type)
		}
	}
	plain := `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer"},"tags":{"type":"array","items":{"type":"string"}},"attrs":{"type":"object","additionalProperties":{"type":"number"}}}}`
	inferred, _, err = SchemaColumns(reg, FormatJSONSR, RegisteredSchema{Type: SchemaTypeJSON, Text: plain}, "ROWVAL")
	var desc []string
	for _, c := range inferred {
		desc = append(desc, c.Name+" "+c.Type.String())
	}
	if w := "name STRING, age BIGINT, tags ARRAY<STRING>, attrs MAP<STRING, DOUBLE>"; err != nil || strings.Join(desc, ", ") != w {
		t.Errorf("inferred %s, %v; want %s", strings.Join(desc, ", "), err, w)
	}
}
