package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// runCheckKafka is "sqlstreams check-kafka": it connects to Kafka with the
// server's connection settings and lists, at once, every permission the
// service's principal lacks (docs/kafka-acls.md lists them all), each
// with the kafka-acls command that grants it, and whether the brokers are
// new enough for exactly-once.
func runCheckKafka(args []string) int {
	return checkKafka(args, os.Stdout, os.Stderr)
}

// checkKafka runs check-kafka. Exit status: 0 when everything required is
// granted (permissions only some statements need may still be missing,
// and are listed), 1 when something required is missing or the brokers
// are too old, 2 on bad flags.
func checkKafka(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sqlstreams check-kafka", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kf := addKafkaFlags(fs, "", "Kafka bootstrap servers, comma-separated (or bootstrap.servers in --config or --kafka-config)")
	serviceID := stringFlag(fs, "service-id", "sqlstreams", "the service ID to check for: everything it creates is named under <service-id>_")
	guarantee := stringFlag(fs, "processing-guarantee", "exactly_once_v2", "the server's processing guarantee: exactly_once_v2 needs Kafka 2.5+")
	plogTopic := stringFlag(fs, "processing-log-topic", "", "the processing log's topic, when not the default")
	plogCreate := boolFlag(fs, "processing-log-topic-auto-create", true, "whether the server creates the processing log's topic")
	readTopics := stringFlag(fs, "read-topics", "", "topics the service's queries read, comma-separated (READ is checked on each)")
	writeTopics := stringFlag(fs, "write-topics", "", "topics the service's queries write, comma-separated (WRITE, and CREATE when missing)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long the check may take")
	configFile := stringFlag(fs, "config", "", "the server's properties file (its Kafka settings, ksql.service.id, …)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sqlstreams check-kafka: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var fileKafka []kafka.Property
	if *configFile != "" {
		values, file, err := readConfig(fs, *configFile)
		if err != nil {
			fmt.Fprintf(stderr, "sqlstreams check-kafka: %v\n", err)
			return 2
		}
		for name := range values {
			if fs.Lookup(name) == nil {
				delete(values, name) // a server setting check-kafka has no use for
			}
		}
		if _, err := applyConfig(fs, *configFile, values); err != nil {
			fmt.Fprintf(stderr, "sqlstreams check-kafka: %v\n", err)
			return 2
		}
		fileKafka = file.kafka
	}
	kp, warnings, err := kf.profile(fileKafka)
	if err != nil {
		fmt.Fprintf(stderr, "sqlstreams check-kafka: %v\n", err)
		return 2
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "sqlstreams check-kafka: %s\n", w)
	}
	if len(kp.Brokers) == 0 {
		fmt.Fprintln(stderr, "sqlstreams check-kafka: give the brokers: --bootstrap-servers host:port (or bootstrap.servers in --config or --kafka-config)")
		return 2
	}
	svc := engine.KafkaService(*serviceID, engine.ProcessingLogConfig{Topic: *plogTopic, NoTopicCreate: !*plogCreate})
	svc.Read, svc.Write = splitList(*readTopics), splitList(*writeTopics)
	principal := kp.Principal
	if principal == "" {
		principal = "User:ANONYMOUS"
		if kp.TLS != nil && len(kp.TLS.Certificates) > 0 {
			principal = "User:<the client certificate's subject>"
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	fmt.Fprintf(stdout, "Checking what %s may do on Kafka at %s (%s) for service %q.\n", principal, strings.Join(kp.Brokers, ","), kp.Protocol(), *serviceID)
	brokers, err := kp.Ping(ctx)
	if err != nil {
		fmt.Fprintf(stdout, "Cannot connect: %v\n", err)
		return 1
	}
	failed := false
	for _, b := range brokers {
		fmt.Fprintf(stdout, "Broker %d looks like Kafka %s.\n", b.NodeID, b.Guess())
	}
	if err := kafka.ExactlyOnce(brokers); err != nil {
		if strings.EqualFold(*guarantee, "at_least_once") {
			fmt.Fprintf(stdout, "Note: %v\n", err)
		} else {
			fmt.Fprintf(stdout, "Too old: %v\n", err)
			failed = true
		}
	}
	missing, err := kp.Check(ctx, svc.Permissions())
	if err != nil {
		fmt.Fprintf(stdout, "Cannot check: %v\n", err)
		return 1
	}
	var required, optional, unchecked []kafka.Missing
	for _, m := range missing {
		switch {
		case m.Unchecked != "":
			unchecked = append(unchecked, m)
		case m.Optional:
			optional = append(optional, m)
		default:
			required = append(required, m)
		}
	}
	list := func(title string, ms []kafka.Missing) {
		if len(ms) == 0 {
			return
		}
		fmt.Fprintf(stdout, "%s (%d):\n", title, len(ms))
		for _, m := range ms {
			fmt.Fprintf(stdout, "  %s: %s\n", m, m.Why)
			if m.Unchecked != "" {
				fmt.Fprintf(stdout, "    not checked: %s\n", m.Unchecked)
			}
			fmt.Fprintf(stdout, "    %s\n", m.Grant(principal, kp.Brokers))
		}
	}
	list("Missing", required)
	list("Missing, needed only by some statements", optional)
	list("Not checked (the brokers do not tell)", unchecked)
	switch {
	case len(required) > 0:
		failed = true
	case len(missing) == 0:
		fmt.Fprintf(stdout, "Every permission the service needs is granted.\n")
	default:
		fmt.Fprintf(stdout, "Every permission the service always needs is granted.\n")
	}
	if failed {
		return 1
	}
	return 0
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
