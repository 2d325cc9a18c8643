package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
)

// Command is one catalog-changing statement as stored in the command topic.
type Command struct {
	// Statement is the statement text as the user wrote it.
	Statement string `json:"statement"`
	// QueryID is the ID of the persistent query the statement starts when
	// the command names it: commands written before query IDs derived
	// from the command's offset carry theirs, so that their queries keep
	// their names (application IDs, internal topics) after an upgrade;
	// CREATE OR REPLACE carries the ID it replaces. Other commands leave
	// it empty and the query is named after the command's offset.
	QueryID string `json:"queryId,omitempty"`
	// Props are the session properties in force when it ran (they decide,
	// e.g., where a new query starts reading).
	Props map[string]string `json:"props,omitempty"`
	// KeySchemaID and ValueSchemaID are the registered schemas a CREATE
	// STREAM|TABLE without a column list took its columns from, so that
	// a replay gets the same columns.
	KeySchemaID   int `json:"keySchemaId,omitempty"`
	ValueSchemaID int `json:"valueSchemaId,omitempty"`
	// Plan records what the command creates: the source it registers,
	// the persistent query it starts (its physical topology) and how
	// that runs, encoded by package plan with its plan-format version.
	// A command with a plan is carried out from it on replay, restart
	// and upgrade, never by binding Statement again, so that a later
	// change to binding or planning cannot change what runs. Commands
	// recorded before plans have none: they are bound once with their
	// recorded Props, and a migration command records their plan.
	Plan json.RawMessage `json:"plan,omitempty"`
	// Migrates, on a migration command, is the offset of the command
	// (recorded before plans) whose plan it records, with the query's
	// ID in QueryID. Such a command changes nothing where it stands: a
	// replay carries out the command at Migrates from its Plan. Several
	// migration commands of one offset are harmless; the first counts.
	// Its Statement is a comment, which builds before plans skip.
	Migrates *int64 `json:"migrates,omitempty"`
}

// CommandTopic returns the command topic's name for a service ID. Like
// every topic, group and transactional ID the service names itself, it
// starts with "<service id>_", so that one prefixed ACL set covers the
// service (docs/kafka-acls.md).
func CommandTopic(serviceID string) string { return serviceID + "_command_topic" }

// LegacyCommandTopic is the command topic's name for services created
// before the one prefix: they keep it (see OpenCommandLog).
func LegacyCommandTopic(serviceID string) string { return "_" + serviceID + "_command_topic" }

// CommandTransactionalID is the transactional ID instance instanceID
// writes the command topic with. Each instance has its own, so that one
// instance starting does not fence another's catalog writes; a restarted
// instance fences its own zombie.
func CommandTransactionalID(serviceID, instanceID string) string {
	return commandTransactionalID(CommandTopic(serviceID), instanceID)
}

func commandTransactionalID(topic, instanceID string) string {
	return topic + "_producer_" + instanceID
}

// Entry is a command read from the command topic, at its offset.
type Entry struct {
	Offset  int64
	Command Command
	// Err is set when the record is not a command (no sqlstreams wrote
	// it): every instance skips it alike.
	Err error
}

// CommandLog appends commands to the command topic and reads them back.
// It writes with a transactional producer, so a command is either wholly
// in the log or not at all, and reads read_committed. Every instance of a
// service writes the one partition; the topic's order is the catalog's.
//
// Append may be called concurrently with Read; Read must not be called
// concurrently with itself.
type CommandLog struct {
	topic string
	kp    kafka.Profile // for explaining the broker's refusals
	txnID string
	// mu guards cl and adm, which renewProducer replaces (Append
	// runs one at a time; EndOffset may run beside it).
	mu  sync.Mutex
	cl  *kgo.Client // transactional producer and admin
	adm *kadm.Client
	rd  *kgo.Client // read_committed reader, control records kept
	pos int64       // the reader's position: offset after the last record it returned
}

// OpenCommandLog connects to the brokers and creates the command topic
// (one partition, infinite retention) when it is missing. A service whose
// command topic has the legacy name (LegacyCommandTopic) keeps it, and
// its producer's transactional ID with it. instanceID names this
// instance's transactional producer (see [CommandTransactionalID]).
func OpenCommandLog(ctx context.Context, kp kafka.Profile, serviceID, instanceID string) (*CommandLog, error) {
	topic, exists, err := commandTopicOf(ctx, kp, serviceID)
	if err != nil {
		return nil, err
	}
	cl, err := newCommandProducer(kp, topic, commandTransactionalID(topic, instanceID))
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	if !exists {
		resp, err := adm.CreateTopic(ctx, 1, kp.Topics.ReplicationFactor(), kp.Topics.With(map[string]*string{
			"retention.ms":   ptr("-1"),
			"cleanup.policy": ptr("delete"),
		}), topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			cl.Close()
			return nil, fmt.Errorf("creating command topic %s: %w", topic, kp.Explain(err,
				kafka.Permission{Operation: kafka.Create, Resource: kafka.Resource{Type: kafka.Topic, Name: topic}}))
		}
	}
	// Control records (commit and abort markers) come too, so the reader
	// knows its position even when the topic ends in markers or aborted
	// commands: replay ends at the end offset, not at a quiet poll.
	rd, err := kp.NewClient(
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
	)
	if err != nil {
		cl.Close()
		return nil, err
	}
	return &CommandLog{topic: topic, kp: kp, txnID: commandTransactionalID(topic, instanceID), cl: cl, adm: adm, rd: rd}, nil
}

