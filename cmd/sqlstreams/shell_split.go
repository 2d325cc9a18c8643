package main

// This file cuts the shell's input into statements. Input arrives a line at
// a time; a statement ends at a semicolon outside quotes ('…', "…", `…`)
// and comments (-- … and /* … */), the same rules sql.Split applies on the
// server, so a statement may span lines and a line may hold several.

import (
	"strings"

	"github.com/sqlstreams/sqlstreams/sql"
)

// splitter accumulates input lines and hands back the statements they
// complete. The zero value is ready to use.
type splitter struct {
	pending string // text after the last complete statement
	quote   byte   // the open quote character, or 0
	block   bool   // inside a /* … */ comment
}

// add appends one input line (without its newline) and returns the
// statements it completes, trimmed, without their semicolons. Statements
// made only of comments are dropped.
func (s *splitter) add(line string) []string {
	from := len(s.pending)
	s.pending += line + "\n"
	text := s.pending
	var out []string
	start := 0
	for i := from; i < len(text); i++ {
		c := text[i]
		switch {
		case s.block:
			if c == '*' && i+1 < len(text) && text[i+1] == '/' {
				s.block = false
				i++
			}
		case s.quote != 0:
			switch {
			case c == '\\' && s.quote == '\'':
				i++ // an escaped character, as sql.Split reads it
			case c == s.quote && i+1 < len(text) && text[i+1] == s.quote:
				i++ // a doubled quote stands for itself
			case c == s.quote:
				s.quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			s.quote = c
		case c == '-' && i+1 < len(text) && text[i+1] == '-':
			i = strings.IndexByte(text[i:], '\n') + i // the line ends in '\n'
		case c == '/' && i+1 < len(text) && text[i+1] == '*':
			s.block = true
			i++
		case c == ';':
			if stmt := strings.TrimSpace(text[start:i]); !sql.Blank(stmt) {
				out = append(out, stmt)
			}
			start = i + 1
		}
	}
	s.pending = text[start:]
	if s.quote == 0 && !s.block && sql.Blank(s.pending) {
		s.pending = ""
	}
	return out
}

// incomplete reports whether a statement has been started and not ended:
// the shell then shows its continuation prompt.
func (s *splitter) incomplete() bool {
	return s.quote != 0 || s.block || !sql.Blank(s.pending)
}

// rest returns the unfinished statement, if any, and resets the splitter.
// At the end of a script it is run as if it ended with a semicolon.
func (s *splitter) rest() string {
	stmt := strings.TrimSpace(s.pending)
	if s.quote == 0 && !s.block && sql.Blank(stmt) {
		stmt = ""
	}
	s.reset()
	return stmt
}

// reset drops the unfinished statement.
func (s *splitter) reset() { *s = splitter{} }

// keywords returns the first n bare words of stmt, upper-cased, skipping
// comments and anything quoted; n < 0 returns them all. The shell uses it
// to tell push queries (their rows are printed as they arrive) from
// statements whose result it can align before printing.
func keywords(stmt string, n int) []string {
	var out []string
	for i := 0; i < len(stmt) && (n < 0 || len(out) < n); {
		c := stmt[i]
		switch {
		case c == '\'' || c == '"' || c == '`':
			i = skipQuote(stmt, i)
		case strings.HasPrefix(stmt[i:], "--"):
			nl := strings.IndexByte(stmt[i:], '\n')
			if nl < 0 {
				return out
			}
			i += nl + 1
		case strings.HasPrefix(stmt[i:], "/*"):
			end := strings.Index(stmt[i+2:], "*/")
			if end < 0 {
				return out
			}
			i += 2 + end + 2
		case isWordByte(c):
			j := i
			for j < len(stmt) && isWordByte(stmt[j]) {
				j++
			}
			out = append(out, strings.ToUpper(stmt[i:j]))
			i = j
		default:
			i++
		}
	}
	return out
}

// skipQuote returns the index just past the quoted text opening at i.
func skipQuote(s string, i int) int {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && q == '\'':
			j++
		case s[j] == q && j+1 < len(s) && s[j+1] == q:
			j++
		case s[j] == q:
			return j + 1
		}
	}
	return len(s)
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// streams reports whether stmt returns rows as they happen rather than a
// finished result: a push query (SELECT … EMIT CHANGES|FINAL) or PRINT.
func streams(stmt string) bool {
	words := keywords(stmt, -1)
	if len(words) == 0 {
		return false
	}
	switch words[0] {
	case "PRINT":
		return true
	case "SELECT":
		for _, w := range words {
			if w == "EMIT" {
				return true
			}
		}
	}
	return false
}
