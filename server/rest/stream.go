package rest

// This file serves queries: POST /query-stream (ksqlDB's HTTP streaming
// API, here over HTTP/1.1 chunked responses), POST /query (the older
// streaming format, and PRINT) and POST /close-query.

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// Content types of the streaming responses.
const (
	delimitedContentType = "application/vnd.ksqlapi.delimited.v1"
	textContentType      = "text/plain; charset=utf-8"
	protobufContentType  = "application/vnd.ksql.v1+protobuf"
)

// format is how a query's result is laid out in the response.
type format int

const (
	// formatDelimited (/query-stream's default): a header object, then
	// one JSON array per row, each on its own line.
	formatDelimited format = iota
	// formatArray (/query-stream, Accept: application/json): the same
	// elements as one JSON array.
	formatArray
	// formatLegacy (/query): [{"header":…},\n{"row":{"columns":…}},\n…
	// {"finalMessage":…}] (a table's pull query ends after its rows).
	formatLegacy
	// formatPrint (/query with PRINT): one text line per record.
	formatPrint
	// formatProto (/query-stream, Accept: application/vnd.ksql.v1+protobuf):
	// formatLegacy's layout, the header with the rows' .proto
	// ("protoSchema"), each row {"row":{"protobufBytes":…}}: the row
	// encoded as PROTOBUF_NOSR, base64.
	formatProto
)

// queryStreamArgs is ksqlDB's QueryStreamArgs.
type queryStreamArgs struct {
	SQL              string         `json:"sql"`
	Properties       map[string]any `json:"properties"`
	SessionVariables map[string]any `json:"sessionVariables"`
	// StreamsProperties is accepted too: ksqlDB's own curl example for
	// /query-stream sends it.
	StreamsProperties map[string]any `json:"streamsProperties"`
}

// handleQueryStream runs POST /query-stream: one SELECT, pull or push.
// The answer is delimited unless the client accepts application/json
// (and not the delimited type), as in ksqlDB.
func (s *Server) handleQueryStream(w http.ResponseWriter, r *http.Request) {
	var args queryStreamArgs
	if err := s.decodeRequest(w, r, &args); err != nil {
		writeError(w, r, err, "", nil)
		return
	}
	props := map[string]any{}
	for k, v := range args.StreamsProperties {
		props[k] = v
	}
	for k, v := range args.Properties {
		props[k] = v
	}
	text, st, err := oneStatement(substitute(args.SQL, args.SessionVariables), `"sql"`)
	if err != nil {
		writeError(w, r, err, stmtText(text), nil)
		return
	}
	sel, ok := st.(*sql.Select)
	if !ok {
		writeError(w, r, &apiError{status: http.StatusBadRequest, code: codeBadStatement,
			msg: "only SELECT statements run on /query-stream; send other statements to /ksql"}, stmtText(text), nil)
		return
	}
	f := formatDelimited
	accept := r.Header.Get("Accept")
	switch {
	case strings.Contains(accept, protobufContentType):
		// ksqlDB's rows as protobuf: /query's layout, each row's
		// protobufBytes in the message the header's protoSchema gives.
		f = formatProto
	case !strings.Contains(accept, delimitedContentType) && strings.Contains(accept, "application/json"):
		f = formatArray
	}
	sess, err := newSession(props)
	if err != nil {
		writeError(w, r, err, stmtText(text), nil)
		return
	}
	s.runQuery(w, r, sess, st, f, sel.Emit != "", sel.Limit)
}

// handleQuery runs POST /query: a SELECT in the older streaming format,
// or PRINT as text lines.
func (s *Server) handleQuery(w http.ResponseWriter, r *http.Request) {
	var req ksqlRequest
	if err := s.decodeRequest(w, r, &req); err != nil {
		writeError(w, r, err, "", nil)
		return
	}
	text, st, err := oneStatement(substitute(req.KSQL, req.SessionVariables), `"ksql"`)
	if err != nil {
		writeError(w, r, err, stmtText(text), nil)
		return
	}
	sess, err := newSession(req.StreamsProperties)
	if err != nil {
		writeError(w, r, err, stmtText(text), nil)
		return
	}
	switch st := st.(type) {
	case *sql.Select:
		s.runQuery(w, r, sess, st, formatLegacy, st.Emit != "", st.Limit)
	case *sql.Print:
		s.runQuery(w, r, sess, st, formatPrint, true, st.Limit)
	default:
		writeError(w, r, &apiError{status: http.StatusBadRequest, code: codeBadStatement,
			msg: "only SELECT and PRINT statements run on /query; send other statements to /ksql"}, stmtText(text), nil)
	}
}

// stmtText is a statement's text as errors quote it: with its semicolon,
// as in ksqlDB; "" for no statement.
func stmtText(text string) string {
	if text == "" {
		return ""
	}
	return text + ";"
}

