package broker

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The crash repair (see the package documentation for why).
//
// For each partition it reads [clean point, high watermark) with
// read_uncommitted and control records kept, and tracks open transactions
// per (producer ID, epoch): a transactional data record opens one, a
// control record (commit or abort marker) of the same producer ID closes
// every open one of that producer with an epoch up to the marker's. The
// epoch rule is not strict equality because kfake's transaction timeout
// bumps the epoch before it writes the abort marker (txns.go), so a
// timed-out transaction's marker carries epoch+1; a producer's
// transactions on one partition are sequential, so any later marker of the
// producer ends the earlier ones, as in Kafka's own producer state.
//
// What is still open at the high watermark is dangling unless kfake itself
// tracks it (DescribeProducers lists the producer as in a transaction: a
// transaction restored after a clean shutdown, which its producer may still
// commit). Each dangling pair gets one abort marker per partition with
// kadm.WriteTxnMarkers. Then the repaired partitions are read again to check
// every pair is closed, and their last stable offsets are checked against
// the high watermarks.

// danglingTxn is an open transaction found at the end of a partition.
type danglingTxn struct {
	Topic      string
	Partition  int32
	ProducerID int64
	Epoch      int16
	First      int64 // offset of its first data record
	Last       int64 // offset of its last data record
	Records    int
}

// repairReport is what a repair found and did.
type repairReport struct {
	Partitions int   // partitions in the cluster
	Read       int   // partitions read (a non-empty range past their clean point)
	Records    int64 // records read, markers included
	Aborted    []danglingTxn
	Committed  []danglingTxn // open transactions completed with commit markers
	Live       []danglingTxn // open transactions kfake tracks, left alone
	// OffsetsApplied counts group offsets of committed transactions the
	// repair applied because kfake had lost them.
	OffsetsApplied int
	Elapsed        time.Duration
}

type topicPartition struct {
	topic     string
	partition int32
}

// openTxn is one (producer ID, epoch)'s open transaction on a partition.
type openTxn struct {
	epoch       int16
	first, last int64
	records     int
}

// partScan is the read of one partition's range [from, to).
type partScan struct {
	tp       topicPartition
	id       string // topic ID, for the checkpoint
	from, to int64
	next     int64 // one past the last offset read
	open     map[int64][]openTxn
	records  int64
	// committed holds the transactions a commit marker in the range
	// closed.
	committed map[pidEpoch]bool
}

func newPartScan(tp topicPartition, id string, from, to int64) *partScan {
	return &partScan{tp: tp, id: id, from: from, to: to, next: from, open: make(map[int64][]openTxn), committed: make(map[pidEpoch]bool)}
}

func (s *partScan) done() bool { return s.next >= s.to }

// observe folds one record into the open-transaction state.
func (s *partScan) observe(r *kgo.Record) {
	kind := recordPlain
	switch {
	case r.Attrs.IsControl():
		kind = recordOther
		if len(r.Key) >= 4 {
			switch binary.BigEndian.Uint16(r.Key[2:4]) { // version int16, type int16
			case 1: // commit
				s.committed[pidEpoch{r.ProducerID, r.ProducerEpoch}] = true
				kind = recordMarker
			case 0: // abort
				kind = recordMarker
			}
		}
	case r.Attrs.IsTransactional():
		kind = recordTxnData
	}
	s.add(r.Offset, r.ProducerID, r.ProducerEpoch, kind)
}

// recordKind is what the repair distinguishes among records.
type recordKind int8

const (
	recordPlain   recordKind = iota // non-transactional data
	recordTxnData                   // transactional data
	recordMarker                    // commit or abort marker
	recordOther                     // another control record
)

// add folds one record, given by its offset, producer and kind.
func (s *partScan) add(offset, pid int64, epoch int16, kind recordKind) {
	s.records++
	s.next = offset + 1
	switch kind {
	case recordMarker:
		txns := slices.DeleteFunc(s.open[pid], func(t openTxn) bool { return t.epoch <= epoch })
		if len(txns) == 0 {
			delete(s.open, pid)
		} else {
			s.open[pid] = txns
		}
	case recordTxnData:
		txns := s.open[pid]
		for i := range txns {
			if txns[i].epoch == epoch {
				txns[i].last = offset
				txns[i].records++
				return
			}
		}
		s.open[pid] = append(txns, openTxn{epoch: epoch, first: offset, last: offset, records: 1})
	}
}

