package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sqlstreams/sqlstreams/broker"
	"github.com/sqlstreams/sqlstreams/kafka"
)

// runBroker runs only the embedded broker ("sqlstreams broker"): the same
// persistence and crash repair the server's embedded broker has, for
// several sqlstreams instances to share through --bootstrap-servers. It
// also serves the embedded Schema Registry (--schema-registry-addr), so
// that the instances share one through --schema-registry-url.
func runBroker(args []string) int {
	fs := flag.NewFlagSet("sqlstreams broker", flag.ContinueOnError)
	dataDir := stringFlag(fs, "data-dir", "./data/kafka", "directory of the broker's topics, offsets, groups and producer state; empty keeps them in memory")
	addr := stringFlag(fs, "addr", broker.DefaultAddr, "listen address (port 0 picks one; the chosen one is logged); beyond loopback it needs --tls-cert and --sasl-users-file (or --allow-remote)")
	advertise := stringFlag(fs, "advertise", "", "host:port clients are told to connect to (default: the listen address; on every interface, this machine's host name)")
	sec := addEmbeddedKafkaFlags(fs, "", "addr")
	fsync := stringFlag(fs, "fsync", string(broker.SyncInterval), "when records are forced to disk: never, interval or always (as the server's --embedded-kafka-fsync)")
	registryAddr := stringFlag(fs, "schema-registry-addr", "", "where to serve the embedded Schema Registry (e.g. 127.0.0.1:8081); empty serves none")
	regSec := addEmbeddedRegistryFlags(fs)
	logLevel := stringFlag(fs, "log-level", "info", "log level: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "sqlstreams broker: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams broker: bad --log-level: %v\n", err)
		return 2
	}
	mode, err := broker.ParseSync(*fsync)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams broker: --fsync: %v\n", err)
		return 2
	}
	security, err := sec.settings(*addr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams broker: %v\n", err)
		return 2
	}
	regSettings := registrySettings{addr: *registryAddr}
	if err := regSec.apply(&regSettings); err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams broker: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if *dataDir != "" {
		if err := os.MkdirAll(*dataDir, 0o755); err != nil {
			log.Error("broker data directory", "err", err)
			return 1
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	if security.insecureRemote {
		log.Warn("the broker listens beyond loopback without both TLS and SASL users (--allow-remote)", "addr", *addr)
	}
	b, err := broker.Start(sctx, security.config(broker.Config{Addr: *addr, Advertise: *advertise, DataDir: *dataDir, Sync: mode, Logger: log}))
	cancel()
	if err != nil {
		log.Error("starting the broker", "err", err)
		return 1
	}
	defer b.Close()
	// The line tests and scripts wait for: the broker serves from here.
	log.Info("Kafka broker listening", "addr", b.Addr(), "listen", b.ListenAddr().String(), "security_protocol", securityProtocol(security), "data_dir", *dataDir)
	if *registryAddr != "" {
		_, stopRegistry, err := startSchemaRegistry(ctx, log, regSettings, b.Profile(kafka.Plain()), true)
		if err != nil {
			log.Error("schema registry", "err", err)
			return 1
		}
		defer stopRegistry()
	}
	<-ctx.Done()
	log.Info("shutting down")
	return 0
}
