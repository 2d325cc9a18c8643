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

// TestSubqueryDifferential runs IN, NOT IN, EXISTS and NOT EXISTS
// subqueries (semi and anti joins by the subquery table's primary key)
// over random input, NULLs included, with a SIGKILL while output flows,
// against SQLite's answer to the same SQL:
//
// (with correlated conditions beyond the key equality too; a NULL
// before NOT IN is never in the result, as documented, where SQL keeps
// it when the subquery's set is empty: the correlated NOT IN oracles say
// IS NOT NULL, the others' sets are never empty):
//
//   - over a stream (the subquery's table loaded first and unchanged
//     while the stream flows, so each stream row meets the table as it
//     ends): the output records, as a multiset, with their keys;
//   - over tables (a foreign-key lookup and a lookup by the outer
//     table's own key), with upserts and deletes on both sides in any
//     order: the final result tables, from a pull query and from the
//     output topic read as a changelog.
func TestSubqueryDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := start(t, ctx)
	for _, q := range []string{
		`CREATE TABLE members (id VARCHAR PRIMARY KEY, tier BIGINT) WITH (KAFKA_TOPIC='members', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM orders (oid VARCHAR KEY, mid VARCHAR, amount BIGINT) WITH (KAFKA_TOPIC='orders', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE STREAM s_in AS SELECT * FROM orders WHERE mid IN (SELECT id FROM members WHERE tier > 2) AND amount > 10`,
		`CREATE STREAM s_notin AS SELECT oid, mid, amount FROM orders WHERE mid NOT IN (SELECT id FROM members WHERE tier > 2)`,
		`CREATE STREAM s_exists AS SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM members m WHERE m.id = o.mid AND m.tier < 5)`,
		`CREATE STREAM s_notexists AS SELECT * FROM orders o WHERE NOT EXISTS (SELECT 1 FROM members m WHERE o.mid = m.id AND m.tier < 5)`,
		`CREATE STREAM s_corr AS SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM members m WHERE m.id = o.mid AND m.tier * 3 > o.amount)`,
		`CREATE STREAM s_notcorr AS SELECT * FROM orders o WHERE o.mid NOT IN (SELECT id FROM members WHERE tier * 3 > amount)`,
		`CREATE TABLE accounts (id VARCHAR PRIMARY KEY, mid VARCHAR, bal BIGINT) WITH (KAFKA_TOPIC='accounts', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE prefs (id VARCHAR PRIMARY KEY, lang BIGINT) WITH (KAFKA_TOPIC='prefs', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE t_in AS SELECT * FROM accounts WHERE mid IN (SELECT id FROM members WHERE tier > 2)`,
		`CREATE TABLE t_notin AS SELECT * FROM accounts WHERE mid NOT IN (SELECT id FROM members WHERE tier > 2)`,
		`CREATE TABLE t_notexists AS SELECT * FROM accounts a WHERE NOT EXISTS (SELECT 1 FROM members m WHERE m.id = a.mid AND m.tier > 2)`,
		`CREATE TABLE t_corr AS SELECT * FROM accounts WHERE mid NOT IN (SELECT id FROM members WHERE tier * 10 > bal)`,
		`CREATE TABLE k_in AS SELECT * FROM prefs WHERE id IN (SELECT id FROM members WHERE tier < 7)`,
		`CREATE TABLE k_notexists AS SELECT * FROM prefs p WHERE NOT EXISTS (SELECT 1 FROM members m WHERE m.id = p.id)`,
	} {
		e.exec(q)
	}
	rng := rand.New(rand.NewPCG(33, 6))
	var script strings.Builder
	script.WriteString(`CREATE TABLE members (id TEXT PRIMARY KEY, tier INTEGER);
CREATE TABLE orders (oid TEXT, mid TEXT, amount INTEGER);
CREATE TABLE accounts (id TEXT PRIMARY KEY, mid TEXT, bal INTEGER);
CREATE TABLE prefs (id TEXT PRIMARY KEY, lang INTEGER);
`)
	member := func() string { return fmt.Sprintf("m%d", rng.IntN(40)) }
	// The members first, whole, then the orders.
	var recs []*kgo.Record
	for i := range 30 {
		id, tier := fmt.Sprintf("m%d", i), rng.Int64N(10)
		recs = append(recs, &kgo.Record{Topic: "members", Key: []byte(id), Value: fmt.Appendf(nil, `{"TIER":%d}`, tier)})
		fmt.Fprintf(&script, "INSERT INTO members VALUES ('%s', %d);\n", id, tier)
	}
	e.produce(recs)
	e.eventually("members loaded", []string{"30"}, func() ([]string, error) {
		got, err := e.stream("members")
		return []string{fmt.Sprint(len(got))}, err
	})
	oseq := 0
	orders := func(n int) {
		var recs []*kgo.Record
		for range n {
			oseq++
			oid, amount := fmt.Sprintf("o%d", oseq), rng.Int64N(30)
			mid, sqlMid := member(), ""
			if rng.IntN(12) == 0 {
				recs = append(recs, &kgo.Record{Topic: "orders", Key: []byte(oid), Value: fmt.Appendf(nil, `{"MID":null,"AMOUNT":%d}`, amount)})
				sqlMid = "NULL"
			} else {
				recs = append(recs, &kgo.Record{Topic: "orders", Key: []byte(oid), Value: fmt.Appendf(nil, `{"MID":"%s","AMOUNT":%d}`, mid, amount)})
				sqlMid = "'" + mid + "'"
			}
			fmt.Fprintf(&script, "INSERT INTO orders VALUES ('%s', %s, %d);\n", oid, sqlMid, amount)
		}
		e.produce(recs)
	}
	// The outer tables: upserts and deletes, in any order.
	tables := func(n int) {
		var recs []*kgo.Record
		for range n {
			if rng.IntN(2) == 0 {
				id := fmt.Sprintf("a%d", rng.IntN(60))
				if rng.IntN(5) == 0 {
					recs = append(recs, &kgo.Record{Topic: "accounts", Key: []byte(id)})
					fmt.Fprintf(&script, "DELETE FROM accounts WHERE id = '%s';\n", id)
					continue
				}
				bal := rng.Int64N(100)
				if rng.IntN(10) == 0 {
					recs = append(recs, &kgo.Record{Topic: "accounts", Key: []byte(id), Value: fmt.Appendf(nil, `{"MID":null,"BAL":%d}`, bal)})
					fmt.Fprintf(&script, "INSERT OR REPLACE INTO accounts VALUES ('%s', NULL, %d);\n", id, bal)
					continue
				}
				mid := member()
				recs = append(recs, &kgo.Record{Topic: "accounts", Key: []byte(id), Value: fmt.Appendf(nil, `{"MID":"%s","BAL":%d}`, mid, bal)})
				fmt.Fprintf(&script, "INSERT OR REPLACE INTO accounts VALUES ('%s', '%s', %d);\n", id, mid, bal)
				continue
			}
			id := member()
			if rng.IntN(5) == 0 {
				recs = append(recs, &kgo.Record{Topic: "prefs", Key: []byte(id)})
				fmt.Fprintf(&script, "DELETE FROM prefs WHERE id = '%s';\n", id)
				continue
			}
			lang := rng.Int64N(5)
			recs = append(recs, &kgo.Record{Topic: "prefs", Key: []byte(id), Value: fmt.Appendf(nil, `{"LANG":%d}`, lang)})
			fmt.Fprintf(&script, "INSERT OR REPLACE INTO prefs VALUES ('%s', %d);\n", id, lang)
		}
		e.produce(recs)
	}
	// The subquery's table changes (once the streams are done with it).
	members := func(n int) {
		var recs []*kgo.Record
		for range n {
			id := member()
			if rng.IntN(4) == 0 {
				recs = append(recs, &kgo.Record{Topic: "members", Key: []byte(id)})
				fmt.Fprintf(&script, "DELETE FROM members WHERE id = '%s';\n", id)
				continue
			}
			tier := rng.Int64N(10)
			recs = append(recs, &kgo.Record{Topic: "members", Key: []byte(id), Value: fmt.Appendf(nil, `{"TIER":%d}`, tier)})
			fmt.Fprintf(&script, "INSERT OR REPLACE INTO members VALUES ('%s', %d);\n", id, tier)
		}
		e.produce(recs)
	}
	for range 2 {
		orders(200)
		tables(150)
	}
	e.waitOutput("S_NOTEXISTS", 50)
	e.crash()
	for range 2 {
		orders(200)
		tables(150)
	}
	// The streams' answer, before the members change.
	want := sqlite(t, ctx, script.String()+`
SELECT '#S_IN';
SELECT mid, oid, amount FROM orders WHERE mid IN (SELECT id FROM members WHERE tier > 2) AND amount > 10;
SELECT '#S_NOTIN';
SELECT mid, oid, amount FROM orders WHERE mid NOT IN (SELECT id FROM members WHERE tier > 2);
SELECT '#S_EXISTS';
SELECT mid, oid, amount FROM orders o WHERE EXISTS (SELECT 1 FROM members m WHERE m.id = o.mid AND m.tier < 5);
SELECT '#S_NOTEXISTS';
SELECT mid, oid, amount FROM orders o WHERE NOT EXISTS (SELECT 1 FROM members m WHERE o.mid = m.id AND m.tier < 5);
SELECT '#S_CORR';
SELECT mid, oid, amount FROM orders o WHERE EXISTS (SELECT 1 FROM members m WHERE m.id = o.mid AND m.tier * 3 > o.amount);
SELECT '#S_NOTCORR';
SELECT mid, oid, amount FROM orders o WHERE o.mid IS NOT NULL AND o.mid NOT IN (SELECT id FROM members WHERE tier * 3 > amount);
`)
	for name, min := range map[string]int{"S_IN": 100, "S_NOTIN": 100, "S_EXISTS": 100, "S_NOTEXISTS": 100, "S_CORR": 50, "S_NOTCORR": 100} {
		if len(want[name]) < min {
			t.Fatalf("input too thin: %s has %d rows", name, len(want[name]))
		}
	}
	// Streams: the records as a multiset, each with its key (the MID
	// the stream was repartitioned by; a null key is NULL).
	keyed := func(topic string) func() ([]string, error) {
		return func() ([]string, error) {
			var out []string
			err := e.read(topic, func(r *kgo.Record) {
				var m map[string]any
				if json.Unmarshal(r.Value, &m) != nil {
					out = append(out, "bad value "+string(r.Value))
					return
				}
				k := "NULL"
				if r.Key != nil {
					k = string(r.Key)
				}
				out = append(out, strings.Join([]string{k, text(m["OID"]), text(m["AMOUNT"])}, "|"))
			})
			return out, err
		}
	}
	for _, name := range []string{"S_IN", "S_NOTIN", "S_EXISTS", "S_NOTEXISTS", "S_CORR", "S_NOTCORR"} {
		e.eventually("topic "+name, want[name], keyed(name))
	}
	// Now the subquery's table changes, with the outer tables; a
	// SIGKILL in between.
	members(60)
	tables(100)
	e.waitOutput("T_NOTIN", 20)
	e.crash()
	for range 2 {
		members(60)
		tables(100)
	}
	want = sqlite(t, ctx, script.String()+`
SELECT '#T_IN';
SELECT id, mid, bal FROM accounts WHERE mid IN (SELECT id FROM members WHERE tier > 2);
SELECT '#T_NOTIN';
SELECT id, mid, bal FROM accounts WHERE mid NOT IN (SELECT id FROM members WHERE tier > 2);
SELECT '#T_NOTEXISTS';
SELECT id, mid, bal FROM accounts a WHERE NOT EXISTS (SELECT 1 FROM members m WHERE m.id = a.mid AND m.tier > 2);
SELECT '#T_CORR';
SELECT id, mid, bal FROM accounts WHERE mid IS NOT NULL AND mid NOT IN (SELECT id FROM members WHERE tier * 10 > bal);
SELECT '#K_IN';
SELECT id, lang FROM prefs WHERE id IN (SELECT id FROM members WHERE tier < 7);
SELECT '#K_NOTEXISTS';
SELECT id, lang FROM prefs p WHERE NOT EXISTS (SELECT 1 FROM members m WHERE m.id = p.id);
`)
	for name, min := range map[string]int{"T_IN": 10, "T_NOTIN": 10, "T_NOTEXISTS": 10, "T_CORR": 10, "K_IN": 5, "K_NOTEXISTS": 3} {
		if len(want[name]) < min {
			t.Fatalf("input too thin: %s has %d rows", name, len(want[name]))
		}
	}
	cols := func(names ...string) func(string, map[string]any) string {
		return func(k string, v map[string]any) string {
			parts := []string{k}
			for _, n := range names {
				parts = append(parts, text(v[n]))
			}
			return strings.Join(parts, "|")
		}
	}
	for _, name := range []string{"T_IN", "T_NOTIN", "T_NOTEXISTS", "T_CORR"} {
		e.pull("SELECT id, mid, bal FROM "+name, want[name])
		e.eventually("topic "+name, want[name], func() ([]string, error) { return e.changelog(name, 0, cols("MID", "BAL")) })
	}
	for _, name := range []string{"K_IN", "K_NOTEXISTS"} {
		e.pull("SELECT id, lang FROM "+name, want[name])
		e.eventually("topic "+name, want[name], func() ([]string, error) { return e.changelog(name, 0, cols("LANG")) })
	}
}

