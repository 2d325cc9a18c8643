package main

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/sql/splittest"
)

func TestSplitter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  [][]string // statements completed after each line
		open  bool       // a statement is still being typed at the end
	}{
		{"one line", []string{"SHOW STREAMS;"}, [][]string{{"SHOW STREAMS"}}, false},
		{"two on a line", []string{"SHOW STREAMS; SHOW QUERIES;"}, [][]string{{"SHOW STREAMS", "SHOW QUERIES"}}, false},
		{"across lines",
			[]string{"SELECT *", "  FROM s", "  EMIT CHANGES;"},
			[][]string{nil, nil, {"SELECT *\n  FROM s\n  EMIT CHANGES"}}, false},
		{"no semicolon yet", []string{"SELECT 1"}, [][]string{nil}, true},
		{"ends one, starts another",
			[]string{"SHOW STREAMS; SELECT", "1;"},
			[][]string{{"SHOW STREAMS"}, {"SELECT\n1"}}, false},
		{"semicolon in a string",
			[]string{"INSERT INTO s VALUES ('a;b');"},
			[][]string{{"INSERT INTO s VALUES ('a;b')"}}, false},
		{"string across lines",
			[]string{"INSERT INTO s VALUES ('a;", "b');"},
			[][]string{nil, {"INSERT INTO s VALUES ('a;\nb')"}}, false},
		{"open string", []string{"SELECT 'it;"}, [][]string{nil}, true},
		{"doubled quote",
			[]string{"SELECT 'it''s; fine' FROM s;"},
			[][]string{{"SELECT 'it''s; fine' FROM s"}}, false},
		{"a backslash escapes nothing, as on the server",
			[]string{`INSERT INTO s VALUES ('a\'); SELECT 1;`},
			[][]string{{`INSERT INTO s VALUES ('a\')`, "SELECT 1"}}, false},
		{"E string", []string{`SET x = E'a\'; b'; SELECT 1;`}, [][]string{{`SET x = E'a\'; b'`, "SELECT 1"}}, false},
		{"quoted identifiers",
			[]string{"SELECT \"a;b\", `c;d` FROM s;"},
			[][]string{{"SELECT \"a;b\", `c;d` FROM s"}}, false},
		{"line comment",
			[]string{"SELECT 1 -- not the end;", "FROM s;"},
			[][]string{nil, {"SELECT 1 -- not the end;\nFROM s"}}, false},
		{"block comment",
			[]string{"SELECT /* a;", "b; */ 1;"},
			[][]string{nil, {"SELECT /* a;\nb; */ 1"}}, false},
		{"open block comment", []string{"/* SHOW STREAMS;"}, [][]string{nil}, true},
		{"only comments", []string{"-- hello;", "/* x; */ ;"}, [][]string{nil, nil}, false},
		{"empty statements", []string{";;  ;"}, [][]string{nil}, false},
		{"blank lines", []string{"", "   "}, [][]string{nil, nil}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s splitter
			for i, line := range tc.lines {
				if got := s.add(line); !reflect.DeepEqual(got, tc.want[i]) {
					t.Errorf("after line %d %q: got %q, want %q", i+1, line, got, tc.want[i])
				}
			}
			if s.incomplete() != tc.open {
				t.Errorf("incomplete() = %v, want %v (pending %q)", s.incomplete(), tc.open, s.pending)
			}
		})
	}
}

// TestSplitterCases feeds the quoting cases every splitter shares
// (sql/splittest) to the shell a line at a time: it must run the
// statements the server would cut, and wait for more input exactly when
// the server would see an unterminated statement. One difference is
// meant: lines holding only comments are not kept for the next statement
// (no continuation prompt after a comment).
func TestSplitterCases(t *testing.T) {
	for _, c := range splittest.Cases() {
		var s splitter
		var got []string
		for _, line := range strings.Split(c.Text, "\n") {
			got = append(got, s.add(line)...)
		}
		if s.incomplete() == c.Complete {
			t.Errorf("%s: incomplete() = %v after %q", c.Name, s.incomplete(), c.Text)
		}
		if rest := s.rest(); rest != "" {
			got = append(got, rest)
		}
		var want []string
		for _, st := range c.Statements {
			want = append(want, dropCommentLines(st.Text))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the shell runs %q from %q, want %q", c.Name, got, c.Text, want)
		}
	}
}

// dropCommentLines drops the lines holding only comments at the start of
// stmt.
func dropCommentLines(stmt string) string {
	for {
		nl := strings.IndexByte(stmt, '\n')
		if nl < 0 || !sql.Blank(stmt[:nl]) {
			return stmt
		}
		stmt = strings.TrimLeft(stmt[nl+1:], " \t\r\n")
	}
}

