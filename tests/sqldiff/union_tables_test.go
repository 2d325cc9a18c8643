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

// TestUnionTablesDifferential aggregates a UNION ALL of two tables (of 2
// and 3 partitions, one branch filtered, the other read twice) over
// random upserts and deletions, with a SIGKILL while output flows, and
// compares the result tables (pull queries and their topics' changelogs)
// with SQLite's GROUP BY over the same UNION ALL of the tables' final
// rows: every update took its old row's contribution back out. MIN and
// MAX over the tables (SQL dialect) are checked the same way.
func TestUnionTablesDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := start(t, ctx)
	for _, q := range []string{
		`CREATE TABLE t1 (id VARCHAR PRIMARY KEY, k VARCHAR, v BIGINT) WITH (KAFKA_TOPIC='t1', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE t2 (id VARCHAR PRIMARY KEY, grp VARCHAR, amount INT) WITH (KAFKA_TOPIC='t2', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE TABLE su AS SELECT k, SUM(v) AS total, COUNT(*) AS n
		   FROM (SELECT k, v FROM t1 UNION ALL SELECT grp, amount * 10 FROM t2 WHERE amount % 5 <> 0) x GROUP BY k`,
		`CREATE TABLE cu AS WITH u AS (SELECT k FROM t1 UNION ALL SELECT grp FROM t2 UNION ALL SELECT 'all' FROM t1 WHERE v > 500)
		   SELECT k, COUNT(*) AS n FROM u GROUP BY k`,
		// MIN and MAX over a table (SQL dialect): a deleted or changed
		// extreme gives way to the next value.
		`CREATE MATERIALIZED VIEW mm AS SELECT k, MIN(v) AS lo, MAX(v) AS hi, COUNT(*) AS n FROM t1 GROUP BY k`,
		`CREATE MATERIALIZED VIEW mm2 AS SELECT grp, MIN(amount) AS lo, MAX(amount) AS hi FROM t2 WHERE amount % 3 <> 0 GROUP BY grp`,
	} {
		e.exec(q)
	}
	rng := rand.New(rand.NewPCG(33, 22))
	var script strings.Builder
	script.WriteString("CREATE TABLE t1 (id TEXT PRIMARY KEY, k TEXT, v INTEGER); CREATE TABLE t2 (id TEXT PRIMARY KEY, grp TEXT, amount INTEGER);\n")
	batch := func(n int) {
		var recs []*kgo.Record
		for range n {
			id := fmt.Sprintf("i%d", rng.IntN(60))
			del := rng.IntN(6) == 0
			if rng.IntN(2) == 0 {
				if del {
					recs = append(recs, &kgo.Record{Topic: "t1", Key: []byte(id)})
					fmt.Fprintf(&script, "DELETE FROM t1 WHERE id = '%s';\n", id)
					continue
				}
				k, v := fmt.Sprintf("g%d", rng.IntN(8)), rng.Int64N(1000)
				recs = append(recs, &kgo.Record{Topic: "t1", Key: []byte(id), Value: fmt.Appendf(nil, `{"K":"%s","V":%d}`, k, v)})
				fmt.Fprintf(&script, "INSERT OR REPLACE INTO t1 VALUES ('%s', '%s', %d);\n", id, k, v)
				continue
			}
			if del {
				recs = append(recs, &kgo.Record{Topic: "t2", Key: []byte(id)})
				fmt.Fprintf(&script, "DELETE FROM t2 WHERE id = '%s';\n", id)
				continue
			}
			g, a := fmt.Sprintf("g%d", rng.IntN(8)), rng.Int64N(100)
			recs = append(recs, &kgo.Record{Topic: "t2", Key: []byte(id), Value: fmt.Appendf(nil, `{"GRP":"%s","AMOUNT":%d}`, g, a)})
			fmt.Fprintf(&script, "INSERT OR REPLACE INTO t2 VALUES ('%s', '%s', %d);\n", id, g, a)
		}
		e.produce(recs)
	}
	batch(300)
	batch(300)
	e.waitOutput("SU", 50)
	e.crash()
	batch(300)
	batch(300)
	script.WriteString(`
SELECT '#SU';
SELECT k, SUM(v), COUNT(*) FROM (SELECT k, v FROM t1 UNION ALL SELECT grp, amount * 10 FROM t2 WHERE amount % 5 <> 0) GROUP BY k;
SELECT '#CU';
SELECT k, COUNT(*) FROM (SELECT k FROM t1 UNION ALL SELECT grp AS k FROM t2 UNION ALL SELECT 'all' FROM t1 WHERE v > 500) GROUP BY k;
`)
	script.WriteString(`
SELECT '#MM';
SELECT k, MIN(v), MAX(v), COUNT(*) FROM t1 GROUP BY k;
SELECT '#MM2';
SELECT grp, MIN(amount), MAX(amount) FROM t2 WHERE amount % 3 <> 0 GROUP BY grp;
`)
	want := sqlite(t, ctx, script.String())
	if len(want["SU"]) < 8 || len(want["CU"]) < 9 {
		t.Fatalf("input too thin: %d, %d groups", len(want["SU"]), len(want["CU"]))
	}
	e.pull("SELECT k, total, n FROM su", want["SU"])
	e.pull("SELECT k, n FROM cu", want["CU"])
	e.pull("SELECT k, lo, hi, n FROM mm", want["MM"])
	e.pull("SELECT grp, lo, hi FROM mm2", want["MM2"])
	e.eventually("topic SU", want["SU"], func() ([]string, error) { return e.changelog("SU", 0, keyCols("TOTAL", "N")) })
	e.eventually("topic CU", want["CU"], func() ([]string, error) { return e.changelog("CU", 0, keyCols("N")) })
}
