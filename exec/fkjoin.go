package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/spaolacci/murmur3"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

var (
	_ multiInput = (*fkJoinOp)(nil)
	_ multiInput = (*fkSubscriptionsOp)(nil)
)

// The wire layout of a foreign-key join's internal topics (see
// physical.ForeignKeyJoin). Running queries' topics and changelogs hold
// these bytes: extend them only behind a new version byte.
//
//	registration key    the foreign key, in the right table's key format
//	registration value  version(0) instruction hashFlag hash[16] partition[4] primaryKey…
//	subscription key    len(fk)[4] fk… primaryKey…
//	subscription value  hashFlag hash[16] partition[4]
//	response key        the left row's primary key (its record key)
//	response value      version(0) hashFlag hash[16] rightFlag len(fk)[4] fk… timestamp[8] rightValue…
//
// A join whose subscriptions are ordered by a left column
// (physical.FKIndex; queries planned since) writes version 1
// registrations and keys its subscriptions by that column's value too:
//
//	registration value  version(1) instruction hashFlag hash[16] partition[4] flags len(ord)[1] ord… len(prev)[1] prev… primaryKey…
//	subscription key    len(fk)[4] fk… ord… primaryKey…
//
// ord is the left row's value of the column (fkOrd: 0 for NULL, or 1
// and the integer's bits with the sign flipped, big-endian, so that the
// keys sort by it); prev is the one the key's previous subscription had
// (none: remove nothing), whose subscription the registration replaces;
// flags is 0.
//
// hashFlag is 1 when a hash follows the left row's value (none: the row
// was deleted); rightFlag is 1 when the right table has a row of the
// foreign key, whose value bytes (as its topic holds them) and
// timestamp follow. Without one, the response ends after rightFlag.
const (
	fkVersion  = 0
	fkVersion1 = 1
	fkRegHead1 = fkRegHead + 1 // … flags
	fkHashLen  = 16
	fkRegHead  = 1 + 1 + 1 + fkHashLen + 4 // version … partition
	fkSubLen   = 1 + fkHashLen + 4
	fkRespHead = 1 + 1 + fkHashLen + 1
)

// fkOrd appends the subscription order of d, an integer column's
// datum: 0 for NULL, else 1 then its bits with the sign flipped,
// big-endian.
func fkOrd(dst []byte, d types.Datum) []byte {
	if d.Null {
		return append(dst, 0)
	}
	return binary.BigEndian.AppendUint64(append(dst, 1), uint64(d.I)^(1<<63))
}

// fkOrdLen is the length of the order starting with byte b (0 for a
// malformed one).
func fkOrdLen(b []byte) int {
	switch {
	case len(b) >= 1 && b[0] == 0:
		return 1
	case len(b) >= 9 && b[0] == 1:
		return 9
	}
	return 0
}

// fkFails returns whether a joined row (nLeft columns of the left's,
// then the right's) fails ix's conjunct: a NULL operand fails it.
func fkFails(ix *physical.FKIndex, nLeft int) func(types.Row) bool {
	l, r, op := ix.Left, nLeft+ix.Right, ix.Op
	return func(row types.Row) bool {
		a, b := row[l], row[r]
		if a.Null || b.Null {
			return true
		}
		switch op {
		case expr.OpLT:
			return !(a.I < b.I)
		case expr.OpLE:
			return !(a.I <= b.I)
		case expr.OpGT:
			return !(a.I > b.I)
		case expr.OpGE:
			return !(a.I >= b.I)
		case expr.OpEQ:
			return a.I != b.I
		}
		return false
	}
}

// noHash fills a subscription's hash when it has none.
var noHash [fkHashLen]byte

// fkHash is the hash a subscription carries: murmur3's 128-bit x64
// variant of the left row's value bytes, with Kafka Streams' seed.
func fkHash(dst *[fkHashLen]byte, value []byte) {
	h1, h2 := murmur3.Sum128WithSeed(value, 104729)
	binary.BigEndian.PutUint64(dst[:8], h1)
	binary.BigEndian.PutUint64(dst[8:], h2)
}

