// Package pgwire serves sqlstreams over the Postgres wire protocol (v3), so
// that psql, pgx, JDBC, node-postgres, psycopg and other Postgres clients
// can run statements, pull queries and push queries.
//
// It owns the protocol and nothing else: connections and their startup
// (TLS, SCRAM-SHA-256), the simple and extended query protocols with
// parameters and suspended portals, cancel requests, limits, the mapping
// of SQL types to Postgres type OIDs with their text and binary encodings,
// the mapping of statement errors (*sql.Error with a SQLSTATE) to
// ErrorResponse, and the Postgres-specific statements drivers and tools
// send (SET/SHOW of session parameters, BEGIN/COMMIT, version(), the
// pg_catalog queries behind psql's \d, COPY … TO STDOUT), which it answers
// itself. Statements are run by an engine.Executor; one engine.Session
// per connection holds what SET 'prop'='value' changes.
//
//	client ──TCP/TLS──▶ conn reader goroutine ──chan──▶ conn handler goroutine
//	                    (decodes messages; on EOF or     (one message at a time:
//	                     Terminate cancels the running    Query, Parse/Bind/…/Sync)
//	                     statement)                              │
//	                                        intercept: pgwire's own answer? ──┐
//	                                                             │ no         │ yes
//	                                                             ▼            ▼
//	                                  engine.Executor.Execute(ctx, …)    local statement
//	                                                             │ Columns, Row, Row, …
//	                                                             ▼
//	client ◀──TCP── writer (buffer; rows flushed at 16 KiB or after the flush delay,
//	                        the rest at Sync, Flush or ReadyForQuery)
//
// How a connection waits for its client is the server's socketIO
// (platform.go), the one interface the platform-specific I/O sits
// behind. The plain path (plainIO), on every platform and with
// WithPlainIO: the conn's goroutines read its net.Conn, waiting in the
// Go runtime's network poller. On Linux two more ways shorten a pull query's round trip
// (bench/README.md has the figures):
//
//   - a lone connection's socket leaves the network poller and its
//     goroutine reads it itself, spinning briefly, then waiting in
//     ppoll(2) on its own thread (sockConn, unpolled_linux.go;
//     spinReader, spin_linux.go);
//   - with several connections, one idle between statements parks in a
//     serving loop, an epoll set that answers planned point lookups on
//     its own thread (evloop_linux.go); anything else goes back to the
//     connection's goroutine. The ownership protocol between the two is
//     the park state machine in evloop.go.
//
// linuxIO (platform_linux.go) is the default on Linux and plugs those
// in; platform_other.go chooses the plain path elsewhere.
//
// A CancelRequest on a new connection cancels the running statement of the
// connection with that key; the client sees SQLSTATE 57014. Closing the
// socket or sending Terminate cancels it too, so a push query stops, and
// its consumer closes, as soon as its client leaves.
//
// Files follow message families: startup.go (SSL/GSS negotiation, startup,
// limits, cancel), auth.go (SCRAM-SHA-256), simple.go (Query), extended.go
// (Parse, Bind, Describe, Execute, Close, Sync, Flush), cursor.go
// (Execute with a row limit), params.go ($n parameters), intercept.go
// (statements pgwire answers: transactions, SET/SHOW, SELECT without FROM),
// session.go (session parameters), pgcatalog.go (pg_catalog and
// information_schema), copy.go (COPY TO STDOUT), lex.go (the tokenizer
// those use), result.go (rows to DataRow), encode.go (types, OIDs,
// formats), errors.go (ErrorResponse), wire.go (framing and flushing),
// conn.go (connection life, timeouts), evloop.go (parking idle
// connections), server.go (listener, registry,
// connection limit), options.go. Each file opens with what it supports and
// what it does not.
//
// Tests run the fake executor in fake_test.go for protocol details, and
// the real binary with psql, pgx, node-postgres (testdata/node) and
// psycopg2 (testdata/psycopg2_test.py) in client_*_test.go. TestSoak runs
// 200 clients against the real engine in process (PGWIRE_SOAK=1m for a
// minute); FuzzMessages and FuzzAuth fuzz the message loop.
//
// This package imports engine, catalog, sql (Error, Errorf, Split, Blank)
// and types.
package pgwire
