package exec

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Processor = (*tableRepartitionOp)(nil)

// tableRepartitionOp writes a table's records to a topic of the join's
// own, each key decoded and written again with one key schema
// (physical.TableRepartition); the value, timestamp and headers go as
// they are, a tombstone stays one. Its input is a Raw source.
type tableRepartitionOp struct {
	name     string
	topic    string
	topicKey types.Decoder // the table's keys, into row
	key      types.Encoder // keyRow, as the topic's keys
	row      types.Row
	keyRow   types.Row
	keyCols  []int
	out      *outbox
}

func newTableRepartition(name string, r *physical.TableRepartition, out *outbox) (*tableRepartitionOp, error) {
	op := &tableRepartitionOp{name: name, topic: r.Topic, row: make(types.Row, r.In.Len()), keyRow: make(types.Row, len(r.KeyCols)),
		keyCols: r.KeyCols, out: out}
	var err error
	if op.topicKey, err = types.NewDecoderOpts(r.TopicKeyFormat, r.In, r.In.KeyIndexes(), r.TopicKeyOptions); err != nil {
		return nil, fmt.Errorf("%s: the table's keys: %w", name, err)
	}
	idx := make([]int, len(r.KeyCols))
	for i := range idx {
		idx[i] = i
	}
	if op.key, err = types.NewEncoderOpts(r.KeyFormat, r.KeySchema, idx, r.KeyOptions); err != nil {
		return nil, fmt.Errorf("%s key: %w", name, err)
	}
	return op, nil
}

func (t *tableRepartitionOp) Process(c *Change) error {
	r := c.Record
	if r.Key == nil {
		return errNullKey
	}
	if err := t.topicKey.Decode(r.Key, t.row); err != nil {
		return fmt.Errorf("key: %w", err)
	}
	for i, k := range t.keyCols {
		t.keyRow[i] = t.row[k]
	}
	rec := t.out.record()
	start := len(t.out.arena)
	var err error
	if t.out.arena, err = t.key.Encode(t.out.arena, t.keyRow); err != nil {
		t.out.arena = t.out.arena[:start]
		return &evalError{node: t.name, err: err}
	}
	keyEnd := len(t.out.arena)
	t.out.arena = append(t.out.arena, r.Value...)
	a := t.out.arena
	rec.Key = a[start:keyEnd:keyEnd]
	if r.Value != nil {
		rec.Value = a[keyEnd:len(a):len(a)]
	}
	for _, h := range r.Headers {
		// The table's header columns read them back.
		at := len(t.out.arena)
		t.out.arena = append(t.out.arena, h.Value...)
		var v []byte
		if h.Value != nil {
			v = t.out.arena[at:len(t.out.arena):len(t.out.arena)]
		}
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: v})
	}
	rec.Topic = t.topic
	rec.Timestamp = r.Timestamp
	t.out.produce(rec)
	return nil
}
