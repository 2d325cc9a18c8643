package conformance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFixtures runs this repository's own test files (testdata/*.json,
// in ksqlDB's QTT form, written here) and wants every case to pass: each
// file holds the semantics of one class of ksqlDB's behaviour that the
// engine once got wrong.
func TestFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	var cases []Case
	for _, f := range files {
		cs, err := LoadQTT(f)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, cs...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	results := Run(ctx, cases, Options{Parallel: 2, Timeout: 60 * time.Second})
	for _, r := range results {
		if r.Status != Pass || r.MessageDiffers {
			t.Errorf("%s: %s: %s (%s)\n%s", r.File, r.Name, r.Status, r.Reason, r.Detail)
		}
	}
}

func num(s string) any { return json.Number(s) }

// TestMatches pins the comparison to ksqlDB's ExpectedRecordComparator.
func TestMatches(t *testing.T) {
	d := func(s string) bigDec { v, _ := parseDec(s); return v }
	for _, c := range []struct {
		actual, expected any
		want             bool
	}{
		{int64(1), num("1"), true},
		{int64(1), num("1.5"), true}, // Jackson's longValue truncates
		{float64(1.0000001), num("1"), true},
		{float64(1.01), num("1"), false},
		{d("1.50"), num("1.50"), true},
		{d("1.5"), num("1.50"), false}, // BigDecimal.equals: scale counts
		{d("10"), num("10"), true},
		{d("10.0"), num("10"), false},
		{d("1.5"), "1.5", true},
		{[]byte("hi"), "aGk=", true},
		{"x", "x", true},
		{nil, nil, true},
		{"x", nil, false},
		{map[string]any{"A": int64(1)}, map[string]any{"a": num("1")}, true},
		{map[string]any{"A": int64(1), "B": nil}, map[string]any{"a": num("1")}, false},
		{[]any{int64(1), "x"}, []any{num("1"), "x"}, true},
		{true, true, true},
	} {
		if got := matches(c.actual, c.expected); got != c.want {
			t.Errorf("matches(%s, %v) = %v, want %v", show(c.actual), c.expected, got, c.want)
		}
	}
}

// TestLoadQTTExpands checks the format × config expansion and names.
func TestLoadQTTExpands(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "x.json")
	if err := os.WriteFile(f, []byte(`{"tests": [{
		"name": "t",
		"format": ["JSON", "AVRO"],
		"config": ["a", "b"],
		"properties": {"some.prop": "{CONFIG}"},
		// a comment, as Jackson allows
		"statements": ["CREATE STREAM s (x INT) WITH (kafka_topic='t', value_format='{FORMAT}');"],
		"inputs": [{"topic": "t", "value": {"X": 1}}],
		"outputs": [{"topic": "t", "value": {"X": 1}}]
	}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, err := LoadQTT(f)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
		if strings.Contains(c.Statements[0], "{FORMAT}") {
			t.Errorf("%s: {FORMAT} not replaced", c.Name)
		}
	}
	want := "t - JSON - some.prop=a|t - JSON - some.prop=b|t - AVRO - some.prop=a|t - AVRO - some.prop=b"
	if got := strings.Join(names, "|"); got != want {
		t.Errorf("names %s, want %s", got, want)
	}
	if cs[3].Properties["some.prop"] != "b" || !strings.Contains(cs[3].Statements[0], "'AVRO'") {
		t.Errorf("last case: %v %q", cs[3].Properties, cs[3].Statements[0])
	}
	if _, err := LoadQTT(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file loaded")
	}
}
