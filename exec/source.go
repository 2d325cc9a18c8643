package exec

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// sourceOp decodes a record's key and value into the task's row, fills
// the pseudo columns and hands the row to the chain.
type sourceOp struct {
	key, value types.Decoder
	row        types.Row
	rowtime    int // index of ROWTIME; ROWPARTITION and ROWOFFSET follow
	next       Operator
}

func newSource(s *physical.Source, next Operator) (*sourceOp, error) {
	key, err := types.NewDecoder(s.KeyFormat, s.Schema, s.Schema.KeyIndexes())
	if err != nil {
		return nil, fmt.Errorf("%s key: %w", s.Name, err)
	}
	value, err := types.NewDecoder(s.ValueFormat, s.Schema, s.Schema.ValueIndexes())
	if err != nil {
		return nil, fmt.Errorf("%s value: %w", s.Name, err)
	}
	rt := s.Schema.Index(types.RowTime)
	if rt < 0 || s.Schema.Index(types.RowOffset) != rt+2 {
		return nil, fmt.Errorf("%s: schema lacks the pseudo columns", s.Name)
	}
	return &sourceOp{key: key, value: value, row: make(types.Row, s.Schema.Len()), rowtime: rt, next: next}, nil
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
	row[s.rowtime] = types.Datum{I: r.Timestamp.UnixMilli()}
	row[s.rowtime+1] = types.Datum{I: int64(r.Partition)}
	row[s.rowtime+2] = types.Datum{I: r.Offset}
	return s.next.Process(row)
}