// newCommandProducer returns the transactional producer (and admin
// client) of a command log.
func newCommandProducer(kp kafka.Profile, topic, txnID string) (*kgo.Client, error) {
	return kp.NewClient(
		kgo.TransactionalID(txnID),
		kgo.TransactionTimeout(commandTxnTimeout),
		kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
	)
}

// commandTxnTimeout is the command producer's transaction timeout.
const commandTxnTimeout = 10 * time.Second

// decideWait is how long Append waits for the broker to decide a
// command's committed transaction (tests shorten it).
var decideWait = commandTxnTimeout

func ptr(s string) *string { return &s }

// commandTopicOf returns the service's command topic, and whether it
// exists: the legacy name when only that topic exists, else the current
// one.
func commandTopicOf(ctx context.Context, kp kafka.Profile, serviceID string) (string, bool, error) {
	topic, legacy := CommandTopic(serviceID), LegacyCommandTopic(serviceID)
	cl, err := kp.NewClient()
	if err != nil {
		return "", false, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	details, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return "", false, fmt.Errorf("looking up command topic %s: %w", topic, err)
	}
	if details.Has(topic) {
		return topic, true, nil
	}
	// A principal with ACLs on the one prefix only may not see the
	// legacy name: then it is not this service's.
	if old, err := adm.ListTopics(ctx, legacy); err == nil && old.Has(legacy) {
		return legacy, true, nil
	}
	return topic, false, nil
}

// Topic returns the command topic's name.
func (l *CommandLog) Topic() string { return l.topic }

// EndOffset returns the command topic's last stable offset: every
// command below it is decided (committed or aborted).
func (l *CommandLog) EndOffset(ctx context.Context) (int64, error) {
	l.mu.Lock()
	adm := l.adm
	l.mu.Unlock()
	offs, err := adm.ListCommittedOffsets(ctx, l.topic)
	if err != nil {
		return 0, l.explain(err, kafka.Describe)
	}
	o, ok := offs.Lookup(l.topic, 0)
	if !ok {
		return 0, fmt.Errorf("last stable offset of %s: partition 0 missing", l.topic)
	}
	if o.Err != nil {
		return 0, fmt.Errorf("last stable offset of %s: %w", l.topic, l.explain(o.Err, kafka.Describe))
	}
	return o.Offset, nil
}

// Position returns the offset after the last record Read returned.
func (l *CommandLog) Position() int64 { return l.pos }

// Read waits for the next committed commands (until ctx ends) and returns
// them in order, with the reader's new position. It returns no entries and
// a higher position when only markers came.
func (l *CommandLog) Read(ctx context.Context) ([]Entry, int64, error) {
	fs := l.rd.PollFetches(ctx)
	if fs.IsClientClosed() {
		return nil, l.pos, kgo.ErrClientClosed
	}
	var ferr error
	fs.EachError(func(_ string, _ int32, err error) {
		if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			ferr = err
		}
	})
	if ferr != nil {
		return nil, l.pos, l.explain(ferr, kafka.Read)
	}
	var out []Entry
	for _, r := range fs.Records() {
		if r.Offset+1 > l.pos {
			l.pos = r.Offset + 1
		}
		if r.Attrs.IsControl() {
			continue
		}
		e := Entry{Offset: r.Offset}
		if err := json.Unmarshal(r.Value, &e.Command); err != nil {
			e.Err = fmt.Errorf("command at offset %d is not a command: %w", r.Offset, err)
		}
		out = append(out, e)
	}
	return out, l.pos, ctx.Err()
}

// ReadTo reads the commands up to offset end (exclusive; an EndOffset
// answer) and calls apply for each in order. An apply error stops it and
// is returned with the command's offset.
func (l *CommandLog) ReadTo(ctx context.Context, end int64, apply func(Entry) error) error {
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

// Append writes c to the command topic in its own transaction and returns
// its offset.
func (l *CommandLog) Append(ctx context.Context, c Command) (int64, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return 0, err
	}
	var off int64
	for attempt := 1; ; attempt++ {
		off, err = l.appendOnce(ctx, b)
		if err == nil || attempt == appendAttempts || !rewritable(err) {
			break
		}
		// Nothing of the command is in the log. A new producer of the
		// same transactional ID starts from fresh sequence numbers, and
		// its first transaction fences one the old producer left open
		// (the broker aborts it).
		if rerr := l.renewProducer(); rerr != nil {
			return 0, fmt.Errorf("%w; renewing the producer: %w", err, rerr)
		}
	}
	return off, l.explain(err, kafka.Write)
}

