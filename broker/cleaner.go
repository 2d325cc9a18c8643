package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The log cleaner: compaction of cleanup.policy=compact topics (every
// changelog; not the command topic, which is cleanup.policy=delete with
// retention.ms=-1) and retention.ms / retention.bytes.
//
// kfake's cleaner (Cluster.Compact, and its own ticker, hourly by default)
// compacts every batch but a partition's last, open transactions
// included: a record of a transaction that is still open supersedes the
// committed record of the same key, and when the transaction aborts the key
// is gone for read_committed readers (TestCompactionBesideOpenTransaction).
// Its retention can likewise cut into an open transaction. kfake cannot
// clean only below the last stable offset, as Kafka's cleaner does, so the
// broker runs kfake's cleaner only at a moment when no transaction is open
// on a partition it cleans:
//
//  1. it closes a gate: produces of transactional batches to the topics
//     it cleans are refused with NOT_ENOUGH_REPLICAS (retriable; clients
//     retry after a short backoff), except from producers whose
//     transaction was already open;
//  2. it lists the open transactions; their producers may go on, and their
//     commit or abort (EndTxn) ends their pass;
//  3. it waits until DescribeProducers lists no open transaction on any
//     partition of a compacted or retention-limited topic, at most
//     cleanerBarrierTimeout, then runs kfake's cleaner and opens the gate.
//     If the wait times out (a transaction held open for long), it opens
//     the gate and tries again next round.
//
// kfake's own ticker is switched off (log.cleaner.backoff.ms is set out of
// reach); this cleaner runs every cleanerInterval, Kafka's
// log.cleaner.backoff.ms default, and compacts only when a compacted
// partition is dirty enough (see dirty); otherwise it applies retention
// only. A new transaction to a cleaned topic waits at most one barrier
// (typically one commit interval of the open transactions) per round.
// kfake compacts on its one goroutine, rewriting every compacted
// partition whole: while it does, the broker answers no request. The dirty
// ratio keeps that to about once per doubling of a compacted log.

// cleanerInterval is how often the cleaner runs (Kafka's
// log.cleaner.backoff.ms default is 15 s).
const cleanerInterval = 15 * time.Second

// cleanerBarrierTimeout bounds how long new transactions wait for the open
// ones to end.
const cleanerBarrierTimeout = 5 * time.Second

// kfakeCleanerOff is the log.cleaner.backoff.ms that keeps kfake's own
// cleaner from ever running (about 35 years).
const kfakeCleanerOff = 1 << 40

type cleaner struct {
	dataDir string // empty: in memory, nothing to save
	cluster *kfake.Cluster
	cl      *kgo.Client
	admin   *kadm.Client
	log     *slog.Logger

	mu      sync.Mutex
	gate    bool
	allowed map[int64]bool // producers whose open transaction may go on
	topics  cleanableTopics

	roundMu    sync.Mutex               // one round at a time
	cleanSizes map[topicPartition]int64 // compacted partitions' sizes after the last compaction
}

func (c *cleaner) install() {
	c.cluster.Fault(kfake.Fault{
		Keys:  []kmsg.Key{kmsg.Produce},
		Err:   kerr.NotEnoughReplicas,
		Count: -1,
		When:  c.hold,
	})
	c.cluster.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.cluster.KeepControl()
		c.mu.Lock()
		if c.gate {
			delete(c.allowed, req.(*kmsg.EndTxnRequest).ProducerID)
		}
		c.mu.Unlock()
		return nil, nil, false
	})
}

// hold reports whether a produce request must wait for the cleaner: the
// gate is closed and it carries a transactional batch of a producer that
// had no transaction open when the gate closed.
func (c *cleaner) hold(req kmsg.Request) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.gate {
		return false
	}
	pr, ok := req.(*kmsg.ProduceRequest)
	if !ok {
		return false
	}
	for _, t := range pr.Topics {
		if !c.topics.names[t.Topic] && !c.topics.ids[t.TopicID] {
			continue // not a topic the cleaner changes
		}
		for _, p := range t.Partitions {
			raw := p.Records
			if len(raw) < batchHeaderSize || binary.BigEndian.Uint16(raw[21:23])&0x0010 == 0 {
				continue
			}
			if pid := int64(binary.BigEndian.Uint64(raw[43:51])); !c.allowed[pid] {
				return true
			}
		}
	}
	return false
}

