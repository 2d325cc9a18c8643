package main

// This file prints results the way psql does: a header of column names
// centred over their columns, a rule, one line per row with numbers
// aligned right and everything else left, then a row-count footer.
//
//	 USERID | PAGEID | T10
//	--------+--------+-----
//	 u2     | cart   |  20
//	(1 row)
//
// A finished result is measured before it is printed. A push query's rows
// are printed as they arrive, so its columns start at streamWidth and
// widen for the rows after a wider value. NULL prints as NULL; newlines,
// tabs and carriage returns inside a value print as \n, \t and \r so that
// a row stays on one line. Trailing blanks are trimmed from every line.

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// streamWidth is the width a streamed column starts with, so that short
// values of the first rows do not fix a layout the later ones break.
const streamWidth = 10

// layout is how a result's columns are drawn.
type layout struct {
	names  []string
	right  []bool // align right: numeric columns
	widths []int
}

// newLayout returns the layout of the columns fields, each at least as
// wide as its name and minWidth.
func newLayout(fields []pgconn.FieldDescription, minWidth int) *layout {
	l := &layout{}
	for _, f := range fields {
		l.names = append(l.names, f.Name)
		l.right = append(l.right, numericOID(f.DataTypeOID))
		l.widths = append(l.widths, max(width(f.Name), minWidth))
	}
	return l
}

// fit widens the columns to hold row.
func (l *layout) fit(row []string) {
	for i, v := range row {
		if i < len(l.widths) {
			l.widths[i] = max(l.widths[i], width(v))
		}
	}
}

// header writes the column names and the rule under them.
func (l *layout) header(w io.Writer) {
	var b strings.Builder
	for i, name := range l.names {
		if i > 0 {
			b.WriteByte('|')
		}
		pad := l.widths[i] - width(name)
		b.WriteByte(' ')
		b.WriteString(strings.Repeat(" ", pad/2))
		b.WriteString(name)
		b.WriteString(strings.Repeat(" ", pad-pad/2))
		b.WriteByte(' ')
	}
	writeLine(w, b.String())
	b.Reset()
	for i := range l.names {
		if i > 0 {
			b.WriteByte('+')
		}
		b.WriteString(strings.Repeat("-", l.widths[i]+2))
	}
	writeLine(w, b.String())
}

// row writes one row.
func (l *layout) row(w io.Writer, row []string) {
	var b strings.Builder
	for i, v := range row {
		if i > 0 {
			b.WriteByte('|')
		}
		pad := 0
		if i < len(l.widths) {
			pad = max(l.widths[i]-width(v), 0)
		}
		b.WriteByte(' ')
		if i < len(l.right) && l.right[i] {
			b.WriteString(strings.Repeat(" ", pad))
			b.WriteString(v)
		} else {
			b.WriteString(v)
			b.WriteString(strings.Repeat(" ", pad))
		}
		b.WriteByte(' ')
	}
	writeLine(w, b.String())
}

// printTable writes a finished result: header, rows, footer and a blank
// line.
func printTable(w io.Writer, fields []pgconn.FieldDescription, rows [][]string) {
	l := newLayout(fields, 0)
	for _, r := range rows {
		l.fit(r)
	}
	l.header(w)
	for _, r := range rows {
		l.row(w, r)
	}
	fmt.Fprintf(w, "%s\n\n", rowCount(len(rows)))
}

// rowCount is the footer for n rows: "(1 row)", "(3 rows)".
func rowCount(n int) string {
	if n == 1 {
		return "(1 row)"
	}
	return fmt.Sprintf("(%d rows)", n)
}

// display renders one value received in text format.
func display(v []byte) string {
	if v == nil {
		return "NULL"
	}
	s := string(v)
	if strings.ContainsAny(s, "\n\t\r") {
		s = strings.NewReplacer("\n", `\n`, "\t", `\t`, "\r", `\r`).Replace(s)
	}
	return s
}

// displayRow renders a row's values.
func displayRow(values [][]byte) []string {
	row := make([]string, len(values))
	for i, v := range values {
		row[i] = display(v)
	}
	return row
}

func writeLine(w io.Writer, s string) {
	io.WriteString(w, strings.TrimRight(s, " ")+"\n")
}

// width is how many terminal cells s takes, counting a rune as one.
func width(s string) int { return utf8.RuneCountInString(s) }

// numericOID reports whether values of the type are numbers, which line
// up on their last digit.
func numericOID(oid uint32) bool {
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.Float4OID,
		pgtype.Float8OID, pgtype.NumericOID, pgtype.OIDOID:
		return true
	}
	return false
}
