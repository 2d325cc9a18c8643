package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/linxGnu/grocksdb"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/sqlstreams/sqlstreams/datagen"
)

// The join scenarios (issue 15 point 10), each against a hand-written
// franz-go pipeline with the same exactly-once work:
//
//   - join-st, Nexmark q3-like: SELECT a.seller, a.id, a.category, p.name,
//     p.city, p.state FROM auctions a JOIN persons p ON a.seller = p.id.
//     persons is a TABLE of joinPersons people (their topic preloaded
//     first, with timestamps before every auction's, so that both systems
//     load the table before they join: the output does not depend on
//     fetch order); auctions a stream keyed by seller (co-partitioned
//     with persons; no repartition), n records. sqlstreams materializes
//     persons in the join task's RocksDB store (restored from the source
//     topic: no changelog topic). The hand-written pipeline keeps persons
//     in a map for lookups and writes each transaction's persons to
//     RocksDB in one batch at commit (the same durability work), with no
//     changelog topic either.
//   - join-ss: SELECT b.auction, b.bidder, b.price, a.seller, a.category
//     FROM bids b JOIN auctions a WITHIN 10 SECONDS ON b.auction = a.id,
//     event time from dateTime, n records over both topics (Nexmark's 46
//     bids to 3 auctions). sqlstreams keeps each side's rows in a window
//     store (RocksDB behind the transaction's overlay) with a changelog
//     topic. The hand-written pipeline keeps each side's rows per key in
//     memory, writes every row to its side's changelog topic (key: key,
//     time, offset; value: the input value, as sqlstreams' store) in the
//     transaction, and the transaction's rows to RocksDB in one batch at
//     commit. WITHIN without GRACE keeps rows for 24 hours, so nothing
//     expires in a run and the output is the set of pairs within 10 s
//     whatever the order the systems read in.

// joinPersons is join-st's table size: few enough that each partition's
// persons come in one fetch (≈ 600 KB).
const joinPersons = 10_000

func isJoin(sc string) bool { return sc == "join-st" || sc == "join-ss" }

// joinTopics returns the scenario's input topics: the stream (or left
// side) first.
func joinTopics(sc string) (left, right string) {
	if sc == "join-st" {
		return "auctions_join_st", "persons_join_st"
	}
	return "bids_join_ss", "auctions_join_ss"
}