// dangling lists the transactions still open at the end of the read.
func (s *partScan) dangling() []danglingTxn {
	var out []danglingTxn
	for pid, txns := range s.open {
		for _, t := range txns {
			out = append(out, danglingTxn{
				Topic: s.tp.topic, Partition: s.tp.partition,
				ProducerID: pid, Epoch: t.epoch,
				First: t.first, Last: t.last, Records: t.records,
			})
		}
	}
	return out
}

// repairCrashedTxns runs the repair and writes the checkpoint; b.repair
// holds the report.
func (b *Broker) repairCrashedTxns(ctx context.Context, journal []journalEntry) error {
	start := time.Now()
	rep := &b.repair

	ckpt, err := readCheckpoint(b.dataDir)
	if err != nil {
		b.log.Warn("broker: ignoring repair checkpoint; reading every partition from its start", "err", err)
		ckpt = nil
	}

	topics, err := b.admin.ListTopicsWithInternal(ctx)
	if err != nil {
		return fmt.Errorf("listing topics: %w", err)
	}
	if err := topics.Error(); err != nil {
		return fmt.Errorf("listing topics: %w", err)
	}
	next := &checkpoint{Version: checkpointVersion}
	var scans []*partScan
	if len(topics) > 0 {
		names := topics.Names()
		starts, err := b.admin.ListStartOffsets(ctx, names...)
		if err == nil {
			err = starts.Error()
		}
		if err != nil {
			return fmt.Errorf("listing log start offsets: %w", err)
		}
		ends, err := b.admin.ListEndOffsets(ctx, names...)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return fmt.Errorf("listing high watermarks: %w", err)
		}
		for _, td := range topics.Sorted() {
			id := td.ID.String()
			for _, pd := range td.Partitions.Sorted() {
				rep.Partitions++
				tp := topicPartition{td.Topic, pd.Partition}
				so, _ := starts.Lookup(tp.topic, tp.partition)
				eo, ok := ends.Lookup(tp.topic, tp.partition)
				if !ok {
					return fmt.Errorf("no high watermark for %s[%d]", tp.topic, tp.partition)
				}
				logStart, hwm := max(so.Offset, 0), eo.Offset
				from := logStart
				if c, ok := ckpt.clean(tp.topic, id, tp.partition); ok && c <= hwm {
					from = max(c, logStart)
				}
				if from >= hwm {
					next.set(tp.topic, id, tp.partition, hwm)
					continue
				}
				scans = append(scans, newPartScan(tp, id, from, hwm))
			}
		}
	}

	if err := b.scan(ctx, scans); err != nil {
		return err
	}
	var candidates []danglingTxn
	for _, s := range scans {
		rep.Read++
		rep.Records += s.records
		candidates = append(candidates, s.dangling()...)
	}

	live, err := b.liveTxns(ctx, candidates)
	if err != nil {
		return err
	}
	// A transaction whose producer had asked to commit (the journal says
	// so) is completed; the others are aborted. The log scan has already
	// completed such commits before kfake loaded the log (a commit marker
	// written now, after kfake took the transaction for aborted at load,
	// would not make its records visible), so this is a fallback for a
	// partition the scan could not write to.
	js := foldJournal(journal)
	wantsCommit := js.committing
	for _, d := range candidates {
		switch {
		case live[topicPartition{d.Topic, d.Partition}][d.ProducerID]:
			rep.Live = append(rep.Live, d)
		case wantsCommit[pidEpoch{d.ProducerID, d.Epoch}]:
			rep.Committed = append(rep.Committed, d)
		default:
			rep.Aborted = append(rep.Aborted, d)
		}
	}
	if err := b.markers(ctx, rep.Aborted, false); err != nil {
		return err
	}
	if err := b.markers(ctx, rep.Committed, true); err != nil {
		return err
	}
	if err := b.verify(ctx, append(append([]danglingTxn(nil), rep.Aborted...), rep.Committed...), rep.Live); err != nil {
		return err
	}
	// Transactions that committed, by a marker read here or written just
	// now, get their group offsets applied if kfake lost them.
	committed := map[pidEpoch]bool{}
	for _, s := range scans {
		for k := range s.committed {
			committed[k] = true
		}
	}
	for _, d := range rep.Committed {
		committed[pidEpoch{d.ProducerID, d.Epoch}] = true
	}
	names := map[string]string{}
	for _, td := range topics {
		names[hex.EncodeToString(td.ID[:])] = td.Topic
	}
	if err := b.applyJournalOffsets(ctx, js, committed, names); err != nil {
		return err
	}

	// Everything read is now closed except the live transactions, which
	// hold the clean point of their partitions at their first offset.
	for _, s := range scans {
		clean := s.next
		for _, l := range rep.Live {
			if l.Topic == s.tp.topic && l.Partition == s.tp.partition {
				clean = min(clean, l.First)
			}
		}
		next.set(s.tp.topic, s.id, s.tp.partition, clean)
	}
	if err := writeCheckpoint(b.dataDir, next); err != nil {
		// Not fatal: the next start reads from further back.
		b.log.Warn("broker: repair checkpoint not written", "err", err)
	}

	rep.Elapsed = time.Since(start)
	for _, d := range rep.Aborted {
		b.log.Warn("broker: aborted a transaction left open by a crash",
			"topic", d.Topic, "partition", d.Partition,
			"producer_id", d.ProducerID, "producer_epoch", d.Epoch,
			"first_offset", d.First, "last_offset", d.Last, "records", d.Records)
	}
	for _, d := range rep.Committed {
		b.log.Warn("broker: committed a transaction a crash interrupted while it committed",
			"topic", d.Topic, "partition", d.Partition,
			"producer_id", d.ProducerID, "producer_epoch", d.Epoch,
			"first_offset", d.First, "last_offset", d.Last, "records", d.Records)
	}
	for _, d := range rep.Live {
		b.log.Info("broker: left an open transaction to its producer (kfake still tracks it)",
			"topic", d.Topic, "partition", d.Partition,
			"producer_id", d.ProducerID, "producer_epoch", d.Epoch, "first_offset", d.First)
	}
	b.log.Info("broker: transaction repair done",
		"partitions", rep.Partitions, "read", rep.Read, "records", rep.Records,
		"aborted", len(rep.Aborted), "committed", len(rep.Committed), "offsets_applied", rep.OffsetsApplied,
		"live", len(rep.Live), "elapsed", rep.Elapsed)
	return nil
}

