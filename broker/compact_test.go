package broker

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func kv(topic string, key, value string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Key: []byte(key)}
	if value != "" {
		r.Value = []byte(value)
	}
	return r
}

// createCompacted creates a one-partition cleanup.policy=compact topic.
func createCompacted(t testing.TB, addr, topic string, configs map[string]*string) {
	t.Helper()
	if configs == nil {
		configs = map[string]*string{}
	}
	compact := "compact"
	configs["cleanup.policy"] = &compact
	adm := kadm.NewClient(newClient(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 1, 1, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

// TestCompactionBesideOpenTransaction: a committed value of key k, then a
// transaction that writes k again and is still open when the cleaner
// starts a round, then aborts (or commits). A read_committed reader must
// see the committed value after the abort, and the new one after the
// commit: an open transaction's record supersedes nothing. kfake's own
// cleaner dropped the committed value, losing the key after an abort; the
// broker's cleaner waits for the transaction to end, then compacts.
func TestCompactionBesideOpenTransaction(t *testing.T) {
	for _, commit := range []bool{false, true} {
		t.Run(map[bool]string{false: "abort", true: "commit"}[commit], func(t *testing.T) {
			b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
			defer b.Close()
			createCompacted(t, b.Addr(), "c", nil)
			produceTxn(t, b.Addr(), "w1", true, kv("c", "k", "committed"), kv("c", "j", "j1"))

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			open := newClient(t, b.Addr(), kgo.TransactionalID("w2"))
			if err := open.BeginTransaction(); err != nil {
				t.Fatal(err)
			}
			if err := open.ProduceSync(ctx, kv("c", "k", "new")).FirstErr(); err != nil {
				t.Fatal(err)
			}
			// Later batches, so the open one is not the partition's
			// last (which compaction always keeps).
			plain := newClient(t, b.Addr())
			for _, v := range []string{"j2", "j3"} {
				if err := plain.ProduceSync(ctx, kv("c", "j", v)).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}

			type result struct {
				ran bool
				err error
			}
			done := make(chan result, 1)
			go func() {
				ran, err := b.compactNow(ctx)
				done <- result{ran, err}
			}()
			if err := open.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
				t.Fatal(err)
			}
			if r := <-done; r.err != nil || !r.ran {
				t.Fatalf("cleaner round: ran %v, %v; want it to run once the transaction ended", r.ran, r.err)
			}
			want := []string{"committed", "j3"}
			if commit {
				want = []string{"j3", "new"}
			}
			got := consume(t, b.Addr(), "c", kgo.ReadCommitted(), len(want), 5*time.Second)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("read_committed after compaction: %v, want %v", got, want)
			}
			// Compaction did run: j1 and j2 are gone even for
			// read_uncommitted readers.
			for _, v := range consume(t, b.Addr(), "c", kgo.ReadUncommitted(), 10, 2*time.Second) {
				if v == "j1" || v == "j2" {
					t.Fatalf("superseded %s still stored after compaction", v)
				}
			}
		})
	}
}
