package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// TestProcessingGuarantee: a query created after SET
// 'processing.guarantee'='at_least_once' writes its output outside
// transactions (and all of it), one created without it inside them; a
// bad guarantee, commit interval or transaction timeout is refused before anything is
// created.
func TestProcessingGuarantee(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s := engine.NewSession()
	run := func(stmt string) error {
		_, err := eng.Execute(ctx, s, stmt, discard{})
		return err
	}
	for _, stmt := range []string{
		"CREATE STREAM src (id INT KEY, v INT) WITH (KAFKA_TOPIC='src', VALUE_FORMAT='JSON', PARTITIONS=2)",
		"CREATE STREAM eos AS SELECT * FROM src",
		"SET 'processing.guarantee'='at_least_once'",
		"SET 'commit.interval.ms'='50'",
		"SET 'ksql.streams.transaction.timeout.ms'='20000'",
		"CREATE STREAM alos AS SELECT * FROM src",
		"CREATE TABLE alos_counts AS SELECT id, COUNT(*) AS n FROM src GROUP BY id",
	} {
		if err := run(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, bad := range []struct{ set, want string }{
		{"SET 'processing.guarantee'='maybe_once'", "processing.guarantee"},
		{"SET 'commit.interval.ms'='soon'", "commit.interval.ms"},
		{"SET 'transaction.timeout.ms'='500'", "transaction.timeout.ms"},
	} {
		// SET refuses the value; a session given it otherwise (a
		// command recorded with it) is refused by the CREATE.
		s2 := engine.NewSession()
		if _, err := eng.Execute(ctx, s2, bad.set, discard{}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want an error naming %s", bad.set, err, bad.want)
		}
		s2.Props[bad.want] = "-1"
		_, err := eng.Execute(ctx, s2, "CREATE STREAM bad AS SELECT * FROM src", discard{})
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("CREATE after %s: %v, want an error naming %s", bad.set, err, bad.want)
		}
	}
	if _, ok := eng.Catalog().Source("BAD"); ok {
		t.Error("a refused query's stream was created")
	}

	const n = 40
	for i := range n {
		if err := run(fmt.Sprintf("INSERT INTO src (id, v) VALUES (%d, %d)", i%4, i)); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("EOS", "ALOS", "ALOS_COUNTS"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	count := map[string]int{}
	txn := map[string]int{}
	for count["EOS"] < n || count["ALOS"] < n || count["ALOS_COUNTS"] < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("records read: %v, want %d of each", count, n)
		}
		fs.EachRecord(func(r *kgo.Record) {
			count[r.Topic]++
			if r.Attrs.IsTransactional() {
				txn[r.Topic]++
			}
		})
	}
	if txn["EOS"] != count["EOS"] || txn["ALOS"] != 0 || txn["ALOS_COUNTS"] != 0 {
		t.Errorf("transactional records per topic %v of %v: want all of EOS's and none of at-least-once's", txn, count)
	}
	// The aggregate's store follows its commits.
	for {
		rows := &collect{}
		if _, err := eng.Execute(ctx, engine.NewSession(), "SELECT * FROM alos_counts WHERE id = 3", rows); err != nil {
			t.Fatal(err)
		}
		if len(rows.rows) == 1 && rows.rows[0] == "3|10" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the at-least-once aggregate's row for id 3: %q, want 3|10", rows.rows)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
