package pgwire

// This file is the engine.ResultWriter that turns a statement's columns and
// rows into RowDescription and DataRow messages, for both protocols.

import (
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ engine.ResultWriter = (*resultWriter)(nil)

// resultWriter is reused by every statement of a connection, so steady-state
// rows allocate nothing: values are encoded into scratch and the DataRow's
// Values slice points into it. The engine must call it from one goroutine
// at a time and not after Execute returns.
type resultWriter struct {
	c *conn

	// Set per statement by reset.
	describe bool           // send RowDescription on Columns (simple protocol)
	codes    []int16        // Bind's result format codes (extended protocol)
	want     []types.Column // what Describe told the client
	check    bool           // the statement's columns must match want
	bounded  bool           // a pull query: rows wait for Sync (see pullQuery)
	started  bool           // Columns was called
	rows     int64          // rows sent
	err      error          // the first error returned to the engine
	cols     []types.Column // the statement's columns
	formats  []int16        // one format code per column
	fields   []pgproto3.FieldDescription
	scratch  []byte
	ends     []int // end offset in scratch per value, -1 for NULL
	msg      pgproto3.DataRow
}

// reset prepares the writer for a statement. describe sends RowDescription
// when Columns is called; codes are Bind's result format codes; want, when
// not nil, are the columns the client was told about by Describe, which
// the statement's columns must match when check is set.
func (rw *resultWriter) reset(describe bool, codes []int16, want []types.Column, check bool) {
	rw.describe, rw.codes, rw.want, rw.check = describe, codes, want, check
	rw.started, rw.rows, rw.err = false, 0, nil
	rw.bounded = false
	rw.cols = rw.cols[:0]
	if rw.scratch == nil {
		rw.scratch = make([]byte, 0, 512)
	}
}

// pullQuery marks the statement as a pull query, which ends on its own
// soon: its answer is written when the client's Sync (or the simple
// protocol's ReadyForQuery) flushes, or once flushThreshold bytes are
// pending, never by the flush timer. Arming that timer per statement
// wakes the thread parked in the network poller, which costs a point
// lookup more than the lookup.
func (rw *resultWriter) pullQuery() { rw.bounded = true }

// fail records err as the statement's failure and returns it.
func (rw *resultWriter) fail(err error) error {
	if rw.err == nil {
		rw.err = err
	}
	return err
}

// Columns implements engine.ResultWriter.
func (rw *resultWriter) Columns(cols []types.Column) error {
	if rw.err != nil {
		return rw.err
	}
	if rw.started {
		return rw.fail(sql.Errorf(sql.CodeInternal, "statement announced its columns twice"))
	}
	rw.started = true
	rw.cols = append(rw.cols[:0], cols...)
	if rw.check && !sameWireTypes(rw.want, cols) {
		// pgx and others react to exactly this message by re-preparing.
		return rw.fail(sql.Errorf(sql.CodeFeatureNotSupport, "cached plan must not change result type"))
	}
	var err error
	if rw.formats, err = resolveFormats(rw.formats, rw.codes, len(cols)); err != nil {
		return rw.fail(err)
	}
	if rw.describe {
		rw.fields = fieldDescriptions(rw.fields[:0], cols, nil)
		if err := rw.c.w.send(&pgproto3.RowDescription{Fields: rw.fields}); err != nil {
			return rw.fail(err)
		}
	}
	// The client may wait for what precedes the first row (pgx waits for
	// BindComplete): let it out now, not with the first row; a pull
	// query's ends soon and goes out whole.
	if rw.bounded {
		return nil
	}
	if err := rw.c.w.flushSoon(); err != nil {
		return rw.fail(err)
	}
	return nil
}

// Row implements engine.ResultWriter. The row is encoded and buffered
// before Row returns; see writer for when it is written.
func (rw *resultWriter) Row(row types.Row) error {
	if rw.err != nil {
		return rw.err
	}
	if !rw.started {
		return rw.fail(sql.Errorf(sql.CodeInternal, "statement sent a row before its columns"))
	}
	if len(row) != len(rw.cols) {
		return rw.fail(sql.Errorf(sql.CodeInternal, "row has %d values for %d columns", len(row), len(rw.cols)))
	}
	buf, ends := rw.scratch[:0], rw.ends[:0]
	for i, d := range row {
		if d.Null {
			ends = append(ends, -1)
			continue
		}
		var err error
		if buf, err = appendValue(buf, d, rw.cols[i].Type, rw.formats[i]); err != nil {
			return rw.fail(err)
		}
		ends = append(ends, len(buf))
	}
	rw.scratch, rw.ends = buf, ends
	vals := rw.msg.Values[:0]
	start := 0
	for _, end := range ends {
		if end < 0 {
			vals = append(vals, nil)
			continue
		}
		// buf is never nil (reset gives it capacity), so an empty value
		// stays non-nil and is not sent as NULL.
		vals = append(vals, buf[start:end:end])
		start = end
	}
	rw.msg.Values = vals
	send := rw.c.w.sendRow
	if rw.bounded {
		send = rw.c.w.sendBatched
	}
	if err := send(&rw.msg); err != nil {
		return rw.fail(err)
	}
	rw.rows++
	return nil
}

// tag returns the command tag for a finished statement: the engine's, or
// "SELECT n" for a statement that returned rows without one.
func (rw *resultWriter) tag(res engine.Result) string {
	if res.Tag != "" || !rw.started {
		return noNUL(res.Tag)
	}
	if rw.rows < int64(len(selectTags)) {
		return selectTags[rw.rows]
	}
	return "SELECT " + strconv.FormatInt(rw.rows, 10)
}

// selectTags are the tags of the commonest results (a point lookup's),
// made once.
var selectTags = [...]string{"SELECT 0", "SELECT 1", "SELECT 2", "SELECT 3"}

// sameWireTypes reports whether two column lists look the same to a client:
// as many columns, with the same type OIDs.
func sameWireTypes(a, b []types.Column) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if typeOID(a[i].Type) != typeOID(b[i].Type) || typeMod(a[i].Type) != typeMod(b[i].Type) {
			return false
		}
	}
	return true
}
