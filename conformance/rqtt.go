package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/server/rest"
	"github.com/sqlstreams/sqlstreams/sql"
)

// RestCase is one case of ksqlDB's REST query-validation tests (RQTT,
// rest-query-validation-tests/*.json): statements sent to the REST
// server, and the responses expected back.
type RestCase struct {
	Case
	// Props are the test's "properties" as JSON values, sent as the
	// requests' streamsProperties.
	Props map[string]any
	// Responses are the expected responses in statement order: each
	// {"admin": entity}, {"query": [rows]} or {"queryProto": [rows]}.
	Responses []map[string]any
	// Error, when set, says the last statement should fail so.
	Error *RestError
	// WaitForPushQuery is inputConditions.waitForActivePushQuery: the
	// inputs are produced once the first query is running.
	WaitForPushQuery bool
	// VerifyOrder is outputConditions.verifyOrder: rows compared in
	// order, not as a multiset.
	VerifyOrder bool
	// ProtoPull is testPullWithProtoFormat: the queries run again over
	// /query-stream asking for protobuf rows.
	ProtoPull bool
}

// RestError is an RQTT expectedError: the Java class of ksqlDB's error
// entity, a message substring, an HTTP status.
type RestError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

type restNode struct {
	Name       string            `json:"name"`
	Format     []string          `json:"format"`
	Properties map[string]any    `json:"properties"`
	Statements []string          `json:"statements"`
	Inputs     []json.RawMessage `json:"inputs"`
	Outputs    []json.RawMessage `json:"outputs"`
	Topics     []json.RawMessage `json:"topics"`
	Responses  []map[string]any  `json:"responses"`
	Error      *RestError        `json:"expectedError"`
	Enabled    *bool             `json:"enabled"`
	InputCond  *struct {
		Wait bool `json:"waitForActivePushQuery"`
	} `json:"inputConditions"`
	OutputCond *struct {
		VerifyOrder bool `json:"verifyOrder"`
	} `json:"outputConditions"`
	Proto bool `json:"testPullWithProtoFormat"`
}

// LoadRQTT reads an RQTT file and expands each test over its "format"
// list, as ksqlDB's RestTestCaseBuilder does.
func LoadRQTT(path string) ([]RestCase, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &FileError{path, err}
	}
	var f struct {
		Tests []json.RawMessage `json:"tests"`
	}
	if err := json.Unmarshal(stripComments(b), &f); err != nil {
		return nil, &FileError{path, err}
	}
	if len(f.Tests) == 0 {
		return nil, &FileError{path, fmt.Errorf("no tests")}
	}
	base := filepath.Base(path)
	var out []RestCase
	for i, raw := range f.Tests {
		var t restNode
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&t); err != nil {
			return nil, &FileError{path, fmt.Errorf("test %d: %w", i+1, err)}
		}
		// The common fields as a QTT node reads them.
		var qn testNode
		if err := json.Unmarshal(raw, &qn); err != nil {
			return nil, &FileError{path, fmt.Errorf("test %d: %w", i+1, err)}
		}
		qn.Expected = &ExpectedError{} // RQTT tests need no inputs or outputs
		cs, err := expand(base, qn)
		if err != nil {
			return nil, &FileError{path, fmt.Errorf("test %d (%q): %w", i+1, t.Name, err)}
		}
		for _, c := range cs {
			c.Expected = nil
			rc := RestCase{Case: c, Props: t.Properties, Responses: t.Responses, Error: t.Error, ProtoPull: t.Proto}
			if t.InputCond != nil {
				rc.WaitForPushQuery = t.InputCond.Wait
			}
			if t.OutputCond != nil {
				rc.VerifyOrder = t.OutputCond.VerifyOrder
			}
			if rc.Props == nil {
				rc.Props = map[string]any{}
			}
			out = append(out, rc)
		}
	}
	return out, nil
}

