package exec

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Processor = (*sourceOp)(nil)

// recordDecoder decodes a record's key and value into a row and fills
// the pseudo columns, finding the record's event time.
type recordDecoder struct {
	name       string
	key, value types.Decoder
	row        types.Row
	rowtime    int // index of ROWTIME; ROWPARTITION and ROWOFFSET follow
	// tsCol is the column holding the event time (WITH TIMESTAMP), or -1
	// for the record timestamp; tsParse reads it when it is a STRING.
	tsCol   int
	tsName  string
	tsParse func([]byte) (int64, error)
	// keepNegative passes on a negative event time from tsCol;
	// throwBad makes an unreadable one fatal (physical.Source).
	keepNegative, throwBad bool
	// window is a windowed topic's windowing: keys end in the window,
	// which fills the columns from winCol on (WINDOWSTART, WINDOWEND)
	// and winStart, winEnd.
	window           types.WindowType
	windowSize       int64
	winCol           int
	winStart, winEnd int64
	valueCols        []int
	// headerCols are the HEADERS and HEADER('k') columns, filled from
	// the record's headers (fillHeaders).
	headerCols []int
	headerKeys []string
	// topicKey, for a physical.Source.KeyByValue, decodes the keys read
	// from the topic, which byValue replaces by the key columns encoded
	// with valueKey (into valueBuf); key then decodes those.
	topicKey types.Decoder
	valueKey types.Encoder
	valueBuf []byte
}

func newRecordDecoder(name string, s *physical.Source) (*recordDecoder, error) {
	schema := s.Out
	key, err := types.NewDecoderOpts(s.KeyFormat, schema, schema.KeyIndexes(), s.KeyOptions)
	if err != nil {
		return nil, fmt.Errorf("%s key: %w", name, err)
	}
	var topicKey types.Decoder
	var valueKey types.Encoder
	if s.KeyByValue {
		topicKey = key
		if key, err = types.NewDecoderOpts(physical.ByValueKey, schema, schema.KeyIndexes(), types.FormatOptions{}); err != nil {
			return nil, fmt.Errorf("%s key: %w", name, err)
		}
		if valueKey, err = types.NewEncoderOpts(physical.ByValueKey, schema, schema.KeyIndexes(), types.FormatOptions{}); err != nil {
			return nil, fmt.Errorf("%s key: %w", name, err)
		}
	}
	value, err := types.NewDecoderRead(s.ValueFormat, schema, schema.ValueIndexes(), s.Read, s.ValueOptions)
	if err != nil {
		return nil, fmt.Errorf("%s value: %w", name, err)
	}
	rt := schema.Index(types.RowTime)
	if rt < 0 || schema.Index(types.RowOffset) != rt+2 {
		return nil, fmt.Errorf("%s: schema lacks the pseudo columns", name)
	}
	d := &recordDecoder{name: name, key: key, value: value, row: make(types.Row, schema.Len()), rowtime: rt, tsCol: -1,
		window: s.WindowType, windowSize: s.WindowSizeMs, winCol: schema.WindowIndex(), valueCols: schema.ValueIndexes(),
		topicKey: topicKey, valueKey: valueKey}
	for _, c := range schema.HeaderIndexes() {
		d.headerCols = append(d.headerCols, c)
		d.headerKeys = append(d.headerKeys, schema.Columns[c].HeaderKey)
	}
	if d.window != types.NoWindow && d.winCol < 0 {
		return nil, fmt.Errorf("%s: a windowed source's schema lacks WINDOWSTART and WINDOWEND", name)
	}
	if s.TimestampColumn != "" {
		d.tsCol = schema.Index(s.TimestampColumn)
		if d.tsCol < 0 {
			return nil, fmt.Errorf("%s: timestamp column %s is not in the schema", name, s.TimestampColumn)
		}
		d.tsName = s.TimestampColumn
		d.keepNegative, d.throwBad = s.KeepInvalidTimestamps, s.ThrowOnInvalidTimestamp
		if schema.Columns[d.tsCol].Type.Kind == types.String {
			format := s.TimestampFormat
			if format == "" {
				format = "yyyy-MM-dd'T'HH:mm:ss[.SSS][XXX]" // ISO-8601
			}
			if d.tsParse, err = expr.TimestampParser(format); err != nil {
				return nil, fmt.Errorf("%s: TIMESTAMP_FORMAT: %w", name, err)
			}
		}
	}
	return d, nil
}

