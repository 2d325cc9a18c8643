package main

// This file is the shell's tab completion. The word under the cursor is
// completed, case-insensitively, from ksqlDB keywords, the server's
// function names, the stream and table names it knows and their column
// names, and, inside a quoted string, the query property names. What the
// server knows is kept in a catalog the shell refreshes between
// statements (once per connection for functions, after each CREATE or
// DROP for sources and columns); complete itself is a pure function.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/sqlstreams/sqlstreams/engine"
)

// completionKeywords are the ksqlDB words offered at any position; the
// console's completion endpoint offers the same ones.
var completionKeywords = engine.CompletionKeywords

// completionProperties are the property names offered inside quotes, as
// in SET 'auto.offset.reset'='earliest'.
var completionProperties = engine.CompletionProperties

// sourceWords are the words after which a stream or table name comes.
var sourceWords = map[string]bool{
	"FROM": true, "JOIN": true, "DESCRIBE": true, "EXTENDED": true, "INTO": true,
	"STREAM": true, "TABLE": true, "EXISTS": true, "PRINT": true, "EXPLAIN": true,
}

// catalogSnapshot is what the server knows that completion offers.
type catalogSnapshot struct {
	functions []string
	sources   []string            // stream and table names
	columns   map[string][]string // by upper-cased source name
}

// complete returns the completions of the word that ends at pos in line
// (pos counts runes) and how many runes of it are typed. A candidate is
// the whole word. With nothing typed it offers stream and table names
// where one belongs and property names inside a quote, nothing elsewhere.
func complete(line []rune, pos int, cat catalogSnapshot) (candidates []string, typed int) {
	pos = min(max(pos, 0), len(line))
	start := pos
	for start > 0 && isCompletionRune(line[start-1]) {
		start--
	}
	word := string(line[start:pos])
	typed = pos - start
	quoted := start > 0 && line[start-1] == '\''

	var pool []string
	switch {
	case quoted:
		pool = completionProperties
	case word == "":
		prev := keywords(string(line[:start]), -1)
		if len(prev) == 0 || !sourceWords[prev[len(prev)-1]] {
			return nil, 0
		}
		pool = cat.sources
	default:
		pool = slices.Concat(completionKeywords, cat.functions, cat.sources, columnsFor(line, cat))
	}

	lower := word != "" && word == strings.ToLower(word) && !quoted
	seen := map[string]bool{}
	for _, c := range pool {
		if !quoted && strings.ContainsRune(c, '.') {
			continue
		}
		if len(c) < len(word) || !strings.EqualFold(c[:len(word)], word) {
			continue
		}
		if lower && isKeyword(c) {
			c = strings.ToLower(c) // "sel" completes to "select"
		}
		if !seen[c] {
			seen[c] = true
			candidates = append(candidates, c)
		}
	}
	sort.Strings(candidates)
	return candidates, typed
}

// columnsFor returns the column names of the sources named in line, or
// those of every known source when line names none.
func columnsFor(line []rune, cat catalogSnapshot) []string {
	var named, all []string
	words := map[string]bool{}
	for _, w := range keywords(string(line), -1) {
		words[w] = true
	}
	for src, cols := range cat.columns {
		all = append(all, cols...)
		if words[strings.ToUpper(src)] {
			named = append(named, cols...)
		}
	}
	if len(named) > 0 {
		return named
	}
	return all
}

func isKeyword(w string) bool { return slices.Contains(completionKeywords, w) }

