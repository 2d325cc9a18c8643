package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
)

// TestSQLBeyondDifferential runs the SQL beyond ksqlDB's that sqlstreams
// plans (derived tables, CTEs, an aggregate over an aggregate, global
// aggregates, CREATE MATERIALIZED VIEW) over random input — a stream,
// and a table with updates and deletes — while the server is killed with
// SIGKILL as output flows and restarted, and compares each result, as
// its pull query answers and as its output topic reads as a changelog
// (read_committed, last value per key, tombstones deleting), with
// SQLite's answer to the same SQL over the final input.
func TestSQLBeyondDifferential(t *testing.T) {
	sqlite := testtool.Need(t, "sqlite3", "apt-get install sqlite3; scripts/deps.sh does")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := startServer(t, "--log-level", "info")
	conn := connect(t, ctx, s)
	for _, q := range []string{
		`CREATE TABLE persons (id VARCHAR PRIMARY KEY, state VARCHAR, age BIGINT) WITH (KAFKA_TOPIC='persons', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM bids (auction VARCHAR KEY, bidder VARCHAR, price BIGINT) WITH (KAFKA_TOPIC='bids', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		// A table's aggregation in the SQL dialect: an emptied group goes.
		`CREATE MATERIALIZED VIEW mv_state AS SELECT state, COUNT(*) AS n, SUM(age) AS s FROM persons WHERE age >= 18 GROUP BY state`,
		// Groups of one or two rows, emptied often by updates and deletes:
		// each emptied one is deleted (a tombstone), never a COUNT 0 row.
		`CREATE MATERIALIZED VIEW mv_age AS SELECT age, COUNT(*) AS n FROM persons GROUP BY age`,
		// Exact distinct aggregates, of a table (a count per value) and
		// of a stream.
		`CREATE TABLE dist_state AS SELECT state, COUNT(DISTINCT age) AS ages, SUM(DISTINCT age) AS sa FROM persons GROUP BY state`,
		`CREATE TABLE dist_auction AS SELECT auction, COUNT(DISTINCT bidder) AS bidders, SUM(DISTINCT price) AS sp FROM bids GROUP BY auction`,
		// SELECT DISTINCT, of a table (retracting) and of a stream (each
		// distinct row once).
		`CREATE TABLE dist_rows WITH (KEY_FORMAT='JSON') AS SELECT DISTINCT state, age FROM persons`,
		`CREATE TABLE dist_bidders AS SELECT DISTINCT bidder FROM bids`,
		// An aggregate over an aggregating derived table, of a stream.
		`CREATE TABLE nested AS SELECT n, COUNT(*) AS c, SUM(total) AS t FROM (SELECT auction, COUNT(*) AS n, SUM(price) AS total FROM bids GROUP BY auction) x GROUP BY n`,
		// An aggregate over an aggregating CTE, of a table.
		`CREATE TABLE cte_state AS WITH st AS (SELECT state, COUNT(*) AS n FROM persons GROUP BY state) SELECT n, COUNT(*) AS states FROM st GROUP BY n`,
		// Global aggregates, of a stream and of a table.
		`CREATE MATERIALIZED VIEW totals AS SELECT COUNT(*) AS n, SUM(price) AS s FROM bids`,
		`CREATE MATERIALIZED VIEW ptotals AS SELECT COUNT(*) AS n, SUM(age) AS s FROM persons WHERE state <> 'WA'`,
		// A derived table of a derived table, as a stream.
		`CREATE STREAM mid AS SELECT a, p FROM (SELECT a, p FROM (SELECT auction AS a, price AS p FROM bids WHERE price > 300) y WHERE p < 900) x`,
	} {
		exec1(t, ctx, conn, q)
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	rng := rand.New(rand.NewPCG(33, 1))
	states := []string{"OR", "CA", "WA", "NY", "TX"}
	type person struct {
		state string
		age   int64
	}
	persons := map[string]*person{}
	var bids []string // "auction|bidder|price" of each bid
	produce := func(n int) {
		t.Helper()
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			if rng.IntN(3) == 0 {
				id := "p" + strconv.Itoa(rng.IntN(60))
				if _, ok := persons[id]; ok && rng.IntN(4) == 0 {
					delete(persons, id)
					recs = append(recs, &kgo.Record{Topic: "persons", Key: []byte(id)})
					continue
				}
				p := &person{states[rng.IntN(len(states))], int64(rng.IntN(80))}
				persons[id] = p
				recs = append(recs, &kgo.Record{Topic: "persons", Key: []byte(id), Value: fmt.Appendf(nil, `{"STATE":%q,"AGE":%d}`, p.state, p.age)})
				continue
			}
			a := "a" + strconv.Itoa(rng.IntN(40))
			price := int64(rng.IntN(1000) + 1)
			bidder := "b" + strconv.Itoa(rng.IntN(9))
			bids = append(bids, a+"|"+bidder+"|"+strconv.FormatInt(price, 10))
			recs = append(recs, &kgo.Record{Topic: "bids", Key: []byte(a), Value: fmt.Appendf(nil, `{"BIDDER":%q,"PRICE":%d}`, bidder, price)})
		}
		if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}
	produce(1500)
	written, committed := waitMidRun(t, ctx, s.KafkaAddr, "NESTED", 1, func() { produce(200) })
	t.Logf("SIGKILL with %d records written to NESTED while waiting, %d of them committed", written, committed)
	crashAndRestart(t, s)
	kc.ForceMetadataRefresh()
	produce(1500)

	// SQLite over the final input.
	var script bytes.Buffer
	script.WriteString("CREATE TABLE persons (id TEXT PRIMARY KEY, state TEXT, age INTEGER);\nCREATE TABLE bids (auction TEXT, bidder TEXT, price INTEGER);\n")
	for id, p := range persons {
		fmt.Fprintf(&script, "INSERT INTO persons VALUES ('%s', '%s', %d);\n", id, p.state, p.age)
	}
	for _, b := range bids {
		f := strings.Split(b, "|")
		fmt.Fprintf(&script, "INSERT INTO bids VALUES ('%s', '%s', %s);\n", f[0], f[1], f[2])
	}
	script.WriteString(`SELECT '#MV_STATE';
SELECT state, COUNT(*), SUM(age) FROM persons WHERE age >= 18 GROUP BY state;
SELECT '#MV_AGE';
SELECT age, COUNT(*) FROM persons GROUP BY age;
SELECT '#DIST_STATE';
SELECT state, COUNT(DISTINCT age), SUM(DISTINCT age) FROM persons GROUP BY state;
SELECT '#DIST_AUCTION';
SELECT auction, COUNT(DISTINCT bidder), SUM(DISTINCT price) FROM bids GROUP BY auction;
SELECT '#DIST_ROWS';
SELECT DISTINCT state, age FROM persons;
SELECT '#DIST_BIDDERS';
SELECT DISTINCT bidder FROM bids;
SELECT '#NESTED';
SELECT n, COUNT(*), SUM(total) FROM (SELECT auction, COUNT(*) AS n, SUM(price) AS total FROM bids GROUP BY auction) x GROUP BY n;
SELECT '#CTE_STATE';
WITH st AS (SELECT state, COUNT(*) AS n FROM persons GROUP BY state) SELECT n, COUNT(*) FROM st GROUP BY n;
SELECT '#TOTALS';
SELECT COUNT(*), SUM(price) FROM bids;
SELECT '#PTOTALS';
SELECT COUNT(*), SUM(age) FROM persons WHERE state <> 'WA';
SELECT '#MID';
SELECT a, p FROM (SELECT a, p FROM (SELECT auction AS a, price AS p FROM bids WHERE price > 300) y WHERE p < 900) x;
`)
	want := sqliteSections(t, ctx, sqlite, script.Bytes())

	// The output topics, read_committed as changelogs. Keys: STRING as
	// is, BIGINT as 8 bytes big-endian (KAFKA), none for a global
	// aggregate's one row.
	type keyKind int
	const (
		strKey keyKind = iota
		bigintKey
		noKey
		jsonKey // the key's fields, then the value's
	)
	tableOut := func(topic string, kk keyKind, fields []string) []string {
		last := map[string]*kgo.Record{}
		for _, r := range readPartitioned(t, ctx, s.KafkaAddr, topic) {
			last[string(r.Key)] = r
		}
		var got []string
		for k, r := range last {
			if r.Value == nil {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatalf("%s: %s: %v", topic, r.Value, err)
			}
			var parts []string
			switch kk {
			case strKey:
				parts = append(parts, k)
			case bigintKey:
				parts = append(parts, strconv.FormatInt(int64(binary.BigEndian.Uint64([]byte(k))), 10))
			case jsonKey:
				if err := json.Unmarshal([]byte(k), &m); err != nil {
					t.Fatalf("%s key %s: %v", topic, k, err)
				}
			}
			for _, f := range fields {
				parts = append(parts, jsonText(m[f]))
			}
			got = append(got, strings.Join(parts, "|"))
		}
		return got
	}
	streamOut := func(topic string, fields []string) []string {
		var got []string
		for _, r := range readPartitioned(t, ctx, s.KafkaAddr, topic) {
			var m map[string]any
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatalf("%s: %s: %v", topic, r.Value, err)
			}
			parts := []string{string(r.Key)}
			for _, f := range fields {
				parts = append(parts, jsonText(m[f]))
			}
			got = append(got, strings.Join(parts, "|"))
		}
		return got
	}
	// Each output, retried until it equals SQLite's or the deadline (the
	// queries catch up after the restart).
	eventually := func(name string, get func() []string) {
		t.Helper()
		w := slices.Clone(want[name])
		slices.Sort(w)
		deadline := time.Now().Add(60 * time.Second)
		for {
			got := get()
			slices.Sort(got)
			if slices.Equal(got, w) {
				t.Logf("%s: %d rows, as SQLite", name, len(got))
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("%s: %d rows, SQLite %d; first differences:\n%s", name, len(got), len(w), diff(got, w))
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	eventually("MV_STATE", func() []string { return tableOut("MV_STATE", strKey, []string{"N", "S"}) })
	eventually("MV_AGE", func() []string { return tableOut("MV_AGE", bigintKey, []string{"N"}) })
	eventually("DIST_STATE", func() []string { return tableOut("DIST_STATE", strKey, []string{"AGES", "SA"}) })
	eventually("DIST_AUCTION", func() []string { return tableOut("DIST_AUCTION", strKey, []string{"BIDDERS", "SP"}) })
	eventually("DIST_ROWS", func() []string { return tableOut("DIST_ROWS", jsonKey, []string{"STATE", "AGE"}) })
	eventually("DIST_BIDDERS", func() []string { return tableOut("DIST_BIDDERS", strKey, nil) })
	// Each distinct bidder once in the topic, crash and all.
	if n, w := len(readPartitioned(t, ctx, s.KafkaAddr, "DIST_BIDDERS")), len(want["DIST_BIDDERS"]); n != w {
		t.Errorf("DIST_BIDDERS holds %d records for %d distinct bidders", n, w)
	}
	eventually("NESTED", func() []string { return tableOut("NESTED", bigintKey, []string{"C", "T"}) })
	eventually("CTE_STATE", func() []string { return tableOut("CTE_STATE", bigintKey, []string{"STATES"}) })
	eventually("TOTALS", func() []string { return tableOut("TOTALS", noKey, []string{"N", "S"}) })
	eventually("PTOTALS", func() []string { return tableOut("PTOTALS", noKey, []string{"N", "S"}) })
	eventually("MID", func() []string { return streamOut("MID", []string{"P"}) })

	// The tables answer pull queries with the same rows.
	conn = connect(t, ctx, s)
	pullEqual(t, ctx, conn, "SELECT * FROM mv_state", want["MV_STATE"])
	pullEqual(t, ctx, conn, "SELECT * FROM mv_age", want["MV_AGE"])
	pullEqual(t, ctx, conn, "SELECT * FROM nested", want["NESTED"])
	pullEqual(t, ctx, conn, "SELECT * FROM dist_rows", want["DIST_ROWS"])
	pullEqual(t, ctx, conn, "SELECT * FROM dist_bidders", want["DIST_BIDDERS"])
	pullEqual(t, ctx, conn, "SELECT * FROM dist_state", want["DIST_STATE"])
	pullEqual(t, ctx, conn, "SELECT * FROM dist_auction", want["DIST_AUCTION"])
	pullEqual(t, ctx, conn, "SELECT * FROM cte_state", want["CTE_STATE"])
	pullEqual(t, ctx, conn, "SELECT * FROM totals", want["TOTALS"])
	pullEqual(t, ctx, conn, "SELECT * FROM ptotals", want["PTOTALS"])
}
