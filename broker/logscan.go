package broker

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The start-up log scan runs before kfake loads the data directory. It
// reads every segment once, batch by batch, and does two things kfake does
// not (see doc.go):
//
//   - it cuts a torn or corrupted segment tail back to the last valid batch,
//     saying how much it cut, and does the same for kfake's append logs
//     (pids.log, groups.log), whose torn tails kfake skips on reading but
//     leaves in place, so that its next appends would land behind them
//     and be lost at the start after;
//   - after a crash (no clean-shutdown marker), it rebuilds every producer
//     ID's sequence state per partition from the batches in the log, as
//     Kafka rebuilds its producer state from the log tail, and writes it
//     where kfake reloads it (seq_windows.json), so that a retried batch is
//     answered as a duplicate and a gap as out of order, as before the
//     crash.
//
// The files it reads and writes are kfake's (segment files are Kafka's
// RecordBatch wire format; seq_windows.json and the framed append logs are
// kfake's persistence format, version 1). TestKfakeFormatsUnchanged pins
// them against a clean shutdown, so a kfake upgrade that changes them
// fails a test instead of silently losing producer state.

// cleanMarkerFile exists in the data directory while the broker is stopped
// after a clean Close; a start removes it before kfake loads anything.
const cleanMarkerFile = "clean-shutdown"