// appendAttempts is how often Append writes a command whose transaction
// did not commit before it gives up.
const appendAttempts = 4

// rewritable reports whether err says a command's transaction did not
// commit, so that it can be written again by a new producer:
//
//   - errCommitAborted: franz-go (v1.22.3) aborts a transaction whose
//     only produce succeeded, reports success, and keeps the partition's
//     sequence number at the epoch the abort bumped. It happens when
//     the transaction's produce is the client's first to the topic and
//     the metadata goroutine is preempted between handing the buffered
//     record to its partition and storing the partition: the record is
//     written and acknowledged, and EndTransaction, looking at the
//     stored partitions, finds none added to the transaction (seen in
//     about 1 in 1,000 fresh command logs under the race detector and
//     two busy CPUs).
//   - kerr.OutOfOrderSequenceNumber: the next transaction of that
//     client, whose sequence was not reset.
//   - errCommitLeftOpen: a commit the broker never decided.
func rewritable(err error) bool {
	return errors.Is(err, errCommitAborted) || errors.Is(err, kerr.OutOfOrderSequenceNumber) || errors.Is(err, errCommitLeftOpen)
}

// errCommitLeftOpen and errCommitAborted say a command's transaction
// was still open, or aborted, after the producer reported it committed.
var (
	errCommitLeftOpen = errors.New("the command's transaction was still open after its commit")
	errCommitAborted  = errors.New("the command's transaction was aborted, though the producer reported it committed")
)

// renewProducer replaces the transactional producer with a new one of
// the same transactional ID: its first transaction fences the old one's.
func (l *CommandLog) renewProducer() error {
	cl, err := newCommandProducer(l.kp, l.topic, l.txnID)
	if err != nil {
		return err
	}
	l.mu.Lock()
	old := l.cl
	l.cl, l.adm = cl, kadm.NewClient(cl)
	l.mu.Unlock()
	old.Close()
	return nil
}

// awaitCommitted checks that the command at off, whose transaction the
// producer reported committed, is committed: it waits until the last
// stable offset passes it (errCommitLeftOpen when that does not happen
// within the transaction timeout), then reads it read_committed
// (errCommitAborted when the broker aborted it). franz-go reports such
// commits (rewritable says when); the engine would run the command's
// query, and the next start's replay, reading committed commands only,
// would not have it.
func (l *CommandLog) awaitCommitted(ctx context.Context, off int64) error {
	deadline := time.Now().Add(decideWait)
	for wait := time.Millisecond; ; wait = min(2*wait, 200*time.Millisecond) {
		end, err := l.EndOffset(ctx)
		if err != nil {
			return err
		}
		if end > off {
			break
		}
		if time.Now().After(deadline) {
			return errCommitLeftOpen
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	rd, err := l.kp.NewClient(
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.KeepControlRecords(),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.topic: {0: kgo.NewOffset().At(off)}}),
	)
	if err != nil {
		return err
	}
	defer rd.Close()
	for {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return ferr
		}
		if recs := fs.Records(); len(recs) > 0 {
			if r := recs[0]; r.Offset == off && !r.Attrs.IsControl() {
				return nil
			}
			return errCommitAborted
		}
	}
}

// explain explains a refusal of op on the command topic (or of WRITE on
// this instance's transactional id).
func (l *CommandLog) explain(err error, op kafka.Operation) error {
	return l.kp.Explain(err,
		kafka.Permission{Operation: op, Resource: kafka.Resource{Type: kafka.Topic, Name: l.topic}},
		kafka.Permission{Operation: kafka.Write, Resource: kafka.Resource{Type: kafka.TransactionalID, Name: l.txnID}})
}

// appendOnce writes one command in a transaction of its own.
func (l *CommandLog) appendOnce(ctx context.Context, b []byte) (int64, error) {
	l.mu.Lock()
	cl := l.cl
	l.mu.Unlock()
	if err := cl.BeginTransaction(); err != nil {
		return 0, err
	}
	res := cl.ProduceSync(ctx, &kgo.Record{Topic: l.topic, Partition: 0, Value: b})
	rec, perr := res.First()
	commit := kgo.TransactionEndTry(perr == nil)
	if err := cl.EndTransaction(ctx, commit); err != nil {
		return 0, fmt.Errorf("committing command: %w", err)
	}
	if perr != nil {
		return 0, fmt.Errorf("writing command: %w", perr)
	}
	if err := l.awaitCommitted(ctx, rec.Offset); err != nil {
		return 0, err
	}
	return rec.Offset, nil
}

// Close releases the log's clients.
func (l *CommandLog) Close() {
	l.rd.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cl.Close()
}
