package conformance

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"
)

// TestRQTTFixtures runs this repository's REST query-validation files
// (testdata/rqtt/*.json, in ksqlDB's RQTT form, written here) through the
// RQTT runner and the real REST server, and wants every case to pass.
func TestRQTTFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/rqtt/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no RQTT fixtures: %v", err)
	}
	var cases []RestCase
	for _, f := range files {
		cs, err := LoadRQTT(f)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, cs...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, r := range RunRQTT(ctx, cases, Options{Parallel: 2, Timeout: 60 * time.Second}) {
		if r.Status != Pass {
			t.Errorf("%s: %s: %s (%s)\n%s", r.File, r.Name, r.Status, r.Reason, r.Detail)
		}
	}
}

// TestRQTTComparison: responses compare as ksqlDB's runner compares them:
// only the expected fields, query rows as a multiset unless order is
// verified, numbers with Java's equality (1 is not 1.0), starts_with.
func TestRQTTComparison(t *testing.T) {
	dec := func(s string) any {
		var v any
		if err := decodeNumbers([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	rows := func(s string) []map[string]any {
		var out []map[string]any
		for _, r := range dec(s).([]any) {
			out = append(out, r.(map[string]any))
		}
		return out
	}
	exp := func(s string) []map[string]any { return rows(`[` + s + `]`) }
	actual := []restResponse{{kind: "query", rows: rows(`[{"header":{"queryId":"SCALABLE_PUSH_QUERY_1","schema":"` + "`A` INTEGER" + `"}},{"row":{"columns":[1]}},{"row":{"columns":[2.5]}}]`)}}
	for _, c := range []struct {
		want        string
		verifyOrder bool
		ok          bool
	}{
		{`{"query":[{"header":{"schema":"` + "`A` INTEGER" + `"}},{"row":{"columns":[2.5]}},{"row":{"columns":[1]}}]}`, false, true},
		{`{"query":[{"header":{"schema":"` + "`A` INTEGER" + `"}},{"row":{"columns":[2.5]}},{"row":{"columns":[1]}}]}`, true, false},
		{`{"query":[{"header":{"queryId|starts_with":"SCALABLE_PUSH_QUERY"}},{"row":{"columns":[1]}},{"row":{"columns":[2.50]}}]}`, true, true},
		{`{"query":[{"header":{}},{"row":{"columns":[1.0]}},{"row":{"columns":[2.5]}}]}`, false, false},
		{`{"query":[{"header":{}},{"row":{"columns":[1]}}]}`, false, false},
	} {
		d := verifyResponses(actual, exp(c.want), nil, c.verifyOrder)
		if (d == "") != c.ok {
			t.Errorf("%s (verifyOrder %v): diff %q, want ok=%v", c.want, c.verifyOrder, d, c.ok)
		}
	}
	if !javaEqual(json.Number("10000000000"), json.Number("10000000000")) || javaEqual(json.Number("1"), json.Number("1.0")) {
		t.Error("javaEqual on numbers")
	}
	if got := stripComments([]byte(`{"a": "x // y", /* c */ "b": 1} // end`)); string(got) != `{"a": "x // y",  "b": 1} ` {
		t.Errorf("stripComments: %q", got)
	}
}
