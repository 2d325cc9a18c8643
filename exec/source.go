package exec

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// sourceOp decodes a record's key and value into the task's row, fills
// the pseudo columns and hands the row to the chain.
type sourceOp struct {
	key, value types.Decoder
	row        types.Row
	rowtime    int // index of ROWTIME; ROWPARTITION and ROWOFFSET follow
	// tsCol is the column holding the event time (WITH TIMESTAMP), or -1
	// for the record timestamp; tsParse reads it when it is a STRING.
	tsCol   int
	tsName  string
	tsParse func([]byte) (int64, error)
	// ts receives each record's event time, for the sink.
	ts *time.Time
	// undoCol is the __UNDO pseudo column (a table's repartitioned
	// changes), filled from the record header of that name; -1 if none.
	undoCol int
	next    Operator
}

func newSource(s *physical.Source, ts *time.Time, next Operator) (*sourceOp, error) {
	key, err := types.NewDecoderOpts(s.KeyFormat, s.Schema, s.Schema.KeyIndexes(), s.KeyOptions)
	if err != nil {
		return nil, fmt.Errorf("%s key: %w", s.Name, err)
	}
	value, err := types.NewDecoderRead(s.ValueFormat, s.Schema, s.Schema.ValueIndexes(), s.Read, s.ValueOptions)
	if err != nil {
		return nil, fmt.Errorf("%s value: %w", s.Name, err)
	}
	rt := s.Schema.Index(types.RowTime)
	if rt < 0 || s.Schema.Index(types.RowOffset) != rt+2 {
		return nil, fmt.Errorf("%s: schema lacks the pseudo columns", s.Name)
	}
	op := &sourceOp{key: key, value: value, row: make(types.Row, s.Schema.Len()), rowtime: rt, tsCol: -1, ts: ts,
		undoCol: s.Schema.Index(physical.UndoColumn), next: next}
	if s.TimestampColumn != "" {
		op.tsCol = s.Schema.Index(s.TimestampColumn)
		if op.tsCol < 0 {
			return nil, fmt.Errorf("%s: timestamp column %s is not in the schema", s.Name, s.TimestampColumn)
		}
		op.tsName = s.TimestampColumn
		if s.Schema.Columns[op.tsCol].Type.Kind == types.String {
			format := s.TimestampFormat
			if format == "" {
				format = "yyyy-MM-dd'T'HH:mm:ss[.SSS][XXX]" // ISO-8601
			}
			if op.tsParse, err = expr.TimestampParser(format); err != nil {
				return nil, fmt.Errorf("%s: TIMESTAMP_FORMAT: %w", s.Name, err)
			}
		}
	}
	return op, nil
}

// process runs one record through the chain. A record with a null value
// is skipped: on a stream it carries no row.
func (s *sourceOp) process(r *kgo.Record) error {
	if r.Value == nil {
		return nil
	}
	row := s.row
	if err := s.key.Decode(r.Key, row); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	if err := s.value.Decode(r.Value, row); err != nil {
		return fmt.Errorf("value: %w", err)
	}
	rowtime := r.Timestamp.UnixMilli()
	if s.tsCol >= 0 {
		d := row[s.tsCol]
		switch {
		case d.Null:
			return fmt.Errorf("%w: timestamp column %s is NULL", types.ErrBadRecord, s.tsName)
		case s.tsParse != nil:
			t, err := s.tsParse(d.B)
			if err != nil {
				return fmt.Errorf("%w: timestamp column %s: %v", types.ErrBadRecord, s.tsName, err)
			}
			rowtime = t
		default:
			rowtime = d.I
		}
	}
	if s.ts != nil {
		*s.ts = time.UnixMilli(rowtime)
	}
	// Only the numbers: nothing else writes these datums, and a whole
	// Datum would cost pointer writes.
	row[s.rowtime].Null, row[s.rowtime].I = false, rowtime
	row[s.rowtime+1].Null, row[s.rowtime+1].I = false, int64(r.Partition)
	row[s.rowtime+2].Null, row[s.rowtime+2].I = false, r.Offset
	if s.undoCol >= 0 {
		row[s.undoCol] = types.BoolDatum(isUndo(r))
	}
	return s.next.Process(row)
}

// undoHeaders mark a repartitioned row that takes a table row back out of
// its group. Records share the slice; nothing writes to it.
var undoHeaders = []kgo.RecordHeader{{Key: physical.UndoColumn, Value: []byte{1}}}

func isUndo(r *kgo.Record) bool {
	for _, h := range r.Headers {
		if h.Key == physical.UndoColumn {
			return true
		}
	}
	return false
}
