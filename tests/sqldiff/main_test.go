// Package sqldiff holds differential tests of the SQL beyond ksqlDB's
// dialect (issue 33): random input runs through a server with the
// embedded broker, killed with SIGKILL while output flows and restarted,
// and the final result (the output topic read as a changelog, and a pull
// query where the result is a table) must equal SQLite's answer to the
// same SQL over the same input (the sqlite3 command).
package sqldiff

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// env is one test's server, connection and Kafka client.
type env struct {
	t    *testing.T
	ctx  context.Context
	s    *testserver.Server
	conn *pgx.Conn
	kc   *kgo.Client
}

func start(t *testing.T, ctx context.Context) *env {
	t.Helper()
	var opts []testserver.Option
	// SQLDIFF_KEEP=dir keeps each test's server data directory (its
	// log, the broker's data, the state) under dir, for a post-mortem.
	if d := os.Getenv("SQLDIFF_KEEP"); d != "" {
		opts = append(opts, testserver.DataDir(filepath.Join(d, strings.ReplaceAll(t.Name(), "/", "_"))))
	}
	e := &env{t: t, ctx: ctx, s: testserver.Start(t, opts...)}
	e.connect()
	kc, err := kgo.NewClient(kgo.SeedBrokers(e.s.KafkaAddr), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	e.kc = kc
	return e
}

func (e *env) connect() {
	e.t.Helper()
	conn, err := pgx.Connect(e.ctx, "postgres://sqlstreams@"+e.s.PGAddr+"/sqlstreams?sslmode=disable")
	if err != nil {
		e.t.Fatalf("connecting: %v", err)
	}
	e.t.Cleanup(func() { conn.Close(context.Background()) })
	e.conn = conn
}

// crash kills the server with SIGKILL and starts it again.
func (e *env) crash() {
	e.t.Helper()
	e.s.Kill()
	if err := e.s.Restart(); err != nil {
		e.t.Fatal(err)
	}
	e.connect()
}

func (e *env) exec(q string) {
	e.t.Helper()
	if _, err := e.conn.Exec(e.ctx, q); err != nil {
		e.t.Fatalf("%s: %v", q, err)
	}
}

// rows runs a query and returns its rows as text, "|"-joined, NULL for
// null.
func (e *env) rows(q string) ([]string, error) {
	rs, err := e.conn.Query(e.ctx, q, pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		vals := rs.RawValues()
		parts := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				parts[i] = "NULL"
			} else {
				parts[i] = string(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out, rs.Err()
}

func (e *env) produce(recs []*kgo.Record) {
	e.t.Helper()
	if err := e.kc.ProduceSync(e.ctx, recs...).FirstErr(); err != nil {
		e.t.Fatalf("producing: %v", err)
	}
}

// eventually retries get until its rows, sorted, equal want (sorted), for
// up to 60 s, then reports the difference.
func (e *env) eventually(what string, want []string, get func() ([]string, error)) {
	e.t.Helper()
	w := slices.Clone(want)
	slices.Sort(w)
	deadline := time.Now().Add(60 * time.Second)
	for {
		got, err := get()
		slices.Sort(got)
		if err == nil && slices.Equal(got, w) {
			return
		}
		if time.Now().After(deadline) {
			if err != nil {
				e.t.Errorf("%s: %v", what, err)
				return
			}
			e.t.Errorf("%s: %d rows, SQLite %d; first differences:\n%s", what, len(got), len(w), diff(got, w))
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// pull compares a pull query's rows with want.
func (e *env) pull(q string, want []string) {
	e.t.Helper()
	e.eventually(q, want, func() ([]string, error) { return e.rows(q) })
}

// changelog reads topic from the start to its end (read_committed) as a
// table's changelog: the last value per record key, tombstones deleting.
// keyTrim bytes at the end of each key (a window) are left out of the key
// text that row() gets.
func (e *env) changelog(topic string, keyTrim int, row func(key string, v map[string]any) string) ([]string, error) {
	last := map[string][]byte{}
	var order []string
	if err := e.read(topic, func(r *kgo.Record) {
		k := string(r.Key)
		if _, ok := last[k]; !ok {
			order = append(order, k)
		}
		last[k] = r.Value
	}); err != nil {
		return nil, err
	}
	var out []string
	for _, k := range order {
		v := last[k]
		if v == nil {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(v, &m); err != nil {
			return nil, fmt.Errorf("%s: value %s: %v", topic, v, err)
		}
		out = append(out, row(k[:len(k)-keyTrim], m))
	}
	return out, nil
}

// read calls f with each record of topic from its start, read_committed,
// until no more come for a while (the callers retry until the result is
// what they want).
func (e *env) read(topic string, f func(*kgo.Record)) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.s.KafkaAddr), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return err
	}
	defer cl.Close()
	for idle := 0; idle < 3; {
		ctx, cancel := context.WithTimeout(e.ctx, 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			f(r)
		})
		if n == 0 {
			idle++
		} else {
			idle = 0
		}
	}
	return nil
}

// sqlite runs script with the sqlite3 command over a new database and
// returns its output lines by section: a line "#NAME" starts NAME.
func sqlite(t *testing.T, ctx context.Context, script string) map[string][]string {
	t.Helper()
	bin := testtool.Need(t, "sqlite3", "apt-get install sqlite3; scripts/deps.sh does")
	cmd := exec.CommandContext(ctx, bin, filepath.Join(t.TempDir(), "oracle.db"))
	cmd.Stdin = strings.NewReader(".nullvalue NULL\n" + script)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("sqlite3: %v\n%s", err, out.String())
	}
	want := map[string][]string{}
	var cur string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(l, "#") {
			cur = l[1:]
			want[cur] = []string{}
			continue
		}
		want[cur] = append(want[cur], l)
	}
	return want
}

// diff lists the first lines only one of two sorted lists has.
func diff(got, want []string) string {
	var b strings.Builder
	i, j, n := 0, 0, 0
	for (i < len(got) || j < len(want)) && n < 10 {
		switch {
		case j >= len(want) || (i < len(got) && got[i] < want[j]):
			fmt.Fprintf(&b, "  only ours:   %s\n", got[i])
			i++
			n++
		case i >= len(got) || want[j] < got[i]:
			fmt.Fprintf(&b, "  only SQLite: %s\n", want[j])
			j++
			n++
		default:
			i++
			j++
		}
	}
	return b.String()
}

// text renders a decoded JSON value as SQLite prints it.
func text(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case float64:
		return strconv.FormatInt(int64(v), 10)
	}
	return fmt.Sprint(v)
}