// RunRQTT runs RQTT cases as ksqlDB's RestTestExecutor does, each on its
// own broker, engine and REST server (loopback HTTP): the statements
// before the first SELECT go to /ksql in one request, the inputs are
// produced at the partitions Java's producer picks, the persistent
// queries are waited for, then each SELECT goes to /query (and to
// /query-stream asking for protobuf when the case says so), and the
// responses are compared with the expected ones.
func RunRQTT(ctx context.Context, cases []RestCase, o Options) []Result {
	if o.Parallel <= 0 {
		o.Parallel = 2
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return runEach(len(cases), o, func(i int) Result {
		r := runRestCase(ctx, &cases[i], o)
		r.File, r.Name = cases[i].File, cases[i].Name
		r.Kind = "responses"
		if cases[i].Error != nil {
			r.Kind = "error"
		}
		return r
	})
}

// restResponse is one response the runner got: a /ksql entity, or the
// rows of a query.
type restResponse struct {
	kind   string // "admin", "query", "queryProto"
	entity map[string]any
	rows   []map[string]any
}

// restFailure is an error response of the REST server.
type restFailure struct {
	status int
	body   map[string]any
	raw    string
}

func (f *restFailure) Error() string { return fmt.Sprintf("HTTP %d: %s", f.status, oneLine(f.raw)) }

func (f *restFailure) message() string { s, _ := f.body["message"].(string); return s }

func runRestCase(parent context.Context, c *RestCase, o Options) (res Result) {
	if c.Disabled {
		return Result{Status: Skip, Reason: "disabled in the test file"}
	}
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			res = fail("runner panic", "%v", p)
		}
	}()
	e := &env{o: o}
	defer e.close()
	if err := e.start(ctx, needsRegistry(&c.Case)); err != nil {
		return fail("environment", "%v", err)
	}
	if err := e.createRestTopics(ctx, c); err != nil {
		return fail("environment", "creating topics: %v", err)
	}
	srv := rest.New(e.eng, rest.WithLogger(o.Logger))
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail("environment", "%v", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	// ksqlDB's RQTT server reads from the earliest offset unless a test
	// says otherwise (TestKsqlRestApp's base config).
	cl := &restClient{base: "http://" + ln.Addr().String(), props: map[string]any{"ksql.streams.auto.offset.reset": "earliest"}}
	for k, v := range c.Props {
		if strings.TrimPrefix(k, "ksql.streams.") == "auto.offset.reset" {
			delete(cl.props, "ksql.streams.auto.offset.reset")
		}
		cl.props[k] = v
	}

	admin, queries := splitRest(c.Statements)
	var responses []restResponse
	if len(admin) > 0 {
		entities, err := cl.ksql(ctx, strings.Join(admin, "\n"))
		if err != nil {
			return restError(c, err)
		}
		for _, ent := range entities {
			responses = append(responses, restResponse{kind: "admin", entity: ent})
		}
	}
	if !c.WaitForPushQuery {
		if err := e.produceRest(ctx, c); err != nil {
			return fail("producing input", "%v", err)
		}
	}
	if c.Error == nil && len(c.Responses) > len(admin) {
		if why, err := e.waitCaughtUp(ctx); err != nil || why != "" {
			return fail("timeout", "the persistent queries did not consume all input: %v %s", err, why)
		}
	}
	time.Sleep(100 * time.Millisecond)
	// As ksqlDB's runner: every query runs; one that fails must fail as
	// expected, and a case expecting an error must have no query that
	// answered.
	answered := 0
	for i, q := range queries {
		var rows []map[string]any
		var err error
		if c.WaitForPushQuery && i == 0 {
			rows, err = cl.queryWhile(ctx, q, func() error {
				if err := waitActivePush(ctx, srv); err != nil {
					return err
				}
				return e.produceRest(ctx, c)
			})
		} else {
			rows, err = cl.query(ctx, q)
		}
		if err != nil {
			var rf *restFailure
			if !errors.As(err, &rf) {
				return fail("query", "%s: %v", oneLine(q), err)
			}
			if r := restError(c, err); r.Status != Pass {
				return r
			}
			continue
		}
		answered++
		responses = append(responses, restResponse{kind: "query", rows: rows})
	}
	if answered > 0 && c.Error != nil {
		return fail("no error", "wanted an error (%s %q), the queries answered", c.Error.Type, c.Error.Message)
	}
	if c.ProtoPull {
		for _, q := range queries {
			rows, err := cl.queryProto(ctx, q)
			if err != nil {
				continue
			}
			responses = append(responses, restResponse{kind: "queryProto", rows: rows})
		}
	}
	if r := e.verify(ctx, &c.Case); r.Status != Pass {
		return r
	}
	if d := verifyResponses(responses, c.Responses, c.Statements, c.VerifyOrder); d != "" {
		return fail("responses differ", "%s", d)
	}
	return Result{Status: Pass}
}