// TestSubquerySetDifferential runs x IN (SELECT c FROM t …) where c is
// not t's key (a table) or t is a stream: a semi join with the set of
// c's values, which the query aggregates (SELECT c, COUNT(*) … GROUP BY
// c) into a topic of its own. Against SQLite's answer to the same SQL:
// the set topics (a value leaves the set when no row of the table holds
// it), then the stream's output records, as a multiset with their keys,
// before and after the table changes (values entering and leaving the
// set), with SIGKILLs in between and while output flows. A NULL among
// the subquery's values is not in the set (GROUP BY drops a NULL key)
// and a NULL before NOT IN is never in the result, as documented: the
// NOT IN oracle says so.
func TestSubquerySetDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := start(t, ctx)
	for _, q := range []string{
		`CREATE TABLE sellers (id VARCHAR PRIMARY KEY, region VARCHAR, rating BIGINT) WITH (KAFKA_TOPIC='sellers', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM visits (vid VARCHAR KEY, region VARCHAR) WITH (KAFKA_TOPIC='visits', VALUE_FORMAT='JSON', PARTITIONS=1)`,
		`CREATE STREAM sales (sid VARCHAR KEY, region VARCHAR, amount BIGINT) WITH (KAFKA_TOPIC='sales', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE STREAM s_set_in AS SELECT * FROM sales WHERE region IN (SELECT region FROM sellers WHERE rating > 3) AND amount > 5`,
		`CREATE STREAM s_set_notin AS SELECT sid, region, amount FROM sales WHERE region NOT IN (SELECT region FROM sellers WHERE rating > 3)`,
		`CREATE STREAM s_set_stream AS SELECT * FROM sales WHERE region IN (SELECT region FROM visits)`,
	} {
		e.exec(q)
	}
	ids, err := e.rows("SHOW QUERIES")
	if err != nil {
		t.Fatal(err)
	}
	setTopic := func(query, table string) string {
		for _, r := range ids {
			for _, p := range strings.Split(r, "|") {
				if strings.HasPrefix(p, "CSAS_"+query+"_") {
					return "sqlstreams_query_" + p + "-SUBQUERY_" + table + "-table"
				}
			}
		}
		t.Fatalf("no query %s in %q", query, ids)
		return ""
	}
	sets := map[string]string{"S_SET_IN": setTopic("S_SET_IN", "SELLERS"), "S_SET_NOTIN": setTopic("S_SET_NOTIN", "SELLERS"),
		"S_SET_STREAM": setTopic("S_SET_STREAM", "VISITS")}
	rng := rand.New(rand.NewPCG(33, 61))
	var script strings.Builder
	script.WriteString(`CREATE TABLE sellers (id TEXT PRIMARY KEY, region TEXT, rating INTEGER);
CREATE TABLE visits (vid TEXT, region TEXT);
CREATE TABLE sales (sid TEXT, region TEXT, amount INTEGER);
`)
	region := func() (string, string) { // JSON, SQL
		if rng.IntN(10) == 0 {
			return "null", "NULL"
		}
		r := fmt.Sprintf("r%d", rng.IntN(20))
		return `"` + r + `"`, "'" + r + "'"
	}
	sellers := func(n int, deletes bool) {
		var recs []*kgo.Record
		for range n {
			id := fmt.Sprintf("p%d", rng.IntN(50))
			if deletes && rng.IntN(4) == 0 {
				recs = append(recs, &kgo.Record{Topic: "sellers", Key: []byte(id)})
				fmt.Fprintf(&script, "DELETE FROM sellers WHERE id = '%s';\n", id)
				continue
			}
			js, sq := region()
			rating := rng.Int64N(10)
			recs = append(recs, &kgo.Record{Topic: "sellers", Key: []byte(id), Value: fmt.Appendf(nil, `{"REGION":%s,"RATING":%d}`, js, rating)})
			fmt.Fprintf(&script, "INSERT OR REPLACE INTO sellers VALUES ('%s', %s, %d);\n", id, sq, rating)
		}
		e.produce(recs)
	}
	vseq := 0
	visits := func(n int) {
		var recs []*kgo.Record
		for range n {
			vseq++
			js, sq := region()
			recs = append(recs, &kgo.Record{Topic: "visits", Key: fmt.Appendf(nil, "v%d", vseq), Value: fmt.Appendf(nil, `{"REGION":%s}`, js)})
			fmt.Fprintf(&script, "INSERT INTO visits VALUES ('v%d', %s);\n", vseq, sq)
		}
		e.produce(recs)
	}
	sseq := 0
	sales := func(n int) {
		var recs []*kgo.Record
		for range n {
			sseq++
			js, sq := region()
			amount := rng.Int64N(20)
			recs = append(recs, &kgo.Record{Topic: "sales", Key: fmt.Appendf(nil, "s%d", sseq), Value: fmt.Appendf(nil, `{"REGION":%s,"AMOUNT":%d}`, js, amount)})
			fmt.Fprintf(&script, "INSERT INTO sales VALUES ('s%d', %s, %d);\n", sseq, sq, amount)
		}
		e.produce(recs)
	}
	setsOracle := `
SELECT '#S_SET_IN';
SELECT region, COUNT(*) FROM sellers WHERE rating > 3 AND region IS NOT NULL GROUP BY region;
SELECT '#S_SET_NOTIN';
SELECT region, COUNT(*) FROM sellers WHERE rating > 3 AND region IS NOT NULL GROUP BY region;
SELECT '#S_SET_STREAM';
SELECT region, COUNT(*) FROM visits WHERE region IS NOT NULL GROUP BY region;
`
	// waitSets waits until each query's set topic holds SQLite's set
	// (value and count): the stream's rows that follow meet it whole.
	waitSets := func() {
		want := sqlite(t, ctx, script.String()+setsOracle)
		for name, topic := range sets {
			e.eventually("set of "+name, want[name], func() ([]string, error) {
				return e.changelog(topic, 0, func(k string, v map[string]any) string {
					return strings.Trim(k, `"`) + "|" + text(v["SUBQUERY_COUNT"])
				})
			})
		}
	}
	outOracle := func(from int) string {
		return fmt.Sprintf(`
SELECT '#S_SET_IN';
SELECT region, sid, amount FROM sales WHERE rowid > %[1]d AND region IN (SELECT region FROM sellers WHERE rating > 3) AND amount > 5;
SELECT '#S_SET_NOTIN';
SELECT region, sid, amount FROM sales WHERE rowid > %[1]d AND region IS NOT NULL AND region NOT IN (SELECT region FROM sellers WHERE rating > 3 AND region IS NOT NULL);
SELECT '#S_SET_STREAM';
SELECT region, sid, amount FROM sales WHERE rowid > %[1]d AND region IN (SELECT region FROM visits);
`, from)
	}
	sellers(40, false)
	visits(30)
	waitSets()
	e.crash()
	sales(250)
	e.waitOutput("S_SET_NOTIN", 30)
	e.crash()
	sales(250)
	want := sqlite(t, ctx, script.String()+outOracle(0))
	// The table changes: values enter and leave the set.
	sellers(60, true)
	visits(20)
	waitSets()
	e.crash()
	before := sseq
	sales(300)
	later := sqlite(t, ctx, script.String()+outOracle(before))
	for name, min := range map[string]int{"S_SET_IN": 50, "S_SET_NOTIN": 30, "S_SET_STREAM": 100} {
		if len(want[name]) < min || len(later[name]) < min/2 {
			t.Fatalf("input too thin: %s has %d and %d rows", name, len(want[name]), len(later[name]))
		}
		want[name] = append(want[name], later[name]...)
	}
	keyed := func(topic string) func() ([]string, error) {
		return func() ([]string, error) {
			var out []string
			err := e.read(topic, func(r *kgo.Record) {
				var m map[string]any
				if json.Unmarshal(r.Value, &m) != nil {
					out = append(out, "bad value "+string(r.Value))
					return
				}
				out = append(out, strings.Join([]string{string(r.Key), text(m["SID"]), text(m["AMOUNT"])}, "|"))
			})
			return out, err
		}
	}
	for _, name := range []string{"S_SET_IN", "S_SET_NOTIN", "S_SET_STREAM"} {
		e.eventually("topic "+name, want[name], keyed(name))
	}
}