func TestSplitterRest(t *testing.T) {
	var s splitter
	s.add("SHOW STREAMS; SELECT *")
	s.add("FROM s")
	if got, want := s.rest(), "SELECT *\nFROM s"; got != want {
		t.Errorf("rest() = %q, want %q", got, want)
	}
	if s.incomplete() {
		t.Error("splitter not reset by rest()")
	}
	s.add("-- just a comment")
	if got := s.rest(); got != "" {
		t.Errorf("rest() of a comment = %q, want nothing", got)
	}
}

func TestStreams(t *testing.T) {
	for stmt, want := range map[string]bool{
		"SELECT * FROM s EMIT CHANGES":                               true,
		"select * from s emit changes limit 1":                       true,
		"SELECT * FROM t WINDOW TUMBLING (SIZE 1 MINUTE) EMIT FINAL": true,
		"PRINT 'topic' FROM BEGINNING":                               true,
		"SELECT * FROM t WHERE k = 'EMIT'":                           false,
		"SELECT \"EMIT\" FROM t":                                     false,
		"SELECT * FROM t -- EMIT CHANGES":                            false,
		"CREATE STREAM x AS SELECT * FROM s EMIT CHANGES":            false,
		"SHOW QUERIES": false,
	} {
		if got := streams(stmt); got != want {
			t.Errorf("streams(%q) = %v, want %v", stmt, got, want)
		}
	}
}

func fields(cols ...string) []pgconn.FieldDescription {
	var fs []pgconn.FieldDescription
	for _, c := range cols {
		name, typ, _ := strings.Cut(c, ":")
		oid := uint32(pgtype.TextOID)
		if typ == "int" {
			oid = pgtype.Int8OID
		}
		fs = append(fs, pgconn.FieldDescription{Name: name, DataTypeOID: oid})
	}
	return fs
}

func TestPrintTable(t *testing.T) {
	var b bytes.Buffer
	printTable(&b, fields("USERID", "PAGEID", "T10:int"), [][]string{
		{"u2", "cart", "20"},
		{"user-1234", "home", "1234567"},
		{"u3", "NULL", "5"},
	})
	want := `  USERID   | PAGEID |   T10
-----------+--------+---------
 u2        | cart   |      20
 user-1234 | home   | 1234567
 u3        | NULL   |       5
(3 rows)

`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestPrintTableEmptyAndOne(t *testing.T) {
	var b bytes.Buffer
	printTable(&b, fields("Stream Name"), nil)
	printTable(&b, fields("N:int"), [][]string{{"1"}})
	want := ` Stream Name
-------------
(0 rows)

 N
---
 1
(1 row)

`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestStreamLayout(t *testing.T) {
	var b bytes.Buffer
	l := newLayout(fields("K", "V:int"), streamWidth)
	l.header(&b)
	for _, row := range [][]string{{"a", "1"}, {"a-much-longer-key", "2"}, {"b", "3"}} {
		l.fit(row)
		l.row(&b, row)
	}
	want := `     K      |     V
------------+------------
 a          |          1
 a-much-longer-key |          2
 b                 |          3
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

func TestDisplay(t *testing.T) {
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{nil, "NULL"},
		{[]byte{}, ""},
		{[]byte("plain"), "plain"},
		{[]byte("two\nlines\tand tab"), `two\nlines\tand tab`},
	} {
		if got := display(tc.in); got != tc.want {
			t.Errorf("display(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestPrintError(t *testing.T) {
	for _, tc := range []struct {
		name string
		stmt string
		err  error
		want string
	}{
		{"no position", "SHOW X", &pgconn.PgError{Message: "boom"}, "ERROR: boom\n"},
		{"first line", "SELECT nocol FROM s EMIT CHANGES",
			&pgconn.PgError{Message: "column NOCOL does not exist", Position: 8},
			"ERROR: column NOCOL does not exist\nLINE 1: SELECT nocol FROM s EMIT CHANGES\n               ^\n"},
		{"second line", "SELECT *\n  FROM nosuch",
			&pgconn.PgError{Message: "stream NOSUCH does not exist", Position: 17},
			"ERROR: stream NOSUCH does not exist\nLINE 2:   FROM nosuch\n               ^\n"},
		{"tab kept", "SELECT\tx",
			&pgconn.PgError{Message: "bad", Position: 8},
			"ERROR: bad\nLINE 1: SELECT\tx\n              \t^\n"},
		{"multibyte", "SELECT 'é', x",
			&pgconn.PgError{Message: "bad", Position: 13},
			"ERROR: bad\nLINE 1: SELECT 'é', x\n                    ^\n"},
		{"past the end", "SELEC",
			&pgconn.PgError{Message: "unexpected end", Position: 99},
			"ERROR: unexpected end\nLINE 1: SELEC\n             ^\n"},
		{"with hint", "X", &pgconn.PgError{Message: "m", Detail: "d", Hint: "h"}, "ERROR: m\nDETAIL: d\nHINT: h\n"},
		{"not from the server", "X", errors.New("connection refused"), "ERROR: connection refused\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			printError(&b, tc.stmt, tc.err)
			if b.String() != tc.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tc.want)
			}
		})
	}
}
