package rest

// This file serves POST /inserts-stream: a JSON object of arguments
// ({"target": "STREAM"}) on the first line, then one JSON object per line,
// each a row to insert. Each row is acknowledged in order with
// {"status":"ok","seq":n} once Kafka has it, or refused with
// {"status":"error","seq":n,"error_code":…,"message":…}. The response is
// written while the request is still being read (HTTP/1.1 full duplex).
//
// Rows become INSERT INTO … VALUES statements: the JSON values turn into
// SQL literals of the target columns' types, and consecutive rows with the
// same columns that have already arrived go in one statement.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// maxInsertBatch bounds the rows of one INSERT statement.
const maxInsertBatch = 500

// insertsStreamArgs is ksqlDB's InsertsStreamArgs.
type insertsStreamArgs struct {
	Target     string         `json:"target"`
	Properties map[string]any `json:"properties"`
}

// insertAck is ksqlDB's InsertAck and InsertError.
type insertAck struct {
	Status    string `json:"status"`
	Seq       int64  `json:"seq"`
	ErrorCode int    `json:"error_code,omitempty"`
	Message   string `json:"message,omitempty"`
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line of at most max bytes, without its newline. At
// the end of the body it returns the last line (maybe empty) and io.EOF.
func readLine(br *bufio.Reader, max int64) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		line = append(line, frag...)
		if int64(len(line)) > max {
			return nil, errLineTooLong
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimRight(line, "\r\n"), err
	}
}

// lineBuffered reports whether a whole line is buffered, so reading it
// does not wait for the client.
func lineBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	return bytes.IndexByte(b, '\n') >= 0
}

// findTarget resolves an /inserts-stream target: as written, then
// upper-cased, then case-insensitively (ksqlDB's target names are case
// insensitive).
func findTarget(cat *catalog.Catalog, name string) (*catalog.Source, bool) {
	if src, ok := cat.Source(name); ok {
		return src, true
	}
	if src, ok := cat.Source(strings.ToUpper(name)); ok {
		return src, true
	}
	for _, src := range cat.Sources() {
		if strings.EqualFold(src.Name, name) {
			return src, true
		}
	}
	return nil, false
}

// insertRow is one row of the stream, ready to be inserted.
type insertRow struct {
	seq    int64
	cols   string // the quoted column list: rows with the same one share a statement
	values string // the parenthesized VALUES list
}

