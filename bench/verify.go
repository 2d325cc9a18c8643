package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var verify = flag.Bool("verify", false, "after each run, count the committed output records (read_committed) and print a sample to stderr")

// countOutput reads topic from the start with read_committed until it has
// been idle for a second, and reports the records and one sample value.
func countOutput(ctx context.Context, brokers []string, system, topic string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "verify:", err)
		return
	}
	defer cl.Close()
	n := 0
	var sample string
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if fs.NumRecords() == 0 {
			break
		}
		fs.EachRecord(func(r *kgo.Record) {
			if n == 0 {
				sample = string(r.Key) + " " + string(r.Value)
			}
			n++
		})
	}
	fmt.Fprintf(os.Stderr, "verify: %s wrote %d records to %s; first: %s\n", system, n, topic, sample)
}
