package exec

import (
	"context"
	"fmt"
	"time"

	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// A source declared over a topic whose producers partition keys by
// murmur2 (the default PARTITIONER) is joined, looked up and routed as
// if every keyed record were in partition murmur2(key) % n. librdkafka's
// clients (kcat, confluent-kafka) put it in crc32(key) % n unless told
// otherwise, and then joins lose rows with no error. So each keyed
// record such a source reads is checked (one hash, no allocation) and a
// record outside its key's murmur2 partition is counted per source
// (Query.Partitioning, the sqlstreams_misplaced_records_total metric,
// DESCRIBE EXTENDED) and reported: a warning in the server log and an
// entry in the processing log, naming the topic, the share of records
// and the fix, at most once a minute per source.

// partitionWarnEvery is how often a source's misplaced records are
// reported at most.
const partitionWarnEvery = time.Minute

// partitionFlush is how many checked records a source processor counts
// before adding them to the shared count.
const partitionFlush = 256

// partitionCheck counts one declared source's checked and misplaced
// records across the query's tasks.
type partitionCheck struct {
	source, topic string
	// parts is the topic's partition count (0: not known yet, nothing
	// is checked), refreshed when tasks are created.
	parts              atomic.Int32
	checked, misplaced atomic.Int64
	// warned is when the source was last reported (Unix nanoseconds).
	warned atomic.Int64
}

// PartitionStats is what a query found of one source's partitioning.
type PartitionStats struct {
	Source string `json:"source"`
	Topic  string `json:"topic"`
	// Checked counts the keyed records read and checked; Misplaced
	// those not in their key's murmur2 partition.
	Checked   int64 `json:"checked"`
	Misplaced int64 `json:"misplaced"`
}

// Partitioning returns, per source the query reads that is declared
// murmur2 (the default), how many of its keyed records it checked and
// how many were not in their key's murmur2 partition.
func (q *Query) Partitioning() []PartitionStats {
	out := make([]PartitionStats, 0, len(q.checks))
	for _, c := range q.checkList {
		out = append(out, PartitionStats{Source: c.source, Topic: c.topic, Checked: c.checked.Load(), Misplaced: c.misplaced.Load()})
	}
	return out
}

// newPartitionChecks makes the checks of the topology's declared
// murmur2 sources with keys whose partitioning matters: those read by a
// sub-topology that keeps stores (a join, a table, an aggregation by the
// key), not a stateless one (a filter, or a stream on its way to a
// repartition). Windowed topics' keys end in their window, and keyless
// ones go anywhere: not checked.
func (q *Query) newPartitionChecks() {
	q.checks = map[string]*partitionCheck{}
	for _, st := range q.topo.SubTopologies {
		if !stateful(st) {
			continue
		}
		for _, n := range st.Sources {
			s := n.Op.(*physical.Source)
			if s.Declared == "" || s.Raw || s.Partitioner != types.Murmur2 || s.KeyFormat == types.FormatNone ||
				s.WindowType != types.NoWindow || q.checks[s.Declared] != nil {
				continue
			}
			c := &partitionCheck{source: s.Declared, topic: s.Topic}
			q.checks[s.Declared] = c
			q.checkList = append(q.checkList, c)
		}
	}
}

// refreshPartitionCounts learns the partition counts of the checked
// sources' topics (when tasks are created: a topic may have grown).
// A failure leaves the counts as they were.
func (q *Query) refreshPartitionCounts(ctx context.Context, cl *kgo.Client) {
	if len(q.checkList) == 0 {
		return
	}
	topics := make([]string, 0, len(q.checkList))
	for _, c := range q.checkList {
		topics = append(topics, c.topic)
	}
	details, err := kadm.NewClient(cl).ListTopics(ctx, topics...)
	if err != nil {
		return
	}
	for _, c := range q.checkList {
		if d, ok := details[c.topic]; ok && d.Err == nil && len(d.Partitions) > 0 {
			c.parts.Store(int32(len(d.Partitions)))
		}
	}
}

// sourceCheck is a source processor's side of its partitionCheck.
type sourceCheck struct {
	c       *partitionCheck
	q       *Query
	pending int64
}

// record checks one keyed record.
func (s *sourceCheck) record(r *kgo.Record) {
	n := s.c.parts.Load()
	if n <= 0 {
		return
	}
	s.pending++
	if types.Murmur2Partition(r.Key, n) == r.Partition {
		if s.pending >= partitionFlush {
			s.c.checked.Add(s.pending)
			s.pending = 0
		}
		return
	}
	s.c.checked.Add(s.pending)
	s.pending = 0
	s.c.misplaced.Add(1)
	s.report(r, n)
}

// report warns of misplaced records, at most every partitionWarnEvery.
func (s *sourceCheck) report(r *kgo.Record, n int32) {
	now := time.Now().UnixNano()
	last := s.c.warned.Load()
	if last != 0 && now-last < int64(partitionWarnEvery) || !s.c.warned.CompareAndSwap(last, now) {
		return
	}
	checked, misplaced := s.c.checked.Load(), s.c.misplaced.Load()
	share := 100 * float64(misplaced) / float64(max(checked, 1))
	msg := fmt.Sprintf("source %s: %d of %d keyed records read so far (%.1f%%) of topic %s are not in their key's murmur2 partition (this one: partition %d, murmur2 says %d of %d); "+
		"joins, foreign-key joins and pull queries over %s will miss rows. Its producers partition otherwise, likely by librdkafka's default (kcat, confluent-kafka: crc32): "+
		"declare the source WITH (PARTITIONER='crc32') (or 'unknown' to have it repartitioned), or produce with partitioner=murmur2_random",
		s.c.source, misplaced, checked, share, s.c.topic, r.Partition, types.Murmur2Partition(r.Key, n), n, s.c.source)
	s.q.log.Warn(msg, "source", s.c.source, "topic", s.c.topic, "misplaced", misplaced, "checked", checked)
	if s.q.cfg.BadRecord != nil {
		s.q.cfg.BadRecord(BadRecord{Query: s.q.id, Topic: r.Topic, Partition: r.Partition, Offset: r.Offset,
			Err: fmt.Errorf("%s", msg), Key: append([]byte(nil), r.Key...)})
	}
}

// flush adds the records counted here to the shared count.
func (s *sourceCheck) flush() {
	if s != nil && s.pending > 0 {
		s.c.checked.Add(s.pending)
		s.pending = 0
	}
}