// handleInsertsStream runs POST /inserts-stream.
func (s *Server) handleInsertsStream(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	_ = rc.EnableFullDuplex() // not needed (and refused) on HTTP/2
	br := bufio.NewReaderSize(r.Body, 64<<10)
	first, err := readLine(br, s.cfg.maxBody)
	if err != nil && (err != io.EOF || len(bytes.TrimSpace(first)) == 0) {
		writeError(w, r, badRequest("the body must start with a line of arguments, {\"target\": \"STREAM\"}"), "", nil)
		return
	}
	var args insertsStreamArgs
	dec := json.NewDecoder(bytes.NewReader(first))
	dec.UseNumber()
	if err := dec.Decode(&args); err != nil || args.Target == "" {
		writeError(w, r, badRequest(`the first line must be the arguments, {"target": "STREAM"}`), "", nil)
		return
	}
	sess, err := newSession(args.Properties)
	if err != nil {
		writeError(w, r, err, "", nil)
		return
	}
	target, ok := findTarget(s.eng.Catalog(), args.Target)
	switch {
	case !ok:
		writeError(w, r, &apiError{status: http.StatusBadRequest, code: codeBadStatement,
			msg: "stream or table " + args.Target + " does not exist"}, "", nil)
		return
	case target.IsSource:
		writeError(w, r, &apiError{status: http.StatusBadRequest, code: codeBadStatement,
			msg: "cannot insert into " + target.Name + ": it is a read-only SOURCE " + target.Kind.String()}, "", nil)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()

	array := false
	if accept := r.Header.Get("Accept"); !strings.Contains(accept, delimitedContentType) && strings.Contains(accept, "application/json") {
		array = true
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", delimitedContentType)
	}
	w.WriteHeader(http.StatusOK)
	rc.Flush()

	acks := 0
	ack := func(a insertAck) {
		b := appendJSON(nil, a)
		switch {
		case array && acks == 0:
			b = append([]byte{'['}, b...)
		case array:
			b = append([]byte{','}, b...)
		default:
			b = append(b, '\n')
		}
		acks++
		w.Write(b)
		if a.Status == "ok" {
			s.metrics.AddInsertedRows(true, 1)
		} else {
			s.metrics.AddInsertedRows(false, 1)
		}
	}
	defer func() {
		if array {
			if acks == 0 {
				w.Write([]byte("["))
			}
			w.Write([]byte("]"))
		}
	}()

	var seq int64
	eof := err == io.EOF
	for !eof && ctx.Err() == nil {
		// Read one row, waiting for it, then every row already buffered.
		var batch []insertRow
		for got := 0; len(batch) < maxInsertBatch && (got == 0 || lineBuffered(br)); {
			line, err := readLine(br, s.cfg.maxBody)
			if err == errLineTooLong {
				ack(insertAck{Status: "error", Seq: seq, ErrorCode: codeTooLarge, Message: "row is longer than the server's limit of " + itoa(s.cfg.maxBody) + " bytes"})
				s.insertBatch(ctx, sess, target, batch, ack)
				return
			}
			if err != nil && err != io.EOF {
				s.insertBatch(ctx, sess, target, batch, ack)
				return // the client went away
			}
			eof = err == io.EOF
			if len(bytes.TrimSpace(line)) > 0 {
				got++
				row, bad, err := s.prepareRow(target, line)
				row.seq = seq
				switch {
				case bad:
					// Malformed JSON ends the stream, as in ksqlDB.
					s.insertBatch(ctx, sess, target, batch, ack)
					ack(insertAck{Status: "error", Seq: seq, ErrorCode: codeBadRequest, Message: err.Error()})
					return
				case err != nil:
					s.insertBatch(ctx, sess, target, batch, ack)
					batch = batch[:0]
					ack(insertAck{Status: "error", Seq: seq, ErrorCode: codeBadStatement, Message: err.Error()})
				default:
					batch = append(batch, row)
				}
				seq++
			}
			if eof {
				break
			}
		}
		s.insertBatch(ctx, sess, target, batch, ack)
		rc.Flush()
	}
}

// insertBatch inserts rows, grouping consecutive rows with the same
// columns, and acknowledges each.
func (s *Server) insertBatch(ctx context.Context, sess *engine.Session, target *catalog.Source, rows []insertRow, ack func(insertAck)) {
	for len(rows) > 0 {
		n := 1
		for n < len(rows) && rows[n].cols == rows[0].cols {
			n++
		}
		s.insertGroup(ctx, sess, target, rows[:n], ack)
		rows = rows[n:]
	}
}

// insertGroup inserts rows with the same columns in one statement. When
// the statement is refused (a value does not fit its column), nothing was
// produced, and each row is tried alone to find the ones at fault.
func (s *Server) insertGroup(ctx context.Context, sess *engine.Session, target *catalog.Source, rows []insertRow, ack func(insertAck)) {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(quoteIdent(target.Name))
	b.WriteString(rows[0].cols)
	b.WriteString(" VALUES ")
	for i, r := range rows {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.values)
	}
	_, err := s.eng.Execute(ctx, sess, b.String(), &table{})
	if err == nil {
		for _, r := range rows {
			ack(insertAck{Status: "ok", Seq: r.seq})
		}
		return
	}
	var se *sql.Error
	if errors.As(err, &se) && len(rows) > 1 && se.Code != sql.CodeQueryCanceled {
		for _, r := range rows {
			s.insertGroup(ctx, sess, target, []insertRow{r}, ack)
		}
		return
	}
	msg, code := err.Error(), codeServerError
	if se != nil {
		msg, code = se.Msg, codeBadStatement
	}
	for _, r := range rows {
		ack(insertAck{Status: "error", Seq: r.seq, ErrorCode: code, Message: msg})
	}
}

// prepareRow turns a JSON object into the column list and VALUES list of
// an INSERT into target. bad reports malformed JSON, as opposed to values
// that do not fit the columns.
func (s *Server) prepareRow(target *catalog.Source, line []byte) (row insertRow, bad bool, err error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return row, true, errors.New("invalid JSON in inserts stream: each line must be one JSON object")
	}
	schema := target.Schema
	byCol := make(map[int]any, len(obj))
	for _, k := range sortedKeys(obj) {
		i := schema.Index(k)
		if i < 0 {
			i = schema.IndexFold(k)
		}
		if i < 0 || schema.Columns[i].Pseudo {
			return row, false, fmt.Errorf("column %s does not exist in %s", k, target.Name)
		}
		if _, dup := byCol[i]; dup {
			return row, false, fmt.Errorf("column %s is given twice", schema.Columns[i].Name)
		}
		byCol[i] = obj[k]
	}
	if len(byCol) == 0 {
		return row, false, errors.New("the row has no columns")
	}
	var cols, vals strings.Builder
	cols.WriteString(" (")
	vals.WriteByte('(')
	n := 0
	for i, c := range schema.Columns {
		v, ok := byCol[i]
		if !ok {
			continue
		}
		lit, err := sqlLiteral(v, c.Type)
		if err != nil {
			return row, false, fmt.Errorf("column %s: %v", c.Name, err)
		}
		if n > 0 {
			cols.WriteString(", ")
			vals.WriteString(", ")
		}
		n++
		cols.WriteString(quoteIdent(c.Name))
		vals.WriteString(lit)
	}
	cols.WriteByte(')')
	vals.WriteByte(')')
	return insertRow{cols: cols.String(), values: vals.String()}, false, nil
}

