package pgwire

// This file handles COPY (query) TO STDOUT, which psql prints as rows
// arrive: with a push query, `COPY (SELECT … EMIT CHANGES) TO STDOUT`
// streams live until its LIMIT, Ctrl-C (a CancelRequest) or the client
// leaving.
//
// Supported: the query in parentheses (any statement that returns rows),
// TO STDOUT, and the options FORMAT text|csv, HEADER, DELIMITER and NULL,
// in the (option value, …) form or the old WITH CSV HEADER form. Rows go
// out as CopyData messages, flushed like DataRows (16 KiB or the flush
// delay), then CopyDone and CommandComplete "COPY n".
//
// Not supported: COPY name TO …, COPY … FROM STDIN, files, binary format.

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// copyOptions are COPY's output options.
type copyOptions struct {
	csv    bool
	header bool
	delim  byte
	null   string
}

// copyStatement recognizes COPY (query) TO STDOUT [options].
func (c *conn) copyStatement(stmt string, toks []token) *local {
	fail := func(format string, args ...any) *local {
		return &local{copyOut: true, run: func(context.Context, engine.ResultWriter) (engine.Result, error) {
			return engine.Result{}, sql.Errorf(codeFeatureNotSupp, format, args...)
		}}
	}
	if len(toks) < 2 || !toks[1].is("(") {
		return fail("only COPY (query) TO STDOUT is supported")
	}
	depth, end := 0, -1
	for i := 1; i < len(toks) && end < 0; i++ {
		switch {
		case toks[i].is("("):
			depth++
		case toks[i].is(")"):
			if depth--; depth == 0 {
				end = i
			}
		}
	}
	if end < 0 || end+2 >= len(toks) || !toks[end+1].is("TO") || !toks[end+2].is("STDOUT") {
		return fail("only COPY (query) TO STDOUT is supported")
	}
	query := strings.TrimSpace(stmt[toks[1].to:toks[end].from])
	opts, err := copyOpts(toks[end+3:])
	if err != nil {
		return &local{copyOut: true, run: func(context.Context, engine.ResultWriter) (engine.Result, error) {
			return engine.Result{}, err
		}}
	}
	return &local{copyOut: true, run: func(ctx context.Context, _ engine.ResultWriter) (engine.Result, error) {
		cw := &copyWriter{c: c, opts: opts}
		inner := c.intercept(query)
		if inner != nil && inner.copyOut {
			return engine.Result{}, sql.Errorf(codeFeatureNotSupp, "COPY cannot copy a COPY")
		}
		_, err := c.runStatement(ctx, query, inner, cw)
		if cw.err != nil {
			return engine.Result{}, cw.err
		}
		if err != nil {
			return engine.Result{}, err
		}
		if !cw.started {
			return engine.Result{}, sql.Errorf(codeFeatureNotSupp, "COPY (…) TO STDOUT needs a query that returns rows")
		}
		if err := c.w.send(&pgproto3.CopyDone{}); err != nil {
			return engine.Result{}, err
		}
		return engine.Result{Tag: "COPY " + strconv.FormatInt(cw.rows, 10)}, nil
	}}
}

