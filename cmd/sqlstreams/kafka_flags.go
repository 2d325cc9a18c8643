package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/sqlstreams/sqlstreams/kafka"
)

// kafkaFlags are the Kafka connection settings of every command that
// reaches Kafka (server, datagen, check-kafka): --bootstrap-servers, a
// properties file of client settings (--kafka-config, as kcat's -F or the
// Java tools' --command-config), single settings with -X name=value (as
// kcat and librdkafka take them), and SQLSTREAMS_KAFKA_* variables. The
// names are the Java client's and librdkafka's (security.protocol,
// sasl.mechanism, sasl.jaas.config, ssl.ca.location, …), also with
// ksqlDB's ksql.streams. prefix.
type kafkaFlags struct {
	bootstrap *string
	file      *string
	props     *propFlag
}

// propFlag is a repeatable name=value flag; its String hides secrets.
type propFlag struct{ list []kafka.Property }

func (p *propFlag) String() string {
	if p == nil {
		return ""
	}
	var parts []string
	for _, pr := range p.list {
		parts = append(parts, pr.Key+"="+kafka.Redact(pr.Key, pr.Value))
	}
	return strings.Join(parts, ",")
}

func (p *propFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return errors.New("want name=value, e.g. -X security.protocol=SASL_SSL")
	}
	p.list = append(p.list, kafka.Property{Key: strings.TrimSpace(k), Value: v, Source: "flag -X " + strings.TrimSpace(k)})
	return nil
}

func addKafkaFlags(fs *flag.FlagSet, bootstrapDefault, bootstrapUsage string) *kafkaFlags {
	k := &kafkaFlags{
		bootstrap: stringFlag(fs, "bootstrap-servers", bootstrapDefault, bootstrapUsage),
		file:      stringFlag(fs, "kafka-config", "", "a properties file of Kafka client settings by the Java client's or librdkafka's names (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.ca.location, client.id, …; ${VAR} is expanded); see README, \"Run on your Kafka\""),
		props:     &propFlag{},
	}
	fs.Var(k.props, "X", "a Kafka client setting, name=value (repeatable), as kcat's -X: -X security.protocol=SASL_SSL -X sasl.mechanism=SCRAM-SHA-512 (env SQLSTREAMS_KAFKA_<NAME>, e.g. SQLSTREAMS_KAFKA_SASL_MECHANISM)")
	fs.Var(k.props, "kafka-property", "the same as -X")
	return k
}

// profile builds the connection profile from, lowest precedence first:
// base (the server's --config file), --kafka-config, the environment, -X
// flags, then --bootstrap-servers. It returns the warnings for ignored
// settings.
func (k *kafkaFlags) profile(base []kafka.Property) (kafka.Profile, []string, error) {
	props := append([]kafka.Property(nil), base...)
	if *k.file != "" {
		fileProps, err := readKafkaConfig(*k.file)
		if err != nil {
			return kafka.Profile{}, nil, err
		}
		props = append(props, fileProps...)
	}
	props = append(props, kafka.FromEnv()...)
	props = append(props, k.props.list...)
	if b := strings.TrimSpace(*k.bootstrap); b != "" {
		props = append(props, kafka.Property{Key: "bootstrap.servers", Value: b, Source: "--bootstrap-servers"})
	}
	p, warnings, err := kafka.Parse(props)
	return p, warnings, err
}

// readKafkaConfig reads a properties file of Kafka client settings.
func readKafkaConfig(path string) ([]kafka.Property, error) {
	lines, err := readProperties(path)
	if err != nil {
		return nil, fmt.Errorf("--kafka-config: %w", err)
	}
	var out []kafka.Property
	for _, l := range lines {
		out = append(out, kafka.Property{Key: l.key, Value: l.value, Source: fmt.Sprintf("%s line %d", path, l.line)})
	}
	return out, nil
}

// expandEnv replaces ${NAME} and ${env:NAME} (Kafka's EnvVarConfigProvider
// form) with the environment variable's value; an unset one is an error
// naming it. A lone $ is kept.
func expandEnv(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		name := s[i+2 : i+j]
		name = strings.TrimPrefix(name, "env:")
		v, ok := os.LookupEnv(name)
		if !ok {
			return "", fmt.Errorf("${%s}: the environment variable %s is not set", name, name)
		}
		b.WriteString(s[:i])
		b.WriteString(v)
		s = s[i+j+1:]
	}
}
