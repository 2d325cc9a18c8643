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
