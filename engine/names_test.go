package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// TestServiceNamesOnePrefix: a new service names its command topic,
// processing log, transactional IDs and query groups with one prefix,
// "<service>_", so that one prefixed ACL set covers it.
func TestServiceNamesOnePrefix(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kp := kafka.Plain(kfakeBrokers(t)...)
	eng, err := engine.Open(ctx, engine.Config{Kafka: kp, ServiceID: "svc", InstanceID: "i", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	topics := listTopics(t, ctx, kp)
	for _, want := range []string{"svc_command_topic", "svc_processing_log"} {
		if !topics.Has(want) {
			t.Errorf("topic %s missing; topics %v", want, topics.Names())
		}
	}
	for _, legacy := range []string{"_svc_command_topic", "_svc_processing_log"} {
		if topics.Has(legacy) {
			t.Errorf("a new service created the legacy topic %s", legacy)
		}
	}
	if got := catalog.CommandTransactionalID("svc", "i"); got != "svc_command_topic_producer_i" {
		t.Errorf("command producer's transactional ID %q", got)
	}
}

// TestServiceNamesLegacy: a service whose command topic and processing
// log have the names of earlier versions (_<service>_command_topic,
// _<service>_processing_log) keeps them: its catalog replays from the old
// command topic and the processing log stream reads the old topic.
func TestServiceNamesLegacy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kp := kafka.Plain(kfakeBrokers(t)...)
	cl, err := kp.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, topic := range []string{"_svc_command_topic", "_svc_processing_log"} {
		if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	log, err := catalog.OpenCommandLog(ctx, kp, "svc", "old")
	if err != nil {
		t.Fatal(err)
	}
	if log.Topic() != "_svc_command_topic" {
		t.Fatalf("command log on %s, want the legacy _svc_command_topic", log.Topic())
	}
	if _, err := log.Append(ctx, catalog.Command{Statement: "CREATE STREAM s (id INT KEY, v INT) WITH (KAFKA_TOPIC='s', VALUE_FORMAT='JSON', PARTITIONS=1);"}); err != nil {
		t.Fatal(err)
	}
	log.Close()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kp, ServiceID: "svc", InstanceID: "i", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if _, ok := eng.Catalog().Source("S"); !ok {
		t.Fatal("stream S, recorded in the legacy command topic, is not in the catalog")
	}
	plog, ok := eng.Catalog().Source(engine.ProcessingLogStream)
	if !ok || plog.Topic != "_svc_processing_log" {
		t.Errorf("processing log stream %+v, want it over _svc_processing_log", plog)
	}
	topics := listTopics(t, ctx, kp)
	for _, topic := range []string{"svc_command_topic", "svc_processing_log"} {
		if topics.Has(topic) {
			t.Errorf("a legacy service created %s beside its old topic", topic)
		}
	}
}

func listTopics(t *testing.T, ctx context.Context, kp kafka.Profile) kadm.TopicDetails {
	t.Helper()
	cl, err := kp.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	topics, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return topics
}