// oneStatement parses the one statement of text (field names the request
// field, for the error).
func oneStatement(text, field string) (string, sql.Statement, error) {
	stmts := sql.Split(text)
	if len(stmts) != 1 {
		return "", nil, badRequest("expected exactly one statement in " + field + ", got " + itoa(int64(len(stmts))))
	}
	st, err := sql.Parse(stmts[0])
	return stmts[0], st, err
}

// runQuery runs a query statement and streams its result. A push query
// gets an ID (for /close-query) and counts against the push query limit;
// it ends at its LIMIT, when the client goes away, at /close-query or at
// Server.Close. limit is the query's LIMIT, or -1.
func (s *Server) runQuery(w http.ResponseWriter, r *http.Request, sess *engine.Session, st sql.Statement, f format, push bool, limit int64) {
	text := st.Text()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	id := ""
	if push {
		var release func()
		var err error
		if id, release, err = s.startPush(cancel); err != nil {
			writeError(w, r, err, stmtText(text), nil)
			return
		}
		defer release()
	}
	out := &streamer{w: w, r: r, rc: http.NewResponseController(w), format: f, queryID: id, push: push}
	res, err := s.eng.ExecuteStatement(ctx, sess, st, out)
	out.stopFlusher()
	out.tablePull = res.TablePull
	// A push query that ended by itself reached its LIMIT; a pull query
	// did when it returned that many rows.
	limited := limit >= 0 && (push || out.rows >= limit)
	switch {
	case !out.started && err != nil:
		s.logFailure(r, text, err)
		writeError(w, r, err, stmtText(text), nil)
	case !out.started:
		out.Columns(nil)
		out.stopFlusher()
		out.finish(limited)
	case push && s.ctx.Err() != nil && r.Context().Err() == nil:
		// Ended by Close (the server drains): the client learns why.
		out.fail(&apiError{status: http.StatusServiceUnavailable, code: codeUnavailable,
			msg: "the server is shutting down: the push query ended; run it again on another instance or after the restart"})
	case err == nil, ctx.Err() != nil:
		// LIMIT reached, or ended by the client or /close-query.
		out.finish(limited && err == nil)
	default:
		s.logFailure(r, text, err)
		out.fail(err)
	}
}

// startPush registers a push query: it returns its ID and the function
// that unregisters it, or an error when the limit is reached.
func (s *Server) startPush(cancel context.CancelFunc) (string, func(), error) {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	if s.npush >= s.cfg.maxPushQueries {
		return "", nil, &apiError{status: http.StatusBadRequest, code: codeMaxPushQueries,
			msg: "too many push queries are running (limit " + itoa(int64(s.cfg.maxPushQueries)) + "); close one first"}
	}
	id := newQueryID()
	s.push[id] = cancel
	s.npush++
	done := s.metrics.PushQueryStarted("rest")
	return id, func() {
		s.pushMu.Lock()
		delete(s.push, id)
		s.npush--
		s.pushMu.Unlock()
		done()
	}, nil
}

// newQueryID returns a random, UUID-shaped push query ID.
func newQueryID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// handleCloseQuery runs POST /close-query: {"queryId": "…"} ends that push
// query; its response then ends as a completed one.
func (s *Server) handleCloseQuery(w http.ResponseWriter, r *http.Request) {
	var args struct {
		QueryID string `json:"queryId"`
	}
	if err := s.decodeRequest(w, r, &args); err != nil {
		writeError(w, r, err, "", nil)
		return
	}
	s.pushMu.Lock()
	cancel, ok := s.push[strings.TrimPrefix(args.QueryID, scalablePrefix)]
	s.pushMu.Unlock()
	if !ok {
		writeError(w, r, badRequest("no push query with ID "+args.QueryID+" is running"), "", nil)
		return
	}
	cancel()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
}

// streamer is the engine.ResultWriter of a streamed query: it writes the
// header at Columns and each row at Row, and a background loop flushes
// what was written every flushInterval, so rows reach the client promptly
// without a flush per row.
type streamer struct {
	w       http.ResponseWriter
	r       *http.Request
	rc      *http.ResponseController
	format  format
	queryID string
	push    bool
	// tablePull marks a pull query answered from a table's state: its
	// /query answer ends after the rows, without a final message.
	tablePull bool
	rows      int64 // rows written

	mu      sync.Mutex // guards w between Row (engine) and the flush loop
	started bool       // the header (and status 200) is written
	dirty   bool
	err     error // the first write error: the client is gone
	cols    []types.Column
	buf     []byte
	stop    chan struct{}
	stopped chan struct{}
	// penc encodes formatProto's rows, into pbuf.
	penc types.Encoder
	pbuf []byte
}

