// Package kafka holds how sqlstreams reaches Kafka: one connection Profile
// (brokers, TLS, SASL, the client settings users pass through) from which
// every Kafka client the server and its commands create is built, read
// from the property names users already have in their Java or librdkafka
// properties files. It also names what the service may do on the cluster
// (Check) and explains the broker's refusals (Explain).
//
// No other package calls kgo.NewClient (tests/layers checks it); tests and
// the benchmark harness's hand-written pipelines may.
package kafka

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
)

// Profile is how to reach one Kafka cluster. The zero value with Brokers
// set is a plaintext connection with franz-go's defaults; Parse builds
// one from properties.
type Profile struct {
	// Brokers are the seed brokers (host:port).
	Brokers []string
	// TLS, when set, encrypts every connection (security.protocol SSL or
	// SASL_SSL).
	TLS *tls.Config
	// SASL, when set, authenticates every connection.
	SASL sasl.Mechanism
	// Principal names who the cluster sees ("User:alice"), for errors
	// about missing permissions; empty when the listener decides it
	// (PLAINTEXT: User:ANONYMOUS; mutual TLS: the certificate's subject).
	Principal string
	// Topics are the settings of the internal topics the service creates.
	Topics TopicSettings
	// TransactionTimeout, when set, is the transactional producers'
	// transaction.timeout.ms (the stream threads' default is 10 s).
	TransactionTimeout time.Duration

	// opts are the pass-through client settings (client.id, linger.ms,
	// …), applied after the caller's own options so that the user's
	// choice wins.
	opts []kgo.Opt
	// settings are the properties the profile was read from, secrets
	// hidden, for SHOW PROPERTIES.
	settings []Setting
	// dial wraps connections (tests: a fault injector); nil is net.Dialer.
	dial func(ctx context.Context, network, host string) (net.Conn, error)
}

// TopicSettings are the replication settings of the topics the service
// creates for itself: the command topic, changelogs, repartition topics,
// the processing log and the registry's _schemas.
type TopicSettings struct {
	// Replicas is the replication factor; -1 (the default) is the
	// broker's default.replication.factor.
	Replicas int16
	// MinInsyncReplicas, when above 0, is set as min.insync.replicas.
	MinInsyncReplicas int
}

// Configs returns the topic configs these settings add (nil: none).
func (t TopicSettings) Configs() map[string]*string {
	if t.MinInsyncReplicas <= 0 {
		return nil
	}
	v := fmt.Sprint(t.MinInsyncReplicas)
	return map[string]*string{"min.insync.replicas": &v}
}

// ReplicationFactor is Replicas, with 0 read as the broker's default.
func (t TopicSettings) ReplicationFactor() int16 {
	if t.Replicas == 0 {
		return -1
	}
	return t.Replicas
}

// Setting is one property a profile was read from, as SHOW PROPERTIES
// lists it: a secret's value is "[hidden]".
type Setting struct {
	Name, Value string
}

// Plain is a profile of a plaintext cluster at these brokers.
func Plain(brokers ...string) Profile {
	return Profile{Brokers: brokers, Topics: TopicSettings{Replicas: -1}}
}

// Opts returns the options of a client of this profile: the seed brokers,
// TLS and SASL, then extra (the caller's), then the user's pass-through
// settings. Produced batches are not compressed unless the user says so
// (compression.type): Kafka's producer default, where franz-go's is
// snappy, which cost the stream threads a fifth of a projection's CPU
// (bench/README.md, "Compression").
func (p Profile) Opts(extra ...kgo.Opt) []kgo.Opt {
	opts := make([]kgo.Opt, 0, 5+len(extra)+len(p.opts))
	opts = append(opts, kgo.SeedBrokers(p.Brokers...), kgo.ProducerBatchCompression(kgo.NoCompression()))
	switch {
	case p.dial != nil && p.TLS != nil:
		d, cfg := p.dial, p.TLS
		opts = append(opts, kgo.Dialer(func(ctx context.Context, network, host string) (net.Conn, error) {
			c, err := d(ctx, network, host)
			if err != nil {
				return nil, err
			}
			return tlsClient(c, cfg, host), nil
		}))
	case p.dial != nil:
		opts = append(opts, kgo.Dialer(p.dial))
	case p.TLS != nil:
		opts = append(opts, kgo.DialTLSConfig(p.TLS.Clone()))
	}
	if p.SASL != nil {
		opts = append(opts, kgo.SASL(p.SASL))
	}
	opts = append(opts, extra...)
	return append(opts, p.opts...)
}

// tlsClient starts TLS over c, with the server name taken from host when
// the config names none (as kgo.DialTLSConfig does).
func tlsClient(c net.Conn, cfg *tls.Config, host string) net.Conn {
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		if h, _, err := net.SplitHostPort(host); err == nil {
			cfg.ServerName = h
		}
	}
	return tls.Client(c, cfg)
}

// NewClient builds a client of this profile (see Opts).
func (p Profile) NewClient(extra ...kgo.Opt) (*kgo.Client, error) {
	cl, err := kgo.NewClient(p.Opts(extra...)...)
	if err != nil {
		return nil, fmt.Errorf("kafka client: %w", err)
	}
	return cl, nil
}

// WithDialer returns the profile with its connections made by dial
// (TLS, when set, still runs over them).
func (p Profile) WithDialer(dial func(ctx context.Context, network, host string) (net.Conn, error)) Profile {
	p.dial = dial
	return p
}

// Settings are the properties the profile was read from, secrets hidden,
// sorted by name.
func (p Profile) Settings() []Setting {
	out := append([]Setting(nil), p.settings...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// String describes the profile for logs: brokers, protocol, mechanism and
// principal, never a secret.
func (p Profile) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "brokers=%s security.protocol=%s", strings.Join(p.Brokers, ","), p.Protocol())
	if p.SASL != nil {
		fmt.Fprintf(&b, " sasl.mechanism=%s", p.SASL.Name())
	}
	if p.Principal != "" {
		fmt.Fprintf(&b, " principal=%s", p.Principal)
	}
	return b.String()
}

// Protocol is the profile's security.protocol.
func (p Profile) Protocol() string {
	switch {
	case p.TLS != nil && p.SASL != nil:
		return "SASL_SSL"
	case p.TLS != nil:
		return "SSL"
	case p.SASL != nil:
		return "SASL_PLAINTEXT"
	}
	return "PLAINTEXT"
}

// principal is the name errors give the client: Principal, or what the
// listener makes of an unauthenticated connection.
func (p Profile) principal() string {
	switch {
	case p.Principal != "":
		return p.Principal
	case p.TLS != nil && len(p.TLS.Certificates) > 0:
		return "the client certificate's subject"
	}
	return "User:ANONYMOUS"
}

// With returns configs with these settings' added (a new map; configs
// is not changed).
func (t TopicSettings) With(configs map[string]*string) map[string]*string {
	add := t.Configs()
	if len(add) == 0 {
		return configs
	}
	out := make(map[string]*string, len(configs)+len(add))
	for k, v := range configs {
		out[k] = v
	}
	for k, v := range add {
		out[k] = v
	}
	return out
}
