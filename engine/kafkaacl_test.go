package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/kafka/kafkatest"
)

// lockedBuffer is a log destination tests read while the engine writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestKafkaACLs: against a SASL cluster with ACLs, a wrong password fails
// the engine's start within seconds naming the principal; with every
// permission of the service granted the start logs none missing; a query
// lacking READ on its input is refused at CREATE, naming the operation,
// the topic, the principal and the grant; once granted it runs, and when
// the permission is revoked its status turns FAILED with the same
// explanation, then RUNNING again once it is granted back.
func TestKafkaACLs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const service = "svc"
	var acls []kfake.ACL
	for _, p := range engine.KafkaService(service, engine.ProcessingLogConfig{}).Permissions() {
		acls = append(acls, kafkatest.ACL(p))
	}
	orders := kafka.Resource{Type: kafka.Topic, Name: "orders"}
	sink := kafka.Resource{Type: kafka.Topic, Name: "OUT"}
	acls = append(acls,
		kafkatest.ACL(kafka.Permission{Operation: kafka.Describe, Resource: orders}),
		kafkatest.ACL(kafka.Permission{Operation: kafka.Create, Resource: sink}),
		kafkatest.ACL(kafka.Permission{Operation: kafka.Write, Resource: sink}))
	// carol lacks WRITE on the service's transactional ids and CREATE on
	// its topics (the command topic among them).
	var carol []kfake.ACL
	for _, p := range engine.KafkaService(service, engine.ProcessingLogConfig{}).Permissions() {
		if !(p.Type == kafka.TransactionalID && p.Name == service+"_") && !(p.Type == kafka.Topic && p.Operation == kafka.Create && p.Name == service+"_") {
			carol = append(carol, kafkatest.ACL(p))
		}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-secret"),
		kfake.User("SCRAM-SHA-256", "alice", "alice-secret", acls...),
		kfake.User("SCRAM-SHA-256", "carol", "carol-secret", carol...),
		kfake.SeedTopics(2, "orders"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	profile := func(user, pass string) kafka.Profile {
		return kafka.Profile{Brokers: c.ListenAddrs(), SASL: scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(),
			Principal: "User:" + user, Topics: kafka.TopicSettings{Replicas: -1}}
	}
	admin, err := profile("admin", "admin-secret").NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)

	start := time.Now()
	_, err = engine.Open(ctx, engine.Config{Kafka: profile("alice", "wrong"), ServiceID: service, InstanceID: "i", StateDir: t.TempDir(), CheckKafka: true})
	took := time.Since(start)
	if !errors.Is(err, kafka.ErrLogin) || !strings.Contains(err.Error(), "User:alice") || strings.Contains(err.Error(), "alice-secret") {
		t.Fatalf("wrong password: %v, want a refused login naming User:alice", err)
	}
	if took > 5*time.Second {
		t.Errorf("wrong password: the start failed after %v, want within a few seconds", took)
	}
	t.Logf("wrong password: failed in %v: %v", took.Round(time.Millisecond), err)

	// Lacking two permissions, one of them the command topic's: both are
	// logged at once, and the start fails on the command topic, explained.
	carolLogs := &lockedBuffer{}
	_, err = engine.Open(ctx, engine.Config{Kafka: profile("carol", "carol-secret"), ServiceID: service, InstanceID: "i",
		StateDir: t.TempDir(), CheckKafka: true, Logger: slog.New(slog.NewTextHandler(carolLogs, nil))})
	if !errors.Is(err, kafka.ErrDenied) || !strings.Contains(err.Error(), `Kafka refused CREATE on topic "svc_command_topic" for User:carol`) {
		t.Errorf("carol: %v, want the start refused on the command topic", err)
	}
	for _, w := range []string{`permission="WRITE on transactional ids prefixed \"svc_\""`, `permission="CREATE on topics prefixed \"svc_\""`, "count=2"} {
		if !strings.Contains(carolLogs.String(), w) {
			t.Errorf("carol: the start's log lacks %s:\n%s", w, carolLogs)
		}
	}

	logs := &lockedBuffer{}
	eng, err := engine.Open(ctx, engine.Config{Kafka: profile("alice", "alice-secret"), ServiceID: service, InstanceID: "i",
		StateDir: t.TempDir(), CheckKafka: true, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if strings.Contains(logs.String(), "permission missing") {
		t.Errorf("every permission is granted, yet the start logged missing ones:\n%s", logs)
	}
	s := engine.NewSession()
	if _, err := eng.Execute(ctx, s, "CREATE STREAM orders (id INT KEY, v INT) WITH (KAFKA_TOPIC='orders', VALUE_FORMAT='JSON')", discard{}); err != nil {
		t.Fatal(err)
	}
	_, err = eng.Execute(ctx, s, "CREATE STREAM out AS SELECT * FROM orders", discard{})
	want := `READ on topic "orders" (a query's input): kafka-acls --bootstrap-server ` + strings.Join(c.ListenAddrs(), ",") +
		` --add --allow-principal User:alice --operation Read --topic orders`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "kafka-acls") != 1 {
		t.Fatalf("CREATE without READ on its input: %v\nwant it to name only %s", err, want)
	}
	if _, ok := eng.Catalog().Source("OUT"); ok {
		t.Fatal("the refused query's stream was created")
	}

	readOrders := kadm.NewACLs().Allow("User:alice").AllowHosts("*").Topics("orders").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	grant := func() {
		t.Helper()
		if _, err := adm.CreateACLs(ctx, readOrders); err != nil {
			t.Fatal(err)
		}
	}
	grant()
	if _, err := eng.Execute(ctx, s, "CREATE STREAM out AS SELECT * FROM orders", discard{}); err != nil {
		t.Fatal(err)
	}
	produce := func(from, n int) {
		t.Helper()
		for i := from; i < from+n; i++ {
			r := &kgo.Record{Topic: "orders", Key: []byte{0, 0, 0, byte(i)}, Value: fmt.Appendf(nil, `{"V":%d}`, i)}
			if err := admin.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	status := func() engine.QueryStatus {
		for _, q := range eng.Queries() {
			if q.Sink == "OUT" && q.Status != nil {
				return *q.Status
			}
		}
		return engine.QueryStatus{}
	}
	waitFor := func(what string, d time.Duration, ok func(engine.QueryStatus) bool) engine.QueryStatus {
		t.Helper()
		deadline := time.Now().Add(d)
		for {
			st := status()
			if ok(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: status %+v after %v", what, st, d)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	produce(0, 5)
	waitFor("running", 30*time.Second, func(st engine.QueryStatus) bool { return st.State == "RUNNING" && st.RecordsOut >= 5 })

	if _, err := adm.DeleteACLs(ctx, readOrders); err != nil {
		t.Fatal(err)
	}
	revoked := time.Now()
	st := waitFor("revoked", 30*time.Second, func(st engine.QueryStatus) bool { return st.State == "FAILED" })
	for _, w := range []string{`READ on topic "orders"`, "User:alice", "--operation Read --topic orders"} {
		if !strings.Contains(st.Err, w) {
			t.Errorf("FAILED with %q, want it to name %s", st.Err, w)
		}
	}
	t.Logf("revoked: FAILED after %v: %s", time.Since(revoked).Round(time.Millisecond), st.Err)

	grant()
	produce(5, 5)
	waitFor("granted again", 30*time.Second, func(st engine.QueryStatus) bool { return st.State == "RUNNING" && st.RecordsOut >= 10 })
}

// TestExactlyOnceBrokerVersions: a small exactly-once query gives its
// output once each against brokers advertising the API versions of Kafka
// 2.8, 3.6 and the newest; brokers of Kafka 2.4 (before KIP-447) are
// refused at start, naming their version, unless the server runs
// at-least-once.
func TestExactlyOnceBrokerVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	old, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.MaxVersions(kversion.V2_4_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	_, err = engine.Open(ctx, engine.Config{Kafka: kafka.Plain(old.ListenAddrs()...), InstanceID: "i", StateDir: t.TempDir()})
	if !errors.Is(err, kafka.ErrTooOld) || !strings.Contains(err.Error(), "Kafka v2.4") || !strings.Contains(err.Error(), "2.5") {
		t.Errorf("Kafka 2.4: %v, want a refusal naming v2.4 and 2.5", err)
	} else {
		t.Logf("Kafka 2.4: %v", err)
	}

	for _, v := range []struct {
		name string
		v    *kversion.Versions
	}{{"2.8", kversion.V2_8_0()}, {"3.6", kversion.V3_6_0()}, {"newest", kversion.Stable()}} {
		t.Run(v.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.MaxVersions(v.v), kfake.GroupMinSessionTimeout(100*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(c.ListenAddrs()...), InstanceID: "i", StateDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			s := engine.NewSession()
			for _, stmt := range []string{
				"CREATE STREAM src (id INT KEY, v INT) WITH (KAFKA_TOPIC='src', VALUE_FORMAT='JSON', PARTITIONS=2)",
				"CREATE TABLE counts AS SELECT id, COUNT(*) AS n FROM src GROUP BY id",
			} {
				if _, err := eng.Execute(ctx, s, stmt, discard{}); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			for i := range 20 {
				if _, err := eng.Execute(ctx, s, fmt.Sprintf("INSERT INTO src (id, v) VALUES (%d, %d)", i%4, i), discard{}); err != nil {
					t.Fatal(err)
				}
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("COUNTS"),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			last := map[string]string{}
			deadline := time.Now().Add(30 * time.Second)
			for len(last) < 4 || last["\x00\x00\x00\x00"] != `{"N":5}` || last["\x00\x00\x00\x03"] != `{"N":5}` {
				if time.Now().After(deadline) {
					t.Fatalf("counts: %q", last)
				}
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollFetches(pctx)
				pcancel()
				fs.EachRecord(func(r *kgo.Record) { last[string(r.Key)] = string(r.Value) })
			}
			for k, v := range last {
				if v != `{"N":5}` {
					t.Errorf("count of %q: %s, want 5", k, v)
				}
			}
		})
	}

	// At-least-once, the old brokers are used, with a warning.
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(old.ListenAddrs()...), InstanceID: "i", StateDir: t.TempDir(), AtLeastOnce: true})
	if err != nil {
		t.Fatalf("Kafka 2.4, at-least-once: %v", err)
	}
	eng.Close()
}
