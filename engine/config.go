package engine

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/metrics"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

// Config configures an Engine.
type Config struct {
	// Kafka is how the engine and its queries reach Kafka.
	Kafka kafka.Profile
	// Settings are the server's settings and where each came from, for
	// SHOW PROPERTIES.
	Settings []Setting
	// Properties are the server's defaults of the registry's session
	// and query properties, by registry name (SetProperty's keys), as a
	// ksql-server.properties gives them (ksql.streams.auto.offset.reset=
	// earliest): every session starts with them, SET overrides one and
	// UNSET goes back to it.
	Properties map[string]string
	// ProcessingLogOmitRows leaves the skipped records' keys and values
	// out of the processing log (ksqlDB's
	// ksql.logging.processing.rows.include=false); by default they are
	// in it, base64-encoded.
	ProcessingLogOmitRows bool
	// FetchMaxBytes bounds each stream thread's fetches (see
	// exec.Config.FetchMaxBytes; MemoryBudget sets it); 0 is the client's
	// default.
	FetchMaxBytes int32
	// MaxTxnRecords bounds the records in one transaction of a stream
	// thread (see exec.Config.MaxTxnRecords; MemoryBudget sets it); 0 is
	// no bound but the commit interval.
	MaxTxnRecords int
	// ProcessingLog names and sizes the processing log's topic and
	// stream (ksqlDB's ksql.logging.processing.topic.* and .stream.*).
	ProcessingLog ProcessingLogConfig
	// ServiceID names this sqlstreams cluster: it prefixes query
	// application IDs and names the command topic (default "sqlstreams").
	ServiceID string
	// InstanceID names this server within the service (default: the host
	// name). It is part of stream threads' transactional IDs, so it must
	// be stable across restarts.
	InstanceID string
	// AtLeastOnce runs persistent queries at-least-once unless they ask
	// for exactly-once (processing.guarantee); the default is
	// exactly-once.
	AtLeastOnce bool
	// CommitInterval is how often persistent queries commit (default 100 ms).
	CommitInterval time.Duration
	// TransactionTimeout is transaction.timeout.ms of persistent queries
	// under exactly-once (default 10 s, as Kafka Streams sets it; a
	// query's property overrides it): how long an instance that died
	// with a transaction open can hold back read_committed readers of
	// what it wrote, unless it comes back first (see
	// exec.Config.TransactionTimeout).
	TransactionTimeout time.Duration
	// Endpoint is this instance's REST address (host:port) as other
	// instances reach it: published in the query groups' member metadata
	// so that pull queries asked elsewhere are forwarded here for the
	// partitions this instance owns. Empty: none are.
	Endpoint string
	// PGEndpoint is this instance's Postgres wire address as clients
	// reach it, published beside Endpoint.
	PGEndpoint string
	// ForwardClient is the HTTP client pull queries are forwarded to
	// other instances with (its TLS configuration trusts their
	// certificates); nil: a plain client. An endpoint with a scheme
	// ("https://host:port") is reached with it, one without over HTTP.
	ForwardClient *http.Client
	// ForwardUser and ForwardPassword, when set, are the HTTP basic
	// credentials forwarded pull queries present (the other instances'
	// REST APIs check them like any request's).
	ForwardUser, ForwardPassword string
	// Threads is the number of stream threads of each persistent query
	// (default 1); a query's num.stream.threads property (SET before
	// its CREATE) overrides it.
	Threads int
	// MemoryStores keeps persistent queries' state stores in memory
	// (exec.Config.MemoryStores) unless a query's default.dsl.store
	// says otherwise.
	MemoryStores bool
	// SyncStoreCommits applies each transaction's state-store writes
	// before the next transaction starts rather than while it runs
	// (exec.Config.SyncStoreCommits); for comparisons.
	SyncStoreCommits bool
	// Logger receives the engine's logs (default slog.Default()).
	Logger *slog.Logger
	// StateDir is where persistent queries keep their state stores
	// (required for tables).
	StateDir string
	// RocksResources is the server's shared RocksDB block cache,
	// write-buffer and value-cache budgets (nil: private resources per
	// store).
	RocksResources *state.RocksResources
	// Metrics, when set, receives per-query commit latency, lag and
	// restore progress.
	Metrics *metrics.Registry
	// Headless, when non-nil, runs the server as ksqlDB's headless mode
	// does: these statements (a --queries-file) make the catalog at every
	// start, the command topic is not used, and clients cannot change the
	// catalog. Queries get the same IDs at every start, so they resume
	// from their committed offsets.
	Headless []string
	// LeaveGroupOnClose makes the queries leave their groups when the
	// engine closes (an instance removed for good): their tasks move at
	// once instead of after the session timeout (see
	// exec.Config.LeaveGroupOnClose).
	LeaveGroupOnClose bool
	// StandbyReplicas is num.standby.replicas of every persistent query
	// (default 0; a query's property overrides it): how many other
	// instances keep a hot copy of each stateful task's stores.
	StandbyReplicas int
	// AcceptableRecoveryLag is acceptable.recovery.lag (0: 10,000
	// changelog offsets; negative: 0).
	AcceptableRecoveryLag int64
	// ProbingInterval is probing.rebalance.interval.ms (0: 10 minutes).
	ProbingInterval time.Duration
	// Schemas is the schema registry the AVRO format uses (nil: AVRO
	// sources and sinks fail when they read or write a record).
	Schemas types.SchemaSource
	// CheckKafka checks the service's permissions on Kafka: at Open every
	// missing one is logged at once, and a CREATE … AS or INSERT INTO …
	// SELECT whose query lacks one is refused, naming each. For a
	// cluster with ACLs (the server sets it when Kafka is not the
	// embedded broker); off, refusals still come explained as they
	// happen.
	CheckKafka bool
	// TopicAdmin, when set, is how the engine describes, creates, aligns
	// and deletes topics (nil: kadm over Kafka).
	TopicAdmin TopicAdmin
	// CommandLog, when set, is the command log the engine replays,
	// follows and appends to (nil: the service's command topic).
	CommandLog CommandLog
	// Offline opens the engine without contacting Kafka (no check at
	// Open) and builds every persistent query without running it
	// (exec.New: state CREATED, no stream thread), so that statements
	// are validated, planned, recorded and registered as they are
	// live. Give TopicAdmin and CommandLog with it (package
	// engine/enginetest has memory ones): it is how the engine's
	// statement tests run without a broker. Pull and push queries,
	// INSERT … VALUES and PRINT still need Kafka.
	Offline bool
}

const defaultCommitInterval = 100 * time.Millisecond

// Setting is one server setting (a flag of sqlstreams server), its
// effective value and where it came from: "default", "flag --name",
// "environment SQLSTREAMS_…" or "<file> line N (key)".
type Setting struct {
	Name, Value, Source string
}