// preloadJoin creates the scenario's two 4-partition topics and fills
// them with n records (join-st: n auctions after the persons).
func preloadJoin(ctx context.Context, brokers []string, sc string, n int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(200_000), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return err
	}
	defer cl.Close()
	left, right := joinTopics(sc)
	adm := kadm.NewClient(cl)
	for _, t := range []string{left, right} {
		resp, err := adm.CreateTopic(ctx, 4, -1, nil, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return fmt.Errorf("creating %s: %w", t, err)
		}
	}
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
	// Event time from an hour ago, not datagen's default 2024: join-ss's
	// output records carry it, and a broker with Kafka's default
	// retention (7 days; the embedded one keeps records since 8824cea)
	// may delete them from the output topics before -verify reads them.
	now := time.Now().Add(-time.Hour)
	gen, err := datagen.New(datagen.Config{Quickstart: "nexmark", Seed: 1, Base: now})
	if err != nil {
		return err
	}
	var rec datagen.Record
	var p fastjson.Parser
	base := now.UnixMilli()
	produced := 0
	if sc == "join-st" {
		// The first joinPersons people, then the auctions, their
		// sellers folded into those people (keeping the hot sellers).
		for persons := 0; persons < joinPersons; {
			gen.Next(&rec)
			if rec.Kind != datagen.KindPerson {
				continue
			}
			cl.Produce(ctx, &kgo.Record{Topic: right, Key: bytes.Clone(rec.Key), Value: bytes.Clone(rec.Value), Timestamp: time.UnixMilli(base + int64(persons))}, promise)
			persons++
		}
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		for produced < n {
			gen.Next(&rec)
			if rec.Kind != datagen.KindAuction {
				continue
			}
			v, err := p.ParseBytes(rec.Value)
			if err != nil {
				return fmt.Errorf("generated auction %q: %w", rec.Value, err)
			}
			seller := 1000 + (v.GetInt64("seller")-1000)%joinPersons
			cl.Produce(ctx, &kgo.Record{Topic: left, Key: strconv.AppendInt(nil, seller, 10), Value: bytes.Clone(rec.Value),
				Timestamp: time.UnixMilli(base + joinPersons + int64(produced))}, promise)
			produced++
		}
	} else {
		times := [2]map[string][]int64{{}, {}} // for -v: the pairs expected
		for produced < n {
			gen.Next(&rec)
			var topic string
			switch rec.Kind {
			case datagen.KindBid:
				topic = left
			case datagen.KindAuction:
				topic = right
			default:
				continue
			}
			if *verbose {
				side := 0
				if topic == right {
					side = 1
				}
				v, err := p.ParseBytes(rec.Value)
				if err != nil {
					return err
				}
				times[side][string(rec.Key)] = append(times[side][string(rec.Key)], v.GetInt64("dateTime"))
			}
			cl.Produce(ctx, &kgo.Record{Topic: topic, Key: bytes.Clone(rec.Key), Value: bytes.Clone(rec.Value)}, promise)
			produced++
		}
		if *verbose {
			logf("join-ss: %d pairs within 10 s in the input", countPairs(times))
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return first
}

// countPairs returns how many (bid, auction) pairs of a key lie within
// 10 s of each other.
func countPairs(times [2]map[string][]int64) int {
	n := 0
	for k, bs := range times[0] {
		for _, tb := range bs {
			for _, ta := range times[1][k] {
				if ta >= max(0, tb-10_000) && ta <= max(0, tb+10_000) {
					n++
				}
			}
		}
	}
	return n
}

// joinStatements returns the scenario's CREATE statements for sqlstreams.
func joinStatements(sc, out string) []string {
	left, right := joinTopics(sc)
	if sc == "join-st" {
		return []string{
			fmt.Sprintf("CREATE TABLE persons (id VARCHAR PRIMARY KEY, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR, dateTime BIGINT, extra VARCHAR) WITH (KAFKA_TOPIC='%s', VALUE_FORMAT='JSON')", right),
			fmt.Sprintf("CREATE STREAM auctions (seller VARCHAR KEY, id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, dateTime BIGINT, expires BIGINT, category BIGINT, extra VARCHAR) WITH (KAFKA_TOPIC='%s', VALUE_FORMAT='JSON')", left),
			fmt.Sprintf("CREATE STREAM q3 WITH (KAFKA_TOPIC='%s') AS SELECT a.seller AS seller, a.id AS id, a.category AS category, p.name AS name, p.city AS city, p.state AS state FROM auctions a JOIN persons p ON a.seller = p.id EMIT CHANGES", out),
		}
	}
	return []string{
		fmt.Sprintf("CREATE STREAM bids (auction VARCHAR KEY, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime BIGINT, extra VARCHAR) WITH (KAFKA_TOPIC='%s', VALUE_FORMAT='JSON', TIMESTAMP='dateTime')", left),
		fmt.Sprintf("CREATE STREAM auctions (id VARCHAR KEY, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT, dateTime BIGINT, expires BIGINT, seller BIGINT, category BIGINT, extra VARCHAR) WITH (KAFKA_TOPIC='%s', VALUE_FORMAT='JSON', TIMESTAMP='dateTime')", right),
		fmt.Sprintf("CREATE STREAM pairs WITH (KAFKA_TOPIC='%s') AS SELECT b.auction AS auction, b.bidder AS bidder, b.price AS price, a.seller AS seller, a.category AS category FROM bids b JOIN auctions a WITHIN 10 SECONDS ON b.auction = a.id EMIT CHANGES", out),
	}
}

// handRocks is the hand-written pipelines' RocksDB: one database, written
// once per transaction with the WAL on (as sqlstreams' stores).
type handRocks struct {
	db *grocksdb.DB
	wo *grocksdb.WriteOptions
	wb *grocksdb.WriteBatch
}

func openHandRocks(dir string) (*handRocks, error) {
	bbto := grocksdb.NewDefaultBlockBasedTableOptions()
	bbto.SetBlockCache(grocksdb.NewLRUCache(8 << 20))
	bbto.SetFilterPolicy(grocksdb.NewBloomFilterFull(10))
	opts := grocksdb.NewDefaultOptions()
	opts.SetCreateIfMissing(true)
	opts.SetBlockBasedTableFactory(bbto)
	opts.SetCompression(grocksdb.LZ4Compression)
	opts.SetWriteBufferSize(16 << 20)
	db, err := grocksdb.OpenDb(opts, dir)
	if err != nil {
		return nil, err
	}
	wo := grocksdb.NewDefaultWriteOptions()
	wo.SetSync(false)
	return &handRocks{db: db, wo: wo, wb: grocksdb.NewWriteBatch()}, nil
}

func (h *handRocks) commit() error {
	if h.wb.Count() == 0 {
		return nil
	}
	err := h.db.Write(h.wo, h.wb)
	h.wb.Clear()
	return err
}

func (h *handRocks) close() {
	h.wb.Destroy()
	h.wo.Destroy()
	h.db.Close()
}

// person is a persons row as join-st's output needs it.
type person struct{ name, city, state []byte }

// tableJoin is join-st's hand-written pipeline.
type tableJoin struct {
	p       fastjson.Parser
	persons string // the table's topic
	out     string
	rows    map[string]*person
	undo    map[string]*person // the row before this transaction (nil: none)
	db      *handRocks
}

func newTableJoin(persons, out string, db *handRocks) *tableJoin {
	return &tableJoin{persons: persons, out: out, rows: make(map[string]*person, joinPersons), undo: map[string]*person{}, db: db}
}

func (j *tableJoin) process(r *kgo.Record, b *batch) error {
	v, err := j.p.ParseBytes(r.Value)
	if err != nil {
		return nil
	}
	if r.Topic == j.persons {
		k := string(r.Key)
		if _, ok := j.undo[k]; !ok {
			j.undo[k] = j.rows[k]
		}
		j.rows[k] = &person{name: bytes.Clone(v.GetStringBytes("name")), city: bytes.Clone(v.GetStringBytes("city")), state: bytes.Clone(v.GetStringBytes("state"))}
		j.db.wb.Put(r.Key, r.Value)
		return nil
	}
	p := j.rows[string(r.Key)]
	if p == nil {
		return nil
	}
	start := len(b.arena)
	a := append(b.arena, `{"ID":`...)
	a = appendJSONInt(a, v.Get("id"))
	a = append(a, `,"CATEGORY":`...)
	a = appendJSONInt(a, v.Get("category"))
	a = append(a, `,"NAME":`...)
	a = appendJSONString(a, p.name)
	a = append(a, `,"CITY":`...)
	a = appendJSONString(a, p.city)
	a = append(a, `,"STATE":`...)
	a = appendJSONString(a, p.state)
	a = append(a, '}')
	b.arena = a
	b.add(j.out, r, a[start:len(a):len(a)])
	return nil
}

// appendJSONInt appends v's integer, or null.
func appendJSONInt(a []byte, v *fastjson.Value) []byte {
	if v == nil || v.Type() != fastjson.TypeNumber {
		return append(a, "null"...)
	}
	return strconv.AppendInt(a, v.GetInt64(), 10)
}

func (j *tableJoin) commit() {
	if err := j.db.commit(); err != nil {
		panic(err) // the bench fails loudly; a real pipeline would stop
	}
	clear(j.undo)
}

func (j *tableJoin) abort() {
	for k, p := range j.undo {
		if p == nil {
			delete(j.rows, k)
		} else {
			j.rows[k] = p
		}
	}
	clear(j.undo)
	j.db.wb.Clear()
}

// ssRow is a row held by join-ss's hand-written pipeline.
type ssRow struct {
	ts   int64
	a, b int64 // bids: bidder, price; auctions: seller, category
	na   bool  // a is NULL
	nb   bool
}

// streamJoin is join-ss's hand-written pipeline.
type streamJoin struct {
	p      fastjson.Parser
	bids   string // the left side's topic
	out    string
	clogs  [2]string
	rows   [2]map[string][]ssRow
	added  [2][]string // keys appended to in this transaction, for abort
	db     *handRocks
	key    []byte
	within int64
	// outputs in committed transactions, and in the open one
	written, pending int
}

func (j *streamJoin) outputs() int { return j.written }

func newStreamJoin(bids, out, bidsLog, auctionsLog string, db *handRocks) *streamJoin {
	return &streamJoin{bids: bids, out: out, clogs: [2]string{bidsLog, auctionsLog},
		rows: [2]map[string][]ssRow{make(map[string][]ssRow, 1<<16), make(map[string][]ssRow, 1<<16)}, db: db, within: 10_000}
}

func (j *streamJoin) process(r *kgo.Record, b *batch) error {
	v, err := j.p.ParseBytes(r.Value)
	if err != nil {
		return nil
	}
	tv := v.Get("dateTime")
	if tv == nil || tv.Type() != fastjson.TypeNumber || len(r.Key) == 0 {
		return nil
	}
	ts := tv.GetInt64()
	s, fa, fb := 0, "bidder", "price"
	if r.Topic != j.bids {
		s, fa, fb = 1, "seller", "category"
	}
	row := ssRow{ts: ts}
	if x := v.Get(fa); x != nil && x.Type() == fastjson.TypeNumber {
		row.a = x.GetInt64()
	} else {
		row.na = true
	}
	if x := v.Get(fb); x != nil && x.Type() == fastjson.TypeNumber {
		row.b = x.GetInt64()
	} else {
		row.nb = true
	}
	// The row into its side's rows, its changelog and (at commit) RocksDB.
	k := string(r.Key)
	j.rows[s][k] = append(j.rows[s][k], row)
	j.added[s] = append(j.added[s], k)
	j.key = append(j.key[:0], byte(s))
	j.key = append(j.key, r.Key...)
	j.key = binary.BigEndian.AppendUint64(j.key, uint64(ts))
	j.key = binary.BigEndian.AppendUint64(j.key, uint64(r.Offset))
	j.db.wb.Put(j.key, r.Value)
	start := len(b.arena)
	a := append(b.arena, j.key[1:]...)
	key := a[start:len(a):len(a)]
	vs := len(a)
	a = append(a, r.Value...)
	b.arena = a
	b.recs = append(b.recs, kgo.Record{Topic: j.clogs[s], Partition: r.Partition, Key: key, Value: a[vs:len(a):len(a)], Timestamp: time.UnixMilli(ts)})
	// The other side's rows of the key within 10 s.
	from, to := max(0, ts-j.within), max(0, ts+j.within)
	for _, o := range j.rows[1-s][k] {
		if o.ts < from || o.ts > to {
			continue
		}
		bid, auction := row, o
		if s == 1 {
			bid, auction = o, row
		}
		start := len(b.arena)
		a := append(b.arena, `{"BIDDER":`...)
		a = appendOptInt(a, bid.a, bid.na)
		a = append(a, `,"PRICE":`...)
		a = appendOptInt(a, bid.b, bid.nb)
		a = append(a, `,"SELLER":`...)
		a = appendOptInt(a, auction.a, auction.na)
		a = append(a, `,"CATEGORY":`...)
		a = appendOptInt(a, auction.b, auction.nb)
		a = append(a, '}')
		b.arena = a
		b.recs = append(b.recs, kgo.Record{Topic: j.out, Partition: r.Partition, Key: r.Key, Value: a[start:len(a):len(a)], Timestamp: time.UnixMilli(max(ts, o.ts))})
		j.pending++
	}
	return nil
}

func appendOptInt(a []byte, v int64, null bool) []byte {
	if null {
		return append(a, "null"...)
	}
	return strconv.AppendInt(a, v, 10)
}

func (j *streamJoin) commit() {
	if err := j.db.commit(); err != nil {
		panic(err)
	}
	j.added[0], j.added[1] = j.added[0][:0], j.added[1][:0]
	j.written += j.pending
	j.pending = 0
}

func (j *streamJoin) abort() {
	logf("join-ss handwritten: transaction aborted")
	j.pending = 0
	for s := range j.added {
		// Appended in order: take them off from the end.
		for i := len(j.added[s]) - 1; i >= 0; i-- {
			k := j.added[s][i]
			rs := j.rows[s][k]
			if len(rs) <= 1 {
				delete(j.rows[s], k)
			} else {
				j.rows[s][k] = rs[:len(rs)-1]
			}
		}
	}
	j.db.wb.Clear()
	j.added[0], j.added[1] = j.added[0][:0], j.added[1][:0]
}
