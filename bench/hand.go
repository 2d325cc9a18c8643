package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"
)

// The hand-written pipelines: what a performance-minded engineer writes
// with franz-go for this one schema, with sqlstreams' guarantees: one
// GroupTransactSession (consume, produce and offset commit in one
// transaction), read_committed, a commit every 100 ms, the output (and for
// the aggregate the changelog) partition = the input partition.

type handConfig struct {
	brokers    []string
	group      string
	input      string
	output     string
	changelog  string // aggregate, windows, join-ss (the left side's)
	changelog2 string // join-ss: the right side's; distinct: its values'
	median     int64  // stateless only
	// table is a second input (join-st's persons, join-ss's auctions);
	// with tableFirst, each poll's records of it are processed before
	// the others (join-st's table loads before its stream joins).
	table      string
	tableFirst bool
}

// processor handles one input record inside the open transaction. It
// appends output records to the batch; abort undoes its state changes.
type processor interface {
	process(r *kgo.Record, b *batch) error
	commit()
	abort()
}

// flusher is a processor that writes what it coalesced over the
// transaction (its changelog) before the transaction ends.
type flusher interface{ flush(b *batch) }

// batch owns the records and value bytes of one transaction; both are
// reused once the transaction has ended (every record has been flushed).
type batch struct {
	recs  []kgo.Record
	arena []byte
}

func (b *batch) add(topic string, in *kgo.Record, val []byte) {
	// The input's partition, key and timestamp (the output row's ROWTIME,
	// as sqlstreams keeps it).
	b.recs = append(b.recs, kgo.Record{Topic: topic, Partition: in.Partition, Key: in.Key, Value: val, Timestamp: in.Timestamp})
}

func (b *batch) reset() { b.recs, b.arena = b.recs[:0], b.arena[:0] }

// recordSlices lends the client the slices it decodes fetched records
// into, by power-of-two capacity; they come back when every record of one
// has been recycled.
type recordSlices struct {
	mu   sync.Mutex
	free [40][][]kgo.Record
}

func (p *recordSlices) GetRecords(n int) []kgo.Record {
	c := bits.Len(uint(n)) // 1<<c > n
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := len(p.free[c]); l > 0 {
		s := p.free[c][l-1]
		p.free[c] = p.free[c][:l-1]
		return s[:0]
	}
	return make([]kgo.Record, 0, 1<<c)
}

func (p *recordSlices) PutRecords(s []kgo.Record) {
	c := bits.Len(uint(cap(s))) - 1
	p.mu.Lock()
	defer p.mu.Unlock()
	if c >= 0 && len(p.free[c]) < 16 {
		p.free[c] = append(p.free[c], s[:0])
	}
}

// runHand runs the pipeline until ctx is cancelled, then commits what is open.
func runHand(ctx context.Context, cfg handConfig, proc processor) error {
	sess, err := kgo.NewGroupTransactSession(
		kgo.SeedBrokers(cfg.brokers...),
		kgo.ConsumerGroup(cfg.group),
		kgo.ConsumeTopics(append([]string{cfg.input}, nonEmpty(cfg.table)...)...),
		kgo.TransactionalID(cfg.group+"-0"),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(10*time.Second),
		kgo.TransactionTimeout(60*time.Second),
		kgo.ProducerLinger(0),
		// Uncompressed, as sqlstreams produces by default (Kafka's
		// compression.type=none, kafka.Profile.Opts).
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.WithPools(&recordSlices{}),
	)
	if err != nil {
		return err
	}
	defer sess.Close()

	interval := time.Duration(*commitMs) * time.Millisecond
	var produceErr atomic.Pointer[error]
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			e := err // only a failure's error escapes to the heap
			produceErr.CompareAndSwap(nil, &e)
		}
	}
	b := &batch{recs: make([]kgo.Record, 0, 1<<16), arena: make([]byte, 0, 4<<20)}
	flushed := 0 // records of b already handed to the producer
	inTxn := false
	var txnStart time.Time
	end := func(ctx context.Context) error {
		if f, ok := proc.(flusher); ok {
			f.flush(b)
			for i := flushed; i < len(b.recs); i++ {
				sess.Produce(context.Background(), &b.recs[i], promise)
			}
			flushed = len(b.recs)
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		inTxn = false
		if committed && err == nil {
			proc.commit()
		} else {
			proc.abort()
		}
		b.reset()
		flushed = 0
		if err != nil {
			return err
		}
		if pe := produceErr.Swap(nil); pe != nil && committed {
			return fmt.Errorf("produce failed but committed: %w", *pe)
		}
		return nil
	}
	defer func() {
		if inTxn {
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = end(sctx)
			cancel()
		}
	}()
	for {
		pctx, cancel := context.WithTimeout(ctx, interval)
		fetches := sess.PollFetches(pctx)
		cancel()
		// Records polled as the stop came count as consumed: process them
		// before the deferred end commits.
		stopping := ctx.Err() != nil
		if stopping && fetches.NumRecords() == 0 {
			return nil
		}
		if fetches.IsClientClosed() {
			return errors.New("client closed")
		}
		if fetches.NumRecords() > 0 {
			if !inTxn {
				if err := sess.Begin(); err != nil {
					return err
				}
				inTxn, txnStart = true, time.Now()
			}
			var perr error
			if cfg.tableFirst {
				fetches.EachTopic(func(t kgo.FetchTopic) {
					if t.Topic == cfg.table {
						t.EachRecord(func(r *kgo.Record) {
							if perr == nil {
								perr = proc.process(r, b)
							}
						})
					}
				})
			}
			fetches.EachRecord(func(r *kgo.Record) {
				if perr == nil && (!cfg.tableFirst || r.Topic != cfg.table) {
					perr = proc.process(r, b)
				}
				r.Recycle() // output keeps r.Key's bytes, not r
			})
			if perr != nil {
				return perr
			}
			// The batch's slices may have been reallocated while
			// growing; records handed over earlier keep pointing at
			// the old (still live) arrays, so only hand over new ones.
			for i := flushed; i < len(b.recs); i++ {
				sess.Produce(context.Background(), &b.recs[i], promise)
			}
			flushed = len(b.recs)
		}
		if stopping {
			return nil
		}
		if inTxn && time.Since(txnStart) >= interval {
			if err := end(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
		}
	}
}

// nonEmpty returns s as a list, empty when s is.
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b, s []byte) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// stateless: SELECT auction, bidder, price*908/1000 AS euros, channel
// FROM bids WHERE price > median.
type stateless struct {
	p      fastjson.Parser
	median int64
	out    string
	bad    int64
}

