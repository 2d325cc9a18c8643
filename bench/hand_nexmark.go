package main

import (
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"
)

// nexQ1 is Nexmark q1 written by hand (issue 34 point 6): SELECT auction,
// bidder, 0.908 * price AS price, dateTime, extra FROM bid, into the
// JSON sqlstreams writes for it (upper-case names, the price a decimal
// with three places, no key), with the pipeline of hand.go (one
// transactional session, fastjson, an arena per transaction).
type nexQ1 struct {
	out string
	p   fastjson.Parser
}

func (q *nexQ1) process(r *kgo.Record, b *batch) error {
	v, err := q.p.ParseBytes(r.Value)
	if err != nil {
		return nil // a bad record is skipped, as sqlstreams does
	}
	start := len(b.arena)
	a := b.arena
	a = append(a, `{"AUCTION":`...)
	a = strconv.AppendInt(a, v.GetInt64("auction"), 10)
	a = append(a, `,"BIDDER":`...)
	a = strconv.AppendInt(a, v.GetInt64("bidder"), 10)
	a = append(a, `,"PRICE":`...)
	// 0.908 × price, exactly: price × 908 thousandths.
	m := v.GetInt64("price") * 908
	if m < 0 {
		a = append(a, '-')
		m = -m
	}
	a = strconv.AppendInt(a, m/1000, 10)
	a = append(a, '.')
	frac := m % 1000
	a = append(a, byte('0'+frac/100), byte('0'+frac/10%10), byte('0'+frac%10))
	a = append(a, `,"DATETIME":`...)
	a = strconv.AppendInt(a, v.GetInt64("dateTime"), 10)
	a = append(a, `,"EXTRA":`...)
	a = appendJSONString(a, v.GetStringBytes("extra"))
	a = append(a, '}')
	b.arena = a
	b.recs = append(b.recs, kgo.Record{Topic: q.out, Partition: r.Partition, Value: a[start:len(a):len(a)], Timestamp: r.Timestamp})
	return nil
}

func (q *nexQ1) commit() {}
func (q *nexQ1) abort()  {}
