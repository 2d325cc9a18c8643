package rest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
)

// TestQueryStatusEntities: SHOW QUERIES and DESCRIBE EXTENDED over REST
// carry a query's state, since when, restarts and latest failure (kept
// after a recovery), beside ksqlDB's fields.
func TestQueryStatusEntities(t *testing.T) {
	since := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	q := engine.QueryInfo{ID: "CSAS_A_1", Type: "PERSISTENT", Sink: "A", SinkTopic: "A", SQL: "CREATE STREAM a AS …",
		Status: &engine.QueryStatus{State: "RUNNING", Since: since, Restarts: 2, LastErr: "panic: bidder 13", LastErrAt: since.Add(-time.Minute)}}
	b, _ := json.Marshal(toRunningQuery(&q))
	for _, want := range []string{`"state":"RUNNING"`, `"stateSince":"2026-12-02T08:00:00Z"`, `"restarts":2`, `"lastError":"panic: bidder 13"`, `"lastErrorAt":"2026-12-02T07:59:00Z"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("SHOW QUERIES entry %s lacks %s", b, want)
		}
	}
	d := describeSource(&engine.SourceDescription{Source: engine.SourceInfo{Name: "A", Kind: catalog.Stream}, Extended: true, Writer: &q})
	b, _ = json.Marshal(d)
	for _, want := range []string{`"state":"RUNNING"`, `"state-since":"2026-12-02T08:00:00Z"`, `"restarts":2`, `"last-error":"panic: bidder 13"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("DESCRIBE EXTENDED %s lacks %s", b, want)
		}
	}
	p := describeQuery(&engine.Plan{QueryID: "CSAS_A_1", Status: q.Status})
	b, _ = json.Marshal(p)
	if !strings.Contains(string(b), `"queryErrors":[{"errorMessage":"panic: bidder 13","timestamp":`) {
		t.Errorf("EXPLAIN %s lacks the last error in queryErrors", b)
	}
}