func (s *stateless) process(r *kgo.Record, b *batch) error {
	v, err := s.p.ParseBytes(r.Value)
	if err != nil {
		s.bad++
		return nil
	}
	pv := v.Get("price")
	if pv == nil || pv.Type() != fastjson.TypeNumber {
		return nil // NULL > x is not true
	}
	price := pv.GetInt64()
	if price <= s.median {
		return nil
	}
	start := len(b.arena)
	a := append(b.arena, `{"BIDDER":`...)
	if bv := v.Get("bidder"); bv != nil && bv.Type() == fastjson.TypeNumber {
		a = strconv.AppendInt(a, bv.GetInt64(), 10)
	} else {
		a = append(a, "null"...)
	}
	a = append(a, `,"EUROS":`...)
	a = strconv.AppendInt(a, price*908/1000, 10)
	a = append(a, `,"CHANNEL":`...)
	if cv := v.Get("channel"); cv != nil && cv.Type() == fastjson.TypeString {
		a = appendJSONString(a, cv.GetStringBytes())
	} else {
		a = append(a, "null"...)
	}
	a = append(a, '}')
	b.arena = a
	b.add(s.out, r, a[start:len(a):len(a)])
	return nil
}

func (s *stateless) commit() {}
func (s *stateless) abort()  {}

// aggregate: SELECT auction, COUNT(*) n, SUM(price) total, MAX(price) top
// FROM bids GROUP BY auction, state in a map, each update written to the
// changelog (key → 24-byte state) and the output in the same transaction.
type aggState struct {
	n, total, top int64
	hasTop        bool
}

type aggregate struct {
	p         fastjson.Parser
	state     map[string]*aggState
	undo      map[*aggState]aggState // state before this transaction
	created   []string               // keys created in this transaction
	out, clog string
}

func newAggregate(out, clog string) *aggregate {
	return &aggregate{state: make(map[string]*aggState, 1<<16), undo: map[*aggState]aggState{}, out: out, clog: clog}
}

func (g *aggregate) process(r *kgo.Record, b *batch) error {
	v, err := g.p.ParseBytes(r.Value)
	if err != nil {
		return nil
	}
	st := g.state[string(r.Key)]
	if st == nil {
		st = &aggState{}
		k := string(r.Key)
		g.state[k] = st
		g.created = append(g.created, k)
	} else if _, ok := g.undo[st]; !ok {
		g.undo[st] = *st
	}
	st.n++
	if pv := v.Get("price"); pv != nil && pv.Type() == fastjson.TypeNumber {
		price := pv.GetInt64()
		st.total += price
		if !st.hasTop || price > st.top {
			st.top, st.hasTop = price, true
		}
	}
	// changelog
	start := len(b.arena)
	a := binary.BigEndian.AppendUint64(b.arena, uint64(st.n))
	a = binary.BigEndian.AppendUint64(a, uint64(st.total))
	a = binary.BigEndian.AppendUint64(a, uint64(st.top))
	b.add(g.clog, r, a[start:len(a):len(a)])
	// output row
	start = len(a)
	a = append(a, `{"N":`...)
	a = strconv.AppendInt(a, st.n, 10)
	a = append(a, `,"TOTAL":`...)
	a = strconv.AppendInt(a, st.total, 10)
	a = append(a, `,"TOP":`...)
	if st.hasTop {
		a = strconv.AppendInt(a, st.top, 10)
	} else {
		a = append(a, "null"...)
	}
	a = append(a, '}')
	b.arena = a
	b.add(g.out, r, a[start:len(a):len(a)])
	return nil
}

func (g *aggregate) commit() {
	clear(g.undo)
	g.created = g.created[:0]
}

func (g *aggregate) abort() {
	for st, old := range g.undo {
		*st = old
	}
	for _, k := range g.created {
		delete(g.state, k)
	}
	g.commit()
}
