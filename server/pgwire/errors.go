package pgwire

// This file turns Go errors into ErrorResponse messages. Statement errors
// arrive as *sql.Error carrying their SQLSTATE; this is the one place they
// meet the wire.

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/sql"
)

// SQLSTATE codes this package raises itself, beyond those in package sql.
const (
	codeProtocolViolation    = "08P01"
	codeInvalidCursorName    = "34000"
	codeInvalidStatementName = "26000"
	codeDuplicateStatement   = "42P05"
	codeDuplicateCursor      = "42P03"
	codeAdminShutdown        = "57P01"
	codeIdleTimeout          = "57P05"
	codeTooManyConnections   = "53300"
	codeInvalidPassword      = "28P01"
	codeInvalidAuthSpec      = "28000"
)

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("pgwire: server closed")

// ErrInsecureListen is returned by Serve for a listener on a non-loopback
// address when no authentication is configured; see WithInsecureListen.
var ErrInsecureListen = errors.New("pgwire: refusing to serve without authentication on a non-loopback address (configure password authentication, or force it)")

// errCanceled is what a statement cancelled by a CancelRequest reports,
// whatever the engine returned.
var errCanceled = &sql.Error{Code: sql.CodeQueryCanceled, Msg: "canceling statement due to user request", Offset: -1}

// errStatementTimeout is what a statement stopped by statement_timeout
// reports.
var errStatementTimeout = &sql.Error{Code: sql.CodeQueryCanceled, Msg: "canceling statement due to statement timeout", Offset: -1}

// errorResponse builds the ErrorResponse for err, a failure of a statement
// that starts at byte stmtOff of query (the text the client sent). An
// *sql.Error keeps its code and message, and its offset becomes Position
// (1-based, in characters of query, as Postgres counts it); any other error
// is XX000.
func errorResponse(severity string, err error, query string, stmtOff int) *pgproto3.ErrorResponse {
	er := &pgproto3.ErrorResponse{Severity: severity, SeverityUnlocalized: severity}
	var se *sql.Error
	switch {
	case errors.As(err, &se):
		// The message keeps "line L:C:" (ksqlDB style) for clients that
		// ignore Position.
		er.Code, er.Message = se.Code, se.Error()
		if er.Code == "" {
			er.Code = sql.CodeInternal
		}
		if se.Offset >= 0 && stmtOff >= 0 {
			off := stmtOff + se.Offset
			if off > len(query) {
				off = len(query)
			}
			er.Position = int32(utf8.RuneCountInString(query[:off]) + 1)
		}
	case errors.Is(err, context.Canceled):
		er.Code, er.Message = errCanceled.Code, errCanceled.Msg
	default:
		er.Code, er.Message = sql.CodeInternal, err.Error()
	}
	er.Message = noNUL(er.Message)
	return er
}

// noNUL drops NUL bytes, which would cut a protocol string short.
func noNUL(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "")
}
