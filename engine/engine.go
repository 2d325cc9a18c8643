package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/sql"
)

// Engine executes statements against one sqlstreams service.
type Engine struct {
	cfg  Config
	log  *slog.Logger
	cat  *catalog.Catalog
	cmds CommandLog   // nil in headless mode
	cl   *kgo.Client  // INSERT VALUES producer and admin; nil when offline
	adm  *kadm.Client // group administration; nil when offline
	// topics is the topic administration (Config.TopicAdmin, or kadm).
	topics TopicAdmin

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
	// headless holds a headless server's recorded plans (nil otherwise,
	// and offline).
	headless *headlessPlans

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
	if !cfg.Offline {
		if err := e.connect(ctx); err != nil {
			return nil, err
		}
	}
	if cfg.Offline && (cfg.TopicAdmin == nil || (cfg.CommandLog == nil && cfg.Headless == nil)) {
		return nil, errors.New("engine: an offline engine needs a TopicAdmin and a CommandLog")
	}
	var cl *kgo.Client
	var adm *kadm.Client
	if !cfg.Offline {
		// Admin answers come from the client's metadata cache; keep it
		// fresh so a topic created a moment ago is seen.
		var err error
		cl, err = cfg.Kafka.NewClient(kgo.ProducerLinger(0), kgo.MetadataMinAge(10*time.Millisecond),
			kgo.RecordPartitioner(sourcePartitioner{e: e, def: kgo.StickyKeyPartitioner(nil)}))
		if err != nil {
			return nil, err
		}
		adm = kadm.NewClient(cl)
	}
	var cmds CommandLog
	switch {
	case cfg.Headless != nil:
	case cfg.CommandLog != nil:
		cmds = cfg.CommandLog
	default:
		kl, err := catalog.OpenCommandLog(ctx, cfg.Kafka, cfg.ServiceID, cfg.InstanceID)
		if err != nil {
			if cl != nil {
				cl.Close()
			}
			return nil, err
		}
		cmds = kl
	}
	*e = Engine{
		cfg: cfg, log: cfg.Logger, cat: catalog.New(), cmds: cmds, noExactlyOnce: e.noExactlyOnce,
		cl: cl, adm: adm, running: map[string]*exec.Query{}, flags: map[string]runFlags{}, nextID: 1,
		appliedCh: make(chan struct{}), waiting: map[int64]*applyResult{},
		route: router{parts: map[string]int32{}, owners: map[string]ownersEntry{}, stores: map[storeKey]pullStore{}, client: cfg.ForwardClient},
	}
	e.topics = cfg.TopicAdmin
	if e.topics == nil {
		e.topics = kafkaTopics{cl: e.cl, adm: e.adm}
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
		e.seed(sess)
		hp, err := e.openHeadlessPlans(ctx)
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("headless plans: %w", err)
		}
		e.headless = hp
		for _, text := range cfg.Headless {
			st, err := sql.Parse(text)
			switch st.(type) {
			case nil:
			case *sql.SetProperty, *sql.UnsetProperty:
				_, err = e.ExecuteStatement(ctx, sess, st, nil)
			default:
				err = e.applyHeadless(ctx, text, st, copyProps(sess.Props))
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

// errOffline refuses what needs Kafka in an offline engine
// (Config.Offline).
var errOffline = errors.New("the engine runs offline (without Kafka): this statement needs Kafka")

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
	if e.cl != nil {
		e.cl.Close()
	}
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
	e.seed(s)
	text := st.Text()
	if al, ok := st.(*sql.AlterSource); ok {
		// Runs, and is recorded, as the CREATE OR REPLACE it makes.
		var err error
		if text, st, err = e.alter(al); err != nil {
			return Result{}, err
		}
	}
	switch st := st.(type) {
	case *sql.CreateSource, *sql.CreateAs, *sql.Drop, *sql.Terminate, *sql.Pause, *sql.InsertSelect, *sql.CreateType, *sql.DropType,
		*sql.CreateView, *sql.DropView:
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
		if err := SetProperty(s.Props, st.Name, st.Value); err != nil {
			off := -1 // an unknown name: at the name
			if _, lerr := LookupProperty(st.Name); lerr == nil {
				off = st.ValuePos // a bad value: at the value
			}
			return Result{}, sql.ErrorAt(st, off, err)
		}
		return Result{Tag: "SET"}, nil
	case *sql.UnsetProperty:
		if err := UnsetProperty(s.Props, st.Name); err != nil {
			return Result{}, sql.ErrorAt(st, -1, err)
		}
		if d, _ := LookupProperty(st.Name); d != nil {
			if v, ok := s.defaults[d.Name]; ok {
				s.Props[d.Name] = v // back to the server's
			}
		}
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
