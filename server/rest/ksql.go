package rest

// This file serves POST /ksql: it runs a request's statements in order
// and answers with one ksqlDB entity per statement that returns one. Each
// statement is parsed once (sql.Parse) to choose its entity and handed,
// parsed, to the engine (ExecuteStatement), which runs it (validation,
// errors with positions, the effect) and reports what it created or
// changed (engine.Change); the entity is built from that.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// ksqlRequest is ksqlDB's KsqlRequest.
type ksqlRequest struct {
	KSQL              string         `json:"ksql"`
	StreamsProperties map[string]any `json:"streamsProperties"`
	SessionVariables  map[string]any `json:"sessionVariables"`
	// CommandSequenceNumber is accepted and ignored: statements run
	// synchronously, so an earlier request's commands have been applied
	// on this server when it answered.
	CommandSequenceNumber *int64 `json:"commandSequenceNumber"`
}

// handleKSQL runs POST /ksql. Statements run one after another in one
// session, so a SET applies to the statements after it in the request
// (and, as in ksqlDB, not beyond the request). At the first failing
// statement the answer is a statement error that carries the entities of
// the statements that ran before it.
func (s *Server) handleKSQL(w http.ResponseWriter, r *http.Request) {
	var req ksqlRequest
	if err := s.decodeRequest(w, r, &req); err != nil {
		writeError(w, r, err, "", nil)
		return
	}
	if sql.Blank(req.KSQL) {
		writeError(w, r, badRequest(`the request has no statements in "ksql"`), "", nil)
		return
	}
	sess, err := newSession(req.StreamsProperties)
	if err != nil {
		writeError(w, r, err, "", nil)
		return
	}
	entities := []any{}
	for _, text := range sql.Split(substitute(req.KSQL, req.SessionVariables)) {
		ent, err := s.runStatement(r.Context(), sess, text)
		if err != nil {
			s.logFailure(r, text, err)
			writeError(w, r, err, stmtText(text), entities)
			return
		}
		if ent != nil {
			entities = append(entities, ent)
		}
	}
	writeJSON(w, r, http.StatusOK, entities)
}

// decodeRequest reads a JSON request body into v.
func (s *Server) decodeRequest(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return badRequest("malformed JSON in the request body: " + err.Error())
	}
	return nil
}

// logFailure logs a statement that failed for a reason other than the
// statement itself.
func (s *Server) logFailure(r *http.Request, text string, err error) {
	if status, _ := statusOf(err, "", nil); status >= 500 {
		s.log.Warn("REST statement failed", "path", r.URL.Path, "statement", text, "err", err)
	}
}

// newSession returns a session with the request's properties, each
// checked by the engine's property registry as SET checks it (so
// ksql.streams.auto.offset.reset is auto.offset.reset). A property the
// registry does not know is refused with ksqlDB's message.
func newSession(props map[string]any) (*engine.Session, error) {
	sess := engine.NewSession()
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if err := engine.SetProperty(sess.Props, k, propString(props[k])); err != nil {
			var se *sql.Error
			if errors.As(err, &se) && se.Code == sql.CodeUndefinedObject {
				return nil, badRequest(fmt.Sprintf("Not recognizable as ksql, streams, consumer, or producer property: '%s'", k))
			}
			return nil, badRequest(err.Error())
		}
	}
	return sess, nil
}

// propString renders a JSON property value as the string the engine keeps.
func propString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

var variableRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// substitute replaces ${name} with the value of the session variable name
// (names are case-insensitive, as in ksqlDB); unknown names stay as they
// are. Error positions then refer to the substituted text.
func substitute(text string, vars map[string]any) string {
	if len(vars) == 0 {
		return text
	}
	lower := make(map[string]string, len(vars))
	for k, v := range vars {
		lower[strings.ToLower(k)] = propString(v)
	}
	return variableRef.ReplaceAllStringFunc(text, func(ref string) string {
		if v, ok := lower[strings.ToLower(ref[2:len(ref)-1])]; ok {
			return v
		}
		return ref
	})
}

// table collects a statement's result as text (NULL as "").
type table struct {
	cols []types.Column
	rows [][]string
}

func (t *table) Columns(cols []types.Column) error {
	t.cols = append([]types.Column(nil), cols...)
	return nil
}

func (t *table) Row(row types.Row) error {
	out := make([]string, len(row))
	for i, d := range row {
		if !d.Null && i < len(t.cols) {
			out[i] = string(types.AppendText(nil, d, t.cols[i].Type))
		}
	}
	t.rows = append(t.rows, out)
	return nil
}

// entityBase holds the fields every ksqlDB entity has.
type entityBase struct {
	Type          string    `json:"@type"`
	StatementText string    `json:"statementText"`
	Warnings      []warning `json:"warnings"`
}

type warning struct {
	Message string `json:"message"`
}

func base(typ, text string) entityBase {
	return entityBase{Type: typ, StatementText: text + ";", Warnings: []warning{}}
}

// commandStatusEntity is ksqlDB's CommandStatusEntity ("currentStatus").
type commandStatusEntity struct {
	entityBase
	CommandID     string        `json:"commandId"`
	CommandStatus commandStatus `json:"commandStatus"`
	// CommandSequenceNumber is the statement's offset in the command
	// topic (engine.Change.Offset), or -1 when it recorded nothing.
	CommandSequenceNumber int64 `json:"commandSequenceNumber"`
}

