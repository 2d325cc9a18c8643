package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/metrics"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/plan"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
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
}

const defaultCommitInterval = 100 * time.Millisecond

// Engine executes statements against one sqlstreams service.
type Engine struct {
	cfg  Config
	log  *slog.Logger
	cat  *catalog.Catalog
	cmds *catalog.CommandLog
	cl   *kgo.Client // INSERT VALUES producer and admin
	adm  *kadm.Client

	// plogPartitions is the processing log topic's partition count;
	// plogMissing says it does not exist (and was not to be created).
	plogTopic      string
	plogPartitions int32
	plogMissing    bool
	// noExactlyOnce, when set, says why the brokers cannot run
	// exactly-once queries (too old; the server runs at-least-once).
	noExactlyOnce error

	mu      sync.Mutex // serializes catalog changes
	running map[string]*exec.Query
	flags   map[string]runFlags // by query ID: what its plan says beside its topology
	nextID  int                 // headless mode's query numbers

	// The command topic's follower (see follow.go). applied is the
	// offset up to which commands have been applied (control records
	// included); appliedCh is closed and replaced each time it grows.
	// waiting holds the results of this instance's own commands that
	// another instance's command overtook (see errOvertaken).
	applied    int64
	appliedCh  chan struct{}
	waiting    map[int64]*applyResult
	stopFollow context.CancelFunc
	followDone chan struct{}

	route router // pull queries' routing to partition owners
	// crcTopics caches the topics declared PARTITIONER='crc32' per
	// catalog snapshot (partitioner.go).
	crcTopics atomic.Pointer[crcTopics]
}

// Open connects to Kafka, replays the command topic and starts every
// persistent query it recorded.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.ServiceID == "" {
		cfg.ServiceID = "sqlstreams"
	}
	if cfg.InstanceID == "" {
		h, _ := os.Hostname()
		cfg.InstanceID = h
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	e := &Engine{cfg: cfg, log: cfg.Logger}
	if err := e.connect(ctx); err != nil {
		return nil, err
	}
	// Admin answers come from the client's metadata cache; keep it fresh so
	// a topic created a moment ago is seen.
	cl, err := cfg.Kafka.NewClient(kgo.ProducerLinger(0), kgo.MetadataMinAge(10*time.Millisecond),
		kgo.RecordPartitioner(sourcePartitioner{e: e, def: kgo.StickyKeyPartitioner(nil)}))
	if err != nil {
		return nil, err
	}
	var cmds *catalog.CommandLog
	if cfg.Headless == nil {
		if cmds, err = catalog.OpenCommandLog(ctx, cfg.Kafka, cfg.ServiceID, cfg.InstanceID); err != nil {
			cl.Close()
			return nil, err
		}
	}
	*e = Engine{
		cfg: cfg, log: cfg.Logger, cat: catalog.New(), cmds: cmds, noExactlyOnce: e.noExactlyOnce,
		cl: cl, adm: kadm.NewClient(cl), running: map[string]*exec.Query{}, flags: map[string]runFlags{}, nextID: 1,
		appliedCh: make(chan struct{}), waiting: map[int64]*applyResult{},
		route: router{parts: map[string]int32{}, owners: map[string]ownersEntry{}, stores: map[storeKey]pullStore{}, client: cfg.ForwardClient},
	}
	if e.route.client == nil {
		e.route.client = &http.Client{}
	}
	if err := e.openProcessingLog(ctx); err != nil {
		e.Close()
		plog := kafka.Resource{Type: kafka.Topic, Name: e.processingLogTopic()}
		return nil, fmt.Errorf("creating the processing log topic: %w", cfg.Kafka.Explain(err,
			kafka.Permission{Operation: kafka.Create, Resource: plog}))
	}
	if cfg.Headless != nil {
		// SET and UNSET in the file apply to the statements after them,
		// as in ksqlDB's headless mode.
		sess := NewSession()
		for _, text := range cfg.Headless {
			st, err := sql.Parse(text)
			switch st.(type) {
			case nil:
			case *sql.SetProperty, *sql.UnsetProperty:
				_, err = e.ExecuteStatement(ctx, sess, st, nil)
			default:
				// Never recorded, so bound as now at every start.
				_, err = e.apply(ctx, st, catalog.Command{Statement: text, Props: copyProps(sess.Props)}, -1, false)
			}
			if err != nil {
				e.Close()
				return nil, fmt.Errorf("queries file: %q: %w", text, err)
			}
		}
		e.declareProcessingLog()
		e.log.Info("headless: catalog made from the queries file", "statements", len(cfg.Headless),
			"streams", len(e.cat.Sources()), "queries", len(e.running))
		return e, nil
	}
	n, err := e.replay(ctx)
	if err != nil {
		e.Close()
		return nil, fmt.Errorf("replaying %s: %w", cmds.Topic(), err)
	}
	e.startFollowing()
	e.declareProcessingLog()
	e.log.Info("catalog restored from the command topic", "commands", n,
		"streams", len(e.cat.Sources()), "queries", len(e.running))
	return e, nil
}

