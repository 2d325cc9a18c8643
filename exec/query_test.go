package exec

import (
	"context"
	"encoding/binary"
	"fmt"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/kafka/kafkatest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestQueryExactlyOnceUnderFaults runs the bid topology on an embedded
// broker with one and with two stream threads while the broker fails
// some Produce, EndTxn and TxnOffsetCommit requests, and checks that the
// output, read_committed, holds each expected record exactly once.
func TestQueryExactlyOnceUnderFaults(t *testing.T) {
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) { testQueryExactlyOnceUnderFaults(t, threads) })
	}
}

func testQueryExactlyOnceUnderFaults(t *testing.T, threads int) {
	for _, fault := range []struct {
		name string
		key  kmsg.Key
		err  int16
	}{
		{"none", -1, 0},
		{"produce", kmsg.Produce, kerr.InvalidRecord.Code},
		{"end-txn", kmsg.EndTxn, kerr.CoordinatorNotAvailable.Code},
		{"txn-offset-commit", kmsg.TxnOffsetCommit, kerr.CoordinatorLoadInProgress.Code},
	} {
		t.Run(fault.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			c := bidCluster(t)
			brokers := c.ListenAddrs()

			const n, batches = 20000, 10
			produceBids(t, ctx, brokers, 0, n/batches)
			// Fail every third request of the kind, up to four times.
			injected := new(atomic.Int32)
			if fault.key >= 0 {
				injected = injectFaults(c, fault.key, fault.err, 3, 4)
			}
			q, err := Start("Q", bidTopology(t), Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", Threads: threads, CommitInterval: 20 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			// Several batches, each waited for, so that the run spans many
			// transactions and the faults land in the middle of it.
			for b := 1; b < batches; b++ {
				waitCommitted(t, ctx, brokers, "app", "bids")
				produceBids(t, ctx, brokers, b*n/batches, (b+1)*n/batches)
			}
			waitCommitted(t, ctx, brokers, "app", "bids")
			q.Stop()
			if fault.key >= 0 && injected.Load() == 0 {
				t.Fatal("no fault was injected")
			}
			st := q.Status()
			t.Logf("injected %d faults; stats %+v", injected.Load(), st.Stats)

			wantBidsOnce(t, readOut(t, ctx, brokers), n)
		})
	}
}

// bidCluster starts an embedded broker with the bid topology's topics,
// closed when the test ends.
func bidCluster(t testing.TB) *kfake.Cluster { return testCluster(t, 3, "bids", "out") }

// testCluster starts an embedded broker with topics of partitions
// partitions, closed when the test ends.
func testCluster(t testing.TB, partitions int32, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func price(i int) int64 { return int64(i%10) * 1000 }

// wantBidsOnce fails unless got (bidder → times in the output) holds each
// of bids 0..n-1 that passes the bid topology's filter exactly once, and
// nothing else.
func wantBidsOnce(t *testing.T, got map[int64]int, n int) {
	t.Helper()
	want := 0
	for i := 0; i < n; i++ {
		if price(i) > 5000 {
			want++
			if got[int64(i)] != 1 {
				t.Fatalf("bidder %d appears %d times in the output, want once", i, got[int64(i)])
			}
		}
	}
	if len(got) != want {
		t.Fatalf("output has %d bidders, want %d", len(got), want)
	}
}

func produceBids(t *testing.T, ctx context.Context, brokers []string, from, to int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("bids"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := from; i < to; i++ {
		recs = append(recs, &kgo.Record{
			Key:   binary.BigEndian.AppendUint64(nil, uint64(i%97)),
			Value: fmt.Appendf(nil, `{"bidder":%d,"price":%d,"channel":"c"}`, i, price(i)),
		})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// injectFaults answers every every-th request of key from a query with
// code, at most most times, and returns the count of those answered so.
// The test's own (non-transactional) produces of input are left alone.
func injectFaults(c *kfake.Cluster, key kmsg.Key, code int16, every, most int32) *atomic.Int32 {
	var seen, injected atomic.Int32
	c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if p, ok := req.(*kmsg.ProduceRequest); ok && p.TransactionID == nil {
			return nil, nil, false
		}
		if seen.Add(1)%every != 0 || injected.Load() >= most {
			return nil, nil, false
		}
		injected.Add(1)
		return kafkatest.ErrorResponse(req, code), nil, true
	})
	return &injected
}

func waitCommitted(t testing.TB, ctx context.Context, brokers []string, group, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for {
		ends, err1 := adm.ListEndOffsets(ctx, topic)
		committed, err2 := adm.FetchOffsets(ctx, group)
		if err1 == nil && err2 == nil {
			done := true
			ends.Each(func(o kadm.ListedOffset) {
				if c, ok := committed.Lookup(topic, o.Partition); !ok || c.At < o.Offset {
					done = false
				}
			})
			if done {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatal("query never caught up")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// readOut returns how often each bidder appears in "out", read_committed.
func readOut(t *testing.T, ctx context.Context, brokers []string) map[int64]int {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("out"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int64]int{}
	for {
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if fs.Empty() {
			return got
		}
		fs.EachRecord(func(r *kgo.Record) {
			var bidder int64
			fmt.Sscanf(string(r.Value), `{"BIDDER":%d`, &bidder)
			got[bidder]++
		})
	}
}

// TestQueryExactlyOnceAcrossStops stops the bid query in the middle of a
// transaction just as PollFetches returns records (a client hook cancels
// the query there), starts it again, and checks that the output,
// read_committed, holds each expected record exactly once: the session
// counts polled records as consumed, so a stop must process them before
// it commits, or not commit.
func TestQueryExactlyOnceAcrossStops(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	brokers := bidCluster(t).ListenAddrs()
	const n = 20000
	produceBids(t, ctx, brokers, 0, 1000)

	hook := &stopOnPoll{}
	// A commit interval longer than the test: the transaction is open
	// when the stop comes.
	cfg := Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", CommitInterval: time.Minute, clientOpts: []kgo.Opt{kgo.WithHooks(hook)}}
	q, err := Start("Q", bidTopology(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	hook.stop = q.cancel
	for q.Status().Stats.RecordsIn < 1000 {
		if ctx.Err() != nil {
			t.Fatal("the first records were never processed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	hook.armed.Store(true) // the next poll that returns records stops the query
	produceBids(t, ctx, brokers, 1000, n)
	for !hook.fired.Load() {
		if ctx.Err() != nil {
			t.Fatal("the hook never stopped the query")
		}
		time.Sleep(5 * time.Millisecond)
	}
	q.Stop()
	t.Logf("stopped after %+v", q.Status().Stats)

	cfg.CommitInterval, cfg.clientOpts = 20*time.Millisecond, nil
	if q, err = Start("Q", bidTopology(t), cfg); err != nil {
		t.Fatal(err)
	}
	waitCommitted(t, ctx, brokers, "app", "bids")
	q.Stop()

	wantBidsOnce(t, readOut(t, ctx, brokers), n)
}

// stopOnPoll calls stop, once armed, as a poll is about to return a
// record (kgo runs the hook on the polling goroutine before the poll
// returns).
type stopOnPoll struct {
	armed, fired atomic.Bool
	stop         func()
}

func (h *stopOnPoll) OnFetchRecordUnbuffered(_ *kgo.Record, polled bool) {
	if polled && h.armed.Load() && !h.fired.Swap(true) {
		h.stop()
	}
}
