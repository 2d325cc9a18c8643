package expr

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"unicode/utf8"
)

// A pattern is a compiled regular expression (Go's RE2 syntax, leftmost-
// first as regexp.Compile) with a cheaper first-match search for
// patterns whose every match contains a literal.
//
// Go's unanchored search tries every start position of the input; a
// pattern without a literal prefix, such as Nexmark q21's
// '(&|^)channel_id=([^&]*)', runs its backtracker from each of them.
// When every match contains lit, an input without lit has no match
// (bytes.Index, no regexp run at all). When moreover the part of the
// pattern before lit matches at most before bytes, a match starts in the
// before bytes ahead of an occurrence of lit: only those positions are
// tried, each with an anchored copy of the pattern that sees the
// character before the start (at and from, below), so \A, ^, \b and (?m)^
// read the same context as in the whole input. The first position that
// matches is the leftmost match and its groups are those the whole
// search finds: the same result, in fewer steps.
type pattern struct {
	re  *regexp.Regexp
	src string
	// uses counts searches before the analysis below (at the second
	// search): a pattern read from a column, compiled for one record,
	// pays nothing for it.
	uses     int
	analyzed bool
	// lit is a literal every match contains; nil when none is known.
	lit []byte
	// before is the most bytes a match has ahead of lit, -1 when
	// unbounded or unknown (no window search then).
	before int
	// at is ^(R): the pattern anchored at the input's start, its groups
	// one later (group 1 is the whole match). from is ^(?s:.)(R): the
	// pattern anchored after one character, the one before the start.
	at, from *regexp.Regexp
}

// The window search's bounds, past which it costs more than it saves:
// maxTries anchored matches per search (then the whole search: many
// occurrences of a short literal), a part before the literal of at most
// maxBefore bytes, inputs of at most maxWindowInput bytes (each anchored
// match of the backtracker clears a bitmap as long as the rest of the
// input).
const (
	maxTries       = 8
	maxBefore      = 8
	maxWindowInput = 4096
)

func compilePattern(s string) (*pattern, error) {
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, err
	}
	return &pattern{re: re, src: s, before: -1}, nil
}

// ready reports whether the analysis is done, doing it at the second
// search.
func (p *pattern) ready() bool {
	if p.analyzed {
		return true
	}
	if p.uses++; p.uses < 2 {
		return false
	}
	p.analyze()
	return true
}

// analyze finds the literal and the window search's bound and patterns.
func (p *pattern) analyze() {
	p.analyzed = true
	t, err := syntax.Parse(p.src, syntax.Perl)
	if err != nil {
		return
	}
	var lits []requiredLit
	lits = requiredLits(t.Simplify(), 0, lits)
	var best, window *requiredLit
	for i := range lits {
		l := &lits[i]
		if best == nil || len(l.lit) > len(best.lit) {
			best = l
		}
		if l.before >= 0 && l.before <= maxBefore && (window == nil || len(l.lit) > len(window.lit)) {
			window = l
		}
	}
	if best != nil {
		p.lit = best.lit
	}
	if window == nil {
		return
	}
	// R in a group of its own: its text reads the same there as at top
	// level (flags set in it end with the group as they end with the
	// pattern); a pattern that does not compile so (an unterminated \Q)
	// keeps the whole search.
	at, err1 := regexp.Compile(`^(` + p.src + `)`)
	from, err2 := regexp.Compile(`^(?s:.)(` + p.src + `)`)
	if err1 != nil || err2 != nil || at.NumSubexp() != p.re.NumSubexp()+1 || from.NumSubexp() != p.re.NumSubexp()+1 {
		return
	}
	p.lit, p.before, p.at, p.from = window.lit, window.before, at, from
}

// requiredLit is a literal every match contains, with the most bytes a
// match can have before it (-1: unbounded).
type requiredLit struct {
	lit    []byte
	before int
}

// requiredLits appends the literals every match of t contains, t's
// match starting at most before bytes (-1: unbounded) after the start of
// the whole match.
func requiredLits(t *syntax.Regexp, before int, out []requiredLit) []requiredLit {
	switch t.Op {
	case syntax.OpLiteral:
		if lit, ok := literalBytes(t); ok {
			out = append(out, requiredLit{lit: lit, before: before})
		}
	case syntax.OpCapture, syntax.OpPlus:
		// a Plus's first repetition starts where the Plus does.
		out = requiredLits(t.Sub[0], before, out)
	case syntax.OpRepeat:
		if t.Min >= 1 {
			out = requiredLits(t.Sub[0], before, out)
		}
	case syntax.OpConcat:
		for _, sub := range t.Sub {
			out = requiredLits(sub, before, out)
			before = addWidth(before, maxWidth(sub))
		}
	}
	return out
}

