package exec

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

var (
	_ multiInput = (*streamJoinOp)(nil)
	_ flusher    = (*streamJoinOp)(nil)
	_ aborter    = (*streamJoinOp)(nil)
	_ closer     = (*streamJoinOp)(nil)
)

// streamJoinOp joins two streams on their keys within a window, as Kafka
// Streams' KStreamKStreamJoin does (with KIP-633's outer join buffer when
// the window has a grace period). A row of side s at time t:
//
//  1. goes into s's window store, unless the store's own stream time has
//     left it behind by more than the retention (before + after + grace);
//  2. advances the join's stream time; when it is the newest row, the
//     buffered rows without a match whose windows have closed are emitted
//     (the other side's columns NULL), oldest first;
//  3. joins every row of the other side's store with its key from
//     t - before to t + after (mirrored for the right side), emitting
//     each pair at the later of the two times, and takes the matched
//     row out of the buffer;
//  4. with no match, on a side whose rows must all show (LEFT: the left,
//     RIGHT: the right, FULL: both), is emitted at once with NULLs when
//     the window is legacy (no GRACE PERIOD) or already closed, and is
//     buffered otherwise.
//
// Window store keys are [segment start][key length][key][time][offset]
// (times with their sign bit flipped, so they sort), so that a key's rows
// in a time range are one range scan per segment and retention drops
// whole segments; buffer keys are [time][side: 1 left, 0 right][key
// length][key][offset]. Values are the input record's value bytes,
// decoded again with the side's decoder. Every write goes to the store's
// changelog in the same transaction.
//
// In steady state a row allocates nothing: keys are built in reused
// buffers, range scans reuse one Seeker per store (state.Seeker: one
// RocksDB iterator per store generation), stored rows decode into the
// side's reused row, and changelog records come from the outbox's pool
// (TestSteadyStateAllocations).
type streamJoinOp struct {
	name                 string
	before, after, grace int64
	retention, segment   int64
	legacy               bool
	outer                [2]bool
	sides                [2]streamJoinSide
	buffer               *taskStore // nil: no buffer (INNER or legacy)
	bufferLog            string
	out                  *outbox
	// streamTime is the largest time either side has seen; minBuffered a
	// lower bound of the buffer's oldest time (math.MinInt64: unknown).
	streamTime, minBuffered int64
	nLeft, nRight           int
	leftKey, synth          int
	// winCol is, for windowed sides (a join of windowed streams), the
	// position of WINDOWSTART (WINDOWEND follows) in each side's rows;
	// -1: not windowed. The joined rows have the window of their keys.
	winCol [2]int
	// keyWindow, for windowed rows keyed by value (a join of
	// repartitioned windowed streams), is appended to each stored key
	// from the row's window columns: rows meet when their key values and
	// windows do. NoWindow: keys are as they come.
	keyWindow  types.WindowType
	copies     []datumCopy
	row        types.Row
	change     Change
	next       Processor
	inputs     [2]Processor
	bufferScan storeScan
	// scratch
	skey, from, to, bkey []byte
	rec                  kgo.Record
	dels                 []byte // emitClosed's keys to delete, each after its 4-byte length
}

// storeScan is a reused range scan of a task store: a Seeker of its
// overlay, made again when the store was reopened (a wipe before a
// restore replaces the overlay).
type storeScan struct {
	ov *state.Overlay
	sk state.Seeker
}

// seek points the scan at [from, to) of st's overlay.
func (sc *storeScan) seek(st *taskStore, from, to []byte) (state.Seeker, error) {
	if sc.ov != st.ov || sc.sk == nil {
		sc.close()
		sk, err := st.ov.NewSeeker()
		if err != nil {
			return nil, err
		}
		sc.ov, sc.sk = st.ov, sk
		// The join reads its stores by range only: a cache of committed
		// values for Get would cost a map entry and a copy of every
		// row at each commit and never serve a read.
		st.ov.SetCacheEntries(0)
	}
	if err := sc.sk.Seek(from, to); err != nil {
		return nil, err
	}
	return sc.sk, nil
}

func (sc *storeScan) close() {
	if sc.sk != nil {
		sc.sk.Close() // its store may be closed already: nothing to report
		sc.ov, sc.sk = nil, nil
	}
}

// unboundedReach is a regular join's (planner.JoinWindow.Unbounded)
// before and after: past every record time (about 36 million years),
// yet t ± 3 of them does not overflow.
const unboundedReach = int64(1) << 60

