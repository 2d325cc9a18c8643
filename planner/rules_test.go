package planner_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
)

// TestRules shows which lowering rules fire on a statement and the plan
// they leave (testdata/rules/*; -rewrite regenerates):
//
//	plan    binds a SELECT or CREATE … AS SELECT and prints its dialect
//	        (when SQL's), the rules that fired, the event-time column of each scan that has one,
//	        the lowered plan, and with "topology" the physical topology
//	        it builds; or the error
func TestRules(t *testing.T) {
	cat := testCatalog(t)
	for _, ddl := range []string{
		`CREATE STREAM bids (auction BIGINT KEY, bidder BIGINT, price BIGINT, dt TIMESTAMP, ts BIGINT, note VARCHAR)
		   WITH (KAFKA_TOPIC='bids', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM bids2 (auction BIGINT KEY, bidder BIGINT, price BIGINT, dt TIMESTAMP, ts BIGINT, note VARCHAR)
		   WITH (KAFKA_TOPIC='bids2', VALUE_FORMAT='JSON', PARTITIONS=2, TIMESTAMP='ts')`,
		`CREATE STREAM bids3 (auction BIGINT KEY, bidder BIGINT, price BIGINT, dt TIMESTAMP, ts BIGINT, note VARCHAR)
		   WITH (KAFKA_TOPIC='bids3', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE STREAM asks (auction BIGINT KEY, seller VARCHAR, price BIGINT, ts BIGINT)
		   WITH (KAFKA_TOPIC='asks', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE prefs (userid VARCHAR PRIMARY KEY, lang VARCHAR, lvl INT)
		   WITH (KAFKA_TOPIC='prefs', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE regions (region VARCHAR PRIMARY KEY, rname VARCHAR, minlevel INT)
		   WITH (KAFKA_TOPIC='regions', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE TABLE bidders (id BIGINT PRIMARY KEY, name VARCHAR, banned BOOLEAN)
		   WITH (KAFKA_TOPIC='bidders', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE lots (lot BIGINT PRIMARY KEY, auction BIGINT, reserve BIGINT)
		   WITH (KAFKA_TOPIC='lots', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE auctions (id BIGINT PRIMARY KEY, seller VARCHAR, category INT)
		   WITH (KAFKA_TOPIC='auctions', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE TABLE users_crc (userid VARCHAR PRIMARY KEY, tier INT)
		   WITH (KAFKA_TOPIC='users_crc', VALUE_FORMAT='JSON', PARTITIONS=2, PARTITIONER='crc32')`,
		`CREATE TABLE users3 (userid VARCHAR PRIMARY KEY, tier INT)
		   WITH (KAFKA_TOPIC='users3', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE STREAM views_json (userid VARCHAR KEY, pageid VARCHAR)
		   WITH (KAFKA_TOPIC='views_json', KEY_FORMAT='JSON', VALUE_FORMAT='JSON', PARTITIONS=2)`,
	} {
		st, err := sql.Parse(ddl)
		if err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
		src, err := sql.BindCreateSource(st.(*sql.CreateSource))
		if err != nil {
			t.Fatalf("%s: %v", ddl, err)
		}
		cat.AddSource(src, false)
	}
	datadriven.Walk(t, "testdata/rules", func(t *testing.T, path string) {
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if d.Cmd != "plan" {
				t.Fatalf("unknown command %s", d.Cmd)
			}
			q, root, err := bind(cat, d.Input)
			if err != nil {
				return "error: " + err.Error() + "\n"
			}
			var b strings.Builder
			dialect, rules := planner.Dialect(""), []string(nil)
			if q != nil {
				dialect, rules = q.Dialect, q.Rules
			} else if s, ok := root.(*planner.Sink); ok {
				dialect, rules = s.Dialect, s.Rules
			}
			if dialect != planner.DialectKsql {
				fmt.Fprintf(&b, "dialect: %s\n", dialect)
			}
			fmt.Fprintf(&b, "rules: %s\n", strings.Join(rules, ", "))
			for _, s := range planner.Sources(root) {
				if s.TimestampColumn != "" {
					fmt.Fprintf(&b, "event time of %s: %s\n", s.Name, s.TimestampColumn)
				}
			}
			b.WriteString(planner.Explain(root))
			// Co-partitioning planned once stays as it is (a union's
			// branches are planned on their own, then again in the union).
			for _, r := range planner.Rules {
				if r.Name != planner.RuleCoPartitionJoins {
					continue
				}
				again, _, err := r.Apply(root, dialect)
				if err != nil {
					t.Fatalf("%s again: %v", r.Name, err)
				}
				if got, want := planner.Explain(again), planner.Explain(root); got != want {
					t.Fatalf("%s again:\n%s\nwas\n%s", r.Name, got, want)
				}
			}
			if d.HasArg("topology") {
				var topo *physical.Topology
				if sink, ok := root.(*planner.Sink); ok {
					topo, err = physical.Build(physical.AppID("sqlstreams", "Q1"), sink)
				} else {
					topo, err = physical.BuildPush(q)
				}
				if err != nil {
					return b.String() + "topology error: " + err.Error() + "\n"
				}
				b.WriteString(topo.String())
			}
			return b.String()
		})
	})
}
