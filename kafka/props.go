package kafka

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Property is one Kafka client setting as the user wrote it, with where
// it came from ("config.properties line 4", "flag -X", "environment
// SQLSTREAMS_KAFKA_SASL_MECHANISM") for errors.
type Property struct {
	Key, Value, Source string
}

// Prefixes a property may carry: ksqlDB's server properties pass
// ksql.streams.* to Kafka Streams, which passes producer.*, consumer.*,
// admin.* (and main.consumer.*, restore.consumer.*, global.consumer.*)
// to those clients. sqlstreams' clients are each a producer, a consumer
// and an admin at once, so the setting applies to every client.
var clientPrefixes = []string{
	"main.consumer.", "restore.consumer.", "global.consumer.",
	"producer.", "consumer.", "admin.",
}

// normalize strips ksqlDB's and Kafka Streams' prefixes from key.
func normalize(key string) string {
	key = strings.TrimSpace(key)
	key = strings.TrimPrefix(key, "ksql.streams.")
	for _, p := range clientPrefixes {
		if strings.HasPrefix(key, p) {
			return key[len(p):]
		}
	}
	return key
}

// setter applies one (normalized) property to the profile being built.
type setter func(b *builder, v string) error

// handled are the properties a profile understands, by their Java and
// librdkafka names.
var handled = map[string]setter{
	"bootstrap.servers":    setBrokers,
	"metadata.broker.list": setBrokers,

	"security.protocol":                   func(b *builder, v string) error { return b.set(&b.protocol, strings.ToUpper(v)) },
	"sasl.mechanism":                      func(b *builder, v string) error { return b.set(&b.mechanism, strings.ToUpper(v)) },
	"sasl.mechanisms":                     func(b *builder, v string) error { return b.set(&b.mechanism, strings.ToUpper(v)) },
	"sasl.jaas.config":                    func(b *builder, v string) error { return b.set(&b.jaas, v) },
	"sasl.username":                       func(b *builder, v string) error { return b.set(&b.user, v) },
	"sasl.password":                       func(b *builder, v string) error { return b.set(&b.pass, v) },
	"sasl.oauthbearer.token.endpoint.url": func(b *builder, v string) error { return b.set(&b.oauth.endpoint, v) },
	"sasl.oauthbearer.client.id":          func(b *builder, v string) error { return b.set(&b.oauth.clientID, v) },
	"sasl.oauthbearer.client.secret":      func(b *builder, v string) error { return b.set(&b.oauth.secret, v) },
	"sasl.oauthbearer.scope":              func(b *builder, v string) error { return b.set(&b.oauth.scope, v) },
	"sasl.oauthbearer.extensions":         func(b *builder, v string) error { return b.set(&b.oauth.extensions, v) },
	"sasl.oauthbearer.method":             setOAuthMethod,
	"sasl.oauthbearer.scope.claim.name":   ignore,
	"sasl.oauthbearer.sub.claim.name":     ignore,
	"sasl.login.callback.handler.class":   ignore,
	"sasl.client.callback.handler.class":  ignore,
	"ssl.ca.location":                     func(b *builder, v string) error { return b.set(&b.tls.caFile, v) },
	"ssl.ca.pem":                          func(b *builder, v string) error { return b.set(&b.tls.caPEM, v) },
	"ssl.truststore.location":             func(b *builder, v string) error { return b.set(&b.tls.truststore, v) },
	"ssl.truststore.type":                 func(b *builder, v string) error { return b.set(&b.tls.truststoreType, strings.ToUpper(v)) },
	"ssl.truststore.certificates":         func(b *builder, v string) error { return b.set(&b.tls.caPEM, v) },
	"ssl.truststore.password":             ignore,
	"ssl.certificate.location":            func(b *builder, v string) error { return b.set(&b.tls.certFile, v) },
	"ssl.certificate.pem":                 func(b *builder, v string) error { return b.set(&b.tls.certPEM, v) },
	"ssl.keystore.certificate.chain":      func(b *builder, v string) error { return b.set(&b.tls.certPEM, v) },
	"ssl.key.location":                    func(b *builder, v string) error { return b.set(&b.tls.keyFile, v) },
	"ssl.key.pem":                         func(b *builder, v string) error { return b.set(&b.tls.keyPEM, v) },
	"ssl.keystore.key":                    func(b *builder, v string) error { return b.set(&b.tls.keyPEM, v) },
	"ssl.key.password":                    func(b *builder, v string) error { return b.set(&b.tls.keyPassword, v) },
	"ssl.keystore.location":               func(b *builder, v string) error { return b.set(&b.tls.keystore, v) },
	"ssl.keystore.type":                   func(b *builder, v string) error { return b.set(&b.tls.keystoreType, strings.ToUpper(v)) },
	"ssl.keystore.password":               ignore,
	"ssl.endpoint.identification.algorithm": func(b *builder, v string) error {
		b.tls.hostAlgoSet = true
		return b.set(&b.tls.hostAlgo, strings.ToLower(strings.TrimSpace(v)))
	},
	"enable.ssl.certificate.verification":       setBool(func(b *builder) *bool { return &b.tls.noVerify }, true),
	"ssl.protocol":                              func(b *builder, v string) error { return b.set(&b.tls.minVersion, v) },
	"ssl.enabled.protocols":                     func(b *builder, v string) error { return b.set(&b.tls.minVersion, v) },
	"ssl.client.auth":                           ignore,
	"ssl.cipher.suites":                         ignore,
	"ssl.secure.random.implementation":          ignore,
	"ssl.keymanager.algorithm":                  ignore,
	"ssl.trustmanager.algorithm":                ignore,
	"ksql.internal.topic.replicas":              setReplicas,
	"replication.factor":                        setReplicas,
	"ksql.internal.topic.min.insync.replicas":   setMinISR,
	"topic.min.insync.replicas":                 setMinISR,
	"client.id":                                 func(b *builder, v string) error { b.opt(kgo.ClientID(v)); return nil },
	"client.rack":                               func(b *builder, v string) error { b.opt(kgo.Rack(v)); return nil },
	"compression.type":                          setCompression,
	"compression.codec":                         setCompression,
	"linger.ms":                                 setMs(func(d time.Duration) kgo.Opt { return kgo.ProducerLinger(d) }),
	"queue.buffering.max.ms":                    setMs(func(d time.Duration) kgo.Opt { return kgo.ProducerLinger(d) }),
	"batch.size":                                setBytes(func(n int32) kgo.Opt { return kgo.ProducerBatchMaxBytes(n) }),
	"max.request.size":                          setMaxRequest,
	"message.max.bytes":                         setMaxRequest,
	"fetch.max.bytes":                           setBytes(func(n int32) kgo.Opt { return kgo.FetchMaxBytes(n) }),
	"max.partition.fetch.bytes":                 setBytes(func(n int32) kgo.Opt { return kgo.FetchMaxPartitionBytes(n) }),
	"fetch.min.bytes":                           setBytes(func(n int32) kgo.Opt { return kgo.FetchMinBytes(n) }),
	"fetch.max.wait.ms":                         setMs(func(d time.Duration) kgo.Opt { return kgo.FetchMaxWait(d) }),
	"fetch.wait.max.ms":                         setMs(func(d time.Duration) kgo.Opt { return kgo.FetchMaxWait(d) }),
	"session.timeout.ms":                        setMs(func(d time.Duration) kgo.Opt { return kgo.SessionTimeout(d) }),
	"heartbeat.interval.ms":                     setMs(func(d time.Duration) kgo.Opt { return kgo.HeartbeatInterval(d) }),
	"request.timeout.ms":                        setMs(func(d time.Duration) kgo.Opt { return kgo.RequestTimeoutOverhead(d) }),
	"socket.timeout.ms":                         setMs(func(d time.Duration) kgo.Opt { return kgo.RequestTimeoutOverhead(d) }),
	"socket.connection.setup.timeout.ms":        setMs(func(d time.Duration) kgo.Opt { return kgo.DialTimeout(d) }),
	"metadata.max.age.ms":                       setMs(func(d time.Duration) kgo.Opt { return kgo.MetadataMaxAge(d) }),
	"topic.metadata.refresh.interval.ms":        setMs(func(d time.Duration) kgo.Opt { return kgo.MetadataMaxAge(d) }),
	"connections.max.idle.ms":                   setMs(func(d time.Duration) kgo.Opt { return kgo.ConnIdleTimeout(d) }),
	"delivery.timeout.ms":                       setMs(func(d time.Duration) kgo.Opt { return kgo.RecordDeliveryTimeout(d) }),
	"message.timeout.ms":                        setMs(func(d time.Duration) kgo.Opt { return kgo.RecordDeliveryTimeout(d) }),
	"transaction.timeout.ms":                    setTxnTimeout,
	"acks":                                      setAcks,
	"request.required.acks":                     setAcks,
	"enable.idempotence":                        mustBe("true", "exactly-once needs idempotent producers"),
	"isolation.level":                           mustBe("read_committed", "exactly-once needs read_committed consumers: they must not see aborted records"),
	"enable.auto.commit":                        mustBe("false", "queries commit their offsets in their transactions; auto-commit would commit records whose output was not written"),
	"transactional.id":                          refuse("each stream thread's transactional id is <query application id>-<instance>-<thread>, so that a restart fences its own transactions"),
	"group.id":                                  refuse("each query's consumer group is its application id, <service id>_query_<query id>"),
	"group.instance.id":                         refuse("each stream thread's static member id is derived from the instance id (--instance-id)"),
	"auto.offset.reset":                         refuse("it is a query property: SET 'auto.offset.reset'='earliest' before the CREATE"),
	"max.in.flight.requests.per.connection":     ignoreWhy("franz-go keeps at most 5 produce requests in flight per broker, as idempotence needs"),
	"max.in.flight":                             ignoreWhy("franz-go keeps at most 5 produce requests in flight per broker, as idempotence needs"),
	"retries":                                   ignoreWhy("the client retries until delivery.timeout.ms"),
	"retry.backoff.ms":                          ignore,
	"reconnect.backoff.ms":                      ignore,
	"reconnect.backoff.max.ms":                  ignore,
	"max.poll.records":                          ignoreWhy("stream threads process whatever a fetch returns"),
	"max.poll.interval.ms":                      ignoreWhy("stream threads poll between every batch"),
	"key.serializer":                            ignore,
	"value.serializer":                          ignore,
	"key.deserializer":                          ignore,
	"value.deserializer":                        ignore,
	"partitioner.class":                         ignoreWhy(partitionerWhy),
	"partitioner":                               ignoreWhy(partitionerWhy),
	"client.dns.lookup":                         ignore,
	"security.providers":                        ignore,
	"buffer.memory":                             ignore,
	"receive.buffer.bytes":                      ignore,
	"send.buffer.bytes":                         ignore,
	"allow.auto.create.topics":                  ignore,
	"auto.create.topics.enable":                 ignore,
	"api.version.request":                       ignore,
	"broker.version.fallback":                   ignore,
	"default.api.timeout.ms":                    ignore,
	"sasl.kerberos.service.name":                ignore,
	"sasl.login.refresh.buffer.seconds":         ignore,
	"sasl.login.refresh.min.period.seconds":     ignore,
	"sasl.login.refresh.window.factor":          ignore,
	"sasl.login.refresh.window.jitter":          ignore,
	"sasl.login.connect.timeout.ms":             ignore,
	"sasl.login.read.timeout.ms":                ignore,
	"sasl.oauthbearer.expected.audience":        ignore,
	"sasl.oauthbearer.jwks.endpoint.url":        ignore,
	"sasl.oauthbearer.token.endpoint.url.clock": ignore,
}

