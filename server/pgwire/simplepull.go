package pgwire

// This file gives simple-protocol pull queries the plans prepared ones
// get (pull.go). A SELECT with exactly one literal, an integer or a
// string, is turned into a template with $1 in the literal's place; the
// template's plan is made once per connection (pullPlan checks, as for a
// prepared statement, that $1 is the key the plan looks up) and kept in a
// small cache, and each statement of that shape then runs as one key
// lookup, without parsing or planning. Any other statement, a template
// that does not qualify, or a plan gone stale runs as before.

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/types"
)

// maxSimplePlans bounds a connection's cache of simple-protocol plans.
const maxSimplePlans = 64

// simplePlan is a cached template; p is nil when it does not qualify.
type simplePlan struct {
	p *prepared
}

// trySimplePull runs stmt from a cached plan when it is a point lookup
// whose key is its only literal. handled is false when it did not run
// (nothing was sent); the caller then runs the text.
func (c *conn) trySimplePull(stmt string) (handled bool, err error) {
	sp, key, ok := c.simplePull(stmt, true)
	if !ok {
		return false, nil
	}
	return c.runSimplePull(stmt, sp, key)
}

// runSimplePull runs the simple-protocol plan p with key.
func (c *conn) runSimplePull(stmt string, p *prepared, key types.Datum) (handled bool, err error) {
	pl := p.pull
	rw := &c.rw
	rw.reset(true, nil, nil, false)
	rw.pullQuery()
	var tag string
	err = c.runPullQuery(func(ctx context.Context) error {
		res, err := pl.RunKey(ctx, key, rw)
		if rw.err != nil {
			return rw.err
		}
		tag = rw.tag(res)
		return err
	})
	if errors.Is(err, engine.ErrStale) && !rw.started {
		if c.simpleTemplate(stmt) {
			delete(c.simplePlans, string(c.simpleKey))
		}
		return false, nil
	}
	if err != nil {
		return true, err
	}
	return true, c.w.commandComplete(tag)
}

// simplePull returns the plan of stmt's template and its key when stmt
// is a SELECT whose only literal, an integer or a string, is the key the
// plan looks up. Without plan, it only looks in the cache; with it, a
// template not seen yet is planned and cached (a template that does not
// qualify is cached too, as not qualifying).
func (c *conn) simplePull(stmt string, plan bool) (p *prepared, key types.Datum, ok bool) {
	if !c.simpleTemplate(stmt) {
		return nil, key, false
	}
	sp, cached := c.simplePlans[string(c.simpleKey)]
	if !cached {
		if !plan {
			return nil, key, false
		}
		cacheKey, lit, oid := string(c.simpleKey), c.simpleLit, c.simpleOID
		sp = c.planSimple(cacheKey[:len(cacheKey)-len(textSuffix(oid))], oid)
		if c.simplePlans == nil || len(c.simplePlans) >= maxSimplePlans {
			c.simplePlans = map[string]simplePlan{}
		}
		c.simplePlans[cacheKey] = sp
		if sp.p == nil {
			return nil, key, false
		}
		return sp.p, lit, true
	}
	if sp.p == nil {
		return nil, key, false
	}
	return sp.p, c.simpleLit, true
}

// cachedSimplePull reports whether a Query message's text is a single
// statement that simplePull has a plan for.
func (c *conn) cachedSimplePull(text string) bool {
	text = strings.TrimSpace(text)
	text = strings.TrimSpace(strings.TrimSuffix(text, ";"))
	_, _, ok := c.simplePull(text, false)
	return ok
}

// textSuffix marks the cache key of a template whose literal is a string.
func textSuffix(oid uint32) string {
	if oid == oidText {
		return "\x00text"
	}
	return ""
}

// simpleTemplate finds the template of stmt, a SELECT whose only literal
// is an integer or a string: its plan cache key goes to c.simpleKey, the
// literal to c.simpleLit and its type to c.simpleOID. It reports false
// for any other statement, or one of several. The last statement's
// answer is kept: a simple query is looked up more than once (by the
// serving loop's check, execSimple and trySimplePull), and lexed once.
func (c *conn) simpleTemplate(stmt string) bool {
	if stmt == c.simpleText {
		return c.simpleOK
	}
	c.simpleText = stmt
	c.simpleOK = c.findTemplate(stmt)
	return c.simpleOK
}

func (c *conn) findTemplate(stmt string) bool {
	toks := lexInto(c.simpleToks, stmt)
	c.simpleToks = toks
	if len(toks) < 4 || !toks[0].is("SELECT") {
		return false
	}
	lit := -1
	for i, t := range toks {
		switch t.kind {
		case tokNumber, tokString:
			if lit >= 0 {
				return false // more than one literal
			}
			lit = i
		case tokParam:
			return false
		case tokOp:
			if t.val == ";" {
				return false // several statements
			}
		case tokIdent:
			if t.is("EMIT") {
				return false
			}
		}
	}
	if lit < 0 {
		return false
	}
	t := toks[lit]
	oid := uint32(oidText)
	if t.kind == tokNumber {
		n, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil {
			return false // not an integer key
		}
		c.simpleLit, oid = types.IntDatum(n), oidInt8
	} else {
		c.simpleLit = types.StringDatum(t.val)
	}
	// The template: the literal's kind is part of it, a number and a
	// string in one place are two templates.
	c.simpleOID = oid
	k := append(c.simpleKey[:0], stmt[:t.from]...)
	k = append(k, "$1"...)
	k = append(k, stmt[t.to:]...)
	c.simpleKey = append(k, textSuffix(oid)...)
	return true
}

// planSimple plans a simple-protocol template as a prepared statement with
// one parameter of type oid; the result's p is nil when the template is
// not a point lookup by $1.
func (c *conn) planSimple(template string, oid uint32) simplePlan {
	pi, err := c.analyzeParams(template, []uint32{oid})
	if err != nil {
		return simplePlan{}
	}
	p := &prepared{name: "\x00simple", query: template, stmt: template, params: pi}
	if c.pullPlan(p) == nil || !p.pullKey {
		return simplePlan{}
	}
	return simplePlan{p: p}
}
