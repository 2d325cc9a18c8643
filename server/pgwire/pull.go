package pgwire

// This file hands prepared statements to the engine: a pull query over a
// table is planned once per prepared statement (engine.Pull) instead of
// at each Execute, and a statement with parameters is the engine's
// prepared statement (engine.Prepare: its placeholders are expression
// nodes, never text), run with Bind's values as datums.
//
// A statement without parameters qualifies for a plan when the engine can
// plan it as a pull query over a materialized table and pgwire does not
// answer it itself. A statement with parameters is prepared by the engine
// at its first Describe or Bind; a pull query with one parameter, used
// once, that the engine says is the key in WHERE key = $1
// (Pull.KeyParam), looks the key up directly (RunKey) when it comes as
// valid text. A plan whose table was dropped or replaced since is made
// again (a statement without parameters runs its text instead).

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
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// pullPlan returns p's engine plan, making it the first time; nil when p
// does not qualify. A statement with parameters goes to the engine's
// Prepare instead (prepareParams), and has a plan when it is a pull
// query over a table.
func (c *conn) pullPlan(p *prepared) *engine.Pull {
	if p.pullTried {
		return p.pull
	}
	if len(p.params.oids) > 0 {
		c.prepareParams(p)
		return p.pull
	}
	if p.binds++; p.name == "" && p.binds < 2 {
		// A one-shot unnamed statement would pay for planning twice.
		return nil
	}
	p.pullTried = true
	pp, ok := c.srv.exec.(engine.PullPreparer)
	if !ok || p.stmt == "" || c.intercept(p.stmt) != nil {
		return nil
	}
	pl, err := pp.PreparePull(c.sess, p.stmt)
	if err != nil {
		return nil
	}
	p.pull = pl
	return p.pull
}

// prepareParams hands p, a statement with parameters, to the engine's
// Prepare, once: its values then go to the engine as datums at each
// Bind (p.prep). A statement pgwire answers itself, or one for an
// executor without Prepare, has its values substituted into its text
// instead (p.local); one the engine refuses keeps the error for Describe
// and Bind to report (p.prepErr). Parameters pgwire could not type take
// the engine's types.
func (c *conn) prepareParams(p *prepared) {
	p.pullTried = true
	pr, ok := c.srv.exec.(engine.Preparer)
	text := engineText(p)
	if !ok || c.intercept(text) != nil {
		p.local = true
		return
	}
	prep, err := pr.Prepare(c.ctx, c.sess, text)
	if err != nil {
		p.prepErr = err
		return
	}
	if len(prep.ParamTypes()) > len(p.params.oids) {
		p.prepErr = sql.Errorf(codeProtocolViolation, "statement has %d parameters, but Parse declared %d", len(prep.ParamTypes()), len(p.params.oids))
		return
	}
	for i, t := range prep.ParamTypes() {
		if p.params.oids[i] == 0 && t.Kind != types.String {
			p.params.oids[i] = typeOID(t)
		}
	}
	p.prep = prep
	pl := prep.Pull()
	if pl == nil {
		return
	}
	p.pull = pl
	if len(p.params.oids) == 1 && len(p.params.slots) == 1 && pl.KeyParam() == 1 {
		switch p.params.oids[0] {
		case oidInt2, oidInt4, oidInt8, 0, oidText, oidVarchar, oidUnknown:
			if _, kt, _ := pl.PointKey(); keyFits(p.params.oids[0], kt) {
				p.pullKey = true
			}
		}
	}
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
// engine's Prepare: its columns, and the types of the parameters pgwire
// could not type itself. A statement pgwire answers itself stays
// undescribed (it is described with stand-in values, placeholderText).
func (c *conn) describeParams(p *prepared) error {
	if !p.pullTried {
		c.prepareParams(p)
	}
	if p.prepErr != nil {
		return p.prepErr
	}
	if p.prep != nil {
		p.cols, p.described = slices.Clone(p.prep.Columns()), true
	}
	return nil
}

// bindValues converts the values Bind gave into datums of the engine's
// parameter types pts, appending to dst: decoded by the format and type
// (oids) the client sent them in, then read as the engine's type, as
// Postgres reads a parameter's text. Values beyond pts (declared by
// Parse but not used) are checked for their format only.
func bindValues(pts []types.Type, oids []uint32, formats []int16, values [][]byte, dst []types.Datum) ([]types.Datum, error) {
	if len(values) != len(oids) {
		return dst, sql.Errorf(codeProtocolViolation, "bind message supplies %d parameters, but prepared statement requires %d", len(values), len(oids))
	}
	if len(formats) > 1 && len(formats) != len(values) {
		return dst, sql.Errorf(codeProtocolViolation, "bind message has %d parameter formats but %d parameters", len(formats), len(values))
	}
	for i, v := range values {
		f := formatText
		switch len(formats) {
		case 0:
		case 1:
			f = formats[0]
		default:
			f = formats[i]
		}
		if f != formatText && f != formatBinary {
			return dst, sql.Errorf(codeProtocolViolation, "unsupported format code: %d", f)
		}
		if i >= len(pts) {
			continue
		}
		d, err := paramDatum(v, oids[i], f, pts[i])
		if err != nil {
			var se *sql.Error
			if errors.As(err, &se) {
				return dst, err
			}
			return dst, sql.Errorf(codeInvalidBinary, "parameter $%d: %v", i+1, err)
		}
		dst = append(dst, d)
	}
	return dst, nil
}

// paramDatum reads one parameter value, sent in format as type oid, as
// a datum of t.
func paramDatum(v []byte, oid uint32, format int16, t types.Type) (types.Datum, error) {
	if v == nil {
		return types.NullDatum, nil
	}
	if format == formatBinary {
		if t.Kind == types.Bytes && (oid == oidBytea || oid == 0) {
			return types.Datum{B: bytes.Clone(v)}, nil
		}
		text, err := decodeBinary(v, oid)
		if err != nil {
			return types.Datum{}, err
		}
		v = []byte(text)
	}
	if t.Kind == types.String || t.Kind == types.Bytes || oid == oidText || oid == oidVarchar || oid == 0 || oid == oidUnknown {
		// Text as it came: it must be valid UTF-8 without NULs.
		if _, err := quoteString(string(v)); err != nil && t.Kind != types.Bytes {
			return types.Datum{}, err
		}
	}
	text := string(bytes.TrimSpace(v))
	switch t.Kind {
	case types.Int, types.Bigint:
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return types.Datum{}, errorf("invalid input syntax for type %s: %q", strings.ToLower(t.String()), string(v))
		}
		if t.Kind == types.Int && (n < math.MinInt32 || n > math.MaxInt32) {
			return types.Datum{}, &sql.Error{Code: "22003", Msg: "value \"" + text + "\" is out of range for type integer", Offset: -1}
		}
		return types.IntDatum(n), nil
	case types.Double:
		x, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return types.Datum{}, errorf("invalid or unsupported double precision value: %q", string(v))
		}
		return types.DoubleDatum(x), nil
	case types.Boolean:
		switch strings.ToLower(text) {
		case "t", "true", "1", "yes", "y", "on":
			return types.BoolDatum(true), nil
		case "f", "false", "0", "no", "n", "off":
			return types.BoolDatum(false), nil
		}
		return types.Datum{}, errorf("invalid input syntax for type boolean: %q", string(v))
	case types.String:
		return types.Datum{B: bytes.Clone(v)}, nil
	case types.Decimal:
		d, _, err := types.ParseDecimalDatum([]byte(text), t, nil)
		if err != nil {
			return types.Datum{}, errorf("invalid input syntax for type %s: %v", t, err)
		}
		return d, nil
	case types.Bytes:
		if format == formatBinary {
			return types.Datum{B: bytes.Clone(v)}, nil
		}
		b, err := parseByteaText(string(v))
		if err != nil {
			return types.Datum{}, err
		}
		return types.Datum{B: b}, nil
	}
	// Other types (DATE, TIME, TIMESTAMP, …) as the engine casts text.
	d, ok, err := engine.CastText(text, t)
	if !ok {
		return types.Datum{}, &sql.Error{Code: codeFeatureNotSupp, Msg: "parameters of type " + t.String() + " are not supported", Offset: -1}
	}
	if err != nil || d.Null {
		return types.Datum{}, errorf("invalid input syntax for type %s: %q", strings.ToLower(t.String()), string(v))
	}
	return d, nil
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
		case pt.byKey:
			res, err = pt.pull.RunKey(ctx, pt.key, rw)
		case pt.eng:
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
		p.pull, p.pullTried, p.pullKey, p.prep, p.prepErr = nil, false, false, nil, nil
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

