package rest

// This file serves POST /inserts-stream: a JSON object of arguments
// ({"target": "STREAM"}) on the first line, then one JSON object per line,
// each a row to insert. Each row is acknowledged in order with
// {"status":"ok","seq":n} once Kafka has it, or refused with
// {"status":"error","seq":n,"error_code":…,"message":…}. The response is
// written while the request is still being read (HTTP/1.1 full duplex).
//
// Rows become prepared INSERT INTO … VALUES ($1, …) statements: the JSON
// values turn into values of the target columns' types (jsonDatum), bound
// to the placeholders, never written into the statement's text;
// consecutive rows with the same columns that have already arrived go in
// one statement.

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
	seq  int64
	cols string // the quoted column list: rows with the same one share a statement
	// values are the row's values, of the columns' types, in the order
	// of cols.
	values []types.Datum
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

	in := &inserter{s: s, sess: sess, target: target, ack: ack}
	var seq int64
	eof := err == io.EOF
	for !eof && ctx.Err() == nil {
		// Read one row, waiting for it, then every row already buffered.
		var batch []insertRow
		for got := 0; len(batch) < maxInsertBatch && (got == 0 || lineBuffered(br)); {
			line, err := readLine(br, s.cfg.maxBody)
			if err == errLineTooLong {
				ack(insertAck{Status: "error", Seq: seq, ErrorCode: codeTooLarge, Message: "row is longer than the server's limit of " + itoa(s.cfg.maxBody) + " bytes"})
				in.batch(ctx, batch)
				return
			}
			if err != nil && err != io.EOF {
				in.batch(ctx, batch)
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
					in.batch(ctx, batch)
					ack(insertAck{Status: "error", Seq: seq, ErrorCode: codeBadRequest, Message: err.Error()})
					return
				case err != nil:
					in.batch(ctx, batch)
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
		in.batch(ctx, batch)
		rc.Flush()
	}
}

// inserter inserts the rows of one /inserts-stream request, keeping the
// statements it prepared.
type inserter struct {
	s        *Server
	sess     *engine.Session
	target   *catalog.Source
	prepared map[string]*engine.Prepared
	ack      func(insertAck)
}

// maxPrepared bounds the statements an inserter keeps (one per column
// list and batch size met).
const maxPrepared = 64

// batch inserts rows, grouping consecutive rows with the same columns,
// and acknowledges each.
func (in *inserter) batch(ctx context.Context, rows []insertRow) {
	for len(rows) > 0 {
		n := 1
		for n < len(rows) && rows[n].cols == rows[0].cols {
			n++
		}
		in.group(ctx, rows[:n])
		rows = rows[n:]
	}
}

// prepare returns the prepared INSERT of n rows of the columns cols.
func (in *inserter) prepare(ctx context.Context, cols string, perRow, n int) (*engine.Prepared, error) {
	var b strings.Builder
	b.WriteString("INSERT INTO ")
	b.WriteString(quoteIdent(in.target.Name))
	b.WriteString(cols)
	b.WriteString(" VALUES ")
	k := 0
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j := range perRow {
			if j > 0 {
				b.WriteString(", ")
			}
			k++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(k))
		}
		b.WriteByte(')')
	}
	text := b.String()
	if p, ok := in.prepared[text]; ok {
		return p, nil
	}
	p, err := in.s.eng.Prepare(ctx, in.sess, text)
	if err != nil {
		return nil, err
	}
	if in.prepared == nil || len(in.prepared) >= maxPrepared {
		in.prepared = map[string]*engine.Prepared{}
	}
	in.prepared[text] = p
	return p, nil
}