// protoRows readies formatProto's encoder for cols and returns the .proto
// of its rows, as ksqlDB's header gives it.
func (st *streamer) protoRows(cols []types.Column) (string, error) {
	names := make([]string, len(cols))
	typs := make([]types.Type, len(cols))
	sch := types.Schema{Columns: make([]types.Column, len(cols))}
	idx := make([]int, len(cols))
	for i, c := range cols {
		names[i], typs[i], idx[i] = c.Name, c.Type, i
		sch.Columns[i] = types.Column{Name: c.Name, Type: c.Type}
	}
	enc, err := types.NewEncoderOpts(types.FormatProtobufNoSR, sch, idx, types.FormatOptions{})
	if err != nil {
		return "", err
	}
	st.penc = enc
	return types.ProtobufCanonicalSchema(names, typs), nil
}

var (
	_ engine.ScalablePushWriter = (*streamer)(nil)
	_ engine.TombstoneWriter    = (*streamer)(nil)
)

// scalablePrefix starts the ID of a push query ksqlDB would run as a
// scalable push query; /close-query takes the ID with or without it.
const scalablePrefix = "SCALABLE_PUSH_QUERY_"

// ScalablePush names the push query as ksqlDB names a scalable one.
func (st *streamer) ScalablePush() {
	if st.queryID != "" && !strings.HasPrefix(st.queryID, scalablePrefix) {
		st.queryID = scalablePrefix + st.queryID
	}
}

// header is /query-stream's QueryResponseMetadata.
type header struct {
	QueryID     string   `json:"queryId,omitempty"`
	ColumnNames []string `json:"columnNames"`
	ColumnTypes []string `json:"columnTypes"`
}

// Columns writes the response header and starts the flush loop.
func (st *streamer) Columns(cols []types.Column) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cols = append([]types.Column(nil), cols...)
	var protoSchema string
	if st.format == formatProto {
		var err error
		if protoSchema, err = st.protoRows(cols); err != nil {
			return err
		}
	}
	h := st.w.Header()
	switch st.format {
	case formatDelimited:
		h.Set("Content-Type", delimitedContentType)
	case formatArray:
		h.Set("Content-Type", "application/json")
	case formatLegacy:
		h.Set("Content-Type", jsonContentType(st.r))
	case formatProto:
		h.Set("Content-Type", protobufContentType)
	case formatPrint:
		h.Set("Content-Type", textContentType)
	}
	h.Set("Cache-Control", "no-cache")
	st.w.WriteHeader(http.StatusOK)
	st.started = true

	meta := header{QueryID: st.queryID, ColumnNames: []string{}, ColumnTypes: []string{}}
	for _, c := range cols {
		meta.ColumnNames = append(meta.ColumnNames, c.Name)
		meta.ColumnTypes = append(meta.ColumnTypes, typeName(c.Type))
	}
	b := st.buf[:0]
	switch st.format {
	case formatDelimited:
		b = appendJSON(b, meta)
		b = append(b, '\n')
	case formatArray:
		b = append(b, '[')
		b = appendJSON(b, meta)
	case formatLegacy, formatProto:
		id := st.queryID
		if id == "" {
			id = "none"
		}
		b = append(b, `[{"header":`...)
		// As in ksqlDB, a push query's header does not mark key columns.
		schemaCols := cols
		if st.push {
			schemaCols = make([]types.Column, len(cols))
			for i, c := range cols {
				schemaCols[i] = types.Column{Name: c.Name, Type: c.Type}
			}
		}
		hdr := map[string]string{"queryId": id, "schema": schemaString(schemaCols)}
		if st.format == formatProto {
			hdr["protoSchema"] = protoSchema
		}
		b = appendJSON(b, hdr)
		b = append(b, '}')
	}
	st.write(b)
	if st.err == nil {
		st.err = st.rc.Flush()
	}
	st.stop, st.stopped = make(chan struct{}), make(chan struct{})
	go st.flushLoop()
	return st.err
}

// appendJSON appends v as JSON, without escaping <, > and & (types such
// as ARRAY<STRING> read better unescaped).
func appendJSON(dst []byte, v any) []byte {
	b, _ := marshal(v)
	return append(dst, b...)
}

// write writes b; the caller holds st.mu.
func (st *streamer) write(b []byte) {
	st.buf = b
	if st.err != nil || len(b) == 0 {
		return
	}
	if _, err := st.w.Write(b); err != nil {
		st.err = err
	}
	st.dirty = true
}

