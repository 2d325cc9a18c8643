package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/datagen"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The input is the Bid stream of ../datagen's Nexmark quickstart (seed 1):
// JSON values {"auction","bidder","price","channel","url","dateTime","extra"}
// with hot auctions and bidders, key = auction id as a decimal string.

// preload creates topic with 4 partitions and produces n bids to it as fast
// as it can. It returns the exact median price (the lower median). A
// non-nil encode turns each JSON value into what is produced.
func preload(ctx context.Context, brokers []string, topic string, n int, encode func([]byte) ([]byte, error)) (median int64, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(200_000), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 4, -1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return 0, fmt.Errorf("creating %s: %w", topic, err)
	}
	prices := make([]int64, 0, n)
	var (
		mu    sync.Mutex
		first error
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	}
	gen, err := datagen.New(datagen.Config{Quickstart: "nexmark", Seed: 1})
	if err != nil {
		return 0, err
	}
	var rec datagen.Record
	for len(prices) < n {
		gen.Next(&rec)
		if rec.Kind != datagen.KindBid {
			continue
		}
		var fields struct{ Price int64 }
		if err := json.Unmarshal(rec.Value, &fields); err != nil {
			return 0, fmt.Errorf("generated bid %q: %w", rec.Value, err)
		}
		prices = append(prices, fields.Price)
		value := bytes.Clone(rec.Value)
		if encode != nil {
			if value, err = encode(rec.Value); err != nil {
				return 0, err
			}
		}
		cl.Produce(ctx, &kgo.Record{Key: bytes.Clone(rec.Key), Value: value}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return 0, err
	}
	if first != nil {
		return 0, first
	}
	slices.Sort(prices)
	return prices[(n-1)/2], nil
}
