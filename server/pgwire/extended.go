package pgwire

// This file handles the extended query protocol: Parse, Bind, Describe,
// Execute, Close, Sync and Flush.
//
// Supported: named and unnamed prepared statements and portals; result
// format codes (none = all text, one for all columns, or one per column;
// text and binary); Describe of a statement (ParameterDescription with no
// parameters, then RowDescription from engine.Executor.Describe, or NoData)
// and of a portal (RowDescription in the portal's formats, or NoData);
// Close of either; discarding messages after an error until Sync.
//
// Not yet:
//   - Parameters. A statement with $n placeholders or declared parameter
//     types fails with 0A000 at Describe and Bind; inline values into the
//     statement text for now.
//   - Execute's row limit. Execute runs the statement to completion and
//     ignores MaxRows, so PortalSuspended is never sent; a client that
//     fetches in batches receives all rows at once.
//   - Transactions: every statement runs on its own and ReadyForQuery
//     always reports idle. Portals live until the next Sync.

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// prepared is a statement created by Parse.
type prepared struct {
	name    string
	query   string // the text Parse sent, for error positions
	stmt    string // the single statement in it, or "" for an empty query
	off     int    // where stmt starts in query
	param   string // the first $n placeholder in stmt, or ""
	nparams int    // parameter types declared by Parse

	described bool           // cols holds the engine's description
	cols      []types.Column // nil when the statement returns no rows
}

// portal is a statement bound by Bind, ready to execute.
type portal struct {
	stmt  *prepared
	codes []int16 // result format codes as Bind sent them
	done  bool    // executed; a second Execute does not run it again
	rows  bool    // it returned rows
	tag   string
}

// extendedError reports err, a failure of an extended-protocol message, and
// discards messages until Sync.
func (c *conn) extendedError(err error, query string, off int) {
	c.sendError(err, query, off)
	c.skipUntilSync = true
}

// parse handles Parse: it checks that the text holds at most one statement
// and stores it. The engine sees the statement at Describe or Execute.
func (c *conn) parse(m *pgproto3.Parse) {
	c.inBatch = true
	if m.Name != "" && c.stmts[m.Name] != nil {
		c.extendedError(sql.Errorf(codeDuplicateStatement, "prepared statement %q already exists", m.Name), "", -1)
		return
	}
	p := &prepared{name: m.Name, query: m.Query, nparams: len(m.ParameterOIDs)}
	switch stmts := splitStatements(m.Query); len(stmts) {
	case 0:
	case 1:
		p.stmt, p.off = stmts[0].text, stmts[0].off
		p.param = findParam(p.stmt)
	default:
		c.extendedError(&sql.Error{Code: sql.CodeSyntaxError, Msg: "cannot insert multiple commands into a prepared statement", Offset: -1}, "", -1)
		return
	}
	c.stmts[m.Name] = p
	c.w.send(&pgproto3.ParseComplete{})
}

// paramsError reports a statement with parameters, which are not supported
// yet.
func paramsError(p *prepared) error {
	if p.param != "" {
		return sql.Errorf(sql.CodeFeatureNotSupport, "parameters are not supported yet (found %s); write the values into the statement text", p.param)
	}
	if p.nparams > 0 {
		return sql.Errorf(sql.CodeFeatureNotSupport, "parameters are not supported yet (Parse declared %d parameter types)", p.nparams)
	}
	return nil
}

// bind handles Bind: it creates a portal for a prepared statement.
func (c *conn) bind(m *pgproto3.Bind) {
	c.inBatch = true
	p := c.stmts[m.PreparedStatement]
	if p == nil {
		c.extendedError(sql.Errorf(codeInvalidStatementName, "prepared statement %q does not exist", m.PreparedStatement), "", -1)
		return
	}
	if err := paramsError(p); err != nil {
		c.extendedError(err, "", -1)
		return
	}
	if len(m.Parameters) > 0 {
		c.extendedError(sql.Errorf(codeProtocolViolation, "bind message supplies %d parameters, but prepared statement %q requires 0", len(m.Parameters), m.PreparedStatement), "", -1)
		return
	}
	if err := checkFormats(m.ResultFormatCodes); err != nil {
		c.extendedError(err, "", -1)
		return
	}
	if p.described {
		if _, err := resolveFormats(nil, m.ResultFormatCodes, len(p.cols)); err != nil {
			c.extendedError(err, "", -1)
			return
		}
	}
	if m.DestinationPortal != "" && c.portals[m.DestinationPortal] != nil {
		c.extendedError(sql.Errorf(codeDuplicateCursor, "portal %q already exists", m.DestinationPortal), "", -1)
		return
	}
	c.portals[m.DestinationPortal] = &portal{stmt: p, codes: slices.Clone(m.ResultFormatCodes)}
	c.w.send(&pgproto3.BindComplete{})
}

