package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/types"
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

// TestRQTTProtoRows: protobuf rows of /query-stream are compared with the
// text-format rows a case expects by their fields, a MAP column's entries
// by key, rows as a multiset unless verifyOrder.
func TestRQTTProtoRows(t *testing.T) {
	str, in := types.Type{Kind: types.String}, types.Type{Kind: types.Int}
	sch := types.Schema{Columns: []types.Column{{Name: "ID", Type: types.Type{Kind: types.Bigint}}, {Name: "M", Type: types.Type{Kind: types.Map, KeyType: &str, Elem: &in}}}}
	enc, err := types.NewEncoderOpts(types.FormatProtobufNoSR, sch, []int{0, 1}, types.FormatOptions{})
	if err != nil {
		t.Fatal(err)
	}
	row := func(id int64, m ...string) map[string]any {
		var kv []types.Datum
		for i := 0; i+1 < len(m); i += 2 {
			var v int64
			fmt.Sscan(m[i+1], &v)
			kv = append(kv, types.Datum{B: []byte(m[i])}, types.Datum{I: v})
		}
		b, err := enc.Encode(nil, types.Row{{I: id}, {L: kv}})
		if err != nil {
			t.Fatal(err)
		}
		return map[string]any{"row": map[string]any{"protobufBytes": base64.StdEncoding.EncodeToString(b)}}
	}
	schema := types.ProtobufCanonicalSchema([]string{"ID", "M"}, []types.Type{sch.Columns[0].Type, sch.Columns[1].Type})
	actual := []restResponse{{kind: "queryProto", rows: []map[string]any{
		{"header": map[string]any{"protoSchema": schema}}, row(1, "a", "4", "b", "-1"), row(2, "q", "0", "d", "4")}}}
	for _, c := range []struct {
		rows        []any
		verifyOrder bool
		ok          bool
	}{
		{[]any{`ID: 2\nM {\n  key: "q"\n}\nM {\n  key: "d"\n  value: 4\n}\n`, `ID: 1\nM {\n  key: "b"\n  value: -1\n}\nM {\n  key: "a"\n  value: 4\n}\n`}, false, true},
		{[]any{`ID: 2\nM {\n  key: "q"\n}\nM {\n  key: "d"\n  value: 4\n}\n`, `ID: 1\nM {\n  key: "b"\n  value: -1\n}\nM {\n  key: "a"\n  value: 4\n}\n`}, true, false},
		{[]any{`ID: 1\nM {\n  key: "a"\n  value: 4\n}\n`, `ID: 2\nM {\n  key: "d"\n  value: 4\n}\n`}, false, false},
	} {
		want := []any{map[string]any{"header": map[string]any{"protoSchema": schema}}}
		for _, r := range c.rows {
			want = append(want, map[string]any{"row": strings.ReplaceAll(r.(string), `\n`, "\n")})
		}
		d := verifyResponses(actual, []map[string]any{{"queryProto": want}}, nil, c.verifyOrder)
		if (d == "") != c.ok {
			t.Errorf("%v (verifyOrder %v): diff %q, want ok=%v", c.rows, c.verifyOrder, d, c.ok)
		}
	}
}
