package catalog

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/kafka/kafkatest"
)

// TestAppendCommitNotMade: the producer reports a command's transaction
// committed while the broker never committed it. franz-go was seen to do
// that under the race detector: its EndTransaction(TryCommit) returned
// nil and the broker had aborted the command, after the engine had run
// its query; the next start's replay did not have it. Two ways are faked
// here: the broker's answer to the commit without the commit (the
// transaction stays open and holds the last stable offset at the
// command), and the commit turned into an abort; the third adds what
// franz-go does next in that case (its sequence number is not reset by
// the abort, so the rewrite is refused as out of order), twice. Append
// sees each and writes the command again with a new producer (which
// aborts an open transaction and starts from fresh sequence numbers):
// it is in the log once, committed.
func TestAppendCommitNotMade(t *testing.T) {
	defer func(d time.Duration) { decideWait = d }(decideWait)
	decideWait = 500 * time.Millisecond
	for _, mode := range []string{"left open", "aborted", "aborted, rewrites out of order"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := kfake.NewCluster(kfake.NumBrokers(1))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			faked := 0
			c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				r := req.(*kmsg.EndTxnRequest)
				if !r.Commit || faked > 0 {
					return nil, nil, false
				}
				faked++
				if mode != "left open" {
					r.Commit = false // kfake aborts and answers success
					return nil, nil, false
				}
				resp := r.ResponseKind().(*kmsg.EndTxnResponse)
				resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch+1
				return resp, nil, true
			})
			refused := 0
			c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
				c.KeepControl()
				if mode != "aborted, rewrites out of order" || faked == 0 || refused == 2 {
					return nil, nil, false
				}
				refused++
				return kafkatest.ErrorResponse(req, kerr.OutOfOrderSequenceNumber.Code), nil, true
			})
			l, err := OpenCommandLog(ctx, kafka.Plain(c.ListenAddrs()...), "svc", "i")
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			off, err := l.Append(ctx, Command{Statement: "CREATE STREAM s (a INT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON');"})
			if err != nil {
				t.Fatalf("append: %v", err)
			}
			if faked != 1 {
				t.Fatalf("the broker faked %d commits, want 1", faked)
			}
			end, err := l.EndOffset(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if end <= off {
				t.Fatalf("last stable offset %d, want past the command at %d", end, off)
			}
			var got []int64
			if err := l.ReadTo(ctx, end, func(e Entry) error { got = append(got, e.Offset); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != off {
				t.Fatalf("committed commands at %v, want one at %d", got, off)
			}
			// The producer goes on writing.
			if _, err := l.Append(ctx, Command{Statement: "DROP STREAM s;"}); err != nil {
				t.Fatalf("append after: %v", err)
			}
		})
	}
}
