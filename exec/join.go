package exec

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ Processor = (*streamTableJoinOp)(nil)

// streamTableJoinOp joins each stream row to the table row of its key,
// which it reads from the task's store of the table (kept by the
// Materialize node on the table's side, through the open transaction's
// overlay, so a table record processed before the stream record in
// timestamp order is seen). Table records reach only the store: they
// emit nothing, as in ksqlDB's stream–table join. Nothing here allocates
// per record: the key, the decoded table row and the output row are
// reused.
type streamTableJoinOp struct {
	name  string
	left  bool // LEFT join: emit with NULL table columns when no row matches
	store *taskStore
	// keys are the join key's expressions over the stream's rows, one
	// per key column of the table (keyCols).
	keys    []expr.Evaluator
	keyCols []int
	// keyRow is laid out by the table's schema, with only the key column
	// set, for keyEnc (the table's key format): store keys are table
	// record keys.
	keyRow  types.Row
	keyEnc  types.Encoder
	keyBuf  []byte
	dec     *recordDecoder // the table's rows
	rec     kgo.Record     // a stored table row, as the record it was
	nStream int
	copies  []datumCopy // per output column
	out     types.Row
	change  Change
	next    Processor
}

func newStreamTableJoin(name string, op *physical.StreamTableJoin, table *physical.Source, store *taskStore, next Processor) (*streamTableJoinOp, error) {
	lks, tks := op.Keys()
	var keys []expr.Evaluator
	for _, lk := range lks {
		key, err := expr.Compile(lk)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		keys = append(keys, key)
	}
	ts := op.Store.Schema
	enc, err := types.NewEncoderOpts(op.Store.KeyFormat, ts, ts.KeyIndexes(), op.Store.KeyOptions)
	if err != nil {
		return nil, fmt.Errorf("%s key: %w", name, err)
	}
	dec, err := newRecordDecoder(name, table)
	if err != nil {
		return nil, err
	}
	j := &streamTableJoinOp{name: name, left: op.Left, store: store, keys: keys, keyCols: tks,
		keyRow: make(types.Row, ts.Len()), keyEnc: enc, dec: dec,
		nStream: op.Out.Len() - ts.Len(), out: make(types.Row, op.Out.Len()), next: next}
	for i := range j.keyRow {
		j.keyRow[i] = types.NullDatum
	}
	for _, c := range op.Out.Columns {
		j.copies = append(j.copies, copyFor(c.Type))
	}
	return j, nil
}

func (j *streamTableJoinOp) Process(c *Change) error {
	if c.New == nil {
		return nil // streams only add rows
	}
	row := c.New
	null := false
	for i, key := range j.keys {
		k, err := key(row)
		if err != nil {
			return &evalError{node: j.name, err: err}
		}
		j.keyRow[j.keyCols[i]] = k
		null = null || k.Null
	}
	var table types.Row
	if !null {
		var err error
		if table, err = j.lookup(c.Record.Partition); err != nil {
			return err
		}
	}
	if table == nil && !j.left {
		return nil
	}
	out := j.out
	for i := 0; i < j.nStream; i++ {
		j.copies[i].set(&out[i], &row[i])
	}
	for i := j.nStream; i < len(out); i++ {
		if table == nil {
			out[i] = types.NullDatum
		} else {
			j.copies[i].set(&out[i], &table[i-j.nStream])
		}
	}
	ch := &j.change
	ch.New, ch.Old, ch.Timestamp, ch.Record = out, nil, c.Timestamp, c.Record
	ch.Windowed, ch.WindowStart, ch.WindowEnd = false, 0, 0
	return j.next.Process(ch)
}

// lookup returns the table's row of the key in j.keyRow, or nil when the
// table has none. The row is valid until the next lookup.
func (j *streamTableJoinOp) lookup(partition int32) (types.Row, error) {
	key, err := j.keyEnc.Encode(j.keyBuf[:0], j.keyRow)
	if err != nil {
		return nil, &evalError{node: j.name, err: fmt.Errorf("join key: %w", err)}
	}
	j.keyBuf = key
	v, err := j.store.ov.Get(key)
	if err != nil {
		return nil, fatal(err)
	}
	if len(v) < tsLen {
		return nil, nil
	}
	r := &j.rec
	r.Key, r.Value, r.Partition, r.Offset = key, v[tsLen:], partition, -1
	r.Timestamp = time.UnixMilli(int64(binary.BigEndian.Uint64(v)))
	if _, err := j.dec.decode(r); err != nil {
		// The store holds rows that decoded when they were put; a
		// registry that cannot be asked fails the task (ErrRegistry).
		return nil, fmt.Errorf("%s: the table's row: %w", j.name, err)
	}
	row := j.dec.row
	// The store keeps no offset of the row.
	row[j.dec.rowtime+2] = types.NullDatum
	return row, nil
}
