package sqllogic

// This file runs the records of one file against its server.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

const (
	// retryPause is the pause between attempts of a query with retry.
	retryPause = 250 * time.Millisecond
	// pollPause is the pause between looks of wait-caught-up.
	pollPause = 200 * time.Millisecond
)

var debugWait = os.Getenv("SQLLOGIC_DEBUG_WAIT") != ""

// runner runs one file's records in order against one server.
type runner struct {
	t    *testing.T
	path string
	srv  *testserver.Server
	conn *pgx.Conn // nil until the first statement, and after a restart

	// For -rewrite: the output and column types each query produced.
	outputs map[*record][]string
	types   map[*record]string
}

// runFile runs the .slt file at path against a fresh server.
func runFile(t *testing.T, path string) {
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := parse(path, string(text))
	if err != nil {
		t.Fatal(err)
	}
	// Its own data dir and ports; on a failure, its log's last 80 lines.
	opts := []testserver.Option{testserver.Args("--log-level", "info")}
	if *binFlag != "" {
		opts = append(opts, testserver.Bin(*binFlag))
	}
	srv := testserver.Start(t, opts...)
	r := &runner{t: t, path: path, srv: srv, outputs: map[*record][]string{}, types: map[*record]string{}}
	t.Cleanup(func() {
		r.disconnect()
		if err := stop(srv); err != nil {
			t.Errorf("stopping the server: %v", err)
		}
	})
	for _, rec := range recs {
		if rec.kind == kindHalt {
			break
		}
		if rec.knownBug != "" {
			t.Logf("%s:%d: skipped, known bug: %s", r.path, rec.line, rec.knownBug)
			continue
		}
		r.run(rec)
		if !srv.Running() {
			r.errorf(rec, "the server exited (%v); the rest of the file is skipped", srv.ExitErr())
			break
		}
	}
	if *rewrite {
		r.rewrite(string(text), recs)
	}
}

// errorf reports a failure of rec and goes on with the file.
func (r *runner) errorf(rec *record, format string, args ...any) {
	r.t.Helper()
	r.t.Errorf("%s:%d: %s %s", r.path, rec.line, rec.kind, fmt.Sprintf(format, args...))
}

// timeout is how long one attempt of rec may take.
func (r *runner) timeout(rec *record) time.Duration {
	if rec.timeout > 0 {
		return rec.timeout
	}
	return *stmtTimeout
}

// run runs one record.
func (r *runner) run(rec *record) {
	switch rec.kind {
	case kindStatement:
		r.statement(rec)
	case kindQuery:
		r.query(rec)
	case kindProduce:
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout(rec))
		defer cancel()
		if err := produce(ctx, r.srv.KafkaAddr, rec); err != nil {
			r.errorf(rec, "%s: %v", rec.topic, err)
		}
	case kindWaitCaughtUp:
		r.waitCaughtUp(rec)
	case kindSleep:
		time.Sleep(rec.timeout)
	case kindRestart:
		r.disconnect()
		if err := stop(r.srv); err != nil {
			r.errorf(rec, "%v", err)
		}
		if err := r.srv.Restart(); err != nil {
			r.errorf(rec, "%v", err)
		}
	case kindKill:
		r.disconnect()
		r.srv.Kill()
		if err := r.srv.Restart(); err != nil {
			r.errorf(rec, "%v", err)
		}
	}
}

// stop stops a running server with SIGTERM and reports a stop that is not
// clean: one that takes over 30s (the server is killed then), or exits
// with a status other than 0.
func stop(srv *testserver.Server) error {
	if !srv.Running() {
		return nil
	}
	if err := srv.Stop(syscall.SIGTERM); err != nil {
		return err
	}
	if err := srv.ExitErr(); err != nil {
		return fmt.Errorf("server exited with %v after SIGTERM", err)
	}
	return nil
}

// connection returns the open connection, connecting first if there is
// none. A connection lost since the last statement is replaced, which
// resets the session's properties, so it is logged.
func (r *runner) connection(ctx context.Context) (*pgx.Conn, error) {
	if r.conn != nil && !r.conn.IsClosed() {
		return r.conn, nil
	}
	if r.conn != nil {
		r.t.Logf("%s: the connection was lost; reconnecting (SET properties are reset)", r.path)
	}
	cfg, err := pgx.ParseConfig("postgres://sqlstreams@" + r.srv.PGAddr + "/sqlstreams?sslmode=disable&connect_timeout=10")
	if err != nil {
		return nil, err
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	// A statement past its deadline gets a CancelRequest, so the
	// connection survives when the server honours it.
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: pc, DeadlineDelay: 3 * time.Second}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", r.srv.PGAddr, err)
	}
	r.conn = conn
	return conn, nil
}

// disconnect closes the connection; the next statement opens a new one.
func (r *runner) disconnect() {
	if r.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r.conn.Close(ctx)
		r.conn = nil
	}
}

