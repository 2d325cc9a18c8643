package pgwire

// This file runs a portal's statement in steps, for Execute with a row
// limit: the statement runs in its own goroutine and hands its rows over
// a channel; each Execute takes up to its limit of them and answers
// PortalSuspended, and the statement waits (a push query keeps its
// consumer, paused) until the next Execute or until the portal is closed,
// which cancels it.
//
// Rows crossing the channel are copies (engine rows are valid only during
// Row), so this path allocates per row; Execute without a limit runs the
// statement inline with no copy.

import (
	"context"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/types"
)

// cursor is a statement running in steps.
type cursor struct {
	events chan cursorEvent // closed when the statement ends
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has left
	res    engine.Result // set before events is closed
	err    error
	rw     *resultWriter // encodes the portal's rows
}

// cursorEvent is a statement's Columns call or one of its rows.
type cursorEvent struct {
	cols []types.Column
	row  types.Row
}

// cursorWriter is the engine.ResultWriter of a cursor's statement.
type cursorWriter struct {
	ctx context.Context
	ch  chan<- cursorEvent
}

func (w *cursorWriter) send(ev cursorEvent) error {
	select {
	case w.ch <- ev:
		return nil
	case <-w.ctx.Done():
		return w.ctx.Err()
	}
}

func (w *cursorWriter) Columns(cols []types.Column) error {
	return w.send(cursorEvent{cols: slices.Clone(cols)})
}

func (w *cursorWriter) Row(row types.Row) error {
	return w.send(cursorEvent{row: types.CloneRow(row)})
}

// openCursor starts the portal's statement in its own goroutine. It runs
// until it ends or the cursor is closed; the connection ending closes it.
func (c *conn) openCursor(pt *portal, l *local) *cursor {
	ctx, cancel := context.WithCancel(c.ctx)
	cur := &cursor{
		events: make(chan cursorEvent),
		cancel: cancel,
		done:   make(chan struct{}),
		rw:     &resultWriter{c: c},
	}
	cur.rw.reset(false, pt.codes, pt.cols, pt.described)
	c.cursors.Add(1)
	go func() {
		defer c.cursors.Done()
		defer close(cur.done)
		defer c.recoverCursor(cur)
		w := &cursorWriter{ctx: ctx, ch: cur.events}
		if pt.eng {
			cur.res, cur.err = c.runCursorPrepared(ctx, pt, w)
		} else {
			cur.res, cur.err = c.runStatement(ctx, pt.boundText(), l, w)
		}
		close(cur.events)
	}()
	return cur
}

// recoverCursor turns a panic in a cursor's statement into its error.
func (c *conn) recoverCursor(cur *cursor) {
	if r := recover(); r != nil {
		c.srv.panics.Add(1)
		c.log.Error("pgwire: panic in a suspended statement", "panic", r)
		cur.err = errorf("internal error: %v", r)
		close(cur.events)
	}
}

// close cancels the statement and waits for its goroutine to leave.
func (cur *cursor) close() {
	cur.cancel()
	<-cur.done
}

// fetch sends up to max rows of the portal's cursor (all when max <= 0),
// then PortalSuspended, or CommandComplete when the statement ended.
func (c *conn) fetch(pt *portal, max uint32) {
	cur := pt.cur
	rw := cur.rw
	var n uint32
	ended := false
	err := c.run(func(ctx context.Context) error {
		for max == 0 || n < max {
			select {
			case ev, ok := <-cur.events:
				if !ok {
					ended = true
					return cur.err
				}
				if ev.cols != nil {
					if err := rw.Columns(ev.cols); err != nil {
						return err
					}
					continue
				}
				if err := rw.Row(ev.row); err != nil {
					return err
				}
				n++
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	if err == nil && rw.err != nil {
		err = rw.err
	}
	if err != nil {
		pt.close()
		pt.done = true
		c.extendedError(err, pt.stmt.query, pt.stmt.off)
		return
	}
	if !ended {
		c.w.send(&pgproto3.PortalSuspended{})
		return
	}
	pt.close()
	pt.done, pt.rows = true, rw.started
	pt.tag = rw.tag(cur.res)
	if rw.started {
		pt.tag = "SELECT " + strconv.FormatUint(uint64(n), 10)
	}
	c.w.commandComplete(pt.tag)
}

// runCursorPrepared runs a portal's engine statement (pt.eng) for a
// cursor. A SELECT bound again at each run runs as prepared; a plan
// (pull query, INSERT) keeps buffers the connection may use meanwhile,
// so the cursor prepares its own.
func (c *conn) runCursorPrepared(ctx context.Context, pt *portal, w engine.ResultWriter) (engine.Result, error) {
	p := pt.stmt
	vals := pt.vals
	if pt.byKey {
		vals = []types.Datum{pt.key}
	}
	prep := p.prep
	if !prep.IsQuery() {
		var err error
		if prep, err = c.srv.exec.(engine.Preparer).Prepare(ctx, c.sess, engineText(p)); err != nil {
			return engine.Result{}, err
		}
	}
	b, err := prep.Bind(vals)
	if err != nil {
		return engine.Result{}, err
	}
	res, err := b.Run(ctx, w)
	c.srv.cfg.metrics.CountStatement("pgwire", err == nil)
	return res, err
}
