package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

var verify = flag.Bool("verify", false, "after each run, read its committed output (read_committed) and fail unless both systems wrote the same records")

// output summarizes what a run committed to its output topic: the record
// count, an order-independent digest of the (key, value, timestamp)
// multiset, and the first record read (which depends on the order
// partitions are read in), for messages only.
type output struct {
	n      int
	digest uint64
	sample string
}

// readOutput reads topic from the start with read_committed until it has
// been idle for a second with every partition read to within its last
// offset (the final transaction marker), or idle for 30 s: a busy machine
// can leave a poll empty for a second before the end.
func readOutput(ctx context.Context, brokers []string, topic string) (output, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return output{}, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return output{}, err
	}
	seen := map[int32]int64{} // partition → last offset read
	atEnd := func() bool {
		done := true
		ends.Each(func(e kadm.ListedOffset) {
			if last, ok := seen[e.Partition]; e.Offset > 0 && (!ok || last < e.Offset-2) {
				done = false
			}
		})
		return done
	}
	var o output
	h := fnv.New64a()
	idle := time.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if fs.NumRecords() == 0 {
			if atEnd() || time.Since(idle) > 30*time.Second {
				if *verbose {
					var at []string
					ends.Each(func(e kadm.ListedOffset) {
						at = append(at, fmt.Sprintf("%d: read to %d of %d (%v)", e.Partition, seen[e.Partition], e.Offset, e.Err))
					})
					logf("verify: %s read after %v idle: %s", topic, time.Since(idle).Round(time.Second), strings.Join(at, ", "))
				}
				return o, nil
			}
			continue
		}
		idle = time.Now()
		fs.EachRecord(func(r *kgo.Record) {
			seen[r.Partition] = max(seen[r.Partition], r.Offset)
			if o.n == 0 {
				o.sample = string(r.Key) + " " + string(r.Value)
			}
			o.n++
			h.Reset()
			h.Write(r.Key)
			h.Write([]byte{0})
			h.Write(r.Value)
			h.Write(binary.BigEndian.AppendUint64(nil, uint64(r.Timestamp.UnixMilli())))
			o.digest += h.Sum64()
		})
	}
}

// sameOutputs fails unless every run of both systems wrote the same
// records.
func sameOutputs(sc string, sql, hand []run) error {
	want := sql[0].out
	if want.n == 0 {
		return fmt.Errorf("%s: sqlstreams wrote no output", sc)
	}
	check := func(system string, rs []run) error {
		for i, r := range rs {
			if r.out.n != want.n || r.out.digest != want.digest {
				return fmt.Errorf("%s: %s run %d wrote %d records (digest %x, first %q), sqlstreams run 0 wrote %d (digest %x, first %q)",
					sc, system, i, r.out.n, r.out.digest, r.out.sample, want.n, want.digest, want.sample)
			}
		}
		return nil
	}
	if err := check("sqlstreams", sql); err != nil {
		return err
	}
	return check("handwritten", hand)
}
