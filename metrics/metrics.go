package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry holds a process's metrics. Create it once with New and hand it
// to the servers and the engine.
type Registry struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	pushQueries  *prometheus.GaugeVec
	insertedRows *prometheus.CounterVec
	connections  *prometheus.GaugeVec
	statements   *prometheus.CounterVec

	commitLatency *prometheus.HistogramVec
	lag           *prometheus.GaugeVec
	restored      *prometheus.GaugeVec
	restoreTotal  *prometheus.GaugeVec

	mu      sync.Mutex
	queries map[string]*Query
	watch   func() []QueryStats
}

// latencyBuckets span a fast REST call (1 ms) to a long push query (10 min).
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 600}

// commitBuckets span an EOS commit: a few ms on a local broker, seconds
// when the broker struggles.
var commitBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// New returns a registry with sqlstreams' metrics and the Go runtime and
// process collectors registered.
func New() *Registry {
	r := &Registry{
		reg: prometheus.NewRegistry(),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sqlstreams_http_requests_total",
			Help: "REST API requests by endpoint and HTTP status code.",
		}, []string{"endpoint", "code"}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sqlstreams_http_request_duration_seconds",
			Help:    "REST API request duration by endpoint and HTTP status code; push queries count until they end.",
			Buckets: latencyBuckets,
		}, []string{"endpoint", "code"}),
		pushQueries: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sqlstreams_active_push_queries",
			Help: "Push queries running now, by the server that runs them (rest, pgwire).",
		}, []string{"server"}),
		connections: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sqlstreams_connections",
			Help: "Client connections open now, by server (rest, pgwire).",
		}, []string{"server"}),
		statements: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sqlstreams_statements_total",
			Help: "Statements run, by server (pgwire) and outcome (ok, error).",
		}, []string{"server", "outcome"}),
		insertedRows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sqlstreams_inserts_stream_rows_total",
			Help: "Rows received on /inserts-stream, by outcome (ok, error).",
		}, []string{"status"}),
		commitLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sqlstreams_query_commit_latency_seconds",
			Help:    "Time a persistent query's transaction commit took.",
			Buckets: commitBuckets,
		}, []string{"query_id"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sqlstreams_query_consumer_lag",
			Help: "Records between a persistent query's position and the end of an input partition.",
		}, []string{"query_id", "topic", "partition"}),
		restored: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sqlstreams_query_restore_restored_records",
			Help: "Changelog records restored so far into a state store partition.",
		}, []string{"query_id", "store", "partition"}),
		restoreTotal: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "sqlstreams_query_restore_total_records",
			Help: "Changelog records a state store partition's restoration has to read.",
		}, []string{"query_id", "store", "partition"}),
		queries: map[string]*Query{},
	}
	r.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		r.httpRequests, r.httpDuration, r.pushQueries, r.insertedRows, r.connections, r.statements,
		r.commitLatency, r.lag, r.restored, r.restoreTotal,
		&queryCollector{r: r},
	)
	return r
}

// ConnOpened counts an open connection of server until the returned
// function is called. A nil registry counts nothing.
func (r *Registry) ConnOpened(server string) (closed func()) {
	if r == nil {
		return func() {}
	}
	g := r.connections.WithLabelValues(server)
	g.Inc()
	return g.Dec
}

// CountStatement counts one statement that server ran.
func (r *Registry) CountStatement(server string, ok bool) {
	if r == nil {
		return
	}
	outcome := "ok"
	if !ok {
		outcome = "error"
	}
	r.statements.WithLabelValues(server, outcome).Inc()
}

// Register adds a collector of the caller's own (for example a server's
// connection counts) to the registry.
func (r *Registry) Register(c prometheus.Collector) error {
	if r == nil {
		return nil
	}
	return r.reg.Register(c)
}

// Gatherer returns the underlying registry, for tests and for exporters
// other than Handler.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Handler serves the metrics in Prometheus' text exposition format (or
// OpenMetrics when the scraper asks for it). A collector that fails does
// not fail the scrape: the other metrics are still served.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
}

// ObserveHTTP records one finished REST request. endpoint must come from
// a fixed set (the route pattern, not the request path) to keep the
// label's cardinality bounded.
func (r *Registry) ObserveHTTP(endpoint string, code int, d time.Duration) {
	if r == nil {
		return
	}
	c := strconv.Itoa(code)
	r.httpRequests.WithLabelValues(endpoint, c).Inc()
	r.httpDuration.WithLabelValues(endpoint, c).Observe(d.Seconds())
}

// DeclareServer makes server's push query gauge exist (at zero) before
// its first push query, so that dashboards and alerts see the series.
func (r *Registry) DeclareServer(server string) {
	if r != nil {
		r.pushQueries.WithLabelValues(server)
	}
}

// PushQueryStarted counts a push query that server ("rest", "pgwire")
// started; call the returned function once when it ends.
func (r *Registry) PushQueryStarted(server string) (done func()) {
	if r == nil {
		return func() {}
	}
	g := r.pushQueries.WithLabelValues(server)
	g.Inc()
	var once sync.Once
	return func() { once.Do(g.Dec) }
}

// AddInsertedRows counts rows received on /inserts-stream: n acknowledged
// when ok, n refused otherwise.
func (r *Registry) AddInsertedRows(ok bool, n int) {
	if r == nil || n <= 0 {
		return
	}
	status := "ok"
	if !ok {
		status = "error"
	}
	r.insertedRows.WithLabelValues(status).Add(float64(n))
}
