package pgwire

import (
	"reflect"
	"testing"

	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/sql/splittest"
)

// TestLexAgreesWithSegments checks pgwire's tokenizer against the quoting
// cases every splitter shares (pgwire splits with sql.Segments): it ends
// each quote where the splitter does, so no statement holds a semicolon
// outside its quotes and comments.
func TestLexAgreesWithSegments(t *testing.T) {
	for _, c := range splittest.Cases() {
		for _, s := range c.Statements {
			for _, tok := range lex(s.Text) {
				if tok.kind == tokOp && tok.val == ";" {
					t.Errorf("%s: lex(%q) finds a semicolon at %d the splitter did not cut at", c.Name, s.Text, tok.from)
				}
			}
		}
	}
}

func TestLexQuotes(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []token
	}{
		{`'a\'`, []token{{kind: tokString, val: `a\`, from: 0, to: 4}}},
		{`'it''s'`, []token{{kind: tokString, val: `it's`, from: 0, to: 7}}},
		{`E'it\'s\n'`, []token{{kind: tokString, val: "it's\n", from: 0, to: 10}}},
		{`e'a''b'`, []token{{kind: tokString, val: "a'b", from: 0, to: 7}}},
		{`'open`, []token{{kind: tokString, val: "open", from: 0, to: 5}}},
		{`E'open\'`, []token{{kind: tokString, val: "open'", from: 0, to: 8}}},
		{`"a""b"`, []token{{kind: tokQIdent, val: `a"b`, from: 0, to: 6}}},
		{"`a`", []token{{kind: tokQIdent, val: "a", from: 0, to: 3}}},
		{`"open`, []token{{kind: tokQIdent, val: "open", from: 0, to: 5}}},
		{`name'x'`, []token{{kind: tokIdent, val: "name", from: 0, to: 4}, {kind: tokString, val: "x", from: 4, to: 7}}},
		{"a /* b */ -- c\n$1", []token{{kind: tokIdent, val: "a", from: 0, to: 1}, {kind: tokParam, val: "1", from: 15, to: 17}}},
		{"a /* open", []token{{kind: tokIdent, val: "a", from: 0, to: 1}}},
	} {
		if got := lex(tc.text); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("lex(%q)\n got %+v\nwant %+v", tc.text, got, tc.want)
		}
	}
}

// FuzzLexAgreesWithSegments: on any text, pgwire's tokenizer finds no
// semicolon inside a statement sql.Segments cuts, and every token lies
// within the text.
//
//	go test ./server/pgwire -run '^$' -fuzz FuzzLexAgreesWithSegments
func FuzzLexAgreesWithSegments(f *testing.F) {
	for _, c := range splittest.Cases() {
		f.Add(c.Text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, s := range sql.Segments(text) {
			for _, tok := range lex(s.Text) {
				if tok.from < 0 || tok.to > len(s.Text) || tok.from >= tok.to {
					t.Fatalf("lex(%q): token %+v out of range", s.Text, tok)
				}
				if tok.kind == tokOp && tok.val == ";" {
					t.Fatalf("lex(%q) finds a semicolon at %d", s.Text, tok.from)
				}
			}
		}
	})
}
