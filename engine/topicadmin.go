package engine

import (
	"context"
	"errors"
	"sort"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TopicAdmin is what the engine needs of Kafka's topic administration:
// sources' topics, queries' internal topics and the processing log are
// described, created, aligned and deleted through it. The engine's own
// is kadm over its client (Config.TopicAdmin nil); a test gives a memory
// one (enginetest.Topics) to run the engine without a broker.
type TopicAdmin interface {
	// Describe returns the topics named, or every topic the service may
	// see (Kafka's internal ones aside) when none are. A named topic
	// that does not exist has kerr.UnknownTopicOrPartition as its Err,
	// one the service may not describe an authorization error. A topic
	// created a moment ago, here or by another instance, is seen.
	Describe(ctx context.Context, topics ...string) (map[string]TopicDetail, error)
	// Create creates a topic with partitions, the replication factor
	// (-1: the broker's default) and configs. A topic that exists
	// already is kerr.TopicAlreadyExists.
	Create(ctx context.Context, topic string, partitions int32, replication int16, configs map[string]*string) error
	// SetConfigs sets configs on a topic; its other configs stay.
	SetConfigs(ctx context.Context, topic string, configs map[string]*string) error
	// Delete deletes topics and returns each one's own error
	// (kerr.UnknownTopicOrPartition for one that does not exist).
	Delete(ctx context.Context, topics ...string) (map[string]error, error)
}

// TopicDetail is one topic as TopicAdmin.Describe answers.
type TopicDetail struct {
	Partitions int32
	// Err is why the topic could not be described (it does not exist,
	// or the service may not see it); nil for a topic that exists.
	Err error
}

// topicNames returns the names of ds that exist, sorted.
func topicNames(ds map[string]TopicDetail) []string {
	var out []string
	for name, d := range ds {
		if d.Err == nil {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// hasTopic reports whether ds says that topic exists (or may: one the
// service may not describe counts), as kadm.TopicDetails.Has.
func hasTopic(ds map[string]TopicDetail, topic string) bool {
	d, ok := ds[topic]
	return ok && !errors.Is(d.Err, kerr.UnknownTopicOrPartition)
}

// kafkaTopics is TopicAdmin over kadm.
type kafkaTopics struct {
	cl  *kgo.Client
	adm *kadm.Client
}

var _ TopicAdmin = kafkaTopics{}

func (k kafkaTopics) Describe(ctx context.Context, topics ...string) (map[string]TopicDetail, error) {
	details, err := k.adm.ListTopics(ctx, topics...)
	if err == nil && len(topics) > 0 {
		// kadm answers from metadata cached for MetadataMinAge: a topic
		// created (here, or by another instance) a moment ago may be
		// missing from it. Ask the broker.
		var missing []string
		for _, t := range topics {
			if d, ok := details[t]; !ok || d.Err != nil {
				missing = append(missing, t)
			}
		}
		if len(missing) > 0 {
			k.cl.PurgeTopicsFromClient(missing...)
			details, err = k.adm.ListTopics(ctx, topics...)
		}
	}
	if err != nil {
		return nil, err
	}
	out := make(map[string]TopicDetail, len(details))
	for name, d := range details {
		out[name] = TopicDetail{Partitions: int32(len(d.Partitions)), Err: d.Err}
	}
	return out, nil
}

func (k kafkaTopics) Create(ctx context.Context, topic string, partitions int32, replication int16, configs map[string]*string) error {
	resp, err := k.adm.CreateTopic(ctx, partitions, replication, configs, topic)
	if err == nil {
		err = resp.Err
	}
	return err
}

func (k kafkaTopics) SetConfigs(ctx context.Context, topic string, configs map[string]*string) error {
	var alter []kadm.AlterConfig
	for name, v := range configs {
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: name, Value: v})
	}
	resps, err := k.adm.AlterTopicConfigs(ctx, alter, topic)
	if err == nil {
		for _, r := range resps {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	return err
}

func (k kafkaTopics) Delete(ctx context.Context, topics ...string) (map[string]error, error) {
	resps, err := k.adm.DeleteTopics(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := make(map[string]error, len(resps))
	for _, r := range resps {
		out[r.Topic] = r.Err
	}
	return out, nil
}
