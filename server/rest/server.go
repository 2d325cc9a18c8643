package rest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/metrics"
)

// Engine is what the REST server needs of the engine. *engine.Engine
// implements it.
type Engine interface {
	engine.Executor
	// Prepare prepares the INSERTs of /inserts-stream, whose rows are
	// bound to placeholders.
	engine.Preparer
	// Catalog returns the streams, tables and queries, for CREATE, DROP
	// and /inserts-stream targets.
	Catalog() *catalog.Catalog
	// QueryStatus returns a persistent query's runtime status.
	QueryStatus(id string) (engine.QueryStatus, bool)
	// DescribeSource and ExplainQuery give the typed results of
	// DESCRIBE EXTENDED and EXPLAIN, for SHOW … EXTENDED.
	DescribeSource(name string, extended bool) (*engine.SourceDescription, bool)
	ExplainQuery(id string) (*engine.Plan, bool)
}

var _ Engine = (*engine.Engine)(nil)

// Defaults of the options.
const (
	// DefaultMaxBodyBytes bounds a request body, and one line of an
	// /inserts-stream body.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultMaxPushQueries bounds the push queries running at once, as
	// ksqlDB's ksql.max.push.queries does.
	DefaultMaxPushQueries = 100
	// flushInterval is how long a streamed row may wait in the response
	// buffer before it is flushed to the client.
	flushInterval = 20 * time.Millisecond
	// healthCacheTTL is how long a health check result is reused.
	healthCacheTTL = 5 * time.Second
)

// Info describes the server for GET /info.
type Info struct {
	// Version is reported as the server version (default "sqlstreams").
	Version string
	// KafkaClusterID is the Kafka cluster's ID, when known.
	KafkaClusterID string
	// ServiceID is the sqlstreams service ID (ksqlDB's ksql.service.id).
	ServiceID string
}

// Opt configures a Server.
type Opt func(*config)

type config struct {
	log            *slog.Logger
	metrics        *metrics.Registry
	info           Info
	users          *Users
	maxBody        int64
	maxPushQueries int
	pages          []page
}

// page is a handler served beside the API (the web console).
type page struct {
	path   string
	prefix bool
	h      http.Handler
}

// WithLogger sets the logger for request failures (default slog.Default()).
func WithLogger(l *slog.Logger) Opt { return func(c *config) { c.log = l } }

// WithMetrics sets the registry that GET /metrics serves and that the
// server reports into (default: a new one, see Server.Metrics). The server
// makes the registry watch the engine's persistent queries.
func WithMetrics(r *metrics.Registry) Opt { return func(c *config) { c.metrics = r } }

// WithInfo sets what GET /info reports.
func WithInfo(i Info) Opt { return func(c *config) { c.info = i } }

// WithUsers turns on HTTP basic authentication: every endpoint but
// /healthcheck then needs one of users' names and passwords. nil leaves
// authentication off (the default): then the server must only listen on
// loopback (see RequireLoopback).
func WithUsers(u *Users) Opt { return func(c *config) { c.users = u } }

// WithMaxBodyBytes bounds request bodies (default DefaultMaxBodyBytes);
// an /inserts-stream body is unbounded but each of its lines is bounded.
func WithMaxBodyBytes(n int64) Opt { return func(c *config) { c.maxBody = n } }

// WithMaxPushQueries bounds the push queries running at once over REST
// (default DefaultMaxPushQueries); one more is refused with error 40003.
func WithMaxPushQueries(n int) Opt { return func(c *config) { c.maxPushQueries = n } }

// WithHandler serves h at path (and, with prefix, everything under
// path/) beside the API, behind the same authentication; GET and POST
// reach it. The web console is mounted this way at "/" and "/console".
func WithHandler(path string, prefix bool, h http.Handler) Opt {
	return func(c *config) { c.pages = append(c.pages, page{path: path, prefix: prefix, h: h}) }
}

// Server is the REST API over one engine. It is an http.Handler; serve it
// with net/http (HTTP/1.1, optionally TLS). Close it before the engine.
type Server struct {
	eng     Engine
	cfg     config
	log     *slog.Logger
	metrics *metrics.Registry
	routes  map[string]route

	ctx    context.Context // ends every push query and inserts stream at Close
	cancel context.CancelFunc

	pushMu sync.Mutex
	push   map[string]context.CancelFunc // running push queries by ID
	npush  int                           // push queries running (with or without an ID)

	cmdMu sync.Mutex
	cmds  map[string]commandStatus // /status: outcomes of this server's commands
	order []string

	health healthCache
}

type route struct {
	method string // "" for any
	// prefix routes match the path and everything under it (/status/…).
	prefix  bool
	handler func(http.ResponseWriter, *http.Request)
	public  bool // served without authentication
}