// command builds a currentStatus entity for a statement that succeeded and
// remembers it for /status.
func (s *Server) command(text, id, msg, queryID string, seq int64) *commandStatusEntity {
	st := commandStatus{Status: "SUCCESS", Message: msg}
	if queryID != "" {
		st.QueryID = &queryID
	}
	s.recordCommand(id, st)
	return &commandStatusEntity{entityBase: base("currentStatus", text), CommandID: id, CommandStatus: st, CommandSequenceNumber: seq}
}

func kindName(k catalog.Kind) string { return strings.ToLower(k.String()) }

// titleKind is "Stream" or "Table".
func titleKind(k catalog.Kind) string {
	n := kindName(k)
	return strings.ToUpper(n[:1]) + n[1:]
}

// errQueryEndpoint refuses queries on /ksql, as ksqlDB does.
var errQueryEndpoint = &apiError{status: http.StatusBadRequest, code: codeQueryEndpoint,
	msg: "SELECT and PRINT statements run on /query-stream (or /query), not on /ksql"}

// runStatement runs one statement and returns its entity, or nil for the
// statements ksqlDB answers with none (INSERT … VALUES, SET, UNSET). The
// statement is parsed once, here, to choose its entity; the engine runs
// it and reports what it changed (engine.Change).
func (s *Server) runStatement(ctx context.Context, sess *engine.Session, text string) (any, error) {
	st, err := sql.Parse(text)
	if err != nil {
		return nil, err
	}
	run := func() (*engine.Change, error) {
		res, err := s.eng.ExecuteStatement(ctx, sess, st, &table{})
		if err != nil {
			return nil, err
		}
		if res.Change == nil {
			return &engine.Change{Offset: -1}, nil
		}
		return res.Change, nil
	}
	switch st := st.(type) {
	case *sql.Select, *sql.Print:
		return nil, errQueryEndpoint
	case *sql.InsertValues, *sql.SetProperty, *sql.UnsetProperty:
		_, err := run()
		return nil, err
	case *sql.CreateSource:
		ch, err := run()
		if err != nil {
			return nil, err
		}
		msg := titleKind(st.Kind) + " created"
		if ch.Existed && st.IfNotExists {
			msg = fmt.Sprintf("Cannot add %s %s: a %s with the same name already exists", kindName(st.Kind), quoteName(st.Name), kindName(st.Kind))
		}
		return s.command(text, kindName(st.Kind)+"/"+st.Name+"/create", msg, "", ch.Offset), nil
	case *sql.CreateAs:
		ch, err := run()
		if err != nil {
			return nil, err
		}
		return s.command(text, kindName(st.Kind)+"/"+st.Name+"/create", "Created query with ID "+ch.QueryID, ch.QueryID, ch.Offset), nil
	case *sql.InsertSelect:
		ch, err := run()
		if err != nil {
			return nil, err
		}
		kind := "stream"
		if ch.Source != "" {
			kind = kindName(ch.Kind)
		}
		return s.command(text, kind+"/"+st.Target+"/create", "Created query with ID "+ch.QueryID, ch.QueryID, ch.Offset), nil
	case *sql.Drop:
		ch, err := run()
		if err != nil {
			return nil, err
		}
		msg := fmt.Sprintf("Source %s does not exist.", quoteName(st.Name))
		if ch.Existed {
			msg = fmt.Sprintf("Source %s (topic: %s) was dropped.", quoteName(st.Name), ch.Topic)
		}
		return s.command(text, kindName(st.Kind)+"/"+st.Name+"/drop", msg, "", ch.Offset), nil
	case *sql.Terminate:
		ch, err := run()
		if err != nil {
			return nil, err
		}
		id := st.QueryID
		if st.All {
			id = "ALL"
		}
		return s.command(text, "terminate/"+id+"/execute", "Query terminated.", "", ch.Offset), nil
	case *sql.Pause:
		ch, err := run()
		if err != nil {
			return nil, err
		}
		id, verb, msg := st.QueryID, "pause", "Query paused."
		if st.All {
			id = "ALL"
		}
		if st.Resume {
			verb, msg = "resume", "Query resumed."
		}
		return s.command(text, verb+"/"+id+"/execute", msg, "", ch.Offset), nil
	case *sql.ResetQuery:
		ch, err := run()
		if err != nil {
			return nil, err
		}
		return s.command(text, "reset/"+st.QueryID+"/execute", "Query reset.", "", ch.Offset), nil
	case *sql.Show:
		return s.show(ctx, sess, st, text)
	case *sql.Describe:
		return s.describe(ctx, sess, st, text)
	case *sql.Explain:
		return s.explain(ctx, sess, st, text)
	}
	// A statement this server does not know an entity for yet.
	res, err := s.eng.ExecuteStatement(ctx, sess, st, &table{})
	if err != nil {
		return nil, err
	}
	off := int64(-1)
	if res.Change != nil {
		off = res.Change.Offset
	}
	return s.command(text, "statement//execute", res.Tag, "", off), nil
}
