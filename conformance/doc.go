// Package conformance runs ksqlDB's test files against sqlstreams: the
// query-validation tests (QTT) of ksqlDB's functional tests, the REST
// query-validation tests (RQTT, rqtt.go: statements over the REST
// server's /ksql, queries over /query, as ksqlDB's RestTestExecutor runs
// them), the ksql-test-runner form (a SQL file, an input file, an output
// file) and ksqlDB's SQL test files (sql-tests/: --@test blocks with
// ASSERT statements, see sqltest.go). It is what `sqlstreams test` runs.
//
//	files ──▶ Load ──▶ cases (format × config expanded) ──▶ Run ──▶ results ──▶ Summarize
//	                                                        │
//	          per case: embedded broker (kfake) + schema registry when needed
//	                    + engine; topics created, statements executed,
//	                    inputs produced, wait until every query's group has
//	                    consumed its input, outputs read read_committed and
//	                    compared as ksqlDB's runner compares them
//
// Each case runs on its own broker and engine, so cases are independent
// and may run in parallel; a result does not depend on timing. The package
// never holds ksqlDB's files: callers pass the paths.
package conformance