// group inserts rows with the same columns in one statement. When the
// statement is refused, nothing was produced, and each row is tried
// alone to find the ones at fault.
func (in *inserter) group(ctx context.Context, rows []insertRow) {
	perRow := len(rows[0].values)
	err := func() error {
		p, err := in.prepare(ctx, rows[0].cols, perRow, len(rows))
		if err != nil {
			return err
		}
		values := make([]types.Datum, 0, perRow*len(rows))
		for _, r := range rows {
			values = append(values, r.values...)
		}
		b, err := p.Bind(values)
		if err != nil {
			return err
		}
		_, err = b.Run(ctx, &table{})
		return err
	}()
	if err == nil {
		for _, r := range rows {
			in.ack(insertAck{Status: "ok", Seq: r.seq})
		}
		return
	}
	var se *sql.Error
	if errors.As(err, &se) && len(rows) > 1 && se.Code != sql.CodeQueryCanceled {
		for _, r := range rows {
			in.group(ctx, []insertRow{r})
		}
		return
	}
	msg, code := err.Error(), codeServerError
	if se != nil {
		msg, code = se.Msg, codeBadStatement
	}
	for _, r := range rows {
		in.ack(insertAck{Status: "error", Seq: r.seq, ErrorCode: code, Message: msg})
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
	var cols strings.Builder
	cols.WriteString(" (")
	values := make([]types.Datum, 0, len(byCol))
	for i, c := range schema.Columns {
		v, ok := byCol[i]
		if !ok {
			continue
		}
		d, err := jsonDatum(v, c.Type)
		if err != nil {
			return row, false, fmt.Errorf("column %s: %v", c.Name, err)
		}
		if len(values) > 0 {
			cols.WriteString(", ")
		}
		values = append(values, d)
		cols.WriteString(quoteIdent(c.Name))
	}
	cols.WriteByte(')')
	return insertRow{cols: cols.String(), values: values}, false, nil
}

// quoteIdent double-quotes an identifier (the SQL front end is in ANSI
// quotes mode).
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// jsonDatum converts a JSON value (decoded with UseNumber) into a value
// of type t:
//
//	null                 NULL
//	true, false          BOOLEAN (or STRING 'true')
//	number               INT, BIGINT, DOUBLE, DECIMAL as the number written
//	                     in SQL converts (sql.CoerceInsert); STRING as its
//	                     text; TIMESTAMP as epoch milliseconds, DATE as
//	                     epoch days, TIME as milliseconds after midnight
//	string               STRING; DATE, TIME, TIMESTAMP from their text
//	                     forms; BYTES as base64; BOOLEAN as true/false;
//	                     numbers from their text
//	array                ARRAY
//	object               MAP or STRUCT (fields matched case-insensitively;
//	                     missing ones NULL)
func jsonDatum(v any, t types.Type) (types.Datum, error) {
	switch v := v.(type) {
	case nil:
		return types.NullDatum, nil
	case bool:
		switch t.Kind {
		case types.Boolean:
			return types.BoolDatum(v), nil
		case types.String:
			return types.StringDatum(strconv.FormatBool(v)), nil
		}
	case json.Number:
		return numberDatum(v.String(), t)
	case string:
		switch t.Kind {
		case types.String:
			return types.StringDatum(v), nil
		case types.Date, types.Time, types.Timestamp:
			return sql.CoerceInsert(types.StringDatum(v), types.StringType, t)
		case types.Bytes:
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				return types.Datum{}, fmt.Errorf("BYTES values are base64 strings: %v", err)
			}
			return types.Datum{B: b}, nil
		case types.Boolean:
			switch strings.ToLower(v) {
			case "true":
				return types.BoolDatum(true), nil
			case "false":
				return types.BoolDatum(false), nil
			}
		case types.Int, types.Bigint, types.Double, types.Decimal:
			if n := strings.TrimSpace(v); n != "" {
				if _, err := strconv.ParseFloat(n, 64); err == nil {
					return numberDatum(n, t)
				}
			}
		}
	case []any:
		if t.Kind == types.Array {
			l := make([]types.Datum, len(v))
			for i, e := range v {
				d, err := jsonDatum(e, *t.Elem)
				if err != nil {
					return types.Datum{}, fmt.Errorf("element %d: %v", i, err)
				}
				l[i] = d
			}
			return types.Datum{L: l}, nil
		}
	case map[string]any:
		switch t.Kind {
		case types.Map:
			l := make([]types.Datum, 0, 2*len(v))
			for _, k := range sortedKeys(v) {
				key, err := jsonDatum(k, *t.KeyType)
				if err != nil {
					return types.Datum{}, fmt.Errorf("key %q: %v", k, err)
				}
				val, err := jsonDatum(v[k], *t.Elem)
				if err != nil {
					return types.Datum{}, fmt.Errorf("key %q: %v", k, err)
				}
				l = append(l, key, val)
			}
			return types.Datum{L: l}, nil
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
					return types.Datum{}, fmt.Errorf("field %s does not exist in %s", k, typeName(t))
				}
				byField[i] = v[k]
			}
			l := make([]types.Datum, len(t.Fields))
			for i, f := range t.Fields {
				d, err := jsonDatum(byField[i], f.Type)
				if err != nil {
					return types.Datum{}, fmt.Errorf("field %s: %v", f.Name, err)
				}
				l[i] = d
			}
			return types.Datum{L: l}, nil
		}
	}
	return types.Datum{}, fmt.Errorf("cannot use JSON %s as %s", jsonKind(v), typeName(t))
}

// numberDatum converts a JSON number into a value of type t.
func numberDatum(n string, t types.Type) (types.Datum, error) {
	switch t.Kind {
	case types.Int, types.Bigint, types.Double, types.Decimal:
		d, from, err := sql.NumberLiteral(n)
		if err != nil {
			return types.Datum{}, err
		}
		return sql.CoerceInsert(d, from, t)
	case types.String:
		return types.StringDatum(n), nil
	case types.Date, types.Time, types.Timestamp:
		i, err := strconv.ParseInt(n, 10, 64)
		if err != nil {
			return types.Datum{}, fmt.Errorf("a %s number must be an integer, not %s", t, n)
		}
		return types.Datum{I: i}, nil
	}
	return types.Datum{}, fmt.Errorf("cannot use JSON number %s as %s", n, typeName(t))
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
