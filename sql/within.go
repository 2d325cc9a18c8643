package sql

import "strconv"

// withinClause is a stream–stream join's WITHIN clause: how far before
// and after a left row's time a right row may be to join it, and the
// grace period after which a window closes (-1 when not given: ksqlDB's
// legacy behaviour, see planner.JoinWindow). Durations in milliseconds.
type withinClause struct {
	before, after, grace int64
	pos                  int // offset of WITHIN, for errors
}

// parseWithin reads WITHIN d | WITHIN (before, after), then an optional
// GRACE PERIOD d, starting at toks[i] (WITHIN), and returns the clause
// and the index after it.
func parseWithin(text string, toks []token, i int) (*withinClause, int, error) {
	p := &parser{text: text, toks: toks, i: i + 1}
	w := &withinClause{pos: toks[i].pos, grace: -1}
	var err error
	if p.acceptPunct("(") {
		if w.before, err = joinDuration(p); err != nil {
			return nil, 0, err
		}
		if err := p.expectPunct(","); err != nil {
			return nil, 0, err
		}
		if w.after, err = joinDuration(p); err != nil {
			return nil, 0, err
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, 0, err
		}
	} else {
		if w.before, err = joinDuration(p); err != nil {
			return nil, 0, err
		}
		w.after = w.before
	}
	if p.peek().is("GRACE") {
		p.i++
		if err := p.expect("PERIOD"); err != nil {
			return nil, 0, err
		}
		if w.grace, err = joinDuration(p); err != nil {
			return nil, 0, err
		}
	}
	return w, p.i, nil
}

// joinDuration reads a number and a time unit.
func joinDuration(p *parser) (int64, error) {
	t := p.peek()
	if t.kind != tNumber {
		return 0, p.unexpected(t, "a duration (a number and a unit such as SECONDS)")
	}
	n, err := strconv.ParseInt(t.text, 10, 64)
	if err != nil || n < 0 {
		return 0, p.errorf(t, "syntax error: a join window's duration is a whole number, not %s", t.text)
	}
	p.i++
	u := p.peek()
	ms, ok := windowUnits[u.text]
	if u.kind != tIdent || !ok {
		return 0, p.unexpected(u, "a time unit (MILLISECONDS, SECONDS, MINUTES, HOURS or DAYS)")
	}
	p.i++
	if n > (1<<62)/ms {
		return 0, p.errorf(t, "join window duration %d %s is too large", n, u.text)
	}
	return n * ms, nil
}