// errNullJoinKey marks a stream–stream join's row whose key is NULL: it
// joins nothing, and is skipped and logged.
var errNullJoinKey = fmt.Errorf("%w: a stream-stream join's row needs a join key; this one is NULL", types.ErrBadRecord)

// streamJoinSide is one stream of a stream join.
type streamJoinSide struct {
	store     *taskStore
	changelog string
	dec       *recordDecoder // the side's stored rows
	// enc, when set, encodes the columns the query reads of the side's
	// rows as the stores keep them (physical.StreamStreamJoin.CompactRows);
	// nil: the stores keep the input record's value.
	enc types.Encoder
	val []byte
	key int // the key column in the side's rows
	// keyEnc, for a join by key value (StreamStreamJoin.KeyByValue),
	// encodes the key column as the stores key rows (JSON, unwrapped),
	// into keyBuf; nil: the stores key rows by their record keys.
	keyEnc types.Encoder
	keyBuf []byte
	// streamTime is the largest time put into the side's store (Kafka
	// Streams' window stores each observe their own); expired the
	// segment start below which the store was cut.
	streamTime, expired int64
	scan                storeScan
}

type streamJoinInput struct {
	j    *streamJoinOp
	side int
}

func (in streamJoinInput) Process(c *Change) error { return in.j.process(in.side, c) }

func (j *streamJoinOp) input(i int) Processor { return j.inputs[i] }

func newStreamJoin(name string, op *physical.StreamStreamJoin, sources [2]*physical.Source, stores [3]*taskStore, out *outbox, next Processor) (*streamJoinOp, error) {
	w := op.Window
	j := &streamJoinOp{name: name, before: w.BeforeMs, after: w.AfterMs, grace: w.GraceMs, retention: w.RetentionMs(), legacy: w.Legacy,
		buffer: stores[2], out: out, streamTime: math.MinInt64, minBuffered: math.MinInt64,
		nLeft: op.LeftStore.Schema.Len(), nRight: op.RightStore.Schema.Len(), leftKey: op.LeftKey, synth: -1,
		row: make(types.Row, op.Out.Len()), next: next, winCol: [2]int{-1, -1}}
	if w.Unbounded {
		// A regular join: its windows reach every time there is, its
		// rows never expire, and a key's rows are one segment.
		j.before, j.after, j.retention = unboundedReach, unboundedReach, 3*unboundedReach
	}
	j.segment = max(j.retention/2, 60_000)
	switch op.Type {
	case physical.LeftJoin:
		j.outer = [2]bool{true, false}
	case physical.RightJoin:
		j.outer = [2]bool{false, true}
	case physical.FullJoin:
		j.outer = [2]bool{true, true}
		j.synth = op.Out.Len() - 1
	}
	if op.OuterStore != nil {
		j.bufferLog = op.OuterStore.Changelog
	}
	specs := [2]*physical.Store{op.LeftStore, op.RightStore}
	for i := range j.sides {
		dec, err := newRecordDecoder(name, sources[i])
		if err != nil {
			return nil, err
		}
		j.sides[i] = streamJoinSide{store: stores[i], changelog: specs[i].Changelog, dec: dec, key: op.LeftKey,
			streamTime: math.MinInt64, expired: math.MinInt64}
		if op.CompactRows {
			// The stores keep the value columns the query reads, in
			// JSON: the stored rows decode from those alone.
			src := sources[i]
			var cols []int
			for i, c := range src.Out.Columns {
				value := !c.Key && !c.Pseudo && !c.Window && !c.Header
				if (value || c.Header && op.StoreHeaders) && (src.Read == nil || src.Read[i]) {
					cols = append(cols, i)
				}
			}
			if j.sides[i].enc, err = types.NewEncoder(types.FormatJSON, src.Out, cols); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if dec.value, err = types.NewDecoderRead(types.FormatJSON, src.Out, cols, nil, types.FormatOptions{}); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			if op.StoreHeaders {
				// They come back with the value columns; a stored row's
				// record has no headers.
				dec.headerCols, dec.headerKeys = nil, nil
			}
		}
		j.inputs[i] = streamJoinInput{j: j, side: i}
		if sources[i].WindowType != types.NoWindow {
			j.winCol[i] = sources[i].Out.WindowIndex()
		} else if op.WindowType != types.NoWindow {
			// Repartitioned windowed rows: the bounds are value columns.
			if j.winCol[i] = sources[i].Out.Index(types.WindowStart); j.winCol[i] < 0 || sources[i].Out.Index(types.WindowEnd) != j.winCol[i]+1 {
				return nil, fmt.Errorf("%s: windowed rows without WINDOWSTART and WINDOWEND", name)
			}
		}
	}
	j.sides[1].key = op.RightKey
	if op.KeyByValue {
		j.keyWindow = op.WindowType
		unwrap := false
		for i := range j.sides {
			src := sources[i].Out
			var err error
			if j.sides[i].keyEnc, err = types.NewEncoderOpts(types.FormatJSON, src, []int{j.sides[i].key}, types.FormatOptions{WrapSingleValue: &unwrap}); err != nil {
				return nil, fmt.Errorf("%s key: %w", name, err)
			}
		}
	}
	for _, c := range op.Out.Columns {
		j.copies = append(j.copies, copyFor(c.Type))
	}
	return j, nil
}