// fkJoinOp is the left table's side of a foreign-key join
// (physical.ForeignKeyJoin): input 0 takes the left table's changes and
// subscribes by their foreign keys, input 1 takes the responses and
// emits the joined rows. Its rows and buffers are reused: nothing is
// allocated per record in steady state.
type fkJoinOp struct {
	name   string
	left   bool // LEFT join: a row without a match is emitted with NULLs
	fk     expr.Evaluator
	fkRow  types.Row
	fkEnc  types.Encoder
	oldFK  []byte
	newFK  []byte
	oldNul bool
	newNul bool
	store  *taskStore // the left table's rows
	ldec   *recordDecoder
	// rows is set when the left is an earlier join's rows, which the op
	// keeps in store itself.
	rows *fkLeftRows
	rdec *recordDecoder
	// result is set when the join keeps the rows it emitted
	// (physical.ForeignKeyJoin.ResultStore): each change then carries
	// the key's previous joined row as its old row.
	result *fkResultRows
	lrec   kgo.Record
	rrec   kgo.Record
	topic  string
	out    *outbox
	nLeft  int
	nRight int
	copies []datumCopy
	row    types.Row
	change Change
	next   Processor
	inputs [2]Processor
	hash   [fkHashLen]byte
	// index is set when the subscriptions are ordered by a left column
	// (physical.FKIndex): registrations then carry its old and new
	// values (version 1).
	index  *physical.FKIndex
	oldOrd []byte
	newOrd []byte
	// fails, set with index and result, reports whether a joined row
	// fails the index's conjunct (and so the filter after the join).
	fails func(types.Row) bool
}

type fkJoinInput struct {
	j    *fkJoinOp
	side int
}

func (in fkJoinInput) Process(c *Change) error {
	if in.side == 0 {
		return in.j.subscribe(c)
	}
	return in.j.respond(c.Record)
}

func (j *fkJoinOp) input(i int) Processor { return j.inputs[i] }

// Process is not called: each input has its own processor (input).
func (j *fkJoinOp) Process(*Change) error {
	return fmt.Errorf("%s: a foreign-key join is fed through its inputs", j.name)
}

// fkLeftRows keeps the rows of a join on the left of a foreign-key join
// (physical.ForeignKeyJoin.LeftRows): each stored as its timestamp and
// its columns in JSON, keyed by the join's record key, written to the
// store's changelog; they give each change its old row and a value to
// hash.
type fkLeftRows struct {
	enc     types.Encoder
	dec     types.Decoder
	key     types.Decoder
	old     types.Row
	row     types.Row
	val     []byte
	rec     kgo.Record
	change  Change
	hashRow []byte
}

