package rest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/broker"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/server/rest"
)

// The tests share one embedded broker and one engine; each test uses its
// own streams and topics.
var testEngine *engine.Engine

// testBroker is the embedded broker's address.
var testBroker string

func TestMain(m *testing.M) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("REST_TEST_LOG") != "" {
		quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	b, err := broker.Start(ctx, broker.Config{Addr: "127.0.0.1:0", Logger: quiet})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the broker:", err)
		os.Exit(1)
	}
	testBroker = b.Addr()
	stateDir, err := os.MkdirTemp("", "rest-test-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	eng, err := engine.Open(ctx, engine.Config{
		Kafka: kafka.Plain(b.Addr()), ServiceID: "resttest", InstanceID: "rest-test",
		CommitInterval: 50 * time.Millisecond, Logger: quiet, StateDir: stateDir,
	})
	cancel()
	if err != nil {
		b.Close()
		fmt.Fprintln(os.Stderr, "opening the engine:", err)
		os.Exit(1)
	}
	testEngine = eng
	code := m.Run()
	eng.Close()
	b.Close()
	os.RemoveAll(stateDir)
	os.Exit(code)
}

// fixture is a REST server over the shared engine.
type fixture struct {
	t   *testing.T
	srv *rest.Server
	url string
	// suffix makes the test's stream, table and topic names unique when
	// it runs again in the same process (go test -count=n): sub appends
	// it to every name testNames matches.
	suffix string
}

var (
	runsMu sync.Mutex
	runs   = map[string]int{}
)

// testNames are the stream, table and topic names the tests create.
var testNames = regexp.MustCompile(`\b(?i:KS_SRC|KS_BIG|KE_SRC|KM_SRC|KM_OUT|QS_SRC|QJ_SRC|QL_SRC|IS_DST|PT_USERS|H2_SRC|CURL_SRC|PL_SRC|WIN_SRC|WIN_T|IW_SRC|IW_DST|RQ_[A-Z0-9]+)\b`)

// sub gives the names in s this run's suffix.
func (f *fixture) sub(s string) string {
	if f.suffix == "" {
		return s
	}
	return testNames.ReplaceAllStringFunc(s, func(m string) string {
		if m == strings.ToLower(m) {
			return m + strings.ToLower(f.suffix)
		}
		return m + f.suffix
	})
}

func newFixture(t *testing.T, opts ...rest.Opt) *fixture {
	t.Helper()
	opts = append([]rest.Opt{rest.WithInfo(rest.Info{Version: "test", ServiceID: "resttest", KafkaClusterID: broker.ClusterID})}, opts...)
	srv := rest.New(testEngine, opts...)
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	return &fixture{t: t, srv: srv, url: hs.URL, suffix: runSuffix(t)}
}

// runSuffix is "" the first time a test runs in this process, then _R2, _R3, ….
func runSuffix(t *testing.T) string {
	runsMu.Lock()
	defer runsMu.Unlock()
	runs[t.Name()]++
	if n := runs[t.Name()]; n > 1 {
		return fmt.Sprintf("_R%d", n)
	}
	return ""
}

func testCtx(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// do sends a request with a JSON body (a string is sent as it is) and
// returns the response with its body read.
func (f *fixture) do(method, path string, body any, header ...string) (*http.Response, []byte) {
	f.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(f.sub(b))
	default:
		j, err := json.Marshal(b)
		if err != nil {
			f.t.Fatal(err)
		}
		r = strings.NewReader(f.sub(string(j)))
	}
	req, err := http.NewRequestWithContext(testCtx(f.t, 30*time.Second), method, f.url+f.sub(path), r)
	if err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return resp, b
}

// ksql runs statements on /ksql, expects 200 and returns the entities.
func (f *fixture) ksql(stmts string, props map[string]any) []map[string]any {
	f.t.Helper()
	resp, body := f.do("POST", "/ksql", map[string]any{"ksql": stmts, "streamsProperties": props})
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("/ksql %q: %s: %s", stmts, resp.Status, body)
	}
	var out []map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		f.t.Fatalf("/ksql %q: %v in %s", stmts, err, body)
	}
	return out
}

// ksqlError runs statements on /ksql, expects status and returns the
// error body.
func (f *fixture) ksqlError(stmts string, status int) map[string]any {
	f.t.Helper()
	resp, body := f.do("POST", "/ksql", map[string]any{"ksql": stmts})
	if resp.StatusCode != status {
		f.t.Fatalf("/ksql %q: got %s, want %d: %s", stmts, resp.Status, status, body)
	}
	return decodeObject(f.t, body)
}

func decodeObject(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return m
}

// stream is an open streaming response read line by line.
type stream struct {
	t      *testing.T
	resp   *http.Response
	lines  *bufio.Reader
	cancel context.CancelFunc
}

// openStream posts body to path and returns the open response.
func (f *fixture) openStream(path string, body any, header ...string) *stream {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	j, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, "POST", f.url+path, strings.NewReader(f.sub(string(j))))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		f.t.Fatalf("POST %s: %v", path, err)
	}
	s := &stream{t: f.t, resp: resp, lines: bufio.NewReader(resp.Body), cancel: cancel}
	f.t.Cleanup(s.close)
	return s
}

func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// line reads the next line, failing the test after d.
func (s *stream) line(d time.Duration) string {
	s.t.Helper()
	type result struct {
		l   string
		err error
	}
	ch := make(chan result, 1)
	go func() {
		l, err := s.lines.ReadString('\n')
		ch <- result{l, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			s.t.Fatalf("reading the stream: %v (after %q)", r.err, r.l)
		}
		return strings.TrimRight(r.l, "\n")
	case <-time.After(d):
		s.t.Fatalf("no line within %v", d)
		return ""
	}
}

// eventually retries check until it returns nil or d passes.
func eventually(t *testing.T, d time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get returns a nested value of a decoded JSON document: path elements
// are object keys or array indexes.
func get(v any, path ...any) any {
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[p]
		case int:
			l, _ := v.([]any)
			if p >= len(l) {
				return nil
			}
			v = l[p]
		}
	}
	return v
}

func newLineReader(r io.Reader) *bufio.Reader { return bufio.NewReader(r) }
