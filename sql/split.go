package sql

import "strings"

// Split cuts text into statements at top-level semicolons, skipping
// semicolons inside quotes ('…', "…", `…`) and comments (-- … and /* … */).
// Each statement is returned trimmed, without its semicolon; empty
// statements are dropped.
func Split(text string) []string {
	var out []string
	start := 0
	for i := 0; i < len(text); i++ {
		switch c := text[i]; c {
		case '\'', '"', '`':
			i = skipQuoted(text, i)
		case '-':
			if i+1 < len(text) && text[i+1] == '-' {
				for i < len(text) && text[i] != '\n' {
					i++
				}
			}
		case '/':
			if i+1 < len(text) && text[i+1] == '*' {
				end := strings.Index(text[i+2:], "*/")
				if end < 0 {
					i = len(text)
				} else {
					i += 2 + end + 1
				}
			}
		case ';':
			if s := strings.TrimSpace(text[start:i]); s != "" && !Blank(s) {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if start < len(text) {
		if s := strings.TrimSpace(text[start:]); s != "" && !Blank(s) {
			out = append(out, s)
		}
	}
	return out
}

// skipQuoted returns the index of the quote closing the one at i (a doubled
// quote inside is an escaped quote; a backslash escapes nothing, as in
// ksqlDB), or len(text)-1 when it is unclosed.
func skipQuoted(text string, i int) int {
	q := text[i]
	for j := i + 1; j < len(text); j++ {
		if text[j] == q {
			if j+1 < len(text) && text[j+1] == q {
				j++
				continue
			}
			return j
		}
	}
	return len(text) - 1
}

// Blank reports whether s holds nothing to run: only whitespace,
// semicolons and comments. A line comment may run to the end of s; an
// unterminated block comment is not blank (the statement is unfinished).
func Blank(s string) bool {
	for {
		s = strings.TrimLeft(s, " \t\r\n\f\v;")
		switch {
		case s == "":
			return true
		case strings.HasPrefix(s, "--"):
			nl := strings.IndexByte(s, '\n')
			if nl < 0 {
				return true
			}
			s = s[nl+1:]
		case strings.HasPrefix(s, "/*"):
			end := strings.Index(s[2:], "*/")
			if end < 0 {
				return false
			}
			s = s[2+end+2:]
		default:
			return false
		}
	}
}
