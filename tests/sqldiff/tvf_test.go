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

// TestWindowTVFDifferential runs TUMBLE, HOP and SESSION window table
// functions (Flink's form, and RisingWave's for TUMBLE) over random
// events with event times out of order (within the default grace, so
// none is late), with a SIGKILL while output flows, and compares each
// result table with SQLite's: TUMBLE with a GROUP BY on the computed
// window start, HOP with a join to the window starts, SESSION with
// gaps-and-islands over each key's sorted times (Kafka Streams merges
// sessions whose times are at most the gap apart; a session's
// window_end is Flink's, its last time + the gap).
func TestWindowTVFDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := start(t, ctx)
	for _, q := range []string{
		`CREATE STREAM ev (k VARCHAR KEY, ts BIGINT, v BIGINT) WITH (KAFKA_TOPIC='ev', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE TABLE tw AS SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS s, MAX(v) AS m
		   FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '10' SECONDS)) GROUP BY window_start, window_end, k`,
		`CREATE TABLE hw AS SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS s, MIN(v) AS m
		   FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '5' SECONDS, INTERVAL '15' SECONDS)) WHERE v % 7 <> 0 GROUP BY window_start, window_end, k`,
		`CREATE TABLE sw AS SELECT k, window_start, window_end, COUNT(*) AS n, SUM(v) AS s
		   FROM TABLE(SESSION(TABLE ev, DESCRIPTOR(ts), INTERVAL '2' SECONDS)) GROUP BY window_start, window_end, k`,
		`CREATE TABLE rw AS SELECT k, window_start AS ws, COUNT(*) AS n FROM TUMBLE(ev, ts, INTERVAL '1 MINUTE')
		   GROUP BY window_start, window_end, k HAVING COUNT(*) > 2`,
	} {
		e.exec(q)
	}
	rng := rand.New(rand.NewPCG(33, 7))
	var script strings.Builder
	script.WriteString("CREATE TABLE ev (k TEXT, ts INTEGER, v INTEGER);\n")
	batch := func(n int) {
		recs := make([]*kgo.Record, n)
		for i := range recs {
			k := fmt.Sprintf("k%d", rng.IntN(8))
			ts := rng.Int64N(400_000)
			v := rng.Int64N(1000)
			recs[i] = &kgo.Record{Topic: "ev", Key: []byte(k), Value: fmt.Appendf(nil, `{"TS":%d,"V":%d}`, ts, v)}
			fmt.Fprintf(&script, "INSERT INTO ev VALUES ('%s', %d, %d);\n", k, ts, v)
		}
		e.produce(recs)
	}
	batch(200)
	batch(200)
	e.waitOutput("TW", 50)
	e.crash()
	batch(200)
	batch(200)

	script.WriteString(`
SELECT '#TW';
SELECT k, ts / 10000 * 10000 AS ws, ts / 10000 * 10000 + 10000, COUNT(*), SUM(v), MAX(v) FROM ev GROUP BY k, ws;
SELECT '#HW';
WITH RECURSIVE starts(s) AS (SELECT 0 UNION ALL SELECT s + 5000 FROM starts WHERE s < 400000)
SELECT k, s, s + 15000, COUNT(*), SUM(v), MIN(v) FROM ev JOIN starts ON s <= ts AND ts < s + 15000 WHERE v % 7 <> 0 GROUP BY k, s;
SELECT '#SW';
WITH o AS (SELECT k, ts, v, CASE WHEN ts - LAG(ts) OVER (PARTITION BY k ORDER BY ts) <= 2000 THEN 0 ELSE 1 END AS fresh FROM ev),
     g AS (SELECT k, ts, v, SUM(fresh) OVER (PARTITION BY k ORDER BY ts ROWS UNBOUNDED PRECEDING) AS grp FROM o)
SELECT k, MIN(ts), MAX(ts) + 2000, COUNT(*), SUM(v) FROM g GROUP BY k, grp;
SELECT '#RW';
SELECT k, ts / 60000 * 60000 AS ws, COUNT(*) FROM ev GROUP BY k, ws HAVING COUNT(*) > 2;
`)
	want := sqlite(t, ctx, script.String())
	if len(want["SW"]) < 100 || len(want["RW"]) < 10 {
		t.Fatalf("input too thin: %d sessions, %d busy minutes", len(want["SW"]), len(want["RW"]))
	}

	e.pull("SELECT k, window_start, window_end, n, s, m FROM tw", want["TW"])
	e.pull("SELECT k, window_start, window_end, n, s, m FROM hw", want["HW"])
	e.pull("SELECT k, window_start, window_end, n, s FROM sw", want["SW"])
	e.pull("SELECT k, ws, n FROM rw", want["RW"])

	e.eventually("topic TW", want["TW"], func() ([]string, error) {
		return e.changelog("TW", 8, keyCols("WINDOW_START", "WINDOW_END", "N", "S", "M"))
	})
	e.eventually("topic HW", want["HW"], func() ([]string, error) {
		return e.changelog("HW", 8, keyCols("WINDOW_START", "WINDOW_END", "N", "S", "M"))
	})
	// A session's key holds its end and start: merged sessions leave
	// tombstones under their old keys.
	e.eventually("topic SW", want["SW"], func() ([]string, error) {
		return e.changelog("SW", 16, keyCols("WINDOW_START", "WINDOW_END", "N", "S"))
	})
	e.eventually("topic RW", want["RW"], func() ([]string, error) {
		return e.changelog("RW", 8, keyCols("WS", "N"))
	})
}
