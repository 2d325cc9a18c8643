package exec

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

var _ multiInput = (*tableJoinOp)(nil)

// tableJoinOp joins two tables on their primary keys. Each side's
// changes (old row → new row, from its TableChanges node, which updates
// that side's store after the change has passed) look the other side's
// row of the key up in its store, and the join emits the joined row's
// old and new values as Kafka Streams' KTable–KTable joins do:
//
//	INNER  only while the other side has a row
//	LEFT   a left change always; a right change only while the left has a row
//	RIGHT  the mirror of LEFT
//	FULL   always; a side without a row gives NULLs
//
// A joined value that does not exist (no row on a side the join needs)
// is missing from the change: a change with an old value and no new one
// is the joined row's deletion (the sink writes a tombstone). A row's
// timestamp is the later of the change's and the other side's row's.
// Nothing here allocates per record: rows and keys are reused.
type tableJoinOp struct {
	name    string
	typ     physical.JoinType
	sides   [2]tableJoinSide
	nLeft   int // the left's columns in the joined row
	leftKey int // the left's key column in the joined row
	// leftKeys and rightKeys pair the key columns of tables keyed by
	// several (nil for one).
	leftKeys, rightKeys []int
	synth               int // a FULL join's synthetic key column, or -1
	copies              []datumCopy
	outNew              types.Row
	outOld              types.Row
	change              Change
	next                Processor
	inputs              [2]Processor
}

// tableJoinSide is one table of a table join: its store, the decoder of
// its stored rows, and the position of its key column in its rows.
type tableJoinSide struct {
	store *taskStore
	dec   *recordDecoder
	// rows is set for a left that is an earlier join's rows
	// (physical.TableTableJoin.LeftRows), which the op keeps in store
	// itself; dec is then nil.
	rows *joinRows
	key  int
	rec  kgo.Record
}

// joinRows keeps the rows of a join on the left of a table join: each
// stored as its timestamp and its columns in JSON, keyed by the rows'
// record key, written to the store's changelog. They give the join's
// changes their old rows and the right's changes the left's row.
type joinRows struct {
	enc    types.Encoder
	dec    types.Decoder
	row    types.Row // the last row looked up
	old    types.Row
	val    []byte
	out    *outbox
	change Change
}