// describe handles Describe of a statement ('S') or a portal ('P').
func (c *conn) describe(m *pgproto3.Describe) {
	c.inBatch = true
	switch m.ObjectType {
	case 'S':
		p := c.stmts[m.Name]
		if p == nil {
			c.extendedError(sql.Errorf(codeInvalidStatementName, "prepared statement %q does not exist", m.Name), "", -1)
			return
		}
		if err := paramsError(p); err != nil {
			c.extendedError(err, "", -1)
			return
		}
		if err := c.describeStmt(p); err != nil {
			c.extendedError(err, p.query, p.off)
			return
		}
		c.w.send(&pgproto3.ParameterDescription{})
		c.sendDescription(p.cols, nil)
	case 'P':
		pt := c.portals[m.Name]
		if pt == nil {
			c.extendedError(sql.Errorf(codeInvalidCursorName, "portal %q does not exist", m.Name), "", -1)
			return
		}
		if err := c.describeStmt(pt.stmt); err != nil {
			c.extendedError(err, pt.stmt.query, pt.stmt.off)
			return
		}
		formats, err := resolveFormats(nil, pt.codes, len(pt.stmt.cols))
		if err != nil {
			c.extendedError(err, "", -1)
			return
		}
		c.sendDescription(pt.stmt.cols, formats)
	default:
		c.extendedError(sql.Errorf(codeProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType), "", -1)
	}
}

// describeStmt asks the engine for p's columns, once.
func (c *conn) describeStmt(p *prepared) error {
	if p.described || p.stmt == "" {
		p.described = true
		return nil
	}
	var cols []types.Column
	err := c.run(func(ctx context.Context) error {
		var err error
		cols, err = c.srv.exec.Describe(ctx, c.sess, p.stmt)
		return err
	})
	if err != nil {
		return err
	}
	if len(cols) > 0 {
		p.cols = slices.Clone(cols)
	}
	p.described = true
	return nil
}

// sendDescription sends RowDescription for cols in formats (nil: text), or
// NoData when there are no columns.
func (c *conn) sendDescription(cols []types.Column, formats []int16) {
	if len(cols) == 0 {
		c.w.send(&pgproto3.NoData{})
		return
	}
	c.rw.fields = fieldDescriptions(c.rw.fields[:0], cols, formats)
	c.w.send(&pgproto3.RowDescription{Fields: c.rw.fields})
}

// execute handles Execute: it runs the portal's statement to completion,
// sending DataRows in the portal's formats and then CommandComplete. The
// row limit is ignored (see the file comment).
func (c *conn) execute(m *pgproto3.Execute) {
	c.inBatch = true
	pt := c.portals[m.Portal]
	if pt == nil {
		c.extendedError(sql.Errorf(codeInvalidCursorName, "portal %q does not exist", m.Portal), "", -1)
		return
	}
	p := pt.stmt
	switch {
	case p.stmt == "":
		c.w.send(&pgproto3.EmptyQueryResponse{})
		return
	case pt.done:
		// Running it again would repeat its effects; like an exhausted
		// Postgres portal, it returns nothing more.
		tag := pt.tag
		if pt.rows {
			tag = "SELECT 0"
		}
		c.w.send(&pgproto3.CommandComplete{CommandTag: []byte(tag)})
		return
	}
	rw := &c.rw
	rw.reset(false, pt.codes, p.cols, p.described)
	err := c.run(func(ctx context.Context) error {
		res, err := c.srv.exec.Execute(ctx, c.sess, p.stmt, rw)
		if rw.err != nil {
			return rw.err
		}
		pt.tag = rw.tag(res)
		return err
	})
	if err != nil {
		c.extendedError(err, p.query, p.off)
		return
	}
	pt.done, pt.rows = true, rw.started
	c.w.send(&pgproto3.CommandComplete{CommandTag: []byte(pt.tag)})
}

// closeObject handles Close of a statement (which also closes the portals
// made from it) or a portal. Closing what does not exist is not an error.
func (c *conn) closeObject(m *pgproto3.Close) {
	c.inBatch = true
	switch m.ObjectType {
	case 'S':
		if p := c.stmts[m.Name]; p != nil {
			delete(c.stmts, m.Name)
			for name, pt := range c.portals {
				if pt.stmt == p {
					delete(c.portals, name)
				}
			}
		}
	case 'P':
		delete(c.portals, m.Name)
	default:
		c.extendedError(sql.Errorf(codeProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType), "", -1)
		return
	}
	c.w.send(&pgproto3.CloseComplete{})
}

// sync handles Sync: it ends the batch and its error state, closes the
// portals (the implicit transaction ends) and sends ReadyForQuery.
func (c *conn) sync() {
	c.inBatch, c.skipUntilSync = false, false
	clear(c.portals)
	c.readyForQuery()
}

// findParam returns the first $n placeholder in stmt outside quotes and
// comments, or "".
func findParam(stmt string) string {
	for i := 0; i < len(stmt); i++ {
		switch c := stmt[i]; c {
		case '\'', '"', '`':
			for i++; i < len(stmt); i++ {
				if stmt[i] == '\\' && c == '\'' {
					i++
				} else if stmt[i] == c {
					if i+1 < len(stmt) && stmt[i+1] == c {
						i++
						continue
					}
					break
				}
			}
		case '-':
			if i+1 < len(stmt) && stmt[i+1] == '-' {
				for i < len(stmt) && stmt[i] != '\n' {
					i++
				}
			}
		case '/':
			if i+1 < len(stmt) && stmt[i+1] == '*' {
				i += 2
				for i+1 < len(stmt) && !(stmt[i] == '*' && stmt[i+1] == '/') {
					i++
				}
				i++
			}
		case '$':
			j := i + 1
			for j < len(stmt) && isDigit(stmt[j]) {
				j++
			}
			if j > i+1 && (i == 0 || !isIdentByte(stmt[i-1])) {
				return stmt[i:j]
			}
		}
	}
	return ""
}

func isIdentByte(c byte) bool {
	return c == '_' || isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