func (c *cleaner) setGate(closed bool, allowed map[int64]bool, topics cleanableTopics) {
	c.mu.Lock()
	c.gate, c.allowed, c.topics = closed, allowed, topics
	c.mu.Unlock()
}

// loop runs a round every cleanerInterval until ctx is done.
func (c *cleaner) loop(ctx context.Context) {
	t := time.NewTicker(cleanerInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := c.round(ctx, false); err != nil && ctx.Err() == nil {
			c.log.Warn("broker: log cleaner round failed; trying again next round", "err", err)
		}
	}
}

// round cleans once if it can; it reports whether it did. Unless force is
// set, it compacts only when a compacted partition is dirty enough (see
// dirty), and otherwise applies retention only.
func (c *cleaner) round(ctx context.Context, force bool) (bool, error) {
	c.roundMu.Lock()
	defer c.roundMu.Unlock()
	cleanable, compacted, topics, err := c.cleanable(ctx)
	if err != nil || len(cleanable) == 0 {
		c.log.Debug("broker: log cleaner found nothing to clean", "err", err)
		return false, err
	}
	compact := force
	if !compact && len(compacted) > 0 {
		if compact, err = c.dirty(ctx, compacted); err != nil {
			return false, err
		}
	}
	if !compact && len(compacted) == len(cleanable) {
		return false, nil // only compacted topics, none dirty
	}
	c.setGate(true, nil, topics)
	defer c.setGate(false, nil, cleanableTopics{})

	ongoing, err := c.admin.ListTransactions(ctx, nil, []string{"Ongoing"})
	if err != nil {
		return false, fmt.Errorf("listing transactions: %w", err)
	}
	allowed := map[int64]bool{}
	for _, t := range ongoing {
		allowed[t.ProducerID] = true
	}
	c.setGate(true, allowed, topics)

	deadline := time.Now().Add(cleanerBarrierTimeout)
	for {
		open, err := c.openOn(ctx, cleanable)
		if err != nil {
			return false, err
		}
		if open == 0 {
			break
		}
		if time.Now().After(deadline) {
			c.log.Info("broker: log cleaner skipped a round: transactions stayed open on partitions it cleans", "open", open)
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !compact {
		c.cluster.ApplyRetention()
		return true, nil
	}
	// Keep the old files of every partition the round may rewrite until
	// it is over (precompact.go).
	var saved []string
	if c.dataDir != "" {
		for topic, ps := range compacted {
			for p := range ps {
				pdir := partitionDir(c.dataDir, topic, p)
				if err := savePartition(pdir); err != nil {
					for _, s := range saved {
						os.RemoveAll(s)
					}
					return false, fmt.Errorf("saving %s before compaction: %w", pdir, err)
				}
				saved = append(saved, filepath.Join(pdir, precompactDir))
			}
		}
	}
	c.cluster.Compact() // compaction and retention, on kfake's goroutine
	for _, s := range saved {
		if err := os.RemoveAll(s); err != nil {
			c.log.Warn("broker: could not remove a compaction's saved files; the next start does", "dir", s, "err", err)
		}
	}
	sizes, err := c.sizes(ctx, compacted)
	if err != nil {
		return true, err
	}
	c.cleanSizes = sizes
	return true, nil
}

// Kafka's cleaner cleans a log when at least min.cleanable.dirty.ratio
// (0.5) of it was written since it was last cleaned. kfake rewrites every
// compacted partition whenever it compacts, so the broker compacts only
// when some compacted partition has grown by half its size, and by at least
// cleanerMinDirty, since the last round that compacted.
const (
	cleanerDirtyRatio = 0.5
	cleanerMinDirty   = 1 << 20
)

// dirty reports whether some partition in compacted is dirty enough.
func (c *cleaner) dirty(ctx context.Context, compacted kadm.TopicsSet) (bool, error) {
	sizes, err := c.sizes(ctx, compacted)
	if err != nil {
		return false, err
	}
	for tp, size := range sizes {
		grown := size - c.cleanSizes[tp]
		if grown >= cleanerMinDirty && float64(grown) >= cleanerDirtyRatio*float64(size) {
			return true, nil
		}
	}
	return false, nil
}

// sizes returns the log size of each partition in set.
func (c *cleaner) sizes(ctx context.Context, set kadm.TopicsSet) (map[topicPartition]int64, error) {
	dirs, err := c.admin.DescribeAllLogDirs(ctx, set)
	if err != nil {
		return nil, fmt.Errorf("describing log dirs: %w", err)
	}
	out := map[topicPartition]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			out[topicPartition{p.Topic, p.Partition}] += p.Size
		})
	})
	return out, nil
}

