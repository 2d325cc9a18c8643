package engine_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/types"
)

// tableAggregates are the aggregates TestTableAggregatesDifferential
// checks over a table, with the output column each one's value is in.
// Every aggregate that can take a row back out (expr.Undoer) must be
// here: TestTableAggregatesDifferential checks that too.
var tableAggregates = map[string]string{
	"COUNT":          "C, CS",
	"SUM":            "SP, SA, SR, SB",
	"AVG":            "AP, AB",
	"STDDEV_SAMP":    "VA",
	"STDDEV_SAMPLE":  "SDA",
	"CORRELATION":    "CORR",
	"COUNT_DISTINCT": "CD",
	"COLLECT_LIST":   "CL",
	"COLLECT_SET":    "CSET",
	"HISTOGRAM":      "H",
	"ATTR":           "AT",
	"SUM_LIST":       "SL",
}

const aggDiffQuery = `CREATE TABLE agg WITH (KAFKA_TOPIC='agg') AS SELECT cat,
  COUNT(*) AS c, COUNT(seller) AS cs,
  SUM(price) AS sp, SUM(amount) AS sa, SUM(reserve) AS sr, SUM(big) AS sb,
  AVG(price) AS ap, AVG(big) AS ab,
  STDDEV_SAMP(amount) AS va, STDDEV_SAMPLE(amount) AS sda, CORRELATION(price, amount) AS corr,
  COUNT_DISTINCT(seller) AS cd, COLLECT_LIST(seller) AS cl, COLLECT_SET(seller) AS cset,
  HISTOGRAM(seller) AS h, ATTR(seller) AS at, SUM_LIST(bids) AS sl
FROM auctions GROUP BY cat;`

// The oracle: the table's final rows (the latest operation of each id,
// unless a deletion), then per category what each aggregate should give,
// as the text aggRow builds from the query's output. STDDEV_SAMPLE and
// CORRELATION come as their sums, finished in Go (sqrtOf, corrOf).
const aggDiffOracle = `
CREATE TABLE fin AS SELECT * FROM ops o WHERE seq = (SELECT MAX(seq) FROM ops p WHERE p.id = o.id) AND del = 0;
SELECT cat, COUNT(*), COUNT(seller), IFNULL(SUM(price), 0), printf('%.2f', IFNULL(SUM(amount), 0)),
  printf('%.2f', IFNULL(SUM(cents), 0) / 100.0), printf('%.2f', IFNULL(SUM(bigcents), 0) / 100.0),
  IFNULL(printf('%.6f', AVG(price)), 'NULL'), IFNULL(printf('%.6f', AVG(bigcents) / 100.0), 'NULL'),
  printf('%.6f', CASE WHEN COUNT(amount) < 2 THEN 0.0 ELSE (SUM(amount * amount) - SUM(amount) * SUM(amount) / COUNT(amount)) / (COUNT(amount) - 1) END),
  printf('%.6f', CASE WHEN COUNT(amount) < 2 THEN 0.0 ELSE sqrt((SUM(amount * amount) - SUM(amount) * SUM(amount) / COUNT(amount)) / (COUNT(amount) - 1)) END),
  (SELECT COUNT(*) || ',' || IFNULL(SUM(price), 0) || ',' || IFNULL(SUM(amount), 0) || ',' || IFNULL(SUM(price * price), 0) || ',' || IFNULL(SUM(amount * amount), 0) || ',' || IFNULL(SUM(price * amount), 0)
     FROM fin g WHERE g.cat = f.cat AND price IS NOT NULL AND amount IS NOT NULL),
  COUNT(DISTINCT seller),
  (SELECT IFNULL(group_concat(s, ','), '') FROM (SELECT IFNULL(seller, '~') AS s FROM fin g WHERE g.cat = f.cat ORDER BY s)),
  (SELECT IFNULL(group_concat(s, ','), '') FROM (SELECT DISTINCT IFNULL(seller, '~') AS s FROM fin g WHERE g.cat = f.cat ORDER BY s)),
  (SELECT IFNULL(group_concat(s || ':' || n, ','), '') FROM (SELECT seller AS s, COUNT(*) AS n FROM fin g WHERE g.cat = f.cat AND seller IS NOT NULL GROUP BY seller ORDER BY seller)),
  CASE WHEN COUNT(DISTINCT IFNULL(seller, '~')) = 1 THEN IFNULL(MIN(seller), 'NULL') ELSE 'NULL' END,
  (SELECT IFNULL(SUM(j.value), 0) FROM fin g, json_each(g.bids) j WHERE g.cat = f.cat)
FROM fin f GROUP BY cat ORDER BY cat;
`

