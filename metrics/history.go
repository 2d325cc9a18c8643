package metrics

import (
	"context"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// Defaults of a History.
const (
	// DefaultSampleInterval is how often a History samples the registry.
	DefaultSampleInterval = 5 * time.Second
	// DefaultHistoryLength is how many samples a History keeps: 16
	// minutes at the default interval, so the last 15 minutes are always
	// whole.
	DefaultHistoryLength = 192
)

// Point is one query's figures at one sample. Rates are per second over
// the interval since the previous sample (0 at the first sample of a
// query).
type Point struct {
	// Time is the sample's time, in Unix milliseconds.
	Time int64 `json:"t"`
	// State is the query's state then (RUNNING, FAILED, …).
	State string `json:"state,omitempty"`
	// RecordsIn, RecordsOut and BadRecords are the counters then.
	RecordsIn  int64 `json:"in"`
	RecordsOut int64 `json:"out"`
	BadRecords int64 `json:"bad"`
	// InRate and OutRate are records per second since the previous
	// sample.
	InRate  float64 `json:"inRate"`
	OutRate float64 `json:"outRate"`
	// Lag is the query's consumer lag summed over its input partitions.
	Lag int64 `json:"lag"`
	// Restored and RestoreTotal sum the restoration of its stores.
	Restored     int64 `json:"restored"`
	RestoreTotal int64 `json:"restoreTotal"`
}

// History keeps a ring of samples of the registry's per-query series
// (records in and out, bad records, consumer lag, restoration), for the
// console's charts. It reads what /metrics serves, nothing else. A History
// is safe for concurrent use.
type History struct {
	r     *Registry
	every time.Duration
	keep  int

	mu     sync.Mutex
	series map[string][]Point // by query ID, oldest first, at most keep
}

// NewHistory returns a history of r's queries sampled every interval
// (DefaultSampleInterval when 0) keeping the last keep samples
// (DefaultHistoryLength when 0). Run starts the sampling.
func NewHistory(r *Registry, interval time.Duration, keep int) *History {
	if interval <= 0 {
		interval = DefaultSampleInterval
	}
	if keep <= 0 {
		keep = DefaultHistoryLength
	}
	return &History{r: r, every: interval, keep: keep, series: map[string][]Point{}}
}

// Interval returns the sampling interval.
func (h *History) Interval() time.Duration { return h.every }

// Run samples at once and then every interval until ctx ends.
func (h *History) Run(ctx context.Context) {
	t := time.NewTicker(h.every)
	defer t.Stop()
	h.Sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			h.Sample(now)
		}
	}
}

// Sample reads the registry once and appends a point per query. A query
// no longer exported (terminated) is forgotten.
func (h *History) Sample(now time.Time) {
	if h == nil || h.r == nil {
		return
	}
	mfs, err := h.r.reg.Gather()
	if err != nil && len(mfs) == 0 {
		return
	}
	pts := map[string]*Point{}
	point := func(id string) *Point {
		p := pts[id]
		if p == nil {
			p = &Point{Time: now.UnixMilli()}
			pts[id] = p
		}
		return p
	}
	for _, mf := range mfs {
		var field func(p *Point, v float64)
		switch mf.GetName() {
		case "sqlstreams_query_records_in_total":
			field = func(p *Point, v float64) { p.RecordsIn = int64(v) }
		case "sqlstreams_query_records_out_total":
			field = func(p *Point, v float64) { p.RecordsOut = int64(v) }
		case "sqlstreams_query_bad_records_total":
			field = func(p *Point, v float64) { p.BadRecords = int64(v) }
		case "sqlstreams_query_consumer_lag":
			field = func(p *Point, v float64) { p.Lag += int64(v) }
		case "sqlstreams_query_restore_restored_records":
			field = func(p *Point, v float64) { p.Restored += int64(v) }
		case "sqlstreams_query_restore_total_records":
			field = func(p *Point, v float64) { p.RestoreTotal += int64(v) }
		case "sqlstreams_query_state":
			for _, m := range mf.GetMetric() {
				if id := label(m, "query_id"); id != "" && m.GetGauge().GetValue() == 1 {
					point(id).State = label(m, "state")
				}
			}
			continue
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			id := label(m, "query_id")
			if id == "" {
				continue
			}
			v := m.GetCounter().GetValue()
			if m.Gauge != nil {
				v = m.GetGauge().GetValue()
			}
			field(point(id), v)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for id := range h.series {
		if pts[id] == nil {
			delete(h.series, id)
		}
	}
	for id, p := range pts {
		s := h.series[id]
		if n := len(s); n > 0 {
			prev := s[n-1]
			if secs := float64(p.Time-prev.Time) / 1000; secs > 0 {
				// A counter that went down (the query restarted in
				// this process) counts from zero.
				p.InRate = float64(delta(p.RecordsIn, prev.RecordsIn)) / secs
				p.OutRate = float64(delta(p.RecordsOut, prev.RecordsOut)) / secs
			}
		}
		if len(s) >= h.keep {
			s = append(s[:0], s[len(s)-h.keep+1:]...)
		}
		h.series[id] = append(s, *p)
	}
}

func delta(now, before int64) int64 {
	if now < before {
		return now
	}
	return now - before
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Series returns a copy of the samples of every query, oldest first.
func (h *History) Series() map[string][]Point {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string][]Point, len(h.series))
	for id, s := range h.series {
		out[id] = append([]Point(nil), s...)
	}
	return out
}

// Latest returns the latest sample of query id.
func (h *History) Latest(id string) (Point, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.series[id]
	if len(s) == 0 {
		return Point{}, false
	}
	return s[len(s)-1], true
}