// splitRest splits the statements as ksqlDB's runner does: the queries
// are the statements from the first one starting "SELECT ".
func splitRest(stmts []string) (admin, queries []string) {
	for i, s := range stmts {
		if strings.HasPrefix(s, "SELECT ") {
			return stmts[:i], stmts[i:]
		}
	}
	return stmts, nil
}

// restError judges an error response against the case's expectedError
// (ksqlDB's ExpectedErrorNode): the entity's type, a message substring
// and the HTTP status.
func restError(c *RestCase, err error) Result {
	var rf *restFailure
	if !errors.As(err, &rf) {
		return fail("request", "%v", err)
	}
	if c.Error == nil {
		return fail(classifyRest(rf), "statement failed: %s", rf.Error())
	}
	var why []string
	if c.Error.Status != 0 && rf.status != c.Error.Status {
		why = append(why, fmt.Sprintf("status %d, want %d", rf.status, c.Error.Status))
	}
	typ, _ := rf.body["@type"].(string)
	switch {
	case strings.HasSuffix(c.Error.Type, ".KsqlStatementErrorMessage"):
		if typ != "statement_error" {
			why = append(why, fmt.Sprintf("@type %q, want statement_error", typ))
		}
	case strings.HasSuffix(c.Error.Type, ".KsqlErrorMessage"):
		if typ == "" {
			why = append(why, "not a KsqlErrorMessage")
		}
	}
	if c.Error.Message != "" && !strings.Contains(rf.message(), c.Error.Message) {
		why = append(why, fmt.Sprintf("message %q does not contain %q", rf.message(), c.Error.Message))
	}
	if len(why) > 0 {
		return fail("error differs", "%s", strings.Join(why, "; "))
	}
	return Result{Status: Pass}
}

func classifyRest(rf *restFailure) string {
	m := strings.ToLower(rf.message())
	switch {
	case strings.Contains(m, "not supported"):
		return "not supported"
	case strings.Contains(m, "syntax error") || strings.Contains(m, "parse"):
		return "parse error"
	}
	return "statement refused"
}

// waitActivePush waits until the server runs a push query (ksqlDB's
// waitForActivePushQuery). ksqlDB's runner gives up after 45 s and
// produces the inputs anyway (a query with LIMIT 0 has ended before);
// this one gives up after 5 s, which is the same outcome sooner.
func waitActivePush(ctx context.Context, srv *rest.Server) error {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if srv.ActivePushQueries() > 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// restClient speaks to the REST server as ksqlDB's KsqlRestClient does.
type restClient struct {
	base  string
	props map[string]any
}

func (c *restClient) post(ctx context.Context, path, accept string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", accept)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		rf := &restFailure{status: resp.StatusCode, raw: string(raw)}
		_ = decodeNumbers(raw, &rf.body)
		return nil, rf
	}
	return resp, nil
}

func decodeNumbers(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	return d.Decode(v)
}

// ksql sends statements to /ksql and returns the entities.
func (c *restClient) ksql(ctx context.Context, text string) ([]map[string]any, error) {
	var out []map[string]any
	err := c.postRead(ctx, "/ksql", "application/json", map[string]any{"ksql": text, "streamsProperties": c.props}, &out)
	return out, err
}

// postRead posts body to path and decodes the whole answer, a JSON
// value, into v (numbers kept as json.Number).
func (c *restClient) postRead(ctx context.Context, path, accept string, body, v any) error {
	resp, err := c.post(ctx, path, accept, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := decodeNumbers(raw, v); err != nil {
		return fmt.Errorf("%s answer %q: %w", path, raw, err)
	}
	return nil
}

// query sends a SELECT to /query and reads its rows to the end.
func (c *restClient) query(ctx context.Context, text string) ([]map[string]any, error) {
	return c.queryWhile(ctx, text, nil)
}

// queryWhile sends a SELECT to /query; once the header arrived it runs
// during (when set), then reads the rows to the end. ksqlDB's runner
// gives a query 10 s… its client waits for the response's end.
func (c *restClient) queryWhile(ctx context.Context, text string, during func() error) ([]map[string]any, error) {
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := c.post(qctx, "/query", "application/json", map[string]any{"ksql": text, "streamsProperties": c.props})
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	d := json.NewDecoder(resp.Body)
	d.UseNumber()
	// The body is one JSON array, streamed.
	if tok, err := d.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("/query answer does not start with '[': %v %v", tok, err)
	}
	var rows []map[string]any
	first := true
	for d.More() {
		var row map[string]any
		if err := d.Decode(&row); err != nil {
			return rows, fmt.Errorf("/query row %d: %w", len(rows), err)
		}
		rows = append(rows, row)
		if first && during != nil {
			first = false
			if err := during(); err != nil {
				return rows, err
			}
		}
	}
	return rows, nil
}

