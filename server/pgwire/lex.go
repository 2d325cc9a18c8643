package pgwire

// This file holds a small tokenizer for the statements pgwire looks at
// before the engine does: the Postgres session statements it answers
// itself (intercept.go), the pg_catalog queries of psql (pgcatalog.go) and
// the $n placeholders it substitutes (params.go).
//
// It knows identifiers, "quoted identifiers", 'strings' (standard: no
// backslash escapes, as in the engine; E'…' strings take them), numbers, $n
// placeholders, operators and punctuation, and skips comments. Where a
// string, quoted identifier or comment ends is sql.Skip's to say, so this
// tokenizer, the engine's and the statement splitter (sql.Segments) agree.
// It never fails: an unterminated quote runs to the end of the text.

import (
	"strings"

	"github.com/sqlstreams/sqlstreams/sql"
)

// tokKind is the kind of a token.
type tokKind uint8

const (
	tokIdent  tokKind = iota + 1 // word: keyword or unquoted identifier
	tokQIdent                    // "quoted identifier"; val is unquoted
	tokString                    // 'string'; val is the unescaped value
	tokNumber                    // 42, 1.5, 1e3
	tokParam                     // $n; val is the digits
	tokOp                        // operator or punctuation: = <> ( ) , . :: ~ …
)

// token is one token of a statement text.
type token struct {
	kind     tokKind
	val      string // see tokKind
	from, to int    // byte range in the text
}

// is reports whether t is the word w (case-insensitive) or the operator w.
func (t token) is(w string) bool {
	switch t.kind {
	case tokIdent:
		return strings.EqualFold(t.val, w)
	case tokOp:
		return t.val == w
	}
	return false
}

// name returns the identifier t names, folded as Postgres folds it: an
// unquoted word in lower case, a quoted one as written. ok is false when t
// is not an identifier.
func (t token) name() (string, bool) {
	switch t.kind {
	case tokIdent:
		return strings.ToLower(t.val), true
	case tokQIdent:
		return t.val, true
	}
	return "", false
}

// lex splits text into tokens.
func lex(text string) []token {
	return lexInto(nil, text)
}

// lexInto is lex appending to toks[:0], for a caller that reuses them.
func lexInto(toks []token, text string) []token {
	toks = toks[:0]
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '-' && i+1 < len(text) && text[i+1] == '-',
			c == '/' && i+1 < len(text) && text[i+1] == '*':
			i, _ = sql.Skip(text, i)
		case c == '\'' || (c == 'E' || c == 'e') && i+1 < len(text) && text[i+1] == '\'':
			end, closed := sql.Skip(text, i)
			if end == i { // an E ending a word: sql.Skip starts no string there
				end = i + 1
				for end < len(text) && isIdentByte(text[end]) {
					end++
				}
				toks = append(toks, token{kind: tokIdent, val: text[i:end], from: i, to: end})
				i = end
				continue
			}
			toks = append(toks, token{kind: tokString, val: stringValue(text[i:end], closed), from: i, to: end})
			i = end
		case c == '"' || c == '`':
			end, closed := sql.Skip(text, i)
			toks = append(toks, token{kind: tokQIdent, val: quotedValue(text[i:end], closed), from: i, to: end})
			i = end
		case c == '$' && i+1 < len(text) && isDigit(text[i+1]):
			j := i + 1
			for j < len(text) && isDigit(text[j]) {
				j++
			}
			toks = append(toks, token{kind: tokParam, val: text[i+1 : j], from: i, to: j})
			i = j
		case isDigit(c) || c == '.' && i+1 < len(text) && isDigit(text[i+1]):
			j := i
			for j < len(text) && (isDigit(text[j]) || text[j] == '.') {
				j++
			}
			if j < len(text) && (text[j] == 'e' || text[j] == 'E') {
				k := j + 1
				if k < len(text) && (text[k] == '+' || text[k] == '-') {
					k++
				}
				if k < len(text) && isDigit(text[k]) {
					for j = k; j < len(text) && isDigit(text[j]); j++ {
					}
				}
			}
			toks = append(toks, token{kind: tokNumber, val: text[i:j], from: i, to: j})
			i = j
		case isIdentStart(c):
			j := i
			for j < len(text) && (isIdentByte(text[j]) || text[j] == '$') {
				j++
			}
			toks = append(toks, token{kind: tokIdent, val: text[i:j], from: i, to: j})
			i = j
		default:
			j := i + 1
			if strings.IndexByte("<>=!~:|&*+-/%^@#?", c) >= 0 {
				for j < len(text) && strings.IndexByte("<>=!~:|&*+-/%^@#?", text[j]) >= 0 &&
					!(text[j] == '-' && j+1 < len(text) && text[j+1] == '-') &&
					!(text[j] == '/' && j+1 < len(text) && text[j+1] == '*') { // as in Postgres, an operator ends where a comment starts
					j++
				}
			}
			toks = append(toks, token{kind: tokOp, val: text[i:j], from: i, to: j})
			i = j
		}
	}
	return toks
}

func isIdentStart(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// stringValue returns the value of the string literal lit ('…' or E'…',
// as sql.Skip delimits it; an unclosed one runs to the end). A doubled
// quote is a quote; in an E'…' string a backslash escapes the next byte
// (\n, \t, \r and \0 stand for what they do in Postgres).
func stringValue(lit string, closed bool) string {
	escapes := lit[0] != '\''
	if escapes {
		lit = lit[1:]
	}
	body := lit[1:]
	if closed {
		body = lit[1 : len(lit)-1]
	}
	if strings.IndexByte(body, '\'') < 0 && (!escapes || strings.IndexByte(body, '\\') < 0) {
		return body // the common case: nothing to unescape
	}
	var b strings.Builder
	for j := 0; j < len(body); j++ {
		switch c := body[j]; {
		case c == '\'' && j+1 < len(body) && body[j+1] == '\'':
			b.WriteByte('\'')
			j++
		case c == '\\' && escapes && j+1 < len(body):
			j++
			switch body[j] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '0':
				b.WriteByte(0)
			default:
				b.WriteByte(body[j])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// quotedValue returns the name the quoted identifier lit ("…" or `…`)
// stands for: without its quotes, a doubled quote standing for one.
func quotedValue(lit string, closed bool) string {
	q := lit[:1]
	body := lit[1:]
	if closed {
		body = lit[1 : len(lit)-1]
	}
	return strings.ReplaceAll(body, q+q, q)
}

// words reports whether toks start with the given words (case-insensitive
// keywords or operators).
func words(toks []token, ws ...string) bool {
	if len(toks) < len(ws) {
		return false
	}
	for i, w := range ws {
		if !toks[i].is(w) {
			return false
		}
	}
	return true
}

// splitTop splits toks at top-level (outside parentheses) tokens for which
// sep is true.
func splitTop(toks []token, sep func(token) bool) [][]token {
	var out [][]token
	depth, start := 0, 0
	for i, t := range toks {
		switch {
		case t.is("(") || t.is("["):
			depth++
		case t.is(")") || t.is("]"):
			depth--
		case depth == 0 && sep(t):
			out = append(out, toks[start:i])
			start = i + 1
		}
	}
	return append(out, toks[start:])
}

// findTop returns the index of the first top-level token in toks for which
// match is true, or -1.
func findTop(toks []token, match func(token) bool) int {
	depth := 0
	for i, t := range toks {
		switch {
		case t.is("(") || t.is("["):
			depth++
		case t.is(")") || t.is("]"):
			depth--
		case depth == 0 && match(t):
			return i
		}
	}
	return -1
}