// flip maps a time to 8 bytes that sort as the times do.
func flip(ts int64) uint64 { return uint64(ts) ^ (1 << 63) }

func unflip(b []byte) int64 { return int64(binary.BigEndian.Uint64(b) ^ (1 << 63)) }

// floorTo rounds ts down to a multiple of d.
func floorTo(ts, d int64) int64 { return floorDiv(ts, d) * d }

// windowKey appends a side store's key prefix: segment, key length, key.
func (j *streamJoinOp) windowKey(dst []byte, segStart int64, key []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, flip(segStart))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(key)))
	return append(dst, key...)
}

func (j *streamJoinOp) process(s int, c *Change) error {
	row := c.New
	if row == nil {
		return nil
	}
	r := c.Record
	if row[j.sides[s].key].Null || r.Key == nil {
		// Kafka Streams drops it too; it is logged as skipped.
		return errNullJoinKey
	}
	key := r.Key
	if enc := j.sides[s].keyEnc; enc != nil {
		var err error
		if j.sides[s].keyBuf, err = enc.Encode(j.sides[s].keyBuf[:0], row); err != nil {
			return &evalError{node: j.name, err: err}
		}
		if j.keyWindow != types.NoWindow {
			w := j.winCol[s]
			j.sides[s].keyBuf = j.keyWindow.AppendWindowKey(j.sides[s].keyBuf, row[w].I, row[w+1].I)
		}
		key = j.sides[s].keyBuf
	}
	ts := c.Timestamp
	before, after := j.before, j.after
	if s == 1 {
		before, after = after, before
	}
	from, to := max(0, ts-before), max(0, ts+after)
	// 1. The row into its side's store, unless it has expired there.
	side := &j.sides[s]
	side.streamTime = max(side.streamTime, ts)
	value := r.Value
	if side.enc != nil {
		var err error
		if side.val, err = side.enc.Encode(side.val[:0], row); err != nil {
			return &evalError{node: j.name, err: err}
		}
		value = side.val
	}
	if ts > side.streamTime-j.retention {
		j.skey = j.windowKey(j.skey[:0], floorTo(ts, j.segment), key)
		j.skey = binary.BigEndian.AppendUint64(j.skey, flip(ts))
		j.skey = binary.BigEndian.AppendUint64(j.skey, uint64(r.Offset))
		if err := j.put(side.store, side.changelog, j.skey, value, ts); err != nil {
			return err
		}
	}
	// 2. Stream time; the closed windows of buffered rows.
	j.streamTime = max(j.streamTime, ts)
	if ts == j.streamTime && j.buffer != nil {
		if err := j.emitClosed(c.Record); err != nil {
			return err
		}
	}
	// 3. The other side's rows of the key in the window.
	o := 1 - s
	other := &j.sides[o]
	matched := false
	live := int64(math.MinInt64) // rows at or below have expired
	if other.streamTime != math.MinInt64 {
		live = other.streamTime - j.retention
	}
	for seg := floorTo(from, j.segment); seg <= to; seg += j.segment {
		j.from = j.windowKey(j.from[:0], seg, key)
		j.to = append(j.to[:0], j.from...)
		j.from = binary.BigEndian.AppendUint64(j.from, flip(from))
		j.to = binary.BigEndian.AppendUint64(j.to, flip(to)+1)
		it, err := other.scan.seek(other.store, j.from, j.to)
		if err != nil {
			return fatal(err)
		}
		for it.Next() {
			k := it.Key()
			n := len(k)
			if n < 16 {
				continue
			}
			ots, off := unflip(k[n-16:n-8]), int64(binary.BigEndian.Uint64(k[n-8:]))
			if ots <= live {
				continue
			}
			matched = true
			orow, err := j.decodeStored(o, key, it.Value(), ots, off, r.Partition)
			if err != nil {
				return err
			}
			if j.buffer != nil && j.outer[o] {
				j.bkey = j.bufferKey(j.bkey[:0], ots, o, key, off)
				if err := j.del(j.buffer, j.bufferLog, j.bkey, ts); err != nil {
					return err
				}
			}
			l, rr := row, orow
			if s == 1 {
				l, rr = orow, row
			}
			if err := j.emit(l, rr, &row[j.sides[s].key], max(ts, ots), r); err != nil {
				return err
			}
		}
		if err := it.Err(); err != nil {
			return fatal(err)
		}
	}
	// 4. No match: at once, or into the buffer until the window closes.
	if matched || !j.outer[s] {
		return nil
	}
	if j.buffer == nil || to < j.streamTime {
		if s == 0 {
			return j.emit(row, nil, &row[j.sides[s].key], ts, r)
		}
		return j.emit(nil, row, &row[j.sides[s].key], ts, r)
	}
	j.bkey = j.bufferKey(j.bkey[:0], ts, s, key, r.Offset)
	if j.minBuffered != math.MinInt64 {
		j.minBuffered = min(j.minBuffered, ts)
	}
	return j.put(j.buffer, j.bufferLog, j.bkey, value, ts)
}