// scanIdlePolls is how many consecutive empty one-second polls end a scan
// whose partitions have not all reached their end. The last record below a
// high watermark always exists (compaction keeps a partition's last batch),
// so this is a guard against hanging Start forever, not a code path.
const scanIdlePolls = 5

// scan reads every partition's range, read_uncommitted with control records.
func (b *Broker) scan(ctx context.Context, scans []*partScan) error {
	if len(scans) == 0 {
		return nil
	}
	offsets := make(map[string]map[int32]kgo.Offset)
	byTP := make(map[topicPartition]*partScan, len(scans))
	for _, s := range scans {
		if offsets[s.tp.topic] == nil {
			offsets[s.tp.topic] = make(map[int32]kgo.Offset)
		}
		offsets[s.tp.topic][s.tp.partition] = kgo.NewOffset().At(s.from)
		byTP[s.tp] = s
	}
	cl, err := b.newInternalClient(
		kgo.ConsumePartitions(offsets),
		kgo.FetchIsolationLevel(kgo.ReadUncommitted()),
		kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		return fmt.Errorf("scan client: %w", err)
	}
	defer cl.Close()

	remaining := len(scans)
	for idle := 0; remaining > 0; {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			var loss *kgo.ErrDataLoss
			switch {
			case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
			case errors.As(err, &loss):
				b.log.Warn("broker: repair read skipped lost records", "topic", t, "partition", p, "err", err)
			case ferr == nil:
				ferr = fmt.Errorf("reading %s[%d]: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			s := byTP[topicPartition{r.Topic, r.Partition}]
			if s == nil || s.done() || r.Offset >= s.to {
				return
			}
			n++
			s.observe(r)
			if s.done() {
				remaining--
				cl.PauseFetchPartitions(map[string][]int32{r.Topic: {r.Partition}})
			}
		})
		if n > 0 {
			idle = 0
			continue
		}
		if idle++; idle >= scanIdlePolls {
			for _, s := range scans {
				if !s.done() {
					b.log.Warn("broker: repair read ended early; the checkpoint keeps the unread tail for the next start",
						"topic", s.tp.topic, "partition", s.tp.partition, "read_to", s.next, "high_watermark", s.to)
				}
			}
			return nil
		}
	}
	return nil
}

