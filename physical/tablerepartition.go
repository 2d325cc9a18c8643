package physical

import (
	"fmt"

	"github.com/sqlstreams/sqlstreams/types"
)

var _ Op = (*TableRepartition)(nil)

// TableRepartition writes a table's records, as they are, to an internal
// topic keyed by the table's key columns written again with one key
// schema (KeyFormat, KeyOptions): the key a join's repartitioned stream
// writes for the same value. A table in a schema-registry key format
// whose producers wrote a key value under another schema ID (other
// bytes, another partition) then has its row in the partition the
// stream's row of that value goes to, as ksqlDB repartitions such a
// table before a join. Values, timestamps and headers are kept; a
// tombstone stays one. Its input is the table's source, Raw.
//
// The topic is compacted: the join's store of the table restores from
// it (Store.SourceTopicChangelog), as a source table's store restores
// from the table's topic.
type TableRepartition struct {
	Topic string
	// In is the table's row layout; TopicKeyFormat and TopicKeyOptions
	// decode its records' keys.
	In              types.Schema
	TopicKeyFormat  string
	TopicKeyOptions types.FormatOptions
	// KeyCols are the positions in In of the key columns the topic's
	// keys hold, in KeySchema's order.
	KeyCols    []int
	KeySchema  types.Schema
	KeyFormat  string
	KeyOptions types.FormatOptions
	// Partitions is the topic's partition count (the table's).
	Partitions int32
}

func (r *TableRepartition) Schema() types.Schema { return r.In }
func (r *TableRepartition) Explain(name string) string {
	return fmt.Sprintf("  --> %s (topic: %s, the table's records, key: %s)\n", name, r.Topic, r.KeyFormat)
}
func (r *TableRepartition) internalTopic() InternalTopic {
	return InternalTopic{Name: r.Topic, Partitions: r.Partitions, Compact: true}
}
func (r *TableRepartition) shape() string {
	return fmt.Sprintf("table repartition %s key %s", r.Topic, r.KeySchema)
}
