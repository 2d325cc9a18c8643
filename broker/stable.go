package broker

import (
	"context"
	"encoding/hex"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Stable offsets per partition (KIP-447). A consumer that asks for its
// group's committed offsets with require_stable must not get an offset
// that an open transaction is committing: Kafka answers
// UNSTABLE_OFFSET_COMMIT for those partitions, and the consumer tries
// again. kfake answers it for every partition of the group as soon as any
// open transaction holds offsets for any of them, and franz-go tries
// again a second later. Under exactly-once every member of a group commits
// its offsets in a transaction every commit interval, so a member given a
// partition in a rebalance kept getting UNSTABLE_OFFSET_COMMIT because of
// the others' transactions, over partitions it did not ask for, and its
// task (its store restored, answering pull queries) processed nothing
// meanwhile: a second or two here, much longer on a busy machine, and up
// to a transaction timeout when a crashed member had left one open.
//
// So the broker watches the transactional offset commits: which
// (group, topic, partition) each transactional ID's open transaction
// holds, until its EndTxn or a new InitProducerID of the ID (which aborts
// it). An OffsetFetch with require_stable none of whose partitions such a
// transaction holds is handed to kfake without require_stable, so kfake
// answers the committed offsets, as Kafka would. One any of whose
// partitions is held goes to kfake as it came. Being wrong toward "held"
// only costs the old wait: a transaction kfake aborted on its timeout is
// still taken as holding its partitions, until its ID is used again.
// Transactions kfake restored at start (a clean stop with one open) hold
// every partition of every group until they end or their timeout passes.
type stableOffsets struct {
	mu sync.Mutex
	// held maps a transactional ID to its open transaction's producer
	// and the partitions it commits offsets for, per group.
	held map[string]*heldTxn
	// restored maps the transactional IDs of transactions open at start
	// to when their timeout passes.
	restored map[string]time.Time
	now      func() time.Time
}

// heldTxn is what an open transaction holds.
type heldTxn struct {
	producerID int64
	epoch      int16
	groups     map[string]map[heldPartition]bool
}

// heldPartition is a topic partition as a request names it: by topic
// name or, in newer versions, by topic ID.
type heldPartition struct {
	topic     string // the name, or "id:" and the hex topic ID
	partition int32
}

func topicKey(name string, id [16]byte) string {
	if id != ([16]byte{}) {
		return "id:" + hex.EncodeToString(id[:])
	}
	return name
}

func newStableOffsets() *stableOffsets {
	return &stableOffsets{held: map[string]*heldTxn{}, restored: map[string]time.Time{}, now: time.Now}
}

// restore notes the transactions kfake has open at start.
func (s *stableOffsets) restore(ctx context.Context, adm *kadm.Client) error {
	listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing", "PrepareCommit", "PrepareAbort"})
	if err != nil {
		return err
	}
	ids := listed.TransactionalIDs()
	if len(ids) == 0 {
		return nil
	}
	described, err := adm.DescribeTransactions(ctx, ids...)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, id := range ids {
		timeout := maxTxnTimeout
		if d, ok := described[id]; ok && d.Err == nil && d.TimeoutMillis > 0 {
			timeout = time.Duration(d.TimeoutMillis) * time.Millisecond
		}
		s.restored[id] = now.Add(timeout)
	}
	return nil
}

// StableOffsetsPerPartition makes a kfake cluster used directly (a
// test's production-like cluster, whose broker moves the test drives)
// answer OffsetFetch with require_stable per partition, as Kafka does and
// as the embedded broker does (see stableOffsets).
func StableOffsetsPerPartition(c *kfake.Cluster) { newStableOffsets().watch(c) }

// watch installs the control functions on c; each only looks at (or, for
// an OffsetFetch, narrows) the request, and kfake handles it as usual.
func (s *stableOffsets) watch(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		s.commitOffsets(req.(*kmsg.TxnOffsetCommitRequest))
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r := req.(*kmsg.EndTxnRequest)
		s.ended(r.TransactionalID, r.ProducerID, r.ProducerEpoch, false)
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.InitProducerID), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		// A valid InitProducerID of the ID aborts its open transaction
		// (kfake, like Kafka, fences the earlier producer).
		r := req.(*kmsg.InitProducerIDRequest)
		if r.TransactionalID != nil && r.TransactionTimeoutMillis > 0 && r.TransactionTimeoutMillis <= int32(maxTxnTimeout.Milliseconds()) {
			s.ended(*r.TransactionalID, r.ProducerID, r.ProducerEpoch, true)
		}
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		s.narrow(req.(*kmsg.OffsetFetchRequest))
		return nil, nil, false
	})
}

