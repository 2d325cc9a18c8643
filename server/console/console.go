// Package console is sqlstreams' web console: a SQL editor, the catalog,
// the running queries with live charts and their topologies, served by
// the binary on the REST address (the REST server routes / and /console/
// here, behind its own authentication and TLS).
//
//	browser ─▶ GET /                       index.html (embedded)
//	        ─▶ GET /console/assets/…       JS, CSS (embedded, no build step)
//	        ─▶ GET /console/api/…          JSON of the engine's typed results
//	        ─▶ POST /ksql, /query-stream, /query (PRINT)   the REST API itself
//
// The assets are plain HTML, CSS and JavaScript modules under assets/,
// embedded with go:embed: nothing to build, install or download. The API
// endpoints read the engine's typed SHOW/DESCRIBE/EXPLAIN results and the
// metrics history (metrics.History); statements run through the REST API,
// so the console can do nothing a REST client cannot.
package console

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"sort"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/metrics"
	"github.com/sqlstreams/sqlstreams/types"
)

//go:embed assets
var assets embed.FS

// Engine is what the console needs of the engine. *engine.Engine
// implements it.
type Engine interface {
	// Sources lists the streams or the tables (SHOW STREAMS|TABLES).
	Sources(kind catalog.Kind) []engine.SourceInfo
	// Queries lists the persistent queries with their status.
	Queries() []engine.QueryInfo
	// DescribeSource is DESCRIBE [EXTENDED] name.
	DescribeSource(name string, extended bool) (*engine.SourceDescription, bool)
	// ExplainQuery is EXPLAIN query_id, with the topology as a graph.
	ExplainQuery(id string) (*engine.Plan, bool)
	// Completions are the words the editor completes.
	Completions() engine.Completions
}

var _ Engine = (*engine.Engine)(nil)

// Paths the console serves: Index exactly, everything under Prefix.
const (
	Index  = "/"
	Prefix = "/console"
)

// Handler serves the web console. It is an http.Handler for Index and
// everything under Prefix.
type Handler struct {
	eng    Engine
	hist   *metrics.History
	static http.Handler
	index  []byte
}

// New returns the console over eng. hist is the metrics history the
// charts show (nil: no charts).
func New(eng Engine, hist *metrics.History) *Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		panic(err)
	}
	return &Handler{eng: eng, hist: hist, static: http.StripPrefix(Prefix+"/assets/", http.FileServer(http.FS(sub))), index: index}
}

// ServeHTTP serves the page, its assets and the console's API.
func (c *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == Index || p == Prefix || p == Prefix+"/":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'")
		w.Write(c.index)
	case strings.HasPrefix(p, Prefix+"/assets/"):
		w.Header().Set("Cache-Control", "no-cache")
		c.static.ServeHTTP(w, r)
	case strings.HasPrefix(p, Prefix+"/api/"):
		if r.Method != http.MethodGet {
			writeJSON(w, http.StatusMethodNotAllowed, apiError{"GET only"})
			return
		}
		c.api(w, r, strings.TrimPrefix(p, Prefix+"/api/"))
	default:
		writeJSON(w, http.StatusNotFound, apiError{"no such console page: " + p})
	}
}

