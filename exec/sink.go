package exec

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Processor = (*sinkOp)(nil)

// sinkOp encodes a row's key columns into the record key and the other
// columns into the value, and produces the record in the thread's open
// transaction; a change without a new row produces a tombstone for the
// old row's key. The output record carries the change's timestamp.
type sinkOp struct {
	name       string
	topic      string
	key, value types.Encoder
	keys       []int
	tsCol      int // output column holding the record timestamp, or -1
	// tsParse reads a STRING tsCol; keepInvalid writes rows whose
	// timestamp is negative or unreadable as queries recorded before did
	// (physical.Sink.KeepInvalidTimestamps).
	tsParse     func([]byte) (int64, error)
	keepInvalid bool
	// window is the windowing of a windowed result: keys end in the
	// change's window.
	window types.WindowType
	out    *outbox
}

// newSink builds the sink; ksqlDelimited quotes DELIMITED values as
// ksqlDB does (Config.KsqlDelimited). Keys keep their encoding: they
// address stores and partitions.
func newSink(name string, s *physical.Sink, out *outbox, ksqlDelimited bool) (*sinkOp, error) {
	keys := s.Out.KeyIndexes()
	key, err := types.NewEncoderOpts(s.KeyFormat, s.Out, keys, s.KeyOptions)
	if err != nil {
		return nil, fmt.Errorf("%s key: %w", name, err)
	}
	vo := s.ValueOptions
	vo.KsqlQuoting = ksqlDelimited
	value, err := types.NewEncoderOpts(s.ValueFormat, s.Out, s.Out.ValueIndexes(), vo)
	if err != nil {
		return nil, fmt.Errorf("%s value: %w", name, err)
	}
	op := &sinkOp{name: name, topic: s.Topic, key: key, value: value, keys: keys, tsCol: -1, window: s.WindowType, out: out}
	if s.TimestampColumn != "" {
		if op.tsCol = s.Out.Index(s.TimestampColumn); op.tsCol < 0 {
			return nil, fmt.Errorf("%s: timestamp column %s is not in the schema", name, s.TimestampColumn)
		}
		op.keepInvalid = s.KeepInvalidTimestamps
		if s.Out.Columns[op.tsCol].Type.Kind == types.String && !op.keepInvalid {
			format := s.TimestampFormat
			if format == "" {
				format = "yyyy-MM-dd'T'HH:mm:ss[.SSS][XXX]" // ISO-8601
			}
			if op.tsParse, err = expr.TimestampParser(format); err != nil {
				return nil, fmt.Errorf("%s: TIMESTAMP_FORMAT: %w", name, err)
			}
		}
	}
	return op, nil
}

func (s *sinkOp) Process(c *Change) error {
	if c.New == nil {
		if c.Old == nil {
			return nil
		}
		return s.tombstone(c)
	}
	row := c.New
	ts := c.Timestamp
	if s.tsCol >= 0 {
		var err error
		if ts, err = s.timestamp(row, ts); err != nil {
			return err
		}
	}
	rec := s.out.record()
	var err error
	start := len(s.out.arena)
	// An all-NULL key is a Kafka null key (see nullKey).
	if !s.nullKey(c, row) {
		if s.out.arena, err = s.key.Encode(s.out.arena, row); err != nil {
			return err
		}
		if err := s.appendWindow(c); err != nil {
			return err
		}
	}
	keyEnd := len(s.out.arena)
	if !c.NullValue {
		if s.out.arena, err = s.value.Encode(s.out.arena, row); err != nil {
			return err
		}
	}
	// Slices of the arena stay valid when a later append grows it: the
	// old backing array lives on until the records are reset.
	a := s.out.arena
	if keyEnd > start {
		rec.Key = a[start:keyEnd:keyEnd]
	} else if !s.nullKey(c, row) && len(s.keys) > 0 {
		rec.Key = emptyKey // an empty STRING key is not a null key
	}
	if !c.NullValue {
		rec.Value = a[keyEnd:len(a):len(a)]
	}
	rec.Topic = s.topic
	rec.Headers = s.out.userHeaders(nil, c.Record)
	rec.Timestamp = time.UnixMilli(ts)
	s.out.produce(rec)
	return nil
}

// ignoresOldWithNew implements oldIgnorer: a change with a new row
// writes that row; the old one only gives a tombstone its key.
func (s *sinkOp) ignoresOldWithNew() bool { return true }

// timestamp is the output record timestamp of row, from the sink's
// TIMESTAMP column (ts, the change's, when it is NULL). A row whose
// timestamp cannot be read or is negative is bad: skipped and logged, as
// ksqlDB skips it.
func (s *sinkOp) timestamp(row types.Row, ts int64) (int64, error) {
	v := &row[s.tsCol]
	if v.Null {
		return ts, nil
	}
	if s.keepInvalid {
		return v.I, nil
	}
	t := v.I
	if s.tsParse != nil {
		var err error
		if t, err = s.tsParse(v.B); err != nil {
			return 0, &evalError{node: s.name, err: fmt.Errorf("%w: timestamp column: %v", types.ErrBadRecord, err)}
		}
	}
	if t < 0 {
		return 0, &evalError{node: s.name, err: fmt.Errorf("%w: timestamp column holds a negative timestamp (%d)", types.ErrBadRecord, t)}
	}
	return t, nil
}

