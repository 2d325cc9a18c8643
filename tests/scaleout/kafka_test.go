package scaleout

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
)

// produce writes JSON values keyed by key to topic, synchronously.
func produce(t *testing.T, ctx context.Context, addr, topic string, recs ...[2]string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var rs []*kgo.Record
	for _, r := range recs {
		rs = append(rs, &kgo.Record{Key: []byte(r[0]), Value: []byte(r[1])})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// assignment returns which static member (instance-thread) of group owns
// which partitions of topic, "i1-0:0,2" lines sorted, or "" while the
// group is not stable or some partition of the topic's n is unassigned.
func assignment(ctx context.Context, addr, group, topic string, n int) string {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return ""
	}
	defer cl.Close()
	gs, err := kadm.NewClient(cl).DescribeGroups(ctx, group)
	if err != nil {
		return ""
	}
	g := gs[group]
	if g.Err != nil || g.State != "Stable" {
		return ""
	}
	var lines []string
	seen := 0
	for _, m := range g.Members {
		c, ok := m.Assigned.AsConsumer()
		if !ok || m.InstanceID == nil {
			return ""
		}
		var ps []string
		for _, tp := range c.Topics {
			if tp.Topic == topic {
				for _, p := range tp.Partitions {
					ps = append(ps, fmt.Sprint(p))
					seen++
				}
			}
		}
		slices.Sort(ps)
		lines = append(lines, *m.InstanceID+":"+strings.Join(ps, ","))
	}
	if seen != n {
		return ""
	}
	slices.Sort(lines)
	return strings.Join(lines, " ")
}

// readCommitted reads topic with read_committed from its start to its
// end (as of the call), handing each data record to fn.
func readCommitted(t *testing.T, ctx context.Context, addr, topic string, fn func(*kgo.Record)) {
	t.Helper()
	readCommittedWith(t, ctx, kafka.Plain(addr), topic, fn)
}

// readCommittedWith is readCommitted with clients of the profile kp.
func readCommittedWith(t *testing.T, ctx context.Context, kp kafka.Profile, topic string, fn func(*kgo.Record)) {
	t.Helper()
	cl, err := kp.NewClient(kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.KeepControlRecords()) // markers move the position to the end
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) { want[o.Partition] = o.Offset })
	got := map[int32]int64{}
	done := func() bool {
		for p, end := range want {
			if got[p] < end-1 && end > 0 {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(time.Minute)
	for !done() && time.Now().Before(deadline) {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Partition] = r.Offset
			if !r.Attrs.IsControl() {
				fn(r)
			}
		})
	}
}

// latestCommitted reads topic with read_committed to its end and returns
// each key's last value decoded as JSON.
func latestCommitted(t *testing.T, ctx context.Context, addr, topic string) map[string]map[string]any {
	t.Helper()
	return latestCommittedWith(t, ctx, kafka.Plain(addr), topic)
}

// latestCommittedWith is latestCommitted with clients of the profile kp.
func latestCommittedWith(t *testing.T, ctx context.Context, kp kafka.Profile, topic string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	readCommittedWith(t, ctx, kp, topic, func(r *kgo.Record) {
		if r.Value == nil {
			delete(out, string(r.Key))
			return
		}
		var v map[string]any
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Errorf("value %q: %v", r.Value, err)
		}
		out[string(r.Key)] = v
	})
	return out
}
