package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/sql"
)

// ensureTopic creates topic with partitions when it is missing and
// partitions > 0, and returns the topic's partition count. A missing topic
// without partitions is an error, as in ksqlDB.
func (e *Engine) ensureTopic(ctx context.Context, topic string, partitions int32) (int32, error) {
	return e.ensureTopicConfig(ctx, topic, partitions, -1, nil)
}

// ensureInternalTopic is ensureTopic for a topic the service keeps for
// itself (a changelog, a repartition topic): created with the internal
// topics' replication settings (ksql.internal.topic.replicas and
// .min.insync.replicas) and these configs.
func (e *Engine) ensureInternalTopic(ctx context.Context, topic string, partitions int32, configs map[string]*string) (int32, error) {
	t := e.cfg.Kafka.Topics
	return e.ensureTopicConfig(ctx, topic, partitions, t.ReplicationFactor(), t.With(configs))
}

// ensureTopicConfig is ensureTopic with the replication factor (-1: the
// broker's default) and topic configs of a new topic.
func (e *Engine) ensureTopicConfig(ctx context.Context, topic string, partitions int32, repl int16, configs map[string]*string) (int32, error) {
	details, err := e.topics.Describe(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("looking up topic %s: %w", topic, e.cfg.Kafka.Explain(err,
			kafka.Permission{Operation: kafka.Describe, Resource: kafka.Resource{Type: kafka.Topic, Name: topic}}))
	}
	if d, ok := details[topic]; ok && kafka.Denied(d.Err) {
		// Not allowed to see it: whether it exists is unknown.
		return 0, fmt.Errorf("looking up topic %s: %w", topic, e.cfg.Kafka.Explain(d.Err,
			kafka.Permission{Operation: kafka.Describe, Resource: kafka.Resource{Type: kafka.Topic, Name: topic}}))
	}
	if d, ok := details[topic]; ok && d.Err == nil {
		n := d.Partitions
		if partitions > 0 && n != partitions {
			return 0, sql.Errorf(sql.CodeInvalidParameter, "topic %s exists with %d partitions, not %d", topic, n, partitions)
		}
		return n, nil
	}
	if partitions <= 0 {
		return 0, sql.Errorf(sql.CodeUndefinedObject, "topic %s does not exist; give PARTITIONS in WITH (…) to create it", topic)
	}
	err = e.topics.Create(ctx, topic, partitions, repl, configs)
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, fmt.Errorf("creating topic %s: %w", topic, e.cfg.Kafka.Explain(err,
			kafka.Permission{Operation: kafka.Create, Resource: kafka.Resource{Type: kafka.Topic, Name: topic}}))
	}
	return partitions, nil
}

// alignTopicConfig sets configs on an existing topic (incrementally:
// other settings stay): a window changelog created before window
// changelogs were compact,delete, or with another additional
// retention, gets its retention at the query's start. A cluster that
// refuses (no ALTER_CONFIGS permission) leaves the topic as it was,
// with a warning: the query runs, its changelog keeps growing.
func (e *Engine) alignTopicConfig(ctx context.Context, topic string, configs map[string]*string) {
	err := e.topics.SetConfigs(ctx, topic, configs)
	if err != nil {
		e.log.Warn("could not set a window changelog's cleanup policy and retention; it keeps every window", "topic", topic, "err", err)
	}
}