// appendWindow appends the change's window to the key being encoded, for
// a windowed result.
func (s *sinkOp) appendWindow(c *Change) error {
	if s.window == types.NoWindow {
		return nil
	}
	if !c.Windowed {
		return fmt.Errorf("%s: a windowed table's row has no window", s.name)
	}
	s.out.arena = s.window.AppendWindowKey(s.out.arena, c.WindowStart, c.WindowEnd)
	return nil
}

// nullKey reports whether row's key is a Kafka null key: its key
// columns are all NULL, unless there are several and PARTITION BY
// computed them (ksqlDB writes those).
func (s *sinkOp) nullKey(c *Change, row types.Row) bool {
	return (len(s.keys) <= 1 || !c.NewKey) && allNull(row, s.keys)
}

// emptyKey is a key of zero bytes, which Kafka tells from a null key.
var emptyKey = []byte{}

// tombstone writes a deletion of the old row's key.
func (s *sinkOp) tombstone(c *Change) error {
	row := c.Old
	if s.nullKey(c, row) {
		return nil
	}
	rec := s.out.record()
	start := len(s.out.arena)
	var err error
	if s.out.arena, err = s.key.Encode(s.out.arena, row); err != nil {
		return err
	}
	if err := s.appendWindow(c); err != nil {
		return err
	}
	a := s.out.arena
	rec.Key = a[start:len(a):len(a)]
	rec.Headers = s.out.userHeaders(nil, c.Record)
	rec.Topic = s.topic
	rec.Timestamp = time.UnixMilli(c.Timestamp)
	s.out.produce(rec)
	return nil
}

// outbox is a stream thread's reusable output: an arena for encoded bytes
// and a pool of records, both reset after each transaction ends (when
// every produced record's promise has fired). Operators queue records with
// produce; the thread hands them to the client with flush once per fetch,
// so the producer gets them in runs, as a batch, rather than one by one
// while it races to send each.
type outbox struct {
	arena   []byte
	recs    []*kgo.Record
	used    int
	pending []*kgo.Record
	send    func(*kgo.Record)
	// hand, when set, gives flushed records to the client from a
	// goroutine of its own (a stream thread's outbox); send is then
	// called there.
	hand *handOff
	// headers, set from Config.PropagateHeaders, carries the input
	// record's own headers onto output and repartition records, as
	// Kafka Streams forwards them (userHeaders).
	headers bool
}

// userHeaders appends to dst the headers of the input record r that are
// not this engine's internal markers (physical.UndoHeader,
// physical.OldValueHeader), their keys and values copied into the arena:
// r is recycled before the output is produced. Nothing is appended (and
// nothing allocated) unless o.headers is set and r has such headers.
func (o *outbox) userHeaders(dst []kgo.RecordHeader, r *kgo.Record) []kgo.RecordHeader {
	if !o.headers || r == nil {
		return dst
	}
	for _, h := range r.Headers {
		if h.Key == physical.UndoHeader || h.Key == physical.OldValueHeader {
			continue
		}
		start := len(o.arena)
		o.arena = append(o.arena, h.Value...)
		var v []byte
		if h.Value != nil {
			v = o.arena[start:len(o.arena):len(o.arena)]
		}
		dst = append(dst, kgo.RecordHeader{Key: h.Key, Value: v})
	}
	return dst
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

// produce queues r for the next flush.
func (o *outbox) produce(r *kgo.Record) { o.pending = append(o.pending, r) }

// flush sends the queued records (with hand, has them sent: settle waits
// until they are).
func (o *outbox) flush() {
	if o.hand != nil {
		if len(o.pending) > 0 {
			o.pending = o.hand.give(o.pending)
		}
		return
	}
	for i, r := range o.pending {
		o.send(r)
		o.pending[i] = nil
	}
	o.pending = o.pending[:0]
}

// settle waits until every record flush queued is with the client.
func (o *outbox) settle() {
	if o.hand != nil {
		o.hand.settle()
	}
}

// reset drops queued records and makes the arena and records reusable.
// Call only when no produced record is still in flight.
func (o *outbox) reset() {
	clear(o.pending)
	o.pending = o.pending[:0]
	o.used = 0
	if cap(o.arena) > 64<<20 {
		o.arena = nil // do not pin a burst's memory forever
	}
	o.arena = o.arena[:0]
}

func allNull(row types.Row, idx []int) bool {
	for _, i := range idx {
		if !row[i].Null {
			return false
		}
	}
	return true
}
