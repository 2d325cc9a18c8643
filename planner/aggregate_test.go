package planner_test

import (
	"testing"

	"github.com/sqlstreams/sqlstreams/planner"
)

// TestNeedsRepartition checks when a GROUP BY gets a repartition topic:
// only a stream already keyed by exactly the group columns is aggregated
// where it is; a table's aggregation always repartitions.
func TestNeedsRepartition(t *testing.T) {
	cat := testCatalog(t)
	for _, tc := range []struct {
		sql         string
		repartition bool
		fromTable   bool
	}{
		{"SELECT userid, COUNT(*) AS n FROM pageviews GROUP BY userid EMIT CHANGES", false, false},
		{"SELECT userid, COUNT(*) AS n FROM pageviews WHERE viewtime > 0 GROUP BY userid EMIT CHANGES", false, false},
		{"SELECT COUNT(*) AS n FROM pageviews GROUP BY userid EMIT CHANGES", false, false},
		{"SELECT region, shop, SUM(amount) AS s FROM orders GROUP BY region, shop EMIT CHANGES", false, false},
		// Another column than the key.
		{"SELECT pageid, COUNT(*) AS n FROM pageviews GROUP BY pageid EMIT CHANGES", true, false},
		{"SELECT userid, pageid, COUNT(*) AS n FROM pageviews GROUP BY userid, pageid EMIT CHANGES", true, false},
		{"SELECT region, SUM(amount) AS s FROM orders GROUP BY region EMIT CHANGES", true, false},
		{"SELECT url, COUNT(*) AS n FROM clicks GROUP BY url EMIT CHANGES", true, false},
		// An expression, even of the key alone.
		{"SELECT UCASE(userid) AS u, COUNT(*) AS n FROM pageviews GROUP BY UCASE(userid) EMIT CHANGES", true, false},
		{"SELECT id + 1 AS i, COUNT(*) AS n FROM events GROUP BY id + 1 EMIT CHANGES", true, false},
		// A table, even grouped by its key.
		{"SELECT userid, COUNT(*) AS n FROM users GROUP BY userid EMIT CHANGES", true, true},
		{"SELECT region, COUNT(*) AS n FROM users GROUP BY region EMIT CHANGES", true, true},
		{"SELECT region, shop, SUM(qty) AS q FROM stock GROUP BY region, shop EMIT CHANGES", true, true},
	} {
		t.Run(tc.sql, func(t *testing.T) {
			q := selectQuery(t, cat, tc.sql)
			agg := find[*planner.Aggregate](t, q.Root)
			if agg.FromTable != tc.fromTable {
				t.Errorf("FromTable %v, want %v", agg.FromTable, tc.fromTable)
			}
			if got := agg.NeedsRepartition(); got != tc.repartition {
				t.Errorf("NeedsRepartition %v, want %v\n%s", got, tc.repartition, planner.Explain(q.Root))
			}
		})
	}
}
