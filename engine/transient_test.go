package engine_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// sessionOn opens an engine on brokers and returns a function that runs a
// statement in one session of it and returns its rows.
func sessionOn(ctx context.Context, t *testing.T, brokers []string, stateDir string) func(stmt string) *collect {
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: stateDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	s := engine.NewSession()
	return func(stmt string) *collect {
		t.Helper()
		c := &collect{}
		if _, err := eng.Execute(ctx, s, stmt, c); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		return c
	}
}

// TestTransientPushQueries runs push queries that need state — GROUP BY,
// windowed GROUP BY, a stream–stream join — as ksqlDB runs transient
// queries, and checks that each leaves no group, internal topic or local
// state behind.
func TestTransientPushQueries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	brokers := kfakeBrokers(t)
	stateDir := t.TempDir()
	run := sessionOn(ctx, t, brokers, stateDir)
	run("CREATE STREAM tp_in (k VARCHAR KEY, id INT) WITH (KAFKA_TOPIC='tp_in', VALUE_FORMAT='JSON', PARTITIONS=2)")
	run("CREATE STREAM tp_other (k VARCHAR KEY, v INT) WITH (KAFKA_TOPIC='tp_other', VALUE_FORMAT='JSON', PARTITIONS=2)")
	run("INSERT INTO tp_in (ROWTIME, k, id) VALUES (10345, 'a', 1)")
	run("INSERT INTO tp_in (ROWTIME, k, id) VALUES (10400, 'b', 1)")
	run("INSERT INTO tp_in (ROWTIME, k, id) VALUES (13251, 'c', 2)")
	run("INSERT INTO tp_other (ROWTIME, k, v) VALUES (10500, 'a', 7)")
	run("SET 'auto.offset.reset'='earliest'")

	for _, tc := range []struct {
		stmt string
		want []string
	}{
		// A GROUP BY that repartitions (ID is not the key).
		{"SELECT id, COUNT(*) AS n FROM tp_in GROUP BY id EMIT CHANGES LIMIT 3", []string{"1|1", "1|2", "2|1"}},
		{"SELECT WINDOWSTART, WINDOWEND, COUNT(1) AS n FROM tp_in WINDOW TUMBLING (SIZE 1 SECOND) GROUP BY id EMIT CHANGES LIMIT 3",
			[]string{"10000|11000|1", "10000|11000|2", "13000|14000|1"}},
		// Aggregates alone: one group, as ksqlDB groups by a constant.
		{"SELECT COUNT(*) AS n FROM tp_in EMIT CHANGES LIMIT 3", []string{"1", "2", "3"}},
		{"SELECT i.k, i.id, o.v FROM tp_in i JOIN tp_other o WITHIN 1 MINUTE ON i.k = o.k EMIT CHANGES LIMIT 1", []string{"a|1|7"}},
	} {
		c := run(tc.stmt)
		if got := strings.Join(c.sorted(), ","); got != strings.Join(tc.want, ",") {
			t.Errorf("%s: rows %s, want %s", tc.stmt, got, strings.Join(tc.want, ","))
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for name := range topics {
		if strings.Contains(name, "transient") {
			t.Errorf("transient query's topic %s left behind", name)
		}
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups() {
		if strings.Contains(g, "transient") {
			t.Errorf("transient query's group %s left behind", g)
		}
	}
	ents, err := os.ReadDir(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ents {
		if strings.Contains(d.Name(), "transient") {
			t.Errorf("transient query's state %s left behind", d.Name())
		}
	}
}

// TestPushOverTableSkipsNullKeys runs a push query over a table for a
// client that takes no tombstones: a record of the table's topic without
// a key is skipped (and logged) as the table's materialization skips it,
// never a row of NULL key.
func TestPushOverTableSkipsNullKeys(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	brokers := kfakeBrokers(t)
	run := sessionOn(ctx, t, brokers, t.TempDir())
	run("CREATE TABLE nk (k VARCHAR PRIMARY KEY, v INT) WITH (KAFKA_TOPIC='nk', VALUE_FORMAT='JSON', PARTITIONS=1)")
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// One partition: the record without key comes first.
	for _, r := range []*kgo.Record{
		{Topic: "nk", Value: []byte(`{"V":0}`)},
		{Topic: "nk", Key: []byte("a"), Value: []byte(`{"V":1}`)},
		{Topic: "nk", Key: []byte("b")},
		{Topic: "nk", Key: []byte("c"), Value: []byte(`{"V":3}`)},
	} {
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	run("SET 'auto.offset.reset'='earliest'")
	c := run("SELECT k, v FROM nk EMIT CHANGES LIMIT 2")
	if got, want := strings.Join(c.rows, ","), "a|1,c|3"; got != want {
		t.Errorf("rows %s, want %s", got, want)
	}
}
