package pgwire

// This file handles the extended query protocol: Parse, Bind, Describe,
// Execute, Close, Sync and Flush.
//
// Supported: named and unnamed prepared statements and portals;
// parameters $1… in text and binary formats with declared, cast or
// inferred types, bound as values into the engine's prepared statement
// (params.go, pull.go); result format codes (none = all text, one
// for all columns, or one per column; text and binary); Describe of a
// statement (ParameterDescription, then RowDescription or NoData) and of a
// portal; Execute with a row limit, which suspends the portal
// (PortalSuspended) and resumes it at the next Execute — a push query
// keeps running, paused, between them; Close of either; discarding
// messages after an error until Sync.
//
// Portals are closed, and a suspended statement stopped, at Sync outside
// a transaction block (see intercept.go), at Close, and when the
// connection ends. Inside a BEGIN block they live until Sync after the
// block ends, so JDBC-style fetching in batches works.
//
// Not supported: the function call protocol.

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// prepared is a statement created by Parse.
type prepared struct {
	name   string
	query  string // the text Parse sent, for error positions
	stmt   string // the single statement in it, or "" for an empty query
	off    int    // where stmt starts in query
	params paramInfo

	described bool           // cols holds the description
	cols      []types.Column // nil when the statement returns no rows

	// The engine's plan of a pull query (pull.go): made at the first
	// Bind of a named statement or the second of the unnamed one
	// (pullTried), nil when the statement does not qualify; pullKey when
	// $1 is the key it looks up.
	pull      *engine.Pull
	pullTried bool
	pullKey   bool
	// prep is the engine's statement of a statement with parameters,
	// made by its first Describe or Bind (prepareParams): the values of
	// Bind go to it as datums. prepErr is the engine's refusal; local,
	// a statement whose values are substituted into its text instead
	// (pgwire's own answers, executors without Prepare).
	prep    *engine.Prepared
	prepErr error
	local   bool
	binds   int
}

// portal is a statement bound by Bind, ready to execute.
type portal struct {
	stmt  *prepared
	text  string  // the statement (with its values written in, for pgwire's own answers); read it with boundText
	codes []int16 // result format codes as Bind sent them

	described bool           // cols holds the description of text
	cols      []types.Column // when the statement has parameters

	pull   *engine.Pull  // the statement's plan, when it has one (pull.go)
	key    types.Datum   // the key to look up, when byKey
	keyBuf []byte        // holds key's bytes
	vals   []types.Datum // the parameters' values, when eng
	// eng: the values went to stmt.prep (runPrepared); byKey: the one
	// value is key, looked up with RunKey.
	eng, byKey bool

	cur  *cursor // the statement, suspended after a row-limited Execute
	done bool    // ran to completion; a second Execute does not run it again
	rows bool    // it returned rows
	tag  string
}

// extendedError reports err, a failure of an extended-protocol message, and
// discards messages until Sync.
func (c *conn) extendedError(err error, query string, off int) {
	c.sendError(err, query, off)
	c.skipUntilSync = true
}

// parse handles Parse: it checks that the text holds at most one statement,
// finds its parameters and stores it. The engine sees the statement at
// Describe or Execute.
func (c *conn) parse(m *pgproto3.Parse) {
	c.inBatch = true
	if m.Name != "" && c.stmts[m.Name] != nil {
		c.extendedError(sql.Errorf(codeDuplicateStatement, "prepared statement %q already exists", m.Name), "", -1)
		return
	}
	p := &prepared{name: m.Name, query: m.Query}
	switch stmts := sql.Segments(m.Query); len(stmts) {
	case 0:
	case 1:
		p.stmt, p.off = stmts[0].Text, stmts[0].Pos
	default:
		c.extendedError(&sql.Error{Code: sql.CodeSyntaxError, Msg: "cannot insert multiple commands into a prepared statement", Offset: -1}, "", -1)
		return
	}
	if len(m.ParameterOIDs) > maxParams {
		c.extendedError(sql.Errorf(codeProtocolViolation, "too many parameter types: %d", len(m.ParameterOIDs)), "", -1)
		return
	}
	pi, err := c.analyzeParams(p.stmt, m.ParameterOIDs)
	if err != nil {
		c.extendedError(err, p.query, p.off)
		return
	}
	p.params = pi
	c.stmts[m.Name] = p
	c.w.send(&pgproto3.ParseComplete{})
}

