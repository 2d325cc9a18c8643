// Package datagen generates realistic, deterministic test records for
// sqlstreams: the ksqlDB quickstart streams (pageviews, users, orders) and
// the Nexmark benchmark's person/auction/bid events.
//
// A Generator is a pure iterator: given the same Config it yields the same
// sequence of records, byte for byte (keys, values and timestamps), so it
// can drive both the "sqlstreams datagen" command and benchmark harnesses.
// Record i is computed from (Config.Seed, i) alone, using a small
// per-event random number generator, so generation has no shared state
// beyond the event counter and never calls encoding/json: values are
// appended into buffers the Record reuses across calls.
//
// Typical use:
//
//	g, err := datagen.New(datagen.Config{Quickstart: "nexmark", Seed: 1})
//	var r datagen.Record
//	for i := 0; i < n; i++ {
//		g.Next(&r) // r.Key and r.Value are valid until the next call
//		send(r.Topic, bytes.Clone(r.Key), bytes.Clone(r.Value), r.Timestamp)
//	}
package datagen

import (
	"fmt"
	"math/bits"
	"time"
)

// Record is one generated record. Key and Value are reused by the next call
// to Generator.Next on the same Record: copy them to keep them.
type Record struct {
	// Topic is the destination topic (Config.Topic, or for nexmark the
	// prefix plus "persons", "auctions" or "bids").
	Topic string
	// Key and Value are the record's key and JSON value.
	Key, Value []byte
	// Timestamp is the record's event time: Config.Base plus the event
	// index times the generator's inter-event delay.
	Timestamp time.Time
	// Kind is the event kind: the quickstart name, or for nexmark one of
	// KindPerson, KindAuction, KindBid.
	Kind string
	// Index is the event number, starting at 0.
	Index int64
}

// Nexmark event kinds, as Record.Kind.
const (
	KindPerson  = "person"
	KindAuction = "auction"
	KindBid     = "bid"
)

// Generator yields records one at a time.
type Generator interface {
	// Next overwrites dst with the next record, reusing dst.Key and
	// dst.Value's storage.
	Next(dst *Record)
}

// Quickstarts lists the supported Config.Quickstart names.
var Quickstarts = []string{"pageviews", "users", "orders", "nexmark"}

// DefaultBase is the fixed base time used when Config.Base is zero, so that
// output is reproducible across runs: 2024-01-01T00:00:00Z.
var DefaultBase = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Config selects and parameterises a generator.
type Config struct {
	// Quickstart is one of Quickstarts.
	Quickstart string
	// Topic is the destination topic; empty means the quickstart's name.
	// For nexmark it is a prefix: events go to Topic+"persons",
	// Topic+"auctions" and Topic+"bids" (empty prefix by default).
	Topic string
	// Seed makes the output deterministic: equal seeds, equal records.
	Seed int64
	// Base is the event time of record 0; zero means DefaultBase.
	Base time.Time
	// InterEvent is the event-time gap between consecutive records; zero
	// means 1ms for the quickstarts and 100µs for nexmark (the Nexmark
	// generator's default first event rate of 10,000 events/s).
	InterEvent time.Duration
	// Start is the index of the first event generated (0 by default), so
	// that disjoint ranges can be generated in parallel.
	Start int64
	// OutOfOrderGroupSize is the Nexmark generator's outOfOrderGroupSize:
	// the events of each group of that many consecutive events take the
	// group's event times in a shuffled order (event i the time of event
	// (i/n)*n + (i*953)%n), so event times go back by up to n-1 gaps.
	// 0 or 1 keeps them in order (the generator's default).
	OutOfOrderGroupSize int64
}

// New returns the generator cfg describes.
func New(cfg Config) (Generator, error) {
	if cfg.Base.IsZero() {
		cfg.Base = DefaultBase
	}
	b := base{seed: uint64(cfg.Seed), baseMs: cfg.Base.UnixMilli(), baseNs: cfg.Base.UnixNano(), next: cfg.Start, outOfOrder: cfg.OutOfOrderGroupSize}
	topic := cfg.Topic
	if topic == "" && cfg.Quickstart != "nexmark" {
		topic = cfg.Quickstart
	}
	b.interNs = int64(cfg.InterEvent)
	switch cfg.Quickstart {
	case "pageviews":
		b.setDefaultInter(time.Millisecond)
		return &pageviews{base: b, topic: topic}, nil
	case "users":
		b.setDefaultInter(time.Millisecond)
		return &users{base: b, topic: topic}, nil
	case "orders":
		b.setDefaultInter(time.Millisecond)
		return &orders{base: b, topic: topic}, nil
	case "nexmark":
		b.setDefaultInter(100 * time.Microsecond)
		return newNexmark(b, topic), nil
	}
	return nil, fmt.Errorf("datagen: unknown quickstart %q (want pageviews, users, orders or nexmark)", cfg.Quickstart)
}

// Topics returns the topics a generator for cfg writes to.
func Topics(cfg Config) []string {
	if cfg.Quickstart == "nexmark" {
		return []string{cfg.Topic + "persons", cfg.Topic + "auctions", cfg.Topic + "bids"}
	}
	if cfg.Topic == "" {
		return []string{cfg.Quickstart}
	}
	return []string{cfg.Topic}
}

// base holds the state shared by all generators.
type base struct {
	seed    uint64
	baseMs  int64
	baseNs  int64
	interNs int64
	next    int64
	rng     rng
	// outOfOrder is Config.OutOfOrderGroupSize.
	outOfOrder int64
}

func (b *base) setDefaultInter(d time.Duration) {
	if b.interNs <= 0 {
		b.interNs = int64(d)
	}
}

// begin starts event b.next: it seeds the per-event RNG, fills the
// record's index and timestamp and returns the event index and its time
// in epoch milliseconds.
func (b *base) begin(dst *Record) (int64, int64) {
	i := b.next
	b.next++
	b.rng.seed(b.seed, uint64(i))
	at := i
	if n := b.outOfOrder; n > 1 {
		at = i/n*n + i*953%n // GeneratorConfig.nextAdjustedEventNumber
	}
	ns := b.baseNs + at*b.interNs
	dst.Index = i
	dst.Timestamp = time.Unix(0, ns).UTC()
	dst.Key = dst.Key[:0]
	dst.Value = dst.Value[:0]
	return i, b.msAt(at)
}

// msAt is the event time of event i in epoch milliseconds.
func (b *base) msAt(i int64) int64 {
	return (b.baseNs + i*b.interNs) / int64(time.Millisecond)
}

// rng is a splitmix64 generator, seeded afresh for each event from the
// seed and the event index (as the Nexmark generator seeds a
// java.util.Random with the event id).
type rng struct{ s uint64 }

func (r *rng) seed(seed, i uint64) {
	r.s = seed*0x9E3779B97F4A7C15 ^ (i+1)*0xD1B54A32D192ED03
	r.u64()
}

func (r *rng) u64() uint64 {
	r.s += 0x9E3779B97F4A7C15
	z := r.s
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// intn returns a value in [0, n) for n > 0.
func (r *rng) intn(n int64) int64 {
	if n <= 0 {
		return 0
	}
	hi, _ := bits.Mul64(r.u64(), uint64(n))
	return int64(hi)
}

// float returns a value in [0, 1).
func (r *rng) float() float64 { return float64(r.u64()>>11) / (1 << 53) }