// queryProto sends a SELECT to /query-stream asking for protobuf rows
// (application/vnd.ksql.v1+protobuf) and reads the answer, a JSON array.
func (c *restClient) queryProto(ctx context.Context, text string) ([]map[string]any, error) {
	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var rows []map[string]any
	err := c.postRead(qctx, "/query-stream", "application/vnd.ksql.v1+protobuf", map[string]any{"sql": text, "properties": c.props}, &rows)
	return rows, err
}

// createRestTopics creates the topics ksqlDB's RQTT runner creates
// (TestCaseBuilderUtil.getAllTopics): those the test lists (their count,
// else one), those CREATE STREAM|TABLE statements name (their
// PARTITIONS, else four) and those of input and output records (four).
func (e *env) createRestTopics(ctx context.Context, c *RestCase) error {
	parts := map[string]int32{}
	for _, t := range c.Topics {
		n := t.Partitions
		if n <= 0 {
			n = 1
		}
		parts[t.Name] = n
	}
	for _, text := range c.Statements {
		for _, one := range sql.Split(text) {
			st, err := sql.Parse(one)
			if err != nil {
				continue
			}
			cs, ok := st.(*sql.CreateSource)
			if !ok {
				continue
			}
			topic, ok := cs.Props["KAFKA_TOPIC"]
			if !ok {
				continue
			}
			if _, listed := parts[topic.Value]; listed {
				continue
			}
			n := int32(ksqlDefaultPartitions)
			if p, ok := cs.Props["PARTITIONS"]; ok {
				if v, err := strconv.Atoi(p.Value); err == nil && v > 0 {
					n = int32(v)
				}
			}
			parts[topic.Value] = n
		}
	}
	for _, r := range append(append([]Record(nil), c.Inputs...), c.Outputs...) {
		if _, ok := parts[r.Topic]; !ok {
			parts[r.Topic] = ksqlDefaultPartitions
		}
	}
	for t, n := range parts {
		resp, err := e.adm.CreateTopic(ctx, n, 1, nil, t)
		if err != nil {
			return err
		}
		if resp.Err != nil {
			return fmt.Errorf("%s: %w", t, resp.Err)
		}
	}
	return e.registerSchemas(ctx, &c.Case)
}

// produceRest writes the inputs as ksqlDB's RQTT runner does, through a
// Java producer per topic: a keyed record goes to the partition of the
// murmur2 hash of its key bytes, a record without key to partition 0
// (Java's sticky choice), each with its timestamp (0 when not given).
func (e *env) produceRest(ctx context.Context, c *RestCase) error {
	cat := e.eng.Catalog()
	parts, err := e.partitionCounts(ctx, &c.Case)
	if err != nil {
		return err
	}
	keyed := kgo.StickyKeyPartitioner(nil)
	var recs []*kgo.Record
	for i, r := range c.Inputs {
		src := sourceFor(cat, r.Topic, false)
		k, err := encode(src, true, r.Key, e.registered(r.Topic+"-key"))
		if err != nil {
			return fmt.Errorf("input %d key: %w", i+1, err)
		}
		v, err := encode(src, false, r.Value, e.registered(r.Topic+"-value"))
		if err != nil {
			return fmt.Errorf("input %d value: %w", i+1, err)
		}
		if r.Window != nil && src != nil && src.Windowed() {
			k = src.WindowType.AppendWindowKey(k, r.Window.Start, r.Window.End)
		}
		var ts int64
		if r.Timestamp != nil {
			ts = *r.Timestamp
		}
		rec := &kgo.Record{Topic: r.Topic, Key: k, Value: v, Timestamp: time.UnixMilli(ts)}
		if n := parts[r.Topic]; n > 1 && k != nil {
			rec.Partition = int32(keyed.ForTopic(r.Topic).Partition(rec, int(n)))
		}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		return nil
	}
	return e.cl.ProduceSync(ctx, recs...).FirstErr()
}

