package catalog

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sqlstreams/sqlstreams/kafka"
)

// TestAppendCommitLeftOpen: the producer reports a command's transaction
// committed while the broker never received the commit (the broker's
// answer to EndTxn is faked here; franz-go was seen to end a transaction
// without sending EndTxn under the race detector). The transaction stays
// open and holds the last stable offset at the command, so that a
// restarted instance, fencing the producer, aborted a command whose query
// had run. Append sees the command undecided, renews the producer (which
// aborts the open transaction) and writes the command again: it is in the
// log once, committed.
func TestAppendCommitLeftOpen(t *testing.T) {
	defer func(d time.Duration) { decideWait = d }(decideWait)
	decideWait = 500 * time.Millisecond
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
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ProducerID, resp.ProducerEpoch = r.ProducerID, r.ProducerEpoch+1
		return resp, nil, true
	})
	kp := kafka.Plain(c.ListenAddrs()...)
	l, err := OpenCommandLog(ctx, kp, "svc", "i")
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
		t.Fatalf("append after the renewal: %v", err)
	}
}
