package pgwire

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// fakeExec is an engine.Executor with a few fixed statements:
//
//	SELECT ONE        one INT column, one row (1)
//	SELECT TYPES      a column of every type, rows typesRows
//	CREATE STREAM S   no rows, tag CREATE STREAM
//	SELECT NOSUCH     a *sql.Error pointing at NOSUCH (Describe and Execute)
//	FAIL              a plain Go error
//	PUSH              one BIGINT column, a row every few ms until ctx ends
//	PANIC             panics
//	SLOW              like PUSH, but sends no row until ctx ends
//	ECHO text         one STRING column ECHO, one row: text as sent
//
// anything else is a syntax error at offset 0.
type fakeExec struct {
	// pushLimit stops PUSH after that many rows; 0 runs until cancelled.
	pushLimit int
	// noPanic makes PANIC an error, for the fuzzer.
	noPanic bool
	// pushEnded receives ctx.Err() each time a PUSH ends.
	pushEnded chan error
	// oneAsBigint makes SELECT ONE return a BIGINT, as if its source
	// changed between Describe and Execute.
	oneAsBigint atomic.Bool
}

func newFake() *fakeExec { return &fakeExec{pushEnded: make(chan error, 16)} }

var (
	dec103 = types.Type{Kind: types.Decimal, Precision: 10, Scale: 3}
	arrInt = types.Type{Kind: types.Array, Elem: &types.IntType}

	typesCols = []types.Column{
		{Name: "B", Type: types.BooleanType},
		{Name: "I", Type: types.IntType},
		{Name: "L", Type: types.BigintType},
		{Name: "D", Type: types.DoubleType},
		{Name: "S", Type: types.StringType},
		{Name: "Y", Type: types.BytesType},
		{Name: "DT", Type: types.DateType},
		{Name: "TM", Type: types.TimeType},
		{Name: "TS", Type: types.TimestampType},
		{Name: "N", Type: dec103},
		{Name: "J", Type: arrInt},
	}

	testTS   = time.Date(2024, 2, 29, 13, 14, 15, 123e6, time.UTC)
	testDate = time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)
	testTime = (13*3600+14*60+15)*1000 + 123 // ms since midnight

	typesRows = []types.Row{
		{
			types.BoolDatum(true),
			types.IntDatum(-42),
			types.IntDatum(1 << 40),
			types.DoubleDatum(3.25),
			types.StringDatum("héllo"),
			{B: []byte{0, 1, 0xff}},
			types.IntDatum(testDate.Unix() / 86400),
			types.IntDatum(int64(testTime)),
			types.IntDatum(testTS.UnixMilli()),
			types.IntDatum(12345678),
			{L: []types.Datum{types.IntDatum(1), types.IntDatum(2), types.IntDatum(3)}},
		},
		{
			types.NullDatum, types.NullDatum, types.NullDatum, types.NullDatum,
			types.NullDatum, types.NullDatum, types.NullDatum, types.NullDatum,
			types.NullDatum, types.NullDatum, types.NullDatum,
		},
		{
			types.BoolDatum(false),
			types.IntDatum(0),
			types.IntDatum(-1),
			types.DoubleDatum(-0.5),
			{B: []byte{}}, // empty, not NULL
			{B: []byte{}},
			types.IntDatum(0), // 1970-01-01
			types.IntDatum(0),
			types.IntDatum(0),
			types.IntDatum(-1),
			types.StringDatum("[]"),
		},
	}

	oneCols  = []types.Column{{Name: "N", Type: types.IntType}}
	pushCols = []types.Column{{Name: "N", Type: types.BigintType}}
)

// normalize strips leading comments and space and upper-cases stmt.
func normalize(stmt string) string {
	for {
		stmt = strings.TrimSpace(stmt)
		switch {
		case strings.HasPrefix(stmt, "--"):
			_, stmt, _ = strings.Cut(stmt, "\n")
		case strings.HasPrefix(stmt, "/*"):
			_, stmt, _ = strings.Cut(stmt, "*/")
		default:
			return strings.ToUpper(stmt)
		}
	}
}

var echoCols = []types.Column{{Name: "ECHO", Type: types.StringType}}