// TestScalarSubqueryDifferential runs comparisons with a scalar subquery
// over a global aggregate — a join, on a constant key, with the
// aggregate's one-row table, which the query computes — against
// SQLite's answer to the same SQL: over a stream (each row meets the
// aggregate as it is when the row is processed: the aggregate's table
// settles before each batch of rows, and changes, with SIGKILLs, between
// them) the output records as a multiset with their keys; over a table
// (a foreign-key lookup of the one row, whose changes re-evaluate every
// row) the final result table, from a pull query and from its topic.
func TestScalarSubqueryDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := start(t, ctx)
	for _, q := range []string{
		`CREATE TABLE sellers (id VARCHAR PRIMARY KEY, region VARCHAR, rating BIGINT) WITH (KAFKA_TOPIC='sellers', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM sales (sid VARCHAR KEY, region VARCHAR, amount BIGINT) WITH (KAFKA_TOPIC='sales', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE TABLE accounts (id VARCHAR PRIMARY KEY, bal BIGINT) WITH (KAFKA_TOPIC='accounts', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM s_above AS SELECT * FROM sales WHERE amount > (SELECT AVG(rating) FROM sellers WHERE region IS NOT NULL)`,
		`CREATE TABLE t_cheap AS SELECT id, bal FROM accounts WHERE bal * 2 < (SELECT MAX(amount) FROM sales WHERE region <> 'r1')`,
	} {
		e.exec(q)
	}
	ids, err := e.rows("SHOW QUERIES")
	if err != nil {
		t.Fatal(err)
	}
	var setTopic string
	for _, r := range ids {
		for _, p := range strings.Split(r, "|") {
			if strings.HasPrefix(p, "CSAS_S_ABOVE_") {
				setTopic = "sqlstreams_query_" + p + "-SUBQUERY_SELLERS-table"
			}
		}
	}
	if setTopic == "" {
		t.Fatalf("no query S_ABOVE in %q", ids)
	}
	rng := rand.New(rand.NewPCG(33, 62))
	var script strings.Builder
	script.WriteString(`CREATE TABLE sellers (id TEXT PRIMARY KEY, region TEXT, rating INTEGER);
CREATE TABLE sales (sid TEXT, region TEXT, amount INTEGER);
CREATE TABLE accounts (id TEXT PRIMARY KEY, bal INTEGER);
`)
	region := func() (string, string) {
		if rng.IntN(10) == 0 {
			return "null", "NULL"
		}
		r := fmt.Sprintf("r%d", rng.IntN(5))
		return `"` + r + `"`, "'" + r + "'"
	}
	sellers := func(n int, deletes bool) {
		var recs []*kgo.Record
		for range n {
			id := fmt.Sprintf("p%d", rng.IntN(50))
			if deletes && rng.IntN(4) == 0 {
				recs = append(recs, &kgo.Record{Topic: "sellers", Key: []byte(id)})
				fmt.Fprintf(&script, "DELETE FROM sellers WHERE id = '%s';\n", id)
				continue
			}
			js, sq := region()
			rating := rng.Int64N(20)
			recs = append(recs, &kgo.Record{Topic: "sellers", Key: []byte(id), Value: fmt.Appendf(nil, `{"REGION":%s,"RATING":%d}`, js, rating)})
			fmt.Fprintf(&script, "INSERT OR REPLACE INTO sellers VALUES ('%s', %s, %d);\n", id, sq, rating)
		}
		e.produce(recs)
	}
	sseq := 0
	sales := func(n int, maxAmount int64) {
		var recs []*kgo.Record
		for range n {
			sseq++
			js, sq := region()
			amount := rng.Int64N(maxAmount)
			recs = append(recs, &kgo.Record{Topic: "sales", Key: fmt.Appendf(nil, "s%d", sseq), Value: fmt.Appendf(nil, `{"REGION":%s,"AMOUNT":%d}`, js, amount)})
			fmt.Fprintf(&script, "INSERT INTO sales VALUES ('s%d', %s, %d);\n", sseq, sq, amount)
		}
		e.produce(recs)
	}
	accounts := func(n int) {
		var recs []*kgo.Record
		for range n {
			id := fmt.Sprintf("a%d", rng.IntN(60))
			if rng.IntN(5) == 0 {
				recs = append(recs, &kgo.Record{Topic: "accounts", Key: []byte(id)})
				fmt.Fprintf(&script, "DELETE FROM accounts WHERE id = '%s';\n", id)
				continue
			}
			bal := rng.Int64N(40)
			recs = append(recs, &kgo.Record{Topic: "accounts", Key: []byte(id), Value: fmt.Appendf(nil, `{"BAL":%d}`, bal)})
			fmt.Fprintf(&script, "INSERT OR REPLACE INTO accounts VALUES ('%s', %d);\n", id, bal)
		}
		e.produce(recs)
	}
	// waitAggregate waits until the aggregate's one-row table holds
	// SQLite's AVG (to 6 decimals).
	waitAggregate := func() {
		want := sqlite(t, ctx, script.String()+"SELECT '#AVG';\nSELECT printf('%.6f', AVG(rating)) FROM sellers WHERE region IS NOT NULL;\n")
		e.eventually("the aggregate's row", want["AVG"], func() ([]string, error) {
			return e.changelog(setTopic, 0, func(k string, v map[string]any) string {
				f, _ := v["SUBQUERY_VALUE"].(float64)
				return fmt.Sprintf("%.6f", f)
			})
		})
	}
	oracle := func(from int) []string {
		got := sqlite(t, ctx, script.String()+fmt.Sprintf(`
SELECT '#S_ABOVE';
SELECT sid, region, amount FROM sales WHERE rowid > %d AND amount > (SELECT AVG(rating) FROM sellers WHERE region IS NOT NULL);
`, from))
		return got["S_ABOVE"]
	}
	sellers(40, false)
	accounts(80)
	waitAggregate()
	e.crash()
	sales(200, 20)
	e.waitOutput("S_ABOVE", 20)
	e.crash()
	sales(200, 20)
	want := oracle(0)
	// The aggregate changes (and the accounts and the MAX).
	sellers(60, true)
	accounts(60)
	waitAggregate()
	e.crash()
	before := sseq
	sales(200, 30)
	later := oracle(before)
	if len(want) < 100 || len(later) < 50 {
		t.Fatalf("input too thin: %d and %d rows", len(want), len(later))
	}
	want = append(want, later...)
	e.eventually("topic S_ABOVE", want, func() ([]string, error) {
		var out []string
		err := e.read("S_ABOVE", func(r *kgo.Record) {
			var m map[string]any
			if json.Unmarshal(r.Value, &m) != nil {
				out = append(out, "bad value "+string(r.Value))
				return
			}
			out = append(out, strings.Join([]string{string(r.Key), text(m["REGION"]), text(m["AMOUNT"])}, "|"))
		})
		return out, err
	})
	accounts(40)
	tables := sqlite(t, ctx, script.String()+`
SELECT '#T_CHEAP';
SELECT id, bal FROM accounts WHERE bal * 2 < (SELECT MAX(amount) FROM sales WHERE region <> 'r1');
`)
	if len(tables["T_CHEAP"]) < 10 {
		t.Fatalf("input too thin: T_CHEAP has %d rows", len(tables["T_CHEAP"]))
	}
	e.pull("SELECT id, bal FROM T_CHEAP", tables["T_CHEAP"])
	e.eventually("topic T_CHEAP", tables["T_CHEAP"], func() ([]string, error) {
		return e.changelog("T_CHEAP", 0, func(k string, v map[string]any) string { return k + "|" + text(v["BAL"]) })
	})
}
