package sql

import "fmt"

// SQLSTATE codes used by sqlstreams, from the Postgres catalogue so that
// pgwire can send them unchanged.
const (
	CodeSyntaxError       = "42601"
	CodeUndefinedTable    = "42P01"
	CodeUndefinedColumn   = "42703"
	CodeUndefinedFunction = "42883"
	CodeAmbiguousFunction = "42725"
	CodeDuplicateObject   = "42710"
	CodeDatatypeMismatch  = "42804"
	CodeInvalidParameter  = "22023"
	CodeFeatureNotSupport = "0A000"
	CodeObjectInUse       = "55006"
	CodeUndefinedObject   = "42704"
	CodeInternal          = "XX000"
	CodeQueryCanceled     = "57014"
	CodeNotInState        = "55000" // object_not_in_prerequisite_state
	CodeAdminShutdown     = "57P01"
	// CodeInsufficientPrivilege: Kafka does not grant the service a
	// permission the statement needs.
	CodeInsufficientPrivilege = "42501"
)

// Error is a statement error with its SQLSTATE and, when it concerns the
// statement text, the 1-based line and column it points at. Offset is the
// 0-based byte offset into the statement, or -1.
type Error struct {
	Code   string
	Msg    string
	Line   int
	Column int
	Offset int
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d:%d: %s", e.Line, e.Column, e.Msg)
	}
	return e.Msg
}

// Errorf returns an *Error with code and no position.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Offset: -1}
}

// errorAt returns an *Error pointing at byte offset off of text.
func errorAt(text string, off int, code, format string, args ...any) *Error {
	line, col := LineCol(text, off)
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Line: line, Column: col, Offset: off}
}

// LineCol converts a byte offset of text into a 1-based line and column
// (counted in bytes).
func LineCol(text string, off int) (line, col int) {
	if off > len(text) {
		off = len(text)
	}
	line, col = 1, 1
	for i := 0; i < off; i++ {
		if text[i] == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}
