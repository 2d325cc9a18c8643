package engine

import (
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/types"
)

// sourcePartitioner is the engine's own producer's partitioner (INSERT
// VALUES): a keyed record for a topic a source declared
// PARTITIONER='crc32' goes to the partition of its key's CRC32, as the
// topic's librdkafka producers put it, so that joins and pull queries
// find it; everything else as Kafka's default partitioner (murmur2).
type sourcePartitioner struct {
	e   *Engine
	def kgo.Partitioner
}

func (p sourcePartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return sourceTopicPartitioner{p.def.ForTopic(topic), p.e, topic}
}

type sourceTopicPartitioner struct {
	kgo.TopicPartitioner
	e     *Engine
	topic string
}

func (p sourceTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if len(r.Key) > 0 && p.e.topicPartitioner(p.topic) == types.CRC32 {
		return int(types.CRC32Partition(r.Key, int32(n)))
	}
	return p.TopicPartitioner.Partition(r, n)
}

// topicPartitioner is the partitioner the sources over topic declared:
// crc32 when one declared it, else murmur2. Asked per keyed record the
// engine produces (INSERT VALUES, the processing log): a map lookup,
// the map made again only when the catalog changed.
func (e *Engine) topicPartitioner(topic string) types.Partitioner {
	if e.cat == nil {
		return types.Murmur2
	}
	snap := e.cat.Snapshot()
	c := e.crcTopics.Load()
	if c == nil || c.snap != snap {
		c = &crcTopics{snap: snap, topics: map[string]bool{}}
		for _, s := range snap.Sources() {
			if s.Partitioner == types.CRC32 {
				c.topics[s.Topic] = true
			}
		}
		e.crcTopics.Store(c)
	}
	if c.topics[topic] {
		return types.CRC32
	}
	return types.Murmur2
}

// crcTopics are the topics of a catalog snapshot's sources declared
// PARTITIONER='crc32'.
type crcTopics struct {
	snap   *catalog.Snapshot
	topics map[string]bool
}
