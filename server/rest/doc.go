// Package rest serves sqlstreams' HTTP API, following ksqlDB's REST API so
// that its clients (the ksqlDB CLI, the Java client, curl recipes) work.
//
//	HTTP request ─▶ metrics (sqlstreams_http_*) ─▶ basic auth ─▶ route
//	   POST /ksql            sql.Split ─▶ per statement: sql.Parse (once)
//	                         ─▶ Engine.ExecuteStatement ─▶ Result (Change:
//	                         query ID, source, topic, command offset)
//	                         ─▶ ksqlDB entity (currentStatus, streams,
//	                         tables, queries, sourceDescription, …)
//	   POST /query-stream    one SELECT ─▶ Engine.ExecuteStatement(ctx = request)
//	                         ─▶ header {queryId, columnNames, columnTypes},
//	                            rows as JSON arrays (delimited or one array)
//	   POST /query           the older format: [{"header"}, {"row"}, …, {"finalMessage"}]
//	   POST /close-query     cancels a push query started on /query-stream
//	   POST /inserts-stream  {"target"} then one JSON object per line
//	                         ─▶ INSERT … VALUES ─▶ {"status":"ok","seq":n} per row
//	   GET  /info, /healthcheck, /status[/<commandId>], /metrics
//
// Files: server.go (routing, middleware, options), ksql.go (/ksql),
// entities.go (its SHOW, DESCRIBE and EXPLAIN entities), stream.go
// (/query-stream, /query, /close-query), inserts.go
// (/inserts-stream), info.go (/info, /healthcheck, /status), errors.go
// (error bodies), values.go (row and type rendering), auth.go (basic
// auth users, loopback check).
//
// Errors are ksqlDB's KsqlErrorMessage: {"@type": "generic_error" or
// "statement_error", "error_code": 40001, "message": …}. A statement error
// also carries "statementText" and the entities of the statements that
// ran before it, plus sqlstreams' "sqlState", "line" and "column" (1-based,
// within the statement) when the error points into the statement.
//
// Push queries run in the request's goroutine with the request's context:
// a client that disconnects, /close-query, or Server.Close ends them.
package rest
