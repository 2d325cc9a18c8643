package kafka

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// allow is an ALLOW ACL for kfake.User.
func allow(rt kmsg.ACLResourceType, name string, prefixed bool, op kmsg.ACLOperation) kfake.ACL {
	pt := kmsg.ACLResourcePatternTypeLiteral
	if prefixed {
		pt = kmsg.ACLResourcePatternTypePrefixed
	}
	return kfake.ACL{Resource: rt, Name: name, Pattern: pt, Operation: op, Allow: true}
}

// aclCluster is a 3-broker SASL cluster with ACLs: admin is a superuser,
// alice has acls.
func aclCluster(t *testing.T, acls ...kfake.ACL) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-secret"),
		kfake.User("SCRAM-SHA-256", "alice", "alice-secret", acls...),
		kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func userProfile(c *kfake.Cluster, user, pass string) Profile {
	return Profile{Brokers: c.ListenAddrs(), SASL: scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), Principal: "User:" + user}
}

var testService = Service{
	ID: "svc", CommandTopic: "_svc_command_topic", CommandTransactionalIDs: "_svc_command_topic_producer_",
	ProcessingLog: "_svc_processing_log", ProcessingLogCreate: true,
	Read: []string{"orders"}, Write: []string{"enriched"},
}

// TestCheckListsEveryMissingPermission: a principal granted some of the
// service's permissions is told every other one, at once, and nothing it
// has; a superuser is told nothing.
func TestCheckListsEveryMissingPermission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const (
		topic = kmsg.ACLResourceTypeTopic
		group = kmsg.ACLResourceTypeGroup
		txn   = kmsg.ACLResourceTypeTransactionalId
	)
	c := aclCluster(t,
		allow(topic, "svc_", true, kmsg.ACLOperationCreate),
		allow(topic, "svc_", true, kmsg.ACLOperationRead),
		allow(group, "svc_", true, kmsg.ACLOperationRead),
		allow(topic, "_svc_command_topic", false, kmsg.ACLOperationRead),
		allow(topic, "_svc_command_topic", false, kmsg.ACLOperationWrite),
		allow(txn, "_svc_command_topic_producer_", true, kmsg.ACLOperationWrite),
		allow(topic, "_svc_processing_log", false, kmsg.ACLOperationWrite),
		allow(topic, "orders", false, kmsg.ACLOperationRead),
	)
	missing, err := userProfile(c, "alice", "alice-secret").Check(ctx, testService.Permissions())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range missing {
		if m.Unchecked != "" {
			t.Errorf("%s: not checked: %s", m, m.Unchecked)
		}
		s := m.String()
		if m.Optional {
			s += " (optional)"
		}
		got = append(got, s)
	}
	want := []string{
		`WRITE on topics prefixed "svc_"`,
		`DELETE on topics prefixed "svc_" (optional)`,
		`ALTER_CONFIGS on topics prefixed "svc_" (optional)`,
		`DELETE on groups prefixed "svc_" (optional)`,
		`WRITE on transactional ids prefixed "svc_"`,
		`CREATE on topic "_svc_command_topic"`,
		`CREATE on topic "_svc_processing_log"`,
		`READ on topic "_svc_processing_log" (optional)`,
		`WRITE on topic "enriched"`,
		`CREATE on topic "enriched"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("missing:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if g := missing[0].Grant("User:alice", []string{"k1:9092"}); g != "kafka-acls --bootstrap-server k1:9092 --add --allow-principal User:alice --operation Write --resource-pattern-type prefixed --topic svc_" {
		t.Errorf("grant: %s", g)
	}

	// The superuser has everything.
	missing, err = userProfile(c, "admin", "admin-secret").Check(ctx, testService.Permissions())
	if err != nil || len(missing) != 0 {
		t.Errorf("superuser: missing %v, err %v", missing, err)
	}
}

// TestCheckExistingTopics: CREATE on a query's output topic is needed
// only while it does not exist; a principal with no ACL at all misses
// everything, the topics it may not even describe included.
func TestCheckExistingTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := aclCluster(t, allow(kmsg.ACLResourceTypeTopic, "orders", false, kmsg.ACLOperationWrite))
	s := Service{ID: "svc", Write: []string{"orders"}}
	missing, err := userProfile(c, "alice", "alice-secret").Check(ctx, s.Permissions())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		if m.Name == "orders" {
			t.Errorf("%s reported missing: the topic exists and WRITE is granted", m)
		}
	}
	if len(missing) != 8 {
		t.Errorf("missing %d permissions, want the 8 under the prefix: %v", len(missing), missing)
	}
}
