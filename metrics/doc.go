// Package metrics is sqlstreams' Prometheus registry: one Registry per
// server process, served by the REST API on GET /metrics.
//
//	exec, engine ── Registry.Query(id) hooks ─────────────┐
//	   (records in/out/bad, commit latency, lag per       │
//	    partition, restore progress)                      │
//	engine status ── Registry.WatchQueries(list) ─────────┼──▶ Registry ──▶ GET /metrics
//	   (records in/out/bad, commits, aborts, state,       │      (text exposition,
//	    read at scrape time: works without exec changes)  │       client_golang)
//	server/rest, pgwire ── ObserveHTTP, PushQueryStarted ─┘
//
// The package imports nothing of sqlstreams, so the runtime (exec, engine)
// can update it and the servers can serve it without import cycles.
//
// Every method is safe for concurrent use. The reporting methods (the
// Query hooks, ObserveHTTP, PushQueryStarted, AddInsertedRows,
// WatchQueries, DeclareServer) are also safe on a nil *Registry or nil
// *Query, where they do nothing: code that runs without metrics keeps a
// nil handle instead of checking.
//
// Metric names (labels in braces):
//
//	sqlstreams_query_records_in_total{query_id}          counter
//	sqlstreams_query_records_out_total{query_id}         counter
//	sqlstreams_query_bad_records_total{query_id}         counter
//	sqlstreams_query_commits_total{query_id}             counter (engine status)
//	sqlstreams_query_aborts_total{query_id}              counter (engine status)
//	sqlstreams_query_late_records_total{query_id}        counter (engine status)
//	sqlstreams_source_partition_checked_records_total{query_id,source,topic}  counter (engine status)
//	sqlstreams_source_misplaced_records_total{query_id,source,topic}          counter (engine status):
//	    keyed records of a source not in the partition its PARTITIONER gives their key
//	sqlstreams_query_state{query_id,state}               gauge, 1 for the current state
//	sqlstreams_query_commit_latency_seconds{query_id}    histogram (hook)
//	sqlstreams_query_consumer_lag{query_id,topic,partition}                gauge (hook)
//	sqlstreams_query_restore_restored_records{query_id,store,partition}    gauge (hook)
//	sqlstreams_query_restore_total_records{query_id,store,partition}       gauge (hook)
//	sqlstreams_http_requests_total{endpoint,code}        counter
//	sqlstreams_http_request_duration_seconds{endpoint,code}  histogram
//	sqlstreams_active_push_queries{server}               gauge
//	sqlstreams_inserts_stream_rows_total{status}         counter (status ok|error)
//
// plus client_golang's go_* and process_* collectors.
package metrics