// kfake's file names and formats (persist.go, version 1).
const (
	kfakePartitionsDir  = "partitions"
	kfakeSeqWindowsFile = "seq_windows.json"
	kfakePIDsLog        = "pids.log"
	kfakeGroupsLog      = "groups.log"
	kfakeIndexEntry     = 15 // bytes per .idx entry
	kfakeEntryHeader    = 10 // framed log entry: length(4) crc(4) version(2)
	kfakeVersion        = 1
	seqWindowSize       = 5 // batches per producer and partition, as Kafka
	batchHeaderSize     = 61
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// scanReport is what the start-up log scan found and did.
type scanReport struct {
	Clean     bool // the previous run ended with a clean Close
	Segments  int
	Batches   int64
	Cut       []logCut // torn tails cut back
	Producers int      // (producer ID, partition) sequence windows restored
	Completed int      // commit markers written for interrupted commits
	// IndexEntries counts the index entries written for batches a crash
	// left without one.
	IndexEntries int
	Elapsed      time.Duration
}

// logCut is one file cut back to its last valid entry.
type logCut struct {
	File    string // relative to the data directory
	Kept    int64  // valid bytes kept
	Cut     int64  // bytes removed
	Batches int64  // valid batches (or log entries) kept
}

// seqEntry is one batch in a producer's window: its first sequence, the
// sequence after its last record, and its base offset.
type seqEntry struct {
	first, next int32
	offset      int64
}

// seqWindow is a producer's state on one partition: its last epoch and the
// last (up to five) batches of that epoch, oldest first.
type seqWindow struct {
	epoch   int16
	entries []seqEntry
	txnal   bool
	// unsure is set when the producer's latest batch is followed by a
	// gap in offsets: compaction removed records after it, perhaps its
	// own last ones, so its last sequence is not known.
	unsure bool
}

func (w *seqWindow) push(epoch int16, e seqEntry) {
	w.unsure = false
	if epoch != w.epoch {
		w.epoch, w.entries = epoch, w.entries[:0]
	}
	if len(w.entries) == seqWindowSize {
		copy(w.entries, w.entries[1:])
		w.entries = w.entries[:seqWindowSize-1]
	}
	w.entries = append(w.entries, e)
}

type producerPartition struct {
	pid       int64
	topic     string
	partition int32
}

// scanDataDir runs the start-up log scan on dir (see above). A data
// directory that does not exist yet is not an error. journal is the
// commit journal of the last run (journal.go): a transaction it says asked
// to commit and that has no marker on a partition gets its commit marker
// there.
func scanDataDir(dir string, restoreProducers bool, journal []journalEntry, log *slog.Logger) (*scanReport, error) {
	start := time.Now()
	sc := &logScanner{dir: dir, log: log, rep: &scanReport{}, windows: map[producerPartition]*seqWindow{}, commit: map[pidEpoch]bool{}}
	rep := sc.rep
	if _, err := os.Stat(filepath.Join(dir, cleanMarkerFile)); err == nil {
		rep.Clean = true
	}
	sc.commit = foldJournal(journal).committing

	pdirs, err := os.ReadDir(filepath.Join(dir, kfakePartitionsDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, pdir := range pdirs {
		if !pdir.IsDir() {
			continue
		}
		topic, part, ok := parsePartitionDir(pdir.Name())
		if !ok {
			continue
		}
		rel := filepath.Join(kfakePartitionsDir, pdir.Name())
		if err := sc.partition(rel, topic, part); err != nil {
			return nil, fmt.Errorf("%s: %w", rel, err)
		}
	}

	pids, err := repairFramedLog(dir, kfakePIDsLog, rep, log)
	if err != nil {
		return nil, err
	}
	if _, err := repairFramedLog(dir, kfakeGroupsLog, rep, log); err != nil {
		return nil, err
	}

	// After a crash kfake's saved producer state is stale; after a cut it
	// may name batches that are gone. The log is the truth then.
	if restoreProducers && (!rep.Clean || len(rep.Cut) > 0) {
		n, err := writeSeqWindows(dir, sc.windows, pids)
		if err != nil {
			return nil, fmt.Errorf("restoring producer state: %w", err)
		}
		rep.Producers = n
	}
	// From here on the run is not clean until Close says so.
	if err := os.Remove(filepath.Join(dir, cleanMarkerFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

type logScanner struct {
	dir     string
	log     *slog.Logger
	rep     *scanReport
	windows map[producerPartition]*seqWindow
	commit  map[pidEpoch]bool // transactions the journal says asked to commit

	// The partition being scanned.
	open map[int64]pidEpochFirst // producer ID -> its open transaction
	next int64                   // offset after the last valid batch
	ple  int32                   // the last batch's partition leader epoch
	inTx []bool                  // per batch of the segment being scanned: transactional data
	ples []int32                 // per batch of the segment being scanned: its partition leader epoch
	prev *seqWindow              // the window the previous batch went to, if any
}

type pidEpochFirst struct {
	epoch int16
	first int64
}

// parsePartitionDir splits kfake's partition directory name,
// url.PathEscape(topic)-partition.
func parsePartitionDir(name string) (string, int32, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	p, err := strconv.ParseInt(name[i+1:], 10, 32)
	if err != nil {
		return "", 0, false
	}
	topic, err := url.PathUnescape(name[:i])
	if err != nil {
		return "", 0, false
	}
	return topic, int32(p), true
}

// partition validates the segments of one partition in offset order,
// cutting each back to its last valid batch, folds the producer batches
// into windows, and completes journaled commits the crash interrupted.
func (sc *logScanner) partition(rel, topic string, part int32) error {
	if err := recoverPartition(filepath.Join(sc.dir, rel), sc.log); err != nil {
		return fmt.Errorf("settling an interrupted compaction: %w", err)
	}
	entries, err := os.ReadDir(filepath.Join(sc.dir, rel))
	if err != nil {
		return err
	}
	var bases []int64
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".dat") {
			continue
		}
		if base, err := strconv.ParseInt(strings.TrimSuffix(name, ".dat"), 10, 64); err == nil {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	sc.open, sc.next, sc.ple, sc.prev = map[int64]pidEpochFirst{}, 0, -1, nil
	for _, base := range bases {
		sc.rep.Segments++
		if err := sc.segment(rel, topic, part, base); err != nil {
			return err
		}
	}
	if len(bases) == 0 {
		return nil
	}
	return sc.completeCommits(rel, topic, part, bases[len(bases)-1])
}

// segment reads one segment file batch by batch. The first batch that is
// incomplete, fails its CRC or does not parse ends the valid part; the file
// (and its index, one entry per batch) is cut back to it.
func (sc *logScanner) segment(rel, topic string, part int32, base int64) error {
	name := filepath.Join(rel, strconv.FormatInt(base, 10)+".dat")
	path := filepath.Join(sc.dir, name)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	r := bufio.NewReaderSize(f, 1<<20)
	var (
		pos     int64
		batches int64
		buf     []byte
		why     string
	)
	sc.inTx, sc.ples = sc.inTx[:0], sc.ples[:0]
	for pos < size {
		if size-pos < 12 {
			why = "incomplete batch header"
			break
		}
		var head [12]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return err
		}
		length := int64(int32(binary.BigEndian.Uint32(head[8:12])))
		if length < batchHeaderSize-12 || length > 1<<30 {
			why = fmt.Sprintf("invalid batch length %d", length)
			break
		}
		if pos+12+length > size {
			why = "incomplete batch"
			break
		}
		buf = slices.Grow(buf[:0], int(12+length))[:12+length]
		copy(buf, head[:])
		if _, err := io.ReadFull(r, buf[12:]); err != nil {
			return err
		}
		if binary.BigEndian.Uint32(buf[17:21]) != crc32.Checksum(buf[21:], crc32c) {
			why = "CRC mismatch"
			break
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(buf); err != nil {
			why = "unparsable batch"
			break
		}
		sc.observe(topic, part, &b)
		pos += 12 + length
		batches++
	}
	sc.rep.Batches += batches
	if pos < size {
		cut := logCut{File: name, Kept: pos, Cut: size - pos, Batches: batches}
		if err := os.Truncate(path, pos); err != nil {
			return fmt.Errorf("cutting the torn tail of %s: %w", name, err)
		}
		sc.rep.Cut = append(sc.rep.Cut, cut)
		sc.log.Warn("broker: cut a torn or corrupted segment tail back to its last valid batch",
			"topic", topic, "partition", part, "segment", name, "reason", why,
			"kept_bytes", cut.Kept, "kept_batches", batches, "cut_bytes", cut.Cut)
	}
	return sc.matchIndex(rel, topic, part, base, nil)
}

// matchIndex makes the segment's index (kfake's .idx, one entry per batch)
// hold exactly one entry per batch the scan kept, followed by extra: the
// entries of batches the caller appends. Entries past the kept batches
// (their batches cut) go. Missing ones are written: kfake writes a batch to
// the segment, then its entry to the index, and a crash between the two
// writes leaves the last batch without one. kfake then loads that batch
// as not transactional, so an open transaction whose last batch it is
// loses that batch to kfake's count of the transaction: the batch is
// missing from kfake's aborted-transaction index once the repair aborts
// it, and read_committed readers whose fetch begins at it see its
// aborted records (a transaction with no other batch there is not seen
// as open at all).
func (sc *logScanner) matchIndex(rel, topic string, part int32, base int64, extra []byte) error {
	idxPath := filepath.Join(sc.dir, rel, strconv.FormatInt(base, 10)+".idx")
	kept := int64(len(sc.inTx))
	size := int64(0)
	if st, err := os.Stat(idxPath); err == nil {
		size = st.Size()
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if size == kept*kfakeIndexEntry && len(extra) == 0 {
		return nil
	}
	// Whole entries of kept batches stay; a torn last entry is written
	// again.
	have := min(size/kfakeIndexEntry, kept)
	var entries []byte
	for i := have; i < kept; i++ {
		entries = append(entries, indexEntry(sc.ples[i], 0, sc.inTx[i])...)
	}
	entries = append(entries, extra...)
	idx, err := os.OpenFile(idxPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer idx.Close()
	if _, err := idx.WriteAt(entries, have*kfakeIndexEntry); err != nil {
		return err
	}
	if err := idx.Truncate(have*kfakeIndexEntry + int64(len(entries))); err != nil {
		return err
	}
	if written := kept - have; written > 0 {
		sc.rep.IndexEntries += int(written)
		sc.log.Warn("broker: wrote index entries a crash left unwritten",
			"topic", topic, "partition", part, "segment", filepath.Join(rel, strconv.FormatInt(base, 10)+".idx"), "entries", written)
	}
	return idx.Sync()
}

// observe folds one valid batch into the partition's state and the
// producer windows. Control batches (markers) close their producer's
// transaction and carry no sequence.
func (sc *logScanner) observe(topic string, part int32, b *kmsg.RecordBatch) {
	if b.FirstOffset > sc.next && sc.prev != nil {
		// Only compaction leaves gaps after the first batch.
		sc.prev.unsure = true
	}
	sc.prev = nil
	sc.next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
	sc.ple = b.PartitionLeaderEpoch
	control := b.Attributes&0x0020 != 0
	txnal := b.Attributes&0x0010 != 0
	sc.inTx = append(sc.inTx, txnal && !control)
	sc.ples = append(sc.ples, b.PartitionLeaderEpoch)
	if b.ProducerID < 0 {
		return
	}
	if control {
		delete(sc.open, b.ProducerID)
		return
	}
	if txnal {
		if _, ok := sc.open[b.ProducerID]; !ok {
			sc.open[b.ProducerID] = pidEpochFirst{b.ProducerEpoch, b.FirstOffset}
		}
	}
	if b.FirstSequence < 0 {
		return
	}
	k := producerPartition{b.ProducerID, topic, part}
	w := sc.windows[k]
	if w == nil {
		w = &seqWindow{epoch: b.ProducerEpoch}
		sc.windows[k] = w
	}
	w.txnal = w.txnal || txnal
	// The last sequence is the first plus the last offset delta, as in
	// Kafka: compaction keeps offset deltas, not record counts.
	next := int32((int64(b.FirstSequence) + int64(b.LastOffsetDelta) + 1) % math.MaxInt32)
	w.push(b.ProducerEpoch, seqEntry{first: b.FirstSequence, next: next, offset: b.FirstOffset})
	sc.prev = w
}

// completeCommits appends a commit marker to the partition's last segment
// for each transaction left open on it that the journal says asked to
// commit: kfake had written the commit's markers to some partitions when
// the process died. This has to happen before kfake loads the log: kfake
// takes a transaction it finds open at load for aborted and hides its
// records from read_committed readers even if a commit marker is written
// later.
func (sc *logScanner) completeCommits(rel, topic string, part int32, lastBase int64) error {
	var pids []int64
	for pid, o := range sc.open {
		if sc.commit[pidEpoch{pid, o.epoch}] {
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		return nil
	}
	slices.Sort(pids)
	segPath := filepath.Join(sc.dir, rel, strconv.FormatInt(lastBase, 10)+".dat")
	seg, err := os.OpenFile(segPath, os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer seg.Close()
	var entries []byte
	for _, pid := range pids {
		o := sc.open[pid]
		batch := commitMarker(pid, o.epoch, sc.next, sc.ple)
		if _, err := seg.Write(batch); err != nil {
			return err
		}
		entries = append(entries, indexEntry(sc.ple, time.Now().UnixMilli(), false)...)
		sc.log.Warn("broker: completed a commit a crash interrupted (the commit journal has it; other partitions have its marker)",
			"topic", topic, "partition", part, "producer_id", pid, "producer_epoch", o.epoch,
			"first_offset", o.first, "marker_offset", sc.next)
		sc.rep.Completed++
		sc.next++
		delete(sc.open, pid)
	}
	if err := seg.Sync(); err != nil {
		return err
	}
	// The markers' index entries follow the kept batches' (the segment
	// scan wrote any a crash left unwritten).
	return sc.matchIndex(rel, topic, part, lastBase, entries)
}

// commitMarker encodes a commit marker batch of pid/epoch at offset, as
// kfake's txnMarkerBatch does.
func commitMarker(pid int64, epoch int16, offset int64, ple int32) []byte {
	key := kmsg.ControlRecordKey{Type: kmsg.ControlRecordKeyTypeCommit}
	marker := kmsg.EndTxnMarker{}
	rec := kmsg.Record{Key: key.AppendTo(nil), Value: marker.AppendTo(nil)}
	rec.Length = int32(len(rec.AppendTo(nil)) - 1)
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		FirstOffset:          offset,
		PartitionLeaderEpoch: ple,
		Magic:                2,
		Attributes:           0x0030, // control, transactional
		FirstTimestamp:       now,
		MaxTimestamp:         now,
		ProducerID:           pid,
		ProducerEpoch:        epoch,
		FirstSequence:        -1,
		NumRecords:           1,
		Records:              rec.AppendTo(nil),
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:12], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:21], crc32.Checksum(raw[21:], crc32c))
	return raw
}

// indexEntry encodes one of kfake's .idx entries: version, checksum byte,
// leader epoch, max earlier timestamp (recomputed by kfake at load), flags.
func indexEntry(epoch int32, maxTS int64, inTx bool) []byte {
	buf := make([]byte, kfakeIndexEntry)
	buf[0] = kfakeVersion
	binary.LittleEndian.PutUint32(buf[2:6], uint32(epoch))
	binary.LittleEndian.PutUint64(buf[6:14], uint64(maxTS))
	if inTx {
		buf[14] = 1
	}
	buf[1] = byte(crc32.Checksum(buf[2:], crc32c))
	return buf
}

// repairFramedLog cuts a torn tail off one of kfake's framed append logs
// (entries of length(4, LE) crc32c(4, LE) version(2) data) and returns the
// producer IDs with an "init" entry, for pids.log.
func repairFramedLog(dir, name string, rep *scanReport, log *slog.Logger) (map[int64]bool, error) {
	path := filepath.Join(dir, name)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[int64]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	inits := map[int64]bool{}
	pos, n := 0, int64(0)
	for pos+kfakeEntryHeader <= len(raw) {
		length := int(binary.LittleEndian.Uint32(raw[pos : pos+4]))
		if length < 2 || pos+8+length > len(raw) {
			break
		}
		body := raw[pos+8 : pos+8+length]
		if crc32.Checksum(body, crc32c) != binary.LittleEndian.Uint32(raw[pos+4:pos+8]) {
			break
		}
		var e struct {
			Type string `json:"type"`
			PID  int64  `json:"pid"`
		}
		if json.Unmarshal(body[2:], &e) == nil && e.Type == "init" {
			inits[e.PID] = true
		}
		pos += 8 + length
		n++
	}
	if pos < len(raw) {
		if err := os.Truncate(path, int64(pos)); err != nil {
			return nil, fmt.Errorf("cutting the torn tail of %s: %w", name, err)
		}
		rep.Cut = append(rep.Cut, logCut{File: name, Kept: int64(pos), Cut: int64(len(raw) - pos), Batches: n})
		log.Warn("broker: cut a torn tail off a state log back to its last valid entry",
			"file", name, "kept_bytes", pos, "kept_entries", n, "cut_bytes", len(raw)-pos)
	}
	return inits, nil
}

// kfake's seq_windows.json, version 1 ("v2" entries: Count > 0).
type kfakeSeqWindows struct {
	Version int                `json:"version"`
	Windows []kfakeWindowEntry `json:"windows"`
}

type kfakeWindowEntry struct {
	PID     int64             `json:"pid"`
	Topic   string            `json:"topic"`
	Part    int32             `json:"partition"`
	Entries [5]kfakeWindowSeq `json:"entries"`
	Count   uint8             `json:"count"`
	At      uint8             `json:"at"`
	Epoch   int16             `json:"epoch"`
	Seen    bool              `json:"seen"`
	NextSeq int32             `json:"next_seq"`
}

type kfakeWindowSeq struct {
	FirstSeq int32 `json:"first_seq"`
	NextSeq  int32 `json:"next_seq"`
	Offset   int64 `json:"offset"`
}

// writeSeqWindows replaces kfake's seq_windows.json with windows, and
// appends an "init" entry to pids.log for each idempotent producer that
// has none (kfake attaches windows only to producers it knows).
func writeSeqWindows(dir string, windows map[producerPartition]*seqWindow, inits map[int64]bool) (int, error) {
	out := kfakeSeqWindows{Version: kfakeVersion, Windows: []kfakeWindowEntry{}}
	missing := map[int64]int16{}
	for k, w := range windows {
		if len(w.entries) == 0 || w.unsure {
			continue // kfake then accepts the producer's next batch as it comes
		}
		e := kfakeWindowEntry{PID: k.pid, Topic: k.topic, Part: k.partition, Epoch: w.epoch, Seen: true}
		for i, s := range w.entries {
			e.Entries[i] = kfakeWindowSeq{FirstSeq: s.first, NextSeq: s.next, Offset: s.offset}
		}
		e.Count = uint8(len(w.entries))
		e.At = e.Count % seqWindowSize
		e.NextSeq = w.entries[len(w.entries)-1].next
		out.Windows = append(out.Windows, e)
		if !inits[k.pid] && !w.txnal {
			missing[k.pid] = max(missing[k.pid], w.epoch)
		}
	}
	slices.SortFunc(out.Windows, func(a, b kfakeWindowEntry) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		if a.Part != b.Part {
			return int(a.Part - b.Part)
		}
		return int(a.PID - b.PID)
	})
	raw, err := json.Marshal(out)
	if err != nil {
		return 0, err
	}
	if err := writeFileAtomic(filepath.Join(dir, kfakeSeqWindowsFile), raw); err != nil {
		return 0, err
	}
	n := len(out.Windows)
	if len(missing) == 0 {
		return n, nil
	}
	f, err := os.OpenFile(filepath.Join(dir, kfakePIDsLog), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	for pid, epoch := range missing {
		data, _ := json.Marshal(struct {
			Type  string `json:"type"`
			PID   int64  `json:"pid"`
			Epoch int16  `json:"epoch"`
		}{"init", pid, epoch})
		if _, err := f.Write(frameEntry(data)); err != nil {
			f.Close()
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	return n, f.Close()
}

// frameEntry frames data as one kfake append-log entry.
func frameEntry(data []byte) []byte {
	buf := make([]byte, kfakeEntryHeader+len(data))
	binary.LittleEndian.PutUint32(buf[0:4], uint32(2+len(data)))
	binary.LittleEndian.PutUint16(buf[8:10], kfakeVersion)
	copy(buf[kfakeEntryHeader:], data)
	binary.LittleEndian.PutUint32(buf[4:8], crc32.Checksum(buf[8:], crc32c))
	return buf
}

// writeFileAtomic replaces path with raw: write, fsync, rename, so a crash
// leaves the old or the new file.
func writeFileAtomic(path string, raw []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err = f.Write(raw); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// writeCleanMarker records that the broker stopped cleanly: kfake saved
// its producer state itself, and the next start keeps it.
func writeCleanMarker(dir string) error {
	return writeFileAtomic(filepath.Join(dir, cleanMarkerFile), []byte(time.Now().UTC().Format(time.RFC3339)+"\n"))
}
