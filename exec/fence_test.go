package exec

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
)

// TestStartFencesOpenTransaction: an instance died with its stream
// thread's transaction open (records in the output topic and the
// changelog, a 60 s transaction timeout) and starts again with nothing to
// process. Its thread fences that transaction as it starts: read_committed
// readers get past it within seconds, not after the timeout, and the dead
// transaction's records are never seen.
func TestStartFencesOpenTransaction(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topo := aggTopology(t, "app", "AUCTION")
	_, brokers := startAggCluster(t, topo)
	changelog := "app-AGGREGATE-changelog"
	topics := []string{"out", changelog}

	// The dead instance's thread 0 (transactional ID <app>-<instance>-0).
	dead, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.TransactionalID("app-i-0"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.TransactionTimeout(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	if err := dead.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		for p := int32(0); p < 3; p++ {
			r := &kgo.Record{Topic: topic, Partition: p, Key: []byte("dead"), Value: []byte(`{"N":-1,"TOTAL":-1}`)}
			if err := dead.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	adm := kadm.NewClient(dead)
	blocked := func() (int, error) {
		ends, err := adm.ListEndOffsets(ctx, topics...)
		if err != nil {
			return 0, err
		}
		stable, err := adm.ListCommittedOffsets(ctx, topics...)
		if err != nil {
			return 0, err
		}
		n := 0
		ends.Each(func(o kadm.ListedOffset) {
			if s, ok := stable.Lookup(o.Topic, o.Partition); !ok || s.Offset < o.Offset {
				n++
			}
		})
		return n, nil
	}
	if n, err := blocked(); err != nil || n != 6 {
		t.Fatalf("before the restart %d partitions are held back by the open transaction (%v), want 6", n, err)
	}

	q, err := Start("CTAS_OUT_1", topo, Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", CommitInterval: 20 * time.Millisecond, StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Stop()
	began := time.Now()
	for {
		n, err := blocked()
		if err == nil && n == 0 {
			break
		}
		if time.Since(began) > 10*time.Second {
			t.Fatalf("%d partitions still held back by the dead instance's transaction %v after the restart (%v)", n, time.Since(began), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the dead instance's transaction was aborted %v after the restart", time.Since(began).Round(time.Millisecond))

	// The query goes on; the dead transaction's records never show.
	produceAggBids(t, ctx, brokers, 0, 300)
	want := map[int64][2]int64{}
	for i := range 300 {
		g := int64(i % 17)
		want[g] = [2]int64{want[g][0] + 1, want[g][1] + int64(i%10)}
	}
	for {
		got := lastValues(t, ctx, brokers)
		if fmt.Sprint(got) == fmt.Sprint(want) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("result %v\nwant %v", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