type apiError struct {
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (c *Handler) api(w http.ResponseWriter, r *http.Request, name string) {
	switch name {
	case "catalog":
		writeJSON(w, http.StatusOK, c.catalog())
	case "source":
		d, ok := c.eng.DescribeSource(r.URL.Query().Get("name"), true)
		if !ok {
			writeJSON(w, http.StatusNotFound, apiError{"no stream or table " + r.URL.Query().Get("name")})
			return
		}
		writeJSON(w, http.StatusOK, source(d))
	case "queries":
		writeJSON(w, http.StatusOK, c.queries())
	case "plan":
		p, ok := c.eng.ExplainQuery(r.URL.Query().Get("id"))
		if !ok {
			writeJSON(w, http.StatusNotFound, apiError{"no query " + r.URL.Query().Get("id")})
			return
		}
		writeJSON(w, http.StatusOK, plan(p))
	case "history":
		h := history{IntervalMs: 0, Queries: map[string][]metrics.Point{}}
		if c.hist != nil {
			h.IntervalMs, h.Queries = c.hist.Interval().Milliseconds(), c.hist.Series()
		}
		writeJSON(w, http.StatusOK, h)
	case "completions":
		writeJSON(w, http.StatusOK, c.eng.Completions())
	default:
		writeJSON(w, http.StatusNotFound, apiError{"no such console endpoint: " + name})
	}
}

type history struct {
	IntervalMs int64                      `json:"intervalMs"`
	Queries    map[string][]metrics.Point `json:"queries"`
}

// column is a column as the console shows it.
type column struct {
	Name string `json:"name"`
	Type string `json:"type"`
	Key  bool   `json:"key,omitempty"`
}

func columns(cols []types.Column) []column {
	out := []column{}
	for _, c := range cols {
		if !c.Pseudo {
			out = append(out, column{Name: c.Name, Type: c.Type.String(), Key: c.Key})
		}
	}
	return out
}

// sourceJSON is a stream or table with its columns and queries.
type sourceJSON struct {
	engine.SourceInfo
	Kind            string             `json:"kind"`
	Columns         []column           `json:"columns"`
	TimestampColumn string             `json:"timestampColumn,omitempty"`
	WindowType      string             `json:"windowType,omitempty"`
	IsSource        bool               `json:"isSource"`
	Statement       string             `json:"statement"`
	Writer          *engine.QueryInfo  `json:"writer"`
	Readers         []engine.QueryInfo `json:"readers"`
	// Extended is DESCRIBE EXTENDED's printout, as "Property | Value" rows.
	Extended [][]string `json:"extended,omitempty"`
}

func source(d *engine.SourceDescription) sourceJSON {
	s := sourceJSON{
		SourceInfo: d.Source, Kind: d.Source.Kind.String(), Columns: columns(d.Columns),
		TimestampColumn: d.TimestampColumn, WindowType: string(d.WindowType), IsSource: d.IsSource,
		Statement: d.Statement, Writer: d.Writer, Readers: d.Readers,
	}
	if d.Extended {
		_, s.Extended = d.Table()
	}
	return s
}

func (c *Handler) catalog() []sourceJSON {
	out := []sourceJSON{}
	for _, kind := range []catalog.Kind{catalog.Stream, catalog.Table} {
		for _, info := range c.eng.Sources(kind) {
			if d, ok := c.eng.DescribeSource(info.Name, false); ok {
				out = append(out, source(d))
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// queryJSON is a persistent query with its latest sampled figures.
type queryJSON struct {
	engine.QueryInfo
	State string `json:"state"`
	// Latest is the latest metrics sample (rates, lag, restoration).
	Latest *metrics.Point `json:"latest"`
}

func (c *Handler) queries() []queryJSON {
	out := []queryJSON{}
	for _, q := range c.eng.Queries() {
		qj := queryJSON{QueryInfo: q, State: q.State()}
		if c.hist != nil {
			if p, ok := c.hist.Latest(q.ID); ok {
				qj.Latest = &p
				if p.RestoreTotal > 0 && p.Restored < p.RestoreTotal && qj.State == "RUNNING" {
					qj.State = "RESTORING"
				}
			}
		}
		out = append(out, qj)
	}
	return out
}

// planJSON is EXPLAIN of a running query.
type planJSON struct {
	ID          string              `json:"id"`
	SQL         string              `json:"sql"`
	Sink        string              `json:"sink"`
	Sources     []string            `json:"sources"`
	Columns     []column            `json:"columns"`
	Status      *engine.QueryStatus `json:"status"`
	AppID       string              `json:"appId"`
	Fingerprint string              `json:"fingerprint"`
	Graph       *engine.Graph       `json:"graph"`
	Text        string              `json:"text"`
}

func plan(p *engine.Plan) planJSON {
	return planJSON{
		ID: p.QueryID, SQL: p.SQL, Sink: p.Sink, Sources: p.Sources, Columns: columns(p.Columns),
		Status: p.Status, AppID: p.AppID, Fingerprint: p.Fingerprint, Graph: p.Graph, Text: p.Text,
	}
}
