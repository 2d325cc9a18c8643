package sqldiff

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestWindowOfWindowDifferential aggregates windowed aggregations (window
// table functions in CTEs and derived tables) by their window, as Nexmark
// q5 and q7 do — how many keys each window has, their total, the largest
// and smallest count (MIN and MAX over a table) — over random events out
// of order, with a SIGKILL while output flows, and compares the results
// with SQLite's GROUP BY of a GROUP BY. Every change of a key's window
// takes its old count back out.
func TestWindowOfWindowDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := start(t, ctx)
	for _, q := range []string{
		`CREATE STREAM ev (k VARCHAR KEY, ts BIGINT, v BIGINT) WITH (KAFKA_TOPIC='ev', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE TABLE tw AS WITH a AS (SELECT k, window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '10' SECONDS)) GROUP BY k, window_start, window_end)
		   SELECT window_start, COUNT(*) AS keys, SUM(n) AS total, MAX(n) AS hi, MIN(n) AS lo FROM a GROUP BY window_start`,
		`CREATE TABLE hw AS SELECT ws, COUNT(*) AS keys, MAX(s) AS hi FROM
		   (SELECT k, window_start AS ws, SUM(v) AS s FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '5' SECONDS, INTERVAL '15' SECONDS)) WHERE v % 7 <> 0 GROUP BY k, window_start, window_end) x
		   WHERE s > 100 GROUP BY ws`,
	} {
		e.exec(q)
	}
	rng := rand.New(rand.NewPCG(33, 71))
	var script strings.Builder
	script.WriteString("CREATE TABLE ev (k TEXT, ts INTEGER, v INTEGER);\n")
	batch := func(n int) {
		recs := make([]*kgo.Record, n)
		for i := range recs {
			k := fmt.Sprintf("k%d", rng.IntN(12))
			ts := rng.Int64N(300_000)
			v := rng.Int64N(1000)
			recs[i] = &kgo.Record{Topic: "ev", Key: []byte(k), Value: fmt.Appendf(nil, `{"TS":%d,"V":%d}`, ts, v)}
			fmt.Fprintf(&script, "INSERT INTO ev VALUES ('%s', %d, %d);\n", k, ts, v)
		}
		e.produce(recs)
	}
	batch(250)
	batch(250)
	e.waitOutput("TW", 20)
	e.crash()
	batch(250)
	batch(250)
	script.WriteString(`
SELECT '#TW';
WITH a AS (SELECT k, ts / 10000 * 10000 AS ws, COUNT(*) AS n FROM ev GROUP BY k, ws)
SELECT ws, COUNT(*), SUM(n), MAX(n), MIN(n) FROM a GROUP BY ws;
SELECT '#HW';
WITH RECURSIVE starts(s) AS (SELECT 0 UNION ALL SELECT s + 5000 FROM starts WHERE s < 300000),
  x AS (SELECT k, s AS ws, SUM(v) AS sv FROM ev JOIN starts ON s <= ts AND ts < s + 15000 WHERE v % 7 <> 0 GROUP BY k, s)
SELECT ws, COUNT(*), MAX(sv) FROM x WHERE sv > 100 GROUP BY ws;
`)
	want := sqlite(t, ctx, script.String())
	if len(want["TW"]) < 25 || len(want["HW"]) < 50 {
		t.Fatalf("input too thin: %d, %d windows", len(want["TW"]), len(want["HW"]))
	}
	e.pull("SELECT window_start, keys, total, hi, lo FROM tw", want["TW"])
	e.pull("SELECT ws, keys, hi FROM hw", want["HW"])
	cols := func(names ...string) func(string, map[string]any) string {
		return func(k string, v map[string]any) string {
			// The key is a BIGINT in the KAFKA format: 8 bytes, big-endian.
			parts := []string{strconv.FormatInt(int64(binary.BigEndian.Uint64([]byte(k))), 10)}
			for _, n := range names {
				parts = append(parts, text(v[n]))
			}
			return strings.Join(parts, "|")
		}
	}
	e.eventually("topic TW", want["TW"], func() ([]string, error) { return e.changelog("TW", 0, cols("KEYS", "TOTAL", "HI", "LO")) })
	e.eventually("topic HW", want["HW"], func() ([]string, error) { return e.changelog("HW", 0, cols("KEYS", "HI")) })
}
