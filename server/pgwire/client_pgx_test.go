package pgwire

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var pgxModes = []pgx.QueryExecMode{
	pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec,
	pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol,
}

// pgx in each of its extended-protocol modes inserts rows with parameters
// (typed by inference from the stream's columns, sent in binary) and
// reads them back with a push query taking a parameter, on the real
// server. In the simple protocol pgx writes every argument as a quoted
// string ('1', 't'), which the engine does not coerce to INT or BOOLEAN
// yet, so that mode is checked with STRING parameters.
func TestRealPgxParameters(t *testing.T) {
	s := sharedReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := s.pgxConn(t, ctx)
	if _, err := conn.Exec(ctx, "CREATE STREAM PGX_PARAMS (ID INT KEY, NAME STRING, AMOUNT DOUBLE, AT TIMESTAMP, OK BOOLEAN, BIG BIGINT) WITH (KAFKA_TOPIC='pgx_params', VALUE_FORMAT='JSON', PARTITIONS=1)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET 'auto.offset.reset'='earliest'"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 2, 29, 13, 14, 15, 123e6, time.UTC)
	// A quote, a backslash and a would-be comment cannot escape their literal.
	name := `it's \ a -- "test"; DROP STREAM PGX_PARAMS`
	extended := pgxModes[:4]
	for i, mode := range extended {
		id := int32(i + 1)
		tag, err := conn.Exec(ctx, "INSERT INTO PGX_PARAMS (ID, NAME, AMOUNT, AT, OK, BIG) VALUES ($1, $2, $3, $4, $5, $6)",
			mode, id, name, 1.25*float64(id), at, id%2 == 0, int64(id)<<40)
		if err != nil || tag.String() != "INSERT 0 1" {
			t.Fatalf("mode %v: insert: %v %v", mode, tag, err)
		}
	}
	for i, mode := range extended {
		id := int32(i + 1)
		var (
			gotName string
			amount  float64
			gotAt   time.Time
			ok      bool
			big     int64
		)
		err := conn.QueryRow(ctx, "SELECT NAME, AMOUNT, AT, OK, BIG FROM PGX_PARAMS WHERE ID = $1 EMIT CHANGES LIMIT 1", mode, id).
			Scan(&gotName, &amount, &gotAt, &ok, &big)
		if err != nil {
			t.Fatalf("mode %v: select: %v", mode, err)
		}
		if gotName != name || amount != 1.25*float64(id) || !gotAt.Equal(at) || ok != (id%2 == 0) || big != int64(id)<<40 {
			t.Errorf("mode %v: got %q %v %v %v %v", mode, gotName, amount, gotAt, ok, big)
		}
	}

	simple := pgx.QueryExecModeSimpleProtocol
	if _, err := conn.Exec(ctx, "INSERT INTO PGX_PARAMS (ID, NAME, AT) VALUES (99, $1, $2)", simple, "simple "+name, at); err != nil {
		t.Fatalf("simple protocol insert: %v", err)
	}
	var id int32
	var gotAt time.Time
	if err := conn.QueryRow(ctx, "SELECT ID, AT FROM PGX_PARAMS WHERE NAME = $1 EMIT CHANGES LIMIT 1", simple, "simple "+name).Scan(&id, &gotAt); err != nil || id != 99 || !gotAt.Equal(at) {
		t.Errorf("simple protocol select: %d %v %v", id, gotAt, err)
	}
}

