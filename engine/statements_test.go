package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/engine/enginetest"
	"github.com/sqlstreams/sqlstreams/sql"
)

// TestStatements runs the engine's catalog statements without a broker
// (engine.Config.Offline over enginetest's memory topics and command
// topic): every statement is validated, planned, recorded and
// registered as on a server, and its queries are built but not run.
// Files under testdata/statements hold the cases; -rewrite regenerates
// their outputs. Directives:
//
//	topic name=<t> partitions=<n>   a topic made outside the engine
//	exec                            statements in, each one's outcome out
//	                                (tag, change, typed result or error,
//	                                and the topology of a query started)
//	topics                          the topics, partitions and configs
//	commands                        the command topic: statements, plans
//	restart                         a new engine replaying the command
//	                                topic; its queries and fingerprints
//	                                must be those before
func TestStatements(t *testing.T) {
	datadriven.Walk(t, "testdata/statements", func(t *testing.T, path string) {
		topics, cmds := enginetest.NewTopics(), enginetest.NewCommandTopic()
		dir := t.TempDir()
		open := func() *engine.Engine {
			cfg := enginetest.Config(topics, cmds, filepath.Join(dir, "state"))
			cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			eng, err := engine.Open(context.Background(), cfg)
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			return eng
		}
		eng := open()
		defer func() { eng.Close() }()
		sess := engine.NewSession()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			switch d.Cmd {
			case "topic":
				var name string
				var parts int
				d.ScanArgs(t, "name", &name)
				d.ScanArgs(t, "partitions", &parts)
				topics.Add(name, int32(parts))
				return ""
			case "exec":
				var b strings.Builder
				for _, text := range sql.Split(d.Input) {
					if strings.TrimSpace(text) == "" {
						continue
					}
					execOne(ctx, t, &b, eng, sess, text, d.HasArg("topology"))
				}
				return b.String()
			case "topics":
				var b strings.Builder
				for _, name := range topics.Names() {
					tp, _ := topics.Get(name)
					fmt.Fprintf(&b, "%s partitions=%d", name, tp.Partitions)
					keys := make([]string, 0, len(tp.Configs))
					for k := range tp.Configs {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					for _, k := range keys {
						fmt.Fprintf(&b, " %s=%s", k, tp.Configs[k])
					}
					b.WriteString("\n")
				}
				return b.String()
			case "commands":
				var b strings.Builder
				for i, c := range cmds.Commands() {
					plan := "no plan"
					if len(c.Plan) > 0 {
						plan = "plan"
					}
					fmt.Fprintf(&b, "%d %s (%s)\n", 2*i, strings.TrimSpace(c.Statement), plan)
				}
				return b.String()
			case "restart":
				before := queryPrints(eng)
				eng.Close()
				eng = open()
				after := queryPrints(eng)
				if before != after {
					t.Fatalf("the queries replayed differ:\nbefore:\n%s\nafter:\n%s", before, after)
				}
				return after
			}
			t.Fatalf("unknown directive %q", d.Cmd)
			return ""
		})
	})
}

// execOne runs one statement and writes its outcome.
func execOne(ctx context.Context, t *testing.T, b *strings.Builder, eng *engine.Engine, sess *engine.Session, text string, topology bool) {
	res, err := eng.Execute(ctx, sess, text, discard{})
	if err != nil {
		var se *sql.Error
		if errors.As(err, &se) {
			fmt.Fprintf(b, "error %s: %s\n", se.Code, se.Error())
		} else {
			fmt.Fprintf(b, "error: %v\n", err)
		}
		return
	}
	b.WriteString(res.Tag + "\n")
	if c := res.Change; c != nil {
		fmt.Fprintf(b, "change:")
		if c.Source != "" {
			fmt.Fprintf(b, " %s %s topic=%s", c.Kind, c.Source, c.Topic)
		}
		if c.Existed {
			b.WriteString(" existed")
		}
		if c.QueryID != "" {
			fmt.Fprintf(b, " query=%s", c.QueryID)
		}
		if len(c.Queries) > 0 {
			fmt.Fprintf(b, " queries=%s", strings.Join(c.Queries, ","))
		}
		fmt.Fprintf(b, " offset=%d\n", c.Offset)
		if c.QueryID != "" && topology {
			p, ok := eng.ExplainQuery(c.QueryID)
			if !ok {
				t.Fatalf("query %s started, but EXPLAIN does not know it", c.QueryID)
			}
			b.WriteString(p.Text)
		}
	}
	if res.Value != nil {
		cols, rows := res.Value.Table()
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.Name
		}
		b.WriteString(strings.Join(names, " | ") + "\n")
		for _, r := range rows {
			b.WriteString(strings.Join(r, " | ") + "\n")
		}
	}
}

// queryPrints lists the sources and the queries with their state and
// topology fingerprint.
func queryPrints(eng *engine.Engine) string {
	var b strings.Builder
	for _, src := range eng.Catalog().Sources() {
		fmt.Fprintf(&b, "%s %s topic=%s partitions=%d schema=%s\n", src.Kind, src.Name, src.Topic, src.Partitions, src.Schema)
	}
	snap := eng.Catalog().Snapshot()
	for _, v := range snap.Views() {
		text, _ := snap.View(v)
		fmt.Fprintf(&b, "VIEW %s: %s\n", v, strings.TrimSpace(text))
	}
	for _, q := range eng.Queries() {
		p, _ := eng.ExplainQuery(q.ID)
		fmt.Fprintf(&b, "%s %s sink=%s sources=%s fingerprint=%s\n", q.ID, q.State(), q.Sink, strings.Join(q.Sources, ","), p.Fingerprint)
	}
	return b.String()
}
