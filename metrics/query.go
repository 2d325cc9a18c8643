package metrics

import (
	"sort"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// QueryStats is a persistent query's status as the engine reports it
// (exec.Status): cumulative counts since the query started in this
// process, and its state (RUNNING, ERROR, …).
type QueryStats struct {
	ID         string
	State      string
	RecordsIn  int64
	RecordsOut int64
	BadRecords int64
	Commits    int64
	Aborts     int64
	// LateRecords counts rows windowed aggregations dropped as late.
	LateRecords int64
	// Sources count, per source read where its partitioning matters,
	// its keyed records checked and those not in the partition its
	// PARTITIONER gives their key.
	Sources []SourcePartitioning
}

// SourcePartitioning is what a query found of one source's
// partitioning.
type SourcePartitioning struct {
	Source, Topic      string
	Checked, Misplaced int64
}

// WatchQueries makes every scrape call list and export the queries it
// returns as sqlstreams_query_* series. This is how per-query counters
// work without the runtime calling any hook: list reads the engine's
// status of every query in the catalog. list must be safe for concurrent
// use and quick (it runs inside the scrape). A later call replaces an
// earlier one; nil stops watching.
//
// Where a query also has a Query handle whose record hooks have been
// called, the handle's counts win for records in, out and bad, so the two
// sources never both export the same series.
func (r *Registry) WatchQueries(list func() []QueryStats) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.watch = list
	r.mu.Unlock()
}

// Query is the metrics handle of one persistent query, for the runtime to
// update. Get it once per query run with Registry.Query and keep it; a nil
// *Query ignores every call.
//
// The record counters cost an atomic add and may be called per record.
// SetLag and SetRestore look up a labelled series and allocate: call them
// per commit or per poll, not per record.
type Query struct {
	r        *Registry
	id       string
	in       atomic.Int64
	out      atomic.Int64
	bad      atomic.Int64
	counting atomic.Bool
	commit   prometheus.Observer
}

// Query returns the handle of the persistent query id, creating it; the
// same id returns the same handle until Close.
func (r *Registry) Query(id string) *Query {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if q := r.queries[id]; q != nil {
		return q
	}
	q := &Query{r: r, id: id, commit: r.commitLatency.WithLabelValues(id)}
	r.queries[id] = q
	return q
}

func (q *Query) count(c *atomic.Int64, n int64) {
	if !q.counting.Load() {
		q.counting.Store(true)
	}
	c.Add(n)
}

// AddRecordsIn counts n records the query consumed.
func (q *Query) AddRecordsIn(n int64) {
	if q != nil {
		q.count(&q.in, n)
	}
}

// AddRecordsOut counts n records the query produced to its sink.
func (q *Query) AddRecordsOut(n int64) {
	if q != nil {
		q.count(&q.out, n)
	}
}

// AddBadRecords counts n records the query skipped because they could not
// be deserialized or evaluated.
func (q *Query) AddBadRecords(n int64) {
	if q != nil {
		q.count(&q.bad, n)
	}
}

// ObserveCommit records how long one transaction commit (or, under
// at_least_once, one offset commit) took.
func (q *Query) ObserveCommit(d time.Duration) {
	if q != nil {
		q.commit.Observe(d.Seconds())
	}
}

// SetLag reports how many records of topic's partition the query has yet
// to consume (high watermark, or last stable offset under read_committed,
// minus the query's position).
func (q *Query) SetLag(topic string, partition int32, lag int64) {
	if q != nil {
		q.r.lag.WithLabelValues(q.id, topic, strconv.Itoa(int(partition))).Set(float64(lag))
	}
}

// SetRestore reports a state store partition's restoration: restored of
// total changelog records read. Report restored == total when it is done.
func (q *Query) SetRestore(store string, partition int32, restored, total int64) {
	if q == nil {
		return
	}
	p := strconv.Itoa(int(partition))
	q.r.restored.WithLabelValues(q.id, store, p).Set(float64(restored))
	q.r.restoreTotal.WithLabelValues(q.id, store, p).Set(float64(total))
}

// Close removes the query's series (call it when the query is terminated,
// not when it merely restarts) and forgets the handle. Later calls on the
// handle are ignored by the registry's output.
func (q *Query) Close() {
	if q == nil {
		return
	}
	r := q.r
	r.mu.Lock()
	if r.queries[q.id] == q {
		delete(r.queries, q.id)
	}
	r.mu.Unlock()
	l := prometheus.Labels{"query_id": q.id}
	r.commitLatency.DeletePartialMatch(l)
	r.lag.DeletePartialMatch(l)
	r.restored.DeletePartialMatch(l)
	r.restoreTotal.DeletePartialMatch(l)
}