// verifyResponses compares the responses as ksqlDB's runner does: each
// expected response against the actual one at its place; an expected
// object names only the fields it checks; a query's rows' "columns" are
// compared as a multiset unless order is verified.
func verifyResponses(actual []restResponse, expected []map[string]any, stmts []string, verifyOrder bool) string {
	if len(actual) < len(expected) {
		return fmt.Sprintf("not enough responses: got %d, want %d", len(actual), len(expected))
	}
	for i, exp := range expected {
		if len(exp) != 1 {
			return fmt.Sprintf("responses[%d]: expected response has %d keys", i, len(exp))
		}
		var kind string
		var payload any
		for k, v := range exp {
			kind, payload = k, v
		}
		a := actual[i]
		if a.kind != kind {
			return fmt.Sprintf("responses[%d]: got a %s response, want %s", i, a.kind, kind)
		}
		stmt := ""
		if i < len(stmts) {
			stmt = stmts[i]
		}
		m := &matcher{stmt: stmt, verifyOrder: verifyOrder}
		switch kind {
		case "admin":
			em, ok := payload.(map[string]any)
			if !ok {
				return fmt.Sprintf("responses[%d]: admin payload is not an object", i)
			}
			m.fields(a.entity, em, fmt.Sprintf("responses[%d]->admin", i))
		case "query", "queryProto":
			rows, ok := payload.([]any)
			if !ok {
				return fmt.Sprintf("responses[%d]: query payload is not an array", i)
			}
			if len(rows) != len(a.rows) {
				return fmt.Sprintf("responses[%d]: row count mismatch: want %d, got %d\n  want %s\n  got  %s", i, len(rows), len(a.rows), showJSON(rows), showJSON(a.rows))
			}
			var pr *protoRows
			if kind == "queryProto" {
				var err error
				if pr, err = newProtoRows(a.rows); err != nil {
					return fmt.Sprintf("responses[%d]: %v", i, err)
				}
			}
			for j, r := range rows {
				er, ok := r.(map[string]any)
				if !ok {
					return fmt.Sprintf("responses[%d]: row %d is not an object", i, j)
				}
				if text, ok := er["row"].(string); ok && pr != nil {
					// A protobuf row, in protobuf's text format.
					path := fmt.Sprintf("responses[%d]->queryProto[%d]->row", i, j)
					want, err := pr.expected(text)
					if err != nil {
						return fmt.Sprintf("%s: %v", path, err)
					}
					got, err := pr.actual(a.rows[j]["row"])
					if err != nil {
						return fmt.Sprintf("%s: %v", path, err)
					}
					if verifyOrder {
						if got != want {
							m.err = fmt.Sprintf("Response mismatch at %s: got %s, want %s", path, got, want)
							break
						}
						continue
					}
					m.actualRows = append(m.actualRows, got)
					m.wantRows = append(m.wantRows, want)
					m.paths = append(m.paths, path)
					continue
				}
				m.fields(a.rows[j], er, fmt.Sprintf("responses[%d]->query[%d]", i, j))
				if m.err != "" {
					break
				}
			}
		default:
			return fmt.Sprintf("responses[%d]: unknown response type %q", i, kind)
		}
		if m.err == "" {
			m.multiset()
		}
		if m.err != "" {
			if kind == "query" {
				return m.err + fmt.Sprintf("\n  want %s\n  got  %s", showJSON(payload), showJSON(a.rows))
			}
			return m.err
		}
	}
	return ""
}

func showJSON(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 1500 {
		s = s[:1500] + "…"
	}
	return s
}

// matcher is ksqlDB's matchResponseFields: it collects query rows'
// columns to compare as multisets.
type matcher struct {
	stmt        string
	verifyOrder bool
	err         string
	actualRows  []any
	wantRows    []any
	paths       []string
}

