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

// TestJoinResidualDifferential runs joins whose ON has conditions beyond
// the key equality, and a Flink-style interval join, over random input
// with a SIGKILL while output flows, against SQLite's answer to the same
// joins:
//
//   - stream–table INNER and LEFT with a residual (the table loaded
//     first, so each stream row meets the table as it ends): the output
//     records, as a multiset;
//   - table–table INNER and LEFT on the primary key with a residual, over
//     updates and deletes on both sides in any order: the final result
//     tables (pull query and the output topic read as a changelog);
//   - a stream–stream interval join (a.ROWTIME BETWEEN b.ROWTIME -
//     INTERVAL … AND b.ROWTIME + INTERVAL …) with a residual: the output
//     records, as a multiset.
func TestJoinResidualDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := start(t, ctx)
	for _, q := range []string{
		`CREATE TABLE users (id VARCHAR PRIMARY KEY, lvl BIGINT, region VARCHAR) WITH (KAFKA_TOPIC='users', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM views (vid VARCHAR KEY, uid VARCHAR, need BIGINT) WITH (KAFKA_TOPIC='views', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE STREAM st_in AS SELECT v.uid, vid, need, lvl FROM views v JOIN users u ON v.uid = u.id AND u.lvl >= v.need AND u.region <> 'r0'`,
		`CREATE STREAM st_left AS SELECT v.uid, vid, need, lvl, region FROM views v LEFT JOIN users u ON v.uid = u.id AND u.lvl >= v.need`,
		`CREATE TABLE lt (id VARCHAR PRIMARY KEY, a BIGINT) WITH (KAFKA_TOPIC='lt', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE rt (id VARCHAR PRIMARY KEY, b BIGINT) WITH (KAFKA_TOPIC='rt', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE tt_in AS SELECT l.id, a, b FROM lt l JOIN rt r ON l.id = r.id AND a < b`,
		`CREATE TABLE tt_left AS SELECT l.id, a, b FROM lt l LEFT JOIN rt r ON l.id = r.id AND a + b > 100`,
		`CREATE STREAM bids (k VARCHAR KEY, price BIGINT) WITH (KAFKA_TOPIC='bids', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM asks (k VARCHAR KEY, ask BIGINT) WITH (KAFKA_TOPIC='asks', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM deals AS SELECT b.k, price, ask FROM bids b JOIN asks a ON b.k = a.k
		   AND a.ROWTIME BETWEEN b.ROWTIME - INTERVAL '1' SECOND AND b.ROWTIME + INTERVAL '2' SECONDS AND price >= ask`,
	} {
		e.exec(q)
	}
	rng := rand.New(rand.NewPCG(33, 8))
	var script strings.Builder
	script.WriteString(`CREATE TABLE users (id TEXT PRIMARY KEY, lvl INTEGER, region TEXT);
CREATE TABLE views (vid TEXT, uid TEXT, need INTEGER);
CREATE TABLE lt (id TEXT PRIMARY KEY, a INTEGER); CREATE TABLE rt (id TEXT PRIMARY KEY, b INTEGER);
CREATE TABLE bids (k TEXT, price INTEGER, ts INTEGER); CREATE TABLE asks (k TEXT, ask INTEGER, ts INTEGER);
`)
	// The users table first, whole, then the views.
	var recs []*kgo.Record
	for i := range 30 {
		id, lvl, region := fmt.Sprintf("u%d", i), rng.Int64N(10), fmt.Sprintf("r%d", rng.IntN(3))
		recs = append(recs, &kgo.Record{Topic: "users", Key: []byte(id), Value: fmt.Appendf(nil, `{"LVL":%d,"REGION":"%s"}`, lvl, region)})
		fmt.Fprintf(&script, "INSERT INTO users VALUES ('%s', %d, '%s');\n", id, lvl, region)
	}
	e.produce(recs)
	e.eventually("users loaded", []string{"30"}, func() ([]string, error) {
		got, err := e.stream("users")
		return []string{fmt.Sprint(len(got))}, err
	})
	vseq := 0
	views := func(n int) {
		var recs []*kgo.Record
		for range n {
			vseq++
			vid, uid, need := fmt.Sprintf("v%d", vseq), fmt.Sprintf("u%d", rng.IntN(40)), rng.Int64N(10)
			recs = append(recs, &kgo.Record{Topic: "views", Key: []byte(vid), Value: fmt.Appendf(nil, `{"UID":"%s","NEED":%d}`, uid, need)})
			fmt.Fprintf(&script, "INSERT INTO views VALUES ('%s', '%s', %d);\n", vid, uid, need)
		}
		e.produce(recs)
	}
	// Tables: upserts and deletes on both sides, in any order.
	tables := func(n int) {
		var recs []*kgo.Record
		for range n {
			topic := []string{"lt", "rt"}[rng.IntN(2)]
			id := fmt.Sprintf("t%d", rng.IntN(40))
			if rng.IntN(5) == 0 {
				recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(id)})
				fmt.Fprintf(&script, "DELETE FROM %s WHERE id = '%s';\n", topic, id)
				continue
			}
			v := rng.Int64N(120)
			col := map[string]string{"lt": "A", "rt": "B"}[topic]
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(id), Value: fmt.Appendf(nil, `{"%s":%d}`, col, v)})
			fmt.Fprintf(&script, "INSERT OR REPLACE INTO %s VALUES ('%s', %d);\n", topic, id, v)
		}
		e.produce(recs)
	}
	// Bids and asks with event times out of order by up to 3 s.
	base := time.Now().Add(-time.Hour).UnixMilli()
	market := func(n int) {
		var recs []*kgo.Record
		for range n {
			k := fmt.Sprintf("k%d", rng.IntN(10))
			ts := base + rng.Int64N(60_000)
			v := rng.Int64N(100)
			if rng.IntN(2) == 0 {
				recs = append(recs, &kgo.Record{Topic: "bids", Key: []byte(k), Timestamp: time.UnixMilli(ts), Value: fmt.Appendf(nil, `{"PRICE":%d}`, v)})
				fmt.Fprintf(&script, "INSERT INTO bids VALUES ('%s', %d, %d);\n", k, v, ts)
			} else {
				recs = append(recs, &kgo.Record{Topic: "asks", Key: []byte(k), Timestamp: time.UnixMilli(ts), Value: fmt.Appendf(nil, `{"ASK":%d}`, v)})
				fmt.Fprintf(&script, "INSERT INTO asks VALUES ('%s', %d, %d);\n", k, v, ts)
			}
		}
		e.produce(recs)
		base += 20_000
	}
	for range 2 {
		views(150)
		tables(150)
		market(150)
	}
	e.waitOutput("ST_LEFT", 100)
	e.crash()
	for range 2 {
		views(150)
		tables(150)
		market(150)
	}
	script.WriteString(`
SELECT '#ST_IN';
SELECT v.uid, vid, need, lvl FROM views v JOIN users u ON v.uid = u.id AND u.lvl >= v.need AND u.region <> 'r0';
SELECT '#ST_LEFT';
SELECT v.uid, vid, need, lvl, region FROM views v LEFT JOIN users u ON v.uid = u.id AND u.lvl >= v.need;
SELECT '#TT_IN';
SELECT l.id, a, b FROM lt l JOIN rt r ON l.id = r.id AND a < b;
SELECT '#TT_LEFT';
SELECT l.id, a, b FROM lt l LEFT JOIN rt r ON l.id = r.id AND a + b > 100;
SELECT '#DEALS';
SELECT b.k, price, ask FROM bids b JOIN asks a ON b.k = a.k AND a.ts BETWEEN b.ts - 1000 AND b.ts + 2000 AND price >= ask;
`)
	want := sqlite(t, ctx, script.String())
	for name, min := range map[string]int{"ST_IN": 50, "ST_LEFT": 600, "TT_IN": 5, "TT_LEFT": 20, "DEALS": 30} {
		if len(want[name]) < min {
			t.Fatalf("input too thin: %s has %d rows", name, len(want[name]))
		}
	}
	// Streams: the records (the key is the stream row's, a value column
	// here: the views' uid), as a multiset.
	e.eventually("topic ST_IN", want["ST_IN"], func() ([]string, error) {
		return e.stream("ST_IN", "VID", "NEED", "LVL")
	})
	e.eventually("topic ST_LEFT", want["ST_LEFT"], func() ([]string, error) {
		return e.stream("ST_LEFT", "VID", "NEED", "LVL", "REGION")
	})
	e.eventually("topic DEALS", want["DEALS"], func() ([]string, error) {
		return e.stream("DEALS", "PRICE", "ASK")
	})
	// Tables: the final rows, from a pull query and the topic.
	cols := func(names ...string) func(string, map[string]any) string {
		return func(k string, v map[string]any) string {
			parts := []string{k}
			for _, n := range names {
				parts = append(parts, text(v[n]))
			}
			return strings.Join(parts, "|")
		}
	}
	e.pull("SELECT l_id, a, b FROM tt_in", want["TT_IN"])
	e.pull("SELECT l_id, a, b FROM tt_left", want["TT_LEFT"])
	e.eventually("topic TT_IN", want["TT_IN"], func() ([]string, error) { return e.changelog("TT_IN", 0, cols("A", "B")) })
	e.eventually("topic TT_LEFT", want["TT_LEFT"], func() ([]string, error) { return e.changelog("TT_LEFT", 0, cols("A", "B")) })
}
