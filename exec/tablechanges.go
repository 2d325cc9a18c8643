package exec

import (
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

var _ Processor = (*tableChangesOp)(nil)

// tableChangesOp turns each record of a source table into a change: the
// key's previous row (from the task's store, which follows the table's
// topic) as the old row, the record's as the new (none for a tombstone).
// The store takes the new value once the change has passed through.
type tableChangesOp struct {
	store  *taskStore
	dec    *recordDecoder // decodes the previous row
	old    kgo.Record
	change Change
	buf    []byte
	next   Processor
}

func (d *tableChangesOp) Process(c *Change) error {
	r := c.Record
	d.store.next = r.Offset + 1
	prev, err := d.store.ov.Get(r.Key)
	if err != nil {
		return fatal(err)
	}
	out := &d.change
	*out = *c
	if len(prev) >= tsLen {
		d.old = kgo.Record{Key: r.Key, Value: prev[tsLen:], Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Timestamp: time.UnixMilli(int64(binary.BigEndian.Uint64(prev)))}
		if _, err := d.dec.decode(&d.old); err == nil {
			out.Old = d.dec.row
		}
	}
	if out.Old == nil && out.New == nil {
		return nil // the deletion of a key the table does not hold
	}
	if err := d.next.Process(out); err != nil {
		return err
	}
	if c.New == nil {
		return fatal(d.store.ov.Delete(r.Key))
	}
	return fatal(putRecord(d.store.ov, r, &d.buf))
}
