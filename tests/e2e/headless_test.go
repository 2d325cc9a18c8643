package e2e

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestHeadless runs the server with --queries-file: the file's statements
// make the catalog at every start, clients cannot change it, and its
// queries keep their IDs across a restart and resume where they were.
func TestHeadless(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	file := filepath.Join(t.TempDir(), "app.sql")
	if err := os.WriteFile(file, []byte(`
CREATE STREAM pageviews (userid VARCHAR KEY, pageid VARCHAR, viewtime BIGINT)
  WITH (KAFKA_TOPIC='pageviews', VALUE_FORMAT='JSON', PARTITIONS=2);
-- a comment between statements
CREATE STREAM cartviews AS SELECT userid, pageid, viewtime FROM pageviews WHERE pageid = 'cart';
`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--queries-file", file)
	conn := connect(t, ctx, s)
	if got := rows(t, ctx, conn, "SHOW QUERIES"); len(got) != 1 || !strings.HasPrefix(got[0], "CSAS_CARTVIEWS_1|") {
		t.Fatalf("SHOW QUERIES: %q", got)
	}
	_, err := conn.Exec(ctx, "CREATE STREAM other (a INT) WITH (KAFKA_TOPIC='other', VALUE_FORMAT='JSON', PARTITIONS=1)")
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !strings.Contains(pe.Message, "headless") {
		t.Fatalf("a catalog change in headless mode: %v", err)
	}
	exec1(t, ctx, conn, "INSERT INTO pageviews (userid, pageid, viewtime) VALUES ('u1', 'cart', 1)")
	exec1(t, ctx, conn, "SET 'auto.offset.reset' = 'earliest'")
	if got := rows(t, ctx, conn, "SELECT * FROM cartviews EMIT CHANGES LIMIT 1"); len(got) != 1 || got[0] != "u1|cart|1" {
		t.Fatalf("push query: %q", got)
	}
	waitCaughtUp(t, ctx, s.KafkaAddr, "sqlstreams_query_CSAS_CARTVIEWS_1", "pageviews")

	// After a restart the same query resumes: the new record, not the
	// first one again, comes out.
	stopAndRestart(t, s)
	conn = connect(t, ctx, s)
	exec1(t, ctx, conn, "INSERT INTO pageviews (userid, pageid, viewtime) VALUES ('u2', 'cart', 2)")
	waitCaughtUp(t, ctx, s.KafkaAddr, "sqlstreams_query_CSAS_CARTVIEWS_1", "pageviews")
	got := readCommitted(t, ctx, s.KafkaAddr, "CARTVIEWS")
	if got.total != 2 || got.count["u1"] != 1 || got.count["u2"] != 1 {
		t.Fatalf("CARTVIEWS after the restart: %+v", got)
	}
}

// TestConfigFile: a server started with --config takes its settings from
// the file (ksqlDB's key names), and SHOW PROPERTIES says where each came
// from.
func TestConfigFile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "ksql-server.properties")
	if err := os.WriteFile(path, []byte("# settings\nksql.service.id=from_file\nksql.streams.num.stream.threads=2\nksql.unknown.thing=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "--config", path)
	conn := connect(t, ctx, s)
	got := map[string]string{}
	for _, r := range rows(t, ctx, conn, "SHOW PROPERTIES") {
		f := strings.SplitN(r, "|", 3)
		got[f[0]] = f[1] + " from " + f[2]
	}
	for k, want := range map[string]string{
		"server.service-id":         "from_file from " + path + " line 2 (ksql.service.id)",
		"server.num-stream-threads": "2 from " + path + " line 3 (ksql.streams.num.stream.threads)",
		"ksql.service.id":           "from_file from default",
	} {
		if got[k] != want {
			t.Errorf("SHOW PROPERTIES %s: %q, want %q", k, got[k], want)
		}
	}
	if !strings.Contains(s.Log(), `unknown setting \"ksql.unknown.thing\" ignored`) {
		t.Errorf("no warning about the unknown key in the log")
	}
}