// byValue replaces the key of r, a record read from a KeyByValue
// source's topic, by its key columns encoded as the stores keep them
// (physical.ByValueKey); r's key is valid until the next byValue. A key
// that does not decode makes r bad. Other sources' records and null keys
// are left as they are.
func (d *recordDecoder) byValue(r *kgo.Record) error {
	if d.topicKey == nil || r.Key == nil {
		return nil
	}
	if err := d.topicKey.Decode(r.Key, d.row); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	var err error
	if d.valueBuf, err = d.valueKey.Encode(d.valueBuf[:0], d.row); err != nil {
		return fmt.Errorf("%w: key: %v", types.ErrBadRecord, err)
	}
	r.Key = d.valueBuf
	return nil
}

// decode fills d.row from r and returns the record's event time.
func (d *recordDecoder) decode(r *kgo.Record) (int64, error) {
	row := d.row
	key, err := d.splitWindow(r.Key)
	if err != nil {
		return 0, err
	}
	if err := d.key.Decode(key, row); err != nil {
		return 0, fmt.Errorf("key: %w", err)
	}
	if err := d.value.Decode(r.Value, row); err != nil {
		return 0, fmt.Errorf("value: %w", err)
	}
	d.fillHeaders(r)
	rowtime := r.Timestamp.UnixMilli()
	if d.tsCol >= 0 {
		v := row[d.tsCol]
		switch {
		case v.Null:
			return 0, d.badTimestamp(fmt.Errorf("timestamp column %s is NULL", d.tsName))
		case d.tsParse != nil:
			t, err := d.tsParse(v.B)
			if err != nil {
				return 0, d.badTimestamp(fmt.Errorf("timestamp column %s: %v", d.tsName, err))
			}
			rowtime = t
		default:
			rowtime = v.I
		}
		if rowtime < 0 && !d.keepNegative {
			return 0, d.negative(rowtime)
		}
	}
	// Only the numbers: nothing else writes these datums, and a whole
	// Datum would cost pointer writes.
	row[d.rowtime].Null, row[d.rowtime].I = false, rowtime
	row[d.rowtime+1].Null, row[d.rowtime+1].I = false, int64(r.Partition)
	row[d.rowtime+2].Null, row[d.rowtime+2].I = false, r.Offset
	return rowtime, nil
}

// decodeKey fills d.row from a record whose value is null: its key
// columns, NULL value columns and the pseudo columns. A record whose
// event time is a value column has none: it is bad.
func (d *recordDecoder) decodeKey(r *kgo.Record) (int64, error) {
	row := d.row
	key, err := d.splitWindow(r.Key)
	if err != nil {
		return 0, err
	}
	if err := d.key.Decode(key, row); err != nil {
		return 0, fmt.Errorf("key: %w", err)
	}
	for _, c := range d.valueCols {
		row[c] = types.NullDatum
	}
	d.fillHeaders(r)
	if d.tsCol >= 0 && row[d.tsCol].Null {
		return 0, d.badTimestamp(fmt.Errorf("timestamp column %s is NULL", d.tsName))
	}
	rowtime := r.Timestamp.UnixMilli()
	if d.tsCol >= 0 {
		rowtime = row[d.tsCol].I // a key column
		if rowtime < 0 && !d.keepNegative {
			return 0, d.negative(rowtime)
		}
	}
	row[d.rowtime].Null, row[d.rowtime].I = false, rowtime
	row[d.rowtime+1].Null, row[d.rowtime+1].I = false, int64(r.Partition)
	row[d.rowtime+2].Null, row[d.rowtime+2].I = false, r.Offset
	return rowtime, nil
}

// badTimestamp is the error for a record whose event time cannot be read:
// the record is bad (skipped and logged), or with throwBad the query
// fails, as ksqlDB's ksql.timestamp.throw.on.invalid makes it.
func (d *recordDecoder) badTimestamp(err error) error {
	if d.throwBad {
		return fatal(fmt.Errorf("Fatal user code error in TimestampExtractor callback for record: %w", err))
	}
	return fmt.Errorf("%w: %v", types.ErrBadRecord, err)
}

