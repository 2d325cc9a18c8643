package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
)

// TestJoinsDifferential runs every join kind over random input while
// the server is killed with SIGKILL mid-run and restarted, and compares
// the results with SQLite (the sqlite3 command) computing the same joins
// over exactly the input as stored:
//
//   - stream–table, INNER and LEFT, with the stream repartitioned by a
//     value column: the table changes in phases between batches of
//     stream rows, so each stream row joins the table as of the phases
//     before its own; the output records, as a multiset.
//   - table–table on the primary key, INNER, LEFT, RIGHT and FULL, over
//     updates and deletes on both sides in any order: the final result
//     tables (pull query and topic, last value per key).
//   - table–table on a foreign key, INNER and LEFT, over tables of 3 and
//     2 partitions, with updates that change the foreign key (to NULL
//     too) and deletes on both sides: the final result tables; the same
//     under a WHERE over both sides' values, which updates on either
//     side flip (a row that stops passing it must be deleted), and a
//     WHERE over a primary-key join.
//   - N-way table joins: a primary-key join's rows joined FULL OUTER and
//     RIGHT to a third table on their key, and a FULL OUTER join's rows
//     joined LEFT to a third table on their synthetic key, over updates
//     and deletes on all three: the final result tables.
//   - stream–stream WITHIN, INNER without GRACE and LEFT and FULL with
//     one, over rows out of order by less than the grace period: the
//     output records (each joined pair once, each row without a match
//     once with NULLs), as a multiset.
func TestJoinsDifferential(t *testing.T) {
	sqlite := testtool.Need(t, "sqlite3", "apt-get install sqlite3; scripts/deps.sh does")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s := startServer(t, "--log-level", "info")
	conn := connect(t, ctx, s)
	for _, q := range []string{
		`CREATE TABLE cust (id VARCHAR PRIMARY KEY, region VARCHAR) WITH (KAFKA_TOPIC='cust', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM orders (oid VARCHAR KEY, cust VARCHAR, amt BIGINT) WITH (KAFKA_TOPIC='orders', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE STREAM st_inner AS SELECT o.cust, oid, amt, region FROM orders o JOIN cust c ON o.cust = c.id`,
		`CREATE STREAM st_left AS SELECT o.cust, oid, amt, region FROM orders o LEFT JOIN cust c ON o.cust = c.id`,
		`CREATE TABLE lt (id VARCHAR PRIMARY KEY, a BIGINT) WITH (KAFKA_TOPIC='lt', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE rt (id VARCHAR PRIMARY KEY, b BIGINT) WITH (KAFKA_TOPIC='rt', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE tt_inner AS SELECT l.id, a, b FROM lt l JOIN rt r ON l.id = r.id`,
		`CREATE TABLE tt_left AS SELECT l.id, a, b FROM lt l LEFT JOIN rt r ON l.id = r.id`,
		`CREATE TABLE tt_right AS SELECT l.id, a, b FROM lt l RIGHT JOIN rt r ON l.id = r.id`,
		`CREATE TABLE tt_full AS SELECT ROWKEY AS k, l.id AS lid, r.id AS rid, a, b FROM lt l FULL OUTER JOIN rt r ON l.id = r.id`,
		`CREATE TABLE xt (id VARCHAR PRIMARY KEY, c BIGINT) WITH (KAFKA_TOPIC='xt', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE tt3_full AS SELECT ROWKEY AS k, a, b, c FROM lt l JOIN rt r ON l.id = r.id FULL OUTER JOIN xt x ON l.id = x.id`,
		`CREATE TABLE tt3_right AS SELECT x.id, a, b, c FROM lt l LEFT JOIN rt r ON l.id = r.id RIGHT JOIN xt x ON l.id = x.id`,
		`CREATE TABLE tt3_fl AS SELECT ROWKEY AS k, a, b, c FROM lt l FULL OUTER JOIN rt r ON l.id = r.id LEFT JOIN xt x ON ROWKEY = x.id`,
		`CREATE TABLE fl (id VARCHAR PRIMARY KEY, fk VARCHAR, a BIGINT) WITH (KAFKA_TOPIC='fl', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE TABLE fr (id VARCHAR PRIMARY KEY, b BIGINT) WITH (KAFKA_TOPIC='fr', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE fk_inner AS SELECT l.id, fk, a, b FROM fl l JOIN fr r ON l.fk = r.id`,
		`CREATE TABLE fk_left AS SELECT l.id, fk, a, b FROM fl l LEFT JOIN fr r ON fk = r.id`,
		`CREATE TABLE fk_where AS SELECT l.id, fk, a, b FROM fl l JOIN fr r ON l.fk = r.id WHERE a < 600 AND b >= 300`,
		`CREATE TABLE fk_left_where AS SELECT l.id, fk, a, b FROM fl l LEFT JOIN fr r ON fk = r.id WHERE b IS NULL OR b < 500`,
		`CREATE TABLE tt_where AS SELECT l.id, a, b FROM lt l LEFT JOIN rt r ON l.id = r.id WHERE a + COALESCE(b, 0) < 1000`,
		`CREATE STREAM ls (k VARCHAR KEY, v BIGINT) WITH (KAFKA_TOPIC='ls', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM rs (k VARCHAR KEY, w BIGINT) WITH (KAFKA_TOPIC='rs', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM ss_inner AS SELECT l.k, v, w FROM ls l JOIN rs r WITHIN 5 SECONDS ON l.k = r.k`,
		`CREATE STREAM ss_left AS SELECT l.k, v, w FROM ls l LEFT JOIN rs r WITHIN (3 SECONDS, 5 SECONDS) GRACE PERIOD 1 HOUR ON l.k = r.k`,
		`CREATE STREAM ss_full AS SELECT ROWKEY AS k, v, w FROM ls l FULL OUTER JOIN rs r WITHIN 5 SECONDS GRACE PERIOD 1 HOUR ON l.k = r.k`,
	} {
		exec1(t, ctx, conn, q)
	}
	ids := map[string]string{} // sink → query ID
	for _, r := range rows(t, ctx, conn, "SHOW QUERIES") {
		f := strings.Split(r, "|")
		ids[f[3]] = f[0]
	}
	kc, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	rng := rand.New(rand.NewPCG(3, 5))
	produce := func(recs []*kgo.Record) {
		t.Helper()
		if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}
	// caughtUp waits until every join query has consumed all its input.
	caughtUp := func() {
		t.Helper()
		for sink, topics := range map[string][]string{
			"ST_INNER": {"orders", "cust"}, "ST_LEFT": {"orders", "cust"},
			"TT_INNER": {"lt", "rt"}, "TT_LEFT": {"lt", "rt"}, "TT_RIGHT": {"lt", "rt"}, "TT_FULL": {"lt", "rt"},
			"SS_INNER": {"ls", "rs"}, "SS_LEFT": {"ls", "rs"}, "SS_FULL": {"ls", "rs"},
			"FK_INNER": {"fl", "fr"}, "FK_LEFT": {"fl", "fr"}, "FK_WHERE": {"fl", "fr"}, "FK_LEFT_WHERE": {"fl", "fr"},
			"TT_WHERE": {"lt", "rt"}, "TT3_FULL": {"lt", "rt", "xt"}, "TT3_RIGHT": {"lt", "rt", "xt"},
			"TT3_FL": {"lt", "rt", "xt"},
		} {
			app := "sqlstreams_query_" + ids[sink]
			if strings.HasPrefix(sink, "ST_") {
				topics = append(topics, app+"-JOIN-CUST-repartition")
			}
			if sink == "TT3_FL" {
				// A FULL join's rows find xt's by their key through a
				// foreign-key join's topics.
				topics = append(topics, app+"-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-XT-topic",
					app+"-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-XT-topic")
			}
			if strings.HasPrefix(sink, "FK_") {
				// Subscriptions, then their answers.
				topics = append(topics, app+"-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-FR-topic",
					app+"-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-FR-topic")
			}
			for _, topic := range topics {
				joinCaughtUp(t, ctx, s.KafkaAddr, app, topic)
			}
		}
	}

	// Stream–table: table phases and stream phases alternate; a SIGKILL
	// in the middle of a stream phase.
	oseq, cseq := 0, 0
	custPhase := func() {
		var recs []*kgo.Record
		for i := 0; i < 60; i++ {
			id := "c" + strconv.Itoa(rng.IntN(40))
			var v []byte
			if rng.IntN(5) != 0 {
				v = fmt.Appendf(nil, `{"REGION":"r%d"}`, cseq)
			}
			// The header orders the records, tombstones too.
			recs = append(recs, &kgo.Record{Topic: "cust", Key: []byte(id), Value: v,
				Headers: []kgo.RecordHeader{{Key: "seq", Value: []byte(strconv.Itoa(cseq))}}})
			cseq++
		}
		produce(recs)
	}
	orderPhase := func(n int) {
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			recs = append(recs, &kgo.Record{Topic: "orders", Key: []byte("o" + strconv.Itoa(oseq)),
				Value: fmt.Appendf(nil, `{"CUST":"c%d","AMT":%d}`, rng.IntN(50), oseq)})
			oseq++
		}
		produce(recs)
	}
	// Table–table: updates and deletes on both sides, any order.
	tableChanges := func(n int) {
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			topic, field := "lt", "A"
			switch rng.IntN(3) {
			case 0:
				topic, field = "rt", "B"
			case 1:
				topic, field = "xt", "C"
			}
			var v []byte
			if rng.IntN(6) != 0 {
				v = fmt.Appendf(nil, `{"%s":%d}`, field, rng.IntN(1000))
			}
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("t" + strconv.Itoa(rng.IntN(150))), Value: v})
		}
		produce(recs)
	}
	// Foreign-key joins: left rows change their foreign key (to NULL one
	// time in eight) and values, right rows change; both sides delete.
	fkChanges := func(n int) {
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			var v []byte
			topic, key := "fl", "l"+strconv.Itoa(rng.IntN(200))
			switch {
			case rng.IntN(2) == 0:
				topic, key = "fr", "r"+strconv.Itoa(rng.IntN(40))
				if rng.IntN(6) != 0 {
					v = fmt.Appendf(nil, `{"B":%d}`, rng.IntN(1000))
				}
			case rng.IntN(6) == 0:
			case rng.IntN(8) == 0:
				v = fmt.Appendf(nil, `{"A":%d}`, rng.IntN(1000))
			default:
				v = fmt.Appendf(nil, `{"FK":"r%d","A":%d}`, rng.IntN(45), rng.IntN(1000))
			}
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(key), Value: v})
		}
		produce(recs)
	}
	// Stream–stream: rows out of order by up to 2 s. The grace period
	// (an hour) outlasts the run, so that what a row meets does not
	// depend on how far one topic is read ahead of the other; the
	// window's closing is covered by joins_streams.slt.
	now := int64(1_700_000_000_000)
	sseq := 0
	streamRows := func(n int) {
		var recs []*kgo.Record
		for i := 0; i < n; i++ {
			now += rng.Int64N(30)
			topic, field := "ls", "V"
			if rng.IntN(2) == 0 {
				topic, field = "rs", "W"
			}
			recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("s" + strconv.Itoa(rng.IntN(300))),
				Value: fmt.Appendf(nil, `{"%s":%d}`, field, sseq), Timestamp: time.UnixMilli(now - rng.Int64N(2000))})
			sseq++
		}
		produce(recs)
	}

	custPhase()
	tableChanges(1000)
	fkChanges(1000)
	streamRows(2000)
	caughtUp()
	orderPhase(1500)
	caughtUp()
	custPhase()
	tableChanges(1000)
	streamRows(2000)
	caughtUp()
	// A SIGKILL while the joins work through a stream phase.
	orderPhase(3000)
	tableChanges(1000)
	fkChanges(1500)
	streamRows(3000)
	// More orders of the same phase when the joins are through them
	// before the kill could catch ST_LEFT midway.
	written, committed := waitMidRun(t, ctx, s.KafkaAddr, "ST_LEFT", 10, func() { orderPhase(300) })
	t.Logf("SIGKILL with %d records written to ST_LEFT while waiting, %d of them committed", written, committed)
	crashAndRestart(t, s)
	kc.ForceMetadataRefresh()
	caughtUp()
	custPhase()
	tableChanges(500)
	fkChanges(500)
	caughtUp()
	phase3 := oseq
	orderPhase(1500)
	streamRows(2000)
	// Rows three hours later, on keys of their own (in every partition),
	// close every window.
	var flush []*kgo.Record
	for i := 0; i < 10; i++ {
		k := []byte("flush" + strconv.Itoa(i))
		flush = append(flush, &kgo.Record{Topic: "ls", Key: k, Value: []byte(`{"V":-1}`), Timestamp: time.UnixMilli(now + 3*3_600_000)},
			&kgo.Record{Topic: "rs", Key: k, Value: []byte(`{"W":-1}`), Timestamp: time.UnixMilli(now + 3*3_600_000)})
	}
	produce(flush)
	caughtUp()

	// The input as stored, into SQLite.
	var script bytes.Buffer
	script.WriteString(`.mode list
.nullvalue NULL
BEGIN;
CREATE TABLE cust (phase INT, seq INT, id TEXT, region TEXT, deleted INT);
CREATE TABLE orders (phase INT, oid TEXT, cust TEXT, amt INT);
CREATE TABLE tchanges (side TEXT, seq INT, id TEXT, val INT, deleted INT);
CREATE TABLE ss (side TEXT, k TEXT, val INT, ts INT);
CREATE TABLE fchanges (side TEXT, seq INT, id TEXT, fk TEXT, val INT, deleted INT);
`)
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	// Phases follow from the production order: each cust phase has 60
	// records, each stream phase follows one.
	for _, r := range readPartitioned(t, ctx, s.KafkaAddr, "cust") {
		var v struct{ Region string }
		if r.Value != nil {
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatal(err)
			}
		}
		seq, err := strconv.Atoi(string(r.Headers[0].Value))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "INSERT INTO cust VALUES (%d, %d, %s, %s, %d);\n", seq/60, seq, q(string(r.Key)), q(v.Region), b2i(r.Value == nil))
	}
	for _, r := range readPartitioned(t, ctx, s.KafkaAddr, "orders") {
		var v struct {
			Cust string
			Amt  int
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatal(err)
		}
		// Order phase n follows cust phase n: orders 0–1499 phase 1,
		// from 1500 phase 2 (3000 and those produced while waiting for
		// the kill), from phase3 phase 3.
		phase := 1
		switch {
		case v.Amt >= phase3:
			phase = 3
		case v.Amt >= 1500:
			phase = 2
		}
		fmt.Fprintf(&script, "INSERT INTO orders VALUES (%d, %s, %s, %d);\n", phase, q(string(r.Key)), q(v.Cust), v.Amt)
	}
	for _, topic := range []string{"lt", "rt", "xt"} {
		for _, r := range readPartitioned(t, ctx, s.KafkaAddr, topic) {
			var v struct{ A, B, C int }
			if r.Value != nil {
				if err := json.Unmarshal(r.Value, &v); err != nil {
					t.Fatal(err)
				}
			}
			fmt.Fprintf(&script, "INSERT INTO tchanges VALUES (%s, %d, %s, %d, %d);\n", q(topic), r.Offset, q(string(r.Key)), v.A+v.B+v.C, b2i(r.Value == nil))
		}
	}
	for _, topic := range []string{"fl", "fr"} {
		for _, r := range readPartitioned(t, ctx, s.KafkaAddr, topic) {
			var v struct {
				FK   *string
				A, B int
			}
			if r.Value != nil {
				if err := json.Unmarshal(r.Value, &v); err != nil {
					t.Fatal(err)
				}
			}
			fk := "NULL"
			if v.FK != nil {
				fk = q(*v.FK)
			}
			fmt.Fprintf(&script, "INSERT INTO fchanges VALUES (%s, %d, %s, %s, %d, %d);\n", q(topic), r.Offset, q(string(r.Key)), fk, v.A+v.B, b2i(r.Value == nil))
		}
	}
	for _, topic := range []string{"ls", "rs"} {
		for _, r := range readPartitioned(t, ctx, s.KafkaAddr, topic) {
			if strings.HasPrefix(string(r.Key), "flush") {
				continue
			}
			var v struct{ V, W int }
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&script, "INSERT INTO ss VALUES (%s, %s, %d, %d);\n", q(topic), q(string(r.Key)), v.V+v.W, r.Timestamp.UnixMilli())
		}
	}
	script.WriteString(`COMMIT;
CREATE VIEW st AS SELECT o.cust, o.oid, o.amt,
  (SELECT c.region FROM cust c WHERE c.id = o.cust AND c.phase < o.phase ORDER BY c.seq DESC LIMIT 1) AS region,
  (SELECT NOT c.deleted FROM cust c WHERE c.id = o.cust AND c.phase < o.phase ORDER BY c.seq DESC LIMIT 1) AS present
  FROM orders o;
CREATE VIEW lfin AS SELECT id, val FROM tchanges t WHERE side = 'lt' AND seq = (SELECT MAX(seq) FROM tchanges u WHERE u.side = 'lt' AND u.id = t.id) AND NOT deleted;
CREATE VIEW rfin AS SELECT id, val FROM tchanges t WHERE side = 'rt' AND seq = (SELECT MAX(seq) FROM tchanges u WHERE u.side = 'rt' AND u.id = t.id) AND NOT deleted;
CREATE VIEW xfin AS SELECT id, val FROM tchanges t WHERE side = 'xt' AND seq = (SELECT MAX(seq) FROM tchanges u WHERE u.side = 'xt' AND u.id = t.id) AND NOT deleted;
CREATE VIEW flfin AS SELECT id, fk, val FROM fchanges t WHERE side = 'fl' AND seq = (SELECT MAX(seq) FROM fchanges u WHERE u.side = 'fl' AND u.id = t.id) AND NOT deleted;
CREATE VIEW frfin AS SELECT id, val FROM fchanges t WHERE side = 'fr' AND seq = (SELECT MAX(seq) FROM fchanges u WHERE u.side = 'fr' AND u.id = t.id) AND NOT deleted;
CREATE VIEW l AS SELECT k, val, ts FROM ss WHERE side = 'ls';
CREATE VIEW r AS SELECT k, val, ts FROM ss WHERE side = 'rs';
SELECT '#ST_INNER';
SELECT cust, oid, amt, region FROM st WHERE present ORDER BY 1, 2;
SELECT '#ST_LEFT';
SELECT cust, oid, amt, CASE WHEN present THEN region END FROM st ORDER BY 1, 2;
SELECT '#TT_INNER';
SELECT l.id, l.val, r.val FROM lfin l JOIN rfin r ON l.id = r.id ORDER BY 1;
SELECT '#TT_LEFT';
SELECT l.id, l.val, r.val FROM lfin l LEFT JOIN rfin r ON l.id = r.id ORDER BY 1;
SELECT '#TT_RIGHT';
SELECT r.id, l.val, r.val FROM lfin l RIGHT JOIN rfin r ON l.id = r.id ORDER BY 1;
SELECT '#TT_FULL';
SELECT COALESCE(l.id, r.id), l.id, r.id, l.val, r.val FROM lfin l FULL OUTER JOIN rfin r ON l.id = r.id ORDER BY 1;
SELECT '#TT3_FULL';
SELECT COALESCE(lr.id, x.id), lr.a, lr.b, x.val FROM (SELECT l.id, l.val AS a, r.val AS b FROM lfin l JOIN rfin r ON l.id = r.id) lr FULL OUTER JOIN xfin x ON lr.id = x.id ORDER BY 1;
SELECT '#TT3_FL';
SELECT lr.id, lr.a, lr.b, x.val FROM (SELECT COALESCE(l.id, r.id) AS id, l.val AS a, r.val AS b FROM lfin l FULL OUTER JOIN rfin r ON l.id = r.id) lr LEFT JOIN xfin x ON lr.id = x.id ORDER BY 1;
SELECT '#TT3_RIGHT';
SELECT x.id, lr.a, lr.b, x.val FROM (SELECT l.id, l.val AS a, r.val AS b FROM lfin l LEFT JOIN rfin r ON l.id = r.id) lr RIGHT JOIN xfin x ON lr.id = x.id ORDER BY 1;
SELECT '#FK_INNER';
SELECT l.id, l.fk, l.val, r.val FROM flfin l JOIN frfin r ON l.fk = r.id ORDER BY 1;
SELECT '#FK_LEFT';
SELECT l.id, l.fk, l.val, r.val FROM flfin l LEFT JOIN frfin r ON l.fk = r.id ORDER BY 1;
SELECT '#FK_WHERE';
SELECT l.id, l.fk, l.val, r.val FROM flfin l JOIN frfin r ON l.fk = r.id WHERE l.val < 600 AND r.val >= 300 ORDER BY 1;
SELECT '#FK_LEFT_WHERE';
SELECT l.id, l.fk, l.val, r.val FROM flfin l LEFT JOIN frfin r ON l.fk = r.id WHERE r.val IS NULL OR r.val < 500 ORDER BY 1;
SELECT '#TT_WHERE';
SELECT l.id, l.val, r.val FROM lfin l LEFT JOIN rfin r ON l.id = r.id WHERE l.val + COALESCE(r.val, 0) < 1000 ORDER BY 1;
SELECT '#SS_INNER';
SELECT l.k, l.val, r.val, MAX(l.ts, r.ts) FROM l JOIN r ON l.k = r.k AND r.ts BETWEEN l.ts - 5000 AND l.ts + 5000 ORDER BY 1, 2, 3;
SELECT '#SS_LEFT';
SELECT * FROM (
  SELECT l.k, l.val, r.val, MAX(l.ts, r.ts) FROM l JOIN r ON l.k = r.k AND r.ts BETWEEN l.ts - 3000 AND l.ts + 5000
  UNION ALL
  SELECT l.k, l.val, NULL, l.ts FROM l WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.k = l.k AND r.ts BETWEEN l.ts - 3000 AND l.ts + 5000)
) ORDER BY 1, 2, 3;
SELECT '#SS_FULL';
SELECT * FROM (
  SELECT l.k, l.val, r.val, MAX(l.ts, r.ts) FROM l JOIN r ON l.k = r.k AND r.ts BETWEEN l.ts - 5000 AND l.ts + 5000
  UNION ALL
  SELECT l.k, l.val, NULL, l.ts FROM l WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.k = l.k AND r.ts BETWEEN l.ts - 5000 AND l.ts + 5000)
  UNION ALL
  SELECT r.k, NULL, r.val, r.ts FROM r WHERE NOT EXISTS (SELECT 1 FROM l WHERE l.k = r.k AND r.ts BETWEEN l.ts - 5000 AND l.ts + 5000)
) ORDER BY 1, 2, 3;
`)
	want := sqliteSections(t, ctx, sqlite, script.Bytes())

	// What the queries wrote, read_committed.
	str := jsonText
	record := func(r *kgo.Record, fields []string, ts bool) string {
		var m map[string]any
		if err := json.Unmarshal(r.Value, &m); err != nil {
			t.Fatalf("%s: %s: %v", r.Topic, r.Value, err)
		}
		parts := []string{string(r.Key)}
		for _, f := range fields {
			parts = append(parts, str(m[f]))
		}
		if ts {
			parts = append(parts, strconv.FormatInt(r.Timestamp.UnixMilli(), 10))
		}
		return strings.Join(parts, "|")
	}
	compare := func(name string, got []string) {
		t.Helper()
		w := want[name]
		slices.Sort(got)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s: %d rows, SQLite %d; first differences:\n%s", name, len(got), len(w), diff(got, w))
		} else {
			t.Logf("%s: %d rows, as SQLite", name, len(got))
		}
	}
	streamOut := func(topic string, fields []string, ts bool) []string {
		var got []string
		for _, r := range readPartitioned(t, ctx, s.KafkaAddr, topic) {
			if strings.HasPrefix(string(r.Key), "flush") {
				continue
			}
			got = append(got, record(r, fields, ts))
		}
		return got
	}
	tableOut := func(topic string, fields []string) []string {
		last := map[string]*kgo.Record{}
		for _, r := range readPartitioned(t, ctx, s.KafkaAddr, topic) {
			last[string(r.Key)] = r
		}
		var got []string
		for _, r := range last {
			if r.Value != nil {
				got = append(got, record(r, fields, false))
			}
		}
		return got
	}
	compare("ST_INNER", streamOut("ST_INNER", []string{"OID", "AMT", "REGION"}, false))
	compare("ST_LEFT", streamOut("ST_LEFT", []string{"OID", "AMT", "REGION"}, false))
	compare("TT_INNER", tableOut("TT_INNER", []string{"A", "B"}))
	compare("TT_LEFT", tableOut("TT_LEFT", []string{"A", "B"}))
	compare("TT_RIGHT", tableOut("TT_RIGHT", []string{"A", "B"}))
	compare("TT_FULL", tableOut("TT_FULL", []string{"LID", "RID", "A", "B"}))
	compare("FK_INNER", tableOut("FK_INNER", []string{"FK", "A", "B"}))
	compare("FK_LEFT", tableOut("FK_LEFT", []string{"FK", "A", "B"}))
	compare("FK_WHERE", tableOut("FK_WHERE", []string{"FK", "A", "B"}))
	compare("FK_LEFT_WHERE", tableOut("FK_LEFT_WHERE", []string{"FK", "A", "B"}))
	compare("TT_WHERE", tableOut("TT_WHERE", []string{"A", "B"}))
	compare("TT3_FULL", tableOut("TT3_FULL", []string{"A", "B", "C"}))
	compare("TT3_RIGHT", tableOut("TT3_RIGHT", []string{"A", "B", "C"}))
	compare("TT3_FL", tableOut("TT3_FL", []string{"A", "B", "C"}))
	compare("SS_INNER", streamOut("SS_INNER", []string{"V", "W"}, true))
	compare("SS_LEFT", streamOut("SS_LEFT", []string{"V", "W"}, true))
	compare("SS_FULL", streamOut("SS_FULL", []string{"V", "W"}, true))
	// The result tables answer pull queries with the same rows.
	conn = connect(t, ctx, s)
	pullEqual(t, ctx, conn, "SELECT l_id, a, b FROM tt_left", want["TT_LEFT"])
	pullEqual(t, ctx, conn, "SELECT k, lid, rid, a, b FROM tt_full", want["TT_FULL"])
	pullEqual(t, ctx, conn, "SELECT k, a, b, c FROM tt3_full", want["TT3_FULL"])
	pullEqual(t, ctx, conn, "SELECT l_id, fk, a, b FROM fk_left", want["FK_LEFT"])
	pullEqual(t, ctx, conn, "SELECT l_id, fk, a, b FROM fk_where", want["FK_WHERE"])
}

