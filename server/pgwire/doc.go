// Package pgwire serves sqlstreams over the Postgres wire protocol (v3), so
// that psql, pgx, JDBC, node-postgres, psycopg and other Postgres clients
// can run statements, pull queries and push queries.
//
// It owns the protocol and nothing else: connections and their startup,
// the simple and extended query protocols, cancel requests, the mapping of
// SQL types to Postgres type OIDs with their text and binary encodings,
// and the mapping of statement errors (*sql.Error with a SQLSTATE) to
// ErrorResponse. Statements are run by an engine.Executor; one
// engine.Session per connection holds what SET changes.
//
//	client ──TCP──▶ conn reader goroutine ──chan──▶ conn handler goroutine
//	                (decodes messages; on EOF or      (one message at a time:
//	                 Terminate cancels the running     Query, Parse/Bind/…/Sync)
//	                 statement)                              │
//	                                                         ▼
//	                                          engine.Executor.Execute(ctx, …, ResultWriter)
//	                                                         │ Columns, Row, Row, …
//	                                                         ▼
//	client ◀──TCP── writer (buffer; rows flushed at 16 KiB or after the flush delay)
//
// A CancelRequest on a new connection cancels the running statement of the
// connection with that key; the client sees SQLSTATE 57014. Closing the
// socket or sending Terminate cancels it too, so a push query stops as
// soon as its client leaves.
//
// Files follow message families: startup.go (SSL/GSS negotiation, startup,
// cancel), simple.go (Query), extended.go (Parse, Bind, Describe, Execute,
// Close, Sync, Flush), result.go (rows to DataRow), encode.go (types, OIDs,
// formats), errors.go (ErrorResponse), wire.go (framing and flushing),
// conn.go (connection life), server.go (listener and registry). Each file
// opens with what it supports and what it does not yet.
//
// This package imports engine, sql (only Error, Errorf and Split) and types.
package pgwire