// negative is the error for a record whose event time is negative:
// skipped and logged, as Kafka Streams skips a record whose extracted
// timestamp is negative.
func (d *recordDecoder) negative(ts int64) error {
	return fmt.Errorf("%w: timestamp column %s holds a negative event time (%d)", types.ErrBadRecord, d.tsName, ts)
}

// fillHeaders fills the header columns from r's headers: a HEADERS column
// with all of them in order (a NULL header value as a NULL VALUE), a
// HEADER('k') column with the value of the last header k, NULL when there
// is none. The values are copied: the record is recycled.
func (d *recordDecoder) fillHeaders(r *kgo.Record) {
	for i, c := range d.headerCols {
		k := d.headerKeys[i]
		if k == "" {
			l := make([]types.Datum, 0, len(r.Headers))
			for _, h := range r.Headers {
				if h.Key == physical.UndoHeader || h.Key == physical.OldValueHeader {
					continue
				}
				v := types.NullDatum
				if h.Value != nil {
					v = types.Datum{B: append([]byte{}, h.Value...)}
				}
				l = append(l, types.Datum{L: []types.Datum{types.StringDatum(h.Key), v}})
			}
			d.row[c] = types.Datum{L: l}
			continue
		}
		v := types.NullDatum
		for _, h := range r.Headers {
			if h.Key == k {
				v = types.NullDatum
				if h.Value != nil {
					v = types.Datum{B: append([]byte{}, h.Value...)}
				}
			}
		}
		d.row[c] = v
	}
}

// splitWindow cuts a windowed topic's key into the key columns' bytes
// and the window, which it puts in the row; other keys pass as they are.
func (d *recordDecoder) splitWindow(key []byte) ([]byte, error) {
	if d.window == types.NoWindow || key == nil {
		return key, nil
	}
	k, start, end, err := d.window.SplitWindowKey(key, d.windowSize)
	if err != nil {
		return nil, err
	}
	d.winStart, d.winEnd = start, end
	row := d.row
	row[d.winCol].Null, row[d.winCol].I = false, start
	row[d.winCol+1].Null, row[d.winCol+1].I = false, end
	return k, nil
}

// sourceOp turns the records of one input topic into changes: a
// stream's record into a new row (a null value carries none and is
// skipped, or passed on as Change.NullValue), a table's into a new row or, for a tombstone, none; a
// repartitioned table change marked with physical.UndoHeader into an old
// row.
type sourceOp struct {
	dec   *recordDecoder
	table bool // a table's changelog: tombstones pass, keys are required
	// undo reads physical.UndoHeader (a repartitioned table's changes).
	undo bool
	// nullValues passes a stream's null-valued records on as
	// Change.NullValue instead of skipping them.
	nullValues bool
	// tombstones reads a table's topic for a push query: a record
	// without key is skipped, a tombstone passes on as a row of its key
	// (value columns NULL) marked Change.NullValue.
	tombstones bool
	// keysRequired skips a record without key of a table's topic read
	// as a stream's (PushConfig.Table).
	keysRequired bool
	// raw passes records on undecoded (physical.Source.Raw).
	raw    bool
	newRow types.Row // a copy of the new row of a change carried with its old row
	// keyed is the record passed on for a KeyByValue source: the
	// fetched one with its key by value (recordDecoder.byValue).
	keyed  kgo.Record
	change Change
	next   Processor
	// check, for a declared source of a known partitioner, checks each
	// keyed record's partition (partitioncheck.go); nil checks nothing.
	check *sourceCheck
}

// errNullKey marks a table record without a key: skipped and counted.
var errNullKey = fmt.Errorf("%w: a table record needs a key", types.ErrBadRecord)

func newSource(name string, s *physical.Source, next Processor) (*sourceOp, error) {
	if s.Raw {
		return &sourceOp{raw: true, next: next}, nil
	}
	dec, err := newRecordDecoder(name, s)
	if err != nil {
		return nil, err
	}
	return &sourceOp{dec: dec, table: s.Table, undo: s.Repartitioned, next: next}, nil
}