// Rows of a push query reach pgx as they are produced; a CancelRequest
// stops the query (57014), frees its consumer and leaves the connection
// usable.
func TestRealPgxPushStreamsAndCancels(t *testing.T) {
	s := sharedReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := s.pgxConn(t, ctx)
	writer := s.pgxConn(t, ctx)
	if _, err := conn.Exec(ctx, "CREATE STREAM PGX_PUSH (ID INT KEY, V STRING) WITH (KAFKA_TOPIC='pgx_push', VALUE_FORMAT='JSON', PARTITIONS=1)"); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Exec(ctx, "INSERT INTO PGX_PUSH (ID, V) VALUES (0, 'warm-up')"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET 'auto.offset.reset'='earliest'"); err != nil {
		t.Fatal(err)
	}
	for k, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		t.Run(fmt.Sprint(mode), func(t *testing.T) {
			// Each run reads only its own rows, from the start of the topic.
			// Rows are produced after the query started, one at a time, and
			// each is read before the next is produced.
			query := fmt.Sprintf("SELECT ID, V FROM PGX_PUSH WHERE ID > %d EMIT CHANGES", 10*k)
			produce := func(id int) {
				if _, err := writer.Exec(ctx, "INSERT INTO PGX_PUSH (ID, V) VALUES ($1, 'row')", id); err != nil {
					t.Error(err)
				}
			}
			// pgx's Query returns with the first row, so that one comes
			// from another goroutine.
			first := make(chan struct{})
			go func() {
				defer close(first)
				time.Sleep(300 * time.Millisecond)
				produce(10*k + 1)
			}()
			rows, err := conn.Query(ctx, query, mode)
			if err != nil {
				t.Fatal(err)
			}
			for i := 10*k + 1; i <= 10*k+3; i++ {
				if i > 10*k+1 {
					<-first
					produce(i)
				}
				if !rows.Next() {
					t.Fatalf("row %d: %v", i, rows.Err())
				}
				var id int32
				var v string
				if err := rows.Scan(&id, &v); err != nil || id != int32(i) {
					t.Fatalf("row %d: got %d %v", i, id, err)
				}
			}
			if err := conn.PgConn().CancelRequest(ctx); err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
			}
			var pe *pgconn.PgError
			if err := rows.Err(); !errors.As(err, &pe) || pe.Code != "57014" {
				t.Fatalf("after cancel: %v, want 57014", err)
			}
			// The engine's Execute has returned: the push query's consumer
			// is closed.
			if !s.WaitLog(10*time.Second, "statement ended", query, "canceled") {
				t.Errorf("the push query did not end")
			}
			var one int
			if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
				t.Errorf("connection after cancel: %v", err)
			}
		})
	}
}

// Closing the connection in the middle of a push query frees its consumer.
func TestRealPgxCloseStopsPush(t *testing.T) {
	s := sharedReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	writer := s.pgxConn(t, ctx)
	if _, err := writer.Exec(ctx, "CREATE STREAM PGX_CLOSE (ID INT KEY) WITH (KAFKA_TOPIC='pgx_close', VALUE_FORMAT='JSON', PARTITIONS=1)"); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Exec(ctx, "INSERT INTO PGX_CLOSE (ID) VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, s.url("tester"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SET 'auto.offset.reset'='earliest'"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "SELECT ID FROM PGX_CLOSE EMIT CHANGES")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	conn.PgConn().Conn().Close()
	if !s.WaitLog(10*time.Second, "statement ended", "SELECT ID FROM PGX_CLOSE EMIT CHANGES", "canceled") {
		t.Errorf("the push query did not end when its client left")
	}
}

// pg_catalog and information_schema queries of tools work through pgx's
// extended protocol, with parameters.
func TestRealPgxCatalog(t *testing.T) {
	s := sharedReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn := s.pgxConn(t, ctx)
	if _, err := conn.Exec(ctx, "CREATE STREAM PGX_CAT (ID INT KEY, V STRING) WITH (KAFKA_TOPIC='pgx_cat', VALUE_FORMAT='JSON', PARTITIONS=1)"); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, "SELECT column_name, data_type, ordinal_position FROM information_schema.columns WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position", "PGX_CAT")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var name, typ string
		var pos int
		if err := rows.Scan(&name, &typ, &pos); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d:%s:%s", pos, name, typ))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1:ID:integer 2:V:text]" {
		t.Errorf("columns: %v", got)
	}
	var tables []string
	rows, err = conn.Query(ctx, "SELECT tablename FROM pg_catalog.pg_tables WHERE schemaname = 'public' AND tablename LIKE 'PGX_C%'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	if fmt.Sprint(tables) != "[PGX_CAT PGX_CLOSE]" && fmt.Sprint(tables) != "[PGX_CAT]" {
		t.Errorf("pg_tables: %v", tables)
	}
	var version, db string
	if err := conn.QueryRow(ctx, "SELECT version(), current_database()").Scan(&version, &db); err != nil || db != "db" {
		t.Errorf("version(): %q %q %v", version, db, err)
	}
}