// TestTableAggregatesDifferential aggregates a table under random
// inserts, updates (rows moving between groups, values turning NULL)
// and deletions with every aggregate that can take a row back out, and
// checks the final result against SQLite's over the table's final rows.
// COUNT_DISTINCT and COLLECT_SET once forgot a value when one of several
// rows holding it went.
func TestTableAggregatesDifferential(t *testing.T) {
	sqlite, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Fatal("the sqlite3 command (Debian package sqlite3) is this test's oracle; scripts/deps.sh installs it")
	}
	checkCoverage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	eng, brokers := openPullEngine(t, ctx)
	s := engine.NewSession()
	for _, stmt := range []string{
		"CREATE TABLE auctions (id INT PRIMARY KEY, cat INT, seller VARCHAR, price INT, amount DOUBLE, reserve DECIMAL(10, 2), big DECIMAL(30, 2), bids ARRAY<INT>) WITH (KAFKA_TOPIC='auctions', VALUE_FORMAT='JSON', PARTITIONS=2);",
		"SET 'auto.offset.reset'='earliest';",
		aggDiffQuery,
	} {
		if _, err := eng.Execute(ctx, s, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	const ids, ops, cats, sellers = 600, 3000, 8, 12
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rnd := rand.New(rand.NewSource(seed))
	var script bytes.Buffer
	script.WriteString("CREATE TABLE ops (seq INTEGER, id INTEGER, del INTEGER, cat INTEGER, seller TEXT, price INTEGER, amount REAL, cents INTEGER, bigcents INTEGER, bids TEXT);\nBEGIN;\n")
	var recs []*kgo.Record
	for i := 0; i < ops; i++ {
		id := rnd.Intn(ids)
		if i > ids && rnd.Intn(100) < 15 {
			recs = append(recs, &kgo.Record{Key: intKey(id)})
			fmt.Fprintf(&script, "INSERT INTO ops VALUES (%d, %d, 1, NULL, NULL, NULL, NULL, NULL, NULL, NULL);\n", i, id)
			continue
		}
		cat := rnd.Intn(cats)
		seller, sellerSQL := "null", "NULL"
		if rnd.Intn(10) > 0 {
			v := fmt.Sprintf("s%d", rnd.Intn(sellers))
			seller, sellerSQL = strconv.Quote(v), "'"+v+"'"
		}
		price, priceSQL := "null", "NULL"
		if rnd.Intn(20) > 0 {
			p := rnd.Intn(1000) - 100
			price, priceSQL = strconv.Itoa(p), strconv.Itoa(p)
		}
		amount, amountSQL := "null", "NULL"
		if rnd.Intn(20) > 0 {
			a := float64(rnd.Intn(4000)) / 4 // exact in binary: sums are exact
			amount = strconv.FormatFloat(a, 'f', -1, 64)
			amountSQL = amount
		}
		cents := rnd.Intn(100000)
		bigCents := rnd.Intn(10000000)
		big, bigSQL := fmt.Sprintf("%d.%02d", bigCents/100, bigCents%100), strconv.Itoa(bigCents)
		if rnd.Intn(20) == 0 {
			big, bigSQL = "null", "NULL"
		}
		bids, bidsSQL := "null", "NULL"
		if rnd.Intn(10) > 0 {
			var b []string
			for n := rnd.Intn(4); n > 0; n-- {
				b = append(b, strconv.Itoa(rnd.Intn(50)))
			}
			bids = "[" + strings.Join(b, ",") + "]"
			bidsSQL = "'" + bids + "'"
		}
		recs = append(recs, &kgo.Record{Key: intKey(id), Value: fmt.Appendf(nil,
			`{"CAT":%d,"SELLER":%s,"PRICE":%s,"AMOUNT":%s,"RESERVE":%d.%02d,"BIG":%s,"BIDS":%s}`,
			cat, seller, price, amount, cents/100, cents%100, big, bids)})
		fmt.Fprintf(&script, "INSERT INTO ops VALUES (%d, %d, 0, %d, %s, %s, %s, %d, %s, %s);\n",
			i, id, cat, sellerSQL, priceSQL, amountSQL, cents, bigSQL, bidsSQL)
	}
	script.WriteString("COMMIT;\n.mode list\n.separator |\n" + aggDiffOracle)
	produce(t, ctx, brokers, "auctions", recs...)

	cmd := exec.CommandContext(ctx, sqlite, ":memory:")
	cmd.Stdin = &script
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3: %v\n%s", err, out)
	}
	want := map[int]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(l, "|")
		cat, _ := strconv.Atoi(f[0])
		f[11] = corrOf(f[11])
		want[cat] = strings.Join(f[1:], "|")
	}

	// The query's output, latest per category, until it agrees.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("agg"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int]string{}
	var diff string
	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("the query's result never agreed with SQLite's (seed %d):\n%s", seed, diff)
		}
		fs.EachRecord(func(r *kgo.Record) {
			cat := int(int32(binary.BigEndian.Uint32(r.Key)))
			if r.Value == nil {
				delete(got, cat)
				return
			}
			got[cat] = aggRow(t, r.Value)
		})
		if diff = diffAggs(got, want); diff == "" {
			return
		}
	}
}

