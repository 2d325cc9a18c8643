package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/datagen"
)

const datagenUsage = `usage: sqlstreams datagen --quickstart pageviews|users|orders|nexmark [flags]

Produces generated records to Kafka at --rate records/s (0: as fast as
possible) until --count records are sent (0: until interrupted), printing
progress to stderr every second.

  pageviews  key USERID, {"VIEWTIME","USERID","PAGEID"}        topic pageviews
  users      key USERID, {"REGISTERTIME","USERID","REGIONID","GENDER"}  topic users
  orders     key ORDERID, {"ORDERTIME","ORDERID","ITEMID","ORDERUNITS",
             "ADDRESS":{"CITY","STATE","ZIPCODE"}}               topic orders
  nexmark    Nexmark generator events (1 person : 3 auctions : 46 bids) to
             three topics <topic>persons, <topic>auctions, <topic>bids
             (--topic is a prefix, empty by default); keys are the person
             id, the auction id and the bid's auction id

With --seed the output is deterministic: the same keys, values and
timestamps (event i has time --start-time + i × 1ms, or 100µs for nexmark;
--start-time defaults to 2024-01-01T00:00:00Z with --seed, now without).
`

// runDatagen implements "sqlstreams datagen".
func runDatagen(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return datagenMain(ctx, args, os.Stderr)
}

func datagenMain(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("sqlstreams datagen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, datagenUsage, "\nflags:\n")
		fs.PrintDefaults()
	}
	kafkaFlags := addKafkaFlags(fs, "127.0.0.1:9092", "Kafka bootstrap servers, comma-separated")
	quickstart := stringFlag(fs, "quickstart", "", "generator: pageviews, users, orders or nexmark")
	topic := stringFlag(fs, "topic", "", "destination topic (default: the quickstart's name); for nexmark a topic-name prefix")
	countS := stringFlag(fs, "count", "0", "records to produce; 0 produces until interrupted")
	rateS := stringFlag(fs, "rate", "0", "records per second; 0 is as fast as possible")
	seedS := stringFlag(fs, "seed", "", "random seed; set for deterministic output (default: random)")
	startS := stringFlag(fs, "start-time", "", "event time of the first record, RFC 3339 or \"now\" (default: 2024-01-01T00:00:00Z with --seed, else now)")
	partsS := stringFlag(fs, "partitions", "1", "partitions for topics created if missing; 0 creates none")
	oooS := stringFlag(fs, "out-of-order-group-size", "1", "the Nexmark generator's outOfOrderGroupSize: event times shuffled within groups of this many events (1: in order)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "sqlstreams datagen: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	count, err := strconv.ParseInt(*countS, 10, 64)
	if err != nil || count < 0 {
		return bad("bad --count %q", *countS)
	}
	rate, err := strconv.ParseFloat(*rateS, 64)
	if err != nil || rate < 0 {
		return bad("bad --rate %q", *rateS)
	}
	parts, err := strconv.ParseInt(*partsS, 10, 32)
	if err != nil || parts < 0 {
		return bad("bad --partitions %q", *partsS)
	}
	ooo, err := strconv.ParseInt(*oooS, 10, 64)
	if err != nil || ooo < 1 {
		return bad("bad --out-of-order-group-size %q (want 1 or more)", *oooS)
	}
	cfg := datagen.Config{Quickstart: *quickstart, Topic: *topic, OutOfOrderGroupSize: ooo}
	if *seedS != "" {
		if cfg.Seed, err = strconv.ParseInt(*seedS, 10, 64); err != nil {
			return bad("bad --seed %q", *seedS)
		}
		cfg.Base = datagen.DefaultBase
	} else {
		cfg.Seed = time.Now().UnixNano()
		cfg.Base = time.Now()
	}
	switch *startS {
	case "":
	case "now":
		cfg.Base = time.Now()
	default:
		if cfg.Base, err = time.Parse(time.RFC3339Nano, *startS); err != nil {
			return bad("bad --start-time %q (want RFC 3339 or now)", *startS)
		}
	}
	kp, warnings, err := kafkaFlags.profile(nil)
	if err != nil {
		return bad("%v", err)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "sqlstreams datagen: %s\n", w)
	}
	gen, err := datagen.New(cfg)
	if err != nil {
		return bad("%v", err)
	}
	topics := datagen.Topics(cfg)

	cl, err := kp.NewClient(
		kgo.AllowAutoTopicCreation(),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		return bad("%v", err)
	}
	defer cl.Close()

	if parts > 0 {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resps, err := kadm.NewClient(cl).CreateTopics(cctx, int32(parts), -1, nil, topics...)
		cancel()
		if err != nil {
			fmt.Fprintf(stderr, "sqlstreams datagen: %v\n", err)
			return 1
		}
		for _, r := range resps.Sorted() {
			switch {
			case r.Err == nil:
				fmt.Fprintf(stderr, "datagen: created topic %s with %d partitions\n", r.Topic, parts)
			case errors.Is(r.Err, kerr.TopicAlreadyExists):
			default:
				fmt.Fprintf(stderr, "sqlstreams datagen: creating topic %s: %v\n", r.Topic, r.Err)
				return 1
			}
		}
	}

	// Records are produced under pctx, which is not cancelled by the
	// interrupt itself so that records already buffered are still
	// delivered; it ends on the first produce error, or 10s after an
	// interrupt if the brokers do not accept the buffered records.
	pctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-finished:
			return
		case <-ctx.Done():
		}
		select {
		case <-finished:
		case <-time.After(10 * time.Second):
			cancel()
		}
	}()
	var (
		acked    atomic.Int64
		errOnce  sync.Once
		firstErr error
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			errOnce.Do(func() { firstErr = err; cancel() })
			return
		}
		acked.Add(1)
	}

	start := time.Now()
	progressDone := make(chan struct{})
	var progressWG sync.WaitGroup
	progressWG.Add(1)
	go func() {
		defer progressWG.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		last, lastT := int64(0), start
		for {
			select {
			case <-progressDone:
				return
			case now := <-t.C:
				n := acked.Load()
				fmt.Fprintf(stderr, "datagen: %d records sent, %.0f records/s\n", n, float64(n-last)/now.Sub(lastT).Seconds())
				last, lastT = n, now
			}
		}
	}()

	var (
		rec     datagen.Record
		timer   *time.Timer
		sent    int64
		stopped bool
	)
