package sqldiff

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestWindowJoinDifferential joins windowed aggregates (window table
// functions in CTEs) over random bids and asks with event times out of
// order, with a SIGKILL while output flows, and compares the result
// tables with SQLite's joins of GROUP BYs: two aggregates of different
// streams joined on the key and window_start (a primary-key join of the
// derived tables; INNER, and LEFT with the right's row NULL until its
// window has one), and Nexmark q5 — the auctions with the most bids per
// window, a foreign-key join of each auction's count to the window's
// maximum, filtered — whose rows move as the counts change.
func TestWindowJoinDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := start(t, ctx)
	for _, q := range []string{
		`CREATE STREAM bids (auction VARCHAR KEY, price BIGINT, ts BIGINT) WITH (KAFKA_TOPIC='bids', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE STREAM asks (auction VARCHAR KEY, price BIGINT, ts BIGINT) WITH (KAFKA_TOPIC='asks', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE spread WITH (KEY_FORMAT='JSON') AS
		   WITH b AS (SELECT auction, window_start, window_end, COUNT(*) AS n, MAX(price) AS hi FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end),
		        a AS (SELECT auction, window_start, MIN(price) AS lo FROM TABLE(TUMBLE(TABLE asks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end)
		   SELECT b.auction, b.window_start, b.n, b.hi, a.lo FROM b JOIN a ON b.auction = a.auction AND b.window_start = a.window_start`,
		`CREATE TABLE lspread WITH (KEY_FORMAT='JSON') AS
		   SELECT b.auction, b.window_start, b.n, a.lo FROM
		     (SELECT auction, window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end) b
		   LEFT JOIN (SELECT auction, window_start, MIN(price) AS lo FROM TABLE(TUMBLE(TABLE asks, DESCRIPTOR(ts), INTERVAL '10' SECOND)) WHERE price > 300 GROUP BY auction, window_start, window_end) a
		   ON b.auction = a.auction AND b.window_start = a.window_start`,
		`CREATE TABLE hot WITH (KEY_FORMAT='JSON') AS
		   WITH a AS (SELECT auction, window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY auction, window_start, window_end),
		        m AS (SELECT window_start, MAX(n) AS maxn FROM a GROUP BY window_start)
		   SELECT a.auction, a.window_start, a.n FROM a JOIN m ON a.window_start = m.window_start WHERE a.n >= m.maxn`,
	} {
		e.exec(q)
	}
	rng := rand.New(rand.NewPCG(33, 75))
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
			ts, p := rng.Int64N(200_000), rng.Int64N(1000)
			recs[i] = &kgo.Record{Topic: topic, Key: []byte(k), Value: fmt.Appendf(nil, `{"PRICE":%d,"TS":%d}`, p, ts)}
			fmt.Fprintf(&script, "INSERT INTO %s VALUES ('%s', %d, %d);\n", topic, k, p, ts)
		}
		e.produce(recs)
	}
	batch(300)
	batch(300)
	e.waitOutput("HOT", 10)
	e.crash()
	batch(300)
	batch(300)
	script.WriteString(`
SELECT '#SPREAD';
WITH b AS (SELECT auction, ts / 10000 * 10000 AS ws, COUNT(*) AS n, MAX(price) AS hi FROM bids GROUP BY auction, ws),
     a AS (SELECT auction, ts / 10000 * 10000 AS ws, MIN(price) AS lo FROM asks GROUP BY auction, ws)
SELECT b.auction, b.ws, b.n, b.hi, a.lo FROM b JOIN a ON b.auction = a.auction AND b.ws = a.ws;
SELECT '#LSPREAD';
WITH b AS (SELECT auction, ts / 10000 * 10000 AS ws, COUNT(*) AS n FROM bids GROUP BY auction, ws),
     a AS (SELECT auction, ts / 10000 * 10000 AS ws, MIN(price) AS lo FROM asks WHERE price > 300 GROUP BY auction, ws)
SELECT b.auction, b.ws, b.n, a.lo FROM b LEFT JOIN a ON b.auction = a.auction AND b.ws = a.ws;
SELECT '#HOT';
WITH a AS (SELECT auction, ts / 10000 * 10000 AS ws, COUNT(*) AS n FROM bids GROUP BY auction, ws),
     m AS (SELECT ws, MAX(n) AS maxn FROM a GROUP BY ws)
SELECT a.auction, a.ws, a.n FROM a JOIN m ON a.ws = m.ws WHERE a.n >= m.maxn;
`)
	want := sqlite(t, ctx, script.String())
	if len(want["SPREAD"]) < 50 || len(want["HOT"]) < 20 {
		t.Fatalf("input too thin: %d, %d rows", len(want["SPREAD"]), len(want["HOT"]))
	}
	e.pull("SELECT b_auction, b_window_start, n, hi, lo FROM spread", want["SPREAD"])
	e.pull("SELECT auction, a_window_start, n FROM hot", want["HOT"])
	e.pull("SELECT b_auction, b_window_start, n, lo FROM lspread", want["LSPREAD"])
	// The topics: a row that left the result (an auction no longer the
	// window's leader) is a tombstone.
	keyed := func(keys, vals []string) func(string, map[string]any) string {
		return func(k string, v map[string]any) string {
			var km map[string]any
			if err := json.Unmarshal([]byte(k), &km); err != nil {
				return "bad key " + k
			}
			var parts []string
			for _, n := range keys {
				parts = append(parts, text(km[n]))
			}
			for _, n := range vals {
				parts = append(parts, text(v[n]))
			}
			return strings.Join(parts, "|")
		}
	}
	e.eventually("topic HOT", want["HOT"], func() ([]string, error) {
		return e.changelog("HOT", 0, keyed([]string{"AUCTION", "A_WINDOW_START"}, []string{"N"}))
	})
	e.eventually("topic SPREAD", want["SPREAD"], func() ([]string, error) {
		return e.changelog("SPREAD", 0, keyed([]string{"B_AUCTION", "B_WINDOW_START"}, []string{"N", "HI", "LO"}))
	})
}