// runPrepared executes a portal bound to the engine's prepared statement
// with its values as datums: a pull query over a table (runPull; made
// again, and run with the same values, when its table changed since),
// an INSERT … VALUES, or another SELECT.
func (c *conn) runPrepared(pt *portal) {
	p := pt.stmt
	if pt.pull != nil {
		old := p.prep
		if c.runPull(pt) {
			return
		}
		// Stale: prepare it again.
		if pt.byKey {
			pt.vals, pt.byKey = append(pt.vals[:0], pt.key), false
		}
		c.pullPlan(p)
		if p.prep == nil {
			err := p.prepErr
			if err == nil {
				err = sql.Errorf(codeFeatureNotSupp, "cached plan must not change result type")
			}
			c.extendedError(err, p.query, p.off)
			return
		}
		if !slices.EqualFunc(old.ParamTypes(), p.prep.ParamTypes(), types.Type.Equal) {
			c.extendedError(sql.Errorf(codeFeatureNotSupp, "cached plan must not change result type"), "", -1)
			return
		}
		pt.pull = p.pull
		if pt.pull != nil {
			if !c.runPull(pt) {
				c.extendedError(sql.Errorf(codeFeatureNotSupp, "cached plan must not change result type"), "", -1)
			}
			return
		}
	}
	if err := c.checkTxState(nil); err != nil {
		c.extendedError(err, "", -1)
		return
	}
	rw := &c.rw
	rw.reset(false, pt.codes, pt.cols, pt.described)
	err := c.run(func(ctx context.Context) error {
		b, err := p.prep.Bind(pt.vals)
		if err != nil {
			return err
		}
		res, err := b.Run(ctx, rw)
		if rw.err != nil {
			return rw.err
		}
		pt.tag = rw.tag(res)
		return err
	})
	c.srv.cfg.metrics.CountStatement("pgwire", err == nil)
	if err != nil {
		c.extendedError(err, p.query, p.off)
		return
	}
	pt.done, pt.rows = true, rw.started
	c.w.commandComplete(pt.tag)
	c.afterStatement()
}

// keyParamValid reports whether Bind's values are one text-format value
// for a point plan's key parameter, valid for its type: then the portal
// keeps the key alone (pullKey) and runs RunKey.
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
// substituted: for pgwire's own answers and executors without Prepare;
// the engine's statements take their values as datums.
func (pt *portal) boundText() string { return pt.text }
