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
	toks := lex(stmt)
	if len(toks) < 4 || !toks[0].is("SELECT") {
		return false, nil
	}
	lit := -1
	for i, t := range toks {
		switch t.kind {
		case tokNumber, tokString:
			if lit >= 0 {
				return false, nil // more than one literal
			}
			lit = i
		case tokParam:
			return false, nil
		case tokIdent:
			if t.is("EMIT") {
				return false, nil
			}
		}
	}
	if lit < 0 {
		return false, nil
	}
	t := toks[lit]
	var key types.Datum
	oid := uint32(oidText)
	if t.kind == tokNumber {
		n, err := strconv.ParseInt(t.val, 10, 64)
		if err != nil {
			return false, nil // not an integer key
		}
		key, oid = types.IntDatum(n), oidInt8
	} else {
		key = types.StringDatum(t.val)
	}
	// The template: the literal's kind is part of it, a number and a
	// string in one place are two templates.
	template := stmt[:t.from] + "$1" + stmt[t.to:]
	cacheKey := template
	if oid == oidText {
		cacheKey += "\x00text"
	}
	sp, ok := c.simplePlans[cacheKey]
	if !ok {
		sp = c.planSimple(template, oid)
		if c.simplePlans == nil || len(c.simplePlans) >= maxSimplePlans {
			c.simplePlans = map[string]simplePlan{}
		}
		c.simplePlans[cacheKey] = sp
	}
	if sp.p == nil {
		return false, nil
	}
	pl := sp.p.pull
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
		delete(c.simplePlans, cacheKey)
		return false, nil
	}
	if err != nil {
		return true, err
	}
	return true, c.w.commandComplete(tag)
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
