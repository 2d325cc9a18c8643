package expr

import (
	"bytes"
	"unicode/utf8"

	"github.com/sqlstreams/sqlstreams/types"
)

// LIKE matching. A pattern compiles into tokens: literal runs, _ (one
// character) and % (any run). Common shapes skip the general matcher:
// 'abc', 'abc%', '%abc', '%abc%'.

type likeKind uint8

const (
	likeGeneral likeKind = iota
	likeExact
	likePrefix
	likeSuffix
	likeContains
	likeAll // '%' alone
)

type likeTokKind uint8

const (
	tokLit likeTokKind = iota
	tokOne
	tokAny
)

type likeTok struct {
	kind likeTokKind
	lit  []byte
}

type likePattern struct {
	kind  likeKind
	lit   []byte
	toks  []likeTok
	buf   []byte
	spans []likeSpan
}

type likeSpan struct {
	kind       likeTokKind
	start, end int
}

// compileLike compiles pattern with escape character esc (-1 for none)
// into p (reused when not nil). The literal bytes live in p's buffer.
func compileLike(pattern []byte, esc rune, p *likePattern) (*likePattern, error) {
	if p == nil {
		p = &likePattern{}
	}
	p.toks = p.toks[:0]
	buf := p.buf[:0]
	spans := p.spans[:0]
	// First pass: unescape literals into buf, recording token boundaries.
	for i := 0; i < len(pattern); {
		r, n := utf8.DecodeRune(pattern[i:])
		switch {
		case r == esc:
			if i+n >= len(pattern) {
				return nil, typeErrorf("LIKE pattern %q ends with its escape character", pattern)
			}
			_, m := utf8.DecodeRune(pattern[i+n:])
			spans = appendLit(spans, len(buf))
			buf = append(buf, pattern[i+n:i+n+m]...)
			spans[len(spans)-1].end = len(buf)
			i += n + m
			continue
		case r == '%':
			if len(spans) == 0 || spans[len(spans)-1].kind != tokAny {
				spans = append(spans, likeSpan{kind: tokAny})
			}
		case r == '_':
			spans = append(spans, likeSpan{kind: tokOne})
		default:
			spans = appendLit(spans, len(buf))
			buf = append(buf, pattern[i:i+n]...)
			spans[len(spans)-1].end = len(buf)
		}
		i += n
	}
	p.buf, p.spans = buf, spans
	for _, s := range spans {
		t := likeTok{kind: s.kind}
		if s.kind == tokLit {
			t.lit = buf[s.start:s.end]
		}
		p.toks = append(p.toks, t)
	}
	p.kind = likeGeneral
	ts := p.toks
	switch {
	case len(ts) == 0:
		p.kind, p.lit = likeExact, buf[:0]
	case len(ts) == 1 && ts[0].kind == tokLit:
		p.kind, p.lit = likeExact, ts[0].lit
	case len(ts) == 1 && ts[0].kind == tokAny:
		p.kind = likeAll
	case len(ts) == 2 && ts[0].kind == tokLit && ts[1].kind == tokAny:
		p.kind, p.lit = likePrefix, ts[0].lit
	case len(ts) == 2 && ts[0].kind == tokAny && ts[1].kind == tokLit:
		p.kind, p.lit = likeSuffix, ts[1].lit
	case len(ts) == 3 && ts[0].kind == tokAny && ts[1].kind == tokLit && ts[2].kind == tokAny:
		p.kind, p.lit = likeContains, ts[1].lit
	}
	if p.kind == likeGeneral {
		p.lit = buf
	}
	return p, nil
}

// appendLit makes sure the last span is a literal, starting one at the
// buffer position at when needed.
func appendLit(spans []likeSpan, at int) []likeSpan {
	if len(spans) > 0 && spans[len(spans)-1].kind == tokLit {
		return spans
	}
	return append(spans, likeSpan{kind: tokLit, start: at, end: at})
}

func (p *likePattern) match(s []byte) bool {
	switch p.kind {
	case likeExact:
		return bytes.Equal(s, p.lit)
	case likePrefix:
		return bytes.HasPrefix(s, p.lit)
	case likeSuffix:
		return bytes.HasSuffix(s, p.lit)
	case likeContains:
		return bytes.Contains(s, p.lit)
	case likeAll:
		return true
	}
	return matchLikeToks(s, p.toks)
}

// matchLikeToks is the classic wildcard match with backtracking to the
// last %: O(len(s) × len(toks)) at worst, no allocation.
func matchLikeToks(s []byte, toks []likeTok) bool {
	i, t := 0, 0
	starT, starI := -1, 0
	for {
		if t < len(toks) {
			switch tk := toks[t]; tk.kind {
			case tokAny:
				starT, starI = t, i
				t++
				continue
			case tokOne:
				if i < len(s) {
					_, n := utf8.DecodeRune(s[i:])
					i += n
					t++
					continue
				}
			case tokLit:
				if bytes.HasPrefix(s[i:], tk.lit) {
					i += len(tk.lit)
					t++
					continue
				}
			}
		} else if i == len(s) {
			return true
		}
		if starT < 0 || starI >= len(s) {
			return false
		}
		_, n := utf8.DecodeRune(s[starI:])
		starI += n
		i, t = starI, starT+1
	}
}

func compileLikeNode(n *Like, sc *scope) (Evaluator, error) {
	x, err := compile(n.X, sc)
	if err != nil {
		return nil, err
	}
	esc := rune(-1)
	if l, ok := n.Escape.(*Literal); ok && !l.V.Null {
		esc, _ = utf8.DecodeRune(l.V.B)
	} else if n.Escape != nil {
		// NULL escape: LIKE … ESCAPE NULL is NULL
		return func(types.Row) (types.Datum, error) { return types.NullDatum, nil }, nil
	}
	not := n.Not
	if l, ok := n.Pattern.(*Literal); ok {
		if l.V.Null {
			return func(types.Row) (types.Datum, error) { return types.NullDatum, nil }, nil
		}
		p, err := compileLike(l.V.B, esc, nil)
		if err != nil {
			return nil, err
		}
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			if err != nil || d.Null {
				return types.NullDatum, err
			}
			return types.BoolDatum(p.match(d.B) != not), nil
		}, nil
	}
	pat, err := compile(n.Pattern, sc)
	if err != nil {
		return nil, err
	}
	p := &likePattern{}
	var last []byte
	valid := false
	return func(row types.Row) (types.Datum, error) {
		d, err := x(row)
		if err != nil || d.Null {
			return types.NullDatum, err
		}
		pd, err := pat(row)
		if err != nil || pd.Null {
			return types.NullDatum, err
		}
		if !valid || !bytes.Equal(last, pd.B) {
			if _, err := compileLike(pd.B, esc, p); err != nil {
				valid = false
				return types.NullDatum, err
			}
			last = append(last[:0], pd.B...)
			valid = true
		}
		return types.BoolDatum(p.match(d.B) != not), nil
	}, nil
}
