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
func ProcessingLogTopic(serviceID string) string { return "_" + serviceID + "_processing_log" }

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
// every server declares (ksqlDB's KSQL_PROCESSING_LOG), so that users can
// query the records their queries skipped:
//
//	SELECT query, topic, error FROM processing_log EMIT CHANGES;
const ProcessingLogStream = "PROCESSING_LOG"

// declareProcessingLog adds the PROCESSING_LOG stream to the catalog,
// unless a stream or table of that name exists. It is not a command: every
// server declares it at start.
func (e *Engine) declareProcessingLog() {
	if _, ok := e.cat.Source(ProcessingLogStream); ok {
		return
	}
	col := func(name string, t types.Type) types.Column { return types.Column{Name: name, Type: t} }
	_ = e.cat.AddSource(&catalog.Source{
		Name: ProcessingLogStream, Kind: catalog.Stream, Topic: ProcessingLogTopic(e.cfg.ServiceID),
		KeyFormat: types.FormatNone, ValueFormat: types.FormatJSON, Partitions: 1, IsSource: true,
		SQL: "(declared by the server: the records persistent queries skipped)",
		Schema: types.Schema{Columns: []types.Column{
			col("TIME", types.StringType), col("QUERY", types.StringType), col("TOPIC", types.StringType),
			col("PARTITION", types.IntType), col("OFFSET", types.BigintType), col("ERROR", types.StringType),
			col("RECORD_KEY", types.StringType), col("RECORD_VALUE", types.StringType),
		}},
	}, false)
}

// openProcessingLog creates the processing log topic when it is missing.
func (e *Engine) openProcessingLog(ctx context.Context) error {
	resp, err := e.adm.CreateTopic(ctx, 1, -1, nil, ProcessingLogTopic(e.cfg.ServiceID))
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return err
	}
	return nil
}

// logBadRecord writes a skipped record's description to the processing
// log topic, without waiting (it must not slow the stream thread; a lost
// entry is still in the server log).
func (e *Engine) logBadRecord(b exec.BadRecord) {
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
	e.cl.Produce(context.Background(), &kgo.Record{Topic: ProcessingLogTopic(e.cfg.ServiceID), Key: []byte(b.Query), Value: v}, func(_ *kgo.Record, err error) {
		if err != nil {
			e.log.Warn("writing the processing log", "err", err)
		}
	})
}
