package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/types"
)

// ProcessingLogTopic returns the processing log topic's name for a service
// ID: the records persistent queries skipped, with the reason, as JSON.
// It carries the service's one prefix, "<service id>_".
func ProcessingLogTopic(serviceID string) string { return serviceID + "_processing_log" }

// LegacyProcessingLogTopic is the processing log topic's default name for
// services created before the one prefix: one whose topic exists keeps it.
func LegacyProcessingLogTopic(serviceID string) string { return "_" + serviceID + "_processing_log" }

// processingLogEntry is one processing log record's value. The record's
// key and value travel base64-encoded (they may be any bytes), unless
// Config.ProcessingLogOmitRows.
type processingLogEntry struct {
	Time        time.Time `json:"time"`
	Query       string    `json:"query"`
	Topic       string    `json:"topic"`
	Partition   int32     `json:"partition"`
	Offset      int64     `json:"offset"`
	Error       string    `json:"error"`
	RecordKey   []byte    `json:"record_key,omitempty"`
	RecordValue []byte    `json:"record_value,omitempty"`
}

// ProcessingLogStream is the stream over the processing log topic that
// every server declares by default (ksqlDB's KSQL_PROCESSING_LOG), so that
// users can query the records their queries skipped:
//
//	SELECT query, topic, error FROM processing_log EMIT CHANGES;
const ProcessingLogStream = "PROCESSING_LOG"

// ProcessingLogConfig is ksqlDB's ksql.logging.processing.topic.* and
// ksql.logging.processing.stream.* settings. The zero value is the
// default: topic ProcessingLogTopic(service ID) with one partition and the
// broker's replication factor, created when missing; the stream
// PROCESSING_LOG over it, declared at start.
type ProcessingLogConfig struct {
	// Topic is the topic's name (ksql.logging.processing.topic.name).
	Topic string
	// Partitions and Replication size the topic when it is created
	// (….topic.partitions, ….topic.replication.factor; 0 for the
	// defaults: 1 and the broker's).
	Partitions  int32
	Replication int16
	// NoTopicCreate leaves a missing topic missing
	// (….topic.auto.create=false): entries then go to the server log
	// only.
	NoTopicCreate bool
	// Stream is the stream's name (ksql.logging.processing.stream.name).
	Stream string
	// NoStream declares no stream (….stream.auto.create=false).
	NoStream bool
}

// processingLogTopic returns the processing log topic's name (chosen by
// openProcessingLog).
func (e *Engine) processingLogTopic() string {
	if t := e.cfg.ProcessingLog.Topic; t != "" {
		return t
	}
	return e.plogTopic
}

// declareProcessingLog adds the processing log stream to the catalog,
// unless it is turned off or a stream or table of that name exists. It is
// not a command: every server declares it at start.
func (e *Engine) declareProcessingLog() {
	name := e.cfg.ProcessingLog.Stream
	if name == "" {
		name = ProcessingLogStream
	}
	if e.cfg.ProcessingLog.NoStream || e.plogMissing {
		return
	}
	if _, ok := e.cat.Source(name); ok {
		return
	}
	col := func(name string, t types.Type) types.Column { return types.Column{Name: name, Type: t} }
	_ = e.cat.AddSource(&catalog.Source{
		Name: name, Kind: catalog.Stream, Topic: e.processingLogTopic(),
		KeyFormat: types.FormatNone, ValueFormat: types.FormatJSON, Partitions: e.plogPartitions, IsSource: true,
		SQL: "(declared by the server: the records persistent queries skipped)",
		Schema: types.Schema{Columns: []types.Column{
			col("TIME", types.StringType), col("QUERY", types.StringType), col("TOPIC", types.StringType),
			col("PARTITION", types.IntType), col("OFFSET", types.BigintType), col("ERROR", types.StringType),
			col("RECORD_KEY", types.StringType), col("RECORD_VALUE", types.StringType),
		}},
	}, false)
}

// openProcessingLog creates the processing log topic when it is missing
// (unless told not to) and learns its partition count.
func (e *Engine) openProcessingLog(ctx context.Context) error {
	pc := e.cfg.ProcessingLog
	topic := pc.Topic
	legacy := LegacyProcessingLogTopic(e.cfg.ServiceID)
	if topic == "" {
		topic = ProcessingLogTopic(e.cfg.ServiceID)
	}
	details, err := e.topics.Describe(ctx, topic)
	if err != nil {
		return err
	}
	if pc.Topic == "" && !hasTopic(details, topic) {
		// A principal with ACLs on the one prefix only may not see the
		// legacy name: then it is not this service's.
		if old, err := e.topics.Describe(ctx, legacy); err == nil && hasTopic(old, legacy) {
			topic, details = legacy, old
		}
	}
	e.plogTopic = topic
	if d, ok := details[topic]; ok && d.Err == nil {
		e.plogPartitions = d.Partitions
		return nil
	}
	if pc.NoTopicCreate {
		e.plogMissing = true
		e.log.Warn("the processing log topic does not exist and ksql.logging.processing.topic.auto.create is false: skipped records are reported in the server log only", "topic", topic)
		return nil
	}
	parts, repl := max(pc.Partitions, 1), pc.Replication
	if repl <= 0 {
		// Its own setting unset: the internal topics' (itself -1, the
		// broker's default, unless ksql.internal.topic.replicas is set).
		repl = e.cfg.Kafka.Topics.ReplicationFactor()
	}
	err = e.topics.Create(ctx, topic, parts, repl, e.cfg.Kafka.Topics.With(nil))
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	e.plogPartitions = parts
	return nil
}

// logBadRecord writes a skipped record's description to the processing
// log topic, without waiting (it must not slow the stream thread; a lost
// entry is still in the server log).
func (e *Engine) logBadRecord(b exec.BadRecord) {
	if e.plogMissing || e.cl == nil {
		return
	}
	entry := processingLogEntry{
		Time: time.Now().UTC(), Query: b.Query, Topic: b.Topic,
		Partition: b.Partition, Offset: b.Offset, Error: b.Err.Error(),
	}
	if !e.cfg.ProcessingLogOmitRows {
		entry.RecordKey, entry.RecordValue = b.Key, b.Value
	}
	v, err := json.Marshal(entry)
	if err != nil {
		return
	}
	e.cl.Produce(context.Background(), &kgo.Record{Topic: e.processingLogTopic(), Key: []byte(b.Query), Value: v}, func(_ *kgo.Record, err error) {
		if err != nil {
			e.log.Warn("writing the processing log", "err", err)
		}
	})
}
