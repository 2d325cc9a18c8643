package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/types"
)

type discard struct{}

func (discard) Columns([]types.Column) error { return nil }
func (discard) Row(types.Row) error          { return nil }

// TestNumStreamThreads checks that a query runs the stream threads its
// num.stream.threads property asks for (else the server's default), each
// its own member of the query's group, and that a bad value is refused
// before anything is recorded.
func TestNumStreamThreads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	brokers := c.ListenAddrs()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir(), Threads: 1})
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
		"CREATE STREAM pageviews (userid VARCHAR KEY, pageid VARCHAR) WITH (KAFKA_TOPIC='pageviews', VALUE_FORMAT='JSON', PARTITIONS=4)",
		"CREATE STREAM one AS SELECT * FROM pageviews",
		"SET 'num.stream.threads'='2'",
		"CREATE STREAM two AS SELECT * FROM pageviews",
	} {
		if err := run(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := run("SET 'num.stream.threads'='zero'"); err == nil || !strings.Contains(err.Error(), "num.stream.threads") {
		t.Fatalf("SET of a bad num.stream.threads: %v, want an error naming it", err)
	}
	s.Props["num.stream.threads"] = "zero" // as a command recorded with it
	if err := run("CREATE STREAM bad AS SELECT * FROM pageviews"); err == nil || !strings.Contains(err.Error(), "num.stream.threads") {
		t.Fatalf("a bad num.stream.threads: %v, want an error naming it", err)
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	members := func(group string) int {
		gs, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return -1
		}
		return len(gs[group].Members)
	}
	// Query IDs follow the commands' offsets, which an aborted command
	// transaction moves: the groups are found by the queries' names.
	wants := map[string]int{}
	for _, q := range eng.Queries() {
		switch {
		case strings.HasPrefix(q.ID, "CSAS_ONE_"):
			wants["sqlstreams_query_"+q.ID] = 1
		case strings.HasPrefix(q.ID, "CSAS_TWO_"):
			wants["sqlstreams_query_"+q.ID] = 2
		}
	}
	if len(wants) != 2 {
		t.Fatalf("queries %v: want ONE and TWO", eng.Queries())
	}
	for group, want := range wants {
		for members(group) != want {
			if ctx.Err() != nil {
				gs, _ := adm.ListGroups(ctx)
				t.Fatalf("group %s has %d members, want %d (groups: %v)", group, members(group), want, gs.Groups())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if _, ok := eng.Catalog().Source("BAD"); ok {
		t.Error("the refused query's stream was created")
	}
}
