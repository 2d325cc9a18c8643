package rest

// This file renders errors as ksqlDB's KsqlErrorMessage bodies. ksqlDB's
// error codes are the HTTP status times 100, plus a detail digit.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/sqlstreams/sqlstreams/sql"
)

// ksqlDB error codes (io.confluent.ksql.rest.Errors).
const (
	codeBadRequest     = 40000
	codeBadStatement   = 40001
	codeQueryEndpoint  = 40002
	codeMaxPushQueries = 40003
	codeUnauthorized   = 40100
	codeNotFound       = 40400
	codeMethod         = 40500
	codeTooLarge       = 41300
	codeServerError    = 50000
	codeUnavailable    = 50300
)

// errorMessage is KsqlErrorMessage and, with StatementText set,
// KsqlStatementErrorMessage.
type errorMessage struct {
	Type       string   `json:"@type"`
	ErrorCode  int      `json:"error_code"`
	Message    string   `json:"message"`
	StackTrace []string `json:"stackTrace"`
	// statement_error only.
	StatementText *string `json:"statementText,omitempty"`
	Entities      []any   `json:"entities,omitzero"` // [] when none ran
	// sqlstreams additions for statement errors: the SQLSTATE and the
	// 1-based line and column within the statement.
	SQLState string `json:"sqlState,omitempty"`
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
}

// apiError is an error with the HTTP status and ksqlDB code to answer it
// with.
type apiError struct {
	status int
	code   int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(msg string) *apiError {
	return &apiError{status: http.StatusBadRequest, code: codeBadRequest, msg: msg}
}

// genericError returns the body for a request-level error.
func genericError(code int, msg string) *errorMessage {
	return &errorMessage{Type: "generic_error", ErrorCode: code, Message: msg, StackTrace: []string{}}
}

// statusOf maps an error to its HTTP status and body. Statement errors
// (*sql.Error) are 400 statement errors, except internal ones; a canceled
// context is a 400 as well (the statement was ended on purpose); anything
// else is a 500. statement is the statement's text, or "" for errors not
// about one statement.
func statusOf(err error, statement string, entities []any) (int, *errorMessage) {
	var ae *apiError
	if errors.As(err, &ae) {
		m := genericError(ae.code, ae.msg)
		if statement != "" {
			m.Type, m.StatementText, m.Entities = "statement_error", &statement, nonNil(entities)
		}
		return ae.status, m
	}
	status, code := http.StatusInternalServerError, codeServerError
	var se *sql.Error
	switch {
	case errors.As(err, &se):
		if se.Code != sql.CodeInternal {
			status, code = http.StatusBadRequest, codeBadStatement
		}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		status, code = http.StatusBadRequest, codeBadStatement
	}
	m := genericError(code, err.Error())
	if se != nil {
		m.SQLState = se.Code
		if se.Line > 0 {
			m.Line, m.Column = se.Line, se.Column
		}
	}
	if statement != "" {
		m.Type, m.StatementText, m.Entities = "statement_error", &statement, nonNil(entities)
	}
	return status, m
}

// nonNil returns entities, or an empty list: statement errors always carry
// "entities".
func nonNil(entities []any) []any {
	if entities == nil {
		return []any{}
	}
	return entities
}

// writeJSON answers with status and v as JSON.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"@type":"generic_error","error_code":50000,"message":"encoding the response failed","stackTrace":[]}`)
	}
	w.Header().Set("Content-Type", jsonContentType(r))
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// marshal encodes v as JSON without HTML escaping.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// writeError answers with err's status and body.
func writeError(w http.ResponseWriter, r *http.Request, err error, statement string, entities []any) {
	status, m := statusOf(err, statement, entities)
	writeJSON(w, r, status, m)
}