// bufferKey appends the buffer's key of side s's row.
func (j *streamJoinOp) bufferKey(dst []byte, ts int64, s int, key []byte, off int64) []byte {
	dst = binary.BigEndian.AppendUint64(dst, flip(ts))
	dst = append(dst, byte(1-s)) // left rows after right rows of one time, as Kafka Streams orders them
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	return binary.BigEndian.AppendUint64(dst, uint64(off))
}

// emitClosed emits, oldest first, the buffered rows whose windows have
// closed (time + the window's reach on their side + grace < stream
// time), and takes them out of the buffer.
func (j *streamJoinOp) emitClosed(cur *kgo.Record) error {
	reach := max(j.before, j.after)
	if j.minBuffered != math.MinInt64 && j.minBuffered+reach+j.grace >= j.streamTime {
		return nil // nothing buffered can have closed
	}
	// From the oldest time that can be buffered, not the store's first
	// key: the rows emitted before lie there as deletions, which a
	// RocksDB scan from the start would step over every time.
	var from []byte
	if j.minBuffered != math.MinInt64 {
		j.bkey = binary.BigEndian.AppendUint64(j.bkey[:0], flip(j.minBuffered))
		from = j.bkey
	}
	it, err := j.bufferScan.seek(j.buffer, from, nil)
	if err != nil {
		return fatal(err)
	}
	j.dels = j.dels[:0]
	j.minBuffered = math.MaxInt64
	var ferr error
	for it.Next() {
		k := it.Key()
		if len(k) < 21 {
			continue
		}
		ts, s := unflip(k[:8]), 1-int(k[8])
		lookback := j.after // a left row meets right rows up to after later
		if s == 1 {
			lookback = j.before
		}
		if ts+lookback+j.grace >= j.streamTime {
			j.minBuffered = ts
			break
		}
		klen := int(binary.BigEndian.Uint32(k[9:13]))
		if 13+klen+8 != len(k) {
			continue
		}
		key, off := k[13:13+klen], int64(binary.BigEndian.Uint64(k[13+klen:]))
		row, err := j.decodeStored(s, key, it.Value(), ts, off, cur.Partition)
		if err != nil {
			ferr = err
			break
		}
		if s == 0 {
			ferr = j.emit(row, nil, &row[j.sides[0].key], ts, cur)
		} else {
			ferr = j.emit(nil, row, &row[j.sides[1].key], ts, cur)
		}
		if ferr != nil {
			break
		}
		j.dels = binary.BigEndian.AppendUint32(j.dels, uint32(len(k)))
		j.dels = append(j.dels, k...)
	}
	if err := it.Err(); err != nil && ferr == nil {
		ferr = fatal(err)
	}
	if ferr != nil {
		j.minBuffered = math.MinInt64
		return ferr
	}
	for d := j.dels; len(d) >= 4; {
		n := int(binary.BigEndian.Uint32(d))
		if err := j.del(j.buffer, j.bufferLog, d[4:4+n], j.streamTime); err != nil {
			return err
		}
		d = d[4+n:]
	}
	return nil
}

