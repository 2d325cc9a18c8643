package pgwire

import (
	"bytes"
	"context"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

func connect(t *testing.T, addr string, params string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, "postgres://tester@"+addr+"/db?application_name=pgwire-test"+params)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// checkTypes runs SELECT TYPES in mode and checks every value decodes to
// what the fake sent.
func checkTypes(t *testing.T, conn *pgx.Conn, mode pgx.QueryExecMode) {
	t.Helper()
	ctx := testCtx(t)
	rows, err := conn.Query(ctx, "SELECT TYPES", mode)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()

	wantOIDs := []uint32{16, 23, 20, 701, 25, 17, 1082, 1083, 1114, 1700, 114}
	fds := rows.FieldDescriptions()
	if len(fds) != len(wantOIDs) {
		t.Fatalf("got %d fields, want %d", len(fds), len(wantOIDs))
	}
	for i, fd := range fds {
		if fd.DataTypeOID != wantOIDs[i] || fd.Name != typesCols[i].Name {
			t.Errorf("field %d: %s oid %d, want %s oid %d", i, fd.Name, fd.DataTypeOID, typesCols[i].Name, wantOIDs[i])
		}
	}

	var (
		b  bool
		i  int32
		l  int64
		d  float64
		s  string
		y  []byte
		dt time.Time
		tm pgtype.Time
		ts time.Time
		n  pgtype.Numeric
		j  []int
	)
	scan := func() {
		t.Helper()
		if !rows.Next() {
			t.Fatalf("missing row: %v", rows.Err())
		}
		if err := rows.Scan(&b, &i, &l, &d, &s, &y, &dt, &tm, &ts, &n, &j); err != nil {
			t.Fatal(err)
		}
	}

	scan()
	if !b || i != -42 || l != 1<<40 || d != 3.25 || s != "héllo" || !bytes.Equal(y, []byte{0, 1, 0xff}) {
		t.Errorf("row 1 scalars: %v %v %v %v %q %x", b, i, l, d, s, y)
	}
	if !dt.Equal(testDate) || !ts.Equal(testTS) {
		t.Errorf("row 1 date %v timestamp %v, want %v %v", dt, ts, testDate, testTS)
	}
	if tm.Microseconds != int64(testTime)*1000 {
		t.Errorf("row 1 time %dµs, want %d", tm.Microseconds, testTime*1000)
	}
	if got := numericRat(t, n); got.Cmp(big.NewRat(12345678, 1000)) != 0 {
		t.Errorf("row 1 numeric %v, want 12345.678", got)
	}
	if len(j) != 3 || j[0] != 1 || j[2] != 3 {
		t.Errorf("row 1 json %v", j)
	}

	if !rows.Next() {
		t.Fatalf("missing NULL row: %v", rows.Err())
	}
	vals, err := rows.Values()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range vals {
		if v != nil {
			t.Errorf("row 2 column %s = %v, want NULL", typesCols[k].Name, v)
		}
	}

	y = nil
	scan()
	if b || i != 0 || l != -1 || d != -0.5 || s != "" || y == nil || len(y) != 0 {
		t.Errorf("row 3: %v %v %v %v %q %#v", b, i, l, d, s, y)
	}
	if !dt.Equal(time.Unix(0, 0)) || !ts.Equal(time.Unix(0, 0)) || tm.Microseconds != 0 {
		t.Errorf("row 3 times: %v %v %v", dt, ts, tm)
	}
	if got := numericRat(t, n); got.Cmp(big.NewRat(-1, 1000)) != 0 {
		t.Errorf("row 3 numeric %v, want -0.001", got)
	}
	if rows.Next() {
		t.Fatal("extra row")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if tag := rows.CommandTag().String(); tag != "SELECT 3" {
		t.Errorf("tag %q, want SELECT 3", tag)
	}
}

func numericRat(t *testing.T, n pgtype.Numeric) *big.Rat {
	t.Helper()
	if !n.Valid || n.NaN || n.InfinityModifier != pgtype.Finite {
		t.Fatalf("numeric not finite: %+v", n)
	}
	r := new(big.Rat).SetInt(n.Int)
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(n.Exp))), nil))
	if n.Exp < 0 {
		return r.Quo(r, p)
	}
	return r.Mul(r, p)
}

