package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka/kafkatest"
)

// TestCheckKafka: check-kafka, given the server's connection settings,
// prints every permission the principal lacks with the kafka-acls
// command that grants it and exits 1; once all is granted it says so and
// exits 0. A wrong password is a clear failure, not a hang.
func TestCheckKafka(t *testing.T) {
	prefixed, literal := kafkatest.Prefixed, kafkatest.Literal
	const topic, group, txn = kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeGroup, kmsg.ACLResourceTypeTransactionalId
	svc := engine.KafkaService("svc", engine.ProcessingLogConfig{})
	all := kafkatest.ACLs(svc.Permissions()) // bob: everything the service needs
	all = append(all, literal(topic, "orders", kmsg.ACLOperationRead))
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-512", "admin", "admin-secret"),
		kfake.User("SCRAM-SHA-512", "alice", "alice-secret",
			prefixed(topic, "svc_", kmsg.ACLOperationCreate),
			prefixed(topic, "svc_", kmsg.ACLOperationRead),
			prefixed(topic, "svc_", kmsg.ACLOperationWrite),
			prefixed(group, "svc_", kmsg.ACLOperationRead),
			prefixed(txn, "svc_", kmsg.ACLOperationWrite),
			literal(topic, svc.CommandTopic, kmsg.ACLOperationRead),
			literal(topic, svc.CommandTopic, kmsg.ACLOperationWrite),
			literal(topic, svc.ProcessingLog, kmsg.ACLOperationWrite),
			literal(topic, svc.ProcessingLog, kmsg.ACLOperationCreate),
		),
		kfake.User("SCRAM-SHA-512", "bob", "bob-secret", all...),
		kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	addr := c.ListenAddrs()[0]
	props := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"+
		"sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"${CHECK_USER}\" password=\"${CHECK_PASS}\";\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(user, pass string) (int, string) {
		t.Setenv("CHECK_USER", user)
		t.Setenv("CHECK_PASS", pass)
		var out, errOut bytes.Buffer
		code := checkKafka([]string{"--bootstrap-servers=" + addr, "--kafka-config", props, "--service-id", "svc", "--read-topics", "orders"}, &out, &errOut)
		return code, out.String() + errOut.String()
	}

	code, out := run("alice", "alice-secret")
	t.Logf("alice:\n%s", out)
	if code != 1 {
		t.Errorf("alice: exit %d, want 1:\n%s", code, out)
	}
	grant := func(flags string) string {
		return "    kafka-acls --bootstrap-server " + addr + " --add --allow-principal User:alice " + flags + "\n"
	}
	for _, want := range []string{
		"Missing (1):\n" +
			`  READ on topic "orders": a query's input` + "\n" + grant("--operation Read --topic orders"),
		"Missing, needed only by some statements (3):\n" +
			`  DELETE on topics prefixed "svc_": RESET QUERY deletes a query's internal topics` + "\n" +
			grant("--operation Delete --resource-pattern-type prefixed --topic svc_") +
			`  ALTER_CONFIGS on topics prefixed "svc_": window changelogs of queries created before they were compact,delete get their retention at start` + "\n" +
			grant("--operation AlterConfigs --resource-pattern-type prefixed --topic svc_") +
			`  DELETE on groups prefixed "svc_": RESET QUERY deletes a query's consumer group` + "\n" +
			grant("--operation Delete --resource-pattern-type prefixed --group svc_"),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("alice: output lacks\n%s\ngot:\n%s", want, out)
		}
	}
	if strings.Contains(out, "alice-secret") {
		t.Error("the output shows the password")
	}

	if code, out := run("bob", "bob-secret"); code != 0 || !strings.Contains(out, "Every permission the service needs is granted.") {
		t.Errorf("bob: exit %d, want 0 and all granted:\n%s", code, out)
	}
	code, out = run("alice", "wrong")
	if code != 1 || !strings.Contains(out, "Cannot connect") || !strings.Contains(out, "User:alice") {
		t.Errorf("wrong password: exit %d:\n%s", code, out)
	}
}

// TestKafkaACLsDoc: docs/kafka-acls.md gives the kafka-acls command of
// every permission the service needs (the list check-kafka checks), for
// the default service id and a principal User:sqlstreams.
func TestKafkaACLsDoc(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "kafka-acls.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	svc := engine.KafkaService("sqlstreams", engine.ProcessingLogConfig{})
	for _, p := range svc.Permissions() {
		if g := p.Grant("User:sqlstreams", nil); !strings.Contains(doc, g) {
			t.Errorf("docs/kafka-acls.md lacks %s (%s):\n  %s", p, p.Why, g)
		}
	}
}