// result is what a statement returned.
type result struct {
	cols []pgconn.FieldDescription // of the first result with columns
	rows []string                  // formatted rows, as many as arrived
	err  error                     // says so when the deadline passed
}

// exec sends sql as one Query message, gives it timeout to finish, and
// collects its rows, keeping the rows that arrived even when it fails or
// times out.
func (r *runner) exec(sql string, timeout time.Duration) result {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	conn, err := r.connection(ctx)
	if err != nil {
		return result{err: err}
	}
	var res result
	mrr := conn.PgConn().Exec(ctx, sql)
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		if fd := rr.FieldDescriptions(); fd != nil && res.cols == nil {
			res.cols = slices.Clone(fd)
		}
		for rr.NextRow() {
			res.rows = append(res.rows, formatRow(rr.Values()))
		}
		if _, err := rr.Close(); err != nil && res.err == nil {
			res.err = err
		}
	}
	if err := mrr.Close(); err != nil && res.err == nil {
		res.err = err
	}
	if res.err != nil && ctx.Err() != nil {
		res.err = &timeoutError{err: res.err, after: timeout}
	}
	return res
}

// timeoutError is a statement that did not end before its deadline.
type timeoutError struct {
	err   error
	after time.Duration
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("did not finish within %v (%v)", e.after, e.err)
}

func (e *timeoutError) Unwrap() error { return e.err }

// statement runs a statement record.
func (r *runner) statement(rec *record) {
	sql := rec.sql()
	res := r.exec(sql, r.timeout(rec))
	switch {
	case rec.errRE == nil && res.err != nil:
		r.errorf(rec, "failed: %s\n%s", errorText(sql, res.err), sql)
	case rec.errRE != nil && res.err == nil:
		r.errorf(rec, "succeeded; want an error matching %q\n%s", rec.errRE, sql)
	case rec.errRE != nil && !rec.errRE.MatchString(errorText(sql, res.err)):
		r.errorf(rec, "error %q does not match %q\n%s", errorText(sql, res.err), rec.errRE, sql)
	}
}

// query runs a query record, again and again with retry, until its output
// matches or its time is up.
func (r *runner) query(rec *record) {
	sql := rec.sql()
	deadline := time.Now().Add(rec.retry)
	var got []string
	var gotTypes string
	var err error
	attempts := 0
	for {
		attempts++
		timeout := r.timeout(rec)
		if rec.retry > 0 {
			timeout = min(timeout, max(time.Until(deadline), time.Second))
		}
		res := r.exec(sql, timeout)
		got, gotTypes, err = output(rec, res), typeLetters(res.cols), res.err
		if err == nil && typesMatch(rec.types, gotTypes) && slices.Equal(got, rec.expected) {
			break
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(retryPause)
	}
	if err == nil {
		r.outputs[rec] = got
		if !typesMatch(rec.types, gotTypes) {
			r.types[rec] = gotTypes
		}
	}
	if *rewrite && err == nil {
		return
	}
	tries := ""
	if attempts > 1 {
		tries = fmt.Sprintf(" (%d attempts over %v)", attempts, rec.retry)
	}
	switch {
	case err != nil:
		r.errorf(rec, "failed%s: %s\n%s\nrows before the error:\n%s", tries, errorText(sql, err), sql, strings.Join(got, "\n"))
	case !typesMatch(rec.types, gotTypes):
		r.errorf(rec, "column types are %s, want %s\n%s", gotTypes, rec.types, sql)
	case !slices.Equal(got, rec.expected):
		r.errorf(rec, "output differs%s\n%s\n--- got:\n%s\n--- want:\n%s", tries, sql, strings.Join(got, "\n"), strings.Join(rec.expected, "\n"))
	}
}

// output renders a query's result as the lines of its expected output.
func output(rec *record, res result) []string {
	rows := slices.Clone(res.rows)
	if rec.rowsort {
		slices.Sort(rows)
	}
	if rec.colname && res.cols != nil {
		names := make([]string, len(res.cols))
		for i, c := range res.cols {
			names[i] = c.Name
		}
		rows = append([]string{strings.Join(names, " | ")}, rows...)
	}
	return rows
}

// formatRow renders a row: values separated by " | ", NULL for null,
// (empty) for the empty string, newlines, tabs and carriage returns
// escaped, trailing blanks trimmed.
func formatRow(values [][]byte) string {
	parts := make([]string, len(values))
	for i, v := range values {
		switch {
		case v == nil:
			parts[i] = "NULL"
		case len(v) == 0:
			parts[i] = "(empty)"
		default:
			parts[i] = strings.NewReplacer("\n", `\n`, "\t", `\t`, "\r", `\r`).Replace(string(v))
		}
	}
	return strings.TrimRight(strings.Join(parts, " | "), " ")
}

// typeLetters names the columns' types as query records do: I integer,
// R floating point or numeric, B boolean, T anything else.
func typeLetters(cols []pgconn.FieldDescription) string {
	var b strings.Builder
	for _, c := range cols {
		switch c.DataTypeOID {
		case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID:
			b.WriteByte('I')
		case pgtype.Float4OID, pgtype.Float8OID, pgtype.NumericOID:
			b.WriteByte('R')
		case pgtype.BoolOID:
			b.WriteByte('B')
		default:
			b.WriteByte('T')
		}
	}
	return b.String()
}

// typesMatch reports whether the column types got match want, where ?
// matches any type. A result without columns matches any want.
func typesMatch(want, got string) bool {
	if got == "" {
		return true
	}
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if want[i] != '?' && want[i] != got[i] {
			return false
		}
	}
	return true
}

