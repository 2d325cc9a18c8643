package exec

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sqlstreams/sqlstreams/kafka/kafkatest"
)

// TestSelfAbortsSeen checks that selfAborts recognizes franz-go's abort
// of a transaction it was asked to commit, on the one path that can be
// made at will: the transaction's only produce is refused. (The path it
// is there for, a produce that succeeded and went unseen, is a race.)
// A commit franz-go does make is not taken for one.
func TestSelfAbortsSeen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	refuse := true
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !refuse {
			return nil, nil, false
		}
		return kafkatest.ErrorResponse(req, kerr.InvalidRecord.Code), nil, true
	})
	var s selfAborts
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("x"), kgo.WithLogger(&s), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	end := func() bool {
		t.Helper()
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
		return s.seen.Swap(false)
	}
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("a")}).FirstErr(); err == nil {
		t.Fatal("the refused produce succeeded")
	}
	if !end() {
		t.Fatalf("franz-go's abort of a commit was not seen (does it still log %q?)", franzSelfAbort)
	}
	refuse = false
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("b")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if end() {
		t.Fatal("a commit was taken for an abort")
	}
}