// ignore accepts a setting franz-go has no use for (Java class names,
// buffers it sizes itself).
func ignore(*builder, string) error { return nil }

func ignoreWhy(why string) setter {
	return func(b *builder, _ string) error {
		b.warn(fmt.Sprintf("%s is ignored: %s", b.key, why))
		return nil
	}
}

func refuse(why string) setter {
	return func(b *builder, _ string) error {
		return fmt.Errorf("%s cannot be set: %s", b.key, why)
	}
}

func mustBe(want, why string) setter {
	return func(b *builder, v string) error {
		if strings.EqualFold(strings.TrimSpace(v), want) {
			return nil
		}
		return fmt.Errorf("%s=%s is refused: %s", b.key, v, why)
	}
}

func setBrokers(b *builder, v string) error {
	b.brokers = nil
	for _, s := range strings.Split(v, ",") {
		s = strings.TrimSpace(s)
		// Java users sometimes write SASL_SSL://host:9092.
		if i := strings.Index(s, "://"); i >= 0 {
			s = s[i+3:]
		}
		if s != "" {
			b.brokers = append(b.brokers, s)
		}
	}
	if len(b.brokers) == 0 {
		return fmt.Errorf("%s is empty", b.key)
	}
	return nil
}

func setOAuthMethod(b *builder, v string) error {
	switch strings.ToLower(v) {
	case "oidc", "default":
		return nil
	}
	return fmt.Errorf("%s=%s: want oidc (a client-credentials token endpoint)", b.key, v)
}

