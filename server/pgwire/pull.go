package pgwire

// This file runs prepared pull queries from a plan the engine made once
// per prepared statement (engine.Pull), instead of substituting the
// parameters into the text and executing that.
//
// A statement qualifies when the engine can plan it as a pull query over
// a materialized table and pgwire does not answer it itself, and either
// it has no parameters (the plan runs as prepared), or it has one
// parameter, used once, that is the key in WHERE key = $1 (the plan looks
// up the bound key). The engine prepares the statement with its
// placeholder (engine.Prepare: an expression node, not text) and says
// whether $1 is the key it looks up (Pull.KeyParam). Anything else, a
// cursor (Execute with a row limit), or a plan whose table was dropped or
// replaced since, runs the substituted text as before; errors are
// reported by that path, so they are the same as without plans.

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/types"
)

// pullPlan returns p's engine plan, making it the first time; nil when p
// does not qualify.
func (c *conn) pullPlan(p *prepared) *engine.Pull {
	if p.pullTried {
		return p.pull
	}
	if p.binds++; p.name == "" && p.binds < 2 {
		// A one-shot unnamed statement would pay for planning twice.
		return nil
	}
	p.pullTried = true
	pp, ok := c.srv.exec.(engine.PullPreparer)
	if !ok || p.stmt == "" {
		return nil
	}
	switch len(p.params.oids) {
	case 0:
		if c.intercept(p.stmt) != nil {
			return nil
		}
		pl, err := pp.PreparePull(c.sess, p.stmt)
		if err != nil {
			return nil
		}
		p.pull = pl
	case 1:
		pr, ok := c.srv.exec.(engine.Preparer)
		if !ok || len(p.params.slots) != 1 {
			return nil
		}
		// The placeholder as the engine takes it: $1 without a cast.
		text := substitute(p.stmt, p.params, func(int) string { return "$1" })
		if c.intercept(text) != nil {
			return nil
		}
		switch p.params.oids[0] {
		case oidInt2, oidInt4, oidInt8, 0, oidText, oidVarchar, oidUnknown:
		default:
			return nil // not a type the key lookup takes (pullKey)
		}
		prep, err := pr.Prepare(c.ctx, c.sess, text)
		if err != nil {
			return nil
		}
		pl := prep.Pull()
		if pl == nil || pl.KeyParam() != 1 {
			return nil
		}
		if _, kt, _ := pl.PointKey(); !keyFits(p.params.oids[0], kt) {
			return nil
		}
		p.pull, p.pullKey = pl, true
	}
	return p.pull
}

// keyFits reports whether a parameter of type oid is a key of type t.
func keyFits(oid uint32, t types.Type) bool {
	switch oid {
	case oidInt2, oidInt4, oidInt8:
		return t.IsIntegral()
	default:
		return t.Kind == types.String
	}
}

// pullKey decodes the value Bind gave for a point plan's parameter into
// the key datum; false when it cannot (the text path then runs).
// bindParams has validated it already.
func pullKey(oid uint32, formats []int16, v, buf []byte) (types.Datum, []byte, bool) {
	if v == nil {
		return types.NullDatum, buf, true
	}
	f := formatText
	if len(formats) > 0 {
		f = formats[0]
	}
	text := v
	switch f {
	case formatText:
	case formatBinary:
		s, err := decodeBinary(v, oid)
		if err != nil {
			return types.Datum{}, buf, false
		}
		text = []byte(s)
	default:
		return types.Datum{}, buf, false
	}
	switch oid {
	case oidInt2, oidInt4, oidInt8:
		n, err := strconv.ParseInt(string(bytes.TrimSpace(text)), 10, 64)
		if err != nil {
			return types.Datum{}, buf, false
		}
		return types.IntDatum(n), buf, true
	}
	if buf == nil {
		buf = make([]byte, 0, 32)
	}
	buf = append(buf[:0], text...)
	return types.Datum{B: buf}, buf, true
}

// runPull executes a portal bound to an engine plan. It reports false,
// having sent nothing, when the plan is stale; the caller then runs the
// text.
func (c *conn) runPull(pt *portal) bool {
	if err := c.checkTxState(nil); err != nil {
		c.extendedError(err, "", -1)
		return true
	}
	rw := &c.rw
	rw.reset(false, pt.codes, pt.cols, pt.described)
	rw.pullQuery()
	err := c.runPullQuery(func(ctx context.Context) error {
		var res engine.Result
		var err error
		if pt.stmt.pullKey {
			res, err = pt.pull.RunKey(ctx, pt.key, rw)
		} else {
			res, err = pt.pull.Run(ctx, rw)
		}
		if rw.err != nil {
			return rw.err
		}
		pt.tag = rw.tag(res)
		return err
	})
	if errors.Is(err, engine.ErrStale) {
		p := pt.stmt
		p.pull, p.pullTried, p.pullKey = nil, false, false
		pt.pull = nil
		return false
	}
	c.srv.cfg.metrics.CountStatement("pgwire", err == nil)
	if err != nil {
		c.extendedError(err, pt.stmt.query, pt.stmt.off)
		return true
	}
	pt.done, pt.rows = true, rw.started
	c.w.commandComplete(pt.tag)
	c.afterStatement()
	return true
}

// keyParamValid reports whether Bind's values are one text-format value
// for a point plan's key parameter that bindParams would accept: then the
// portal keeps the key alone and builds its text only when needed
// (boundText), with the literal bindParams would have written.
func keyParamValid(pi paramInfo, formats []int16, values [][]byte) bool {
	if len(values) != 1 || len(pi.oids) != 1 || len(formats) > 1 || (len(formats) == 1 && formats[0] != formatText) {
		return false
	}
	v := values[0]
	if v == nil {
		return true
	}
	switch pi.oids[0] {
	case oidInt2, oidInt4, oidInt8:
		_, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		return err == nil
	}
	return bytes.IndexByte(v, 0) < 0 && utf8.Valid(v)
}

// boundText returns the portal's statement with its parameters
// substituted, building it the first time for a portal that kept only
// its key.
func (pt *portal) boundText() string {
	if !pt.lazyText {
		return pt.text
	}
	p := pt.stmt
	lit := "NULL"
	switch oid := p.params.oids[0]; {
	case pt.key.Null:
	case oid == oidInt2 || oid == oidInt4 || oid == oidInt8:
		lit = strconv.FormatInt(pt.key.I, 10)
	default:
		lit, _ = quoteString(string(pt.key.B)) // keyParamValid checked it
	}
	pt.text, pt.lazyText = substitute(p.stmt, p.params, func(int) string { return lit }), false
	return pt.text
}
