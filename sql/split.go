package sql

// This file is sqlstreams' one statement splitter. The REST and pgwire
// servers, the shell, headless query files and the conformance runner cut
// text into statements with Segments (or Split), and the engine's
// tokenizer (lexer.go) and pgwire's (server/pgwire/lex.go) find where
// quotes and comments end with Skip, so all of them agree on where a
// string ends. The web console's JavaScript splitter is tested against the
// same cases (sql/splittest/cases.json).
//
// The rules are those of the server's parser (ksqlDB's, and Postgres' with
// standard_conforming_strings on; TiDB runs with NO_BACKSLASH_ESCAPES):
//
//	'…'        a string; '' inside it is a quote; a backslash is an
//	           ordinary character, so 'a\' is the string a\
//	E'…'       a Postgres escape string (E or e starting a word): a
//	           backslash also escapes the next character. pgwire answers
//	           some statements itself and takes them there; the engine
//	           refuses them.
//	"…"  `…`   quoted identifiers; a doubled quote inside is the quote
//	-- …       a comment to the end of the line
//	/* … */    a comment to the first */: they do not nest (as in ksqlDB
//	           and TiDB; Postgres nests them)
//
// There is no dollar quoting ($$ … $$ is not a string), and # starts no
// comment (the engine's tokenizer refuses it: TiDB would read a comment).
// A statement ends at a semicolon outside all of these.

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Segment is one statement of a text, as Segments cuts it.
type Segment struct {
	// Text is the statement, trimmed of white space, without the
	// semicolon that ends it. Comments before it are part of it.
	Text string
	// Pos is the byte offset of Text in the text that was cut.
	Pos int
	// End is the byte offset just after the semicolon that ends the
	// statement, or the length of the text when none does.
	End int
	// Terminated reports whether a semicolon ends the statement. Only the
	// last segment of a text can lack one.
	Terminated bool
}

// Segments cuts text into statements at the semicolons outside strings,
// quoted identifiers and comments (see the rules above). Statements made
// only of white space and comments are left out; an unterminated quote or
// block comment makes a last, unterminated statement (an error for the
// parser, more input for the shell).
func Segments(text string) []Segment {
	var out []Segment
	start := 0
	for i := 0; i < len(text); {
		switch text[i] {
		case ';':
			out = appendSegment(out, text, start, i, i+1, true)
			i++
			start = i
			continue
		case '\'', '"', '`':
			i, _ = skipQuote(text, i, false)
			continue
		case 'E', 'e', '-', '/':
			// Most of these start nothing; look at the next byte before
			// calling Skip.
			if i+1 < len(text) && (text[i+1] == '\'' || text[i+1] == '-' || text[i+1] == '*') {
				if end, _ := Skip(text, i); end > i {
					i = end
					continue
				}
			}
		}
		i++
	}
	return appendSegment(out, text, start, len(text), len(text), false)
}

func appendSegment(out []Segment, text string, from, to, end int, terminated bool) []Segment {
	for from < to && asciiSpace(text[from]) {
		from++
	}
	for to > from && asciiSpace(text[to-1]) {
		to--
	}
	s := text[from:to]
	if from < to && (text[from] >= utf8.RuneSelf || text[to-1] >= utf8.RuneSelf) {
		// Other white space (a no-break space, …) is trimmed too.
		t := strings.TrimLeftFunc(s, unicode.IsSpace)
		from += len(s) - len(t)
		s = strings.TrimRightFunc(t, unicode.IsSpace)
	}
	if Blank(s) {
		return out
	}
	return append(out, Segment{Text: s, Pos: from, End: end, Terminated: terminated})
}

func asciiSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// Split returns the texts of text's statements, as Segments cuts them.
func Split(text string) []string {
	segs := Segments(text)
	out := make([]string, len(segs))
	for i, s := range segs {
		out[i] = s.Text
	}
	return out
}

// Complete reports whether every statement text holds ends with a
// semicolon: nothing is left open, not a quote, not a block comment, not a
// statement. Text made only of white space and comments is complete. The
// shell shows its continuation prompt while its input is not complete.
func Complete(text string) bool {
	segs := Segments(text)
	return len(segs) == 0 || segs[len(segs)-1].Terminated
}

// Skip returns the offset just after the comment, string or quoted
// identifier that starts at text[i], and whether it is closed: an
// unclosed one runs to the end of text. A line comment ends before its
// newline and is always closed. When none starts at i, Skip returns i and
// true.
func Skip(text string, i int) (end int, closed bool) {
	if i >= len(text) {
		return i, true
	}
	switch c := text[i]; c {
	case '\'', '"', '`':
		return skipQuote(text, i, false)
	case 'E', 'e':
		if i+1 < len(text) && text[i+1] == '\'' && (i == 0 || !isIdentPart(text[i-1])) {
			return skipQuote(text, i+1, true)
		}
	case '-':
		if i+1 < len(text) && text[i+1] == '-' {
			if nl := strings.IndexByte(text[i+2:], '\n'); nl >= 0 {
				return i + 2 + nl, true
			}
			return len(text), true
		}
	case '/':
		if i+1 < len(text) && text[i+1] == '*' {
			if e := strings.Index(text[i+2:], "*/"); e >= 0 {
				return i + 2 + e + 2, true
			}
			return len(text), false
		}
	}
	return i, true
}

// skipQuote returns the offset after the quoted text opening at text[i]
// (a doubled quote inside is an escaped quote; with backslash set, a
// backslash escapes the next byte too), and whether it is closed.
func skipQuote(text string, i int, backslash bool) (int, bool) {
	q := text[i]
	for j := i + 1; j < len(text); j++ {
		switch text[j] {
		case q:
			if j+1 < len(text) && text[j+1] == q {
				j++
				continue
			}
			return j + 1, true
		case '\\':
			if backslash {
				j++
			}
		}
	}
	return len(text), false
}

// Blank reports whether s holds nothing to run: only white space,
// semicolons and comments. A line comment may run to the end of s; an
// unterminated block comment is not blank (the statement is unfinished).
func Blank(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ';' || asciiSpace(c):
			i++
		case c == '-' || c == '/':
			end, closed := Skip(s, i)
			if end == i || !closed {
				return false
			}
			i = end
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(s[i:])
			if !unicode.IsSpace(r) {
				return false
			}
			i += n
		default:
			return false
		}
	}
	return true
}
