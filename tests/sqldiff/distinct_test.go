package sqldiff

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDistinctAggregateDifferential runs exact COUNT(DISTINCT x) and
// SUM(DISTINCT x), plain and with FILTER (issue 33 point 3), over random
// rows — a stream of two partitions, repartitioned by the GROUP BY
// column, and a table whose updates move rows between groups and change
// their values and whose deletions take them out — and a global one over
// the table, and a windowed one over a stream of events out of order
// (HOP: each row in three windows) and sessions over it (rows bridging
// sessions and moving their starts: their values merge), with a SIGKILL
// while output flows. Each result (a pull
// query, and its topic read as a changelog) must equal SQLite's answer
// to the same SQL over the same input. New statements keep the distinct
// values in a store of their own (EXPLAIN names it; per window for the
// windowed one, per session for the sessions), whose counts must
// survive the crash.
func TestDistinctAggregateDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := start(t, ctx)
	const aggs = `COUNT(*) AS n, COUNT(DISTINCT bidder) AS nb,
	  COUNT(DISTINCT bidder) FILTER (WHERE price < 50) AS nbcheap,
	  COUNT(DISTINCT bidder) FILTER (WHERE price >= 50) AS nbdear,
	  SUM(DISTINCT price) AS sp,
	  SUM(DISTINCT price) FILTER (WHERE price >= 50) AS spdear`
	for _, q := range []string{
		`CREATE STREAM bids (id VARCHAR KEY, g VARCHAR, bidder VARCHAR, price BIGINT) WITH (KAFKA_TOPIC='bids', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE acc (id VARCHAR PRIMARY KEY, g VARCHAR, bidder VARCHAR, price BIGINT) WITH (KAFKA_TOPIC='acc', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE sdist AS SELECT g, ` + aggs + ` FROM bids GROUP BY g`,
		`CREATE TABLE tdist AS SELECT g, ` + aggs + ` FROM acc GROUP BY g`,
		`CREATE TABLE gdist AS SELECT COUNT(DISTINCT bidder) AS nb, SUM(DISTINCT price) FILTER (WHERE price < 30) AS sp FROM acc`,
		`CREATE STREAM wbids (id VARCHAR KEY, g VARCHAR, bidder VARCHAR, price BIGINT, ts BIGINT) WITH (KAFKA_TOPIC='wbids', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE wdist AS SELECT g, window_start, window_end, ` + aggs + `
		   FROM TABLE(HOP(TABLE wbids, DESCRIPTOR(ts), INTERVAL '5' SECONDS, INTERVAL '15' SECONDS)) GROUP BY window_start, window_end, g`,
		// Sessions of a second: rows out of order bridge sessions and
		// move their starts earlier, merging their distinct values.
		`CREATE TABLE sesdist AS SELECT g, window_start, window_end, ` + aggs + `
		   FROM TABLE(SESSION(TABLE wbids, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, g`,
	} {
		e.exec(q)
	}
	plan, err := e.rows("EXPLAIN SELECT g, COUNT(DISTINCT bidder) FROM acc GROUP BY g EMIT CHANGES")
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(plan, "\n"); !strings.Contains(text, "distinct values of COUNT_DISTINCT(BIDDER)") {
		t.Errorf("EXPLAIN shows no store of distinct values:\n%s", text)
	}
	plan, err = e.rows("EXPLAIN SELECT g, COUNT(DISTINCT bidder) FROM wbids WINDOW HOPPING (SIZE 15 SECONDS, ADVANCE BY 5 SECONDS) GROUP BY g EMIT CHANGES")
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(plan, "\n"); !strings.Contains(text, "distinct values of COUNT_DISTINCT(BIDDER)") {
		t.Errorf("EXPLAIN of a windowed aggregation shows no store of distinct values:\n%s", text)
	}
	plan, err = e.rows("EXPLAIN SELECT g, COUNT(DISTINCT bidder) FROM wbids WINDOW SESSION (1 SECOND) GROUP BY g EMIT CHANGES")
	if err != nil {
		t.Fatal(err)
	}
	if text := strings.Join(plan, "\n"); !strings.Contains(text, "distinct values of COUNT_DISTINCT(BIDDER)") {
		t.Errorf("EXPLAIN of a session aggregation shows no store of distinct values:\n%s", text)
	}

	rng := rand.New(rand.NewPCG(33, 15))
	var script strings.Builder
	script.WriteString("CREATE TABLE bids (id TEXT, g TEXT, bidder TEXT, price INTEGER); CREATE TABLE acc (id TEXT PRIMARY KEY, g TEXT, bidder TEXT, price INTEGER);\n")
	script.WriteString("CREATE TABLE wbids (id TEXT, g TEXT, bidder TEXT, price INTEGER, ts INTEGER);\n")
	sqlValue := func(s string) string {
		if s == "null" {
			return "NULL"
		}
		return s
	}
	row := func() (g, bidder, price string) {
		g = fmt.Sprintf("g%d", rng.IntN(7))
		bidder, price = "null", "null"
		if rng.IntN(10) != 0 {
			bidder = fmt.Sprintf(`"b%d"`, rng.IntN(150))
		}
		if rng.IntN(12) != 0 {
			price = fmt.Sprint(rng.IntN(20) * 5)
		}
		return g, bidder, price
	}
	batch := func(n int) {
		var recs []*kgo.Record
		for range n {
			if rng.IntN(3) == 0 {
				// Event times out of order, within the default grace.
				id, ts := fmt.Sprintf("w%d", rng.IntN(1000)), rng.IntN(100_000)
				g, bidder, price := row()
				recs = append(recs, &kgo.Record{Topic: "wbids", Key: []byte(id), Value: fmt.Appendf(nil, `{"G":"%s","BIDDER":%s,"PRICE":%s,"TS":%d}`, g, bidder, price, ts)})
				fmt.Fprintf(&script, "INSERT INTO wbids VALUES ('%s', '%s', %s, %s, %d);\n", id, g, strings.ReplaceAll(sqlValue(bidder), `"`, "'"), sqlValue(price), ts)
				continue
			}
			if rng.IntN(2) == 0 {
				id := fmt.Sprintf("e%d", rng.IntN(1000))
				g, bidder, price := row()
				recs = append(recs, &kgo.Record{Topic: "bids", Key: []byte(id), Value: fmt.Appendf(nil, `{"G":"%s","BIDDER":%s,"PRICE":%s}`, g, bidder, price)})
				fmt.Fprintf(&script, "INSERT INTO bids VALUES ('%s', '%s', %s, %s);\n", id, g, strings.ReplaceAll(sqlValue(bidder), `"`, "'"), sqlValue(price))
				continue
			}
			id := fmt.Sprintf("a%d", rng.IntN(150))
			if rng.IntN(5) == 0 {
				recs = append(recs, &kgo.Record{Topic: "acc", Key: []byte(id)})
				fmt.Fprintf(&script, "DELETE FROM acc WHERE id = '%s';\n", id)
				continue
			}
			g, bidder, price := row()
			recs = append(recs, &kgo.Record{Topic: "acc", Key: []byte(id), Value: fmt.Appendf(nil, `{"G":"%s","BIDDER":%s,"PRICE":%s}`, g, bidder, price)})
			fmt.Fprintf(&script, "INSERT OR REPLACE INTO acc VALUES ('%s', '%s', %s, %s);\n", id, g, strings.ReplaceAll(sqlValue(bidder), `"`, "'"), sqlValue(price))
		}
		e.produce(recs)
	}
	for range 3 {
		batch(400)
	}
	e.waitOutput("TDIST", 100)
	e.crash()
	for range 3 {
		batch(400)
	}
	const oracle = `COUNT(*), COUNT(DISTINCT bidder),
	  COUNT(DISTINCT bidder) FILTER (WHERE price < 50),
	  COUNT(DISTINCT bidder) FILTER (WHERE price >= 50),
	  SUM(DISTINCT price),
	  SUM(DISTINCT price) FILTER (WHERE price >= 50)`
	script.WriteString(`
SELECT '#SDIST';
SELECT g, ` + oracle + ` FROM bids GROUP BY g;
SELECT '#TDIST';
SELECT g, ` + oracle + ` FROM acc GROUP BY g;
SELECT '#GDIST';
SELECT COUNT(DISTINCT bidder), SUM(DISTINCT price) FILTER (WHERE price < 30) FROM acc;
SELECT '#WDIST';
WITH RECURSIVE starts(s) AS (SELECT 0 UNION ALL SELECT s + 5000 FROM starts WHERE s < 100000)
SELECT g, s, s + 15000, ` + oracle + ` FROM wbids JOIN starts ON s <= ts AND ts < s + 15000 GROUP BY g, s;
SELECT '#SESDIST';
WITH o AS (SELECT *, ts - LAG(ts) OVER (PARTITION BY g ORDER BY ts) AS d FROM wbids),
  s AS (SELECT *, SUM(CASE WHEN d IS NULL OR d > 1000 THEN 1 ELSE 0 END) OVER (PARTITION BY g ORDER BY ts ROWS UNBOUNDED PRECEDING) AS sid FROM o)
SELECT g, MIN(ts), MAX(ts) + 1000, ` + oracle + ` FROM s GROUP BY g, sid;
`)
	want := sqlite(t, ctx, script.String())
	if len(want["SDIST"]) != 7 || len(want["TDIST"]) < 5 || len(want["GDIST"]) != 1 || len(want["WDIST"]) < 100 || len(want["SESDIST"]) < 100 {
		t.Fatalf("input too thin: %v", want)
	}

	cols := "n, nb, nbcheap, nbdear, sp, spdear"
	e.pull("SELECT g, "+cols+" FROM sdist", want["SDIST"])
	e.pull("SELECT g, "+cols+" FROM tdist", want["TDIST"])
	e.pull("SELECT nb, sp FROM gdist", want["GDIST"])
	e.pull("SELECT g, window_start, window_end, "+cols+" FROM wdist", want["WDIST"])
	e.pull("SELECT g, window_start, window_end, "+cols+" FROM sesdist", want["SESDIST"])

	upper := strings.Split(strings.ToUpper(cols), ", ")
	e.eventually("topic SDIST", want["SDIST"], func() ([]string, error) { return e.changelog("SDIST", 0, keyCols(upper...)) })
	e.eventually("topic TDIST", want["TDIST"], func() ([]string, error) { return e.changelog("TDIST", 0, keyCols(upper...)) })
	// Its key ends with the window's start (8 bytes).
	e.eventually("topic WDIST", want["WDIST"], func() ([]string, error) {
		return e.changelog("WDIST", 8, keyCols(append([]string{"WINDOW_START", "WINDOW_END"}, upper...)...))
	})
	// A session's key ends with its end and start (8 bytes each); merged
	// sessions' keys end in tombstones.
	e.eventually("topic SESDIST", want["SESDIST"], func() ([]string, error) {
		return e.changelog("SESDIST", 16, keyCols(append([]string{"WINDOW_START", "WINDOW_END"}, upper...)...))
	})
}
