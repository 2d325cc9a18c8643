package pgwire

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/sql"
)

// BenchmarkSimpleTemplate measures what a simple-protocol pull query costs
// pgwire before the engine sees it: splitting the query string into
// statements and lexing the statement for the pull-query template.
//
//	go test ./server/pgwire -run '^$' -bench SimpleTemplate
func BenchmarkSimpleTemplate(b *testing.B) {
	const q = "SELECT level, region FROM users WHERE userid = 'u4711' /* point */;"
	c := &conn{}
	b.ReportAllocs()
	for b.Loop() {
		stmts := sql.Segments(q)
		c.simpleText = ""
		c.simpleTemplate(stmts[0].Text)
	}
}

// BenchmarkAnalyzeParams measures the lexing of a prepared statement's
// text for its $n placeholders (the extended protocol's Parse).
func BenchmarkAnalyzeParams(b *testing.B) {
	const q = "SELECT level FROM users WHERE userid = $1 AND region <> 'it''s' -- x\n"
	b.ReportAllocs()
	for b.Loop() {
		_ = lex(q)
	}
}