func (m *matcher) fields(actual, expected map[string]any, path string) {
	keys := make([]string, 0, len(expected))
	for k := range expected {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if m.err != "" {
			return
		}
		ev := expected[k]
		name, op := k, ""
		if i := strings.Index(k, "|"); i >= 0 {
			name, op = k[:i], strings.ToUpper(k[i+1:])
		}
		if s, ok := ev.(string); ok {
			ev = strings.ReplaceAll(s, "{STATEMENT}", m.stmt)
		}
		av, ok := actual[name]
		if !ok {
			m.err = fmt.Sprintf("Response mismatch at %s: no field %q in %s", path, name, showJSON(actual))
			return
		}
		np := path + "->" + name
		if em, ok := ev.(map[string]any); ok {
			am, ok := av.(map[string]any)
			if !ok {
				m.err = fmt.Sprintf("Response mismatch at %s: got %s, want an object", np, showJSON(av))
				return
			}
			m.fields(am, em, np)
			continue
		}
		if op == "STARTS_WITH" {
			as, aok := av.(string)
			es, _ := ev.(string)
			if !aok || !strings.HasPrefix(as, es) {
				m.err = fmt.Sprintf("Response mismatch at %s: %s does not start with %q", np, showJSON(av), es)
			}
			continue
		}
		if !m.verifyOrder && strings.Contains(np, "query") && strings.Contains(np, "row") && strings.EqualFold(name, "columns") {
			m.actualRows = append(m.actualRows, av)
			m.wantRows = append(m.wantRows, ev)
			m.paths = append(m.paths, np)
			continue
		}
		if !javaEqual(av, ev) {
			m.err = fmt.Sprintf("Response mismatch at %s: got %s, want %s", np, showJSON(av), showJSON(ev))
		}
	}
}

// multiset compares the collected rows as multisets.
func (m *matcher) multiset() {
	used := make([]bool, len(m.wantRows))
	var missing []any
	for i, a := range m.actualRows {
		found := false
		for j, w := range m.wantRows {
			if !used[j] && javaEqual(a, w) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			missing = append(missing, a)
			if m.err == "" {
				m.err = fmt.Sprintf("Response mismatch at %s: row %s not expected", m.paths[i], showJSON(a))
			}
		}
	}
}

// javaEqual is Java's equals over the values Jackson reads from the JSON
// (ksqlDB's TestJsonMapper): integers equal integers of the same value,
// floating-point numbers equal floating-point numbers of the same value,
// an integer never equals a floating-point number; lists in order, maps
// by keys.
func javaEqual(a, b any) bool {
	switch b := b.(type) {
	case json.Number:
		an, ok := a.(json.Number)
		if !ok {
			return false
		}
		ai, bi := isIntegral(string(an)), isIntegral(string(b))
		if ai != bi {
			return false
		}
		if ai {
			x, ok1 := new(big.Int).SetString(string(an), 10)
			y, ok2 := new(big.Int).SetString(string(b), 10)
			return ok1 && ok2 && x.Cmp(y) == 0
		}
		x, err1 := strconv.ParseFloat(string(an), 64)
		y, err2 := strconv.ParseFloat(string(b), 64)
		return err1 == nil && err2 == nil && x == y
	case []any:
		al, ok := a.([]any)
		if !ok || len(al) != len(b) {
			return false
		}
		for i := range b {
			if !javaEqual(al[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		am, ok := a.(map[string]any)
		if !ok || len(am) != len(b) {
			return false
		}
		for k, v := range b {
			av, ok := am[k]
			if !ok || !javaEqual(av, v) {
				return false
			}
		}
		return true
	default:
		return a == any(b)
	}
}

// stripComments removes // and /* */ comments outside strings, which
// Jackson (ALLOW_COMMENTS) accepts in ksqlDB's files and encoding/json
// does not.
func stripComments(b []byte) []byte {
	out := make([]byte, 0, len(b))
	inStr := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inStr {
			out = append(out, c)
			if c == '\\' && i+1 < len(b) {
				i++
				out = append(out, b[i])
			} else if c == '"' {
				inStr = false
			}
			continue
		}
		switch {
		case c == '"':
			inStr = true
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			if i < len(b) {
				out = append(out, '\n')
			}
			continue
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				return out
			}
			i += end + 3
			continue
		}
		out = append(out, c)
	}
	return out
}