// checkCoverage fails when an aggregate that can take a row back out is
// missing from tableAggregates.
func checkCoverage(t *testing.T) {
	t.Helper()
	I := types.IntType
	arr := types.Type{Kind: types.Array, Elem: &I}
	for _, f := range expr.Aggregates() {
		for _, args := range [][]types.Type{{}, {types.IntType}, {types.StringType}, {arr}, {types.IntType, types.IntType}} {
			if _, err := f.Check(args); err != nil {
				continue
			}
			if expr.RetractsOnlyInSQL(f.Name) {
				// Over a table in the SQL dialect only (ksqlDB's query
				// here refuses them): tests/sqldiff's
				// TestUnionTablesDifferential checks them.
				continue
			}
			if _, undo := f.ForTable().New(args).(expr.Undoer); undo && tableAggregates[f.Name] == "" {
				t.Errorf("%s aggregates tables but has no differential test here", f.Name)
			}
		}
	}
}

// aggRow turns an output value into the oracle's text: numbers as SQLite
// prints them (floats to 6 places, sums to 2), collections sorted.
func aggRow(t *testing.T, v []byte) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		t.Fatalf("%s: %v", v, err)
	}
	num := func(k string) float64 {
		var f float64
		if s := string(m[k]); s == `"NaN"` || s == "null" {
			return math.NaN()
		}
		if err := json.Unmarshal(m[k], &f); err != nil {
			t.Fatalf("%s in %s: %v", k, v, err)
		}
		return f
	}
	fixed := func(k string, places int) string {
		if string(m[k]) == "null" {
			return "NULL"
		}
		return strconv.FormatFloat(num(k), 'f', places, 64)
	}
	strs := func(k string, distinct bool) string {
		var l []*string
		if err := json.Unmarshal(m[k], &l); err != nil {
			t.Fatalf("%s in %s: %v", k, v, err)
		}
		var s []string
		for _, e := range l {
			if e == nil {
				s = append(s, "~")
			} else {
				s = append(s, *e)
			}
		}
		sort.Strings(s)
		if distinct {
			for i := 1; i < len(s); i++ {
				if s[i] == s[i-1] {
					t.Errorf("%s holds %s twice: %s", k, s[i], v)
				}
			}
		}
		return strings.Join(s, ",")
	}
	var h map[string]int64
	if err := json.Unmarshal(m["H"], &h); err != nil {
		t.Fatalf("H in %s: %v", v, err)
	}
	var hs []string
	for k := range h {
		hs = append(hs, k)
	}
	sort.Strings(hs)
	for i, k := range hs {
		hs[i] = fmt.Sprintf("%s:%d", k, h[k])
	}
	at := "NULL"
	if string(m["AT"]) != "null" {
		json.Unmarshal(m["AT"], &at)
	}
	corr := num("CORR")
	corrText := "NaN"
	if !math.IsNaN(corr) {
		corrText = strconv.FormatFloat(corr, 'f', 6, 64)
	}
	return strings.Join([]string{
		string(m["C"]), string(m["CS"]), string(m["SP"]), fixed("SA", 2), fixed("SR", 2), fixed("SB", 2),
		fixed("AP", 6), fixed("AB", 6), fixed("VA", 6), fixed("SDA", 6), corrText,
		string(m["CD"]), strs("CL", false), strs("CSET", true), strings.Join(hs, ","), at, string(m["SL"]),
	}, "|")
}