// lineColPrefix is how a message that states its own position starts.
var lineColPrefix = regexp.MustCompile(`^line \d+:\d+: `)

// errorText is the text statement error patterns match: the server's
// message, prefixed with "line L:C: " (as ksqlDB writes them) from the
// error's Position within sql when the server gave one and the message
// does not start with a position already.
func errorText(sql string, err error) string {
	var pgErr *pgconn.PgError
	var timeout *timeoutError
	if errors.As(err, &timeout) || !errors.As(err, &pgErr) {
		return err.Error()
	}
	msg := pgErr.Message
	if pgErr.Position > 0 && !lineColPrefix.MatchString(msg) {
		line, col := lineCol(sql, int(pgErr.Position))
		msg = fmt.Sprintf("line %d:%d: %s", line, col, msg)
	}
	return msg
}

// lineCol converts a 1-based character position in text to a 1-based
// line and column.
func lineCol(text string, pos int) (line, col int) {
	line, col = 1, 1
	for i, r := range []rune(text) {
		if i >= pos-1 {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// waitCaughtUp waits until every persistent query has consumed its input.
func (r *runner) waitCaughtUp(rec *record) {
	timeout := r.timeout(rec)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last string
	start := time.Now()
	for {
		queries, err := r.showQueries(ctx)
		var behind string
		if err == nil {
			behind, err = caughtUp(ctx, r.srv.KafkaAddr, queries)
		}
		switch {
		case err == nil && behind == "":
			r.t.Logf("%s:%d: %d queries caught up in %v", r.path, rec.line, len(queries), time.Since(start).Round(time.Millisecond))
			return
		case err != nil:
			last = err.Error()
		default:
			last = behind
		}
		if debugWait {
			r.t.Logf("%s:%d: %s", r.path, rec.line, last)
		}
		select {
		case <-ctx.Done():
			r.errorf(rec, "not caught up within %v: %s", timeout, last)
			return
		case <-time.After(pollPause):
		}
	}
}

// showQueries returns the persistent queries' IDs and statuses, from SHOW
// QUERIES (columns "Query ID" and "Status").
func (r *runner) showQueries(ctx context.Context) (map[string]string, error) {
	conn, err := r.connection(ctx)
	if err != nil {
		return nil, err
	}
	mrr := conn.PgConn().Exec(ctx, "SHOW QUERIES")
	results, err := mrr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("SHOW QUERIES: %w", err)
	}
	queries := map[string]string{}
	for _, res := range results {
		id, status := -1, -1
		for i, f := range res.FieldDescriptions {
			switch f.Name {
			case "Query ID":
				id = i
			case "Status":
				status = i
			}
		}
		if id < 0 {
			return nil, fmt.Errorf("SHOW QUERIES has no \"Query ID\" column")
		}
		for _, row := range res.Rows {
			s := ""
			if status >= 0 {
				s = string(row[status])
			}
			queries[string(row[id])] = s
		}
	}
	return queries, nil
}

// rewrite writes the file back with each query's expected output (and
// column types) replaced by what it produced. Queries that failed or did
// not run keep what they had.
func (r *runner) rewrite(text string, recs []*record) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	byStart := map[int]*record{}
	for _, rec := range recs {
		if _, ok := r.outputs[rec]; ok {
			byStart[rec.expFrom] = rec
		}
		if types, ok := r.types[rec]; ok {
			lines[rec.typesLine] = strings.Replace(lines[rec.typesLine], " "+rec.types, " "+types, 1)
		}
	}
	var out []string
	emit := func(rec *record) {
		if rec.sepLine < 0 {
			out = append(out, "----")
		}
		out = append(out, r.outputs[rec]...)
	}
	for i := 0; i < len(lines); {
		if rec, ok := byStart[i]; ok {
			emit(rec)
			delete(byStart, i)
			if rec.expTo > i {
				i = rec.expTo
				continue
			}
		}
		out = append(out, lines[i])
		i++
	}
	if rec, ok := byStart[len(lines)]; ok {
		emit(rec)
	}
	updated := strings.Join(out, "\n") + "\n"
	if updated == text {
		return
	}
	if err := os.WriteFile(r.path, []byte(updated), 0o644); err != nil {
		r.t.Errorf("rewriting %s: %v", r.path, err)
		return
	}
	r.t.Logf("rewrote %s", r.path)
}
