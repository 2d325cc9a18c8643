package exec

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/types"
)

// A source is joined, looked up and routed as if every keyed record of
// its topic were in the partition its PARTITIONER gives the key:
// murmur2(key) % n by default. librdkafka's clients (kcat,
// confluent-kafka) put it in crc32(key) % n unless told otherwise, and
// then joins lose rows with no error. So each keyed record a source of a
// known partitioner (murmur2, crc32) reads where partitioning matters is
// checked (one hash, no allocation) and a record outside its key's
// partition is counted per source (Query.Partitioning, the
// sqlstreams_source_misplaced_records_total metric, DESCRIBE EXTENDED)
// and reported: a warning in the server log and an entry in the
// processing log, naming the topic, the share of records and the fix, at
// most once a minute per source and query.

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
	// part is the source's declared partitioner, murmur2 or crc32.
	part types.Partitioner
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
	// Partitioner is the source's, which the records were checked
	// against: murmur2 or crc32.
	Partitioner string `json:"partitioner"`
	// Checked counts the keyed records read and checked; Misplaced
	// those not in the partition the partitioner gives their key.
	Checked   int64 `json:"checked"`
	Misplaced int64 `json:"misplaced"`
}

// Partitioning returns, per source the query reads whose records'
// partitions it checks, how many of its keyed records it checked and
// how many were not in the partition its partitioner gives their key.
func (q *Query) Partitioning() []PartitionStats {
	out := make([]PartitionStats, 0, len(q.checks))
	for _, c := range q.checkList {
		out = append(out, PartitionStats{Source: c.source, Topic: c.topic, Partitioner: c.part.String(), Checked: c.checked.Load(), Misplaced: c.misplaced.Load()})
	}
	return out
}

// newPartitionChecks makes the checks of the topology's declared
// sources of a known partitioner (murmur2, crc32) with keys whose
// partitioning matters: those read by a
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
			if s.Declared == "" || s.Raw || !s.Partitioner.Known() || s.KeyFormat == types.FormatNone ||
				s.WindowType != types.NoWindow || q.checks[s.Declared] != nil {
				continue
			}
			c := &partitionCheck{source: s.Declared, topic: s.Topic, part: s.Partitioner}
			q.checks[s.Declared] = c
			q.checkList = append(q.checkList, c)
		}
	}
}

// check returns the check of the records a source node reads, nil for
// none (q nil: a push or pull query's graph).
func (q *Query) check(s *physical.Source) *partitionCheck {
	if q == nil || s.Raw || !s.Partitioner.Known() {
		return nil
	}
	if c := q.checks[s.Declared]; c != nil && c.topic == s.Topic && c.part == s.Partitioner {
		return c
	}
	return nil
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
	if s.c.part.Partition(r.Key, n) == r.Partition {
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
	part := s.c.part
	fix := "declare the source WITH (PARTITIONER='crc32') (or 'unknown' to have it repartitioned), or produce with partitioner=murmur2_random"
	if part == types.CRC32 {
		fix = "declare the source WITH (PARTITIONER='murmur2') if the Java client, Kafka Streams or franz-go write it, or 'unknown' to have it repartitioned"
	} else if types.CRC32Partition(r.Key, n) == r.Partition {
		fix = "its producers likely use librdkafka's default (kcat, confluent-kafka: crc32): " + fix
	}
	msg := fmt.Sprintf("source %s: %d of %d keyed records read so far (%.1f%%) of topic %s are not in their key's %s partition (this one: partition %d, %s says %d of %d); "+
		"joins, foreign-key joins and pull queries over %s will miss rows. Its producers partition otherwise: %s",
		s.c.source, misplaced, checked, share, s.c.topic, part, r.Partition, part, part.Partition(r.Key, n), n, s.c.source, fix)
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