func setReplicas(b *builder, v string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 16)
	if err != nil || n == 0 || n < -1 {
		return fmt.Errorf("%s=%s: want a replication factor of 1 or more, or -1 for the broker's default", b.key, v)
	}
	b.p.Topics.Replicas = int16(n)
	return nil
}

func setMinISR(b *builder, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return fmt.Errorf("%s=%s: want a whole number of 1 or more", b.key, v)
	}
	b.p.Topics.MinInsyncReplicas = n
	return nil
}

func setTxnTimeout(b *builder, v string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 1000 {
		return fmt.Errorf("%s=%s: want milliseconds, at least 1000", b.key, v)
	}
	b.p.TransactionTimeout = time.Duration(n) * time.Millisecond
	return nil
}

func setAcks(b *builder, v string) error {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "all", "-1":
		return nil
	}
	return fmt.Errorf("%s=%s is refused: the command topic and exactly-once queries are written in transactions, which need acks=all", b.key, v)
}

func setCompression(b *builder, v string) error {
	var c kgo.CompressionCodec
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "none", "uncompressed":
		c = kgo.NoCompression()
	case "gzip":
		c = kgo.GzipCompression()
	case "snappy":
		c = kgo.SnappyCompression()
	case "lz4":
		c = kgo.Lz4Compression()
	case "zstd":
		c = kgo.ZstdCompression()
	case "producer":
		return nil
	default:
		return fmt.Errorf("%s=%s: want none, gzip, snappy, lz4 or zstd", b.key, v)
	}
	b.opt(kgo.ProducerBatchCompression(c))
	return nil
}

