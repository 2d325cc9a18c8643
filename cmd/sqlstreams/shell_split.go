package main

// This file cuts the shell's input into statements. Input arrives a line at
// a time; a statement ends at a semicolon outside quotes and comments, by
// the rules of sql.Segments, the splitter the server uses, so a statement
// may span lines and a line may hold several.

import (
	"strings"

	"github.com/sqlstreams/sqlstreams/sql"
)

// splitter accumulates input lines and hands back the statements they
// complete. The zero value is ready to use.
type splitter struct {
	pending string // text after the last complete statement
}

// add appends one input line (without its newline) and returns the
// statements it completes, trimmed, without their semicolons. Statements
// made only of comments are dropped.
func (s *splitter) add(line string) []string {
	s.pending += line + "\n"
	var out []string
	cut := 0
	for _, seg := range sql.Segments(s.pending) {
		if !seg.Terminated {
			break
		}
		out = append(out, seg.Text)
		cut = seg.End
	}
	s.pending = s.pending[cut:]
	if sql.Complete(s.pending) {
		s.pending = "" // only white space and comments
	}
	return out
}

// incomplete reports whether a statement has been started and not ended:
// the shell then shows its continuation prompt.
func (s *splitter) incomplete() bool { return s.pending != "" }

// rest returns the unfinished statement, if any, and resets the splitter.
// At the end of a script it is run as if it ended with a semicolon.
func (s *splitter) rest() string {
	stmt := strings.TrimSpace(s.pending)
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
		if end, _ := sql.Skip(stmt, i); end > i {
			i = end // a comment or something quoted
			continue
		}
		if isWordByte(c) {
			j := i
			for j < len(stmt) && isWordByte(stmt[j]) {
				j++
			}
			out = append(out, strings.ToUpper(stmt[i:j]))
			i = j
			continue
		}
		i++
	}
	return out
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
