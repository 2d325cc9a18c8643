package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// TestInternalTopicReplication: with ksql.internal.topic.replicas and
// .min.insync.replicas, every topic the service creates for itself (the
// command topic, the processing log, changelogs, repartition topics) is
// asked for with that replication factor and min.insync.replicas, and a
// sink topic with the broker's default; without them, every topic with the
// broker's default (-1), never a silent 1. (kfake ignores replication
// factors, so the CreateTopics requests are what is checked.)
func TestInternalTopicReplication(t *testing.T) {
	for _, c := range []struct {
		name      string
		props     []kafka.Property
		repl      int16
		minInsync string
	}{
		{"broker defaults", nil, -1, ""},
		{"set", []kafka.Property{{Key: "ksql.internal.topic.replicas", Value: "3"}, {Key: "ksql.streams.topic.min.insync.replicas", Value: "2"}}, 3, "2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			kc, err := kfake.NewCluster(kfake.NumBrokers(3))
			if err != nil {
				t.Fatal(err)
			}
			defer kc.Close()
			var mu sync.Mutex
			created := map[string]kmsg.CreateTopicsRequestTopic{}
			kc.ControlKey(int16(kmsg.CreateTopics), func(r kmsg.Request) (kmsg.Response, error, bool) {
				kc.KeepControl()
				mu.Lock()
				defer mu.Unlock()
				for _, t := range r.(*kmsg.CreateTopicsRequest).Topics {
					created[t.Topic] = t
				}
				return nil, nil, false
			})
			kp, _, err := kafka.Parse(append([]kafka.Property{{Key: "bootstrap.servers", Value: strings.Join(kc.ListenAddrs(), ",")}}, c.props...))
			if err != nil {
				t.Fatal(err)
			}
			eng, err := engine.Open(ctx, engine.Config{Kafka: kp, ServiceID: "svc", InstanceID: "i", StateDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			s := engine.NewSession()
			for _, stmt := range []string{
				"CREATE STREAM src (id INT KEY, k VARCHAR, v INT) WITH (KAFKA_TOPIC='src', VALUE_FORMAT='JSON', PARTITIONS=2)",
				"CREATE TABLE per_k AS SELECT k, COUNT(*) AS n FROM src GROUP BY k",
			} {
				if _, err := eng.Execute(ctx, s, stmt, discard{}); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			internal := 0
			for name, topic := range created {
				if name == "src" || name == "PER_K" {
					if topic.ReplicationFactor != -1 {
						t.Errorf("%s, a user's topic: replication factor %d, want the broker's default", name, topic.ReplicationFactor)
					}
					continue
				}
				if !strings.HasPrefix(name, "svc_") {
					t.Errorf("topic %s does not carry the service prefix", name)
				}
				internal++
				if topic.ReplicationFactor != c.repl {
					t.Errorf("%s: replication factor %d, want %d", name, topic.ReplicationFactor, c.repl)
				}
				got := ""
				for _, cfg := range topic.Configs {
					if cfg.Name == "min.insync.replicas" && cfg.Value != nil {
						got = *cfg.Value
					}
				}
				if got != c.minInsync {
					t.Errorf("%s: min.insync.replicas %q, want %q", name, got, c.minInsync)
				}
			}
			// The command topic, the processing log, the GROUP BY's
			// repartition topic and changelog.
			if internal != 4 {
				t.Errorf("%d internal topics created (%v), want 4", internal, created)
			}
		})
	}
}