// decodeStored decodes a stored row of side s. The row is valid until
// the side's next decode.
func (j *streamJoinOp) decodeStored(s int, key, value []byte, ts, off int64, partition int32) (types.Row, error) {
	rec := &j.rec
	rec.Key, rec.Value, rec.Partition, rec.Offset = key, value, partition, off
	rec.Timestamp = time.UnixMilli(ts)
	side := &j.sides[s]
	if _, err := side.dec.decode(rec); err != nil {
		return nil, fmt.Errorf("%s: a stored row: %w", j.name, err)
	}
	return side.dec.row, nil
}

// emit passes on the joined row of l and r (either nil for NULLs) with
// the join key in the left's key column (and a FULL join's synthetic
// key column).
func (j *streamJoinOp) emit(l, r types.Row, key *types.Datum, ts int64, rec *kgo.Record) error {
	out := j.row
	for i := 0; i < j.nLeft; i++ {
		if l == nil {
			out[i] = types.NullDatum
		} else {
			j.copies[i].set(&out[i], &l[i])
		}
	}
	for i := 0; i < j.nRight; i++ {
		if r == nil {
			out[j.nLeft+i] = types.NullDatum
		} else {
			j.copies[j.nLeft+i].set(&out[j.nLeft+i], &r[i])
		}
	}
	if j.synth >= 0 {
		j.copies[j.synth].set(&out[j.synth], key)
	} else if l == nil {
		j.copies[j.leftKey].set(&out[j.leftKey], key)
	}
	ch := &j.change
	ch.Old, ch.New, ch.Timestamp, ch.Record = nil, out, ts, rec
	ch.Windowed, ch.WindowStart, ch.WindowEnd = false, 0, 0
	if w := j.winCol[0]; w >= 0 {
		win := l
		if l == nil {
			win, w = r, j.winCol[1]
		}
		ch.Windowed, ch.WindowStart, ch.WindowEnd = true, win[w].I, win[w+1].I
	}
	return j.next.Process(ch)
}

// put writes key → value to st and its changelog.
func (j *streamJoinOp) put(st *taskStore, changelog string, key, value []byte, ts int64) error {
	if err := st.ov.Put(key, value); err != nil {
		return fatal(err)
	}
	j.writeChangelog(st, changelog, key, value, ts, false)
	return nil
}

// del deletes key from st and writes the deletion to its changelog.
func (j *streamJoinOp) del(st *taskStore, changelog string, key []byte, ts int64) error {
	if err := st.ov.Delete(key); err != nil {
		return fatal(err)
	}
	j.writeChangelog(st, changelog, key, nil, ts, true)
	return nil
}

func (j *streamJoinOp) writeChangelog(st *taskStore, changelog string, key, value []byte, ts int64, deleted bool) {
	if j.out == nil {
		return
	}
	rec := j.out.record()
	start := len(j.out.arena)
	j.out.arena = append(j.out.arena, key...)
	keyEnd := len(j.out.arena)
	j.out.arena = append(j.out.arena, value...)
	a := j.out.arena
	rec.Key = a[start:keyEnd:keyEnd]
	if !deleted {
		rec.Value = a[keyEnd:len(a):len(a)]
		if rec.Value == nil {
			rec.Value = []byte{}
		}
	}
	rec.Topic = changelog
	rec.Partition = st.partition
	rec.Timestamp = time.UnixMilli(max(ts, 0))
	st.last = rec
	j.out.produce(rec)
}

// Flush drops the segments of each side's store that retention has
// passed, once the transaction commits.
func (j *streamJoinOp) Flush() error {
	for i := range j.sides {
		side := &j.sides[i]
		if side.streamTime == math.MinInt64 {
			continue
		}
		cut := floorTo(side.streamTime-j.retention, j.segment)
		if cut > side.expired {
			side.store.expireBelow = binary.BigEndian.AppendUint64(side.store.expireBelow[:0], flip(cut))
			side.expired = cut
		}
	}
	return nil
}

// Abort forgets the times the aborted transaction's rows set: they are
// seen again as the rows are processed again.
func (j *streamJoinOp) Abort() {
	j.streamTime, j.minBuffered = math.MinInt64, math.MinInt64
	for i := range j.sides {
		j.sides[i].streamTime, j.sides[i].expired = math.MinInt64, math.MinInt64
	}
}

// Close implements closer: the store scans go.
func (j *streamJoinOp) Close() error {
	for i := range j.sides {
		j.sides[i].scan.close()
	}
	j.bufferScan.close()
	return nil
}

// Process is not called: each input has its own processor (input).
func (j *streamJoinOp) Process(*Change) error {
	return fmt.Errorf("%s: a stream join is fed through its inputs", j.name)
}
