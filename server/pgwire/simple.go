package pgwire

// This file handles the simple query protocol: a Query message holding one
// or more statements separated by semicolons.
//
// Each statement runs in turn: RowDescription when it returns rows, a
// DataRow per row (always text format), then CommandComplete; COPY … TO
// STDOUT sends CopyOutResponse, CopyData and CopyDone instead (copy.go).
// The first failing statement sends ErrorResponse and the rest are
// skipped, as Postgres does. An empty query sends EmptyQueryResponse.
// ReadyForQuery, with the transaction status, ends every Query.

import (
	"context"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/sql"
)

// query handles a Query message.
func (c *conn) query(text string) {
	// Postgres drops the unnamed statement and portal on a simple query.
	delete(c.stmts, "")
	if pt := c.portals[""]; pt != nil {
		pt.close()
		delete(c.portals, "")
	}
	stmts := sql.Segments(text)
	if len(stmts) == 0 {
		c.w.send(&pgproto3.EmptyQueryResponse{})
	}
	for _, st := range stmts {
		err := c.execSimple(st.Text)
		c.afterStatement()
		if err != nil {
			c.sendError(err, text, st.Pos)
			break
		}
	}
	c.inBatch = false
	if c.txStatus == txIdle {
		c.closePortals()
	}
	c.readyForQuery()
}

// execSimple runs one statement of a Query message.
func (c *conn) execSimple(stmt string) error {
	// A statement whose template has a point-lookup plan runs it. The
	// template was not one intercept answers when it was planned, and
	// intercept does not look at a SELECT's literals.
	if p, key, ok := c.simplePull(stmt, false); ok {
		if err := c.checkTxState(nil); err != nil {
			return err
		}
		if handled, err := c.runSimplePull(stmt, p, key); handled {
			c.srv.cfg.metrics.CountStatement("pgwire", err == nil)
			return err
		}
	}
	l := c.intercept(stmt)
	if err := c.checkTxState(l); err != nil {
		return err
	}
	if l == nil {
		if handled, err := c.trySimplePull(stmt); handled {
			c.srv.cfg.metrics.CountStatement("pgwire", err == nil)
			return err
		}
	}
	rw := &c.rw
	rw.reset(true, nil, nil, false)
	var tag string
	err := c.run(func(ctx context.Context) error {
		res, err := c.runStatement(ctx, stmt, l, rw)
		if rw.err != nil {
			return rw.err
		}
		tag = rw.tag(res)
		return err
	})
	if err != nil {
		return err
	}
	return c.w.commandComplete(tag)
}