// literalBytes is the UTF-8 of a case-sensitive literal: the bytes any
// match of it is. A literal U+FFFD also matches an invalid byte, and
// case folding other spellings: neither is one.
func literalBytes(t *syntax.Regexp) ([]byte, bool) {
	if t.Flags&syntax.FoldCase != 0 || len(t.Rune) == 0 {
		return nil, false
	}
	var b []byte
	for _, r := range t.Rune {
		if r == utf8.RuneError || !utf8.ValidRune(r) {
			return nil, false
		}
		b = utf8.AppendRune(b, r)
	}
	return b, true
}

func addWidth(a, b int) int {
	if a < 0 || b < 0 {
		return -1
	}
	return a + b
}

// maxWidth is the most bytes of input a match of t spans, -1 when
// unbounded. An invalid byte matches as U+FFFD, one byte where the rune
// is three: the figure is an upper bound still.
func maxWidth(t *syntax.Regexp) int {
	switch t.Op {
	case syntax.OpNoMatch, syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0
	case syntax.OpLiteral:
		if t.Flags&syntax.FoldCase != 0 {
			return utf8.UTFMax * len(t.Rune)
		}
		n := 0
		for _, r := range t.Rune {
			n += runeWidth(r)
		}
		return n
	case syntax.OpCharClass:
		if len(t.Rune) == 0 {
			return 0
		}
		return runeWidth(t.Rune[len(t.Rune)-1])
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return utf8.UTFMax
	case syntax.OpCapture:
		return maxWidth(t.Sub[0])
	case syntax.OpQuest:
		return maxWidth(t.Sub[0])
	case syntax.OpRepeat:
		if t.Max < 0 {
			return -1
		}
		w := maxWidth(t.Sub[0])
		if w < 0 {
			return -1
		}
		return w * t.Max
	case syntax.OpConcat:
		n := 0
		for _, sub := range t.Sub {
			n = addWidth(n, maxWidth(sub))
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, sub := range t.Sub {
			w := maxWidth(sub)
			if w < 0 {
				return -1
			}
			n = max(n, w)
		}
		return n
	}
	return -1 // Star, Plus, anything else
}

// runeWidth is the bytes of r in UTF-8, at most 4 (for a rune out of
// range too: an upper bound is what is wanted).
func runeWidth(r rune) int {
	if n := utf8.RuneLen(r); n > 0 {
		return n
	}
	return utf8.UTFMax
}

// NumSubexp is the number of parenthesized groups.
func (p *pattern) NumSubexp() int { return p.re.NumSubexp() }

// matchPossible reports false when s has no match (it lacks the literal
// every match contains); true when it may have one.
func (p *pattern) matchPossible(s []byte) bool {
	return !p.ready() || p.lit == nil || bytes.Index(s, p.lit) >= 0
}

// FindSubmatchIndex is regexp's: the first match's and its groups'
// offsets, nil when nothing matches.
func (p *pattern) FindSubmatchIndex(s []byte) []int {
	if !p.ready() || p.lit == nil {
		return p.re.FindSubmatchIndex(s)
	}
	q := bytes.Index(s, p.lit)
	if q < 0 {
		return nil
	}
	if p.at == nil || len(s) > maxWindowInput {
		return p.re.FindSubmatchIndex(s)
	}
	tries := 0
	next := 0 // the first start not yet tried
	for q >= 0 {
		for start := max(next, q-p.before); start <= q; start++ {
			if !runeBoundary(s, start) {
				continue
			}
			if tries++; tries > maxTries {
				return p.re.FindSubmatchIndex(s)
			}
			if idx := p.matchAt(s, start); idx != nil {
				return idx
			}
		}
		next = q + 1
		r := bytes.Index(s[q+1:], p.lit)
		if r < 0 {
			break
		}
		q += 1 + r
	}
	return nil
}

// matchAt is the match that starts at start (with its groups), nil when
// none does: the anchored pattern over s from start, or from the
// character before it.
func (p *pattern) matchAt(s []byte, start int) []int {
	var idx []int
	off := start
	if start == 0 {
		idx = p.at.FindSubmatchIndex(s)
	} else {
		_, w := utf8.DecodeLastRune(s[:start])
		off = start - w
		idx = p.from.FindSubmatchIndex(s[off:])
	}
	if idx == nil {
		return nil
	}
	// drop the outer group 0 (anchored from off), keep (R) and its groups.
	idx = idx[2:]
	for i, v := range idx {
		if v >= 0 {
			idx[i] = v + off
		}
	}
	return idx
}

// runeBoundary reports whether Go's regexp, decoding s from its start
// (an invalid byte is one character), has a character starting at i.
func runeBoundary(s []byte, i int) bool {
	if i == 0 || i >= len(s) || utf8.RuneStart(s[i]) {
		return true
	}
	// s[i] continues a character if the nearest start before it, at most
	// three bytes back, decodes to a character that covers i.
	for j := i - 1; j >= 0 && j >= i-(utf8.UTFMax-1); j-- {
		if utf8.RuneStart(s[j]) {
			_, w := utf8.DecodeRune(s[j:])
			return j+w <= i
		}
	}
	return true
}
