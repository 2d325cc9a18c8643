package main

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/engine"
)

func TestComplete(t *testing.T) {
	cat := catalogSnapshot{
		functions: []string{"ABS", "COUNT", "CONCAT"},
		sources:   []string{"PAGEVIEWS", "USERS"},
		columns: map[string][]string{
			"PAGEVIEWS": {"USERID", "PAGEID", "VIEWTIME"},
			"USERS":     {"USERID", "REGION"},
		},
	}
	for _, tc := range []struct {
		name  string
		line  string
		pos   int // -1: end of line
		want  []string
		typed int
	}{
		{"keyword", "SEL", -1, []string{"SELECT"}, 3},
		{"keyword lower case", "sel", -1, []string{"select"}, 3},
		{"keyword mixed case keeps ours", "Sel", -1, []string{"SELECT"}, 3},
		{"several", "SELECT * FROM pageviews EMIT CH", -1, []string{"CHANGES"}, 2},
		{"source", "DESCRIBE PAGEV", -1, []string{"PAGEVIEWS"}, 5},
		{"source lower case", "describe pagev", -1, []string{"PAGEVIEWS"}, 5},
		{"function", "SELECT CONC", -1, []string{"CONCAT"}, 4},
		{"function and keyword", "SELECT CO", -1, []string{"CONCAT", "COUNT"}, 2},
		{"column of the named source", "SELECT REG FROM users", 10, []string{"REGION"}, 3},
		{"columns only of the named source", "SELECT V FROM users", 8, []string{"VALUES", "VALUE_FORMAT", "VALUE_DELIMITER", "VARCHAR"}, 1},
		{"columns of all sources", "SELECT VIEW", -1, []string{"VIEWTIME"}, 4},
		{"no duplicates", "SELECT USERI", -1, []string{"USERID"}, 5},
		{"property", "SET 'auto.", -1, []string{"auto.offset.reset"}, 5},
		{"property empty", "SET '", -1, engine.CompletionProperties, 0},
		{"property not outside quotes", "SET auto.", -1, nil, 5},
		{"sources after FROM", "SELECT * FROM ", -1, []string{"PAGEVIEWS", "USERS"}, 0},
		{"nothing on empty elsewhere", "SELECT ", -1, nil, 0},
		{"cursor mid-line", "DESCRIBE US; SHOW STREAMS;", 11, []string{"USERID", "USERS"}, 2},
		{"no match", "XYZZY", -1, nil, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pos := tc.pos
			if pos < 0 {
				pos = len([]rune(tc.line))
			}
			got, typed := complete([]rune(tc.line), pos, cat)
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if !reflect.DeepEqual(got, want) || typed != tc.typed {
				t.Errorf("complete(%q, %d) = %q, %d; want %q, %d", tc.line, pos, got, typed, want, tc.typed)
			}
		})
	}
}

func TestCompleterDo(t *testing.T) {
	c := &completer{cat: catalogSnapshot{sources: []string{"PAGEVIEWS", "PAGES"}}}
	got, n := c.Do([]rune("DESCRIBE PAGEV"), 14)
	if n != 5 || len(got) != 1 || string(got[0]) != "IEWS " {
		t.Errorf("Do = %q, %d; want [\"IEWS \"], 5", got, n)
	}
	got, n = c.Do([]rune("DESCRIBE PAG"), 12)
	var s []string
	for _, g := range got {
		s = append(s, string(g))
	}
	if n != 3 || strings.Join(s, ",") != "ES,EVIEWS" {
		t.Errorf("Do = %q, %d; want [ES EVIEWS], 3", s, n)
	}
	got, _ = c.Do([]rune("SET 'commit.int"), 15)
	if len(got) != 1 || string(got[0]) != "erval.ms'" {
		t.Errorf("Do(property) = %q", got)
	}
}

func TestChangesSources(t *testing.T) {
	for stmt, want := range map[string]bool{
		"CREATE STREAM s (a INT) WITH (kafka_topic='s')": true,
		"drop table t":                 true,
		"/* x */ DROP STREAM s":        true,
		"SELECT * FROM s EMIT CHANGES": false,
		"INSERT INTO s VALUES (1)":     false,
	} {
		if got := changesSources(stmt); got != want {
			t.Errorf("changesSources(%q) = %v, want %v", stmt, got, want)
		}
	}
}

func TestQuoteIdent(t *testing.T) {
	for in, want := range map[string]string{"PAGEVIEWS": "PAGEVIEWS", "Mixed": "`Mixed`", "A`B": "`A``B`", "1X": "`1X`"} {
		if got := quoteIdent(in); got != want {
			t.Errorf("quoteIdent(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRunScriptPath(t *testing.T) {
	for _, tc := range []struct {
		stmt string
		path string
		ok   bool
	}{
		{"RUN SCRIPT 'a.sql'", "a.sql", true},
		{"run script '/tmp/x y.sql';", "/tmp/x y.sql", true},
		{"  Run  Script\t'it''s.sql' ; ", "it's.sql", true},
		{"RUN SCRIPT a.sql", "", false},
		{"RUN SCRIPT 'a.sql'; SELECT 1;", "", false},
		{"SELECT 'RUN SCRIPT'", "", false},
	} {
		path, ok := runScriptPath(tc.stmt)
		if path != tc.path || ok != tc.ok {
			t.Errorf("runScriptPath(%q) = %q, %v; want %q, %v", tc.stmt, path, ok, tc.path, tc.ok)
		}
	}
}
