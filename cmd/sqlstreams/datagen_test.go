package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestDatagenKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := strings.Join(c.ListenAddrs(), ",")

	cases := []struct {
		args   []string
		topics map[string]int64
	}{
		{[]string{"--quickstart", "pageviews", "--count", "1000", "--partitions", "3", "--seed", "1"}, map[string]int64{"pageviews": 1000}},
		{[]string{"--quickstart", "nexmark", "--topic", "nx_", "--count", "1000"}, map[string]int64{"nx_persons": 20, "nx_auctions": 60, "nx_bids": 920}},
		{[]string{"--quickstart", "orders", "--topic", "o", "--count", "50", "--rate", "100"}, map[string]int64{"o": 50}},
	}
	for _, tc := range cases {
		args := append([]string{"--bootstrap-servers", addr}, tc.args...)
		var stderr strings.Builder
		start := time.Now()
		if code := datagenMain(context.Background(), args, &stderr); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, stderr.String())
		}
		t.Logf("%v (%s): %s", tc.args, time.Since(start).Round(time.Millisecond), stderr.String())

		cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
		if err != nil {
			t.Fatal(err)
		}
		adm := kadm.NewClient(cl)
		for topic, want := range tc.topics {
			ends, err := adm.ListEndOffsets(context.Background(), topic)
			if err != nil {
				t.Fatal(err)
			}
			var got int64
			parts := 0
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err != nil {
					t.Fatalf("%s: %v", topic, o.Err)
				}
				got += o.Offset
				parts++
			})
			if got != want {
				t.Fatalf("%s: %d records, want %d", topic, got, want)
			}
			if topic == "pageviews" && parts != 3 {
				t.Fatalf("pageviews has %d partitions, want 3", parts)
			}
		}
		cl.Close()
	}
}

func TestDatagenRunDatagen(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if code := runDatagen([]string{"--bootstrap-servers", strings.Join(c.ListenAddrs(), ","), "--quickstart", "users", "--count", "1000"}); code != 0 {
		t.Fatalf("exit %d", code)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("users"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n := 0
	for n < 1000 {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("got %d records: %v", n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if !strings.HasPrefix(string(r.Key), "User_") || !strings.Contains(string(r.Value), `"USERID":"`+string(r.Key)+`"`) {
				t.Fatalf("record %s %s", r.Key, r.Value)
			}
			n++
		})
	}
	if n != 1000 {
		t.Fatalf("got %d records", n)
	}
}

func TestDatagenBadFlags(t *testing.T) {
	var stderr strings.Builder
	for _, args := range [][]string{{"--quickstart", "nope"}, {"--quickstart", "users", "--count", "-1"}, {"--quickstart", "users", "--rate", "x"}} {
		stderr.Reset()
		if code := datagenMain(context.Background(), args, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, stderr.String())
		}
	}
}

// TestDatagenUntilStopped runs without --count until the context (SIGINT in
// runDatagen) is cancelled, and checks the per-second progress lines.
func TestDatagenUntilStopped(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2200*time.Millisecond)
	defer cancel()
	var stderr strings.Builder
	args := []string{"--bootstrap-servers", strings.Join(c.ListenAddrs(), ","), "--quickstart", "nexmark", "--rate", "1000"}
	if code := datagenMain(ctx, args, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stderr.String()
	t.Log(out)
	if n := strings.Count(out, " records sent, "); n < 2 {
		t.Fatalf("want 2 progress lines:\n%s", out)
	}
	if !strings.Contains(out, "datagen: done: ") {
		t.Fatalf("want a summary:\n%s", out)
	}
}
