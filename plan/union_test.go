package plan_test

import (
	"strings"
	"testing"
)

// TestMergeAndWindowTVFRoundTrip round-trips the topologies of UNION ALL
// (the MERGE node, a source two branches share, a CAST a branch gained)
// and of a window table function (the source's event-time column), as
// persistent and push queries.
func TestMergeAndWindowTVFRoundTrip(t *testing.T) {
	cat := physicalCatalog()
	n := 0
	for _, q := range []string{
		`CREATE STREAM u AS SELECT userid, pageid AS what FROM pageviews WHERE viewtime > 1 UNION ALL SELECT userid, url FROM clicks UNION ALL SELECT userid, 'x' FROM pageviews WHERE viewtime < 0`,
		`CREATE STREAM w AS SELECT userid, amount FROM purchases UNION ALL SELECT userid, viewtime FROM pageviews`,
		`SELECT userid, url FROM clicks UNION ALL SELECT userid, pageid FROM pageviews EMIT CHANGES LIMIT 3`,
		`CREATE TABLE t AS SELECT userid, window_start, COUNT(*) AS n FROM TABLE(HOP(TABLE pageviews, DESCRIPTOR(viewtime), INTERVAL '1' MINUTE, INTERVAL '5' MINUTES)) GROUP BY window_start, window_end, userid`,
	} {
		topo := build(t, cat, q, nil)
		if topo == nil {
			t.Fatalf("%s: did not build", q)
		}
		s := topo.String()
		if strings.HasPrefix(q, "CREATE STREAM") || strings.HasPrefix(q, "SELECT") {
			if !strings.Contains(s, "Merge: UNION ALL") {
				t.Fatalf("%s: no MERGE node:\n%s", q, s)
			}
		} else if !strings.Contains(s, "timestamp: VIEWTIME") {
			t.Fatalf("%s: the source does not read VIEWTIME as its event time:\n%s", q, s)
		}
		roundTrip(t, q, topo)
		n++
	}
	if n != 4 {
		t.Fatalf("%d round trips", n)
	}
}
