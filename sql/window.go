package sql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/types"
)

// windowClause is a parsed WINDOW clause, before its values are checked
// (planner.NewWindowSpec). Durations are milliseconds, -1 when absent.
type windowClause struct {
	typ              types.WindowType
	size, advance    int64
	retention, grace int64
	zone             string
	pos              int // offset of WINDOW, for errors
}

// windowUnits are the duration units ksqlDB's WINDOW clauses accept, in
// milliseconds.
var windowUnits = map[string]int64{
	"MILLISECOND": 1, "MILLISECONDS": 1,
	"SECOND": 1000, "SECONDS": 1000,
	"MINUTE": 60_000, "MINUTES": 60_000,
	"HOUR": 3_600_000, "HOURS": 3_600_000,
	"DAY": 86_400_000, "DAYS": 86_400_000,
}

// parseWindow reads WINDOW [name] TUMBLING|HOPPING|SESSION ( … ) starting
// at toks[i] (WINDOW) and returns the clause and the index after it (the
// name, which ksqlDB's grammar allows, is read and ignored, as there):
//
//	TUMBLING (SIZE d [, RETENTION d] [, GRACE PERIOD d] [, TIME ZONE 'tz'])
//	HOPPING (SIZE d, ADVANCE BY d [, RETENTION d] [, GRACE PERIOD d] [, TIME ZONE 'tz'])
//	SESSION (d [, RETENTION d] [, GRACE PERIOD d])
//
// where d is a whole number and a unit (MILLISECONDS … DAYS, singular or
// plural).
// isWindowKind reports whether t is TUMBLING, HOPPING or SESSION.
func isWindowKind(t token) bool { return t.is("TUMBLING") || t.is("HOPPING") || t.is("SESSION") }

func parseWindow(text string, toks []token, i int) (*windowClause, int, error) {
	p := &parser{text: text, toks: toks, i: i + 1}
	w := &windowClause{pos: toks[i].pos, size: -1, advance: -1, retention: -1, grace: -1}
	if !isWindowKind(p.peek()) {
		p.i++ // the window's name
	}
	kind := p.next()
	w.typ = types.WindowType(kind.text)
	if err := p.expectPunct("("); err != nil {
		return nil, 0, err
	}
	duration := func() (int64, error) {
		t := p.peek()
		if t.kind != tNumber {
			return 0, p.unexpected(t, "a duration (a number and a unit such as SECONDS)")
		}
		n, err := strconv.ParseInt(t.text, 10, 64)
		if err != nil || n < 0 {
			return 0, p.errorf(t, "syntax error: a window duration is a whole number, not %s", t.text)
		}
		p.i++
		u := p.peek()
		ms, ok := windowUnits[u.text]
		if u.kind != tIdent || !ok {
			return 0, p.unexpected(u, "a time unit (MILLISECONDS, SECONDS, MINUTES, HOURS or DAYS)")
		}
		p.i++
		if n > (1<<63-1)/ms {
			return 0, p.errorf(t, "window duration %d %s is too large", n, u.text)
		}
		return n * ms, nil
	}
	seen := map[string]bool{}
	once := func(t token, what string) error {
		if seen[what] {
			return p.errorf(t, "syntax error: %s is given twice", what)
		}
		seen[what] = true
		return nil
	}
	first := true
	for {
		t := p.peek()
		var err error
		switch {
		case first && w.typ == types.Session && t.kind == tNumber:
			w.size, err = duration()
		case t.is("SIZE") && w.typ != types.Session:
			if err = once(t, "SIZE"); err == nil {
				p.i++
				w.size, err = duration()
			}
		case t.is("ADVANCE") && w.typ == types.Hopping:
			if err = once(t, "ADVANCE BY"); err == nil {
				p.i++
				if err = p.expect("BY"); err == nil {
					w.advance, err = duration()
				}
			}
		case t.is("RETENTION"):
			if err = once(t, "RETENTION"); err == nil {
				p.i++
				w.retention, err = duration()
			}
		case t.is("GRACE"):
			if err = once(t, "GRACE PERIOD"); err == nil {
				p.i++
				if err = p.expect("PERIOD"); err == nil {
					w.grace, err = duration()
				}
			}
		case t.is("TIME") && p.peekAt(1).is("ZONE") && w.typ != types.Session:
			if err = once(t, "TIME ZONE"); err == nil {
				p.i += 2
				z := p.peek()
				if z.kind != tString {
					return nil, 0, p.unexpected(z, "a time zone name in single quotes, such as 'Europe/Berlin'")
				}
				w.zone = z.text
				p.i++
			}
		default:
			want := "SIZE"
			switch {
			case first && w.typ == types.Session:
				want = "the session gap (a number and a unit)"
			case !first && w.typ == types.Session:
				want = "RETENTION or GRACE PERIOD"
			case !first && w.typ == types.Hopping:
				want = "ADVANCE BY, RETENTION, GRACE PERIOD or TIME ZONE"
			case !first:
				want = "RETENTION, GRACE PERIOD or TIME ZONE"
			}
			return nil, 0, p.unexpected(t, want)
		}
		if err != nil {
			return nil, 0, err
		}
		first = false
		if p.acceptPunct(",") {
			continue
		}
		if err := p.expectPunct(")"); err != nil {
			return nil, 0, err
		}
		break
	}
	if w.size < 0 {
		what := "SIZE"
		if w.typ == types.Session {
			what = "a session gap"
		}
		return nil, 0, errorAt(text, w.pos, CodeSyntaxError, "syntax error: WINDOW %s needs %s", w.typ, what)
	}
	if w.typ == types.Hopping && w.advance < 0 {
		return nil, 0, errorAt(text, w.pos, CodeSyntaxError, "syntax error: WINDOW HOPPING needs ADVANCE BY")
	}
	return w, p.i, nil
}

// parseDuration reads a duration property such as '1 MINUTE' or
// '500 MILLISECONDS' into milliseconds.
func parseDuration(v string) (int64, error) {
	f := strings.Fields(strings.ToUpper(v))
	if len(f) != 2 {
		return 0, fmt.Errorf("want a number and a unit")
	}
	n, err := strconv.ParseInt(f[0], 10, 64)
	ms, ok := windowUnits[f[1]]
	if err == nil && !ok {
		return 0, fmt.Errorf("Unknown time unit: '%s'", f[1])
	}
	if err != nil || !ok || n < 0 || n > (1<<63-1)/ms {
		return 0, fmt.Errorf("want a number and a unit")
	}
	return n * ms, nil
}
