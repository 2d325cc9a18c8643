package main

import (
	"encoding/binary"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/valyala/fastjson"
)

// window: SELECT auction, COUNT(*) AS n (hopping) or MAX(price) AS top
// (tumbling) FROM bids WINDOW … (GRACE PERIOD 0) GROUP BY auction,
// event time from dateTime. State per (auction, window start) in a map;
// every update emits the window's row under Kafka Streams' windowed key
// (key bytes, then the start as 8 big-endian bytes) with the window's
// latest event time as its timestamp; the changelog gets each changed
// window once per transaction (flush); windows are dropped once stream
// time passes start + size (their retention), rows later than their
// windows' end are dropped as late.
type window struct {
	p             fastjson.Parser
	size, advance int64
	max           bool // MAX(price) instead of COUNT(*)
	out, clog     string

	state      map[string]*winState
	undo       map[*winState]winState
	created    []string
	dirty      []*winState
	streamTime map[int32]int64 // per input partition, as the task's
	prevTime   map[int32]int64 // at the start of the transaction
	// expiry holds each partition's windows in order of creation (which
	// is the order of their starts: event time rises in a partition).
	expiry map[int32][]*winState
	key    []byte
}

type winState struct {
	key     string // windowed key
	part    int32
	n, top  int64
	ts      int64
	hasTop  bool
	dirty   bool
	start   int64
	dropped bool // created in an aborted transaction
}

func newWindow(out, clog string, size, advance int64, isMax bool) *window {
	return &window{size: size, advance: advance, max: isMax, out: out, clog: clog,
		state: make(map[string]*winState, 1<<16), undo: map[*winState]winState{},
		streamTime: map[int32]int64{}, prevTime: map[int32]int64{}, expiry: map[int32][]*winState{}}
}

func (w *window) process(r *kgo.Record, b *batch) error {
	v, err := w.p.ParseBytes(r.Value)
	if err != nil {
		return nil
	}
	tv := v.Get("dateTime")
	if tv == nil || tv.Type() != fastjson.TypeNumber {
		return nil
	}
	ts := tv.GetInt64()
	st, seen := w.streamTime[r.Partition]
	if _, ok := w.prevTime[r.Partition]; !ok {
		if seen {
			w.prevTime[r.Partition] = st
		} else {
			w.prevTime[r.Partition] = -1 << 63
		}
	}
	if !seen || ts > st {
		st = ts
		w.streamTime[r.Partition] = st
	}
	var price int64
	hasPrice := false
	if pv := v.Get("price"); pv != nil && pv.Type() == fastjson.TypeNumber {
		price, hasPrice = pv.GetInt64(), true
	}
	first := max(0, ts-w.size+w.advance) / w.advance * w.advance
	for start := first; start <= ts; start += w.advance {
		if start+w.size <= st {
			continue // closed (grace 0)
		}
		w.key = append(append(w.key[:0], r.Key...), 0, 0, 0, 0, 0, 0, 0, 0)
		binary.BigEndian.PutUint64(w.key[len(r.Key):], uint64(start))
		s := w.state[string(w.key)]
		if s == nil {
			s = &winState{key: string(w.key), part: r.Partition, start: start}
			w.state[s.key] = s
			w.created = append(w.created, s.key)
			w.expiry[r.Partition] = append(w.expiry[r.Partition], s)
		} else if _, ok := w.undo[s]; !ok {
			w.undo[s] = *s
		}
		s.n++
		s.ts = max(s.ts, ts)
		if hasPrice && (!s.hasTop || price > s.top) {
			s.top, s.hasTop = price, true
		}
		if !s.dirty {
			s.dirty = true
			w.dirty = append(w.dirty, s)
		}
		start0 := len(b.arena)
		a := append(b.arena, s.key...)
		key := a[start0:len(a):len(a)]
		vs := len(a)
		if w.max {
			a = append(a, `{"TOP":`...)
			if s.hasTop {
				a = strconv.AppendInt(a, s.top, 10)
			} else {
				a = append(a, "null"...)
			}
		} else {
			a = append(a, `{"N":`...)
			a = strconv.AppendInt(a, s.n, 10)
		}
		a = append(a, '}')
		b.arena = a
		b.recs = append(b.recs, kgo.Record{Topic: w.out, Partition: r.Partition, Key: key, Value: a[vs:len(a):len(a)], Timestamp: time.UnixMilli(s.ts)})
	}
	return nil
}

// flush writes each window changed in the transaction to the changelog
// once, and drops expired windows.
func (w *window) flush(b *batch) {
	for _, s := range w.dirty {
		s.dirty = false
		start := len(b.arena)
		a := append(b.arena, s.key...)
		key := a[start:len(a):len(a)]
		vs := len(a)
		a = binary.BigEndian.AppendUint64(a, uint64(s.ts))
		a = binary.BigEndian.AppendUint64(a, uint64(s.n))
		a = binary.BigEndian.AppendUint64(a, uint64(s.top))
		b.arena = a
		b.recs = append(b.recs, kgo.Record{Topic: w.clog, Partition: s.part, Key: key, Value: a[vs:len(a):len(a)], Timestamp: time.UnixMilli(s.ts)})
	}
	w.dirty = w.dirty[:0]
}

func (w *window) commit() {
	// Retention: a window is gone once stream time passes its end.
	for p, q := range w.expiry {
		st := w.streamTime[p]
		i := 0
		for ; i < len(q) && (q[i].dropped || q[i].start+w.size <= st); i++ {
			if !q[i].dropped {
				delete(w.state, q[i].key)
			}
			q[i] = nil
		}
		w.expiry[p] = q[i:]
	}
	w.forget()
}

func (w *window) forget() {
	clear(w.undo)
	clear(w.prevTime)
	w.created = w.created[:0]
}

func (w *window) abort() {
	for s, old := range w.undo {
		*s = old
	}
	for _, k := range w.created {
		w.state[k].dropped = true
		delete(w.state, k)
	}
	for p, t := range w.prevTime {
		if t == -1<<63 {
			delete(w.streamTime, p)
		} else {
			w.streamTime[p] = t
		}
	}
	for _, s := range w.dirty {
		s.dirty = false
	}
	w.dirty = w.dirty[:0]
	w.forget()
}
