package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// TestTwoInstancesOneCatalog opens two engines of one service and runs
// catalog statements on both at once: both end with the same streams and
// queries, no query ID twice, each statement succeeding on exactly one
// (or failing alike); a third engine opened afterwards replays the same
// catalog.
func TestTwoInstancesOneCatalog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	open := func(id string) *engine.Engine {
		e, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(c.ListenAddrs()...), InstanceID: id, StateDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		return e
	}
	a, b := open("a"), open("b")
	run := func(e *engine.Engine, stmt string) error {
		_, err := e.Execute(ctx, engine.NewSession(), stmt, discard{})
		return err
	}
	if err := run(a, "CREATE STREAM pv (userid VARCHAR KEY, pageid VARCHAR) WITH (KAFKA_TOPIC='pv', VALUE_FORMAT='JSON', PARTITIONS=2)"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	ok := map[string]int{}
	var wg sync.WaitGroup
	for j, e := range []*engine.Engine{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5 {
				for _, name := range []string{fmt.Sprintf("same%d", i), fmt.Sprintf("own%d_%d", i, j)} {
					err := run(e, "CREATE STREAM "+name+" AS SELECT * FROM pv")
					mu.Lock()
					if err == nil {
						ok[name]++
					} else if !strings.Contains(err.Error(), "already exists") {
						t.Errorf("%s: %v", name, err)
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for name, n := range ok {
		if n != 1 {
			t.Errorf("CREATE STREAM %s succeeded %d times", name, n)
		}
	}
	ids := func(e *engine.Engine) []string {
		var out []string
		for _, q := range e.Catalog().Queries() {
			out = append(out, q.ID)
		}
		return out
	}
	want := 15
	deadline := time.Now().Add(30 * time.Second)
	for (len(ids(a)) != want || !slices.Equal(ids(a), ids(b))) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := ids(a); len(got) != want || !slices.Equal(got, ids(b)) {
		t.Fatalf("the engines disagree:\n%v\n%v", got, ids(b))
	}
	if got := ids(open("c")); !slices.Equal(got, ids(a)) {
		t.Errorf("a third engine replayed %v, want %v", got, ids(a))
	}
}
