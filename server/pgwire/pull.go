package pgwire

// This file runs prepared pull queries from a plan the engine made once
// per prepared statement (engine.Pull), instead of substituting the
// parameters into the text and executing that.
//
// A statement qualifies when the engine can plan it as a pull query over
// a materialized table and pgwire does not answer it itself. The engine
// prepares it with its placeholders (engine.Prepare: expression nodes,
// not text). With no parameters the plan runs as prepared. With one
// parameter, used once, that the engine says is the key in WHERE key =
// $1 (Pull.KeyParam), the plan looks up the bound key. Otherwise, when
// the engine typed each parameter as pgwire did (an integer, double,
// boolean or string; params.go), the values are bound as datums
// (engine.Prepared.Bind). Anything else, a value that does not convert,
// a cursor (Execute with a row limit), or a plan whose table was dropped
// or replaced since, runs the substituted text as before; errors are
// reported by that path, so they are the same as without plans.

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
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
	if p.binds++; p.name == "" && p.binds < 2 && p.eprep == nil && !p.params.insert {
		// A one-shot unnamed statement would pay for planning twice
		// (unless its Describe planned it already). An INSERT … VALUES
		// is not planned, only bound: its values go to the engine as
		// datums from the first Bind.
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
	default:
		pr, ok := c.srv.exec.(engine.Preparer)
		if !ok {
			return nil
		}
		prep := p.eprep
		if prep == nil {
			text := engineText(p)
			if c.intercept(text) != nil {
				return nil
			}
			var err error
			if prep, err = pr.Prepare(c.ctx, c.sess, text); err != nil {
				return nil
			}
		}
		if prep.IsInsert() {
			// Its values go to the engine as datums (runInsert).
			for i, t := range prep.ParamTypes() {
				if i >= len(p.params.oids) || !valueFits(p.params.oids[i], t) {
					return nil
				}
			}
			if len(prep.ParamTypes()) == len(p.params.oids) {
				p.prep = prep
			}
			return nil
		}
		if prep.Pull() == nil {
			return nil
		}
		pl := prep.Pull()
		if len(p.params.oids) == 1 && len(p.params.slots) == 1 && pl.KeyParam() == 1 {
			switch p.params.oids[0] {
			case oidInt2, oidInt4, oidInt8, 0, oidText, oidVarchar, oidUnknown:
				if _, kt, _ := pl.PointKey(); keyFits(p.params.oids[0], kt) {
					p.pull, p.pullKey = pl, true
				}
			}
			return p.pull
		}
		pts := prep.ParamTypes()
		if len(pts) != len(p.params.oids) {
			return nil
		}
		for i, t := range pts {
			if !valueFits(p.params.oids[i], t) {
				return nil
			}
		}
		p.pull, p.prep = pl, prep
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

// engineText is p's statement with its placeholders as the engine takes
// them: $n, without casts.
func engineText(p *prepared) string {
	return substitute(p.stmt, p.params, func(n int) string { return "$" + strconv.Itoa(n) })
}

// describeParams describes p, a statement with parameters, with the
// engine's Prepare when it takes it (a pull query over a table): its
// columns, and the types of the parameters pgwire could not type itself,
// as the engine inferred them. Otherwise p stays undescribed and is
// described with stand-in values (placeholderText).
func (c *conn) describeParams(p *prepared) {
	pr, ok := c.srv.exec.(engine.Preparer)
	if !ok {
		return
	}
	text := engineText(p)
	if c.intercept(text) != nil {
		return
	}
	prep, err := pr.Prepare(c.ctx, c.sess, text)
	if err != nil || prep.Pull() == nil || len(prep.ParamTypes()) != len(p.params.oids) {
		return
	}
	for i, t := range prep.ParamTypes() {
		if p.params.oids[i] == 0 && t.Kind != types.String {
			p.params.oids[i] = typeOID(t)
		}
	}
	p.eprep, p.cols, p.described = prep, slices.Clone(prep.Columns()), true
}

// valueFits reports whether a parameter pgwire typed oid is one the
// engine typed t, of a type pullValues converts.
func valueFits(oid uint32, t types.Type) bool {
	switch t.Kind {
	case types.Int, types.Bigint:
		return oid == oidInt2 || oid == oidInt4 || oid == oidInt8
	case types.Double:
		return oid == oidFloat4 || oid == oidFloat8
	case types.Boolean:
		return oid == oidBool
	case types.String:
		return oid == 0 || oid == oidText || oid == oidVarchar || oid == oidUnknown
	}
	return false
}

// pullValues converts the values Bind gave into datums of the engine's
// parameter types (valueFits held for each), appending to dst; false
// when one does not convert (the text path then runs and reports it).
func pullValues(pts []types.Type, oids []uint32, formats []int16, values [][]byte, dst []types.Datum) ([]types.Datum, bool) {
	if len(values) != len(pts) || len(formats) > 1 && len(formats) != len(values) {
		return dst, false
	}
	for i, v := range values {
		if v == nil {
			dst = append(dst, types.NullDatum)
			continue
		}
		f := formatText
		switch len(formats) {
		case 0:
		case 1:
			f = formats[0]
		default:
			f = formats[i]
		}
		switch f {
		case formatText:
		case formatBinary:
			t, err := decodeBinary(v, oids[i])
			if err != nil {
				return dst, false
			}
			v = []byte(t)
		default:
			return dst, false
		}
		text := string(bytes.TrimSpace(v))
		switch t := pts[i]; t.Kind {
		case types.Int, types.Bigint:
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil || t.Kind == types.Int && (n < math.MinInt32 || n > math.MaxInt32) {
				return dst, false
			}
			dst = append(dst, types.IntDatum(n))
		case types.Double:
			x, err := strconv.ParseFloat(text, 64)
			if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
				return dst, false
			}
			dst = append(dst, types.DoubleDatum(x))
		case types.Boolean:
			switch strings.ToLower(text) {
			case "t", "true", "1", "yes", "y", "on":
				dst = append(dst, types.BoolDatum(true))
			case "f", "false", "0", "no", "n", "off":
				dst = append(dst, types.BoolDatum(false))
			default:
				return dst, false
			}
		case types.String:
			if bytes.IndexByte(v, 0) >= 0 || !utf8.Valid(v) {
				return dst, false
			}
			dst = append(dst, types.Datum{B: bytes.Clone(v)})
		default:
			return dst, false
		}
	}
	return dst, true
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
		switch p := pt.stmt; {
		case p.pullKey:
			res, err = pt.pull.RunKey(ctx, pt.key, rw)
		case p.prep != nil:
			var b engine.Bound
			if b, err = p.prep.Bind(pt.vals); err == nil {
				res, err = b.Run(ctx, rw)
			}
		default:
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
		p.pull, p.pullTried, p.pullKey, p.prep, p.eprep = nil, false, false, nil, nil
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

// runInsert executes a portal bound to the engine's prepared INSERT …
// VALUES with its values as datums.
func (c *conn) runInsert(pt *portal) {
	if err := c.checkTxState(nil); err != nil {
		c.extendedError(err, "", -1)
		return
	}
	err := c.run(func(ctx context.Context) error {
		b, err := pt.stmt.prep.Bind(pt.vals)
		if err != nil {
			return err
		}
		res, err := b.Run(ctx, &c.rw)
		pt.tag = res.Tag
		return err
	})
	c.srv.cfg.metrics.CountStatement("pgwire", err == nil)
	if err != nil {
		c.extendedError(err, pt.stmt.query, pt.stmt.off)
		return
	}
	pt.done = true
	c.w.commandComplete(pt.tag)
	c.afterStatement()
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
