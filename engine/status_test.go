package engine_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/engine"
)

// TestShowQueriesExtended: SHOW QUERIES EXTENDED gives each query's state,
// since when, restarts and latest failure (kept after a recovery).
func TestShowQueriesExtended(t *testing.T) {
	since := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	failed := since.Add(-time.Minute)
	l := &engine.QueryList{Extended: true, Queries: []engine.QueryInfo{
		{ID: "CSAS_A_1", Type: "PERSISTENT", Sink: "A", SinkTopic: "A", SQL: "CREATE STREAM a AS …",
			Status: &engine.QueryStatus{State: "RUNNING", Since: since, Restarts: 2, LastErr: "panic: bidder 13", LastErrAt: failed, RecordsIn: 7, RecordsOut: 5, BadRecords: 1}},
		{ID: "CSAS_B_2", Type: "PERSISTENT", Sink: "B", SinkTopic: "B", SQL: "CREATE STREAM b AS …"},
	}}
	cols, rows := l.Table()
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, "|"); got != "Query ID|Query Type|Status|Since|Restarts|Last Error|Records In|Records Out|Bad Records|Sink Name|Sink Kafka Topic|Query String" {
		t.Fatalf("columns %s", got)
	}
	want := []string{
		"CSAS_A_1|PERSISTENT|RUNNING|2026-12-02T08:00:00Z|2|2026-12-02T07:59:00Z panic: bidder 13|7|5|1|A|A|CREATE STREAM a AS …",
		"CSAS_B_2|PERSISTENT|UNKNOWN|||||||B|B|CREATE STREAM b AS …",
	}
	for i, r := range rows {
		if got := strings.Join(r, "|"); got != want[i] {
			t.Errorf("row %d: %s\nwant      %s", i, got, want[i])
		}
	}
}
