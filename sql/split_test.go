package sql

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/sql/splittest"
)

// TestSegments runs the splitter on the quoting cases every splitter
// shares (sql/splittest/cases.json).
func TestSegments(t *testing.T) {
	for _, c := range splittest.Cases() {
		t.Run(c.Name, func(t *testing.T) {
			segs := Segments(c.Text)
			var got []splittest.Statement
			for i, s := range segs {
				got = append(got, splittest.Statement{Pos: s.Pos, Text: s.Text})
				if c.Text[s.Pos:s.Pos+len(s.Text)] != s.Text {
					t.Errorf("statement %d: Pos %d does not point at its text", i, s.Pos)
				}
				if s.Terminated != (i < len(segs)-1 || c.Complete) || s.Terminated && c.Text[s.End-1] != ';' || !s.Terminated && s.End != len(c.Text) {
					t.Errorf("statement %d: Terminated %v, End %d", i, s.Terminated, s.End)
				}
			}
			if !reflect.DeepEqual(got, c.Statements) && len(got)+len(c.Statements) > 0 {
				t.Errorf("Segments(%q)\n got %+v\nwant %+v", c.Text, got, c.Statements)
			}
			if Complete(c.Text) != c.Complete {
				t.Errorf("Complete(%q) = %v, want %v", c.Text, !c.Complete, c.Complete)
			}
		})
	}
}

// TestLexAgreesWithSegments checks that the engine's tokenizer ends each
// string and quoted identifier where the splitter does: every statement
// of a case lexes without a semicolon token outside quotes.
func TestLexAgreesWithSegments(t *testing.T) {
	for _, c := range splittest.Cases() {
		for _, s := range c.Statements {
			for _, tok := range lex(s.Text) {
				if tok.kind == tPunct && tok.text == ";" {
					t.Errorf("%s: lex(%q) finds a semicolon at %d the splitter did not cut at", c.Name, s.Text, tok.pos)
				}
			}
		}
	}
}

func TestLexRefusesEStrings(t *testing.T) {
	_, err := Parse(`SELECT E'a\'b' AS x FROM s`)
	var e *Error
	if !errors.As(err, &e) || e.Msg != "E'…' strings are not supported: write '…', with '' for a quote" || e.Column != 8 {
		t.Fatalf("Parse of an E string: %v", err)
	}
}

// FuzzSegments checks the splitter's invariants on any text: each
// statement is where Pos says, trimmed and not blank; only the last may
// be unterminated; the text between statements is blank; and the
// engine's tokenizer finds no semicolon inside a statement (it ends
// quotes and comments where the splitter does).
//
//	go test ./sql -run '^$' -fuzz FuzzSegments
func FuzzSegments(f *testing.F) {
	for _, c := range splittest.Cases() {
		f.Add(c.Text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		segs := Segments(text)
		prev := 0
		for i, s := range segs {
			if s.Pos < prev || s.Pos+len(s.Text) > s.End || s.End > len(text) || text[s.Pos:s.Pos+len(s.Text)] != s.Text {
				t.Fatalf("segment %d %+v does not fit %q", i, s, text)
			}
			if s.Text == "" || Blank(s.Text) || strings.TrimSpace(s.Text) != s.Text {
				t.Fatalf("segment %d %q is blank or untrimmed", i, s.Text)
			}
			if s.Terminated && text[s.End-1] != ';' || !s.Terminated && (i != len(segs)-1 || s.End != len(text)) {
				t.Fatalf("segment %d %+v: wrong end", i, s)
			}
			if gap := text[prev:s.Pos]; !Blank(gap) {
				t.Fatalf("text before segment %d is not blank: %q", i, gap)
			}
			for _, tok := range lex(s.Text) {
				if tok.kind == tPunct && tok.text == ";" {
					t.Fatalf("lex(%q) finds a semicolon at %d", s.Text, tok.pos)
				}
			}
			prev = s.End
		}
		if Complete(text) != (len(segs) == 0 || segs[len(segs)-1].Terminated) {
			t.Fatalf("Complete(%q) disagrees with Segments", text)
		}
	})
}
