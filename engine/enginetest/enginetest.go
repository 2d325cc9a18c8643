// Package enginetest runs the engine without a broker: a command topic
// and a topic administration in memory, and Config, which opens an
// engine on them that plans, records and registers every statement as
// it does live but runs no query (engine.Config.Offline).
//
//	statement ─▶ engine.Execute ─▶ CommandTopic (JSON, as on Kafka)
//	                            ├─▶ Topics (created, configs, deleted)
//	                            └─▶ exec.New (built, never run)
//
// A second engine opened on the same CommandTopic replays it, as a
// restarted server does.
package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
)

// Config returns an engine configuration over topics and the command
// topic cmds, offline, with state under stateDir.
func Config(topics *Topics, cmds *CommandTopic, stateDir string) engine.Config {
	return engine.Config{
		Offline: true, TopicAdmin: topics, CommandLog: cmds.Log(),
		StateDir: stateDir, InstanceID: "test",
	}
}

// CommandTopic is a command topic in memory. Commands are stored as
// JSON, as on Kafka, and take two offsets each (the record and its
// transaction's commit marker), so query IDs are those a server gives.
type CommandTopic struct {
	mu      sync.Mutex
	records [][]byte // by offset/2
	changed chan struct{}
}

// NewCommandTopic returns an empty command topic.
func NewCommandTopic() *CommandTopic {
	return &CommandTopic{changed: make(chan struct{})}
}

// Log returns a reader and writer of the topic, at its start: what one
// engine (one server start) uses.
func (t *CommandTopic) Log() engine.CommandLog { return &commandLog{t: t} }

// Commands returns the commands recorded so far, in order.
func (t *CommandTopic) Commands() []catalog.Command {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]catalog.Command, len(t.records))
	for i, b := range t.records {
		_ = json.Unmarshal(b, &out[i])
	}
	return out
}

type commandLog struct {
	t   *CommandTopic
	pos int64
}

func (l *commandLog) Topic() string { return "sqlstreams_command_topic" }

func (l *commandLog) EndOffset(context.Context) (int64, error) {
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	return 2 * int64(len(l.t.records)), nil
}

func (l *commandLog) Position() int64 { return l.pos }

func (l *commandLog) Read(ctx context.Context) ([]catalog.Entry, int64, error) {
	for {
		l.t.mu.Lock()
		end, changed := 2*int64(len(l.t.records)), l.t.changed
		var out []catalog.Entry
		for off := l.pos; off < end; off += 2 {
			e := catalog.Entry{Offset: off}
			if err := json.Unmarshal(l.t.records[off/2], &e.Command); err != nil {
				e.Err = fmt.Errorf("command at offset %d is not a command: %w", off, err)
			}
			out = append(out, e)
		}
		l.t.mu.Unlock()
		if end > l.pos {
			l.pos = end
			return out, l.pos, nil
		}
		select {
		case <-ctx.Done():
			return nil, l.pos, ctx.Err()
		case <-changed:
		}
	}
}

func (l *commandLog) ReadTo(ctx context.Context, end int64, apply func(catalog.Entry) error) error {
	for l.pos < end {
		es, _, err := l.Read(ctx)
		for _, e := range es {
			if aerr := apply(e); aerr != nil {
				return fmt.Errorf("command at offset %d (%q): %w", e.Offset, e.Command.Statement, aerr)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (l *commandLog) Append(_ context.Context, c catalog.Command) (int64, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return 0, err
	}
	l.t.mu.Lock()
	defer l.t.mu.Unlock()
	l.t.records = append(l.t.records, b)
	close(l.t.changed)
	l.t.changed = make(chan struct{})
	return 2 * int64(len(l.t.records)-1), nil
}

func (l *commandLog) Close() {}

// Topics is a topic administration in memory: topics with their
// partitions and configs.
type Topics struct {
	mu     sync.Mutex
	topics map[string]*Topic
}

// Topic is one topic of Topics.
type Topic struct {
	Partitions  int32
	Replication int16
	Configs     map[string]string
}

// NewTopics returns a cluster with no topics.
func NewTopics() *Topics { return &Topics{topics: map[string]*Topic{}} }

var _ engine.TopicAdmin = (*Topics)(nil)

// Add creates a topic, as a producer outside the engine would.
func (t *Topics) Add(name string, partitions int32) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.topics[name] = &Topic{Partitions: partitions, Replication: -1, Configs: map[string]string{}}
}

// Names returns the topics' names, sorted.
func (t *Topics) Names() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return sortedKeys(t.topics)
}

// Get returns a copy of a topic.
func (t *Topics) Get(name string) (Topic, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tp, ok := t.topics[name]
	if !ok {
		return Topic{}, false
	}
	c := *tp
	c.Configs = maps.Clone(tp.Configs)
	return c, true
}

func (t *Topics) Describe(_ context.Context, topics ...string) (map[string]engine.TopicDetail, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(topics) == 0 {
		topics = sortedKeys(t.topics)
	}
	out := make(map[string]engine.TopicDetail, len(topics))
	for _, name := range topics {
		if tp, ok := t.topics[name]; ok {
			out[name] = engine.TopicDetail{Partitions: tp.Partitions}
		} else {
			out[name] = engine.TopicDetail{Err: kerr.UnknownTopicOrPartition}
		}
	}
	return out, nil
}

func (t *Topics) Create(_ context.Context, topic string, partitions int32, replication int16, configs map[string]*string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.topics[topic]; ok {
		return kerr.TopicAlreadyExists
	}
	if partitions <= 0 {
		return kerr.InvalidPartitions
	}
	tp := &Topic{Partitions: partitions, Replication: replication, Configs: map[string]string{}}
	setConfigs(tp, configs)
	t.topics[topic] = tp
	return nil
}

func (t *Topics) SetConfigs(_ context.Context, topic string, configs map[string]*string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	tp, ok := t.topics[topic]
	if !ok {
		return kerr.UnknownTopicOrPartition
	}
	setConfigs(tp, configs)
	return nil
}

func (t *Topics) Delete(_ context.Context, topics ...string) (map[string]error, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]error, len(topics))
	for _, name := range topics {
		if _, ok := t.topics[name]; !ok {
			out[name] = kerr.UnknownTopicOrPartition
			continue
		}
		delete(t.topics, name)
		out[name] = nil
	}
	return out, nil
}

func setConfigs(tp *Topic, configs map[string]*string) {
	for k, v := range configs {
		if v == nil {
			delete(tp.Configs, k)
		} else {
			tp.Configs[k] = *v
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
