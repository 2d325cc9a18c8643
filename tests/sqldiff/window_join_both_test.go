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

// TestWindowJoinBothColumns joins windowed aggregates on both window
// columns (ON … a.window_start = b.window_start AND a.window_end =
// b.window_end, issue 33 point 7) over random bids and asks with event
// times out of order, with a SIGKILL while output flows, and compares
// the result tables with SQLite's: a LEFT join of two HOP aggregates on
// the key and both window columns (the window_end equality is the
// join's residual), and Nexmark q5 with the window's maximum grouped by
// window_start and window_end (keyed by window_start alone: the right
// side of a foreign-key join).
func TestWindowJoinBothColumns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := start(t, ctx)
	for _, q := range []string{
		`CREATE STREAM bids (auction VARCHAR KEY, price BIGINT, ts BIGINT) WITH (KAFKA_TOPIC='bids', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE STREAM asks (auction VARCHAR KEY, price BIGINT, ts BIGINT) WITH (KAFKA_TOPIC='asks', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE lboth WITH (KEY_FORMAT='JSON') AS
		   WITH b AS (SELECT auction, window_start, window_end, COUNT(*) AS n FROM TABLE(HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end),
		        a AS (SELECT auction, window_start, window_end, MIN(price) AS lo FROM TABLE(HOP(TABLE asks, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) WHERE price > 300 GROUP BY auction, window_start, window_end)
		   SELECT b.auction, b.window_start, b.window_end, b.n, a.lo FROM b LEFT JOIN a
		   ON b.auction = a.auction AND b.window_start = a.window_start AND b.window_end = a.window_end`,
		`CREATE TABLE hot2 WITH (KEY_FORMAT='JSON') AS
		   WITH a AS (SELECT auction, window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end),
		        m AS (SELECT window_start, window_end, MAX(n) AS maxn FROM a GROUP BY window_start, window_end)
		   SELECT a.auction, a.window_start, a.window_end, a.n FROM a JOIN m ON a.window_start = m.window_start AND a.window_end = m.window_end WHERE a.n >= m.maxn`,
	} {
		e.exec(q)
	}
	rng := rand.New(rand.NewPCG(33, 76))
	var script strings.Builder
	script.WriteString("CREATE TABLE bids (auction TEXT, price INTEGER, ts INTEGER); CREATE TABLE asks (auction TEXT, price INTEGER, ts INTEGER);\n")
	batch := func(n int) {
		recs := make([]*kgo.Record, n)
		for i := range recs {
			topic := "bids"
			if rng.IntN(3) == 0 {
				topic = "asks"
			}
			k := fmt.Sprintf("k%d", rng.IntN(6))
			// From 10 s on: every time is in two HOP windows.
			ts, p := 10_000+rng.Int64N(190_000), rng.Int64N(1000)
			recs[i] = &kgo.Record{Topic: topic, Key: []byte(k), Value: fmt.Appendf(nil, `{"PRICE":%d,"TS":%d}`, p, ts)}
			fmt.Fprintf(&script, "INSERT INTO %s VALUES ('%s', %d, %d);\n", topic, k, p, ts)
		}
		e.produce(recs)
	}
	batch(300)
	batch(300)
	e.waitOutput("HOT2", 10)
	e.crash()
	batch(300)
	batch(300)
	script.WriteString(`
CREATE VIEW hb AS SELECT auction, price, ts / 5000 * 5000 AS ws FROM bids UNION ALL SELECT auction, price, ts / 5000 * 5000 - 5000 FROM bids;
CREATE VIEW ha AS SELECT auction, price, ts / 5000 * 5000 AS ws FROM asks UNION ALL SELECT auction, price, ts / 5000 * 5000 - 5000 FROM asks;
SELECT '#LBOTH';
WITH b AS (SELECT auction, ws, ws + 10000 AS we, COUNT(*) AS n FROM hb GROUP BY auction, ws),
     a AS (SELECT auction, ws, ws + 10000 AS we, MIN(price) AS lo FROM ha WHERE price > 300 GROUP BY auction, ws)
SELECT b.auction, b.ws, b.we, b.n, a.lo FROM b LEFT JOIN a ON b.auction = a.auction AND b.ws = a.ws AND b.we = a.we;
SELECT '#HOT2';
WITH a AS (SELECT auction, ts / 10000 * 10000 AS ws, ts / 10000 * 10000 + 10000 AS we, COUNT(*) AS n FROM bids GROUP BY auction, ws),
     m AS (SELECT ws, we, MAX(n) AS maxn FROM a GROUP BY ws, we)
SELECT a.auction, a.ws, a.we, a.n FROM a JOIN m ON a.ws = m.ws AND a.we = m.we WHERE a.n >= m.maxn;
`)
	want := sqlite(t, ctx, script.String())
	if len(want["LBOTH"]) < 100 || len(want["HOT2"]) < 20 {
		t.Fatalf("input too thin: %d, %d rows", len(want["LBOTH"]), len(want["HOT2"]))
	}
	nulls := 0
	for _, r := range want["LBOTH"] {
		if strings.HasSuffix(r, "|NULL") {
			nulls++
		}
	}
	if nulls == 0 || nulls == len(want["LBOTH"]) {
		t.Fatalf("LEFT join without both matched and unmatched rows: %d of %d NULL", nulls, len(want["LBOTH"]))
	}
	e.pull("SELECT b_auction, b_window_start, b_window_end, n, lo FROM lboth", want["LBOTH"])
	e.pull("SELECT auction, a_window_start, a_window_end, n FROM hot2", want["HOT2"])
}
