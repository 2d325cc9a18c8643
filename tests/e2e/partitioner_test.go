package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
	"github.com/sqlstreams/sqlstreams/types"
)

// confluentProducer produces lines "topic\tkey\tvalue" (value NULL: a
// tombstone) with confluent-kafka for Python (librdkafka) and its default
// partitioner, consistent_random: crc32 of the key.
const confluentProducer = `
import sys
from confluent_kafka import Producer
p = Producer({'bootstrap.servers': sys.argv[1]})
errors = []
def done(err, msg):
    if err is not None:
        errors.append(err)
for line in sys.stdin:
    topic, key, value = line.rstrip('\n').split('\t')
    p.produce(topic, key=key.encode(), value=None if value == 'NULL' else value.encode(), on_delivery=done)
    p.poll(0)
p.flush(30)
if errors:
    sys.exit('delivery failed: %s' % errors[0])
`

// TestLibrdkafkaPartitioners joins, and answers pull queries over, topics
// produced by librdkafka's clients with their defaults (kcat and
// confluent-kafka for Python: crc32 of the key, not the Java client's
// murmur2), declared WITH (PARTITIONER='crc32'), next to topics franz-go
// produced (murmur2), and compares every result with SQLite over the
// input as stored:
//
//   - stream–table: a crc32 stream repartitioned by a value column toward
//     a crc32 table, and a murmur2 stream keyed by the join key (it is
//     repartitioned by crc32 toward the table);
//   - table–table on a foreign key (LEFT), both crc32, with a row added
//     by INSERT VALUES (which writes a crc32 topic by crc32);
//   - table–table on the primary key: crc32 with murmur2 (INNER and FULL
//     OUTER) and crc32 with crc32 (co-partitioned);
//   - stream–table on a two-column JSON key;
//   - pull queries by key over a crc32 source table, and over a join's
//     result table.
//
// It also checks that librdkafka put every record in crc32(key) % n, and
// that a table over the same topic declared without PARTITIONER is
// reported: DESCRIBE EXTENDED, the metric, the processing log and the
// server log name the topic and the fix.
func TestLibrdkafkaPartitioners(t *testing.T) {
	sqlite := testtool.Need(t, "sqlite3", "Debian package sqlite3; scripts/deps.sh installs it")
	testtool.Need(t, "kcat", "scripts/deps.sh installs it")
	testtool.Probe(t, "Debian python3-confluent-kafka; scripts/deps.sh installs it", "/usr/bin/python3", "-I", "-c", "import confluent_kafka")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := startServer(t)
	conn := connect(t, ctx, s)
	for _, q := range []string{
		`CREATE TABLE persons (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (KAFKA_TOPIC='persons', VALUE_FORMAT='JSON', PARTITIONS=4, PARTITIONER='crc32')`,
		`CREATE STREAM auctions (aid VARCHAR KEY, seller VARCHAR, price BIGINT) WITH (KAFKA_TOPIC='auctions', VALUE_FORMAT='JSON', PARTITIONS=3, PARTITIONER='crc32')`,
		`CREATE STREAM bids (pid VARCHAR KEY, amt BIGINT) WITH (KAFKA_TOPIC='bids', VALUE_FORMAT='JSON', PARTITIONS=4)`,
		`CREATE TABLE customers (id VARCHAR PRIMARY KEY, region VARCHAR) WITH (KAFKA_TOPIC='customers', VALUE_FORMAT='JSON', PARTITIONS=4, PARTITIONER='crc32')`,
		`CREATE TABLE orders (oid VARCHAR PRIMARY KEY, cust VARCHAR, amt BIGINT) WITH (KAFKA_TOPIC='orders', VALUE_FORMAT='JSON', PARTITIONS=3, PARTITIONER='crc32')`,
		`CREATE TABLE ltab (id VARCHAR PRIMARY KEY, a BIGINT) WITH (KAFKA_TOPIC='ltab', VALUE_FORMAT='JSON', PARTITIONS=4, PARTITIONER='crc32')`,
		`CREATE TABLE rtab (id VARCHAR PRIMARY KEY, b BIGINT) WITH (KAFKA_TOPIC='rtab', VALUE_FORMAT='JSON', PARTITIONS=4)`,
		`CREATE TABLE ctab (id VARCHAR PRIMARY KEY, c BIGINT) WITH (KAFKA_TOPIC='ctab', VALUE_FORMAT='JSON', PARTITIONS=4, PARTITIONER='crc32')`,
		`CREATE TABLE prices (region VARCHAR PRIMARY KEY, item VARCHAR PRIMARY KEY, price BIGINT) WITH (KAFKA_TOPIC='prices', KEY_FORMAT='JSON', VALUE_FORMAT='JSON', PARTITIONS=4, PARTITIONER='crc32')`,
		`CREATE STREAM sales (sid VARCHAR KEY, region VARCHAR, item VARCHAR, qty BIGINT) WITH (KAFKA_TOPIC='sales', VALUE_FORMAT='JSON', PARTITIONS=2, PARTITIONER='crc32')`,
		`CREATE SOURCE TABLE persons_src (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (KAFKA_TOPIC='persons', VALUE_FORMAT='JSON', PARTITIONER='crc32')`,
		// The same topic declared with the default, murmur2: reported.
		`CREATE TABLE people_u (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (KAFKA_TOPIC='persons', VALUE_FORMAT='JSON')`,
		`CREATE STREAM st AS SELECT a.seller, aid, price, name FROM auctions a JOIN persons p ON a.seller = p.id`,
		`CREATE STREAM keyed AS SELECT b.pid, amt, name FROM bids b LEFT JOIN persons p ON b.pid = p.id`,
		`CREATE TABLE fkl AS SELECT o.oid, cust, amt, region FROM orders o LEFT JOIN customers c ON o.cust = c.id`,
		`CREATE TABLE pki AS SELECT l.id, a, b FROM ltab l JOIN rtab r ON l.id = r.id`,
		`CREATE TABLE pkf AS SELECT ROWKEY AS k, a, b FROM ltab l FULL OUTER JOIN rtab r ON l.id = r.id`,
		`CREATE TABLE pkc AS SELECT l.id, a, c FROM ltab l JOIN ctab c ON l.id = c.id`,
		`CREATE STREAM multi AS SELECT s.region, s.item, sid, qty, price FROM sales s JOIN prices p ON s.region = p.region AND s.item = p.item`,
		`CREATE STREAM det AS SELECT b.pid, amt, name FROM bids b LEFT JOIN people_u p ON b.pid = p.id`,
		// The same topics declared 'unknown': repartitioned by murmur2.
		`CREATE TABLE persons_x (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (KAFKA_TOPIC='persons', VALUE_FORMAT='JSON', PARTITIONER='unknown')`,
		`CREATE TABLE customers_x (id VARCHAR PRIMARY KEY, region VARCHAR) WITH (KAFKA_TOPIC='customers', VALUE_FORMAT='JSON', PARTITIONER='unknown')`,
		`CREATE SOURCE TABLE persons_xsrc (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (KAFKA_TOPIC='persons', VALUE_FORMAT='JSON', PARTITIONER='unknown')`,
		`CREATE STREAM stx AS SELECT a.seller, aid, price, name FROM auctions a JOIN persons_x p ON a.seller = p.id`,
		`CREATE TABLE fkx AS SELECT o.oid, cust, amt, region FROM orders o LEFT JOIN customers_x c ON o.cust = c.id`,
	} {
		exec1(t, ctx, conn, q)
	}
	ids := map[string]string{} // sink → query ID
	for _, r := range rows(t, ctx, conn, "SHOW QUERIES") {
		f := strings.Split(r, "|")
		ids[f[3]] = f[0]
	}

	rng := rand.New(rand.NewPCG(35, 1))
	type line = prodLine
	var kcatIn, pyIn, goIn []line
	// Tables first (updates and deletions in the mix), then the streams
	// once the joins have read them.
	for i := range 75 {
		kcatIn = append(kcatIn, line{"persons", fmt.Sprintf("p%d", i), fmt.Sprintf(`{"NAME":"name%d"}`, i)})
	}
	for i := range 12 {
		kcatIn = append(kcatIn, line{"persons", fmt.Sprintf("p%d", rng.IntN(75)), fmt.Sprintf(`{"NAME":"renamed%d"}`, i)})
	}
	for range 5 {
		kcatIn = append(kcatIn, line{"persons", fmt.Sprintf("p%d", rng.IntN(75)), "NULL"})
	}
	for i := range 60 {
		kcatIn = append(kcatIn, line{"customers", fmt.Sprintf("c%d", i), fmt.Sprintf(`{"REGION":"region%d"}`, i%7)})
	}
	for range 5 {
		kcatIn = append(kcatIn, line{"customers", fmt.Sprintf("c%d", rng.IntN(60)), "NULL"})
	}
	for i := range 80 {
		kcatIn = append(kcatIn, line{"ltab", fmt.Sprintf("k%d", i), fmt.Sprintf(`{"A":%d}`, i)})
	}
	for i := range 60 {
		kcatIn = append(kcatIn, line{"ctab", fmt.Sprintf("k%d", i*2), fmt.Sprintf(`{"C":%d}`, 1000+i)})
	}
	for range 6 {
		kcatIn = append(kcatIn, line{"ltab", fmt.Sprintf("k%d", rng.IntN(80)), "NULL"})
	}
	for i := range 80 {
		goIn = append(goIn, line{"rtab", fmt.Sprintf("k%d", 20+i), fmt.Sprintf(`{"B":%d}`, 500+i)})
	}
	for range 6 {
		goIn = append(goIn, line{"rtab", fmt.Sprintf("k%d", 20+rng.IntN(80)), "NULL"})
	}
	for i := range 192 {
		pyIn = append(pyIn, line{"orders", fmt.Sprintf("o%d", i), fmt.Sprintf(`{"CUST":"c%d","AMT":%d}`, rng.IntN(70), i)})
	}
	pyIn = append(pyIn, line{"orders", "o900", `{"CUST":"c900","AMT":900}`}) // c900 comes by INSERT VALUES
	for range 20 {
		pyIn = append(pyIn, line{"orders", fmt.Sprintf("o%d", rng.IntN(192)), fmt.Sprintf(`{"CUST":"c%d","AMT":%d}`, rng.IntN(70), 2000+rng.IntN(100))})
	}
	for r := range 5 {
		for i := range 6 {
			pyIn = append(pyIn, line{"prices", fmt.Sprintf(`{"REGION":"r%d","ITEM":"i%d"}`, r, i), fmt.Sprintf(`{"PRICE":%d}`, 10*r+i)})
		}
	}
	kcatProduce(t, ctx, s.KafkaAddr, kcatIn)
	pythonProduce(t, ctx, s.KafkaAddr, pyIn)
	goProduce(t, ctx, s.KafkaAddr, goIn)
	exec1(t, ctx, conn, `INSERT INTO customers (id, region) VALUES ('c900', 'inserted')`)
	queryTopics := map[string][]string{
		"ST": {"auctions", "persons"}, "KEYED": {"bids", "persons"}, "DET": {"bids", "persons"},
		"FKL": {"orders", "customers"}, "PKI": {"ltab", "rtab"}, "PKF": {"ltab", "rtab"}, "PKC": {"ltab", "ctab"},
		"MULTI": {"sales", "prices"}, "STX": {"auctions", "persons"}, "FKX": {"orders", "customers"},
	}
	caughtUp := func() {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		// Twice: a foreign-key join's responses follow its subscriptions.
		for range 2 {
			for sink, topics := range queryTopics {
				app := "sqlstreams_query_" + ids[sink]
				all, err := kadm.NewClient(cl).ListTopics(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, name := range all.Names() {
					if strings.HasPrefix(name, app+"-") && (strings.HasSuffix(name, "-repartition") || strings.HasSuffix(name, "-topic")) {
						topics = append(topics, name)
					}
				}
				for _, topic := range topics {
					joinCaughtUp(t, ctx, s.KafkaAddr, app, topic)
				}
			}
		}
	}
	caughtUp()

	// The streams, after the tables.
	var streams []line
	for i := range 200 {
		streams = append(streams, line{"auctions", fmt.Sprintf("a%d", i), fmt.Sprintf(`{"SELLER":"p%d","PRICE":%d}`, rng.IntN(90), 100+i)})
	}
	var kstreams []line
	for i := range 130 {
		kstreams = append(kstreams, line{"sales", fmt.Sprintf("s%d", i), fmt.Sprintf(`{"REGION":"r%d","ITEM":"i%d","QTY":%d}`, rng.IntN(6), rng.IntN(7), i)})
	}
	var gstreams []line
	for i := range 150 {
		gstreams = append(gstreams, line{"bids", fmt.Sprintf("p%d", rng.IntN(90)), fmt.Sprintf(`{"AMT":%d}`, i)})
	}
	pythonProduce(t, ctx, s.KafkaAddr, streams)
	kcatProduce(t, ctx, s.KafkaAddr, kstreams)
	goProduce(t, ctx, s.KafkaAddr, gstreams)
	caughtUp()

	// librdkafka put every keyed record in crc32(key) % n; franz-go in
	// murmur2(key) % n; and enough keys differ between the two for the
	// joins to have failed without PARTITIONER.
	records := map[string][]*kgo.Record{}
	parts := map[string]int32{"persons": 4, "auctions": 3, "bids": 4, "customers": 4, "orders": 3, "ltab": 4, "rtab": 4, "ctab": 4, "prices": 4, "sales": 2}
	differ := 0
	for topic, n := range parts {
		records[topic] = readPartitioned(t, ctx, s.KafkaAddr, topic)
		for _, r := range records[topic] {
			want := types.CRC32Partition(r.Key, n)
			by := "librdkafka's crc32"
			if topic == "bids" || topic == "rtab" {
				want, by = types.Murmur2Partition(r.Key, n), "franz-go's murmur2"
			}
			if r.Partition != want {
				t.Errorf("%s: key %s in partition %d, %s says %d", topic, r.Key, r.Partition, by, want)
			}
			if types.CRC32Partition(r.Key, n) != types.Murmur2Partition(r.Key, n) {
				differ++
			}
		}
	}
	if differ < 200 {
		t.Errorf("only %d records have different crc32 and murmur2 partitions: the test would not notice a wrong partitioner", differ)
	}

	// SQLite over the tables' last rows and the streams' records.
	final := func(topic string) map[string]map[string]any {
		out := map[string]map[string]any{}
		for _, r := range records[topic] {
			if r.Value == nil {
				delete(out, string(r.Key))
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatal(err)
			}
			out[string(r.Key)] = m
		}
		return out
	}
	q := func(v any) string {
		switch v := v.(type) {
		case nil:
			return "NULL"
		case float64:
			return strconv.FormatInt(int64(v), 10)
		}
		return "'" + strings.ReplaceAll(fmt.Sprint(v), "'", "''") + "'"
	}
	var script strings.Builder
	script.WriteString(`.nullvalue NULL
CREATE TABLE persons (id TEXT PRIMARY KEY, name TEXT);
CREATE TABLE customers (id TEXT PRIMARY KEY, region TEXT);
CREATE TABLE orders (oid TEXT PRIMARY KEY, cust TEXT, amt INTEGER);
CREATE TABLE ltab (id TEXT PRIMARY KEY, a INTEGER);
CREATE TABLE rtab (id TEXT PRIMARY KEY, b INTEGER);
CREATE TABLE ctab (id TEXT PRIMARY KEY, c INTEGER);
CREATE TABLE prices (region TEXT, item TEXT, price INTEGER);
CREATE TABLE auctions (aid TEXT, seller TEXT, price INTEGER);
CREATE TABLE bids (pid TEXT, amt INTEGER);
CREATE TABLE sales (sid TEXT, region TEXT, item TEXT, qty INTEGER);
BEGIN;
`)
	for k, m := range final("persons") {
		fmt.Fprintf(&script, "INSERT INTO persons VALUES (%s, %s);\n", q(k), q(m["NAME"]))
	}
	for k, m := range final("customers") {
		fmt.Fprintf(&script, "INSERT INTO customers VALUES (%s, %s);\n", q(k), q(m["REGION"]))
	}
	for k, m := range final("orders") {
		fmt.Fprintf(&script, "INSERT INTO orders VALUES (%s, %s, %s);\n", q(k), q(m["CUST"]), q(m["AMT"]))
	}
	for _, tc := range [][2]string{{"ltab", "A"}, {"rtab", "B"}, {"ctab", "C"}} {
		for k, m := range final(tc[0]) {
			fmt.Fprintf(&script, "INSERT INTO %s VALUES (%s, %s);\n", tc[0], q(k), q(m[tc[1]]))
		}
	}
	for k, m := range final("prices") {
		var key struct{ REGION, ITEM string }
		if err := json.Unmarshal([]byte(k), &key); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&script, "INSERT INTO prices VALUES (%s, %s, %s);\n", q(key.REGION), q(key.ITEM), q(m["PRICE"]))
	}
	value := func(r *kgo.Record) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(r.Value, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, r := range records["auctions"] {
		m := value(r)
		fmt.Fprintf(&script, "INSERT INTO auctions VALUES (%s, %s, %s);\n", q(string(r.Key)), q(m["SELLER"]), q(m["PRICE"]))
	}
	for _, r := range records["bids"] {
		fmt.Fprintf(&script, "INSERT INTO bids VALUES (%s, %s);\n", q(string(r.Key)), q(value(r)["AMT"]))
	}
	for _, r := range records["sales"] {
		m := value(r)
		fmt.Fprintf(&script, "INSERT INTO sales VALUES (%s, %s, %s, %s);\n", q(string(r.Key)), q(m["REGION"]), q(m["ITEM"]), q(m["QTY"]))
	}
	script.WriteString(`COMMIT;
SELECT '#ST';
SELECT a.seller, a.aid, a.price, p.name FROM auctions a JOIN persons p ON a.seller = p.id;
SELECT '#KEYED';
SELECT b.pid, b.amt, p.name FROM bids b LEFT JOIN persons p ON b.pid = p.id;
SELECT '#FKL';
SELECT o.oid, o.cust, o.amt, c.region FROM orders o LEFT JOIN customers c ON o.cust = c.id;
SELECT '#PKI';
SELECT l.id, a, b FROM ltab l JOIN rtab r ON l.id = r.id;
SELECT '#PKF';
SELECT COALESCE(l.id, r.id), a, b FROM ltab l FULL OUTER JOIN rtab r ON l.id = r.id;
SELECT '#PKC';
SELECT l.id, a, c FROM ltab l JOIN ctab c ON l.id = c.id;
SELECT '#MULTI';
SELECT s.sid, s.qty, p.price FROM sales s JOIN prices p ON s.region = p.region AND s.item = p.item;
SELECT '#PERSONS';
SELECT id, name FROM persons;
`)
	want := sqliteSections(t, ctx, sqlite, []byte(script.String()))
	str := jsonText
	row := func(key string, m map[string]any, fields ...string) string {
		parts := []string{}
		if key != "" {
			parts = append(parts, key)
		}
		for _, f := range fields {
			parts = append(parts, str(m[f]))
		}
		return strings.Join(parts, "|")
	}
	compare := func(name string, got []string) {
		t.Helper()
		w := slices.Clone(want[name])
		slices.Sort(got)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s: %d rows, SQLite %d; first differences:\n%s", name, len(got), len(w), diff(got, w))
		} else {
			t.Logf("%s: %d rows, as SQLite", name, len(got))
		}
	}
	streamOut := func(topic string, withKey bool, fields ...string) []string {
		var got []string
		for _, r := range readPartitioned(t, ctx, s.KafkaAddr, topic) {
			k := ""
			if withKey {
				k = string(r.Key)
			}
			got = append(got, row(k, value(r), fields...))
		}
		return got
	}
	tableOut := func(topic string, fields ...string) []string {
		last := map[string]*kgo.Record{}
		for _, r := range readPartitioned(t, ctx, s.KafkaAddr, topic) {
			last[string(r.Key)] = r
		}
		var got []string
		for k, r := range last {
			if r.Value != nil {
				got = append(got, row(k, value(r), fields...))
			}
		}
		return got
	}
	compare("ST", streamOut("ST", true, "AID", "PRICE", "NAME"))
	compare("KEYED", streamOut("KEYED", true, "AMT", "NAME"))
	compare("FKL", tableOut("FKL", "CUST", "AMT", "REGION"))
	compare("PKI", tableOut("PKI", "A", "B"))
	compare("PKF", tableOut("PKF", "A", "B"))
	compare("PKC", tableOut("PKC", "A", "C"))
	compare("MULTI", streamOut("MULTI", false, "SID", "QTY", "PRICE"))
	want["STX"], want["FKX"] = want["ST"], want["FKL"]
	compare("STX", streamOut("STX", true, "AID", "PRICE", "NAME"))
	compare("FKX", tableOut("FKX", "CUST", "AMT", "REGION"))
	if !slices.Contains(want["FKL"], "o900|c900|900|inserted") {
		t.Errorf("SQLite's FKL lacks o900 joined to the customer INSERT VALUES added: %v", want["FKL"])
	}
	for _, r := range records["customers"] {
		if string(r.Key) == "c900" && r.Partition != types.CRC32Partition(r.Key, 4) {
			t.Errorf("INSERT VALUES wrote c900 to partition %d of customers, its crc32 partition is %d", r.Partition, types.CRC32Partition(r.Key, 4))
		}
	}

	// Pull queries: by key over the crc32 source table (every key, those
	// without a row too), a scan of it, and the join's result table.
	conn = connect(t, ctx, s)
	persons := map[string]string{}
	for _, l := range want["PERSONS"] {
		id, name, _ := strings.Cut(l, "|")
		persons[id] = name
	}
	pullEqual(t, ctx, conn, "SELECT id, name FROM persons_src", want["PERSONS"])
	for i := range 90 {
		id := fmt.Sprintf("p%d", i)
		got := rows(t, ctx, conn, fmt.Sprintf("SELECT id, name FROM persons_src WHERE id = '%s'", id))
		var w []string
		if name, ok := persons[id]; ok {
			w = []string{id + "|" + name}
		}
		if !slices.Equal(got, w) {
			t.Errorf("pull of %s: %q, want %q", id, got, w)
		}
	}
	pullEqual(t, ctx, conn, "SELECT oid, cust, amt, region FROM fkl", want["FKL"])
	pullEqual(t, ctx, conn, "SELECT id, name FROM persons_xsrc", want["PERSONS"])
	for i := range 90 {
		id := fmt.Sprintf("p%d", i)
		got := rows(t, ctx, conn, fmt.Sprintf("SELECT id, name FROM persons_xsrc WHERE id = '%s'", id))
		if name, ok := persons[id]; ok != (len(got) == 1) || ok && got[0] != id+"|"+name {
			t.Errorf("pull of %s from PERSONS_XSRC (unknown): %q, want %q", id, got, name)
		}
	}
	for _, l := range want["FKL"][:20] {
		oid, _, _ := strings.Cut(l, "|")
		if got := rows(t, ctx, conn, fmt.Sprintf("SELECT oid, cust, amt, region FROM fkl WHERE oid = '%s'", oid)); len(got) != 1 || strings.ReplaceAll(got[0], "<nil>", "NULL") != l {
			t.Errorf("pull of %s from FKL: %q, want %q", oid, got, l)
		}
	}

	// The table declared without PARTITIONER over the crc32 topic is
	// reported: DESCRIBE EXTENDED, the metric, the processing log and
	// the server log.
	var misplacedRow string
	for _, r := range rows(t, ctx, conn, "DESCRIBE EXTENDED people_u") {
		if strings.HasPrefix(r, "records outside their key's murmur2 partition|") {
			misplacedRow = r
		}
		if strings.HasPrefix(r, "partitioner|") && r != "partitioner|murmur2" {
			t.Errorf("DESCRIBE EXTENDED people_u: %q, want partitioner murmur2", r)
		}
	}
	if m := regexp.MustCompile(`\|(\d+) of (\d+) keyed records`).FindStringSubmatch(misplacedRow); m == nil || m[1] == "0" || !strings.Contains(misplacedRow, "PARTITIONER='crc32'") {
		t.Errorf("DESCRIBE EXTENDED people_u: %q, want misplaced records counted and the fix", misplacedRow)
	} else {
		t.Logf("DESCRIBE EXTENDED people_u: %s", misplacedRow)
	}
	// persons, declared crc32, is checked against crc32: nothing outside.
	var crcRow string
	for _, r := range rows(t, ctx, conn, "DESCRIBE EXTENDED persons") {
		if strings.HasPrefix(r, "records outside their key's crc32 partition|") {
			crcRow = r
		}
		if strings.HasPrefix(r, "partitioner|") && r != "partitioner|crc32" {
			t.Errorf("DESCRIBE EXTENDED persons: %q, want partitioner crc32", r)
		}
	}
	if !strings.Contains(crcRow, "|0 of ") || strings.Contains(crcRow, "|0 of 0 ") {
		t.Errorf("DESCRIBE EXTENDED persons (declared crc32): %q, want its records checked against crc32, none outside", crcRow)
	}
	resp, err := http.Get("http://" + s.HTTPAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	metric := regexp.MustCompile(`sqlstreams_source_misplaced_records_total\{query_id="` + ids["DET"] + `",source="PEOPLE_U",topic="persons"\} (\d+)`).FindSubmatch(body)
	if metric == nil || string(metric[1]) == "0" {
		t.Errorf("/metrics has no misplaced records of PEOPLE_U for %s:\n%s", ids["DET"], grepLines(body, "sqlstreams_source_"))
	}
	if !bytes.Contains(body, []byte(`sqlstreams_source_misplaced_records_total{query_id="`+ids["ST"]+`",source="PERSONS",topic="persons"} 0`)) {
		t.Errorf("/metrics lacks ST's check of PERSONS (crc32) at 0:\n%s", grepLines(body, "sqlstreams_source_"))
	}
	var found bool
	for _, r := range readPartitioned(t, ctx, s.KafkaAddr, "sqlstreams_processing_log") {
		var e struct{ Query, Topic, Error string }
		if json.Unmarshal(r.Value, &e) == nil && e.Query == ids["DET"] && e.Topic == "persons" && strings.Contains(e.Error, "PARTITIONER='crc32'") {
			found = true
		}
	}
	if !found {
		t.Error("the processing log has no entry of DET naming topic persons and the fix")
	}
	if log := s.Log(); !strings.Contains(log, "source PEOPLE_U") || !strings.Contains(log, "of topic persons are not in their key's murmur2 partition") {
		t.Error("the server log does not warn of PEOPLE_U's records outside their murmur2 partitions")
	}

	// Its queries were planned for murmur2: OR REPLACE cannot change it.
	if _, err := conn.Exec(ctx, `CREATE OR REPLACE TABLE people_u (id VARCHAR PRIMARY KEY, name VARCHAR) WITH (KAFKA_TOPIC='persons', VALUE_FORMAT='JSON', PARTITIONER='crc32')`); err == nil || !strings.Contains(err.Error(), "PARTITIONER cannot change (murmur2 to crc32)") {
		t.Errorf("CREATE OR REPLACE changing PARTITIONER: %v, want a refusal", err)
	}

	// A restart replays the declarations with their PARTITIONER.
	stopAndRestart(t, s)
	conn = connect(t, ctx, s)
	if got := rows(t, ctx, conn, "DESCRIBE EXTENDED persons"); !slices.Contains(got, "partitioner|crc32") {
		t.Errorf("after a restart, DESCRIBE EXTENDED persons: %q, want partitioner crc32", got)
	}
	pullEventually(t, ctx, conn, "SELECT oid, cust, amt, region FROM fkl", want["FKL"])
	exec1(t, ctx, conn, `INSERT INTO customers (id, region) VALUES ('c901', 'after')`)
	pythonProduce(t, ctx, s.KafkaAddr, []prodLine{{"orders", "o901", `{"CUST":"c901","AMT":901}`}})
	pullEventually(t, ctx, conn, "SELECT oid, cust, amt, region FROM fkl WHERE oid = 'o901'", []string{"o901|c901|901|after"})
}

// pullEventually is pullEqual retrying errors too (stores restoring
// after a restart), for up to 60 s.
func pullEventually(t *testing.T, ctx context.Context, conn *pgx.Conn, query string, want []string) {
	t.Helper()
	w := slices.Clone(want)
	slices.Sort(w)
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := tryRows(ctx, conn, query)
		for i, r := range got {
			got[i] = strings.ReplaceAll(r, "<nil>", "NULL")
		}
		slices.Sort(got)
		if err == nil && slices.Equal(got, w) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: %v; %d rows, want %d; first differences:\n%s", query, err, len(got), len(w), diff(got, w))
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// prodLine is a record to produce; value "NULL" is a tombstone.
type prodLine struct{ topic, key, value string }

// grepLines returns body's lines containing s.
func grepLines(body []byte, s string) string {
	var out []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.Contains(l, s) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// kcatProduce produces lines with kcat and librdkafka's default
// partitioner, one kcat per topic.
func kcatProduce(t *testing.T, ctx context.Context, addr string, lines []prodLine) {
	t.Helper()
	byTopic := map[string]*bytes.Buffer{}
	var order []string
	for _, l := range lines {
		b := byTopic[l.topic]
		if b == nil {
			b = &bytes.Buffer{}
			byTopic[l.topic] = b
			order = append(order, l.topic)
		}
		v := l.value
		if v == "NULL" {
			v = "" // -Z: an empty value is a null one
		}
		fmt.Fprintf(b, "%s|%s\n", l.key, v)
	}
	for _, topic := range order {
		cmd := exec.CommandContext(ctx, "kcat", "-b", addr, "-P", "-t", topic, "-K", "|", "-Z")
		cmd.Stdin = byTopic[topic]
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kcat -P -t %s: %v\n%s", topic, err, out)
		}
	}
}

// pythonProduce produces lines with confluent-kafka for Python and its
// default partitioner.
func pythonProduce(t *testing.T, ctx context.Context, addr string, lines []prodLine) {
	t.Helper()
	if len(lines) == 0 {
		return
	}
	var in bytes.Buffer
	for _, l := range lines {
		fmt.Fprintf(&in, "%s\t%s\t%s\n", l.topic, l.key, l.value)
	}
	script := filepath.Join(t.TempDir(), "produce.py")
	if err := os.WriteFile(script, []byte(confluentProducer), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, "/usr/bin/python3", script, addr)
	cmd.Stdin = &in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("confluent-kafka producer: %v\n%s", err, out)
	}
}

// goProduce produces lines with franz-go's default partitioner (murmur2).
func goProduce(t *testing.T, ctx context.Context, addr string, lines []prodLine) {
	t.Helper()
	if len(lines) == 0 {
		return
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for _, l := range lines {
		r := &kgo.Record{Topic: l.topic, Key: []byte(l.key)}
		if l.value != "NULL" {
			r.Value = []byte(l.value)
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing: %v", err)
	}
}
