package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sqlstreams/sqlstreams/broker"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/metrics"
	"github.com/sqlstreams/sqlstreams/server/pgwire"
	"github.com/sqlstreams/sqlstreams/server/rest"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/state"
)

func runServer(args []string) int {
	fs := flag.NewFlagSet("sqlstreams server", flag.ContinueOnError)
	dataDir := stringFlag(fs, "data-dir", "./data", "directory for the embedded broker's data and local state")
	pgAddr := stringFlag(fs, "pg-addr", "127.0.0.1:5433", "Postgres wire protocol listen address")
	httpAddr := stringFlag(fs, "http-addr", "127.0.0.1:8088", "REST API listen address")
	advertisedHTTP := stringFlag(fs, "advertised-http-addr", "", "host:port other instances of the service reach this one's REST API at, to forward pull queries for the partitions it owns (default: --http-addr)")
	bootstrap := stringFlag(fs, "bootstrap-servers", "", "Kafka bootstrap servers, comma-separated; empty starts the embedded broker")
	kafkaAddr := stringFlag(fs, "embedded-kafka-addr", "127.0.0.1:9092", "embedded broker listen address")
	kafkaFsync := stringFlag(fs, "embedded-kafka-fsync", string(broker.SyncInterval), "when the embedded broker forces records to disk: never (the OS writes back; a power loss loses up to ~30 s), interval (every second; a power loss loses up to ~1 s) or always (before acknowledging; an acknowledged record survives a power loss)")
	serviceID := stringFlag(fs, "service-id", "sqlstreams", "service ID: names the command topic and prefixes query application IDs")
	instanceID := stringFlag(fs, "instance-id", "", "this server's stable name within the service (default: host name)")
	logLevel := stringFlag(fs, "log-level", "info", "log level: debug, info, warn or error")
	queriesFile := stringFlag(fs, "queries-file", "", "headless mode: run these statements at start and refuse other catalog changes")
	blockCache := stringFlag(fs, "rocksdb-block-cache", "64MiB", "RocksDB block cache shared by all state stores of this server")
	writeBuffers := stringFlag(fs, "rocksdb-write-buffers", "64MiB", "RocksDB write-buffer (memtable) budget shared by all state stores")
	valueCache := stringFlag(fs, "state-value-cache", "64MiB", "cache of committed state values in front of RocksDB, shared by all state stores")
	threads := intFlag(fs, "num-stream-threads", 1, "stream threads per persistent query (a query's SET 'num.stream.threads' overrides it)")
	logRows := boolFlag(fs, "processing-log-rows", true, "write skipped records' keys and values (base64) to the processing log (ksqlDB's ksql.logging.processing.rows.include)")
	restFlags := addRESTFlags(fs)
	regFlags := addRegistryFlags(fs)
	pgFlags := definePgFlags(fs)
	configFile := stringFlag(fs, "config", "", "a properties file of settings (ksqlDB's ksql-server.properties names such as listeners, ksql.service.id, bootstrap.servers, ksql.streams.num.stream.threads, or these flags' names); flags and environment variables override it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var fileValues map[string]configValue
	var configWarnings []string
	if *configFile != "" {
		var err error
		if fileValues, configWarnings, err = readConfig(fs, *configFile); err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams: %v\n", err)
			return 2
		}
	}
	settings, err := applyConfig(fs, *configFile, fileValues)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: %v\n", err)
		return 2
	}
	pgOpts, err := pgFlags.options(*pgAddr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: %v\n", err)
		return 2
	}
	regSettings, err := regFlags.settings()
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: %v\n", err)
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: bad --log-level: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	for _, w := range configWarnings {
		log.Warn(w)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var headless []string
	if *queriesFile != "" {
		b, err := os.ReadFile(*queriesFile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams: --queries-file: %v\n", err)
			return 2
		}
		headless = append([]string{}, sql.Split(string(b))...)
	}
	cacheBytes, err1 := parseBytes(*blockCache)
	bufferBytes, err2 := parseBytes(*writeBuffers)
	valueBytes, err3 := parseBytes(*valueCache)
	if err := errors.Join(err1, err2, err3); err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: %v\n", err)
		return 2
	}
	fsyncMode, err := broker.ParseSync(*kafkaFsync)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: --embedded-kafka-fsync: %v\n", err)
		return 2
	}
	if *threads < 1 {
		fmt.Fprintf(os.Stderr, "sqlstreams: --num-stream-threads must be at least 1, not %d\n", *threads)
		return 2
	}
	if err := serve(ctx, log, serverConfig{
		dataDir: *dataDir, pgAddr: *pgAddr, httpAddr: *httpAddr, advertisedHTTP: *advertisedHTTP, bootstrap: *bootstrap,
		kafkaAddr: *kafkaAddr, kafkaFsync: fsyncMode, serviceID: *serviceID, instanceID: *instanceID,
		blockCache: cacheBytes, writeBuffers: bufferBytes, valueCache: valueBytes,
		rest: restFlags.settings(), pgOpts: pgOpts, headless: headless, threads: *threads,
		registry: regSettings, settings: settings, omitLogRows: !*logRows,
	}); err != nil {
		log.Error("sqlstreams stopped", "err", err)
		return 1
	}
	log.Info("sqlstreams stopped cleanly")
	return 0
}

