package exec

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Operator = (*sinkOp)(nil)

// sinkOp encodes a row's key columns into the record key and the other
// columns into the value, and produces the record in the thread's open
// transaction. The output record keeps the input record's timestamp.
type sinkOp struct {
	topic      string
	key, value types.Encoder
	keyless    bool
	out        *outbox
	ts         *time.Time // the current input record's timestamp
}

func newSink(s *physical.Sink, out *outbox, ts *time.Time) (*sinkOp, error) {
	keys := s.Schema.KeyIndexes()
	key, err := types.NewEncoder(s.KeyFormat, s.Schema, keys)
	if err != nil {
		return nil, fmt.Errorf("%s key: %w", s.Name, err)
	}
	value, err := types.NewEncoder(s.ValueFormat, s.Schema, s.Schema.ValueIndexes())
	if err != nil {
		return nil, fmt.Errorf("%s value: %w", s.Name, err)
	}
	return &sinkOp{topic: s.Topic, key: key, value: value, keyless: len(keys) == 0, out: out, ts: ts}, nil
}

func (s *sinkOp) Process(row types.Row) error {
	rec := s.out.record()
	var err error
	start := len(s.out.arena)
	if !s.keyless {
		if s.out.arena, err = s.key.Encode(s.out.arena, row); err != nil {
			return err
		}
	}
	keyEnd := len(s.out.arena)
	if s.out.arena, err = s.value.Encode(s.out.arena, row); err != nil {
		return err
	}
	// Slices of the arena stay valid when a later append grows it: the
	// old backing array lives on until the records are reset.
	a := s.out.arena
	if keyEnd > start {
		rec.Key = a[start:keyEnd:keyEnd]
	}
	rec.Value = a[keyEnd:len(a):len(a)]
	rec.Topic = s.topic
	rec.Timestamp = *s.ts
	s.out.produce(rec)
	return nil
}

// outbox is a stream thread's reusable output: an arena for encoded bytes
// and a pool of records, both reset after each transaction ends (when
// every produced record's promise has fired).
type outbox struct {
	arena   []byte
	recs    []*kgo.Record
	used    int
	produce func(*kgo.Record)
}

func (o *outbox) record() *kgo.Record {
	if o.used == len(o.recs) {
		o.recs = append(o.recs, new(kgo.Record))
	}
	r := o.recs[o.used]
	o.used++
	*r = kgo.Record{}
	return r
}

// reset makes the arena and records reusable. Call only when no produced
// record is still in flight.
func (o *outbox) reset() {
	o.used = 0
	if cap(o.arena) > 64<<20 {
		o.arena = nil // do not pin a burst's memory forever
	}
	o.arena = o.arena[:0]
}