// liveTxns returns, for the candidates' partitions, the producer IDs kfake
// lists as in a transaction there.
func (b *Broker) liveTxns(ctx context.Context, candidates []danglingTxn) (map[topicPartition]map[int64]bool, error) {
	live := make(map[topicPartition]map[int64]bool)
	if len(candidates) == 0 {
		return live, nil
	}
	set := make(kadm.TopicsSet)
	for _, d := range candidates {
		if set[d.Topic] == nil {
			set[d.Topic] = make(map[int32]struct{})
		}
		set[d.Topic][d.Partition] = struct{}{}
	}
	described, err := b.admin.DescribeProducers(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("describing producers: %w", err)
	}
	for _, dt := range described {
		for _, dp := range dt.Partitions {
			if dp.Err != nil {
				return nil, fmt.Errorf("describing producers of %s[%d]: %w", dp.Topic, dp.Partition, dp.Err)
			}
			tp := topicPartition{dp.Topic, dp.Partition}
			// kfake lists only producers in a transaction on the
			// partition. Matching on the producer ID alone (not the
			// epoch) errs toward leaving a transaction alone.
			for pid := range dp.ActiveProducers {
				if live[tp] == nil {
					live[tp] = make(map[int64]bool)
				}
				live[tp][pid] = true
			}
		}
	}
	return live, nil
}

// abort writes one abort marker per dangling pair and partition.
func (b *Broker) markers(ctx context.Context, dangling []danglingTxn, commit bool) error {
	if len(dangling) == 0 {
		return nil
	}
	type pair struct {
		pid   int64
		epoch int16
	}
	byPair := make(map[pair]kadm.TopicsSet)
	var order []pair
	for _, d := range dangling {
		k := pair{d.ProducerID, d.Epoch}
		set, ok := byPair[k]
		if !ok {
			set = make(kadm.TopicsSet)
			byPair[k] = set
			order = append(order, k)
		}
		if set[d.Topic] == nil {
			set[d.Topic] = make(map[int32]struct{})
		}
		set[d.Topic][d.Partition] = struct{}{}
	}
	// One request per pair: a WriteTxnMarkers response is keyed by
	// producer ID only, so two epochs of one producer in one request
	// could not be told apart.
	for _, k := range order {
		resp, err := b.admin.WriteTxnMarkers(ctx, kadm.TxnMarkers{
			ProducerID:    k.pid,
			ProducerEpoch: k.epoch,
			Commit:        commit,
			Topics:        byPair[k],
		})
		if err != nil {
			return fmt.Errorf("writing abort markers for producer %d epoch %d: %w", k.pid, k.epoch, err)
		}
		written := 0
		var perr error
		resp.EachPartition(func(p kadm.TxnMarkersPartitionResponse) {
			if p.Err != nil && perr == nil {
				perr = fmt.Errorf("writing abort marker for producer %d epoch %d to %s[%d]: %w", k.pid, k.epoch, p.Topic, p.Partition, p.Err)
			}
			written++
		})
		if perr != nil {
			return perr
		}
		want := 0
		for _, ps := range byPair[k] {
			want += len(ps)
		}
		if written != want {
			return fmt.Errorf("writing abort markers for producer %d epoch %d: %d of %d partitions answered", k.pid, k.epoch, written, want)
		}
		if afterRepairMarker != nil {
			afterRepairMarker()
		}
	}
	return nil
}

// afterRepairMarker, if set, runs after each producer's markers are
// written; tests use it to crash in the middle of a repair.
var afterRepairMarker func()

