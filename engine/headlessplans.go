package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/sql"
)

// A headless server (Config.Headless) has no command topic: its catalog
// comes from the queries file at every start. So that a later build's
// binding and planning cannot change a running query there either, the
// plan each statement of the file got is kept in a compacted topic of the
// service, HeadlessPlansTopic, under a digest of the statement and the
// properties it ran with; a start finds the statement's plan there and
// builds from it, as a replay builds from the command topic. A statement
// not found (new, edited, or from before this topic) is planned as now
// and its plan written.

// HeadlessPlansTopic is the topic where a headless service keeps its
// statements' plans.
func HeadlessPlansTopic(serviceID string) string { return serviceID + "_headless_plans" }

// headlessPlan is one entry of the topic: the statement, the properties
// it was planned with, and its plan.
type headlessPlan struct {
	Statement string            `json:"statement"`
	Props     map[string]string `json:"props,omitempty"`
	Plan      json.RawMessage   `json:"plan"`
}

// headlessPlans is the topic as read at start, and its writer.
type headlessPlans struct {
	topic string
	cl    *kgo.Client
	plans map[string]headlessPlan // by headlessKey
}

// headlessKey is the key of cmd's entry: a digest of its statement and
// properties.
func headlessKey(cmd catalog.Command) string {
	h := sha256.New()
	h.Write([]byte(cmd.Statement))
	for _, k := range slices.Sorted(maps.Keys(cmd.Props)) {
		h.Write([]byte{0})
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(cmd.Props[k]))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// openHeadlessPlans creates the topic when it is missing and reads it to
// its end. An engine without Kafka (Config.Offline) keeps none: nil.
func (e *Engine) openHeadlessPlans(ctx context.Context) (*headlessPlans, error) {
	if e.cl == nil {
		return nil, nil
	}
	hp := &headlessPlans{topic: HeadlessPlansTopic(e.cfg.ServiceID), cl: e.cl, plans: map[string]headlessPlan{}}
	details, err := e.topics.Describe(ctx, hp.topic)
	if err != nil {
		return nil, err
	}
	if !hasTopic(details, hp.topic) {
		// Created now: empty (another instance creating it at the same
		// moment writes the plans this one would).
		compact := "compact"
		err := e.topics.Create(ctx, hp.topic, 1, e.cfg.Kafka.Topics.ReplicationFactor(), e.cfg.Kafka.Topics.With(map[string]*string{
			"cleanup.policy": &compact,
		}))
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return nil, e.cfg.Kafka.Explain(err, kafka.Permission{Operation: kafka.Create, Resource: kafka.Resource{Type: kafka.Topic, Name: hp.topic}})
		}
		if err == nil {
			return hp, nil
		}
	}
	// The topic may be a moment old (another instance's): its partition
	// shows in the metadata within a few seconds.
	var end int64
	for wait := 50 * time.Millisecond; ; wait *= 2 {
		ends, err := e.adm.ListEndOffsets(ctx, hp.topic)
		if err != nil {
			return nil, err
		}
		o, ok := ends.Lookup(hp.topic, 0)
		if ok && o.Err == nil {
			end = o.Offset
			break
		}
		if wait > 3*time.Second {
			if !ok {
				return nil, fmt.Errorf("end of %s: partition 0 missing", hp.topic)
			}
			return nil, fmt.Errorf("end of %s: %w", hp.topic, e.cfg.Kafka.Explain(o.Err, kafka.Permission{Operation: kafka.Describe, Resource: kafka.Resource{Type: kafka.Topic, Name: hp.topic}}))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
	}
	if end == 0 {
		return hp, nil
	}
	rd, err := e.cfg.Kafka.NewClient(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{hp.topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond),
	)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	for pos := int64(0); pos < end; {
		fs := rd.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var ferr error
		fs.EachError(func(_ string, _ int32, err error) { ferr = err })
		if ferr != nil {
			return nil, e.cfg.Kafka.Explain(ferr, kafka.Permission{Operation: kafka.Read, Resource: kafka.Resource{Type: kafka.Topic, Name: hp.topic}})
		}
		fs.EachRecord(func(r *kgo.Record) {
			pos = max(pos, r.Offset+1)
			if r.Value == nil {
				delete(hp.plans, string(r.Key))
				return
			}
			var p headlessPlan
			if err := json.Unmarshal(r.Value, &p); err != nil || len(p.Plan) == 0 {
				e.log.Warn("headless: an entry of the plans topic is not a plan: skipped", "topic", hp.topic, "offset", r.Offset, "err", err)
				return
			}
			hp.plans[string(r.Key)] = p
		})
	}
	return hp, nil
}

// lookup returns the plan recorded for cmd, or nil.
func (hp *headlessPlans) lookup(cmd catalog.Command) json.RawMessage {
	if hp == nil {
		return nil
	}
	p, ok := hp.plans[headlessKey(cmd)]
	if !ok || p.Statement != cmd.Statement || !maps.Equal(p.Props, cmd.Props) {
		return nil
	}
	return p.Plan
}

// save writes cmd's plan unless the topic holds it already.
func (hp *headlessPlans) save(ctx context.Context, cmd catalog.Command) error {
	if hp == nil || len(cmd.Plan) == 0 || bytes.Equal(hp.lookup(cmd), cmd.Plan) {
		return nil
	}
	p := headlessPlan{Statement: cmd.Statement, Props: cmd.Props, Plan: cmd.Plan}
	v, err := json.Marshal(p)
	if err != nil {
		return err
	}
	key := headlessKey(cmd)
	if err := hp.cl.ProduceSync(ctx, &kgo.Record{Topic: hp.topic, Partition: 0, Key: []byte(key), Value: v}).FirstErr(); err != nil {
		return fmt.Errorf("recording the plan of %q in %s: %w", cmd.Statement, hp.topic, err)
	}
	hp.plans[key] = p
	return nil
}

// applyHeadless carries out a statement of the queries file: from the
// plan recorded for it when there is one, else bound and planned as now
// (apply's recorder then saves the plan). A recorded plan this build
// cannot start (a later build's) is planned again, with a warning.
func (e *Engine) applyHeadless(ctx context.Context, text string, st sql.Statement, props map[string]string) error {
	cmd := catalog.Command{Statement: text, Props: props}
	if p := e.headless.lookup(cmd); p != nil {
		cmd.Plan = p
		_, err := e.apply(ctx, st, cmd, -1, false)
		if err == nil {
			return nil
		}
		e.log.Warn("headless: the statement's recorded plan cannot be used: planned again", "statement", text, "err", err)
		if st, err = sql.Parse(text); err != nil {
			return err
		}
		cmd.Plan = nil
	}
	_, err := e.apply(ctx, st, cmd, -1, false)
	return err
}