func newFKLeftRows(name string, op *physical.ForeignKeyJoin) (*fkLeftRows, error) {
	schema := op.LeftStore.Schema
	enc, dec, err := rowCodec(name, schema)
	if err != nil {
		return nil, err
	}
	key, err := types.NewDecoderOpts(op.LeftKeyFormat, schema, schema.KeyIndexes(), op.LeftKeyOpts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &fkLeftRows{enc: enc, dec: dec, key: key, old: make(types.Row, schema.Len()), row: make(types.Row, schema.Len())}, nil
}

// fkResultRows keeps the joined rows a foreign-key join emitted
// (physical.ForeignKeyJoin.ResultStore), as JSON, keyed by the left's
// record key, written to the store's changelog.
type fkResultRows struct {
	store *taskStore
	enc   types.Encoder
	dec   types.Decoder
	old   types.Row
	val   []byte
}

func newFKResultRows(name string, schema types.Schema, store *taskStore) (*fkResultRows, error) {
	enc, dec, err := rowCodec(name, schema)
	if err != nil {
		return nil, err
	}
	return &fkResultRows{store: store, enc: enc, dec: dec, old: make(types.Row, schema.Len())}, nil
}

// swap returns the joined row last emitted for key (nil: none) and
// keeps row (nil: the key's deletion) in its place, writing the change
// to the store's changelog. The old row is valid until the next swap.
//
// With fails (the join's index: physical.FKIndex), a new row that fails
// the filter after the join, in place of a row that failed it too (or
// none), is not kept, and skipped reports it: the filter would pass
// neither, and the row kept fails it as the new one would.
func (rr *fkResultRows) swap(o *outbox, key []byte, row types.Row, ts int64, fails func(types.Row) bool) (_ types.Row, skipped bool, err error) {
	prev, err := rr.store.ov.Get(key)
	if err != nil {
		return nil, false, fatal(err)
	}
	var old types.Row
	if prev != nil {
		if err := rr.dec.Decode(prev, rr.old); err != nil {
			return nil, false, fmt.Errorf("the stored joined row: %w", err)
		}
		old = rr.old
	}
	if row != nil && fails != nil && fails(row) && (old == nil || fails(old)) {
		return old, true, nil
	}
	if row == nil {
		if prev != nil {
			if err := rr.store.ov.Delete(key); err != nil {
				return nil, false, fatal(err)
			}
			storeChangelog(o, rr.store, key, nil, ts)
		}
		return old, false, nil
	}
	if rr.val, err = rr.enc.Encode(rr.val[:0], row); err != nil {
		return nil, false, err
	}
	if err := rr.store.ov.Put(key, rr.val); err != nil {
		return nil, false, fatal(err)
	}
	storeChangelog(o, rr.store, key, rr.val, ts)
	return old, false, nil
}

func newFKJoin(name string, op *physical.ForeignKeyJoin, left *physical.Source, store, result *taskStore, out *outbox, next Processor) (*fkJoinOp, error) {
	fk, err := expr.Compile(op.ForeignKey)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	enc, err := fkEncoder(op)
	if err != nil {
		return nil, fmt.Errorf("%s foreign key: %w", name, err)
	}
	rdec, err := newRecordDecoder(name, op.RightSource)
	if err != nil {
		return nil, err
	}
	j := &fkJoinOp{name: name, left: op.Type == physical.LeftJoin, fk: fk, fkRow: make(types.Row, 1), fkEnc: enc,
		store: store, rdec: rdec, topic: op.Registration, out: out,
		nRight: len(rdec.row), row: make(types.Row, op.Out.Len()), next: next, index: op.Index}
	if op.LeftRows {
		if j.rows, err = newFKLeftRows(name, op); err != nil {
			return nil, err
		}
		j.nLeft = op.LeftStore.Schema.Len()
	} else {
		if left == nil {
			return nil, fmt.Errorf("%s: the left table's source is missing", name)
		}
		if j.ldec, err = newRecordDecoder(name, left); err != nil {
			return nil, err
		}
		j.nLeft = len(j.ldec.row)
	}
	if j.nLeft+j.nRight != op.Out.Len() {
		return nil, fmt.Errorf("%s: the joined rows have %d columns, the tables %d and %d", name, op.Out.Len(), j.nLeft, j.nRight)
	}
	if ix := op.Index; ix != nil && (ix.Left < 0 || ix.Left >= j.nLeft || ix.Right < 0 || ix.Right >= j.nRight) {
		return nil, fmt.Errorf("%s: the subscriptions' order %s is out of the tables' columns", name, ix.Name)
	}
	for _, c := range op.Out.Columns {
		j.copies = append(j.copies, copyFor(c.Type))
	}
	if result != nil {
		if j.result, err = newFKResultRows(name, op.Out, result); err != nil {
			return nil, err
		}
		if op.Index != nil {
			j.fails = fkFails(op.Index, j.nLeft)
		}
	}
	j.inputs = [2]Processor{fkJoinInput{j, 0}, fkJoinInput{j, 1}}
	return j, nil
}

// foreignKey encodes row's foreign key into dst; null reports a NULL
// key (or one that does not evaluate: it subscribes to nothing).
func (j *fkJoinOp) foreignKey(row types.Row, dst []byte) (_ []byte, null bool, err error) {
	d, err := j.fk(row)
	if err != nil || d.Null {
		return dst[:0], true, nil
	}
	j.fkRow[0] = d
	if dst, err = j.fkEnc.Encode(dst[:0], j.fkRow); err != nil {
		return dst[:0], true, nil
	}
	return dst, false, nil
}

// subscribe sends a change of the left table to the right's partitions,
// as Kafka Streams' SubscriptionSendProcessor does: a changed foreign key
// unsubscribes from the old one, and a row with a foreign key subscribes
// to it. An INNER join's new row (or one whose foreign key was NULL)
// hears back only when the right has a row: it has no joined row to
// delete. Every other subscription hears back either way, so that the
// joined row of the old value goes when the right has none: answers to
// an older value are dropped by their hash, and the newest subscription
// must settle the row.
//
// A row that joins nothing now (deleted, or its foreign key NULL)
// unsubscribes and is settled here at once, not through the right table:
// a LEFT join emits it with NULLs, an INNER join (and a deletion) its
// deletion. An answer that was on its way for an older value is dropped
// by its hash.
func (j *fkJoinOp) subscribe(c *Change) error {
	var err error
	if j.rows != nil {
		if c, err = j.leftRowChange(c); c == nil || err != nil {
			return err
		}
	}
	j.oldNul, j.newNul = true, true
	if c.Old != nil {
		if j.oldFK, j.oldNul, err = j.foreignKey(c.Old, j.oldFK); err != nil {
			return err
		}
	}
	if c.New != nil {
		if j.newFK, j.newNul, err = j.foreignKey(c.New, j.newFK); err != nil {
			return err
		}
	}
	r := c.Record
	var hash *[fkHashLen]byte
	if c.New != nil {
		fkHash(&j.hash, r.Value)
		hash = &j.hash
	}
	if j.index != nil {
		j.oldOrd, j.newOrd = j.oldOrd[:0], j.newOrd[:0]
		if c.Old != nil {
			j.oldOrd = fkOrd(j.oldOrd, c.Old[j.index.Left])
		}
		if c.New != nil {
			j.newOrd = fkOrd(j.newOrd, c.New[j.index.Left])
		}
	}
	switch {
	case c.New == nil || j.newNul:
		if !j.oldNul {
			j.register(j.oldFK, physical.FKDeleteNoPropagate, nil, c, j.oldOrd, nil)
		}
		switch {
		case c.New != nil && j.left:
			return j.emit(c.Record, c.Timestamp, c.New, nil, false)
		case c.New != nil && !j.oldNul:
			return j.emit(c.Record, c.Timestamp, c.New, nil, true)
		case c.New == nil && c.Old != nil:
			return j.emit(c.Record, c.Timestamp, c.Old, nil, true)
		}
		return nil
	case !j.oldNul && !bytes.Equal(j.oldFK, j.newFK):
		j.register(j.oldFK, physical.FKDeleteNoPropagate, nil, c, j.oldOrd, nil)
		j.register(j.newFK, physical.FKPropagateNullIfNoValue, hash, c, j.newOrd, nil)
	case j.oldNul:
		// No subscription to replace.
		instr := physical.FKPropagateOnlyIfValue
		if j.left {
			instr = physical.FKPropagateNullIfNoValue
		}
		j.register(j.newFK, instr, hash, c, j.newOrd, nil)
	default:
		// The same foreign key: the subscription of the old row (its
		// order) is replaced.
		j.register(j.newFK, physical.FKPropagateNullIfNoValue, hash, c, j.newOrd, j.oldOrd)
	}
	return nil
}

// register writes one subscription record: with an index (version 1),
// ord is the row's order and prev (nil: none) that of the subscription
// it replaces.
func (j *fkJoinOp) register(fk []byte, instr byte, hash *[fkHashLen]byte, c *Change, ord, prev []byte) {
	o := j.out
	rec := o.record()
	start := len(o.arena)
	o.arena = append(o.arena, fk...)
	keyEnd := len(o.arena)
	if j.index != nil {
		o.arena = append(o.arena, fkVersion1, instr)
	} else {
		o.arena = append(o.arena, fkVersion, instr)
	}
	if hash != nil {
		o.arena = append(o.arena, 1)
		o.arena = append(o.arena, hash[:]...)
	} else {
		o.arena = append(o.arena, 0)
		o.arena = append(o.arena, noHash[:]...)
	}
	o.arena = binary.BigEndian.AppendUint32(o.arena, uint32(c.Record.Partition))
	if j.index != nil {
		o.arena = append(o.arena, 0, byte(len(ord)))
		o.arena = append(o.arena, ord...)
		o.arena = append(o.arena, byte(len(prev)))
		o.arena = append(o.arena, prev...)
	}
	o.arena = append(o.arena, c.Record.Key...)
	a := o.arena
	rec.Key = a[start:keyEnd:keyEnd]
	rec.Value = a[keyEnd:len(a):len(a)]
	rec.Topic = j.topic
	rec.Timestamp = time.UnixMilli(c.Timestamp)
	o.produce(rec)
}

// respond joins a response to the left row it answers, unless the row
// has changed since it subscribed (the hashes differ): then a later
// response answers it.
func (j *fkJoinOp) respond(r *kgo.Record) error {
	v := r.Value
	if len(v) < fkRespHead || v[0] != fkVersion {
		return fmt.Errorf("%w: %s: a malformed subscription response", types.ErrBadRecord, j.name)
	}
	cur, err := j.store.ov.Get(r.Key)
	if err != nil {
		return fatal(err)
	}
	hasHash := v[1] == 1
	if hasHash != (len(cur) >= tsLen) {
		return nil // stale
	}
	if hasHash {
		fkHash(&j.hash, cur[tsLen:])
		if !bytes.Equal(j.hash[:], v[2:2+fkHashLen]) {
			return nil // stale
		}
	}
	ts := r.Timestamp.UnixMilli()
	lrec := &j.lrec
	if !hasHash {
		// The row was deleted: its key's deletion.
		*lrec = kgo.Record{Key: r.Key, Partition: r.Partition, Offset: -1, Timestamp: r.Timestamp}
		row, err := j.leftKey(lrec)
		if err != nil {
			return fmt.Errorf("%s: the response's key: %w", j.name, err)
		}
		return j.emit(lrec, ts, row, nil, true)
	}
	*lrec = kgo.Record{Key: r.Key, Value: cur[tsLen:], Partition: r.Partition, Offset: -1,
		Timestamp: time.UnixMilli(int64(binary.BigEndian.Uint64(cur)))}
	lrow, err := j.leftRow(lrec)
	if err != nil {
		return fmt.Errorf("%s: the stored row: %w", j.name, err)
	}
	if v[2+fkHashLen] != 1 {
		// No right row: a LEFT join's row with NULLs, an INNER join's
		// deletion.
		return j.emit(lrec, ts, lrow, nil, !j.left)
	}
	rest := v[fkRespHead:]
	if len(rest) < 4 {
		return fmt.Errorf("%w: %s: a malformed subscription response", types.ErrBadRecord, j.name)
	}
	n := int(binary.BigEndian.Uint32(rest))
	if len(rest) < 4+n+tsLen {
		return fmt.Errorf("%w: %s: a malformed subscription response", types.ErrBadRecord, j.name)
	}
	fk, rv := rest[4:4+n], rest[4+n:]
	j.rrec = kgo.Record{Key: fk, Value: rv[tsLen:], Partition: -1, Offset: -1,
		Timestamp: time.UnixMilli(int64(binary.BigEndian.Uint64(rv)))}
	if _, err := j.rdec.decode(&j.rrec); err != nil {
		return fmt.Errorf("%s: the right row: %w", j.name, err)
	}
	rrow := j.rdec.row
	rrow[j.rdec.rowtime+1] = types.NullDatum // the response does not carry them
	rrow[j.rdec.rowtime+2] = types.NullDatum
	return j.emit(lrec, ts, lrow, rrow, false)
}

// leftRow decodes a stored left row (rec's value).
func (j *fkJoinOp) leftRow(rec *kgo.Record) (types.Row, error) {
	if j.rows != nil {
		if err := j.rows.dec.Decode(rec.Value, j.rows.row); err != nil {
			return nil, err
		}
		return j.rows.row, nil
	}
	if _, err := j.ldec.decode(rec); err != nil {
		return nil, err
	}
	row := j.ldec.row
	row[j.ldec.rowtime+2] = types.NullDatum // the store keeps no offset
	return row, nil
}

// leftKey decodes a left row's key columns from rec's key (the others
// NULL): a deleted row's.
func (j *fkJoinOp) leftKey(rec *kgo.Record) (types.Row, error) {
	if j.rows != nil {
		row := j.rows.row
		for i := range row {
			row[i] = types.NullDatum
		}
		return row, j.rows.key.Decode(rec.Key, row)
	}
	if _, err := j.ldec.decodeKey(rec); err != nil {
		return nil, err
	}
	return j.ldec.row, nil
}

// leftRowChange keeps a change of the join on the left in the op's
// store and returns it as a table's change: the key's previous row as
// the old row, and a record whose value is the new row as stored (none
// for a deletion); nil for the deletion of a key the store does not
// hold.
func (j *fkJoinOp) leftRowChange(c *Change) (*Change, error) {
	lr := j.rows
	r := c.Record
	prev, err := j.store.ov.Get(r.Key)
	if err != nil {
		return nil, fatal(err)
	}
	out := &lr.change
	*out = Change{Timestamp: c.Timestamp, New: c.New, Record: &lr.rec}
	if len(prev) >= tsLen {
		if err := lr.dec.Decode(prev[tsLen:], lr.old); err != nil {
			return nil, fmt.Errorf("%s: the stored row: %w", j.name, err)
		}
		out.Old = lr.old
	}
	lr.rec = kgo.Record{Key: r.Key, Partition: r.Partition, Offset: r.Offset, Timestamp: time.UnixMilli(c.Timestamp)}
	if c.New == nil {
		if out.Old == nil {
			return nil, nil
		}
		if err := j.store.ov.Delete(r.Key); err != nil {
			return nil, fatal(err)
		}
		j.leftChangelog(r.Key, nil, c.Timestamp)
		return out, nil
	}
	lr.val = binary.BigEndian.AppendUint64(lr.val[:0], uint64(c.Timestamp))
	if lr.val, err = lr.enc.Encode(lr.val, c.New); err != nil {
		return nil, fmt.Errorf("%s: %w", j.name, err)
	}
	if err := j.store.ov.Put(r.Key, lr.val); err != nil {
		return nil, fatal(err)
	}
	j.leftChangelog(r.Key, lr.val, c.Timestamp)
	lr.rec.Value = lr.val[tsLen:]
	return out, nil
}

// leftChangelog writes a stored left row (nil: its deletion) to the
// store's changelog, in the task's partition.
func (j *fkJoinOp) leftChangelog(key, val []byte, ts int64) {
	storeChangelog(j.out, j.store, key, val, ts)
}

// storeChangelog writes key and value (nil: the key's deletion) to st's
// changelog, in the task's partition, and remembers it as st's last.
func storeChangelog(o *outbox, st *taskStore, key, val []byte, ts int64) {
	rec := o.record()
	start := len(o.arena)
	o.arena = append(o.arena, key...)
	keyEnd := len(o.arena)
	o.arena = append(o.arena, val...)
	a := o.arena
	rec.Key = a[start:keyEnd:keyEnd]
	if val != nil {
		rec.Value = a[keyEnd:len(a):len(a)]
	}
	rec.Topic = st.changelog
	rec.Partition = st.partition
	rec.Timestamp = time.UnixMilli(ts)
	st.last = rec
	o.produce(rec)
}

// emit sends the joined row of l and r (nil: NULLs), as the row's new
// value or with del as its deletion, for the left record rec (its key is
// the joined row's).
func (j *fkJoinOp) emit(rec *kgo.Record, ts int64, l, r types.Row, del bool) error {
	for i := 0; i < j.nLeft; i++ {
		j.copies[i].set(&j.row[i], &l[i])
	}
	for i := 0; i < j.nRight; i++ {
		if r == nil {
			j.row[j.nLeft+i] = types.NullDatum
		} else {
			j.copies[j.nLeft+i].set(&j.row[j.nLeft+i], &r[i])
		}
	}
	out := &j.change
	*out = Change{Timestamp: ts, Record: rec}
	if del {
		out.Old = j.row
	} else {
		out.New = j.row
	}
	if j.result != nil {
		// The key's previous joined row is the change's old row; a
		// deletion of a key that has none still passes with the left
		// row (a sink writes its tombstone, as ksqlDB does).
		old, skipped, err := j.result.swap(j.out, rec.Key, out.New, ts, j.fails)
		if err != nil {
			return fmt.Errorf("%s: %w", j.name, err)
		}
		if skipped {
			return nil
		}
		if old != nil {
			out.Old = old
		}
	}
	return j.next.Process(out)
}

// fkSubscriptionsOp is the right table's side of a foreign-key join
// (physical.ForeignKeySubscriptions): input 0 takes subscriptions, input
// 1 the right table's changes; both answer on the response topic.
type fkSubscriptionsOp struct {
	name   string
	subs   *taskStore
	right  *taskStore
	topic  string
	out    *outbox
	key    []byte // a subscription's store key
	val    []byte
	end    []byte
	inputs [2]Processor
	// index is set when the subscriptions are ordered by a left column
	// (physical.FKIndex): registrations are version 1, and a change of
	// the right's row answers only those the filter may pass.
	index *physical.FKIndex
	start []byte
	// onChange drops a change that leaves the right's row as it was
	// (physical.ForeignKeySubscriptions.EmitOnChange).
	onChange bool
	// flips answers a change from one row to another only where the
	// index's conjunct's outcome changes (FlipsOnly).
	flips bool
}

type fkSubscriptionsInput struct {
	s    *fkSubscriptionsOp
	side int
}

func (in fkSubscriptionsInput) Process(c *Change) error {
	if in.side == 0 {
		return in.s.register(c.Record)
	}
	return in.s.rightChange(c)
}

func (s *fkSubscriptionsOp) input(i int) Processor { return s.inputs[i] }

// Process is not called: each input has its own processor (input).
func (s *fkSubscriptionsOp) Process(*Change) error {
	return fmt.Errorf("%s: a foreign-key join's subscriptions are fed through their inputs", s.name)
}

func newFKSubscriptions(name string, op *physical.ForeignKeySubscriptions, subs, right *taskStore, out *outbox) *fkSubscriptionsOp {
	s := &fkSubscriptionsOp{name: name, subs: subs, right: right, topic: op.Response, out: out, index: op.Index,
		onChange: op.EmitOnChange, flips: op.FlipsOnly && op.Index != nil}
	s.inputs = [2]Processor{fkSubscriptionsInput{s, 0}, fkSubscriptionsInput{s, 1}}
	return s
}

// subKey lays out the store key of fk's subscriptions (pk nil: their
// prefix) in s.key.
func (s *fkSubscriptionsOp) subKey(fk, pk []byte) []byte {
	s.key = binary.BigEndian.AppendUint32(s.key[:0], uint32(len(fk)))
	s.key = append(s.key, fk...)
	s.key = append(s.key, pk...)
	return s.key
}

// subOrdKey lays out the store key of an ordered subscription in s.key.
func (s *fkSubscriptionsOp) subOrdKey(fk, ord, pk []byte) []byte {
	s.key = binary.BigEndian.AppendUint32(s.key[:0], uint32(len(fk)))
	s.key = append(s.key, fk...)
	s.key = append(s.key, ord...)
	s.key = append(s.key, pk...)
	return s.key
}

// register applies a subscription and answers it as its instruction
// says.
func (s *fkSubscriptionsOp) register(r *kgo.Record) error {
	v := r.Value
	if s.index != nil {
		return s.registerOrdered(r)
	}
	if r.Key == nil || len(v) < fkRegHead || v[0] != fkVersion {
		return fmt.Errorf("%w: %s: a malformed subscription", types.ErrBadRecord, s.name)
	}
	instr, sub, pk := v[1], v[2:fkRegHead], v[fkRegHead:]
	part := int32(binary.BigEndian.Uint32(v[fkRegHead-4:]))
	key := s.subKey(r.Key, pk)
	return s.apply(r, instr, key, sub, pk, part)
}

// registerOrdered applies a version 1 registration: the subscription
// is keyed by its order too, and replaces the one of its previous order.
func (s *fkSubscriptionsOp) registerOrdered(r *kgo.Record) error {
	v := r.Value
	if r.Key == nil || len(v) < fkRegHead1+2 || v[0] != fkVersion1 {
		return fmt.Errorf("%w: %s: a malformed subscription", types.ErrBadRecord, s.name)
	}
	instr, sub := v[1], v[2:fkRegHead]
	part := int32(binary.BigEndian.Uint32(v[fkRegHead-4:]))
	rest := v[fkRegHead1:]
	n := int(rest[0])
	if n == 0 || len(rest) < 1+n+1 || fkOrdLen(rest[1:1+n]) != n {
		return fmt.Errorf("%w: %s: a malformed subscription", types.ErrBadRecord, s.name)
	}
	ord := rest[1 : 1+n]
	rest = rest[1+n:]
	m := int(rest[0])
	if len(rest) < 1+m || (m > 0 && fkOrdLen(rest[1:1+m]) != m) {
		return fmt.Errorf("%w: %s: a malformed subscription", types.ErrBadRecord, s.name)
	}
	prev, pk := rest[1:1+m], rest[1+m:]
	ts := r.Timestamp.UnixMilli()
	if m > 0 && !bytes.Equal(prev, ord) && instr != physical.FKDeleteNoPropagate && instr != physical.FKDeleteAndPropagate {
		key := s.subOrdKey(r.Key, prev, pk)
		if err := s.subs.ov.Delete(key); err != nil {
			return fatal(err)
		}
		s.changelog(key, nil, ts)
	}
	key := s.subOrdKey(r.Key, ord, pk)
	return s.apply(r, instr, key, sub, pk, part)
}

// apply carries out a registration's instruction on the subscription
// key (its store key) and answers it as the instruction says.
func (s *fkSubscriptionsOp) apply(r *kgo.Record, instr byte, key, sub, pk []byte, part int32) error {
	ts := r.Timestamp.UnixMilli()
	switch instr {
	case physical.FKDeleteNoPropagate, physical.FKDeleteAndPropagate:
		if err := s.subs.ov.Delete(key); err != nil {
			return fatal(err)
		}
		s.changelog(key, nil, ts)
		if instr == physical.FKDeleteAndPropagate {
			s.respond(pk, part, sub, r.Key, nil, ts)
		}
		return nil
	case physical.FKPropagateNullIfNoValue, physical.FKPropagateOnlyIfValue:
		if err := s.subs.ov.Put(key, sub); err != nil {
			return fatal(err)
		}
		s.changelog(key, sub, ts)
		rv, err := s.right.ov.Get(r.Key)
		if err != nil {
			return fatal(err)
		}
		if len(rv) < tsLen {
			rv = nil
		}
		if rv != nil || instr == physical.FKPropagateNullIfNoValue {
			s.respond(pk, part, sub, r.Key, rv, ts)
		}
		return nil
	}
	return fmt.Errorf("%w: %s: subscription instruction %d", types.ErrBadRecord, s.name, instr)
}

// rightChange answers every subscription of the changed key with its
// new row (none for a deletion).
func (s *fkSubscriptionsOp) rightChange(c *Change) error {
	r := c.Record
	if s.onChange && c.Old != nil && c.New != nil {
		// The store holds the key's previous record until the change
		// has passed (tableChangesOp).
		prev, err := s.right.ov.Get(r.Key)
		if err != nil {
			return fatal(err)
		}
		if len(prev) >= tsLen && int64(binary.BigEndian.Uint64(prev)) <= r.Timestamp.UnixMilli() && bytes.Equal(prev[tsLen:], r.Value) {
			return nil
		}
	}
	var rv []byte
	if c.New != nil {
		s.val = binary.BigEndian.AppendUint64(s.val[:0], uint64(r.Timestamp.UnixMilli()))
		s.val = append(s.val, r.Value...)
		rv = s.val
	}
	prefix := s.subKey(r.Key, nil)
	start, end := prefix, state.PrefixEnd(append(s.end[:0], prefix...))
	if s.index != nil {
		var ok bool
		if start, end, ok = s.ordRange(prefix, c); !ok {
			return nil // the filter passes no subscriber's row, before or after
		}
	}
	it, err := s.subs.ov.Range(start, end)
	if err != nil {
		return fatal(err)
	}
	defer it.Close()
	for it.Next() {
		k, sub := it.Key(), it.Value()
		if len(sub) != fkSubLen || len(k) < len(prefix) {
			continue
		}
		pk := k[len(prefix):]
		if s.index != nil {
			n := fkOrdLen(pk)
			if n == 0 {
				continue
			}
			pk = pk[n:]
		}
		part := int32(binary.BigEndian.Uint32(sub[1+fkHashLen:]))
		s.respond(pk, part, sub, r.Key, rv, c.Timestamp)
	}
	return fatal(it.Err())
}

// ordRange returns the range of the ordered subscriptions of prefix (a
// foreign key's) for which the index's conjunct holds with the right's
// old row or its new one (c's); ok is false when it holds with neither
// for any (no row, or a NULL value). A subscriber outside it has no
// joined row the filter passes, before or after: nothing to answer
// (the conjunct fails with a NULL order too, which sorts first).
//
// With flips (physical.ForeignKeySubscriptions.FlipsOnly), a change
// from one row to another answers only the subscribers for which the
// conjunct holds with one and not the other: those between the smaller
// value lo and the larger hi, [lo, hi) for >= and <, (lo, hi] for > and
// <=, both for =; none when the values are equal.
func (s *fkSubscriptionsOp) ordRange(prefix []byte, c *Change) (start, end []byte, ok bool) {
	var lo, hi int64
	n := 0
	for _, row := range [2]types.Row{c.Old, c.New} {
		if row == nil || s.index.Right >= len(row) || row[s.index.Right].Null {
			continue
		}
		x := row[s.index.Right].I
		if n == 0 || x < lo {
			lo = x
		}
		if n == 0 || x > hi {
			hi = x
		}
		n++
	}
	if n == 0 {
		return nil, nil, false
	}
	s.start = append(s.start[:0], prefix...)
	s.end = append(s.end[:0], prefix...)
	if s.flips && n == 2 {
		if lo == hi {
			return nil, nil, false
		}
		switch s.index.Op {
		case expr.OpGE, expr.OpLT:
			s.start = fkOrd(s.start, types.Datum{I: lo})
			s.end = fkOrd(s.end, types.Datum{I: hi})
		case expr.OpGT, expr.OpLE:
			s.start = fkOrd(s.start, types.Datum{I: lo + 1}) // lo < hi
			s.end = state.PrefixEnd(fkOrd(s.end, types.Datum{I: hi}))
		default: // =
			s.start = fkOrd(s.start, types.Datum{I: lo})
			s.end = state.PrefixEnd(fkOrd(s.end, types.Datum{I: hi}))
		}
		return s.start, s.end, true
	}
	switch s.index.Op {
	case expr.OpGE, expr.OpGT:
		// left >= right: the subscribers from the smaller value on.
		s.start = fkOrd(s.start, types.Datum{I: lo})
		s.end = state.PrefixEnd(s.end)
	case expr.OpLE, expr.OpLT:
		s.start = append(s.start, 1)
		s.end = state.PrefixEnd(fkOrd(s.end, types.Datum{I: hi}))
	default: // =
		s.start = fkOrd(s.start, types.Datum{I: lo})
		s.end = state.PrefixEnd(fkOrd(s.end, types.Datum{I: hi}))
	}
	return s.start, s.end, true
}

// respond writes a response to the subscription sub of primary key pk
// in partition part: the right row rv (its timestamp, then its value;
// nil for none) of foreign key fk.
func (s *fkSubscriptionsOp) respond(pk []byte, part int32, sub, fk, rv []byte, ts int64) {
	o := s.out
	rec := o.record()
	start := len(o.arena)
	o.arena = append(o.arena, pk...)
	keyEnd := len(o.arena)
	o.arena = append(o.arena, fkVersion)
	o.arena = append(o.arena, sub[:1+fkHashLen]...)
	if rv == nil {
		o.arena = append(o.arena, 0)
	} else {
		o.arena = append(o.arena, 1)
		o.arena = binary.BigEndian.AppendUint32(o.arena, uint32(len(fk)))
		o.arena = append(o.arena, fk...)
		o.arena = append(o.arena, rv...)
	}
	a := o.arena
	rec.Key = a[start:keyEnd:keyEnd]
	rec.Value = a[keyEnd:len(a):len(a)]
	rec.Topic = s.topic
	rec.Partition = part
	rec.Timestamp = time.UnixMilli(ts)
	o.produce(rec)
}

// changelog writes a subscription (nil: its removal) to the store's
// changelog, in the task's partition.
func (s *fkSubscriptionsOp) changelog(key, sub []byte, ts int64) {
	storeChangelog(s.out, s.subs, key, sub, ts)
}

// fkEncoder returns the encoder of a join's foreign keys: the right
// table's key format and options, so that a foreign key is the record key
// of the right's row (and goes to its partition); for a right table in a
// schema-registry format that names no key schema, its subject's latest
// schema when it fits (latestKeyEncoder).
func fkEncoder(op *physical.ForeignKeyJoin) (types.Encoder, error) {
	return latestKeyEncoder(op.RightKeyFormat, op.RightKeySchema, []int{0}, op.RightKeyOpts, op.RightSource.KeyOptions.Subject)
}