// queryCollector exports the per-query counters at scrape time, from the
// watched engine status and the hooks' handles.
type queryCollector struct{ r *Registry }

var (
	descRecordsIn  = prometheus.NewDesc("sqlstreams_query_records_in_total", "Records a persistent query consumed.", []string{"query_id"}, nil)
	descRecordsOut = prometheus.NewDesc("sqlstreams_query_records_out_total", "Records a persistent query produced to its sink.", []string{"query_id"}, nil)
	descBadRecords = prometheus.NewDesc("sqlstreams_query_bad_records_total", "Records a persistent query skipped as undecodable or unevaluable.", []string{"query_id"}, nil)
	descCommits    = prometheus.NewDesc("sqlstreams_query_commits_total", "Transactions a persistent query committed.", []string{"query_id"}, nil)
	descAborts     = prometheus.NewDesc("sqlstreams_query_aborts_total", "Transactions a persistent query aborted.", []string{"query_id"}, nil)
	descLate       = prometheus.NewDesc("sqlstreams_query_late_records_total", "Rows a windowed aggregation dropped because every window they fall into had closed (stream time past window end + grace).", []string{"query_id"}, nil)
	descChecked    = prometheus.NewDesc("sqlstreams_source_partition_checked_records_total", "Keyed records a persistent query read from a source where its partitioning matters and checked to be in the partition its PARTITIONER (murmur2 by default, or crc32) gives their key.", []string{"query_id", "source", "topic"}, nil)
	descMisplaced  = prometheus.NewDesc("sqlstreams_source_misplaced_records_total", "Keyed records a persistent query read from a source that were not in the partition its PARTITIONER (murmur2 by default) gives their key: the topic's producers partition otherwise (librdkafka's default is crc32); declare WITH (PARTITIONER='crc32'), or 'murmur2' for a source declared crc32.", []string{"query_id", "source", "topic"}, nil)
	descState      = prometheus.NewDesc("sqlstreams_query_state", "1 for a persistent query's current state (RUNNING, ERROR, …).", []string{"query_id", "state"}, nil)
)

func (c *queryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRecordsIn, descRecordsOut, descBadRecords, descCommits, descAborts, descLate, descChecked, descMisplaced, descState} {
		ch <- d
	}
}

func (c *queryCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.r
	r.mu.Lock()
	watch := r.watch
	handles := make(map[string]*Query, len(r.queries))
	for id, q := range r.queries {
		handles[id] = q
	}
	r.mu.Unlock()

	var stats []QueryStats
	if watch != nil {
		stats = watch()
	}
	seen := make(map[string]bool, len(stats))
	counter := func(d *prometheus.Desc, v int64, id string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), id)
	}
	for _, s := range stats {
		if seen[s.ID] {
			continue
		}
		seen[s.ID] = true
		in, out, bad := s.RecordsIn, s.RecordsOut, s.BadRecords
		if q := handles[s.ID]; q != nil && q.counting.Load() {
			in, out, bad = q.in.Load(), q.out.Load(), q.bad.Load()
		}
		counter(descRecordsIn, in, s.ID)
		counter(descRecordsOut, out, s.ID)
		counter(descBadRecords, bad, s.ID)
		counter(descCommits, s.Commits, s.ID)
		counter(descAborts, s.Aborts, s.ID)
		counter(descLate, s.LateRecords, s.ID)
		for _, p := range s.Sources {
			ch <- prometheus.MustNewConstMetric(descChecked, prometheus.CounterValue, float64(p.Checked), s.ID, p.Source, p.Topic)
			ch <- prometheus.MustNewConstMetric(descMisplaced, prometheus.CounterValue, float64(p.Misplaced), s.ID, p.Source, p.Topic)
		}
		if s.State != "" {
			ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, 1, s.ID, s.State)
		}
	}
	ids := make([]string, 0, len(handles))
	for id := range handles {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		q := handles[id]
		if !q.counting.Load() {
			continue
		}
		counter(descRecordsIn, q.in.Load(), id)
		counter(descRecordsOut, q.out.Load(), id)
		counter(descBadRecords, q.bad.Load(), id)
	}
}