// rowCodec encodes and decodes whole rows of schema as JSON objects: the
// join stores that keep rows of the join's own (joinRows, fkLeftRows,
// fkResultRows) write them so.
func rowCodec(name string, schema types.Schema) (types.Encoder, types.Decoder, error) {
	all := make([]int, schema.Len())
	for i := range all {
		all[i] = i
	}
	enc, err := types.NewEncoder(types.FormatJSON, schema, all)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	dec, err := types.NewDecoderRead(types.FormatJSON, schema, all, nil, types.FormatOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return enc, dec, nil
}

func newJoinRows(name string, schema types.Schema, out *outbox) (*joinRows, error) {
	enc, dec, err := rowCodec(name, schema)
	if err != nil {
		return nil, err
	}
	return &joinRows{enc: enc, dec: dec, row: make(types.Row, schema.Len()), old: make(types.Row, schema.Len()), out: out}, nil
}

// apply keeps a change of the join's rows in st and returns it as a
// table's change: the key's previous row as the old row (none for a
// new key), the change's new row; nil for the deletion of a key st
// does not hold.
func (jr *joinRows) apply(name string, st *taskStore, c *Change) (*Change, error) {
	key := c.Record.Key
	prev, err := st.ov.Get(key)
	if err != nil {
		return nil, fatal(err)
	}
	out := &jr.change
	*out = Change{Timestamp: c.Timestamp, New: c.New, Record: c.Record}
	if len(prev) >= tsLen {
		if err := jr.dec.Decode(prev[tsLen:], jr.old); err != nil {
			return nil, fmt.Errorf("%s: the stored row: %w", name, err)
		}
		out.Old = jr.old
	}
	if c.New == nil {
		if out.Old == nil {
			return nil, nil
		}
		if err := st.ov.Delete(key); err != nil {
			return nil, fatal(err)
		}
		storeChangelog(jr.out, st, key, nil, c.Timestamp)
		return out, nil
	}
	jr.val = binary.BigEndian.AppendUint64(jr.val[:0], uint64(c.Timestamp))
	if jr.val, err = jr.enc.Encode(jr.val, c.New); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := st.ov.Put(key, jr.val); err != nil {
		return nil, fatal(err)
	}
	storeChangelog(jr.out, st, key, jr.val, c.Timestamp)
	return out, nil
}

// multiInput is a processor whose inputs must be told apart: the
// processor each input node forwards to.
type multiInput interface{ input(i int) Processor }

func (j *tableJoinOp) input(i int) Processor { return j.inputs[i] }

// tableJoinInput is a tableJoinOp as one of its inputs sees it.
type tableJoinInput struct {
	j    *tableJoinOp
	side int
}

func (in tableJoinInput) Process(c *Change) error { return in.j.process(in.side, c) }

func newTableJoin(name string, op *physical.TableTableJoin, sources [2]*physical.Source, stores [2]*taskStore, out *outbox, next Processor) (*tableJoinOp, error) {
	j := &tableJoinOp{name: name, typ: op.Type, nLeft: op.LeftStore.Schema.Len(), leftKey: op.LeftKey, synth: -1,
		leftKeys: op.LeftKeys, rightKeys: op.RightKeys,
		outNew: make(types.Row, op.Out.Len()), outOld: make(types.Row, op.Out.Len()), next: next}
	if op.Type == physical.FullJoin {
		j.synth = op.Out.Len() - 1
	}
	for i := range j.sides {
		j.sides[i] = tableJoinSide{store: stores[i], key: op.LeftKey}
		j.inputs[i] = tableJoinInput{j: j, side: i}
		if i == 0 && op.LeftRows {
			rows, err := newJoinRows(name, op.LeftStore.Schema, out)
			if err != nil {
				return nil, err
			}
			j.sides[i].rows = rows
			continue
		}
		dec, err := newRecordDecoder(name, sources[i])
		if err != nil {
			return nil, err
		}
		j.sides[i].dec = dec
	}
	j.sides[1].key = op.RightKey
	for _, c := range op.Out.Columns {
		j.copies = append(j.copies, copyFor(c.Type))
	}
	return j, nil
}

// process joins a change of side s (0 left, 1 right).
func (j *tableJoinOp) process(s int, c *Change) error {
	if rows := j.sides[s].rows; rows != nil {
		// A change of the join on the left: its old row is the one
		// kept.
		var err error
		if c, err = rows.apply(j.name, j.sides[s].store, c); c == nil || err != nil {
			return err
		}
	}
	other := 1 - s
	row := c.New
	if row == nil {
		row = c.Old
	}
	if row == nil {
		return nil
	}
	o, ots, err := j.lookup(other, c.Record)
	if err != nil {
		return err
	}
	// Which sides must have a row for a joined row to exist.
	needS, needO := true, true
	switch j.typ {
	case physical.LeftJoin:
		needS, needO = s == 0, s == 1
	case physical.RightJoin:
		needS, needO = s == 1, s == 0
	case physical.FullJoin:
		needS, needO = false, false
	}
	if needO && o == nil {
		return nil
	}
	key := &row[j.sides[s].key]
	// A joined value exists when the sides it needs have rows, and one
	// of them has.
	exists := func(r types.Row) bool { return (r != nil || !needS) && (r != nil || o != nil) }
	out := &j.change
	out.Old, out.New, out.Record = nil, nil, c.Record
	out.Windowed, out.WindowStart, out.WindowEnd = false, 0, 0
	out.Timestamp = c.Timestamp
	if o != nil {
		out.Timestamp = max(c.Timestamp, ots)
	}
	if exists(c.New) {
		out.New = j.fill(j.outNew, s, c.New, o, key)
	}
	if exists(c.Old) {
		out.Old = j.fill(j.outOld, s, c.Old, o, key)
	}
	if out.New == nil && out.Old == nil {
		return nil
	}
	return j.next.Process(out)
}

// fill lays the joined row of side s's row r and the other side's row o
// out in dst: the left's columns, then the right's, NULL for a side
// without a row, with the join key in the left's key column (and a FULL
// join's synthetic key column).
func (j *tableJoinOp) fill(dst types.Row, s int, r, o types.Row, key *types.Datum) types.Row {
	l, rr := r, o
	if s == 1 {
		l, rr = o, r
	}
	for i := 0; i < j.nLeft; i++ {
		if l == nil {
			dst[i] = types.NullDatum
		} else {
			j.copies[i].set(&dst[i], &l[i])
		}
	}
	for i := j.nLeft; i < len(j.copies) && i-j.nLeft < j.nRight(); i++ {
		if rr == nil {
			dst[i] = types.NullDatum
		} else {
			j.copies[i].set(&dst[i], &rr[i-j.nLeft])
		}
	}
	if j.synth >= 0 {
		j.copies[j.synth].set(&dst[j.synth], key)
	} else if l == nil && j.leftKeys != nil {
		for n, k := range j.leftKeys {
			j.copies[k].set(&dst[k], &rr[j.rightKeys[n]])
		}
	} else if l == nil {
		j.copies[j.leftKey].set(&dst[j.leftKey], key)
	}
	return dst
}

// lookup returns side s's row of the key of record r (the same key
// bytes: both tables have one key format), and its timestamp; nil when
// the side has none. The row is valid until the next lookup of s.
func (j *tableJoinOp) lookup(s int, r *kgo.Record) (types.Row, int64, error) {
	side := &j.sides[s]
	v, err := side.store.ov.Get(r.Key)
	if err != nil {
		return nil, 0, fatal(err)
	}
	if len(v) < tsLen {
		return nil, 0, nil
	}
	ts := int64(binary.BigEndian.Uint64(v))
	if side.rows != nil {
		if err := side.rows.dec.Decode(v[tsLen:], side.rows.row); err != nil {
			return nil, 0, fmt.Errorf("%s: the stored row: %w", j.name, err)
		}
		return side.rows.row, ts, nil
	}
	rec := &side.rec
	rec.Key, rec.Value, rec.Partition, rec.Offset = r.Key, v[tsLen:], r.Partition, -1
	rec.Timestamp = time.UnixMilli(ts)
	if _, err := side.dec.decode(rec); err != nil {
		return nil, 0, fmt.Errorf("%s: the stored row: %w", j.name, err)
	}
	row := side.dec.row
	row[side.dec.rowtime+2] = types.NullDatum // the store keeps no offset
	return row, ts, nil
}

// nRight is the number of the right table's columns in the joined row.
func (j *tableJoinOp) nRight() int { return len(j.sides[1].dec.row) }

// Process is not called: each input has its own processor (input).
func (j *tableJoinOp) Process(*Change) error {
	return fmt.Errorf("%s: a table join is fed through its inputs", j.name)
}
