package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/exec"
)

// ProcessingLogTopic returns the processing log topic's name for a service
// ID: the records persistent queries skipped, with the reason, as JSON.
func ProcessingLogTopic(serviceID string) string { return "_" + serviceID + "_processing_log" }

// processingLogEntry is one processing log record's value.
type processingLogEntry struct {
	Time      time.Time `json:"time"`
	Query     string    `json:"query"`
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	Offset    int64     `json:"offset"`
	Error     string    `json:"error"`
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
	v, err := json.Marshal(processingLogEntry{
		Time: time.Now().UTC(), Query: b.Query, Topic: b.Topic,
		Partition: b.Partition, Offset: b.Offset, Error: b.Err.Error(),
	})
	if err != nil {
		return
	}
	e.cl.Produce(context.Background(), &kgo.Record{Topic: ProcessingLogTopic(e.cfg.ServiceID), Key: []byte(b.Query), Value: v}, func(_ *kgo.Record, err error) {
		if err != nil {
			e.log.Warn("writing the processing log", "err", err)
		}
	})
}
