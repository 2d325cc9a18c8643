package main

import (
	"encoding/binary"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"

	"github.com/sqlstreams/sqlstreams/types"
)

// The hand-written pipelines of issue 33's bench scenarios (topn and
// distinct), with the pipeline of hand.go: state in maps, its changes
// written to a changelog in the same transaction as the output.

// topNRow is one of a partition's first rows: a bid's bidder and price.
type topNRow struct {
	bidder, price int64
	hasBidder     bool
}

// topNState is an auction's three highest bids, highest first.
type topNState struct {
	key   string // the auction, as the input's key
	part  int32
	rows  [3]topNRow
	n     int
	dirty bool
}

// topN: SELECT * FROM (SELECT auction, bidder, price, ROW_NUMBER() OVER
// (PARTITION BY auction ORDER BY price DESC) AS rn FROM bids) WHERE rn
// <= 3. A bid that ranks enters at its rank (before bids of the same
// price: the later row wins a tie when the first ORDER BY key is DESC,
// as sqlstreams orders them), the rows below it move down, and each rank
// whose row changed is written under the key {"AUCTION":…,"RN":…} to
// the partition Kafka's default partitioner gives that key; a bid that
// does not rank writes nothing. The changelog gets each changed
// auction's rows once per transaction (flush).
type topN struct {
	p         fastjson.Parser
	out, clog string
	state     map[string]*topNState
	undo      map[*topNState]topNState
	created   []string
	dirty     []*topNState
	parts     int32
}

func newTopN(out, clog string, parts int32) *topN {
	return &topN{out: out, clog: clog, parts: parts, state: make(map[string]*topNState, 1<<16), undo: map[*topNState]topNState{}}
}

func (t *topN) process(r *kgo.Record, b *batch) error {
	v, err := t.p.ParseBytes(r.Value)
	if err != nil || len(r.Key) == 0 {
		return nil // a bad record, or a NULL partition: skipped
	}
	pv := v.Get("price")
	if pv == nil || pv.Type() != fastjson.TypeNumber {
		return nil // the generator's bids always have a price
	}
	row := topNRow{price: pv.GetInt64()}
	if bv := v.Get("bidder"); bv != nil && bv.Type() == fastjson.TypeNumber {
		row.bidder, row.hasBidder = bv.GetInt64(), true
	}
	st := t.state[string(r.Key)]
	at := 0
	if st != nil {
		for at < st.n && st.rows[at].price > row.price {
			at++
		}
		if at >= len(st.rows) {
			return nil // not among the first three: nothing changes
		}
		if _, ok := t.undo[st]; !ok {
			t.undo[st] = *st
		}
	} else {
		st = &topNState{key: string(r.Key), part: r.Partition}
		t.state[st.key] = st
		t.created = append(t.created, st.key)
	}
	before := st.rows
	nb := st.n
	copy(st.rows[at+1:], st.rows[at:])
	st.rows[at] = row
	st.n = min(st.n+1, len(st.rows))
	if !st.dirty {
		st.dirty = true
		t.dirty = append(t.dirty, st)
	}
	for i := at; i < st.n; i++ {
		if i < nb && before[i] == st.rows[i] {
			continue
		}
		a := b.arena
		ks := len(a)
		a = append(a, `{"AUCTION":`...)
		a = appendJSONString(a, r.Key)
		a = append(a, `,"RN":`...)
		a = strconv.AppendInt(a, int64(i+1), 10)
		a = append(a, '}')
		key := a[ks:len(a):len(a)]
		vs := len(a)
		a = append(a, `{"BIDDER":`...)
		if st.rows[i].hasBidder {
			a = strconv.AppendInt(a, st.rows[i].bidder, 10)
		} else {
			a = append(a, "null"...)
		}
		a = append(a, `,"PRICE":`...)
		a = strconv.AppendInt(a, st.rows[i].price, 10)
		a = append(a, '}')
		b.arena = a
		b.recs = append(b.recs, kgo.Record{Topic: t.out, Partition: types.Murmur2Partition(key, t.parts),
			Key: key, Value: a[vs:len(a):len(a)], Timestamp: r.Timestamp})
	}
	return nil
}

