package exec

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// diffOp turns each change of a source table into the removal of the
// key's previous row (run through the chain with the undo flag set) and
// the addition of its new one, keeping the table's latest rows in the
// task's store (restored from the table's topic).
type diffOp struct {
	check *sourceOp // validates a new row before anything is emitted
	add   *sourceOp // the chain, for the new row
	sub   *sourceOp // the chain, for the old row
	store *taskStore
	undo  *bool
	ts    *time.Time
	buf   []byte
	old   kgo.Record
}

func (d *diffOp) process(r *kgo.Record) error {
	d.store.next = r.Offset + 1
	if r.Key == nil {
		return errNullKey
	}
	if r.Value != nil {
		if err := d.check.process(r); err != nil {
			return err // a bad change changes nothing
		}
	}
	prev, err := d.store.ov.Get(r.Key)
	if err != nil {
		return err
	}
	if len(prev) >= tsLen {
		d.old = kgo.Record{Key: r.Key, Value: prev[tsLen:], Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Timestamp: time.UnixMilli(int64(binary.BigEndian.Uint64(prev)))}
		*d.undo = true
		err := d.sub.process(&d.old)
		*d.undo = false
		if err != nil {
			return err
		}
	}
	if r.Value == nil {
		return d.store.ov.Delete(r.Key)
	}
	if err := d.add.process(r); err != nil {
		return err
	}
	d.buf = binary.BigEndian.AppendUint64(d.buf[:0], uint64(r.Timestamp.UnixMilli()))
	d.buf = append(d.buf, r.Value...)
	return d.store.ov.Put(r.Key, d.buf)
}
