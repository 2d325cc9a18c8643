package sql

import (
	"strings"
)

type tokKind uint8

const (
	tEOF    tokKind = iota
	tIdent          // unquoted identifier or keyword; text is upper-cased
	tQuoted         // "…" or `…` identifier; text is unquoted, case kept
	tString         // '…' literal; text is unescaped
	tNumber
	tPunct // one or two characters: ( ) , ; = < > <= >= <> != . * + - / % || :=
	tError // an unterminated quote; text is the message
)

// maxNumberLen bounds numeric literals: MySQL's DECIMAL holds 65 digits,
// and TiDB's parser fails on much longer ones.
const maxNumberLen = 70

type token struct {
	kind tokKind
	text string
	pos  int // byte offset of the token's first character
	end  int // byte offset after the token
}

// is reports whether t is the unquoted keyword kw (upper case).
func (t token) is(kw string) bool { return t.kind == tIdent && t.text == kw }

// lex tokenizes a statement. It never fails: an unterminated quote becomes
// a tError token that the parser reports.
func lex(text string) []token {
	var out []token
	i := 0
	for i < len(text) {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '-' && i+1 < len(text) && text[i+1] == '-',
			c == '/' && i+1 < len(text) && text[i+1] == '*':
			i, _ = Skip(text, i) // an unterminated block comment runs to the end
		case (c == 'E' || c == 'e') && i+1 < len(text) && text[i+1] == '\'' && (i == 0 || !isIdentPart(text[i-1])):
			// Skip's rules make this a Postgres escape string, which the
			// engine does not take.
			out = append(out, token{kind: tError, text: "E'…' strings are not supported: write '…', with '' for a quote", pos: i, end: len(text)})
			return out
		case c == '#':
			// TiDB would read a MySQL comment to the end of the line, so
			// a # b (Postgres' XOR) would silently be a.
			out = append(out, token{kind: tError, text: `syntax error at or near "#": it is no operator, and comments start with -- or /*`, pos: i, end: i + 1})
			return out
		case isIdentStart(c):
			j := i + 1
			for j < len(text) && isIdentPart(text[j]) {
				j++
			}
			out = append(out, token{kind: tIdent, text: strings.ToUpper(text[i:j]), pos: i, end: j})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(text) && text[i+1] >= '0' && text[i+1] <= '9':
			j := i + 1
			for j < len(text) && (text[j] >= '0' && text[j] <= '9' || text[j] == '.' ||
				(text[j] == 'e' || text[j] == 'E') ||
				((text[j] == '+' || text[j] == '-') && (text[j-1] == 'e' || text[j-1] == 'E'))) {
				j++
			}
			if j-i > maxNumberLen {
				out = append(out, token{kind: tError, text: "number literal too long", pos: i, end: j})
				return out
			}
			out = append(out, token{kind: tNumber, text: text[i:j], pos: i, end: j})
			i = j
		case c == '\'' || c == '"' || c == '`':
			j, closed := Skip(text, i)
			if !closed {
				out = append(out, token{kind: tError, text: "unterminated quoted text", pos: i, end: len(text)})
				return out
			}
			q := string(c)
			body := strings.ReplaceAll(text[i+1:j-1], q+q, q)
			kind := tQuoted
			if c == '\'' {
				kind = tString
			}
			out = append(out, token{kind: kind, text: body, pos: i, end: j})
			i = j
		default:
			n := 1
			if i+1 < len(text) {
				switch text[i : i+2] {
				case "<=", ">=", "<>", "!=", "||", ":=", "=>", "->":
					n = 2
				}
			}
			out = append(out, token{kind: tPunct, text: text[i : i+n], pos: i, end: i + n})
			i += n
		}
	}
	out = append(out, token{kind: tEOF, pos: len(text), end: len(text)})
	return out
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' || c == '$' }