type serverConfig struct {
	dataDir, pgAddr, httpAddr, bootstrap, kafkaAddr, serviceID, instanceID string
	advertisedHTTP                                                         string
	blockCache, writeBuffers, valueCache                                   int64
	rest                                                                   restSettings
	pgOpts                                                                 []pgwire.Option
	headless                                                               []string
	threads                                                                int
	registry                                                               registrySettings
	settings                                                               []engine.Setting
	omitLogRows                                                            bool
	kafkaFsync                                                             broker.Sync
}

func serve(ctx context.Context, log *slog.Logger, cfg serverConfig) error {
	if err := os.MkdirAll(cfg.dataDir, 0o755); err != nil {
		return err
	}
	// The REST settings are checked before anything starts: a refused
	// address or a bad users file should not wait for the broker.
	reg := metrics.New()
	info := rest.Info{Version: "sqlstreams-dev", ServiceID: cfg.serviceID}
	if cfg.bootstrap == "" {
		info.KafkaClusterID = broker.ClusterID
	}
	restOpts, restTLS, err := cfg.rest.build(cfg.httpAddr, log, reg, info)
	if err != nil {
		return err
	}
	var brokers []string
	if cfg.bootstrap == "" {
		b, err := broker.Start(ctx, broker.Config{Addr: cfg.kafkaAddr, DataDir: filepath.Join(cfg.dataDir, "kafka"), Sync: cfg.kafkaFsync, Logger: log})
		if err != nil {
			return fmt.Errorf("starting the embedded broker: %w", err)
		}
		defer b.Close()
		brokers = []string{b.Addr()}
		log.Info("embedded Kafka broker listening", "addr", b.Addr(), "data_dir", filepath.Join(cfg.dataDir, "kafka"))
	} else {
		brokers = strings.Split(cfg.bootstrap, ",")
	}
	schemas, stopRegistry, err := startSchemaRegistry(ctx, log, cfg.registry, brokers, cfg.bootstrap == "")
	if err != nil {
		return err
	}
	defer stopRegistry()
	instance := cfg.instanceID
	if instance == "" {
		instance = stableInstanceID(cfg.dataDir)
	}
	rocks := state.NewRocksResources(cfg.blockCache, cfg.writeBuffers, cfg.valueCache)
	defer rocks.Close()
	openCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	eng, err := engine.Open(openCtx, engine.Config{
		Brokers: brokers, ServiceID: cfg.serviceID, InstanceID: instance, Logger: log,
		StateDir: filepath.Join(cfg.dataDir, "state"), RocksResources: rocks, Metrics: reg, Headless: cfg.headless,
		Threads: cfg.threads, Schemas: schemas, Settings: cfg.settings, ProcessingLogOmitRows: cfg.omitLogRows,
		Endpoint: advertisedEndpoint(cfg.advertisedHTTP, cfg.httpAddr), PGEndpoint: advertisedEndpoint("", cfg.pgAddr),
	})
	cancel()
	if err != nil {
		return fmt.Errorf("opening the engine: %w", err)
	}
	defer eng.Close()

	pgln, err := net.Listen("tcp", cfg.pgAddr)
	if err != nil {
		return fmt.Errorf("pgwire: %w", err)
	}
	pg := pgwire.New(eng, append([]pgwire.Option{pgwire.WithLogger(log), pgwire.WithMetrics(reg)}, cfg.pgOpts...)...)
	errc := make(chan error, 2)
	go func() { errc <- pg.Serve(pgln) }()
	defer pg.Close()
	log.Info("Postgres wire protocol listening", "addr", pgln.Addr().String())

	httpln, err := net.Listen("tcp", cfg.httpAddr)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	restSrv := rest.New(eng, restOpts...)
	// HTTP/1.1, HTTP/2 over TLS, and HTTP/2 cleartext with prior
	// knowledge (how ksqlDB's Java client calls /query-stream).
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(true)
	var httpConns sync.Map // net.Conn → the function ending its count
	hs := &http.Server{
		Protocols:         protocols,
		Handler:           restSrv,
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(c net.Conn, st http.ConnState) {
			switch st {
			case http.StateNew:
				httpConns.Store(c, reg.ConnOpened("rest"))
			case http.StateClosed, http.StateHijacked:
				if done, ok := httpConns.LoadAndDelete(c); ok {
					done.(func())()
				}
			}
		},
		IdleTimeout:    2 * time.Minute,
		MaxHeaderBytes: 64 << 10,
		TLSConfig:      restTLS,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	if restTLS != nil {
		scheme = "https"
		go func() { errc <- hs.ServeTLS(httpln, "", "") }()
	} else {
		go func() { errc <- hs.Serve(httpln) }()
	}
	defer func() {
		// End push queries and inserts streams first, so that their
		// responses finish cleanly, then give handlers a moment.
		restSrv.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			hs.Close()
		}
	}()
	log.Info("REST API listening", "addr", httpln.Addr().String(), "scheme", scheme)

	select {
	case <-ctx.Done():
		log.Info("shutting down")
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
			return nil
		}
		return err
	}
}

// stableInstanceID returns an instance ID kept in the data directory, so
// that a restarted server reuses its stream threads' transactional IDs and
// fences its own zombies.
func stableInstanceID(dataDir string) string {
	path := filepath.Join(dataDir, "instance-id")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	h, _ := os.Hostname()
	id := fmt.Sprintf("%s-%d", h, time.Now().UnixNano()%1_000_000)
	_ = os.WriteFile(path, []byte(id+"\n"), 0o644)
	return id
}

// advertisedEndpoint is the REST address other instances forward pull
// queries to: --advertised-http-addr, else --http-addr with a wildcard
// host made the host name.
func advertisedEndpoint(advertised, listen string) string {
	if advertised != "" {
		return advertised
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, port)
}