// Close stops every persistent query (committing their work) and closes
// the engine's clients.
func (e *Engine) Close() {
	if e.stopFollow != nil {
		e.stopFollow()
		<-e.followDone
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var wg sync.WaitGroup
	for _, q := range e.running {
		wg.Add(1)
		go func() { defer wg.Done(); q.Stop() }()
	}
	wg.Wait()
	e.running = map[string]*exec.Query{}
	if e.cmds != nil {
		e.cmds.Close()
	}
	e.cl.Close()
}

// Catalog returns the engine's catalog (read-only use).
func (e *Engine) Catalog() *catalog.Catalog { return e.cat }

// QueryStatus returns the runtime status of a persistent query.
func (e *Engine) QueryStatus(id string) (QueryStatus, bool) {
	e.mu.Lock()
	q, ok := e.running[id]
	e.mu.Unlock()
	if !ok {
		return QueryStatus{}, false
	}
	return statusOf(q.Status()), true
}

var _ Executor = (*Engine)(nil)

// Execute parses and runs one statement.
func (e *Engine) Execute(ctx context.Context, s *Session, text string, w ResultWriter) (Result, error) {
	st, err := sql.Parse(text)
	if err != nil {
		return Result{}, err
	}
	return e.ExecuteStatement(ctx, s, st, w)
}

// ExecuteStatement runs one parsed statement.
func (e *Engine) ExecuteStatement(ctx context.Context, s *Session, st sql.Statement, w ResultWriter) (Result, error) {
	text := st.Text()
	if al, ok := st.(*sql.AlterSource); ok {
		// Runs, and is recorded, as the CREATE OR REPLACE it makes.
		var err error
		if text, st, err = e.alter(al); err != nil {
			return Result{}, err
		}
	}
	switch st := st.(type) {
	case *sql.CreateSource, *sql.CreateAs, *sql.Drop, *sql.Terminate, *sql.Pause, *sql.InsertSelect, *sql.CreateType, *sql.DropType:
		if e.cfg.Headless != nil {
			return Result{}, sql.Errorf(sql.CodeFeatureNotSupport, "this server runs headless (--queries-file): its streams, tables and queries come from that file and cannot be changed")
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		// Statements are validated against a catalog that has every
		// command written so far, whichever instance wrote it.
		if err := e.catchUp(ctx); err != nil {
			return Result{}, err
		}
		cmd := catalog.Command{Statement: text, Props: copyProps(s.Props)}
		if cmd.Props == nil {
			cmd.Props = map[string]string{}
		}
		defaultFormats(st, cmd.Props)
		if cs, ok := st.(*sql.CreateSource); ok && cs.OrReplace && cs.Source {
			// As ksqlDB, whether or not it exists. (Only new statements:
			// a recorded one replays as it ran.)
			kind := strings.ToLower(cs.Kind.String())
			return Result{}, sql.NameError(cs, sql.CodeFeatureNotSupport, "Cannot add %s '%s': CREATE OR REPLACE is not supported on source %ss.", kind, cs.Name, kind)
		}
		if cs, ok := st.(*sql.CreateSource); ok && !e.exists(cs.Name, cs.IfNotExists) {
			if err := sql.ResolveTypes(cs, e.cat.Type); err != nil {
				return Result{}, err
			}
			// Columns inferred from the registry are recorded by
			// schema ID: a replay must get the same ones.
			if err := sql.CheckSchemaIDs(cs); err != nil {
				return Result{}, err
			}
			inf, err := sql.InferColumns(cs, e.cfg.Schemas, sql.Inferred{})
			if err != nil {
				return Result{}, err
			}
			if err := sql.CheckWindowedKey(cs); err != nil {
				return Result{}, err
			}
			cmd.KeySchemaID, cmd.ValueSchemaID = inf.KeySchemaID, inf.ValueSchemaID
		}
		res, err := e.apply(ctx, st, cmd, -1, true)
		var ot *errOvertaken
		if errors.As(err, &ot) {
			// Another instance's command came first: ours is applied
			// after it, in the topic's order, by the follower.
			return e.awaitOwn(ctx, ot.offset)
		}
		return res, err
	case *sql.ResetQuery:
		return e.resetQuery(ctx, st)
	case *sql.InsertValues:
		return e.insertValues(ctx, st)
	case *sql.Select:
		return e.query(ctx, s, st, w)
	case *sql.SetProperty:
		s.Props[st.Name] = st.Value
		return Result{Tag: "SET"}, nil
	case *sql.UnsetProperty:
		delete(s.Props, st.Name)
		return Result{Tag: "UNSET"}, nil
	case *sql.Show:
		return e.show(ctx, s, st, w)
	case *sql.Describe:
		return e.describe(st, w)
	case *sql.Explain:
		return e.explain(st, w)
	case *sql.Print:
		return e.print(ctx, st, w)
	}
	return Result{}, sql.Errorf(sql.CodeFeatureNotSupport, "statement is not supported yet")
}

// defaultFormats gives a CREATE STREAM|TABLE without formats the ones
// ksql.persistence.default.format.key and .value name (SET before it, or
// recorded with its command), as ksqlDB does.
func defaultFormats(st sql.Statement, props map[string]string) {
	if ca, ok := st.(*sql.CreateAs); ok {
		ca.Select.DefaultKeyFormat = props["ksql.persistence.default.format.key"]
		return
	}
	cs, ok := st.(*sql.CreateSource)
	if !ok || cs.Props == nil {
		return
	}
	if _, ok := cs.Props["FORMAT"]; ok {
		return
	}
	for prop, name := range map[string]string{
		"ksql.persistence.default.format.value": "VALUE_FORMAT",
		"ksql.persistence.default.format.key":   "KEY_FORMAT",
	} {
		if _, given := cs.Props[name]; !given && props[prop] != "" {
			cs.Props[name] = sql.Property{Value: props[prop], Pos: len(cs.Text())}
		}
	}
}

func copyProps(p map[string]string) map[string]string {
	if len(p) == 0 {
		return nil
	}
	out := make(map[string]string, len(p))
	for k, v := range p {
		out[k] = v
	}
	return out
}

// recorder records a validated command before the catalog changes and
// returns its offset in the command topic (-1 in headless mode).
type recorder func(catalog.Command) (int64, error)

// apply validates and carries out a catalog-changing statement. Live
// statements are appended to the command topic after validation and
// before the catalog changes; replayed ones (and those of other
// instances) are not appended again, and off is their offset (-1 in
// headless mode). The caller holds e.mu.
func (e *Engine) apply(ctx context.Context, st sql.Statement, cmd catalog.Command, off int64, live bool) (Result, error) {
	recorded := int64(-1)
	record := func(c catalog.Command) (int64, error) {
		if !live {
			recorded = off
			return off, nil
		}
		o, err := e.append(ctx, c)
		if err == nil {
			recorded = o
		}
		return o, err
	}
	defaultFormats(st, cmd.Props)
	// A command recorded before plans is bound as it was then, once:
	// its plan is recorded by a migration command (migrate.go).
	migrate := !live && e.cfg.Headless == nil && len(cmd.Plan) == 0
	l := e.legacyOf(cmd, migrate)
	limits, err := collectLimits(cmd.Props)
	if err != nil {
		return Result{}, err
	}
	l.bindWith(st)
	switch st := st.(type) {
	case *sql.CreateAs:
		st.Select.CollectLimits = limits
	case *sql.InsertSelect:
		st.Select.CollectLimits = limits
	}
	b := binding{legacy: l, live: live, migrate: migrate}
	var res Result
	switch st := st.(type) {
	case *sql.CreateSource:
		res, err = e.createSource(ctx, st, cmd, record, b)
	case *sql.CreateAs:
		res, err = e.createAs(ctx, st, cmd, record, b)
	case *sql.Drop:
		res, err = e.drop(ctx, st, cmd, live, record)
	case *sql.Terminate:
		res, err = e.terminate(st, cmd, record)
	case *sql.Pause:
		res, err = e.pause(st, cmd, record)
	case *sql.InsertSelect:
		res, err = e.insertSelect(ctx, st, cmd, record, b)
	case *sql.CreateType:
		res, err = e.createType(st, cmd, record)
	case *sql.DropType:
		res, err = e.dropType(st, cmd, record)
	default:
		return Result{}, fmt.Errorf("statement %T does not change the catalog", st)
	}
	if err != nil {
		return Result{}, err
	}
	if res.Change == nil {
		res.Change = &Change{}
	}
	res.Change.Offset = recorded
	return res, nil
}

// createType registers a custom type (CREATE TYPE): recorded in the
// command topic, so that a replay has it before the statements that use
// it. As in ksqlDB, registering a name again is an error unless IF NOT
// EXISTS is given; sources made with a type keep the type it was then.
func (e *Engine) createType(st *sql.CreateType, cmd catalog.Command, record recorder) (Result, error) {
	tag := Result{Tag: "CREATE TYPE"}
	if _, ok := e.cat.Type(st.Name); ok {
		if st.IfNotExists {
			return tag, nil
		}
		return Result{}, sql.NameError(st, sql.CodeDuplicateObject, "Cannot register custom type '%s' since it is already registered", st.Name)
	}
	if err := sql.ResolveTypes(st, e.cat.Type); err != nil {
		return Result{}, err
	}
	if _, err := record(cmd); err != nil {
		return Result{}, err
	}
	e.cat.PutType(st.Name, st.Type)
	return tag, nil
}

// dropType removes a custom type; the sources made with it keep theirs.
func (e *Engine) dropType(st *sql.DropType, cmd catalog.Command, record recorder) (Result, error) {
	tag := Result{Tag: "DROP TYPE"}
	if _, ok := e.cat.Type(st.Name); !ok {
		if st.IfExists {
			return tag, nil
		}
		return Result{}, sql.NameError(st, sql.CodeUndefinedObject, "Type %s does not exist", st.Name)
	}
	if _, err := record(cmd); err != nil {
		return Result{}, err
	}
	e.cat.DropType(st.Name)
	return tag, nil
}

// binding says how a catalog command is carried out: live (run now,
// recorded after validation), migrate (a command recorded before plans,
// bound with its behaviour properties) or neither (a replayed command
// with a plan, or a headless server's).
type binding struct {
	legacy
	live, migrate bool
}

func (e *Engine) createSource(ctx context.Context, st *sql.CreateSource, cmd catalog.Command, record recorder, b binding) (Result, error) {
	tag := Result{Tag: "CREATE " + st.Kind.String()}
	if old, ok := e.cat.Source(st.Name); ok {
		switch {
		case st.IfNotExists:
			tag.Change = &Change{Source: old.Name, Kind: old.Kind, Topic: old.Topic, Existed: true}
			return tag, nil
		case !st.OrReplace:
			return Result{}, sql.NameError(st, sql.CodeDuplicateObject, "%s %s already exists", old.Kind, st.Name)
		case old.Kind != st.Kind:
			return Result{}, sql.NameError(st, sql.CodeDuplicateObject, "%s is a %s, not a %s", st.Name, old.Kind, st.Kind)
		case old.IsSource || st.Source:
			kind := strings.ToLower(st.Kind.String())
			return Result{}, sql.NameError(st, sql.CodeFeatureNotSupport, "Cannot add %s '%s': CREATE OR REPLACE is not supported on source %ss.", kind, st.Name, kind)
		}
	}
	if len(cmd.Plan) > 0 {
		return e.createSourceFromPlan(ctx, st, cmd, record)
	}
	if err := sql.ResolveTypes(st, e.cat.Type); err != nil {
		return Result{}, err
	}
	if _, err := sql.InferColumns(st, e.cfg.Schemas, sql.Inferred{KeySchemaID: cmd.KeySchemaID, ValueSchemaID: cmd.ValueSchemaID}); err != nil {
		return Result{}, err
	}
	src, err := sql.BindCreateSource(st)
	if err != nil {
		return Result{}, err
	}
	if err := e.ksqlConfigs(src, st.Props, false, cmd.Props, b.legacy); err != nil {
		return Result{}, err
	}
	e.useSchemas(src)
	src.KeyOptions.ReaderSchemaID, src.ValueOptions.ReaderSchemaID = cmd.KeySchemaID, cmd.ValueSchemaID
	if old, ok := e.cat.Source(st.Name); ok {
		// OR REPLACE of a declared source: same topic, columns only added.
		refuse := func(format string, args ...any) (Result, error) {
			return Result{}, sql.NameError(st, sql.CodeFeatureNotSupport, "cannot replace %s: "+format, append([]any{st.Name}, args...)...)
		}
		if old.WriterQuery != "" {
			return refuse("query %s writes it; replace it with CREATE OR REPLACE %s … AS SELECT", old.WriterQuery, old.Kind)
		}
		if old.Topic != src.Topic || old.KeyFormat != src.KeyFormat || old.ValueFormat != src.ValueFormat {
			return refuse("its topic and formats cannot change")
		}
		if old.Partitioner != src.Partitioner {
			// Its queries were planned (repartitions, routing) for the
			// old one.
			return refuse("its PARTITIONER cannot change (%s to %s): DROP it, after the queries that read it, and create it again", old.Partitioner, src.Partitioner)
		}
		if err := compatibleSchema(old.Schema, src.Schema); err != nil {
			return refuse("%v", err)
		}
	}
	parts, err := e.ensureTopic(ctx, src.Topic, src.Partitions)
	if err != nil {
		return Result{}, err
	}
	src.Partitions = parts
	p := &plan.Plan{Sink: src}
	e.planFlags(p, b.legacy)
	prefix := ""
	if src.Kind == catalog.Table {
		if old, ok := e.cat.Source(st.Name); ok && old.MaterializedBy != "" {
			src.MaterializedBy = old.MaterializedBy // OR REPLACE keeps it
		} else {
			// The query that keeps the table's latest rows in a state
			// store, CST_<NAME>_<n> as in ksqlDB. The table's topic is
			// the store's changelog.
			prefix = "CST_" + src.Name
			p.Query = physical.BuildTable(physical.AppID(e.cfg.ServiceID, queryBuildID(cmd)), planner.NewScan(src))
			timestampPolicy(p.Query, b.keepTimestamps, timestampsThrow(cmd.Props))
			p.Sources = []string{src.Name}
		}
	}
	_, existed := e.cat.Source(st.Name)
	dp, id, err := e.finishPlan(ctx, p, &cmd, record, prefix, b.migrate)
	if err != nil {
		return Result{}, err
	}
	if err := e.registerSource(dp, id, cmd); err != nil {
		return Result{}, err
	}
	return e.created(tag, st.Name, dp.Sink.MaterializedBy, existed), nil
}

// createSourceFromPlan carries out a CREATE STREAM|TABLE recorded with
// its plan: the source as it was bound, its topic made sure of.
func (e *Engine) createSourceFromPlan(ctx context.Context, st *sql.CreateSource, cmd catalog.Command, record recorder) (Result, error) {
	tag := Result{Tag: "CREATE " + st.Kind.String()}
	off, err := record(cmd) // a replay's: its offset
	if err != nil {
		return Result{}, err
	}
	p, err := plan.Decode(cmd.Plan, "", nil)
	if err != nil {
		return Result{}, err
	}
	id := ""
	if p.Query != nil {
		id = e.queryID("CST_"+st.Name, cmd, off)
		if p, err = plan.Decode(cmd.Plan, id, e.cfg.Schemas); err != nil {
			return Result{}, err
		}
	}
	if p.Sink == nil {
		return Result{}, fmt.Errorf("the plan of %s registers no source", st.Name)
	}
	if err := e.ensureRecordedTopic(ctx, p.Sink); err != nil {
		return Result{}, err
	}
	_, existed := e.cat.Source(st.Name)
	if err := e.registerSource(p, id, cmd); err != nil {
		return Result{}, err
	}
	return e.created(tag, st.Name, p.Sink.MaterializedBy, existed), nil
}

// ensureRecordedTopic makes sure a recorded source's topic exists: with
// the partitions recorded when it is missing.
func (e *Engine) ensureRecordedTopic(ctx context.Context, src *catalog.Source) error {
	if _, err := e.ensureTopic(ctx, src.Topic, 0); err == nil {
		return nil
	}
	_, err := e.ensureTopic(ctx, src.Topic, src.Partitions)
	return err
}

// registerSource registers a CREATE STREAM|TABLE's source from its plan
// and starts its materialization (query id), if it has one.
func (e *Engine) registerSource(p *plan.Plan, id string, cmd catalog.Command) error {
	src := p.Sink
	e.useSchemas(src)
	if p.Query == nil {
		return e.cat.AddSource(src, true)
	}
	src.MaterializedBy = id
	if err := e.cat.AddSource(src, true); err != nil {
		return err
	}
	e.cat.AddQuery(&catalog.Query{ID: id, SQL: cmd.Statement, Sources: p.Sources, Props: cmd.Props})
	return e.start(id, p.Query, "earliest", cmd.Props, flagsOf(p))
}

// exists reports whether a CREATE IF NOT EXISTS of name will do nothing.
func (e *Engine) exists(name string, ifNotExists bool) bool {
	_, ok := e.cat.Source(name)
	return ok && ifNotExists
}

// checkWriterSchemas checks a new sink's KEY_SCHEMA_ID and VALUE_SCHEMA_ID
// against its columns (types.CheckWriterSchema), as ksqlDB does when the
// statement runs; a replay does not check again.
func (e *Engine) checkWriterSchemas(t *catalog.Source) error {
	for _, side := range []struct {
		format string
		opts   types.FormatOptions
		idx    []int
		key    bool
	}{{t.KeyFormat, t.KeyOptions, t.Schema.KeyIndexes(), true}, {t.ValueFormat, t.ValueOptions, t.Schema.ValueIndexes(), false}} {
		cols := make([]types.Column, len(side.idx))
		for i, c := range side.idx {
			cols[i] = t.Schema.Columns[c]
		}
		if err := types.CheckWriterSchema(e.cfg.Schemas, side.format, side.opts.SchemaID, side.opts.FullName, cols, side.key); err != nil {
			return err
		}
	}
	return nil
}

// useSchemas gives src's formats the engine's schema registry.
// A source already in the catalog (INSERT INTO's target) has it and is
// not written to.
func (e *Engine) useSchemas(src *catalog.Source) {
	if e.cfg.Schemas == nil {
		return
	}
	if src.KeyOptions.Schemas == nil {
		src.KeyOptions.Schemas = e.cfg.Schemas
	}
	if src.ValueOptions.Schemas == nil {
		src.ValueOptions.Schemas = e.cfg.Schemas
	}
}

// threadsProps name the query property that sets its stream threads,
// as ksqlDB users write it.
var threadsProps = []string{"num.stream.threads", "ksql.streams.num.stream.threads"}

// queryThreads returns the stream threads a query with props runs.
func (e *Engine) queryThreads(props map[string]string) (int, error) {
	n := max(e.cfg.Threads, 1)
	for _, name := range threadsProps {
		v, ok := props[name]
		if !ok {
			continue
		}
		t, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || t < 1 || t > 64 {
			return 0, sql.Errorf(sql.CodeInvalidParameter, "%s must be a whole number from 1 to 64, not %q", name, v)
		}
		n = t
	}
	return n, nil
}

// Setting is one server setting (a flag of sqlstreams server), its
// effective value and where it came from: "default", "flag --name",
// "environment SQLSTREAMS_…" or "<file> line N (key)".
type Setting struct {
	Name, Value, Source string
}

// IdleAdvanceProp is the query property (SET before CREATE … AS) that
// lets a windowed aggregation's task whose inputs have been idle this
// many milliseconds advance its stream time by the wall-clock time that
// passes, so that windows close (and EMIT FINAL emits them) without new
// input. Off (0) by default, as in ksqlDB: see README's "Windows".
const IdleAdvanceProp = "sqlstreams.window.idle.advance.ms"

// queryIdleAdvance returns the idle advance a query with props asks for.
func queryIdleAdvance(props map[string]string) (time.Duration, error) {
	v, ok := props[IdleAdvanceProp]
	if !ok {
		return 0, nil
	}
	ms, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || ms < 0 || ms > 7*24*3600*1000 {
		return 0, sql.Errorf(sql.CodeInvalidParameter, "%s must be a whole number of milliseconds (0 turns it off), not %q", IdleAdvanceProp, v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// start runs a persistent query's topology.
func (e *Engine) start(id string, topo *physical.Topology, reset string, props map[string]string, fl runFlags) error {
	var mq *metrics.Query
	if e.cfg.Metrics != nil {
		mq = e.cfg.Metrics.Query(id)
	}
	threads, err := e.queryThreads(props)
	if err != nil {
		return err
	}
	idle, err := queryIdleAdvance(props)
	if err != nil {
		return err
	}
	alos, err := e.queryAtLeastOnce(props)
	if err != nil {
		return err
	}
	interval, err := e.queryCommitInterval(props)
	if err != nil {
		return err
	}
	txnTimeout, err := e.queryTransactionTimeout(props)
	if err != nil {
		return err
	}
	cq, _ := e.cat.Query(id)
	cfg := exec.Config{
		Paused:            cq != nil && cq.Paused,
		PropagateHeaders:  fl.headers,
		KsqlDelimited:     fl.delimited,
		WindowIdleAdvance: idle,
		Metrics:           mq,
		Kafka:             e.cfg.Kafka,
		InstanceID:        e.cfg.InstanceID,
		Endpoint:          e.cfg.Endpoint,
		PGEndpoint:        e.cfg.PGEndpoint,
		Threads:           threads,
		CommitInterval:    interval,
		AtLeastOnce:       alos,
		OffsetReset:       reset,
		Logger:            e.log,
		StateDir:          e.cfg.StateDir,
		RocksResources:    e.cfg.RocksResources,
		FetchMaxBytes:     e.cfg.FetchMaxBytes,
		MaxTxnRecords:     e.cfg.MaxTxnRecords,
		BadRecord:         e.logBadRecord,
	}
	cfg.LeaveGroupOnClose = e.cfg.LeaveGroupOnClose
	cfg.TransactionTimeout = txnTimeout
	if err := e.queryStandby(props, &cfg); err != nil {
		return err
	}
	q, err := exec.Start(id, topo, cfg)
	if err != nil {
		return err
	}
	e.running[id] = q
	e.flags[id] = fl
	e.log.Info("persistent query started", "query", id, "app_id", topo.AppID)
	return nil
}

// ensureTopic creates topic with partitions when it is missing and
// partitions > 0, and returns the topic's partition count. A missing topic
// without partitions is an error, as in ksqlDB.
func (e *Engine) ensureTopic(ctx context.Context, topic string, partitions int32) (int32, error) {
	return e.ensureTopicConfig(ctx, topic, partitions, -1, nil)
}

// ensureInternalTopic is ensureTopic for a topic the service keeps for
// itself (a changelog, a repartition topic): created with the internal
// topics' replication settings (ksql.internal.topic.replicas and
// .min.insync.replicas) and these configs.
func (e *Engine) ensureInternalTopic(ctx context.Context, topic string, partitions int32, configs map[string]*string) (int32, error) {
	t := e.cfg.Kafka.Topics
	return e.ensureTopicConfig(ctx, topic, partitions, t.ReplicationFactor(), t.With(configs))
}

// ensureTopicConfig is ensureTopic with the replication factor (-1: the
// broker's default) and topic configs of a new topic.
func (e *Engine) ensureTopicConfig(ctx context.Context, topic string, partitions int32, repl int16, configs map[string]*string) (int32, error) {
	details, err := e.adm.ListTopics(ctx, topic)
	if d, ok := details[topic]; err == nil && (!ok || d.Err != nil) {
		// kadm answers from metadata cached for MetadataMinAge: a topic
		// created (here, or by another instance) a moment ago may be
		// missing from it. Ask the broker.
		e.cl.PurgeTopicsFromClient(topic)
		details, err = e.adm.ListTopics(ctx, topic)
	}
	if err != nil {
		return 0, fmt.Errorf("looking up topic %s: %w", topic, e.cfg.Kafka.Explain(err,
			kafka.Permission{Operation: kafka.Describe, Resource: kafka.Resource{Type: kafka.Topic, Name: topic}}))
	}
	if d, ok := details[topic]; ok && kafka.Denied(d.Err) {
		// Not allowed to see it: whether it exists is unknown.
		return 0, fmt.Errorf("looking up topic %s: %w", topic, e.cfg.Kafka.Explain(d.Err,
			kafka.Permission{Operation: kafka.Describe, Resource: kafka.Resource{Type: kafka.Topic, Name: topic}}))
	}
	if d, ok := details[topic]; ok && d.Err == nil {
		n := int32(len(d.Partitions))
		if partitions > 0 && n != partitions {
			return 0, sql.Errorf(sql.CodeInvalidParameter, "topic %s exists with %d partitions, not %d", topic, n, partitions)
		}
		return n, nil
	}
	if partitions <= 0 {
		return 0, sql.Errorf(sql.CodeUndefinedObject, "topic %s does not exist; give PARTITIONS in WITH (…) to create it", topic)
	}
	resp, err := e.adm.CreateTopic(ctx, partitions, repl, configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		return 0, fmt.Errorf("creating topic %s: %w", topic, e.cfg.Kafka.Explain(err,
			kafka.Permission{Operation: kafka.Create, Resource: kafka.Resource{Type: kafka.Topic, Name: topic}}))
	}
	return partitions, nil
}

// alignTopicConfig sets configs on an existing topic (incrementally:
// other settings stay): a window changelog created before window
// changelogs were compact,delete, or with another additional
// retention, gets its retention at the query's start. A cluster that
// refuses (no ALTER_CONFIGS permission) leaves the topic as it was,
// with a warning: the query runs, its changelog keeps growing.
func (e *Engine) alignTopicConfig(ctx context.Context, topic string, configs map[string]*string) {
	var alter []kadm.AlterConfig
	for k, v := range configs {
		alter = append(alter, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: v})
	}
	resps, err := e.adm.AlterTopicConfigs(ctx, alter, topic)
	if err == nil {
		for _, r := range resps {
			if r.Err != nil {
				err = r.Err
			}
		}
	}
	if err != nil {
		e.log.Warn("could not set a window changelog's cleanup policy and retention; it keeps every window", "topic", topic, "err", err)
	}
}

func (e *Engine) createAs(ctx context.Context, st *sql.CreateAs, cmd catalog.Command, record recorder, b binding) (Result, error) {
	tag := Result{Tag: "CREATE " + st.Kind.String()}
	if old, ok := e.cat.Source(st.Name); ok {
		switch {
		case st.IfNotExists:
			tag.Change = &Change{Source: old.Name, Kind: old.Kind, Topic: old.Topic, Existed: true}
			return tag, nil
		case st.OrReplace:
			if err := e.replaceQuery(ctx, st, old, cmd, record, b); err != nil {
				return Result{}, err
			}
			return e.created(tag, st.Name, old.WriterQuery, true), nil
		default:
			return Result{}, sql.NameError(st, sql.CodeDuplicateObject, "%s %s already exists", old.Kind, st.Name)
		}
	}
	prefix := "CSAS_"
	if st.Kind == catalog.Table {
		prefix = "CTAS_"
	}
	if len(cmd.Plan) > 0 {
		id, err := e.startFromPlan(ctx, prefix+st.Name, cmd, record)
		if err != nil {
			return Result{}, err
		}
		return e.created(tag, st.Name, id, false), nil
	}
	sink, err := sql.BindCreateAs(st, e.cat)
	if err != nil {
		return Result{}, err
	}
	if err := e.ksqlConfigs(sink.Target, st.Props, true, cmd.Props, b.legacy); err != nil {
		return Result{}, err
	}
	if b.live {
		if err := e.checkWriterSchemas(sink.Target); err != nil {
			return Result{}, err
		}
	}
	// A sink topic that exists keeps its partitions unless the statement
	// gave PARTITIONS, as in ksqlDB.
	_, gives := st.Props["PARTITIONS"]
	id, err := e.startPersistent(ctx, prefix+st.Name, sink, cmd, record, true, gives, b)
	if err != nil {
		return Result{}, err
	}
	return e.created(tag, st.Name, id, false), nil
}

// created adds to res the Change of a statement that started query id
// writing into the source name.
func (e *Engine) created(res Result, name, id string, existed bool) Result {
	c := &Change{Source: name, QueryID: id, Existed: existed}
	if src, ok := e.cat.Source(name); ok {
		c.Kind, c.Topic = src.Kind, src.Topic
	}
	res.Change = c
	return res
}

func (e *Engine) insertSelect(ctx context.Context, st *sql.InsertSelect, cmd catalog.Command, record recorder, b binding) (Result, error) {
	tag := Result{Tag: "INSERT 0 0"}
	var id string
	if len(cmd.Plan) > 0 {
		var err error
		if id, err = e.startFromPlan(ctx, "INSERTQUERY", cmd, record); err != nil {
			return Result{}, err
		}
	} else {
		sink, err := sql.BindInsertSelect(st, e.cat)
		if err != nil {
			return Result{}, err
		}
		if id, err = e.startPersistent(ctx, "INSERTQUERY", sink, cmd, record, false, false, b); err != nil {
			return Result{}, err
		}
	}
	return e.created(tag, st.Target, id, true), nil
}

// checkQueryProps checks the properties a query runs with.
func (e *Engine) checkQueryProps(props map[string]string) (alos bool, err error) {
	if _, err := e.queryThreads(props); err != nil {
		return false, err
	}
	if _, err := queryIdleAdvance(props); err != nil {
		return false, err
	}
	if alos, err = e.queryAtLeastOnce(props); err != nil {
		return false, err
	}
	if _, err := e.queryCommitInterval(props); err != nil {
		return false, err
	}
	if _, err := windowChangelogExtra(props); err != nil {
		return false, err
	}
	if _, err := e.queryTransactionTimeout(props); err != nil {
		return false, err
	}
	return alos, nil
}

// startPersistent plans a bound query (its sink newSink, when it creates
// one; givesPartitions when the statement gave the sink's PARTITIONS),
// records the command with its plan (record), assigns the query its ID
// (prefix_<command offset>, or the one the command carries) and runs the
// plan as recorded (runPlan). It returns the query ID.
func (e *Engine) startPersistent(ctx context.Context, prefix string, sink *planner.Sink, cmd catalog.Command, record recorder, newSink, givesPartitions bool, b binding) (string, error) {
	e.useSchemas(sink.Target)
	alos, err := e.checkQueryProps(cmd.Props)
	if err != nil {
		return "", err
	}
	p, err := e.planQuery(sink, cmd, newSink, b.legacy)
	if err != nil {
		return "", err
	}
	if b.live {
		if err := e.checkQuery(ctx, p.Query, alos); err != nil {
			return "", err
		}
	}
	if newSink {
		if n, err := e.ensureTopic(ctx, sink.Target.Topic, 0); err == nil && !givesPartitions {
			sink.Target.Partitions = n
		} else if _, err := e.ensureTopic(ctx, sink.Target.Topic, sink.Target.Partitions); err != nil {
			return "", err
		}
		if sink.Target.Kind == catalog.Table && !exec.MaterializesResult(p.Query) {
			// The result of an aggregation answers pull queries from
			// the query's own aggregate store, as in ksqlDB; another
			// result table from a materialization of its topic
			// (read_committed, so only committed results).
			p.Materialization = physical.BuildTable(physical.AppID(e.cfg.ServiceID, queryBuildID(cmd)+"_MATERIALIZE"), planner.NewScan(sink.Target))
			timestampPolicy(p.Materialization, b.keepTimestamps, timestampsThrow(cmd.Props))
		}
	}
	dp, id, err := e.finishPlan(ctx, p, &cmd, record, prefix, b.migrate)
	if err != nil {
		return "", err
	}
	return id, e.runPlan(ctx, dp, id, cmd, newSink)
}

// planQuery builds the plan of a bound query: its topology, built under
// the ID the command carries or the placeholder of the one it will get.
func (e *Engine) planQuery(sink *planner.Sink, cmd catalog.Command, newSink bool, l legacy) (*plan.Plan, error) {
	topo, err := physical.Build(physical.AppID(e.cfg.ServiceID, queryBuildID(cmd)), sink)
	if err != nil {
		return nil, err
	}
	timestampPolicy(topo, l.keepTimestamps, timestampsThrow(cmd.Props))
	p := &plan.Plan{Query: topo, Target: sink.Target.Name, InputPartitions: planner.Sources(sink.Input)[0].Partitions}
	for _, s := range planner.Sources(sink.Input) {
		p.Sources = append(p.Sources, s.Name)
	}
	if newSink {
		p.Sink = sink.Target
	}
	e.planFlags(p, l)
	return p, nil
}

// startFromPlan carries out a CREATE … AS SELECT or INSERT INTO … SELECT
// recorded with its plan, and returns its query ID.
func (e *Engine) startFromPlan(ctx context.Context, prefix string, cmd catalog.Command, record recorder) (string, error) {
	off, err := record(cmd) // a replay's: its offset
	if err != nil {
		return "", err
	}
	id := e.queryID(prefix, cmd, off)
	p, err := plan.Decode(cmd.Plan, id, e.cfg.Schemas)
	if err != nil {
		return "", err
	}
	if p.Query == nil {
		return "", fmt.Errorf("the plan of query %s has no topology", id)
	}
	if err := e.checkPlanSources(p); err != nil {
		return "", err
	}
	if p.Sink != nil {
		if err := e.ensureRecordedTopic(ctx, p.Sink); err != nil {
			return "", err
		}
	}
	return id, e.runPlan(ctx, p, id, cmd, p.Sink != nil)
}

// checkPlanSources checks that the sources a recorded plan reads, and
// the target an INSERT INTO writes, are in the catalog: a command
// validated by an instance that another instance's command overtook
// (a DROP of its input) fails as binding it would have, on every
// instance alike.
func (e *Engine) checkPlanSources(p *plan.Plan) error {
	names := p.Sources
	if p.Sink == nil {
		names = append(names[:len(names):len(names)], p.Target)
	}
	for _, name := range names {
		if _, ok := e.cat.Source(name); !ok {
			return sql.Errorf(sql.CodeUndefinedTable, "stream or table %s does not exist", name)
		}
	}
	return nil
}

// runPlan runs the query id of a plan: creates its internal topics,
// registers its sink (newSink) and the query in the catalog, and starts
// it (and the materialization of its result table, if it has one).
func (e *Engine) runPlan(ctx context.Context, p *plan.Plan, id string, cmd catalog.Command, newSink bool) error {
	topo := p.Query
	// Internal topics have as many partitions as the query's input, so
	// task p of every sub-topology reads and writes partition p.
	additional, err := windowChangelogExtra(cmd.Props)
	if err != nil {
		return err
	}
	for _, it := range topo.InternalTopics() {
		configs := it.Configs(additional)
		parts := p.InputPartitions
		if it.Partitions > 0 {
			parts = it.Partitions // a join's repartition topic: the table's
		}
		if _, err := e.ensureInternalTopic(ctx, it.Name, parts, configs); err != nil {
			return err
		}
		if it.RetentionMs > 0 {
			e.alignTopicConfig(ctx, it.Name, configs)
		}
	}
	materialized := ""
	if newSink {
		if p.Sink.Kind == catalog.Table {
			materialized = id
			if p.Materialization != nil {
				materialized = id + "_MATERIALIZE"
			}
		}
		e.useSchemas(p.Sink)
		p.Sink.WriterQuery = id
		p.Sink.MaterializedBy = materialized
		if err := e.cat.AddSource(p.Sink, false); err != nil {
			return err
		}
	}
	e.cat.AddQuery(&catalog.Query{ID: id, SQL: cmd.Statement, Sink: p.Target, Sources: p.Sources, Props: cmd.Props})
	reset := "earliest"
	if v := cmd.Props["auto.offset.reset"]; v != "" {
		reset = v
	}
	if err := e.start(id, topo, reset, cmd.Props, flagsOf(p)); err != nil {
		return err
	}
	if p.Materialization != nil && newSink {
		return e.start(materialized, p.Materialization, "earliest", cmd.Props, flagsOf(p))
	}
	return nil
}

// replaceQuery carries out CREATE OR REPLACE of a query's sink: the new
// query must read the same inputs, keep the topology's shape (internal
// topics, stores and sink) and keep the sink's columns (new value columns may
// be added at the end). It then replaces the running query in place: same
// query ID and application ID, so it resumes from the old one's offsets.
func (e *Engine) replaceQuery(ctx context.Context, st *sql.CreateAs, old *catalog.Source, cmd catalog.Command, record recorder, b binding) error {
	refuse := func(format string, args ...any) error {
		return sql.NameError(st, sql.CodeFeatureNotSupport, "cannot replace %s: "+format, append([]any{st.Name}, args...)...)
	}
	if old.Kind != st.Kind {
		return refuse("it is a %s", old.Kind)
	}
	id := old.WriterQuery
	if id == "" {
		return refuse("no running query writes it")
	}
	oldQuery := e.running[id]
	if oldQuery == nil {
		return refuse("its query %s is not running", id)
	}
	var p *plan.Plan
	if len(cmd.Plan) > 0 {
		if _, err := record(cmd); err != nil {
			return err
		}
		var err error
		if p, err = plan.Decode(cmd.Plan, id, e.cfg.Schemas); err != nil {
			return err
		}
		if p.Query == nil || p.Sink == nil {
			return fmt.Errorf("the plan of query %s has no topology or sink", id)
		}
		if err := e.checkPlanSources(p); err != nil {
			return err
		}
	} else {
		sink, err := sql.BindCreateAs(st, e.cat)
		if err != nil {
			return err
		}
		if err := e.ksqlConfigs(sink.Target, st.Props, true, cmd.Props, b.legacy); err != nil {
			return err
		}
		e.useSchemas(sink.Target)
		if _, err := e.checkQueryProps(cmd.Props); err != nil {
			return err
		}
		cmd.QueryID = id
		np, err := e.planQuery(sink, cmd, true, b.legacy)
		if err != nil {
			return err
		}
		if a, b := oldQuery.Topology().ShapeFingerprint(), np.Query.ShapeFingerprint(); a != b {
			return refuse("the new query's topology differs in shape (inputs, internal topics, stores or sink; fingerprint %s, was %s)", b, a)
		}
		if err := compatibleSchema(old.Schema, sink.Target.Schema); err != nil {
			return refuse("%v", err)
		}
		sink.Target.Topic = old.Topic
		sink.Target.MaterializedBy = old.MaterializedBy
		if p, _, err = e.finishPlan(ctx, np, &cmd, record, "", b.migrate); err != nil {
			return err
		}
	}
	oldQuery.Stop()
	delete(e.running, id)
	p.Sink.WriterQuery = id
	e.useSchemas(p.Sink)
	if err := e.cat.AddSource(p.Sink, true); err != nil {
		return err
	}
	// runPlan registers the query again under the same ID.
	return e.runPlan(ctx, p, id, cmd, false)
}

// compatibleSchema checks that next can replace prev as a sink's schema:
// the same key columns, every value column kept with its type and place,
// new value columns only at the end.
func compatibleSchema(prev, next types.Schema) error {
	if len(next.Columns) < len(prev.Columns) {
		return fmt.Errorf("the new schema (%s) drops columns of (%s)", next, prev)
	}
	for i, c := range prev.Columns {
		n := next.Columns[i]
		if n.Name != c.Name || !n.Type.Equal(c.Type) || n.Key != c.Key {
			return fmt.Errorf("column %d changes from %s %s to %s %s; only new value columns at the end are allowed", i+1, c.Name, c.Type, n.Name, n.Type)
		}
	}
	for _, n := range next.Columns[len(prev.Columns):] {
		if n.Key {
			return fmt.Errorf("the new key column %s changes the key", n.Name)
		}
	}
	return nil
}

// queryID returns the ID of the query a command starts: the one the
// command carries (commands written before IDs came from offsets, and
// CREATE OR REPLACE), else prefix_<offset> as in ksqlDB, so that queries
// two instances create at once never share an ID. Headless mode, which
// has no command topic (off < 0), numbers queries in order.
func (e *Engine) queryID(prefix string, cmd catalog.Command, off int64) string {
	id := cmd.QueryID
	if id == "" {
		n := off
		if n < 0 {
			n = int64(e.nextID)
		}
		id = fmt.Sprintf("%s_%d", prefix, n)
	}
	if n := queryNumber(id); n >= e.nextID {
		e.nextID = n + 1
	}
	return id
}

// queryNumber returns the trailing number of a query ID like CSAS_X_7.
func queryNumber(id string) int {
	i := strings.LastIndexByte(id, '_')
	n, _ := strconv.Atoi(id[i+1:])
	return n
}

func (e *Engine) drop(ctx context.Context, st *sql.Drop, cmd catalog.Command, live bool, record recorder) (Result, error) {
	tag := Result{Tag: "DROP " + st.Kind.String(), Change: &Change{Source: st.Name, Kind: st.Kind}}
	src, ok := e.cat.Source(st.Name)
	if !ok {
		if st.IfExists {
			return tag, nil
		}
		return Result{}, sql.NameError(st, sql.CodeUndefinedTable, "%s %s does not exist", st.Kind, st.Name)
	}
	if src.Kind != st.Kind {
		return Result{}, sql.NameError(st, sql.CodeUndefinedTable, "%s is a %s, not a %s", st.Name, src.Kind, st.Kind)
	}
	if src.IsSource && st.DeleteTopic {
		return Result{}, sql.NameError(st, sql.CodeFeatureNotSupport, "Cannot delete topic for read-only source: %s", st.Name)
	}
	var users []string
	for _, id := range e.cat.Users(st.Name) {
		if id != src.MaterializedBy || id == src.WriterQuery {
			users = append(users, id)
		}
	}
	if len(users) > 0 {
		return Result{}, sql.NameError(st, sql.CodeObjectInUse, "cannot drop %s: queries %s read or write it; TERMINATE them first", st.Name, strings.Join(users, ", "))
	}
	if _, err := record(cmd); err != nil {
		return Result{}, err
	}
	tag.Change.Existed, tag.Change.Topic = true, src.Topic
	if id := src.MaterializedBy; id != "" {
		e.stopQuery(id)
		tag.Change.Queries = []string{id}
	}
	e.cat.DropSource(st.Name)
	// Only the instance the user asked deletes the topic: a replay or
	// another instance must not delete one created again since.
	if st.DeleteTopic && live {
		if _, err := e.adm.DeleteTopics(ctx, src.Topic); err != nil {
			e.log.Warn("deleting topic", "topic", src.Topic, "err", err)
		}
	}
	return tag, nil
}

func (e *Engine) terminate(st *sql.Terminate, cmd catalog.Command, record recorder) (Result, error) {
	var ids []string
	if st.All {
		for _, q := range e.cat.Queries() {
			ids = append(ids, q.ID)
		}
	} else {
		if _, ok := e.cat.Query(st.QueryID); !ok {
			return Result{}, sql.NameError(st, sql.CodeUndefinedObject, "query %s does not exist", st.QueryID)
		}
		ids = []string{st.QueryID}
	}
	if _, err := record(cmd); err != nil {
		return Result{}, err
	}
	for _, id := range ids {
		e.stopQuery(id)
	}
	return Result{Tag: "TERMINATE", Change: &Change{Queries: ids}}, nil
}

// pause pauses (or resumes) queries: recorded, so that every instance
// and every restart keeps them so until RESUME.
func (e *Engine) pause(st *sql.Pause, cmd catalog.Command, record recorder) (Result, error) {
	var ids []string
	if st.All {
		for _, q := range e.cat.Queries() {
			ids = append(ids, q.ID)
		}
	} else {
		if _, ok := e.cat.Query(st.QueryID); !ok {
			return Result{}, sql.NameError(st, sql.CodeUndefinedObject, "query %s does not exist", st.QueryID)
		}
		ids = []string{st.QueryID}
	}
	if _, err := record(cmd); err != nil {
		return Result{}, err
	}
	for _, id := range ids {
		e.cat.UpdateQuery(id, func(q *catalog.Query) { q.Paused = !st.Resume })
		if q := e.running[id]; q != nil {
			q.SetPaused(!st.Resume)
		}
	}
	if st.Resume {
		return Result{Tag: "RESUME", Change: &Change{Queries: ids}}, nil
	}
	return Result{Tag: "PAUSE", Change: &Change{Queries: ids}}, nil
}

// stopQuery stops a persistent query and forgets it.
func (e *Engine) stopQuery(id string) {
	if q := e.running[id]; q != nil {
		q.Stop()
		delete(e.running, id)
		if e.cfg.Metrics != nil {
			e.cfg.Metrics.Query(id).Close()
		}
	}
	if q, ok := e.cat.Query(id); ok {
		if s, ok := e.cat.Source(q.Sink); ok && s.WriterQuery == id {
			e.cat.UpdateSource(q.Sink, func(s *catalog.Source) {
				s.WriterQuery = ""
				if s.MaterializedBy == id {
					s.MaterializedBy = "" // its aggregate store goes with it
				}
			})
		}
		for _, name := range q.Sources {
			if s, ok := e.cat.Source(name); ok && s.MaterializedBy == id {
				e.cat.UpdateSource(name, func(s *catalog.Source) { s.MaterializedBy = "" })
			}
		}
	}
	e.cat.DropQuery(id)
}