// waitOutput waits until topic holds at least n records (read
// uncommitted), so that a crash comes while output flows.
func (e *env) waitOutput(topic string, n int64) {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(e.s.KafkaAddr), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			e.t.Fatal(err)
		}
		got := int64(0)
		ctx, cancel := context.WithTimeout(e.ctx, 500*time.Millisecond)
		cl.PollFetches(ctx).EachRecord(func(*kgo.Record) { got++ })
		cancel()
		cl.Close()
		if got >= n {
			return
		}
	}
	e.t.Fatalf("%s: fewer than %d records after 60 s", topic, n)
}

// stream reads topic from the start to its end (read_committed) as a
// stream: one line per record, its key then the named value columns.
func (e *env) stream(topic string, cols ...string) ([]string, error) {
	return e.streamRows(topic, func(m map[string]any) []string {
		parts := make([]string, len(cols))
		for i, c := range cols {
			parts[i] = text(m[c])
		}
		return parts
	})
}

// streamRows is stream with the value's columns rendered by row.
func (e *env) streamRows(topic string, row func(map[string]any) []string) ([]string, error) {
	var out []string
	var derr error
	err := e.read(topic, func(r *kgo.Record) {
		var m map[string]any
		if err := json.Unmarshal(r.Value, &m); err != nil {
			derr = fmt.Errorf("%s: value %s: %v", topic, r.Value, err)
			return
		}
		out = append(out, strings.Join(append([]string{string(r.Key)}, row(m)...), "|"))
	})
	if err == nil {
		err = derr
	}
	return out, err
}

// keyCols renders a changelog row (for changelog) as its key, then the
// named value columns, "|"-joined.
func keyCols(names ...string) func(string, map[string]any) string {
	return func(k string, v map[string]any) string {
		parts := []string{k}
		for _, n := range names {
			parts = append(parts, text(v[n]))
		}
		return strings.Join(parts, "|")
	}
}