// pullEqual retries a pull query until its rows (NULL as "NULL") equal
// want, for up to 30 s.
func pullEqual(t *testing.T, ctx context.Context, conn *pgx.Conn, query string, want []string) {
	t.Helper()
	w := slices.Clone(want)
	slices.Sort(w)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := rows(t, ctx, conn, query)
		for i, r := range got {
			got[i] = strings.ReplaceAll(r, "<nil>", "NULL")
		}
		slices.Sort(got)
		if slices.Equal(got, w) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: %d rows, SQLite %d; first differences:\n%s", query, len(got), len(w), diff(got, w))
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// diff lists the first lines only one of two sorted lists has.
func diff(got, want []string) string {
	var b strings.Builder
	i, j, n := 0, 0, 0
	for (i < len(got) || j < len(want)) && n < 10 {
		switch {
		case j >= len(want) || (i < len(got) && got[i] < want[j]):
			fmt.Fprintf(&b, "  only ours:   %s\n", got[i])
			i++
			n++
		case i >= len(got) || want[j] < got[i]:
			fmt.Fprintf(&b, "  only SQLite: %s\n", want[j])
			j++
			n++
		default:
			i++
			j++
		}
	}
	return b.String()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// joinCaughtUp waits until group has committed offsets at the last
// stable offsets of topic (short of a repartition topic's last commit
// marker), and says where it is stuck when it fails.
func joinCaughtUp(t *testing.T, ctx context.Context, addr, group, topic string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var last string
	for {
		lso, err1 := adm.ListCommittedOffsets(ctx, topic)
		committed, err2 := adm.FetchOffsets(ctx, group)
		if err1 == nil && err2 == nil {
			caught := true
			last = ""
			lso.Each(func(o kadm.ListedOffset) {
				c, ok := committed.Lookup(topic, o.Partition)
				last += fmt.Sprintf(" p%d: lso %d committed %d (%v);", o.Partition, o.Offset, c.At, ok)
				// A transactional topic (a repartition topic, a foreign-key
				// join's subscription topics) ends in a
				// commit marker, which consumers do not commit past.
				end := o.Offset
				if (strings.HasSuffix(topic, "-repartition") || strings.HasSuffix(topic, "-topic")) && end > 0 {
					end--
				}
				if (!ok && end > 0) || (ok && c.At < end) {
					caught = false
				}
			})
			if caught {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %s never caught up on %s:%s", group, topic, last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// sqliteSections runs script with the sqlite3 command line in a new
// database and returns its output lines by section: a line "#NAME"
// starts section NAME.
func sqliteSections(t *testing.T, ctx context.Context, sqlite string, script []byte) map[string][]string {
	t.Helper()
	cmd := exec.CommandContext(ctx, sqlite, filepath.Join(t.TempDir(), "oracle.db"))
	cmd.Stdin = bytes.NewReader(script)
	outb, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3: %v\n%s", err, outb)
	}
	want := map[string][]string{}
	var cur string
	for _, l := range strings.Split(strings.TrimSpace(string(outb)), "\n") {
		if strings.HasPrefix(l, "#") {
			cur = l[1:]
			want[cur] = []string{}
			continue
		}
		want[cur] = append(want[cur], l)
	}
	return want
}

// jsonText renders a decoded JSON value as SQLite prints it: NULL, and
// numbers as integers.
func jsonText(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case float64:
		return strconv.FormatInt(int64(v), 10)
	}
	return fmt.Sprint(v)
}