// New returns a server for eng.
func New(eng Engine, opts ...Opt) *Server {
	cfg := config{maxBody: DefaultMaxBodyBytes, maxPushQueries: DefaultMaxPushQueries}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.log == nil {
		cfg.log = slog.Default()
	}
	if cfg.metrics == nil {
		cfg.metrics = metrics.New()
	}
	if cfg.info.Version == "" {
		cfg.info.Version = "sqlstreams"
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		eng: eng, cfg: cfg, log: cfg.log, metrics: cfg.metrics,
		ctx: ctx, cancel: cancel,
		push: map[string]context.CancelFunc{},
		cmds: map[string]commandStatus{},
	}
	s.routes = map[string]route{
		"/ksql":           {method: http.MethodPost, handler: s.handleKSQL},
		"/query-stream":   {method: http.MethodPost, handler: s.handleQueryStream},
		"/query":          {method: http.MethodPost, handler: s.handleQuery},
		"/close-query":    {method: http.MethodPost, handler: s.handleCloseQuery},
		"/inserts-stream": {method: http.MethodPost, handler: s.handleInsertsStream},
		"/info":           {method: http.MethodGet, handler: s.handleInfo},
		"/healthcheck":    {method: http.MethodGet, handler: s.handleHealthcheck, public: true},
		"/status":         {method: http.MethodGet, handler: s.handleStatus, prefix: true},
		"/metrics":        {method: http.MethodGet, handler: s.metrics.Handler().ServeHTTP},
	}
	if ip, ok := eng.(interface {
		ServeInternalPull(http.ResponseWriter, *http.Request)
	}); ok {
		// Pull queries other instances of the service forward here for
		// the partitions this one owns.
		s.routes[engine.InternalPullPath] = route{method: http.MethodPost, handler: ip.ServeInternalPull}
	}
	for _, p := range cfg.pages {
		if _, taken := s.routes[p.path]; !taken {
			s.routes[p.path] = route{prefix: p.prefix, handler: p.h.ServeHTTP}
		}
	}
	s.metrics.WatchQueries(s.queryStats)
	s.metrics.DeclareServer("rest")
	return s
}

// Metrics returns the registry the server reports into and serves.
func (s *Server) Metrics() *metrics.Registry { return s.metrics }

// Close ends every running push query and inserts stream; their
// responses finish as if the client had closed them. The server still
// answers requests afterwards, but new streams end at once.
func (s *Server) Close() { s.cancel() }

// ActivePushQueries returns how many push queries the server is running.
func (s *Server) ActivePushQueries() int {
	s.pushMu.Lock()
	defer s.pushMu.Unlock()
	return s.npush
}

// lookup finds the route of path: an exact match, or the longest prefix
// route it falls under.
func (s *Server) lookup(path string) (string, route, bool) {
	if rt, ok := s.routes[path]; ok {
		return path, rt, true
	}
	for p, rt := range s.routes {
		if rt.prefix && strings.HasPrefix(path, p+"/") {
			return p, rt, true
		}
	}
	return "", route{}, false
}

// ServeHTTP routes a request, counting it in the metrics and checking its
// credentials.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	sw := &statusWriter{ResponseWriter: w}
	name, rt, ok := s.lookup(r.URL.Path)
	if !ok {
		name = "other"
	}
	defer func() {
		s.metrics.ObserveHTTP(name, sw.code(), time.Since(start))
	}()
	switch {
	case !ok:
		writeJSON(sw, r, http.StatusNotFound, genericError(codeNotFound, "no such endpoint: "+r.URL.Path))
	case !rt.public && !s.authorized(r):
		sw.Header().Set("WWW-Authenticate", `Basic realm="sqlstreams", charset="UTF-8"`)
		writeJSON(sw, r, http.StatusUnauthorized, genericError(codeUnauthorized, "unauthorized: this server needs HTTP basic authentication"))
	case rt.method != "" && r.Method != rt.method:
		sw.Header().Set("Allow", rt.method)
		writeJSON(sw, r, http.StatusMethodNotAllowed, genericError(codeMethod, r.Method+" is not allowed on "+name+"; use "+rt.method))
	default:
		rt.handler(sw, r)
	}
}

// statusWriter records the response status for the metrics. Unwrap lets
// http.ResponseController reach the connection (Flush, full duplex).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) code() int {
	if w.status == 0 {
		return http.StatusOK
	}
	return w.status
}

// readBody reads a request body of at most the configured size.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.maxBody))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, &apiError{status: http.StatusRequestEntityTooLarge, code: codeTooLarge,
			msg: "request body is larger than the server's limit of " + itoa(mbe.Limit) + " bytes"}
	}
	if err != nil {
		return nil, badRequest("reading the request body: " + err.Error())
	}
	return b, nil
}

// queryStats reads the engine's status of every persistent query in the
// catalog, for the metrics registry.
func (s *Server) queryStats() []metrics.QueryStats {
	qs := s.eng.Catalog().Queries()
	out := make([]metrics.QueryStats, 0, len(qs))
	for _, q := range qs {
		st, ok := s.eng.QueryStatus(q.ID)
		if !ok {
			continue
		}
		qs := metrics.QueryStats{
			ID: q.ID, State: st.State,
			RecordsIn: st.RecordsIn, RecordsOut: st.RecordsOut, BadRecords: st.BadRecords,
			Commits: st.Commits, Aborts: st.Aborts, LateRecords: st.LateRecords,
		}
		for _, p := range st.Partitioning {
			qs.Sources = append(qs.Sources, metrics.SourcePartitioning{Source: p.Source, Topic: p.Topic, Checked: p.Checked, Misplaced: p.Misplaced})
		}
		out = append(out, qs)
	}
	return out
}

// jsonContentType is the content type of a JSON answer: ksqlDB's
// versioned type when the client asked for it, else application/json.
func jsonContentType(r *http.Request) string {
	if strings.Contains(r.Header.Get("Accept"), "application/vnd.ksql.v1+json") {
		return "application/vnd.ksql.v1+json"
	}
	return "application/json"
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