func (s *stableOffsets) commitOffsets(r *kmsg.TxnOffsetCommitRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.held[r.TransactionalID]
	if h == nil || h.producerID != r.ProducerID || h.epoch != r.ProducerEpoch {
		// A new transaction's (or a new producer's) first commit: what
		// an earlier one held stays held too until the ID's transaction
		// ends, so keep it.
		if h == nil {
			h = &heldTxn{groups: map[string]map[heldPartition]bool{}}
			s.held[r.TransactionalID] = h
		}
		h.producerID, h.epoch = r.ProducerID, r.ProducerEpoch
	}
	parts := h.groups[r.Group]
	if parts == nil {
		parts = map[heldPartition]bool{}
		h.groups[r.Group] = parts
	}
	for _, t := range r.Topics {
		for _, p := range t.Partitions {
			parts[heldPartition{topicKey(t.Topic, t.TopicID), p.Partition}] = true
		}
	}
}

// ended forgets what a transactional ID's transaction held when its
// producer ends it (EndTxn with the producer ID and epoch of its offset
// commits) or a new producer of the ID aborts it (init, with an epoch not
// above the transaction's, or no producer ID).
func (s *stableOffsets) ended(id string, producerID int64, epoch int16, init bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h := s.held[id]; h != nil {
		same := h.producerID == producerID && h.epoch == epoch
		if init {
			same = producerID < 0 || h.producerID == producerID && epoch <= h.epoch
		}
		if !same {
			return
		}
		delete(s.held, id)
	}
	delete(s.restored, id)
}

// narrow drops require_stable from an OffsetFetch when no open
// transaction holds offsets of a partition it asks for.
func (s *stableOffsets) narrow(r *kmsg.OffsetFetchRequest) {
	if !r.RequireStable {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for id, until := range s.restored {
		if now.Before(until) {
			return // a transaction from before the start may hold any
		}
		delete(s.restored, id)
	}
	type asked struct {
		group string
		all   bool // every partition of the group
		parts []heldPartition
	}
	var reqs []asked
	if r.Version >= 8 {
		for _, g := range r.Groups {
			a := asked{group: g.Group, all: g.Topics == nil}
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					a.parts = append(a.parts, heldPartition{topicKey(t.Topic, t.TopicID), p})
				}
			}
			reqs = append(reqs, a)
		}
	} else {
		a := asked{group: r.Group, all: r.Topics == nil}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				a.parts = append(a.parts, heldPartition{t.Topic, p})
			}
		}
		reqs = append(reqs, a)
	}
	for _, a := range reqs {
		for _, h := range s.held {
			parts := h.groups[a.group]
			if len(parts) == 0 {
				continue
			}
			if a.all {
				return
			}
			for _, p := range a.parts {
				if parts[p] {
					return
				}
			}
			// A topic named by ID in one request and by name in the
			// other cannot be matched: take it as held.
			for held := range parts {
				for _, p := range a.parts {
					if held.partition == p.partition && isID(held.topic) != isID(p.topic) {
						return
					}
				}
			}
		}
	}
	r.RequireStable = false
}

// maxTxnTimeout is Kafka's (and kfake's) default transaction.max.timeout.ms.
const maxTxnTimeout = 15 * time.Minute

func isID(topic string) bool { return len(topic) > 3 && topic[:3] == "id:" }