// cleanable returns the partitions the cleaner may change: those of topics
// with cleanup.policy containing compact, or with retention.ms or
// retention.bytes set on the topic.
func (c *cleaner) cleanable(ctx context.Context) (set, compacted kadm.TopicsSet, topics cleanableTopics, err error) {
	// A metadata request of its own, not kadm's cache: a topic created
	// a moment ago must be in it.
	req := kmsg.NewPtrMetadataRequest()
	topics = cleanableTopics{names: map[string]bool{}, ids: map[[16]byte]bool{}}
	meta, err := req.RequestWith(ctx, c.cl)
	if err != nil {
		return nil, nil, topics, err
	}
	partitions := map[string][]int32{}
	ids := map[string][16]byte{}
	var names []string
	for _, t := range meta.Topics {
		if t.ErrorCode != 0 || t.Topic == nil {
			continue
		}
		names = append(names, *t.Topic)
		ids[*t.Topic] = t.TopicID
		for _, p := range t.Partitions {
			partitions[*t.Topic] = append(partitions[*t.Topic], p.Partition)
		}
	}
	if len(names) == 0 {
		return nil, nil, topics, nil
	}
	configs, err := c.admin.DescribeTopicConfigs(ctx, names...)
	if err != nil {
		return nil, nil, topics, err
	}
	set, compacted = kadm.TopicsSet{}, kadm.TopicsSet{}
	for _, rc := range configs {
		if rc.Err != nil {
			continue // deleted meanwhile
		}
		clean, compact := false, false
		for _, kv := range rc.Configs {
			if kv.Value == nil {
				continue
			}
			switch kv.Key {
			case "cleanup.policy":
				compact = containsWord(*kv.Value, "compact")
				clean = clean || compact
			case "retention.ms", "retention.bytes":
				if kv.Source == kmsg.ConfigSourceDynamicTopicConfig {
					if n, err := strconv.ParseInt(*kv.Value, 10, 64); err == nil && n >= 0 {
						clean = true
					}
				}
			}
		}
		if clean {
			set.Add(rc.Name, partitions[rc.Name]...)
			topics.names[rc.Name] = true
			topics.ids[ids[rc.Name]] = true
		}
		if compact {
			compacted.Add(rc.Name, partitions[rc.Name]...)
		}
	}
	return set, compacted, topics, nil
}

// cleanableTopics names the topics a round may change, by name and by ID
// (produce requests from v13 name topics by ID only).
type cleanableTopics struct {
	names map[string]bool
	ids   map[[16]byte]bool
}

// openOn counts the open transactions on the partitions in set.
func (c *cleaner) openOn(ctx context.Context, set kadm.TopicsSet) (int, error) {
	described, err := c.admin.DescribeProducers(ctx, set)
	if err != nil {
		return 0, fmt.Errorf("describing producers: %w", err)
	}
	n := 0
	for _, dt := range described {
		for _, dp := range dt.Partitions {
			if dp.Err != nil {
				return 0, fmt.Errorf("describing producers of %s[%d]: %w", dp.Topic, dp.Partition, dp.Err)
			}
			n += len(dp.ActiveProducers)
		}
	}
	return n, nil
}

func containsWord(list, word string) bool {
	for _, w := range strings.Split(list, ",") {
		if strings.TrimSpace(w) == word {
			return true
		}
	}
	return false
}