// quoteIdent double-quotes an identifier (the SQL front end is in ANSI
// quotes mode).
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// quoteString renders s as a single-quoted SQL string literal.
func quoteString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// sqlLiteral renders a JSON value (decoded with UseNumber) as a SQL
// expression of type t:
//
//	null                 NULL
//	true, false          BOOLEAN (or STRING 'true')
//	number               INT, BIGINT, DOUBLE, DECIMAL; STRING as its text;
//	                     TIMESTAMP as epoch milliseconds, DATE as epoch
//	                     days, TIME as milliseconds after midnight
//	string               STRING, DATE, TIME, TIMESTAMP (their text forms),
//	                     BYTES as base64, BOOLEAN as true/false, numbers
//	                     as their text
//	array                ARRAY[…]
//	object               MAP(k := v, …) or STRUCT(F := v, …) (fields
//	                     matched case-insensitively; missing ones NULL)
func sqlLiteral(v any, t types.Type) (string, error) {
	switch v := v.(type) {
	case nil:
		return "NULL", nil
	case bool:
		switch t.Kind {
		case types.Boolean:
			return boolLiteral(v), nil
		case types.String:
			return quoteString(strconv.FormatBool(v)), nil
		}
	case json.Number:
		return numberLiteral(v.String(), t)
	case string:
		switch t.Kind {
		case types.String, types.Date, types.Time, types.Timestamp:
			return quoteString(v), nil
		case types.Bytes:
			if _, err := base64.StdEncoding.DecodeString(v); err != nil {
				return "", fmt.Errorf("BYTES values are base64 strings: %v", err)
			}
			return "TO_BYTES(" + quoteString(v) + ", 'base64')", nil
		case types.Boolean:
			switch strings.ToLower(v) {
			case "true":
				return boolLiteral(true), nil
			case "false":
				return boolLiteral(false), nil
			}
		case types.Int, types.Bigint, types.Double, types.Decimal:
			if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				return numberLiteral(strings.TrimSpace(v), t)
			}
		}
	case []any:
		if t.Kind == types.Array {
			parts := make([]string, len(v))
			for i, e := range v {
				lit, err := nestedLiteral(e, *t.Elem)
				if err != nil {
					return "", fmt.Errorf("element %d: %v", i, err)
				}
				parts[i] = lit
			}
			return "ARRAY[" + strings.Join(parts, ", ") + "]", nil
		}
	case map[string]any:
		switch t.Kind {
		case types.Map:
			parts := make([]string, 0, len(v))
			for _, k := range sortedKeys(v) {
				key, err := sqlLiteral(k, *t.KeyType)
				if err != nil {
					return "", fmt.Errorf("key %q: %v", k, err)
				}
				val, err := nestedLiteral(v[k], *t.Elem)
				if err != nil {
					return "", fmt.Errorf("key %q: %v", k, err)
				}
				parts = append(parts, key+" := "+val)
			}
			return "MAP(" + strings.Join(parts, ", ") + ")", nil
		case types.Struct:
			byField := make(map[int]any, len(v))
			for _, k := range sortedKeys(v) {
				i := -1
				for j, f := range t.Fields {
					if f.Name == k || i < 0 && strings.EqualFold(f.Name, k) {
						i = j
					}
				}
				if i < 0 {
					return "", fmt.Errorf("field %s does not exist in %s", k, typeName(t))
				}
				byField[i] = v[k]
			}
			parts := make([]string, len(t.Fields))
			for i, f := range t.Fields {
				lit, err := nestedLiteral(byField[i], f.Type)
				if err != nil {
					return "", fmt.Errorf("field %s: %v", f.Name, err)
				}
				parts[i] = quoteIdent(f.Name) + " := " + lit
			}
			return "STRUCT(" + strings.Join(parts, ", ") + ")", nil
		}
	}
	return "", fmt.Errorf("cannot use JSON %s as %s", jsonKind(v), typeName(t))
}

// boolLiteral renders a BOOLEAN.
func boolLiteral(v bool) string {
	if v {
		return "TRUE"
	}
	return "FALSE"
}

// nestedLiteral is sqlLiteral for an element, value or field of a
// composite value, where a NULL needs its type.
func nestedLiteral(v any, t types.Type) (string, error) {
	if v == nil {
		return "CAST(NULL AS " + typeName(t) + ")", nil
	}
	return sqlLiteral(v, t)
}

// numberLiteral renders a JSON number as a SQL value of type t.
func numberLiteral(n string, t types.Type) (string, error) {
	switch t.Kind {
	case types.Int, types.Bigint, types.Double, types.Decimal:
		return n, nil
	case types.String:
		return quoteString(n), nil
	case types.Date, types.Time, types.Timestamp:
		i, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return "", fmt.Errorf("a %s number must be an integer, not %s", t, n)
		}
		return quoteString(string(types.AppendText(nil, types.Datum{I: i}, t))), nil
	}
	return "", fmt.Errorf("cannot use JSON number %s as %s", n, typeName(t))
}

func jsonKind(v any) string {
	switch v.(type) {
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
