// Package sqllogic runs the sqllogictest files in testdata/ against a real
// sqlstreams server, over the Postgres wire protocol.
//
//	go test ./tests/sqllogic/                     every .slt file
//	go test ./tests/sqllogic/ -run 'SQLLogic/restart'   one file
//	go test ./tests/sqllogic/ -rewrite            rewrite expected results
//
//	each .slt ─▶ its own server process, started by tests/testserver
//	             (go build ./cmd/sqlstreams once; temp data dir, free
//	             ports, embedded broker) ─▶ pgx connection + franz-go clients
//	             ─▶ directives in order: statement, query, produce,
//	                wait-caught-up, restart, kill, halt
//
// The file dialect is described in README.md. Everything here is test
// code; this file exists only to document the package.
package sqllogic