// verify checks the repair from the other side: reading the repaired
// partitions again from their first dangling record finds every aborted pair
// closed, and on repaired partitions without live transactions the last
// stable offset (what read_committed readers may read up to) equals the
// high watermark. The second check is a sanity check only: kfake already
// reports LSO = high watermark for a forgotten transaction before the
// repair; the re-read is what proves the markers landed.
func (b *Broker) verify(ctx context.Context, aborted, live []danglingTxn) error {
	if len(aborted) == 0 {
		return nil
	}
	from := make(map[topicPartition]int64)
	var names []string
	for _, d := range aborted {
		tp := topicPartition{d.Topic, d.Partition}
		if f, ok := from[tp]; !ok || d.First < f {
			from[tp] = d.First
		}
		if !slices.Contains(names, d.Topic) {
			names = append(names, d.Topic)
		}
	}
	ends, err := b.admin.ListEndOffsets(ctx, names...)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return fmt.Errorf("verifying: listing high watermarks: %w", err)
	}
	lsos, err := b.admin.ListCommittedOffsets(ctx, names...)
	if err == nil {
		err = lsos.Error()
	}
	if err != nil {
		return fmt.Errorf("verifying: listing last stable offsets: %w", err)
	}

	var scans []*partScan
	for tp, f := range from {
		eo, _ := ends.Lookup(tp.topic, tp.partition)
		scans = append(scans, newPartScan(tp, "", f, eo.Offset))
	}
	if err := b.scan(ctx, scans); err != nil {
		return fmt.Errorf("verifying: %w", err)
	}
	stillOpen := make(map[danglingTxn]bool)
	for _, s := range scans {
		for _, d := range s.dangling() {
			d.Last, d.Records = 0, 0
			stillOpen[d] = true
		}
	}
	hasLive := make(map[topicPartition]bool)
	for _, l := range live {
		hasLive[topicPartition{l.Topic, l.Partition}] = true
	}
	for _, d := range aborted {
		k := d
		k.Last, k.Records = 0, 0
		if stillOpen[k] {
			return fmt.Errorf("verifying: producer %d epoch %d still open on %s[%d] after its abort marker", d.ProducerID, d.Epoch, d.Topic, d.Partition)
		}
		tp := topicPartition{d.Topic, d.Partition}
		if hasLive[tp] {
			continue
		}
		eo, _ := ends.Lookup(tp.topic, tp.partition)
		lo, _ := lsos.Lookup(tp.topic, tp.partition)
		if lo.Offset != eo.Offset {
			return fmt.Errorf("verifying: %s[%d] last stable offset %d, high watermark %d after repair", tp.topic, tp.partition, lo.Offset, eo.Offset)
		}
	}
	return nil
}

// applyJournalOffsets commits, for each transaction in committed, the
// offsets the journal says it committed, where its group's committed
// offsets are behind them (kfake applies them after writing markers, so a
// crash can lose them).
func (b *Broker) applyJournalOffsets(ctx context.Context, js journalState, committed map[pidEpoch]bool, topicNames map[string]string) error {
	byGroup := map[string]kadm.Offsets{}
	for _, e := range js.offsets {
		if !committed[pidEpoch{e.PID, e.Epoch}] {
			continue
		}
		offs := byGroup[e.Group]
		if offs == nil {
			offs = kadm.Offsets{}
			byGroup[e.Group] = offs
		}
		for _, o := range e.Offsets {
			topic := o.Topic
			if topic == "" {
				topic = topicNames[o.TopicID]
			}
			if topic == "" {
				continue // the topic is gone
			}
			if have, ok := offs.Lookup(topic, o.Partition); ok && have.At >= o.Offset {
				// The larger wins: the journal keeps each producer's
				// order, not the order between producers (compactLocked).
				continue
			}
			offs.Add(kadm.Offset{Topic: topic, Partition: o.Partition, At: o.Offset, LeaderEpoch: -1})
		}
	}
	for group, want := range byGroup {
		have, err := b.admin.FetchOffsets(ctx, group)
		if errors.Is(err, kerr.GroupIDNotFound) {
			// kfake lost the group with its offsets (or never had
			// it): nothing is committed, apply everything.
			have, err = kadm.OffsetResponses{}, nil
		}
		if err != nil {
			return fmt.Errorf("fetching offsets of group %s: %w", group, err)
		}
		apply := kadm.Offsets{}
		want.Each(func(o kadm.Offset) {
			if cur, ok := have.Lookup(o.Topic, o.Partition); !ok || cur.Err != nil || cur.At < o.At {
				apply.Add(o)
			}
		})
		if len(apply) == 0 {
			continue
		}
		resps, err := b.admin.CommitOffsets(ctx, group, apply)
		if err == nil {
			err = resps.Error()
		}
		if err != nil {
			b.log.Error("broker: could not apply the offsets of a committed transaction; its input may be read again", "group", group, "err", err)
			continue
		}
		apply.Each(func(o kadm.Offset) {
			b.repair.OffsetsApplied++
			b.log.Warn("broker: applied the offset of a transaction a crash interrupted while it committed",
				"group", group, "topic", o.Topic, "partition", o.Partition, "offset", o.At)
		})
	}
	return nil
}