// flush writes each auction changed in the transaction to the changelog
// once: its rows, 17 bytes each.
func (t *topN) flush(b *batch) {
	for _, st := range t.dirty {
		st.dirty = false
		a := b.arena
		ks := len(a)
		a = append(a, st.key...)
		key := a[ks:len(a):len(a)]
		vs := len(a)
		for _, row := range st.rows[:st.n] {
			a = binary.BigEndian.AppendUint64(a, uint64(row.price))
			a = binary.BigEndian.AppendUint64(a, uint64(row.bidder))
			if row.hasBidder {
				a = append(a, 1)
			} else {
				a = append(a, 0)
			}
		}
		b.arena = a
		b.recs = append(b.recs, kgo.Record{Topic: t.clog, Partition: st.part, Key: key, Value: a[vs:len(a):len(a)]})
	}
	t.dirty = t.dirty[:0]
}

func (t *topN) commit() {
	clear(t.undo)
	t.created = t.created[:0]
}

func (t *topN) abort() {
	for st, old := range t.undo {
		*st = old
	}
	for _, k := range t.created {
		delete(t.state, k)
	}
	for _, st := range t.dirty {
		st.dirty = false
	}
	t.dirty = t.dirty[:0]
	t.commit()
}

// distinctState is an auction's set of bidders.
type distinctState struct {
	key     string
	part    int32
	bidders map[int64]struct{}
	dirty   bool
}

// distinctAdded is a bidder added to an auction's set in the open
// transaction (undone by abort).
type distinctAdded struct {
	st     *distinctState
	bidder int64
}

// distinct: SELECT auction, COUNT(DISTINCT bidder) AS bidders FROM bids
// GROUP BY auction. Each auction's set of bidders in a map; a bidder new
// to its auction is written to the values' changelog (key: the auction
// and the bidder), each auction's count to the counts' changelog once
// per transaction (flush), and every bid writes its auction's row.
type distinct struct {
	p           fastjson.Parser
	out         string
	clog, vclog string // counts, values
	state       map[string]*distinctState
	added       []distinctAdded
	created     []string
	dirty       []*distinctState
}

func newDistinct(out, clog, vclog string) *distinct {
	return &distinct{out: out, clog: clog, vclog: vclog, state: make(map[string]*distinctState, 1<<16)}
}

func (d *distinct) process(r *kgo.Record, b *batch) error {
	v, err := d.p.ParseBytes(r.Value)
	if err != nil || len(r.Key) == 0 {
		return nil
	}
	st := d.state[string(r.Key)]
	if st == nil {
		st = &distinctState{key: string(r.Key), part: r.Partition, bidders: map[int64]struct{}{}}
		d.state[st.key] = st
		d.created = append(d.created, st.key)
	}
	if bv := v.Get("bidder"); bv != nil && bv.Type() == fastjson.TypeNumber {
		bidder := bv.GetInt64()
		if _, ok := st.bidders[bidder]; !ok {
			st.bidders[bidder] = struct{}{}
			d.added = append(d.added, distinctAdded{st, bidder})
			a := b.arena
			ks := len(a)
			a = append(a, r.Key...)
			a = binary.BigEndian.AppendUint64(a, uint64(bidder))
			key := a[ks:len(a):len(a)]
			a = append(a, 1)
			b.arena = a
			b.recs = append(b.recs, kgo.Record{Topic: d.vclog, Partition: r.Partition, Key: key, Value: a[len(a)-1 : len(a) : len(a)]})
			if !st.dirty {
				st.dirty = true
				d.dirty = append(d.dirty, st)
			}
		}
	}
	vs := len(b.arena)
	a := append(b.arena, `{"BIDDERS":`...)
	a = strconv.AppendInt(a, int64(len(st.bidders)), 10)
	a = append(a, '}')
	b.arena = a
	b.add(d.out, r, a[vs:len(a):len(a)])
	return nil
}

// flush writes each auction whose count changed in the transaction to
// the counts' changelog once.
func (d *distinct) flush(b *batch) {
	for _, st := range d.dirty {
		st.dirty = false
		a := b.arena
		ks := len(a)
		a = append(a, st.key...)
		key := a[ks:len(a):len(a)]
		vs := len(a)
		a = binary.BigEndian.AppendUint64(a, uint64(len(st.bidders)))
		b.arena = a
		b.recs = append(b.recs, kgo.Record{Topic: d.clog, Partition: st.part, Key: key, Value: a[vs:len(a):len(a)]})
	}
	d.dirty = d.dirty[:0]
}

func (d *distinct) commit() {
	d.added = d.added[:0]
	d.created = d.created[:0]
}

func (d *distinct) abort() {
	for _, x := range d.added {
		delete(x.st.bidders, x.bidder)
	}
	for _, k := range d.created {
		delete(d.state, k)
	}
	for _, st := range d.dirty {
		st.dirty = false
	}
	d.dirty = d.dirty[:0]
	d.commit()
}
