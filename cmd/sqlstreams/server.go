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
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sqlstreams/sqlstreams/broker"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/metrics"
	"github.com/sqlstreams/sqlstreams/server/console"
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
	kafkaFlags := addKafkaFlags(fs, "", "Kafka bootstrap servers, comma-separated; empty (and no bootstrap.servers setting) starts the embedded broker")
	kafkaAddr := stringFlag(fs, "embedded-kafka-addr", "127.0.0.1:9092", "embedded broker listen address; beyond loopback it needs --embedded-kafka-tls-cert and --embedded-kafka-sasl-users-file (or --embedded-kafka-allow-remote)")
	kafkaAdvertise := stringFlag(fs, "embedded-kafka-advertise", "", "host:port the embedded broker tells clients to connect to (default: the listen address; on every interface, this machine's host name)")
	kafkaSec := addEmbeddedKafkaFlags(fs, "embedded-kafka-", "embedded-kafka-addr")
	kafkaFsync := stringFlag(fs, "embedded-kafka-fsync", string(broker.SyncInterval), "when the embedded broker forces records to disk: never (the OS writes back; a power loss loses up to ~30 s), interval (every second; a power loss loses up to ~1 s) or always (before acknowledging; an acknowledged record survives a power loss)")
	serviceID := stringFlag(fs, "service-id", "sqlstreams", "service ID: names the command topic and prefixes query application IDs")
	instanceID := stringFlag(fs, "instance-id", "", "this server's stable name within the service (default: host name)")
	logLevel := stringFlag(fs, "log-level", "info", "log level: debug, info, warn or error")
	queriesFile := stringFlag(fs, "queries-file", "", "headless mode: run these statements at start and refuse other catalog changes")
	blockCache := stringFlag(fs, "rocksdb-block-cache", "64MiB", "RocksDB block cache shared by all state stores of this server")
	writeBuffers := stringFlag(fs, "rocksdb-write-buffers", "64MiB", "RocksDB write-buffer (memtable) budget shared by all state stores")
	valueCache := stringFlag(fs, "state-value-cache", "64MiB", "cache of committed state values in front of RocksDB, shared by all state stores")
	memoryLimit := stringFlag(fs, "memory-limit", "", "one memory budget for the server, e.g. 2GiB: sets the Go runtime's soft limit and sizes the RocksDB block cache, memtables and the state value cache inside it (those flags, when given, still win); empty: no limit, the caches at their own defaults")
	threads := intFlag(fs, "num-stream-threads", 1, "stream threads per persistent query (a query's SET 'num.stream.threads' overrides it)")
	guarantee := stringFlag(fs, "processing-guarantee", "exactly_once_v2", "persistent queries' default processing guarantee: exactly_once_v2, or at_least_once (no transactions: lower latency, records may be processed twice after a failure); a query's SET 'processing.guarantee' overrides it")
	dslStore := stringFlag(fs, "default-dsl-store", "rocksDB", "where persistent queries keep their state stores (Kafka Streams' default.dsl.store): rocksDB (on disk; restarts restore only what changed) or in_memory (in the heap: less CPU per record, but every start restores each store from the start of its changelog, and all state must fit in memory); a query's SET 'default.dsl.store' overrides it")
	commitMs := intFlag(fs, "commit-interval-ms", 100, "how often persistent queries commit, in ms (Kafka Streams' commit.interval.ms); a query's SET 'commit.interval.ms' overrides it")
	txnTimeoutMs := intFlag(fs, "transaction-timeout-ms", int(engine.DefaultTransactionTimeout.Milliseconds()), "persistent queries' transaction timeout under exactly-once, in ms (Kafka Streams' transaction.timeout.ms, 10 s under exactly-once): an instance that dies with a transaction open holds back readers of what it wrote (read_committed) for at most this long, less if it restarts first; a query's SET 'transaction.timeout.ms' overrides it")
	standbys := intFlag(fs, "num-standby-replicas", 0, "standby replicas of each stateful task (Kafka Streams' num.standby.replicas): other instances keep a hot copy of its state from the changelog, so that it moves or fails over without a long restore; a query's SET 'num.standby.replicas' overrides it")
	recoveryLag := intFlag(fs, "acceptable-recovery-lag", 10000, "a stateful task moves to an instance only when that instance's copy of its state is at most this many changelog offsets behind; otherwise the instance warms it up first (acceptable.recovery.lag)")
	probingMs := intFlag(fs, "probing-rebalance-interval-ms", 600000, "how often an instance warming up tasks forces a rebalance to see whether they caught up, in ms (probing.rebalance.interval.ms)")
	leaveGroup := boolFlag(fs, "leave-group-on-close", false, "on a clean stop, leave every query's group so that this instance's tasks move to the others at once; for an instance removed for good (by default a stop stays in the groups until the 10 s session timeout, so a restart within it moves no task)")
	drainTimeout := stringFlag(fs, "drain-timeout", "30s", "after SIGTERM or SIGINT, how long the server may take to drain (end sessions, commit every query, leave its groups) before it exits anyway; a second signal exits at once")
	logRows := boolFlag(fs, "processing-log-rows", true, "write skipped records' keys and values (base64) to the processing log (ksqlDB's ksql.logging.processing.rows.include)")
	plogTopic := stringFlag(fs, "processing-log-topic", "", "the processing log's topic (ksqlDB's ksql.logging.processing.topic.name; default <service-id>_processing_log)")
	plogParts := intFlag(fs, "processing-log-topic-partitions", 1, "partitions of the processing log's topic when the server creates it (ksql.logging.processing.topic.partitions)")
	plogRepl := intFlag(fs, "processing-log-topic-replication", -1, "replication factor of the processing log's topic when the server creates it; -1 is the broker's default (ksql.logging.processing.topic.replication.factor)")
	plogCreate := boolFlag(fs, "processing-log-topic-auto-create", true, "create the processing log's topic when it is missing (ksql.logging.processing.topic.auto.create)")
	plogStream := stringFlag(fs, "processing-log-stream", engine.ProcessingLogStream, "the stream the server declares over the processing log (ksql.logging.processing.stream.name)")
	plogDeclare := boolFlag(fs, "processing-log-stream-auto-create", true, "declare the processing log stream at start (ksql.logging.processing.stream.auto.create)")
	restFlags := addRESTFlags(fs)
	intFlags := addInternalFlags(fs)
	regFlags := addRegistryFlags(fs)
	pgFlags := definePgFlags(fs)
	configFile := stringFlag(fs, "config", "", "a properties file of settings (ksqlDB's ksql-server.properties names such as listeners, ksql.service.id, bootstrap.servers, ksql.streams.num.stream.threads, or these flags' names); flags and environment variables override it")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var fileValues map[string]configValue
	var file fileConfig
	if *configFile != "" {
		var err error
		if fileValues, file, err = readConfig(fs, *configFile); err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams: %v\n", err)
			return 2
		}
	}
	settings, err := applyConfig(fs, *configFile, fileValues)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: %v\n", err)
		return 2
	}
	kp, kafkaWarnings, err := kafkaFlags.profile(file.kafka)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: %v\n", err)
		return 2
	}
	for _, s := range kp.Settings() {
		settings = append(settings, engine.Setting{Name: s.Name, Value: s.Value, Source: "Kafka client setting"})
	}
	pgOpts, err := pgFlags.options(*pgAddr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: %v\n", err)
		return 2
	}
	embedded := len(kp.Brokers) == 0
	regSettings, err := regFlags.settings(embedded)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: %v\n", err)
		return 2
	}
	var kafkaSecurity embeddedKafkaSettings
	if embedded {
		if kafkaSecurity, err = kafkaSec.settings(*kafkaAddr); err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams: %v\n", err)
			return 2
		}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: bad --log-level: %v\n", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(log)
	for _, w := range append(file.warnings, kafkaWarnings...) {
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
	cacheBytes, err1 := engine.ParseBytes(*blockCache)
	bufferBytes, err2 := engine.ParseBytes(*writeBuffers)
	valueBytes, err3 := engine.ParseBytes(*valueCache)
	if err := errors.Join(err1, err2, err3); err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: %v\n", err)
		return 2
	}
	var fetchMax int32
	var maxTxn int
	if *memoryLimit != "" {
		limit, err := engine.ParseBytes(*memoryLimit)
		var budget engine.MemoryBudget
		if err == nil {
			budget, err = engine.NewMemoryBudget(limit)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "sqlstreams: --memory-limit: %v\n", err)
			return 2
		}
		// The caches the user did not size take their share of the limit.
		for _, c := range []struct {
			name string
			size *int64
			v    int64
		}{
			{"rocksdb-block-cache", &cacheBytes, budget.BlockCache},
			{"rocksdb-write-buffers", &bufferBytes, budget.WriteBuffers},
			{"state-value-cache", &valueBytes, budget.ValueCache},
		} {
			for i := range settings {
				if settings[i].Name == c.name && settings[i].Source == "default" {
					*c.size = c.v
					settings[i].Value, settings[i].Source = fmt.Sprintf("%dMiB", c.v>>20), "--memory-limit"
				}
			}
		}
		debug.SetMemoryLimit(budget.GoSoftLimit)
		engine.SetHeapFloor(budget.HeapFloor)
		fetchMax, maxTxn = budget.FetchMaxBytes, budget.MaxTxnRecords
		log.Info("memory limit", "limit", *memoryLimit, "go_soft_limit_mib", budget.GoSoftLimit>>20, "go_heap_floor_mib", budget.HeapFloor>>20, "block_cache_mib", cacheBytes>>20,
			"memtables_mib", bufferBytes>>20, "value_cache_mib", valueBytes>>20, "fetch_max_kib", fetchMax>>10, "max_txn_records", maxTxn)
	}
	fsyncMode, err := broker.ParseSync(*kafkaFsync)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams: --embedded-kafka-fsync: %v\n", err)
		return 2
	}
	drain, err := time.ParseDuration(*drainTimeout)
	if err != nil || drain <= 0 {
		fmt.Fprintf(os.Stderr, "sqlstreams: --drain-timeout: %q is not a positive duration such as 30s\n", *drainTimeout)
		return 2
	}
	if *plogParts < 1 || *plogRepl < -1 || *plogRepl == 0 || *plogRepl > 1<<15-1 {
		fmt.Fprintf(os.Stderr, "sqlstreams: the processing log topic needs at least 1 partition and a replication factor of -1 or at least 1, not %d and %d\n", *plogParts, *plogRepl)
		return 2
	}
	plog := engine.ProcessingLogConfig{
		Topic: *plogTopic, Partitions: int32(*plogParts), Replication: int16(*plogRepl),
		NoTopicCreate: !*plogCreate, Stream: strings.ToUpper(*plogStream), NoStream: !*plogDeclare,
	}
	var atLeastOnce bool
	switch strings.ToLower(*guarantee) {
	case "exactly_once_v2", "exactly_once":
	case "at_least_once":
		atLeastOnce = true
	default:
		fmt.Fprintf(os.Stderr, "sqlstreams: --processing-guarantee must be exactly_once_v2 or at_least_once, not %q\n", *guarantee)
		return 2
	}
	var memoryStores bool
	switch strings.ToLower(*dslStore) {
	case "rocksdb", "rocks_db":
	case "in_memory":
		memoryStores = true
	default:
		fmt.Fprintf(os.Stderr, "sqlstreams: --default-dsl-store must be rocksDB or in_memory, not %q\n", *dslStore)
		return 2
	}
	if *commitMs < 1 || *commitMs > 3600*1000 {
		fmt.Fprintf(os.Stderr, "sqlstreams: --commit-interval-ms must be from 1 to 3600000, not %d\n", *commitMs)
		return 2
	}
	for _, st := range settings {
		// transaction.timeout.ms among the Kafka client settings (-X,
		// --kafka-config) sets it when the flag's own names did not.
		if st.Name == "transaction-timeout-ms" && st.Source == "default" && kp.TransactionTimeout > 0 {
			*txnTimeoutMs = int(kp.TransactionTimeout.Milliseconds())
		}
	}
	if *txnTimeoutMs < 1000 || *txnTimeoutMs > int(engine.MaxTransactionTimeout.Milliseconds()) {
		fmt.Fprintf(os.Stderr, "sqlstreams: --transaction-timeout-ms must be from 1000 to %d, not %d\n", engine.MaxTransactionTimeout.Milliseconds(), *txnTimeoutMs)
		return 2
	}
	if *threads < 1 {
		fmt.Fprintf(os.Stderr, "sqlstreams: --num-stream-threads must be at least 1, not %d\n", *threads)
		return 2
	}
	if *standbys < 0 || *standbys > 16 {
		fmt.Fprintf(os.Stderr, "sqlstreams: --num-standby-replicas must be from 0 to 16, not %d\n", *standbys)
		return 2
	}
	if *recoveryLag < 0 {
		fmt.Fprintf(os.Stderr, "sqlstreams: --acceptable-recovery-lag must be 0 or more, not %d\n", *recoveryLag)
		return 2
	}
	if *probingMs < 100 {
		fmt.Fprintf(os.Stderr, "sqlstreams: --probing-rebalance-interval-ms must be at least 100, not %d\n", *probingMs)
		return 2
	}
	if err := serve(ctx, log, serverConfig{
		dataDir: *dataDir, pgAddr: *pgAddr, httpAddr: *httpAddr, advertisedHTTP: *advertisedHTTP, kafka: kp,
		kafkaAddr: *kafkaAddr, kafkaAdvertise: *kafkaAdvertise, kafkaSecurity: kafkaSecurity, kafkaFsync: fsyncMode, serviceID: *serviceID, instanceID: *instanceID,
		blockCache: cacheBytes, writeBuffers: bufferBytes, valueCache: valueBytes,
		rest: restFlags.settings(), internal: intFlags, pgOpts: pgOpts, headless: headless, threads: *threads,
		registry: regSettings, settings: settings, properties: file.defaults, omitLogRows: !*logRows, drainTimeout: drain, processingLog: plog, fetchMaxBytes: fetchMax, maxTxnRecords: maxTxn, atLeastOnce: atLeastOnce, memoryStores: memoryStores, commitInterval: time.Duration(*commitMs) * time.Millisecond,
		txnTimeout: time.Duration(*txnTimeoutMs) * time.Millisecond,
		leaveGroup: *leaveGroup, standbys: *standbys, recoveryLag: int64(*recoveryLag), probing: time.Duration(*probingMs) * time.Millisecond,
	}); err != nil {
		log.Error("sqlstreams stopped", "err", err)
		return 1
	}
	log.Info("sqlstreams stopped cleanly")
	return 0
}