func abs(x int32) int32 {
	if x < 0 {
		return -x
	}
	return x
}

// (a) pgx's default mode: Parse/Describe/Sync, then Bind asking for binary
// results, Execute, Sync. Default sslmode also exercises SSLRequest.
func TestPgxExtendedTypes(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	conn := connect(t, addr, "")
	checkTypes(t, conn, pgx.QueryExecModeCacheStatement)
	// The cached statement is reused without a new Parse.
	checkTypes(t, conn, pgx.QueryExecModeCacheStatement)
	// Unnamed statements, described each time.
	checkTypes(t, conn, pgx.QueryExecModeDescribeExec)

	ps := conn.PgConn().ParameterStatus
	if ps("server_version") != ServerVersion || ps("standard_conforming_strings") != "on" ||
		ps("application_name") != "pgwire-test" || ps("TimeZone") != "UTC" || ps("integer_datetimes") != "on" {
		t.Errorf("parameter statuses: version %q scs %q app %q",
			ps("server_version"), ps("standard_conforming_strings"), ps("application_name"))
	}
}

// (b) the simple protocol: text results.
func TestPgxSimpleTypes(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	conn := connect(t, addr, "&sslmode=disable")
	checkTypes(t, conn, pgx.QueryExecModeSimpleProtocol)
}

func TestPgxCommandTag(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	conn := connect(t, addr, "&sslmode=disable")
	ctx := testCtx(t)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		tag, err := conn.Exec(ctx, "CREATE STREAM S", mode)
		if err != nil || tag.String() != "CREATE STREAM" {
			t.Errorf("mode %v: tag %q err %v", mode, tag, err)
		}
	}
}

// (c) errors carry their SQLSTATE and position.
func TestPgxErrors(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	conn := connect(t, addr, "&sslmode=disable")
	ctx := testCtx(t)

	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		var n int
		err := conn.QueryRow(ctx, "SELECT NOSUCH", mode).Scan(&n)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("mode %v: error %v is not a *pgconn.PgError", mode, err)
		}
		if pe.Code != "42703" || pe.Position != 8 || pe.Severity != "ERROR" || !strings.Contains(pe.Message, "NOSUCH") {
			t.Errorf("mode %v: %+v", mode, pe)
		}
		// The connection is still usable.
		if err := conn.QueryRow(ctx, "SELECT ONE", mode).Scan(&n); err != nil || n != 1 {
			t.Fatalf("mode %v: after error: %v %v", mode, n, err)
		}
	}

	// Positions count from the start of the whole query string, in
	// characters, when several statements share it.
	q := "SELECT ONE; -- é\n  SELECT NOSUCH; SELECT ONE"
	_, err := conn.PgConn().Exec(ctx, q).ReadAll()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("multi-statement: %v", err)
	}
	wantPos := int32(len([]rune(q[:strings.Index(q, "NOSUCH")]))) + 1
	if pe.Code != "42703" || pe.Position != wantPos {
		t.Errorf("multi-statement: code %s position %d, want 42703 %d", pe.Code, pe.Position, wantPos)
	}

	// Other errors are internal errors.
	_, err = conn.Exec(ctx, "FAIL")
	if !errors.As(err, &pe) || pe.Code != "XX000" || pe.Message != "boom" || pe.Position != 0 {
		t.Errorf("FAIL: %v", err)
	}
}

// Several statements in one Query all run, in order, until one fails.
func TestPgxMultiStatement(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	conn := connect(t, addr, "&sslmode=disable")
	ctx := testCtx(t)
	res, err := conn.PgConn().Exec(ctx, "SELECT ONE; CREATE STREAM S;; SELECT ONE;").ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, r := range res {
		tags = append(tags, r.CommandTag.String())
	}
	if got := strings.Join(tags, ","); got != "SELECT 1,CREATE STREAM,SELECT 1" {
		t.Errorf("tags %s", got)
	}
	if string(res[0].Rows[0][0]) != "1" {
		t.Errorf("first result %q", res[0].Rows)
	}

	res, err = conn.PgConn().Exec(ctx, "SELECT ONE; BOGUS; CREATE STREAM S").ReadAll()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42601" || len(res) != 1 || res[0].CommandTag.String() != "SELECT 1" {
		t.Errorf("after failure: %d results, err %v", len(res), err)
	}
}