func (f *fakeExec) columns(stmt string) ([]types.Column, error) {
	if strings.HasPrefix(normalize(stmt), "ECHO ") {
		return echoCols, nil
	}
	switch normalize(stmt) {
	case "SELECT ONE":
		if f.oneAsBigint.Load() {
			return pushCols, nil
		}
		return oneCols, nil
	case "SELECT TYPES":
		return typesCols, nil
	case "PUSH", "SLOW":
		return pushCols, nil
	case "CREATE STREAM S", "FAIL", "PANIC":
		return nil, nil
	case "SELECT NOSUCH":
		off := strings.Index(stmt, "NOSUCH")
		line, col := sql.LineCol(stmt, off)
		return nil, &sql.Error{Code: sql.CodeUndefinedColumn, Msg: `column "NOSUCH" cannot be resolved`, Line: line, Column: col, Offset: off}
	}
	return nil, &sql.Error{Code: sql.CodeSyntaxError, Msg: "syntax error at or near " + strings.Fields(stmt + " x")[0], Line: 1, Column: 1, Offset: 0}
}

func (f *fakeExec) Describe(ctx context.Context, s *engine.Session, stmt string) ([]types.Column, error) {
	return f.columns(stmt)
}

func (f *fakeExec) ExecuteStatement(ctx context.Context, s *engine.Session, st sql.Statement, w engine.ResultWriter) (engine.Result, error) {
	return f.Execute(ctx, s, st.Text(), w)
}

func (f *fakeExec) Execute(ctx context.Context, s *engine.Session, stmt string, w engine.ResultWriter) (engine.Result, error) {
	cols, err := f.columns(stmt)
	if err != nil {
		return engine.Result{}, err
	}
	if strings.HasPrefix(normalize(stmt), "ECHO ") {
		text := strings.TrimSpace(stmt)[len("ECHO "):]
		return sendRows(w, echoCols, []types.Row{{types.StringDatum(text)}})
	}
	switch normalize(stmt) {
	case "SELECT ONE":
		if err := w.Columns(cols); err != nil {
			return engine.Result{}, err
		}
		if err := w.Row(types.Row{types.IntDatum(1)}); err != nil {
			return engine.Result{}, err
		}
		return engine.Result{Tag: "SELECT 1"}, nil
	case "SELECT TYPES":
		if err := w.Columns(cols); err != nil {
			return engine.Result{}, err
		}
		for _, r := range typesRows {
			if err := w.Row(r); err != nil {
				return engine.Result{}, err
			}
		}
		return engine.Result{}, nil // the server makes the tag
	case "CREATE STREAM S":
		return engine.Result{Tag: "CREATE STREAM"}, nil
	case "FAIL":
		return engine.Result{}, errors.New("boom")
	case "PANIC":
		if f.noPanic {
			return engine.Result{}, errors.New("no panic")
		}
		panic("fake engine panic")
	case "PUSH":
		return f.push(ctx, w)
	case "SLOW":
		if err := w.Columns(pushCols); err != nil {
			return engine.Result{}, err
		}
		<-ctx.Done()
		return engine.Result{}, ctx.Err()
	}
	return engine.Result{}, errors.New("unreachable")
}

func (f *fakeExec) push(ctx context.Context, w engine.ResultWriter) (engine.Result, error) {
	defer func() {
		select {
		case f.pushEnded <- ctx.Err():
		default:
		}
	}()
	if err := w.Columns(pushCols); err != nil {
		return engine.Result{}, err
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	row := make(types.Row, 1)
	for n := int64(0); f.pushLimit == 0 || n < int64(f.pushLimit); n++ {
		row[0] = types.IntDatum(n)
		if err := w.Row(row); err != nil {
			return engine.Result{}, err
		}
		select {
		case <-ctx.Done():
			return engine.Result{}, ctx.Err()
		case <-tick.C:
		}
	}
	return engine.Result{Tag: "SELECT"}, nil
}

// testLogger discards logs unless PGWIRE_TEST_LOG is set.
func testLogger() *slog.Logger {
	if os.Getenv("PGWIRE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// startServer serves fx on a loopback port until the test ends; it fails
// the test if a panic was recovered, unless allowPanics.
func startServer(t testing.TB, fx *fakeExec, allowPanics bool, opts ...Option) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := New(fx, append([]Option{WithLogger(testLogger())}, opts...)...)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-done; !errors.Is(err, ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
		if n := s.panics.Load(); n > 0 && !allowPanics {
			t.Errorf("%d panics recovered", n)
		}
	})
	return s, ln.Addr().String()
}

// waitPushEnd waits for a PUSH statement to end and returns its ctx error.
func waitPushEnd(t *testing.T, fx *fakeExec, within time.Duration) error {
	t.Helper()
	select {
	case err := <-fx.pushEnded:
		return err
	case <-time.After(within):
		t.Fatalf("PUSH still running after %v", within)
		return nil
	}
}

// memConn is a net.Conn that reads from r and discards writes, for the
// fuzzer.
type memConn struct{ r io.Reader }

func (c *memConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c *memConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *memConn) Close() error                     { return nil }
func (c *memConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }
