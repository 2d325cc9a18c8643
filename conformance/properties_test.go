package conformance

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestCaseProperties: a QTT case's properties are set as SET sets them
// (the engine's registry): one the registry refuses fails the case naming
// it; the harness's own (use.exact.numeric.comparison, …) are not the
// engine's; one with an effect has it (the default value format).
func TestCaseProperties(t *testing.T) {
	stmts := []string{
		"CREATE STREAM src (id INT KEY, v INT) WITH (KAFKA_TOPIC='src', PARTITIONS=1);",
		"CREATE STREAM out AS SELECT id, v FROM src;",
	}
	key := json.Number("1")
	ts := int64(1)
	in := []Record{{Topic: "src", Key: key, Value: map[string]any{"V": json.Number("2")}, Timestamp: &ts}}
	out := []Record{{Topic: "OUT", Key: key, Value: map[string]any{"V": json.Number("2")}, Timestamp: &ts}}
	good := map[string]string{
		"ksql.persistence.default.format.value":  "JSON",
		"use.exact.numeric.comparison":           "false",
		"ksql.new.query.planner.enabled":         "true",
		"ksql.streams.cache.max.bytes.buffering": "0",
	}
	bad := map[string]string{"ksql.persistence.default.format.value": "JSON", "ksql.no.such.thing": "1"}
	cases := []Case{
		{File: "props", Name: "good", Statements: stmts, Properties: good, Inputs: in, Outputs: out},
		{File: "props", Name: "bad", Statements: stmts, Properties: bad, Inputs: in, Outputs: out},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, r := range Run(ctx, cases, Options{Parallel: 2, Timeout: 60 * time.Second}) {
		switch r.Name {
		case "good":
			if r.Status != Pass {
				t.Errorf("good: %s (%s)\n%s", r.Status, r.Reason, r.Detail)
			}
		case "bad":
			if r.Status != Fail || r.Reason != "property refused" || !strings.Contains(r.Detail, "Unknown property: ksql.no.such.thing") {
				t.Errorf("bad: %s (%s) %s, want it refused naming ksql.no.such.thing", r.Status, r.Reason, r.Detail)
			}
		}
	}
}
