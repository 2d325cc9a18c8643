package exec

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kgo"
)

var _ Processor = (*materializeOp)(nil)

// tsLen is the size of the timestamp prefix of materialized values.
const tsLen = 8

// materializeOp keeps the latest record per key of one task's partition
// of a source table in its store: a record upserts its key, a tombstone
// deletes it. Its source has checked the record. Writes go to the store's
// overlay; they reach the store when the transaction that consumed them
// commits. It forwards nothing: a stream–table join reading its node
// looks rows up in the store instead.
type materializeOp struct {
	store *taskStore
	buf   []byte
}

func (m *materializeOp) Process(c *Change) error {
	r := c.Record
	m.store.next = r.Offset + 1
	if c.New == nil {
		return fatal(m.store.ov.Delete(r.Key))
	}
	return fatal(putRecord(m.store.ov, r, &m.buf))
}

// putRecord stores a table record's value behind its record timestamp.
func putRecord(st kvWriter, r *kgo.Record, buf *[]byte) error {
	*buf = binary.BigEndian.AppendUint64((*buf)[:0], uint64(r.Timestamp.UnixMilli()))
	*buf = append(*buf, r.Value...)
	return st.Put(r.Key, *buf)
}

// tableRecordApplier returns the rule that restores a source table's
// store from its topic: the same check the table's source makes, then
// the record's value (or its deletion).
func tableRecordApplier(dec *recordDecoder, st kvWriter) func(*kgo.Record) error {
	var buf []byte
	return func(r *kgo.Record) error {
		if r.Key == nil {
			return errNullKey
		}
		if err := dec.byValue(r); err != nil {
			return err
		}
		if r.Value == nil {
			return st.Delete(r.Key)
		}
		if _, err := dec.decode(r); err != nil {
			return err
		}
		return putRecord(st, r, &buf)
	}
}