// Flush, at each commit, adds the records its check counted to the
// query's count.
func (s *sourceOp) Flush() error {
	s.check.flush()
	return nil
}

// Process is not called: a source is fed records, see process.
func (s *sourceOp) Process(*Change) error { return nil }

// process runs one record through the task's graph.
func (s *sourceOp) process(r *kgo.Record) error {
	c := &s.change
	c.Record, c.Old, c.New, c.NullValue = r, nil, nil, false
	if s.raw {
		c.Timestamp = r.Timestamp.UnixMilli()
		return s.next.Process(c)
	}
	if s.check != nil && len(r.Key) > 0 {
		s.check.record(r)
	}
	if s.dec.topicKey != nil && r.Key != nil {
		// The nodes after see a copy keyed by value; the fetched
		// record (what the processing log shows) keeps its key.
		s.keyed = *r
		if err := s.dec.byValue(&s.keyed); err != nil {
			return err
		}
		r = &s.keyed
		c.Record = r
	}
	if s.keysRequired && r.Key == nil {
		return errNullKey
	}
	if s.tombstones {
		if r.Key == nil {
			return errNullKey
		}
		if r.Value == nil {
			ts, err := s.dec.decodeKey(r)
			if err != nil {
				return err
			}
			c.Timestamp, c.New, c.NullValue = ts, s.dec.row, true
			if s.dec.window != types.NoWindow {
				c.Windowed, c.WindowStart, c.WindowEnd = true, s.dec.winStart, s.dec.winEnd
			}
			return s.next.Process(c)
		}
	}
	if s.table {
		if r.Key == nil {
			return errNullKey
		}
		if r.Value == nil {
			c.Timestamp = r.Timestamp.UnixMilli()
			if s.dec.window != types.NoWindow {
				if _, err := s.dec.splitWindow(r.Key); err != nil {
					return err
				}
				c.Windowed, c.WindowStart, c.WindowEnd = true, s.dec.winStart, s.dec.winEnd
			}
			return s.next.Process(c) // a deletion
		}
	} else if r.Value == nil {
		if !s.nullValues {
			return nil
		}
		ts, err := s.dec.decodeKey(r)
		if err != nil {
			return err
		}
		c.Timestamp, c.New, c.NullValue = ts, s.dec.row, true
		if s.dec.window != types.NoWindow && r.Key != nil {
			c.Windowed, c.WindowStart, c.WindowEnd = true, s.dec.winStart, s.dec.winEnd
		}
		return s.next.Process(c)
	}
	ts, err := s.dec.decode(r)
	if err != nil {
		return err
	}
	c.Timestamp = ts
	if s.dec.window != types.NoWindow && r.Key != nil {
		c.Windowed, c.WindowStart, c.WindowEnd = true, s.dec.winStart, s.dec.winEnd
	}
	if s.undo && isUndo(r) {
		c.Old = s.dec.row
	} else {
		c.New = s.dec.row
	}
	if s.undo {
		if old, ok := oldValue(r); ok {
			// The new row is decoded; the old one (same key) goes
			// beside it, copied before the decoder is reused.
			s.newRow = types.CloneRow(s.dec.row)
			c.New = s.newRow
			tmp := *r
			tmp.Value = old
			if _, err := s.dec.decode(&tmp); err != nil {
				return err
			}
			c.Old = s.dec.row
		}
	}
	return s.next.Process(c)
}

// oldValue returns the old row a repartitioned change carries in
// physical.OldValueHeader.
func oldValue(r *kgo.Record) ([]byte, bool) {
	for _, h := range r.Headers {
		if h.Key == physical.OldValueHeader {
			return h.Value, true
		}
	}
	return nil, false
}

func isUndo(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if h.Key == physical.UndoHeader {
			return true
		}
	}
	return false
}

// undoHeaders mark a repartitioned row that takes a table row back out of
// its group. Records share the slice; nothing writes to it.
var undoHeaders = []kgo.RecordHeader{{Key: physical.UndoHeader, Value: []byte{1}}}