func setMaxRequest(b *builder, v string) error {
	n, err := parseBytes(v)
	if err != nil {
		return fmt.Errorf("%s=%s: %v", b.key, v, err)
	}
	b.maxRequest = n
	return nil
}

func setMs(opt func(time.Duration) kgo.Opt) setter {
	return func(b *builder, v string) error {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("%s=%s: want milliseconds", b.key, v)
		}
		b.opt(opt(time.Duration(n) * time.Millisecond))
		return nil
	}
}

func setBytes(opt func(int32) kgo.Opt) setter {
	return func(b *builder, v string) error {
		n, err := parseBytes(v)
		if err != nil {
			return fmt.Errorf("%s=%s: %v", b.key, v, err)
		}
		if b.key == "batch.size" {
			b.batch = n
			return nil
		}
		b.opt(opt(n))
		return nil
	}
}

func parseBytes(v string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("want a number of bytes from 1 to %d", int32(^uint32(0)>>1))
	}
	return int32(n), nil
}

// setBool sets *field to (value == when).
func setBool(field func(*builder) *bool, when bool) setter {
	return func(b *builder, v string) error {
		x, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return fmt.Errorf("%s=%s: want true or false", b.key, v)
		}
		*field(b) = x != when
		return nil
	}
}

// IsClientProperty says whether key is a Kafka client setting (any name
// Parse takes, with or without ksqlDB's and Streams' prefixes), so that a
// server's config reader can hand it to Parse rather than warn.
func IsClientProperty(key string) bool {
	n := normalize(key)
	if _, ok := handled[n]; ok {
		return true
	}
	return n != key || strings.HasPrefix(n, "ssl.") || strings.HasPrefix(n, "sasl.")
}

// KnownClientProperty says whether key (with or without ksqlDB's and
// Kafka Streams' prefixes) is a client setting a profile understands.
func KnownClientProperty(key string) bool {
	n := normalize(key)
	_, ok := handled[n]
	return ok || strings.HasPrefix(n, "ssl.") || strings.HasPrefix(n, "sasl.")
}

// secret says whether a property's value must never be shown.
func secret(key string) bool {
	k := strings.ToLower(key)
	for _, s := range []string{"password", "secret", "jaas", "key.pem", "keystore.key", "credentials", "token"} {
		if strings.Contains(k, s) && !strings.HasSuffix(k, ".url") {
			return true
		}
	}
	return false
}

// Redact returns value, or "[hidden]" when key names a secret.
func Redact(key, value string) string {
	if secret(key) {
		return "[hidden]"
	}
	return value
}

// partitionerWhy is why a client partitioner setting is ignored: how a
// topic is partitioned is part of its source's declaration.
const partitionerWhy = "sqlstreams writes a keyed record to murmur2(key) % partitions, as Java's producer does, and by crc32 into a topic a source declares WITH (PARTITIONER='crc32'), as librdkafka's default does"
