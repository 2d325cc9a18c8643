package planner_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/sqlstreams/sqlstreams/planner"
)

// keyFilter renders PullKeyFilter's answer: "scan" for the whole table,
// else the points and the range the pull query reads.
func keyFilter(q *planner.Query) string {
	f, ok := planner.PullKeyFilter(q)
	if !ok {
		return "scan"
	}
	var parts []string
	if f.Points != nil {
		pts := make([]string, len(f.Points))
		for i, p := range f.Points {
			pts[i] = p.String()
		}
		parts = append(parts, "points "+strings.Join(pts, ", "))
	}
	if f.Lower != nil || f.Upper != nil {
		lo, hi := "(-inf", "+inf)"
		if f.Lower != nil {
			lo = pick(f.LowerIncl, "[", "(") + f.Lower.String()
		}
		if f.Upper != nil {
			hi = f.Upper.String() + pick(f.UpperIncl, "]", ")")
		}
		parts = append(parts, "range "+lo+", "+hi)
	}
	return strings.Join(parts, "; ")
}

func pick(incl bool, in, ex string) string {
	if incl {
		return in
	}
	return ex
}

// TestPullKeyFilter checks which keys a pull query's WHERE lets it read
// instead of scanning the whole table. The WHERE is applied to the rows
// read anyway, so the filter may be looser than the WHERE, never tighter.
func TestPullKeyFilter(t *testing.T) {
	cat := testCatalog(t)
	for _, tc := range []struct {
		where string // over USERS, keyed by USERID STRING
		want  string
	}{
		{"", "scan"},
		// Points.
		{"userid = 'a'", "points 'a'"},
		{"'a' = userid", "points 'a'"},
		{"userid IN ('a', 'b', 'c')", "points 'a', 'b', 'c'"},
		{"userid NOT IN ('a')", "scan"},
		{"userid IN ('a', region)", "scan"},
		// Ranges; a literal on the left flips the comparison.
		{"userid < 'm'", "range (-inf, 'm')"},
		{"userid <= 'm'", "range (-inf, 'm']"},
		{"userid > 'm'", "range ('m', +inf)"},
		{"userid >= 'm'", "range ['m', +inf)"},
		{"'m' > userid", "range (-inf, 'm')"},
		{"'m' >= userid", "range (-inf, 'm']"},
		{"'m' < userid", "range ('m', +inf)"},
		{"'m' <= userid", "range ['m', +inf)"},
		{"userid BETWEEN 'b' AND 'd'", "range ['b', 'd']"},
		{"userid NOT BETWEEN 'b' AND 'd'", "scan"},
		{"userid BETWEEN 'b' AND region", "scan"},
		// Conjunctions combine; the first bound of each side counts.
		{"userid >= 'b' AND userid < 'd'", "range ['b', 'd')"},
		{"'b' < userid AND 'd' >= userid", "range ('b', 'd']"},
		{"userid > 'b' AND level > 3 AND userid <= 'd'", "range ('b', 'd']"},
		{"level > 3 AND userid = 'a'", "points 'a'"},
		{"(userid >= 'b' AND region = 'eu') AND userid < 'd'", "range ['b', 'd')"},
		{"userid > 'b' AND userid > 'c'", "range ('b', +inf)"},
		// Predicates that do not bound the key alone.
		{"region = 'eu'", "scan"},
		{"level > 3", "scan"},
		{"userid = region", "scan"},
		{"UCASE(userid) = 'A'", "scan"},
		{"userid <> 'a'", "scan"},
		{"userid LIKE 'a%'", "scan"},
		{"userid = 'a' OR userid = 'b'", "scan"},
		{"NOT (userid = 'a')", "scan"},
		// NULLs match no key: they bound nothing (an untyped NULL in a
		// comparison is refused, as ksqlDB does; a typed one binds).
		{"userid = CAST(NULL AS STRING)", "scan"},
		{"CAST(NULL AS STRING) = userid", "scan"},
		{"userid > CAST(NULL AS STRING)", "scan"},
		{"userid > CAST(NULL AS STRING) AND userid < 'm'", "range (-inf, 'm')"},
		{"userid BETWEEN NULL AND 'm'", "scan"},
		{"userid BETWEEN 'a' AND NULL", "scan"},
	} {
		t.Run(tc.where, func(t *testing.T) {
			text := "SELECT * FROM users"
			if tc.where != "" {
				text += " WHERE " + tc.where
			}
			q := selectQuery(t, cat, text)
			if got := keyFilter(q); got != tc.want {
				t.Errorf("%s: key filter %s, want %s", text, got, tc.want)
			}
		})
	}
	// Other tables and query shapes.
	for _, tc := range []struct {
		sql, want string
	}{
		{"SELECT * FROM items WHERE id = 5", "points 5"},
		{"SELECT * FROM items WHERE id IN (1, 2)", "points 1, 2"},
		{"SELECT * FROM items WHERE 7 <= id", "range [7, +inf)"},
		{"SELECT name FROM items WHERE id = 5 LIMIT 1", "points 5"},
		{"SELECT userid, UCASE(region) AS r FROM users WHERE userid = 'a'", "points 'a'"},
		// Two key columns: the filter does not apply.
		{"SELECT * FROM stock WHERE region = 'eu'", "scan"},
		{"SELECT * FROM stock WHERE region = 'eu' AND shop = 's1'", "scan"},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			q := selectQuery(t, cat, tc.sql)
			if got := keyFilter(q); got != tc.want {
				t.Errorf("key filter %s, want %s", got, tc.want)
			}
		})
	}
}

// TestPullWindowFilter: what a pull query's WHERE says about WINDOWSTART
// of a windowed table narrows the window store's scan.
func TestPullWindowFilter(t *testing.T) {
	cat := testCatalog(t)
	for _, tc := range []struct{ where, want string }{
		{"", "scan"},
		{"userid = 'a'", "scan"},
		{"WINDOWSTART = 60000", "[60000, 60000]"},
		{"userid = 'a' AND WINDOWSTART >= 60000", "[60000, +inf]"},
		{"WINDOWSTART > 60000 AND WINDOWSTART < 180000", "[60001, 179999]"},
		{"180000 >= WINDOWSTART AND 60000 <= WINDOWSTART", "[60000, 180000]"},
		{"WINDOWSTART BETWEEN 0 AND 120000 AND WINDOWSTART >= 60000", "[60000, 120000]"},
		{"WINDOWSTART NOT BETWEEN 0 AND 120000", "scan"},
		{"WINDOWEND = 120000", "scan"},
		{"WINDOWSTART = 60000 OR WINDOWSTART = 120000", "scan"},
		{"WINDOWSTART > 5 AND WINDOWSTART < 3", "[6, 2]"},
	} {
		text := "SELECT * FROM permin"
		if tc.where != "" {
			text += " WHERE " + tc.where
		}
		q := selectQuery(t, cat, text)
		got := "scan"
		if lo, hi, ok := planner.PullWindowFilter(q); ok {
			b := func(v int64, inf string) string {
				if v == math.MinInt64 || v == math.MaxInt64 {
					return inf
				}
				return strconv.FormatInt(v, 10)
			}
			got = "[" + b(lo, "-inf") + ", " + b(hi, "+inf") + "]"
		}
		if got != tc.want {
			t.Errorf("%s: window filter %s, want %s", text, got, tc.want)
		}
	}
}