type serverConfig struct {
	dataDir, pgAddr, httpAddr, kafkaAddr, serviceID, instanceID string
	kafka                                                       kafka.Profile // no brokers: the embedded broker
	kafkaAdvertise                                              string
	kafkaSecurity                                               embeddedKafkaSettings
	advertisedHTTP                                              string
	blockCache, writeBuffers, valueCache                        int64
	rest                                                        restSettings
	internal                                                    *internalFlags
	pgOpts                                                      []pgwire.Option
	headless                                                    []string
	threads                                                     int
	standbys                                                    int
	leaveGroup                                                  bool
	recoveryLag                                                 int64
	probing                                                     time.Duration
	registry                                                    registrySettings
	settings                                                    []engine.Setting
	properties                                                  map[string]string // --config's defaults of session properties
	omitLogRows                                                 bool
	kafkaFsync                                                  broker.Sync
	drainTimeout                                                time.Duration
	processingLog                                               engine.ProcessingLogConfig
	fetchMaxBytes                                               int32
	maxTxnRecords                                               int
	atLeastOnce                                                 bool
	memoryStores                                                bool
	commitInterval                                              time.Duration
	txnTimeout                                                  time.Duration
}

func serve(ctx context.Context, log *slog.Logger, cfg serverConfig) error {
	if err := os.MkdirAll(cfg.dataDir, 0o755); err != nil {
		return err
	}
	// The REST settings are checked before anything starts: a refused
	// address or a bad users file should not wait for the broker.
	reg := metrics.New()
	info := rest.Info{Version: "sqlstreams-dev", ServiceID: cfg.serviceID}
	embedded := len(cfg.kafka.Brokers) == 0
	if embedded {
		info.KafkaClusterID = broker.ClusterID
	}
	restOpts, restTLS, err := cfg.rest.build(cfg.httpAddr, log, reg, info)
	if err != nil {
		return err
	}
	var fwd forwardClient
	if cfg.internal != nil {
		if fwd, err = cfg.internal.build(cfg.rest.tlsCert); err != nil {
			return err
		}
	}
	endpoint := advertisedEndpoint(cfg.advertisedHTTP, cfg.httpAddr)
	if restTLS != nil && !strings.Contains(endpoint, "://") {
		// Peers forward pull queries here over HTTPS.
		endpoint = "https://" + endpoint
	}
	kp := cfg.kafka
	if embedded {
		if cfg.kafkaSecurity.insecureRemote {
			log.Warn("the embedded broker listens beyond loopback without both TLS and SASL users (--embedded-kafka-allow-remote)", "addr", cfg.kafkaAddr)
		}
		b, err := broker.Start(ctx, cfg.kafkaSecurity.config(broker.Config{Addr: cfg.kafkaAddr, Advertise: cfg.kafkaAdvertise,
			DataDir: filepath.Join(cfg.dataDir, "kafka"), Sync: cfg.kafkaFsync, Logger: log}))
		if err != nil {
			return fmt.Errorf("starting the embedded broker: %w", err)
		}
		defer b.Close()
		// The server's own clients reach the broker on this machine,
		// with its internal credentials when it has TLS or SASL on.
		kp = b.Profile(kp)
		log.Info("embedded Kafka broker listening", "listen", b.ListenAddr().String(), "advertised", b.Addr(), "security_protocol", securityProtocol(cfg.kafkaSecurity),
			"data_dir", filepath.Join(cfg.dataDir, "kafka"))
	} else {
		log.Info("using Kafka", "profile", kp.String())
	}
	schemas, stopRegistry, err := startSchemaRegistry(ctx, log, cfg.registry, kp, embedded)
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
		Kafka: kp, ServiceID: cfg.serviceID, InstanceID: instance, Logger: log,
		StateDir: filepath.Join(cfg.dataDir, "state"), RocksResources: rocks, Metrics: reg, Headless: cfg.headless,
		Threads: cfg.threads, Schemas: schemas, Settings: cfg.settings, Properties: cfg.properties, ProcessingLogOmitRows: cfg.omitLogRows, ProcessingLog: cfg.processingLog, FetchMaxBytes: cfg.fetchMaxBytes, MaxTxnRecords: cfg.maxTxnRecords,
		AtLeastOnce: cfg.atLeastOnce, MemoryStores: cfg.memoryStores, CommitInterval: cfg.commitInterval, CheckKafka: !embedded, TransactionTimeout: cfg.txnTimeout,
		LeaveGroupOnClose: cfg.leaveGroup, StandbyReplicas: cfg.standbys, AcceptableRecoveryLag: recoveryLag(cfg.recoveryLag), ProbingInterval: cfg.probing,
		Endpoint: endpoint, PGEndpoint: advertisedEndpoint("", cfg.pgAddr),
		ForwardClient: fwd.client, ForwardUser: fwd.user, ForwardPassword: fwd.password,
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
	// The web console, on the REST address behind the same
	// authentication and TLS; its charts sample the metrics every 5 s.
	hist := metrics.NewHistory(reg, 0, 0)
	histCtx, stopHist := context.WithCancel(ctx)
	defer stopHist()
	go hist.Run(histCtx)
	web := console.New(eng, hist)
	restOpts = append(restOpts, rest.WithHandler(console.Index, false, web), rest.WithHandler(console.Prefix, true, web))
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
		// The drain: no new connections or statements; push queries and
		// sessions end with a message saying why; then (the deferred
		// closes) every query commits what it processed and leaves its
		// group, and the broker stops.
		exitOnSecondSignal(log, cfg.drainTimeout)
		log.Info("shutting down: draining", "bound", cfg.drainTimeout)
		var wg sync.WaitGroup
		wg.Go(func() {
			restSrv.Close()
			sctx, cancel := context.WithTimeout(context.Background(), sessionDrain)
			defer cancel()
			if err := hs.Shutdown(sctx); err != nil {
				hs.Close()
			}
		})
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(context.Background(), sessionDrain)
			defer cancel()
			pg.Shutdown(sctx)
		})
		wg.Wait()
		log.Info("sessions ended; stopping the queries")
		return nil
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
			return nil
		}
		return err
	}
}

// sessionDrain bounds how long pgwire and REST sessions have to end once
// the server drains.
const sessionDrain = 5 * time.Second

// exitOnSecondSignal makes the process exit at once, with status 1, on a
// second SIGTERM or SIGINT or when the drain has taken longer than bound.
// Nothing committed is lost by that: stream threads commit in Kafka
// transactions, so an exit mid-drain only aborts open ones, whose records
// are processed again after the restart.
func exitOnSecondSignal(log *slog.Logger, bound time.Duration) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sig:
			log.Warn("second signal: exiting now, without finishing the drain", "signal", s.String())
		case <-time.After(bound):
			log.Error("the drain took longer than its bound: exiting now", "bound", bound)
		}
		os.Exit(1)
	}()
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

// recoveryLag turns --acceptable-recovery-lag into engine.Config's form,
// where 0 is the default and a negative value means 0 offsets.
func recoveryLag(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}