// bind handles Bind: it converts the parameters into datums of the
// engine's statement (or, for pgwire's own answers, writes them into the
// text) and creates a portal.
func (c *conn) bind(m *pgproto3.Bind) {
	c.inBatch = true
	p := c.stmts[m.PreparedStatement]
	if p == nil {
		c.extendedError(sql.Errorf(codeInvalidStatementName, "prepared statement %q does not exist", m.PreparedStatement), "", -1)
		return
	}
	if err := checkFormats(m.ResultFormatCodes); err != nil {
		c.extendedError(err, "", -1)
		return
	}
	if m.DestinationPortal != "" && c.portals[m.DestinationPortal] != nil {
		c.extendedError(sql.Errorf(codeDuplicateCursor, "portal %q already exists", m.DestinationPortal), "", -1)
		return
	}
	pl := c.pullPlan(p)
	text := p.stmt
	hasParams := len(p.params.oids) > 0 || len(m.Parameters) > 0
	if hasParams && p.prep == nil {
		if p.prepErr != nil {
			c.extendedError(p.prepErr, p.query, p.off)
			return
		}
		// pgwire's own answers: the values are written into the text.
		var err error
		if text, err = bindParams(p.stmt, p.params, m.ParameterFormatCodes, m.Parameters); err != nil {
			c.extendedError(err, "", -1)
			return
		}
	}
	pt := c.newPortal(m.DestinationPortal)
	pt.stmt, pt.text, pt.codes = p, text, append(pt.codes, m.ResultFormatCodes...)
	if len(p.params.oids) == 0 {
		pt.described, pt.cols = p.described, p.cols
	}
	switch {
	case hasParams && p.prep != nil:
		if p.pullKey && keyParamValid(p.params, m.ParameterFormatCodes, m.Parameters) {
			pt.key, pt.keyBuf, pt.byKey = pullKey(p.params.oids[0], m.ParameterFormatCodes, m.Parameters[0], pt.keyBuf)
		}
		if !pt.byKey {
			var err error
			if pt.vals, err = bindValues(p.prep.ParamTypes(), p.params.oids, m.ParameterFormatCodes, m.Parameters, pt.vals[:0]); err != nil {
				c.extendedError(err, "", -1)
				return
			}
		}
		pt.eng, pt.pull = true, pl
		if !pt.described {
			pt.described, pt.cols = true, p.prep.Columns()
		}
	case pl != nil:
		pt.pull = pl
		if !pt.described {
			pt.described, pt.cols = true, pl.Columns()
		}
	}
	if pt.described {
		if err := formatCount(m.ResultFormatCodes, len(pt.cols)); err != nil {
			c.extendedError(err, "", -1)
			return
		}
	}
	if old := c.portals[m.DestinationPortal]; old != nil {
		old.close()
	}
	c.portals[m.DestinationPortal] = pt
	c.w.send(&pgproto3.BindComplete{})
}

// newPortal returns an empty portal for a Bind to name. A Bind to the
// unnamed portal ends the one there (as in Postgres, whether or not the
// Bind succeeds). The unnamed portal's struct and buffers are reused —
// the one a Bind replaces, or the one the last Sync closed (see sync) —
// so a prepared statement executed over and over allocates no portal.
// Nothing keeps a closed portal: its cursor's goroutine has left.
func (c *conn) newPortal(name string) *portal {
	pt := c.spare
	c.spare = nil
	if old := c.portals[""]; name == "" && old != nil {
		old.close()
		delete(c.portals, "")
		pt = old
	}
	if pt == nil || name != "" {
		return &portal{}
	}
	*pt = portal{codes: pt.codes[:0], keyBuf: pt.keyBuf[:0], vals: pt.vals[:0]}
	return pt
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
		if !p.described && len(p.params.oids) > 0 {
			if err := c.describeParams(p); err != nil {
				c.extendedError(err, p.query, p.off)
				return
			}
		}
		if !p.described {
			text := p.stmt
			if len(p.params.slots) > 0 {
				text = placeholderText(p.stmt, p.params)
			}
			cols, err := c.describeText(text)
			if err != nil {
				c.extendedError(err, p.query, p.off)
				return
			}
			p.cols, p.described = cols, true
		}
		oids := make([]uint32, len(p.params.oids))
		for i := range oids {
			oids[i] = p.params.reported(i)
		}
		c.w.send(&pgproto3.ParameterDescription{ParameterOIDs: oids})
		c.sendDescription(p.cols, nil)
	case 'P':
		pt := c.portals[m.Name]
		if pt == nil {
			c.extendedError(sql.Errorf(codeInvalidCursorName, "portal %q does not exist", m.Name), "", -1)
			return
		}
		if err := c.describePortal(pt); err != nil {
			c.extendedError(err, pt.stmt.query, pt.stmt.off)
			return
		}
		formats, err := resolveFormats(nil, pt.codes, len(pt.cols))
		if err != nil {
			c.extendedError(err, "", -1)
			return
		}
		c.sendDescription(pt.cols, formats)
	default:
		c.extendedError(sql.Errorf(codeProtocolViolation, "invalid DESCRIBE message subtype %d", m.ObjectType), "", -1)
	}
}

