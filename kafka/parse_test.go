package kafka

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func props(kv ...string) []Property {
	var out []Property
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, Property{Key: kv[i], Value: kv[i+1], Source: "test line " + kv[i]})
	}
	return out
}

// TestParseSecurity: the names of Java's and librdkafka's properties files,
// with and without ksqlDB's prefix, make the right protocol, mechanism and
// principal.
func TestParseSecurity(t *testing.T) {
	for _, c := range []struct {
		name                   string
		props                  []Property
		proto, mech, principal string
	}{
		{"plaintext by default", props("bootstrap.servers", "a:9092"), "PLAINTEXT", "", ""},
		{"java scram jaas", props(
			"bootstrap.servers", "SASL_SSL://a:9092,b:9092",
			"security.protocol", "sasl_ssl",
			"sasl.mechanism", "SCRAM-SHA-512",
			"sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="p;a\"ss";`,
		), "SASL_SSL", "SCRAM-SHA-512", "User:alice"},
		{"librdkafka plain", props(
			"metadata.broker.list", "a:9092",
			"security.protocol", "SASL_PLAINTEXT",
			"sasl.mechanisms", "PLAIN",
			"sasl.username", "bob", "sasl.password", "pw",
		), "SASL_PLAINTEXT", "PLAIN", "User:bob"},
		{"ksqlDB prefix", props(
			"ksql.streams.bootstrap.servers", "a:9092",
			"ksql.streams.security.protocol", "SASL_SSL",
			"ksql.streams.sasl.mechanism", "SCRAM-SHA-256",
			"ksql.streams.sasl.jaas.config", `org.apache.kafka.common.security.scram.ScramLoginModule required username='carol' password="x";`,
		), "SASL_SSL", "SCRAM-SHA-256", "User:carol"},
		{"ssl only", props("bootstrap.servers", "a:9092", "security.protocol", "SSL"), "SSL", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, warnings, err := Parse(c.props)
			if err != nil {
				t.Fatal(err)
			}
			if len(warnings) > 0 {
				t.Errorf("warnings %q", warnings)
			}
			if p.Protocol() != c.proto {
				t.Errorf("protocol %s, want %s", p.Protocol(), c.proto)
			}
			mech := ""
			if p.SASL != nil {
				mech = p.SASL.Name()
			}
			if mech != c.mech || p.Principal != c.principal {
				t.Errorf("mechanism %q principal %q, want %q %q", mech, p.Principal, c.mech, c.principal)
			}
			if p.TLS != nil && p.TLS.InsecureSkipVerify {
				t.Error("TLS without host name verification by default")
			}
		})
	}
	p, _, err := Parse(props("bootstrap.servers", "SASL_SSL://a:9092, b:9093"))
	if err != nil || strings.Join(p.Brokers, " ") != "a:9092 b:9093" {
		t.Errorf("brokers %q (%v)", p.Brokers, err)
	}
}

// TestParseRefusesAndWarns: a setting that would break exactly-once is
// refused with the reason, one franz-go has no use for is a warning naming
// it, an unknown one too; the later of two settings wins.
func TestParseRefusesAndWarns(t *testing.T) {
	for _, c := range []struct{ key, value, want string }{
		{"enable.idempotence", "false", "exactly-once needs idempotent producers"},
		{"ksql.streams.consumer.isolation.level", "read_uncommitted", "read_committed"},
		{"acks", "1", "acks=all"},
		{"ksql.streams.producer.acks", "0", "acks=all"},
		{"transactional.id", "x", "fences"},
		{"group.id", "g", "application id"},
		{"enable.auto.commit", "true", "auto-commit"},
		{"security.protocol", "SASL_SSLX", "want PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"},
		{"compression.type", "brotli", "want none, gzip"},
		{"linger.ms", "soon", "want milliseconds"},
		{"ksql.internal.topic.replicas", "0", "replication factor"},
	} {
		_, _, err := Parse([]Property{{Key: c.key, Value: c.value, Source: "f line 3"}})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "f line 3") {
			t.Errorf("%s=%s: %v, want an error from f line 3 saying %q", c.key, c.value, err, c.want)
		}
	}
	_, warnings, err := Parse(props("bootstrap.servers", "a:1", "max.poll.records", "10", "foo.bar", "1", "key.serializer", "x"))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "max.poll.records is ignored") || !strings.Contains(warnings[1], `"foo.bar"`) {
		t.Errorf("warnings %q", warnings)
	}
	p, _, err := Parse(props("acks", "all", "ksql.streams.producer.acks", "-1",
		"linger.ms", "5", "ksql.streams.producer.linger.ms", "7", "client.id", "svc", "client.rack", "use1-az1",
		"compression.type", "zstd", "batch.size", "65536", "max.request.size", "2097152",
		"fetch.max.bytes", "1048576", "max.partition.fetch.bytes", "262144", "session.timeout.ms", "30000",
		"request.timeout.ms", "40000", "transaction.timeout.ms", "15000",
		"ksql.internal.topic.replicas", "3", "ksql.internal.topic.min.insync.replicas", "2"))
	if err != nil {
		t.Fatal(err)
	}
	// linger.ms once (the later, prefixed one wins), client.id,
	// client.rack, compression, the two fetch sizes, the two timeouts,
	// and the batch bounds (two options); acks=all is no option.
	if len(p.opts) != 10 {
		t.Errorf("%d client options, want 10", len(p.opts))
	}
	if p.TransactionTimeout != 15*time.Second || p.Topics.Replicas != 3 || *p.Topics.Configs()["min.insync.replicas"] != "2" {
		t.Errorf("transaction timeout %v, topics %+v", p.TransactionTimeout, p.Topics)
	}
	if d := Plain("a:1").Topics; d.ReplicationFactor() != -1 || d.Configs() != nil {
		t.Errorf("default internal topics %+v: want the broker's replication factor", d)
	}
}

// TestSecretsHidden: no secret reaches Settings, String or an error.
func TestSecretsHidden(t *testing.T) {
	const secret = "s3cr3t-value"
	p, _, err := Parse(props(
		"bootstrap.servers", "a:9092", "security.protocol", "SASL_SSL", "sasl.mechanism", "PLAIN",
		"sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="`+secret+`";`,
		"sasl.oauthbearer.client.secret", secret, "ssl.key.password", secret,
	))
	if err != nil {
		t.Fatal(err)
	}
	all := p.String()
	for _, s := range p.Settings() {
		all += s.Name + "=" + s.Value + "\n"
	}
	if strings.Contains(all, secret) {
		t.Errorf("a secret is shown:\n%s", all)
	}
	if !strings.Contains(all, "sasl.jaas.config=[hidden]") || !strings.Contains(all, "security.protocol=SASL_SSL") {
		t.Errorf("settings:\n%s", all)
	}
	// A malformed JAAS line's error quotes no value.
	_, _, err = Parse(props("security.protocol", "SASL_PLAINTEXT", "sasl.mechanism", "PLAIN",
		"sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password=`+secret+` oops`))
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("malformed JAAS: %v", err)
	}
}

func TestParseJAAS(t *testing.T) {
	l, err := parseJAAS(`software.amazon.msk.auth.iam.IAMLoginModule required awsProfileName=prod
	  extension_logicalCluster="lkc-1" ;`)
	if err != nil {
		t.Fatal(err)
	}
	if l.module != "software.amazon.msk.auth.iam.IAMLoginModule" || l.options["awsProfileName"] != "prod" || l.options["extension_logicalCluster"] != "lkc-1" {
		t.Errorf("%+v", l)
	}
	for _, bad := range []string{
		`PlainLoginModule`,
		`PlainLoginModule sometimes username="a";`,
		`PlainLoginModule required username="a"`,
	} {
		if _, err := parseJAAS(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	// The mechanism and the login module must agree.
	_, _, err = Parse(props("security.protocol", "SASL_SSL", "sasl.mechanism", "SCRAM-SHA-256",
		"sasl.jaas.config", `org.apache.kafka.common.security.plain.PlainLoginModule required username="a" password="b";`))
	if err == nil || !strings.Contains(err.Error(), "ScramLoginModule") {
		t.Errorf("PLAIN login module for SCRAM: %v", err)
	}
	_, _, err = Parse(props("security.protocol", "SASL_SSL"))
	if err == nil || !strings.Contains(err.Error(), "GSSAPI") {
		t.Errorf("SASL without a mechanism: %v, want Java's default GSSAPI refused", err)
	}
}

func TestFromEnv(t *testing.T) {
	t.Setenv("SQLSTREAMS_KAFKA_SECURITY_PROTOCOL", "SASL_SSL")
	t.Setenv("SQLSTREAMS_KAFKA_SASL_MECHANISM", "PLAIN")
	got := FromEnv()
	keys := map[string]string{}
	for _, p := range got {
		keys[p.Key] = p.Value + " (" + p.Source + ")"
	}
	if keys["security.protocol"] != "SASL_SSL (environment SQLSTREAMS_KAFKA_SECURITY_PROTOCOL)" || keys["sasl.mechanism"] == "" {
		t.Errorf("%v", keys)
	}
}

// TestCompressionDefault: a profile's clients do not compress what they
// produce (Kafka's compression.type=none, not franz-go's snappy) unless
// compression.type says otherwise.
func TestCompressionDefault(t *testing.T) {
	codecs := func(p Profile) []kgo.CompressionCodec {
		t.Helper()
		cl, err := kgo.NewClient(p.Opts()...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return cl.OptValue(kgo.ProducerBatchCompression).([]kgo.CompressionCodec)
	}
	if got := codecs(Plain("127.0.0.1:1")); !reflect.DeepEqual(got, []kgo.CompressionCodec{kgo.NoCompression()}) {
		t.Errorf("default: %v, want no compression", got)
	}
	p, _, err := Parse(props("bootstrap.servers", "127.0.0.1:1", "compression.type", "lz4"))
	if err != nil {
		t.Fatal(err)
	}
	if got := codecs(p); !reflect.DeepEqual(got, []kgo.CompressionCodec{kgo.Lz4Compression()}) {
		t.Errorf("compression.type=lz4: %v, want lz4", got)
	}
}