// copyOpts reads [WITH] (FORMAT csv, HEADER, …) or [WITH] CSV [HEADER] ….
func copyOpts(toks []token) (copyOptions, error) {
	o := copyOptions{delim: '\t', null: `\N`}
	if len(toks) > 0 && toks[0].is("WITH") {
		toks = toks[1:]
	}
	bad := func(what string) (copyOptions, error) {
		return o, sql.Errorf(codeSyntaxError, "COPY option %s is not supported", what)
	}
	delimSet, nullSet := false, false
	apply := func(name string, val *token) error {
		switch strings.ToUpper(name) {
		case "FORMAT":
			if val == nil {
				return sql.Errorf(codeSyntaxError, "COPY FORMAT needs a value")
			}
			switch strings.ToLower(val.val) {
			case "text":
			case "csv":
				o.csv = true
			default:
				return sql.Errorf(codeFeatureNotSupp, "COPY format %q is not supported", val.val)
			}
		case "CSV":
			o.csv = true
		case "HEADER":
			o.header = val == nil || !(val.is("false") || val.is("off") || val.val == "0")
		case "DELIMITER":
			if val == nil || len(val.val) != 1 {
				return sql.Errorf(codeSyntaxError, "COPY delimiter must be a single one-byte character")
			}
			o.delim, delimSet = val.val[0], true
		case "NULL":
			if val == nil {
				return sql.Errorf(codeSyntaxError, "COPY NULL needs a value")
			}
			o.null, nullSet = val.val, true
		default:
			return sql.Errorf(codeSyntaxError, "COPY option %s is not supported", name)
		}
		return nil
	}
	if len(toks) > 0 && toks[0].is("(") {
		if !toks[len(toks)-1].is(")") {
			return bad("list")
		}
		for _, item := range splitTop(toks[1:len(toks)-1], func(t token) bool { return t.is(",") }) {
			if len(item) == 0 || len(item) > 2 {
				return bad("list")
			}
			var val *token
			if len(item) == 2 {
				val = &item[1]
			}
			if err := apply(item[0].val, val); err != nil {
				return o, err
			}
		}
	} else {
		for i := 0; i < len(toks); i++ {
			name := toks[i].val
			var val *token
			if (toks[i].is("DELIMITER") || toks[i].is("NULL")) && i+1 < len(toks) {
				if i+2 < len(toks) && toks[i+1].is("AS") {
					i++
				}
				val = &toks[i+1]
				i++
			}
			if toks[i].kind == tokOp && toks[i].val == ";" {
				break
			}
			if err := apply(name, val); err != nil {
				return o, err
			}
		}
	}
	if o.csv {
		if !delimSet {
			o.delim = ','
		}
		if !nullSet {
			o.null = ""
		}
	}
	return o, nil
}

// copyWriter sends a query's rows as COPY text or CSV lines.
type copyWriter struct {
	c       *conn
	opts    copyOptions
	cols    []types.Column
	started bool
	rows    int64
	err     error
	line    []byte
	val     []byte
}

func (w *copyWriter) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return err
}

// Columns implements engine.ResultWriter: it starts the copy.
func (w *copyWriter) Columns(cols []types.Column) error {
	if w.started {
		return w.fail(sql.Errorf(sql.CodeInternal, "statement announced its columns twice"))
	}
	w.started = true
	w.cols = append(w.cols[:0], cols...)
	if err := w.c.w.send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, len(cols))}); err != nil {
		return w.fail(err)
	}
	if err := w.c.w.flushSoon(); err != nil {
		return w.fail(err)
	}
	if w.opts.header {
		w.line = w.line[:0]
		for i, col := range cols {
			if i > 0 {
				w.line = append(w.line, w.opts.delim)
			}
			w.line = w.appendField(w.line, []byte(col.Name))
		}
		w.line = append(w.line, '\n')
		if err := w.c.w.sendRow(&pgproto3.CopyData{Data: w.line}); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// Row implements engine.ResultWriter: one line per row.
func (w *copyWriter) Row(row types.Row) error {
	if w.err != nil {
		return w.err
	}
	if len(row) != len(w.cols) {
		return w.fail(sql.Errorf(sql.CodeInternal, "row has %d values for %d columns", len(row), len(w.cols)))
	}
	w.line = w.line[:0]
	for i, d := range row {
		if i > 0 {
			w.line = append(w.line, w.opts.delim)
		}
		if d.Null {
			w.line = append(w.line, w.opts.null...)
			continue
		}
		w.val = appendText(w.val[:0], d, w.cols[i].Type)
		w.line = w.appendField(w.line, w.val)
	}
	w.line = append(w.line, '\n')
	if err := w.c.w.sendRow(&pgproto3.CopyData{Data: w.line}); err != nil {
		return w.fail(err)
	}
	w.rows++
	return nil
}

// appendField appends one value escaped for the format.
func (w *copyWriter) appendField(dst, v []byte) []byte {
	if w.opts.csv {
		quote := len(v) == 0 || string(v) == w.opts.null
		for _, b := range v {
			if b == w.opts.delim || b == '"' || b == '\n' || b == '\r' {
				quote = true
				break
			}
		}
		if !quote {
			return append(dst, v...)
		}
		dst = append(dst, '"')
		for _, b := range v {
			if b == '"' {
				dst = append(dst, '"')
			}
			dst = append(dst, b)
		}
		return append(dst, '"')
	}
	for _, b := range v {
		switch b {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			if b == w.opts.delim {
				dst = append(dst, '\\')
			}
			dst = append(dst, b)
		}
	}
	return dst
}