// Row writes one row. An error means the client is gone, which ends the
// query.
func (st *streamer) Row(row types.Row) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err != nil {
		return st.err
	}
	st.rows++
	b := st.buf[:0]
	switch st.format {
	case formatDelimited:
		b = appendRow(b, row, st.cols)
		b = append(b, '\n')
	case formatArray:
		b = append(b, ',')
		b = appendRow(b, row, st.cols)
	case formatLegacy:
		b = append(b, ",\n{\"row\":{\"columns\":"...)
		b = appendRow(b, row, st.cols)
		b = append(b, "}}"...)
	case formatProto:
		var err error
		if st.pbuf, err = st.penc.Encode(st.pbuf[:0], row); err != nil {
			return err
		}
		b = append(b, ",\n{\"row\":{\"protobufBytes\":\""...)
		b = base64.StdEncoding.AppendEncode(b, st.pbuf)
		b = append(b, "\"}}"...)
	case formatPrint:
		b = appendPrintLine(b, row, st.cols)
	}
	st.write(b)
	return st.err
}

// Tombstone writes the row of a table's deleted key, marked as ksqlDB
// marks it on /query ("tombstone": true); other formats write it as a
// row.
func (st *streamer) Tombstone(row types.Row) error {
	if st.format != formatLegacy {
		return st.Row(row)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err != nil {
		return st.err
	}
	st.rows++
	b := append(st.buf[:0], ",\n{\"row\":{\"columns\":"...)
	b = appendRow(b, row, st.cols)
	b = append(b, `,"tombstone":true}}`...)
	st.write(b)
	return st.err
}

// appendPrintLine renders a PRINT record as ksqlDB's CLI shows it.
func appendPrintLine(b []byte, row types.Row, cols []types.Column) []byte {
	text := func(i int) []byte {
		if i >= len(row) || row[i].Null {
			return []byte("<null>")
		}
		return types.AppendText(nil, row[i], cols[i].Type)
	}
	if len(row) < 5 {
		return append(appendRowText(b, row, cols), '\n')
	}
	b = append(b, "rowtime: "...)
	b = time.UnixMilli(row[0].I).UTC().AppendFormat(b, "2006/01/02 15:04:05.000 Z")
	b = append(b, ", key: "...)
	b = append(b, text(3)...)
	b = append(b, ", value: "...)
	b = append(b, text(4)...)
	b = append(b, ", partition: "...)
	b = append(b, text(1)...)
	b = append(b, ", offset: "...)
	b = append(b, text(2)...)
	return append(b, '\n')
}

// appendRowText appends a row as "v1 | v2 | …".
func appendRowText(b []byte, row types.Row, cols []types.Column) []byte {
	for i, c := range cols {
		if i > 0 {
			b = append(b, " | "...)
		}
		if i < len(row) {
			b = types.AppendText(b, row[i], c.Type)
		}
	}
	return b
}

// flushLoop flushes written rows every flushInterval until stopFlusher.
func (st *streamer) flushLoop() {
	defer close(st.stopped)
	t := time.NewTicker(flushInterval)
	defer t.Stop()
	for {
		select {
		case <-st.stop:
			return
		case <-t.C:
			st.mu.Lock()
			if st.dirty && st.err == nil {
				st.dirty = false
				st.err = st.rc.Flush()
			}
			st.mu.Unlock()
		}
	}
}

// stopFlusher stops the flush loop; the handler may not write to w from
// another goroutine after it returns.
func (st *streamer) stopFlusher() {
	if st.stop != nil {
		close(st.stop)
		<-st.stopped
		st.stop = nil
	}
}

// finish ends a query that completed (limited: at its LIMIT) or was ended
// on purpose.
func (st *streamer) finish(limited bool) {
	var b []byte
	switch st.format {
	case formatArray:
		b = []byte("]")
	case formatLegacy, formatProto:
		if st.tablePull {
			// ksqlDB ends a table's pull query with its rows.
			b = append(b, "]\n"...)
			break
		}
		msg := "Query Completed"
		if limited {
			msg = "Limit Reached"
		}
		b = appendJSON([]byte(",\n"), map[string]string{"finalMessage": msg})
		b = append(b, "]\n"...)
	}
	st.write(b)
}

// fail ends a query that failed after its header was sent: the error is
// the last element of the response.
func (st *streamer) fail(err error) {
	_, m := statusOf(err, "", nil)
	if errors.Is(err, context.Canceled) {
		m.Message = "the query was canceled"
	}
	var b []byte
	switch st.format {
	case formatDelimited:
		b = appendJSON(nil, m)
		b = append(b, '\n')
	case formatArray:
		b = append([]byte{','}, appendJSON(nil, m)...)
		b = append(b, ']')
	case formatLegacy, formatProto:
		b = appendJSON([]byte(",\n{\"errorMessage\":"), m)
		b = append(b, "}]\n"...)
	case formatPrint:
		b = append([]byte("error: "+m.Message), '\n')
	}
	st.write(b)
}
