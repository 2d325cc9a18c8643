package sqllogic

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// These tests check the runner's own parsing, formatting and rewriting;
// they need no server.

const sample = `# a comment
statement ok
CREATE STREAM s (id VARCHAR KEY) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);

statement error ^line 1:8: column X does not exist
SELECT x
FROM s EMIT CHANGES;

query TI rowsort colnames retry 5s timeout=2s
SELECT * FROM s EMIT CHANGES LIMIT 2;
----
ID | N
a | 1

query I
SELECT 1;

produce s key-separator | partition 1 txn
a|{"N":1}
NULL|{"N":2}

wait-caught-up 45s

restart

kill

sleep 1500ms

halt
`

func TestParse(t *testing.T) {
	recs, err := parse("sample.slt", sample)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []kind
	for _, r := range recs {
		kinds = append(kinds, r.kind)
	}
	want := []kind{kindStatement, kindStatement, kindQuery, kindQuery, kindProduce, kindWaitCaughtUp, kindRestart, kindKill, kindSleep, kindHalt}
	if !slices.Equal(kinds, want) {
		t.Fatalf("kinds = %v, want %v", kinds, want)
	}
	if d := recs[8].timeout; d != 1500*time.Millisecond {
		t.Errorf("sleep 1500ms: %v", d)
	}
	if r := recs[1]; r.errRE == nil || r.errRE.String() != "^line 1:8: column X does not exist" || r.sql() != "SELECT x\nFROM s EMIT CHANGES;" || r.line != 5 {
		t.Errorf("statement error parsed as %+v", r)
	}
	q := recs[2]
	if q.types != "TI" || !q.rowsort || !q.colname || q.retry != 5*time.Second || q.timeout != 2*time.Second ||
		!slices.Equal(q.expected, []string{"ID | N", "a | 1"}) || q.sepLine != 10 || q.expFrom != 11 || q.expTo != 13 {
		t.Errorf("query parsed as %+v", q)
	}
	if q := recs[3]; q.sepLine != -1 || q.expected != nil || q.expFrom != 16 || q.expTo != 16 {
		t.Errorf("query without ---- parsed as %+v", q)
	}
	p := recs[4]
	if p.topic != "s" || p.keySep != "|" || p.partition != 1 || !p.txn || len(p.body) != 2 {
		t.Errorf("produce parsed as %+v", p)
	}
	if recs[5].timeout != 45*time.Second {
		t.Errorf("wait-caught-up timeout = %v", recs[5].timeout)
	}
}

func TestParseErrors(t *testing.T) {
	for _, text := range []string{
		"statement maybe\nSELECT 1;\n",
		"statement error (\nSELECT 1;\n",
		"statement ok\n",
		"query\nSELECT 1;\n",
		"query TX\nSELECT 1;\n",
		"query T sorted\nSELECT 1;\n",
		"query T retry\nSELECT 1;\n",
		"produce\na:b\n",
		"produce t partition x\na:b\n",
		"restart now\n",
		"wait-caught-up\nSELECT 1;\n",
		"frobnicate\n",
	} {
		if _, err := parse("bad.slt", text); err == nil {
			t.Errorf("parse(%q) succeeded; want an error", text)
		}
	}
}

func TestProducedRecords(t *testing.T) {
	rec := &record{topic: "t", keySep: ":", partition: -1, timestamp: true, body: []string{
		`1000 u1:{"A":"x:y"}`,
		`2000 NULL:{"A":1}`,
		`3000 u2:NULL`,
	}}
	recs, err := producedRecords(rec)
	if err != nil {
		t.Fatal(err)
	}
	if string(recs[0].Key) != "u1" || string(recs[0].Value) != `{"A":"x:y"}` || recs[0].Timestamp.UnixMilli() != 1000 {
		t.Errorf("record 0 = %+v", recs[0])
	}
	if recs[1].Key != nil || string(recs[1].Value) != `{"A":1}` {
		t.Errorf("record 1 = %+v", recs[1])
	}
	if string(recs[2].Key) != "u2" || recs[2].Value != nil {
		t.Errorf("record 2 = %+v", recs[2])
	}
	rec.body = []string{`1000 {"A":1}`}
	rec.keySep = "|"
	if _, err := producedRecords(rec); err == nil {
		t.Error("a line without the key separator was accepted")
	}
}

func TestFormat(t *testing.T) {
	if got, want := formatRow([][]byte{[]byte("a"), nil, {}, []byte("x\ny")}), `a | NULL | (empty) | x\ny`; got != want {
		t.Errorf("formatRow = %q, want %q", got, want)
	}
	cols := []pgconn.FieldDescription{{DataTypeOID: 20}, {DataTypeOID: 701}, {DataTypeOID: 16}, {DataTypeOID: 25}, {DataTypeOID: 114}}
	if got := typeLetters(cols); got != "IRBTT" {
		t.Errorf("typeLetters = %q", got)
	}
	if !typesMatch("I?BTT", "IRBTT") || typesMatch("IRBT", "IRBTT") || typesMatch("TRBTT", "IRBTT") {
		t.Error("typesMatch is wrong")
	}
	if got := errorText("SELECT\n  nocol", &pgconn.PgError{Message: "no such column", Position: 10}); got != "line 2:3: no such column" {
		t.Errorf("errorText = %q", got)
	}
	if got := errorText("SELECT x", &pgconn.PgError{Message: "line 1:8: no", Position: 8}); got != "line 1:8: no" {
		t.Errorf("errorText = %q", got)
	}
}

func TestRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.slt")
	if err := os.WriteFile(path, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	recs, err := parse(path, sample)
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{t: t, path: path, outputs: map[*record][]string{
		recs[2]: {"ID | N", "a | 1", "b | 2"},
		recs[3]: {"1"},
	}, types: map[*record]string{recs[3]: "T"}}
	r.rewrite(sample, recs)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(sample, "a | 1\n", "a | 1\nb | 2\n", 1)
	want = strings.Replace(want, "query I\nSELECT 1;\n", "query T\nSELECT 1;\n----\n1\n", 1)
	if string(got) != want {
		t.Errorf("rewritten file:\n%s\nwant:\n%s", got, want)
	}
}