// (e) a push query streams: the first row arrives while the statement is
// still running, and closing the connection cancels the statement.
func TestPushStreamsAndStopsOnClose(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	conn := connect(t, addr, "&sslmode=disable")
	rows, err := conn.Query(testCtx(t), "PUSH")
	if err != nil {
		t.Fatal(err)
	}
	for want := int64(0); want < 3; want++ {
		if !rows.Next() {
			t.Fatalf("no row %d: %v", want, rows.Err())
		}
		var n int64
		if err := rows.Scan(&n); err != nil || n != want {
			t.Fatalf("row %d: %d %v", want, n, err)
		}
	}
	select {
	case <-fx.pushEnded:
		t.Fatal("PUSH ended before the client left")
	default:
	}
	conn.PgConn().Conn().Close()
	if err := waitPushEnd(t, fx, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("PUSH ctx error %v, want context.Canceled", err)
	}
}

// (f) a CancelRequest stops a running push query; the connection goes on.
func TestCancelRequest(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	conn := connect(t, addr, "&sslmode=disable")
	ctx := testCtx(t)
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeSimpleProtocol} {
		rows, err := conn.Query(ctx, "PUSH", mode)
		if err != nil {
			t.Fatal(err)
		}
		if !rows.Next() {
			t.Fatalf("no first row: %v", rows.Err())
		}
		if err := conn.PgConn().CancelRequest(ctx); err != nil {
			t.Fatal(err)
		}
		if err := waitPushEnd(t, fx, 5*time.Second); !errors.Is(err, context.Canceled) {
			t.Errorf("PUSH ctx error %v", err)
		}
		for rows.Next() {
		}
		var pe *pgconn.PgError
		if err := rows.Err(); !errors.As(err, &pe) || pe.Code != "57014" {
			t.Fatalf("mode %v: rows.Err() = %v, want 57014", mode, err)
		}
		var n int
		if err := conn.QueryRow(ctx, "SELECT ONE", mode).Scan(&n); err != nil || n != 1 {
			t.Fatalf("after cancel: %v %v", n, err)
		}
	}
}

// A CancelRequest with the wrong secret does nothing.
func TestCancelRequestWrongKey(t *testing.T) {
	fx := newFake()
	s, addr := startServer(t, fx, false)
	conn := connect(t, addr, "&sslmode=disable")
	ctx := testCtx(t)
	rows, err := conn.Query(ctx, "PUSH")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	s.cancelRequest(conn.PgConn().PID(), []byte("nope"))
	s.cancelRequest(conn.PgConn().PID()+1, conn.PgConn().SecretKey())
	for k := 0; k < 5; k++ {
		if !rows.Next() {
			t.Fatalf("push stopped: %v", rows.Err())
		}
	}
	s.cancelRequest(conn.PgConn().PID(), conn.PgConn().SecretKey())
	for rows.Next() {
	}
	var pe *pgconn.PgError
	if !errors.As(rows.Err(), &pe) || pe.Code != "57014" {
		t.Fatalf("rows.Err() = %v", rows.Err())
	}
}

// Clients asking for protocol 3.2 are negotiated down to 3.0.
func TestProtocolNegotiation(t *testing.T) {
	fx := newFake()
	_, addr := startServer(t, fx, false)
	conn := connect(t, addr, "&sslmode=disable&max_protocol_version=latest")
	var n int
	if err := conn.QueryRow(testCtx(t), "SELECT ONE").Scan(&n); err != nil || n != 1 {
		t.Fatal(n, err)
	}
}

// Close stops running statements and connections promptly.
func TestServerCloseStopsPush(t *testing.T) {
	fx := newFake()
	s, addr := startServer(t, fx, false)
	conn := connect(t, addr, "&sslmode=disable")
	rows, err := conn.Query(testCtx(t), "PUSH")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatal(rows.Err())
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if err := waitPushEnd(t, fx, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("PUSH ctx error %v", err)
	}
	for rows.Next() {
	}
	if rows.Err() == nil {
		t.Error("rows ended without error after server close")
	}
	if _, err := pgx.Connect(testCtx(t), "postgres://x@"+addr+"/db?sslmode=disable&connect_timeout=2"); err == nil {
		t.Error("connected after Close")
	}
}
