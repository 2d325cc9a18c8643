package e2e

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// TestAtLeastOnceSurvivesKill: a query under
// processing.guarantee=at_least_once, SIGKILLed once part of its input is
// out, has every input record in its output after the restart and more
// input (duplicates allowed, none missing).
func TestAtLeastOnceSurvivesKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := startServer(t)
	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `CREATE STREAM alos_in (id INT KEY, v INT) WITH (KAFKA_TOPIC='alos_in', VALUE_FORMAT='JSON', PARTITIONS=2)`)
	exec1(t, ctx, conn, `SET 'processing.guarantee' = 'at_least_once'`)
	exec1(t, ctx, conn, `CREATE STREAM alos_out AS SELECT id, v FROM alos_in`)

	cl, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr), kgo.DefaultProduceTopic("alos_in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const n = 4000
	produce := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			r := &kgo.Record{Key: binary.BigEndian.AppendUint32(nil, uint32(i)), Value: fmt.Appendf(nil, `{"V":%d}`, i)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(0, n/2)
	// Kill it once part of the input is out.
	adm := kadm.NewClient(cl)
	if !testserver.WaitFor(60*time.Second, func() bool {
		ends, err := adm.ListEndOffsets(ctx, "ALOS_OUT")
		if err != nil {
			return false
		}
		var sum int64
		ends.Each(func(o kadm.ListedOffset) { sum += o.Offset })
		return sum >= n/8
	}) {
		t.Fatal("the query wrote nothing")
	}
	s.Kill() // the embedded broker goes with it
	restart(t, s)
	produce(n/2, n)

	seen := map[int]int{}
	if !testserver.WaitFor(90*time.Second, func() bool {
		clear(seen)
		for _, r := range readCommittedValues(t, ctx, s.KafkaAddr, "ALOS_OUT") {
			if len(r.key) == 4 {
				seen[int(binary.BigEndian.Uint32(r.key))]++
			}
		}
		return len(seen) == n
	}) {
		var missing []int
		for i := 0; i < n && len(missing) < 10; i++ {
			if seen[i] == 0 {
				missing = append(missing, i)
			}
		}
		t.Fatalf("%d of %d input records are in the output; missing e.g. %v", len(seen), n, missing)
	}
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	t.Logf("every record out at least once; %d written twice or more after the kill", dups)
}
