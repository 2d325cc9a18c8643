package sqldiff

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTopNDifferential runs Top-N and deduplication (ROW_NUMBER() OVER
// … WHERE rn <= N, issue 33 point 5) over random rows — a stream of two
// partitions repartitioned by the PARTITION BY column, and a table with
// updates and deletions that move rows in and out — with a SIGKILL
// while output flows, and compares each result (its topic read as a
// changelog, and a pull query) with SQLite's ROW_NUMBER() over the same
// input, and a Top-N of per-key counts (an aggregation's retracting
// rows). The ORDER BY keys never tie, so the answer is unique.
func TestTopNDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := start(t, ctx)
	for _, q := range []string{
		`CREATE STREAM ev (id VARCHAR KEY, g VARCHAR, v BIGINT, seq BIGINT) WITH (KAFKA_TOPIC='ev', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE acc (id VARCHAR PRIMARY KEY, g VARCHAR, v BIGINT) WITH (KAFKA_TOPIC='acc', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE top3 AS SELECT * FROM (SELECT g, id, v, seq, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC, seq) AS rn FROM ev) WHERE rn <= 3`,
		`CREATE TABLE firsts AS SELECT g, id, v FROM (SELECT g, id, v, ROW_NUMBER() OVER (PARTITION BY g ORDER BY ROWTIME) AS rn FROM ev) WHERE rn = 1`,
		`CREATE MATERIALIZED VIEW lasts AS SELECT g, id, v FROM (SELECT g, id, v, ROW_NUMBER() OVER (PARTITION BY g ORDER BY ROWTIME DESC) AS rn FROM ev) WHERE rn = 1`,
		`CREATE TABLE topcount AS SELECT * FROM (SELECT g, id, n, ROW_NUMBER() OVER (PARTITION BY g ORDER BY n DESC, id) AS rn FROM (SELECT g, id, COUNT(*) AS n FROM ev GROUP BY g, id) c) WHERE rn <= 2`,
		`CREATE TABLE top5 AS SELECT rn, id, v, seq FROM (SELECT id, v, seq, ROW_NUMBER() OVER (ORDER BY v DESC, seq DESC) AS rn FROM ev) WHERE rn <= 5`,
		`CREATE TABLE top2acc AS WITH r AS (SELECT g, id, v, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC, id ASC) AS rn FROM acc) SELECT * FROM r WHERE rn <= 2`,
	} {
		e.exec(q)
	}
	rng := rand.New(rand.NewPCG(33, 5))
	var script strings.Builder
	script.WriteString("CREATE TABLE ev (id TEXT, g TEXT, v INTEGER, seq INTEGER); CREATE TABLE acc (id TEXT PRIMARY KEY, g TEXT, v INTEGER);\n")
	seq := 0
	base := time.Now().Add(-time.Hour).UnixMilli()
	batch := func(n int) {
		var recs []*kgo.Record
		for range n {
			seq++
			if rng.IntN(2) == 0 {
				id, g, v := fmt.Sprintf("e%d", rng.IntN(50)), fmt.Sprintf("g%d", rng.IntN(12)), rng.Int64N(1000)
				recs = append(recs, &kgo.Record{Topic: "ev", Key: []byte(id), Timestamp: time.UnixMilli(base + int64(seq)),
					Value: fmt.Appendf(nil, `{"G":"%s","V":%d,"SEQ":%d}`, g, v, seq)})
				fmt.Fprintf(&script, "INSERT INTO ev VALUES ('%s', '%s', %d, %d);\n", id, g, v, seq)
				continue
			}
			id := fmt.Sprintf("a%d", rng.IntN(60))
			if rng.IntN(5) == 0 {
				recs = append(recs, &kgo.Record{Topic: "acc", Key: []byte(id)})
				fmt.Fprintf(&script, "DELETE FROM acc WHERE id = '%s';\n", id)
				continue
			}
			g, v := fmt.Sprintf("g%d", rng.IntN(6)), rng.Int64N(100)
			recs = append(recs, &kgo.Record{Topic: "acc", Key: []byte(id), Value: fmt.Appendf(nil, `{"G":"%s","V":%d}`, g, v)})
			fmt.Fprintf(&script, "INSERT OR REPLACE INTO acc VALUES ('%s', '%s', %d);\n", id, g, v)
		}
		e.produce(recs)
	}
	for range 3 {
		batch(300)
	}
	e.waitOutput("TOP3", 100)
	e.crash()
	for range 3 {
		batch(300)
	}
	script.WriteString(`
SELECT '#TOP3';
SELECT g, rn, id, v, seq FROM (SELECT g, id, v, seq, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC, seq) AS rn FROM ev) WHERE rn <= 3;
SELECT '#FIRSTS';
SELECT g, id, v FROM (SELECT g, id, v, ROW_NUMBER() OVER (PARTITION BY g ORDER BY seq) AS rn FROM ev) WHERE rn = 1;
SELECT '#LASTS';
SELECT g, id, v FROM (SELECT g, id, v, ROW_NUMBER() OVER (PARTITION BY g ORDER BY seq DESC) AS rn FROM ev) WHERE rn = 1;
SELECT '#TOPCOUNT';
SELECT g, rn, id, n FROM (SELECT g, id, n, ROW_NUMBER() OVER (PARTITION BY g ORDER BY n DESC, id) AS rn FROM (SELECT g, id, COUNT(*) AS n FROM ev GROUP BY g, id)) WHERE rn <= 2;
SELECT '#TOP5';
SELECT rn, id, v, seq FROM (SELECT id, v, seq, ROW_NUMBER() OVER (ORDER BY v DESC, seq DESC) AS rn FROM ev) WHERE rn <= 5;
SELECT '#TOP2ACC';
SELECT g, rn, id, v FROM (SELECT g, id, v, ROW_NUMBER() OVER (PARTITION BY g ORDER BY v DESC, id ASC) AS rn FROM acc) WHERE rn <= 2;
`)
	want := sqlite(t, ctx, script.String())
	if len(want["TOP5"]) != 5 || len(want["TOP3"]) < 30 || len(want["TOP2ACC"]) < 10 || len(want["TOPCOUNT"]) < 20 {
		t.Fatalf("input too thin: %d top-3 rows, %d top-2 rows", len(want["TOP3"]), len(want["TOP2ACC"]))
	}

	e.pull("SELECT g, rn, id, v, seq FROM top3", want["TOP3"])
	e.pull("SELECT g, id, v FROM firsts", want["FIRSTS"])
	e.pull("SELECT g, id, v FROM lasts", want["LASTS"])
	e.pull("SELECT g, rn, id, v FROM top2acc", want["TOP2ACC"])
	e.pull("SELECT g, rn, id, n FROM topcount", want["TOPCOUNT"])
	e.pull("SELECT rn, id, v, seq FROM top5", want["TOP5"])

	// The topics as changelogs: a rank that moved is an update of its
	// key, a rank that emptied a tombstone.
	ranked := func(cols ...string) func(string, map[string]any) string {
		return func(k string, v map[string]any) string {
			var key map[string]any
			if err := json.Unmarshal([]byte(k), &key); err != nil {
				return "bad key " + k
			}
			parts := []string{text(key["G"]), text(key["RN"])}
			for _, c := range cols {
				parts = append(parts, text(v[c]))
			}
			return strings.Join(parts, "|")
		}
	}
	e.eventually("topic TOP3", want["TOP3"], func() ([]string, error) { return e.changelog("TOP3", 0, ranked("ID", "V", "SEQ")) })
	e.eventually("topic FIRSTS", want["FIRSTS"], func() ([]string, error) { return e.changelog("FIRSTS", 0, keyCols("ID", "V")) })
	e.eventually("topic LASTS", want["LASTS"], func() ([]string, error) { return e.changelog("LASTS", 0, keyCols("ID", "V")) })
	e.eventually("topic TOPCOUNT", want["TOPCOUNT"], func() ([]string, error) { return e.changelog("TOPCOUNT", 0, ranked("ID", "N")) })
	// Keyed by the rank alone: a KAFKA BIGINT key.
	e.eventually("topic TOP5", want["TOP5"], func() ([]string, error) {
		return e.changelog("TOP5", 0, func(k string, v map[string]any) string {
			if len(k) != 8 {
				return "bad key " + k
			}
			return fmt.Sprintf("%d|%s|%s|%s", int64(binary.BigEndian.Uint64([]byte(k))), text(v["ID"]), text(v["V"]), text(v["SEQ"]))
		})
	})
	e.eventually("topic TOP2ACC", want["TOP2ACC"], func() ([]string, error) { return e.changelog("TOP2ACC", 0, ranked("ID", "V")) })
}