// isCompletionRune reports whether r belongs to a word being completed;
// dots belong so that property names complete.
func isCompletionRune(r rune) bool {
	return r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// completer is the shell's readline.AutoCompleter. Readline calls Do on
// its own goroutine, so the catalog sits behind a mutex.
type completer struct {
	mu  sync.Mutex
	cat catalogSnapshot

	functionsOf *pgx.Conn // the connection functions were fetched on
	stale       bool      // sources must be fetched again

	// http, when set, is the server's REST address: the words come from
	// its completion endpoint (the one the web console uses) in one
	// request; on failure they come over the Postgres connection.
	http string
}

// Do implements readline.AutoCompleter: it returns what to append to the
// typed part of each candidate. A sole candidate gets a space after it
// (a closing quote for a property) so typing can go on.
func (c *completer) Do(line []rune, pos int) ([][]rune, int) {
	c.mu.Lock()
	cat := c.cat
	c.mu.Unlock()
	cands, typed := complete(line, pos, cat)
	out := make([][]rune, 0, len(cands))
	for _, cand := range cands {
		out = append(out, []rune(cand)[typed:])
	}
	if len(out) == 1 {
		end := " "
		if strings.ContainsRune(cands[0], '.') {
			end = "'"
		}
		out[0] = append(out[0], []rune(end)...)
	}
	return out, typed
}

// catalogTimeout bounds each statement the shell sends for completion.
const catalogTimeout = 5 * time.Second

// refresh fetches what changed since the last call over conn: function
// names when conn is new, stream, table and column names when they may
// have changed. Failures leave the old names in place.
func (c *completer) refresh(conn *pgx.Conn) {
	if conn == nil || conn.IsClosed() {
		return
	}
	c.mu.Lock()
	newConn, stale := c.functionsOf != conn, c.stale
	c.mu.Unlock()
	if c.http != "" && (newConn || stale) {
		if cat, err := fetchCompletions(c.http); err == nil {
			c.mu.Lock()
			c.cat, c.functionsOf, c.stale = cat, conn, false
			c.mu.Unlock()
			return
		}
	}
	if newConn {
		if fns, err := column(conn, "SHOW FUNCTIONS", "Name"); err == nil {
			c.mu.Lock()
			c.cat.functions, c.functionsOf = fns, conn
			c.mu.Unlock()
		}
	}
	if !newConn && !stale {
		return
	}
	var sources []string
	for _, q := range []struct{ stmt, col string }{{"SHOW STREAMS", "Stream Name"}, {"SHOW TABLES", "Table Name"}} {
		names, err := column(conn, q.stmt, q.col)
		if err != nil {
			return
		}
		sources = append(sources, names...)
	}
	columns := map[string][]string{}
	for _, src := range sources {
		if cols, err := column(conn, "DESCRIBE "+quoteIdent(src), "Field"); err == nil {
			columns[strings.ToUpper(src)] = cols
		}
	}
	c.mu.Lock()
	c.cat.sources, c.cat.columns, c.stale = sources, columns, false
	c.mu.Unlock()
}

// completionsPath is the server's completion endpoint (server/console).
const completionsPath = "/console/api/completions"

// fetchCompletions reads the words to complete from the server's REST
// address (host:port, or a URL with its scheme).
func fetchCompletions(addr string) (catalogSnapshot, error) {
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	ctx, cancel := context.WithTimeout(context.Background(), catalogTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+completionsPath, nil)
	if err != nil {
		return catalogSnapshot{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return catalogSnapshot{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return catalogSnapshot{}, fmt.Errorf("%s: %s", completionsPath, resp.Status)
	}
	var words engine.Completions
	if err := json.NewDecoder(resp.Body).Decode(&words); err != nil {
		return catalogSnapshot{}, fmt.Errorf("%s: %w", completionsPath, err)
	}
	cat := catalogSnapshot{functions: words.Functions, columns: map[string][]string{}}
	for _, s := range words.Sources {
		cat.sources = append(cat.sources, s.Name)
		cat.columns[strings.ToUpper(s.Name)] = s.Columns
	}
	return cat, nil
}

// invalidate marks the sources stale after a statement that may have
// changed them.
func (c *completer) invalidate() {
	c.mu.Lock()
	c.stale = true
	c.mu.Unlock()
}

// changesSources reports whether stmt may create or drop a stream or
// table.
func changesSources(stmt string) bool {
	w := keywords(stmt, 1)
	return len(w) == 1 && (w[0] == "CREATE" || w[0] == "DROP")
}

// quoteIdent quotes name unless it is a plain upper-case identifier.
func quoteIdent(name string) string {
	plain := name != ""
	for _, r := range name {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			plain = false
		}
	}
	if plain && !(name[0] >= '0' && name[0] <= '9') {
		return name
	}
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// column runs stmt and returns the values of its column named name.
func column(conn *pgx.Conn, stmt, name string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), catalogTimeout)
	defer cancel()
	results, err := conn.PgConn().Exec(ctx, stmt).ReadAll()
	if err != nil {
		return nil, err
	}
	if len(results) == 0 {
		return nil, nil
	}
	res := results[0]
	if res.Err != nil {
		return nil, res.Err
	}
	idx := -1
	for i, f := range res.FieldDescriptions {
		if f.Name == name {
			idx = i
		}
	}
	var out []string
	for _, v := range res.Rows {
		if idx >= 0 && idx < len(v) && v[idx] != nil {
			out = append(out, string(v[idx]))
		}
	}
	return out, nil
}