// corrOf finishes the correlation from SQLite's "n,sx,sy,sxx,syy,sxy".
func corrOf(sums string) string {
	var f [6]float64
	for i, s := range strings.Split(sums, ",") {
		f[i], _ = strconv.ParseFloat(s, 64)
	}
	n, sx, sy, sxx, syy, sxy := f[0], f[1], f[2], f[3], f[4], f[5]
	dx, dy := n*sxx-sx*sx, n*syy-sy*sy
	if n < 2 || dx == 0 || dy == 0 {
		return "NaN"
	}
	return strconv.FormatFloat((n*sxy-sx*sy)/math.Sqrt(dx*dy), 'f', 6, 64)
}

// diffAggs says where got differs from want ("" when it does not). A
// category every row has left stays in got with COUNT 0, as in ksqlDB;
// SQLite has no row for it.
func diffAggs(got, want map[int]string) string {
	var d []string
	for cat, w := range want {
		g, ok := got[cat]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("category %d: missing, want %s", cat, w))
		case !closeRows(g, w):
			d = append(d, fmt.Sprintf("category %d:\n   got %s\n  want %s", cat, g, w))
		}
	}
	for cat, g := range got {
		if _, ok := want[cat]; !ok && !strings.HasPrefix(g, "0|") {
			d = append(d, fmt.Sprintf("category %d: %s, want none", cat, g))
		}
	}
	sort.Strings(d)
	return strings.Join(d, "\n")
}

// closeRows compares two rows field by field, numbers to a millionth
// relative (running sums and variances taken back out drift a little).
func closeRows(a, b string) bool {
	fa, fb := strings.Split(a, "|"), strings.Split(b, "|")
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if fa[i] == fb[i] {
			continue
		}
		x, err1 := strconv.ParseFloat(fa[i], 64)
		y, err2 := strconv.ParseFloat(fb[i], 64)
		if err1 != nil || err2 != nil || math.Abs(x-y) > 1e-6*math.Max(1, math.Max(math.Abs(x), math.Abs(y))) {
			return false
		}
	}
	return true
}

// TestDistinctByCommand checks that COUNT_DISTINCT and COLLECT_SET over
// a table replayed from a command recorded before
// sqlstreams.table.distinct keep the state their stores hold (a value
// forgotten when one of the rows holding it goes), while the same
// statement run now keeps a count per value.
func TestDistinctByCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	props := map[string]string{"auto.offset.reset": "earliest", "sqlstreams.generated.aliases": "ksql", "sqlstreams.null.comparison": "ksql",
		"sqlstreams.join.keys": "ksql", "sqlstreams.functions": "ksql", "sqlstreams.joins": "4", "sqlstreams.sum": "ksql"}
	const q = "SELECT g, COUNT_DISTINCT(v) AS cd, COLLECT_SET(v) AS cs FROM t GROUP BY g;"
	eng, brokers := replayOld(t, ctx, props,
		"CREATE TABLE t (id INT PRIMARY KEY, g INT, v VARCHAR) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON', PARTITIONS=1);",
		"CREATE TABLE old_q WITH (KAFKA_TOPIC='old_q') AS "+q,
	)
	sess := engine.NewSession()
	for _, stmt := range []string{"SET 'auto.offset.reset'='earliest';", "CREATE TABLE new_q WITH (KAFKA_TOPIC='new_q') AS " + q} {
		if _, err := eng.Execute(ctx, sess, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	produce(t, ctx, brokers, "t",
		&kgo.Record{Key: intKey(1), Value: []byte(`{"G":0,"V":"a"}`)},
		&kgo.Record{Key: intKey(2), Value: []byte(`{"G":0,"V":"a"}`)},
		&kgo.Record{Key: intKey(3), Value: []byte(`{"G":0,"V":"b"}`)},
		&kgo.Record{Key: intKey(1)},
	)
	for topic, want := range map[string]string{
		"old_q": `{"CD":1,"CS":["b"]}`,
		"new_q": `{"CD":2,"CS":["a","b"]}`,
	} {
		// Four changes of group 0: the last row is the result.
		got := consume(t, ctx, brokers, topic, 4)
		if got[3] != want {
			t.Errorf("%s: got %q, want last %s", topic, got, want)
		}
	}
}
