package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func scrape(t *testing.T, r *Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	r.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func wantLines(t *testing.T, out string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if !strings.Contains(out, l+"\n") {
			t.Errorf("metrics output lacks %q", l)
		}
	}
}

func TestWatchedQueriesExportEngineStatus(t *testing.T) {
	r := New()
	r.WatchQueries(func() []QueryStats {
		return []QueryStats{{ID: "CSAS_A_1", State: "RUNNING", RecordsIn: 7, RecordsOut: 5, BadRecords: 2, Commits: 3, LateRecords: 4}}
	})
	wantLines(t, scrape(t, r),
		`sqlstreams_query_records_in_total{query_id="CSAS_A_1"} 7`,
		`sqlstreams_query_records_out_total{query_id="CSAS_A_1"} 5`,
		`sqlstreams_query_bad_records_total{query_id="CSAS_A_1"} 2`,
		`sqlstreams_query_late_records_total{query_id="CSAS_A_1"} 4`,
		`sqlstreams_query_commits_total{query_id="CSAS_A_1"} 3`,
		`sqlstreams_query_state{query_id="CSAS_A_1",state="RUNNING"} 1`,
	)
}

func TestHooksWinOverStatusAndCloseRemovesSeries(t *testing.T) {
	r := New()
	r.WatchQueries(func() []QueryStats {
		return []QueryStats{{ID: "Q_1", State: "RUNNING", RecordsIn: 100}}
	})
	q := r.Query("Q_1")
	if r.Query("Q_1") != q {
		t.Fatal("Query returned a second handle for the same id")
	}
	q.AddRecordsIn(3)
	q.AddRecordsOut(2)
	q.ObserveCommit(4 * time.Millisecond)
	q.SetLag("in", 1, 42)
	q.SetRestore("agg", 0, 10, 20)
	other := r.Query("Q_2") // not in the catalog (yet): exported once it counts
	other.AddBadRecords(1)
	out := scrape(t, r)
	wantLines(t, out,
		`sqlstreams_query_records_in_total{query_id="Q_1"} 3`,
		`sqlstreams_query_records_out_total{query_id="Q_1"} 2`,
		`sqlstreams_query_bad_records_total{query_id="Q_2"} 1`,
		`sqlstreams_query_commit_latency_seconds_count{query_id="Q_1"} 1`,
		`sqlstreams_query_consumer_lag{partition="1",query_id="Q_1",topic="in"} 42`,
		`sqlstreams_query_restore_restored_records{partition="0",query_id="Q_1",store="agg"} 10`,
		`sqlstreams_query_restore_total_records{partition="0",query_id="Q_1",store="agg"} 20`,
	)
	if strings.Contains(out, `sqlstreams_query_records_in_total{query_id="Q_1"} 100`) {
		t.Error("status counts exported next to hook counts")
	}
	q.Close()
	out = scrape(t, r)
	for _, gone := range []string{"sqlstreams_query_consumer_lag{", "sqlstreams_query_restore_total_records{", `commit_latency_seconds_count{query_id="Q_1"}`} {
		if strings.Contains(out, gone) {
			t.Errorf("%s still exported after Close", gone)
		}
	}
	wantLines(t, out, `sqlstreams_query_records_in_total{query_id="Q_1"} 100`)
}

func TestNilHandlesAreNoOps(t *testing.T) {
	var r *Registry
	q := r.Query("x")
	q.AddRecordsIn(1)
	q.ObserveCommit(time.Second)
	q.SetLag("t", 0, 1)
	q.SetRestore("s", 0, 1, 2)
	q.Close()
	r.ObserveHTTP("/ksql", 200, time.Millisecond)
	r.PushQueryStarted("rest")()
	r.AddInsertedRows(true, 1)
	r.WatchQueries(nil)
}

func TestHTTPAndPushMetrics(t *testing.T) {
	r := New()
	r.ObserveHTTP("/ksql", 200, 3*time.Millisecond)
	done := r.PushQueryStarted("rest")
	r.AddInsertedRows(true, 2)
	r.AddInsertedRows(false, 1)
	wantLines(t, scrape(t, r),
		`sqlstreams_http_requests_total{code="200",endpoint="/ksql"} 1`,
		`sqlstreams_active_push_queries{server="rest"} 1`,
		`sqlstreams_inserts_stream_rows_total{status="ok"} 2`,
		`sqlstreams_inserts_stream_rows_total{status="error"} 1`,
	)
	done()
	done() // a second call must not go below zero
	wantLines(t, scrape(t, r), `sqlstreams_active_push_queries{server="rest"} 0`)
}