loop:
	for count == 0 || sent < count {
		if ctx.Err() != nil || pctx.Err() != nil {
			stopped = true
			break
		}
		if rate > 0 {
			due := start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))
			if d := time.Until(due); d > 0 {
				if timer == nil {
					timer = time.NewTimer(d)
				} else {
					timer.Reset(d)
				}
				select {
				case <-ctx.Done():
					timer.Stop()
					stopped = true
					break loop
				case <-pctx.Done():
					timer.Stop()
					stopped = true
					break loop
				case <-timer.C:
				}
			}
		}
		gen.Next(&rec)
		buf := make([]byte, len(rec.Key)+len(rec.Value))
		copy(buf, rec.Key)
		copy(buf[len(rec.Key):], rec.Value)
		cl.Produce(pctx, &kgo.Record{
			Topic:     rec.Topic,
			Key:       buf[:len(rec.Key):len(rec.Key)],
			Value:     buf[len(rec.Key):],
			Timestamp: rec.Timestamp,
		}, promise)
		sent++
	}
	flushErr := cl.Flush(pctx)
	close(progressDone)
	progressWG.Wait()
	n := acked.Load()
	el := time.Since(start)
	fmt.Fprintf(stderr, "datagen: done: %d records sent to %s in %s (%.0f records/s)\n",
		n, strings.Join(topics, ", "), el.Round(time.Millisecond), float64(n)/el.Seconds())
	if firstErr != nil {
		fmt.Fprintf(stderr, "sqlstreams datagen: produce: %v\n", firstErr)
		return 1
	}
	if flushErr != nil {
		fmt.Fprintf(stderr, "sqlstreams datagen: flush: %v\n", flushErr)
		return 1
	}
	if stopped && ctx.Err() == nil {
		return 1
	}
	return 0
}
