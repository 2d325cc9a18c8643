package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Command is one catalog-changing statement as stored in the command topic.
type Command struct {
	// Statement is the statement text as the user wrote it.
	Statement string `json:"statement"`
	// QueryID is the ID assigned to the persistent query the statement
	// starts, so that replay assigns the same one.
	QueryID string `json:"queryId,omitempty"`
	// Props are the session properties in force when it ran (they decide,
	// e.g., where a new query starts reading).
	Props map[string]string `json:"props,omitempty"`
	// KeySchemaID and ValueSchemaID are the registered schemas a CREATE
	// STREAM|TABLE without a column list took its columns from, so that
	// a replay gets the same columns.
	KeySchemaID   int `json:"keySchemaId,omitempty"`
	ValueSchemaID int `json:"valueSchemaId,omitempty"`
}

// CommandTopic returns the command topic's name for a service ID.
func CommandTopic(serviceID string) string { return "_" + serviceID + "_command_topic" }

// CommandLog appends commands to the command topic and replays them. It
// writes with a transactional producer, so a command is either wholly in
// the log or not at all, and reads read_committed.
type CommandLog struct {
	topic string
	cl    *kgo.Client
	adm   *kadm.Client
	next  int64 // offset after the last command replayed or appended
}

// OpenCommandLog connects to the brokers and creates the command topic
// (one partition, infinite retention) when it is missing.
func OpenCommandLog(ctx context.Context, brokers []string, serviceID string) (*CommandLog, error) {
	topic := CommandTopic(serviceID)
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.TransactionalID(topic+"_producer"),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	)
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"retention.ms":   ptr("-1"),
		"cleanup.policy": ptr("delete"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		cl.Close()
		return nil, fmt.Errorf("creating command topic %s: %w", topic, err)
	}
	return &CommandLog{topic: topic, cl: cl, adm: adm}, nil
}

func ptr(s string) *string { return &s }

// Topic returns the command topic's name.
func (l *CommandLog) Topic() string { return l.topic }

// Replay reads every committed command from the start of the topic up to
// its last stable offset and calls apply for each in order. An apply error
// is returned with the command's offset; replay stops there.
func (l *CommandLog) Replay(ctx context.Context, apply func(offset int64, c Command) error) error {
	offs, err := l.adm.ListCommittedOffsets(ctx, l.topic)
	if err != nil {
		return err
	}
	o, ok := offs.Lookup(l.topic, 0)
	if !ok || o.Err != nil {
		return fmt.Errorf("last stable offset of %s: %v", l.topic, o.Err)
	}
	stable := o.Offset
	if stable == 0 {
		return nil
	}
	rd, err := kgo.NewClient(
		kgo.SeedBrokers(l.cl.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.topic: {0: kgo.NewOffset().AtStart()}}),
	)
	if err != nil {
		return err
	}
	defer rd.Close()
	// Each command is its own transaction, so the offset after the last
	// committed command is at most stable-1 (its commit marker takes one
	// offset). When the tail holds aborted commands, no record reaches
	// that point; a quiet poll then ends the replay.
	for l.next < stable-1 {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := rd.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return err
		}
		if fs.Empty() {
			break
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				ferr = err
			}
		})
		if ferr != nil {
			return ferr
		}
		for _, r := range fs.Records() {
			if r.Offset >= stable {
				break
			}
			var c Command
			if err := json.Unmarshal(r.Value, &c); err != nil {
				return fmt.Errorf("command at offset %d: %w", r.Offset, err)
			}
			if err := apply(r.Offset, c); err != nil {
				return fmt.Errorf("command at offset %d (%q): %w", r.Offset, c.Statement, err)
			}
			l.next = r.Offset + 1
		}
	}
	return nil
}

// Append writes c to the command topic in its own transaction and returns
// its offset.
func (l *CommandLog) Append(ctx context.Context, c Command) (int64, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return 0, err
	}
	if err := l.cl.BeginTransaction(); err != nil {
		return 0, err
	}
	res := l.cl.ProduceSync(ctx, &kgo.Record{Topic: l.topic, Partition: 0, Value: b})
	rec, perr := res.First()
	commit := kgo.TransactionEndTry(perr == nil)
	if err := l.cl.EndTransaction(ctx, commit); err != nil {
		return 0, fmt.Errorf("committing command: %w", err)
	}
	if perr != nil {
		return 0, fmt.Errorf("writing command: %w", perr)
	}
	l.next = rec.Offset + 1
	return rec.Offset, nil
}

// Close releases the log's clients.
func (l *CommandLog) Close() { l.cl.Close() }