// describePortal finds the columns of a portal's statement, once.
func (c *conn) describePortal(pt *portal) error {
	if pt.described {
		return nil
	}
	cols, err := c.describeText(pt.boundText())
	if err != nil {
		return err
	}
	pt.cols, pt.described = cols, true
	if len(pt.stmt.params.oids) == 0 {
		pt.stmt.cols, pt.stmt.described = cols, true
	}
	return nil
}

// describeText returns the columns a statement returns: pgwire's own for
// the statements it answers, else the engine's.
func (c *conn) describeText(text string) ([]types.Column, error) {
	if text == "" {
		return nil, nil
	}
	if l := c.intercept(text); l != nil {
		if l.copyOut {
			return nil, nil
		}
		return slices.Clone(l.cols), nil
	}
	var cols []types.Column
	err := c.run(func(ctx context.Context) error {
		var err error
		cols, err = c.srv.exec.Describe(ctx, c.sess, text)
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, nil
	}
	return slices.Clone(cols), nil
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

// execute handles Execute: it runs the portal's statement, sending
// DataRows in the portal's formats and then CommandComplete, or, with a
// row limit, up to that many rows and PortalSuspended.
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
		c.w.commandComplete(tag)
		return
	}
	if pt.cur != nil {
		c.fetch(pt, m.MaxRows)
		return
	}
	if pt.eng {
		// The engine's statement, with the values as datums.
		if m.MaxRows > 0 {
			if err := c.checkTxState(nil); err != nil {
				c.extendedError(err, "", -1)
				return
			}
			pt.cur = c.openCursor(pt, nil)
			c.fetch(pt, m.MaxRows)
			return
		}
		c.runPrepared(pt)
		return
	}
	if pt.pull != nil && m.MaxRows == 0 && c.runPull(pt) {
		return
	}
	l := c.intercept(pt.boundText())
	if err := c.checkTxState(l); err != nil {
		c.extendedError(err, "", -1)
		return
	}
	if m.MaxRows > 0 && (l == nil || !l.copyOut) {
		pt.cur = c.openCursor(pt, l)
		c.fetch(pt, m.MaxRows)
		return
	}
	rw := &c.rw
	rw.reset(false, pt.codes, pt.cols, pt.described)
	err := c.run(func(ctx context.Context) error {
		res, err := c.runStatement(ctx, pt.boundText(), l, rw)
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
	c.w.commandComplete(pt.tag)
	c.afterStatement()
}

// checkTxState refuses statements in a failed transaction block, except
// those that end it.
func (c *conn) checkTxState(l *local) error {
	if c.txStatus == txFailed && (l == nil || !l.txControl) {
		return sql.Errorf(codeInFailedTx, "current transaction is aborted, commands ignored until end of transaction block")
	}
	return nil
}

// runStatement runs one statement: pgwire's own answer l, or the engine.
// It logs at Debug when the statement has ended, its resources released.
func (c *conn) runStatement(ctx context.Context, text string, l *local, w engine.ResultWriter) (res engine.Result, err error) {
	if c.log.Enabled(ctx, slog.LevelDebug) {
		start := time.Now()
		defer func() {
			if len(text) > 200 {
				text = text[:200] + "…"
			}
			c.log.Debug("pgwire: statement ended", "stmt", text, "took", time.Since(start), "err", err)
		}()
	}
	if l != nil {
		return l.run(ctx, w)
	}
	defer func() { c.srv.cfg.metrics.CountStatement("pgwire", err == nil) }()
	return c.srv.exec.Execute(ctx, c.sess, text, w)
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
					pt.close()
					delete(c.portals, name)
				}
			}
		}
	case 'P':
		if pt := c.portals[m.Name]; pt != nil {
			pt.close()
			delete(c.portals, m.Name)
		}
	default:
		c.extendedError(sql.Errorf(codeProtocolViolation, "invalid CLOSE message subtype %d", m.ObjectType), "", -1)
		return
	}
	c.w.send(&pgproto3.CloseComplete{})
}

// sync handles Sync: it ends the batch and its error state, closes the
// portals unless a transaction block is open, and sends ReadyForQuery.
func (c *conn) sync() {
	c.inBatch, c.skipUntilSync = false, false
	if c.txStatus == txIdle {
		if pt := c.portals[""]; pt != nil && pt.cur == nil {
			c.spare = pt // for the next Bind (newPortal)
		}
		c.closePortals()
	}
	c.readyForQuery()
}

// closePortals closes every portal, stopping suspended statements.
func (c *conn) closePortals() {
	for name, pt := range c.portals {
		pt.close()
		delete(c.portals, name)
	}
}

// close stops the portal's suspended statement, if any, and waits for it.
func (pt *portal) close() {
	if pt.cur != nil {
		pt.cur.close()
		pt.cur = nil
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
