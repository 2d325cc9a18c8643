package scaleout

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

func TestMain(m *testing.M) { os.Exit(testserver.Main(m)) }

// cluster is a standalone broker and the servers sharing it.
type cluster struct {
	broker  *testserver.Server
	mu      sync.Mutex // guards servers (add runs while others watch)
	servers []*testserver.Server
}

// list returns the servers started so far.
func (c *cluster) list() []*testserver.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.servers)
}

// startCluster starts `sqlstreams broker` and n servers of one service
// using it, each with its own instance ID (i1, i2, …) and data directory;
// extra are more server flags.
func startCluster(t *testing.T, n int, extra ...string) *cluster {
	t.Helper()
	c := &cluster{broker: testserver.StartBroker(t)}
	for i := range n {
		c.add(t, fmt.Sprintf("i%d", i+1), extra...)
	}
	return c
}

// add starts one more server of the cluster's service.
func (c *cluster) add(t *testing.T, instance string, extra ...string) *testserver.Server {
	t.Helper()
	args := append([]string{"--instance-id", instance}, extra...)
	s := testserver.Start(t, testserver.Bootstrap(c.broker.KafkaAddr), testserver.Args(args...))
	c.mu.Lock()
	c.servers = append(c.servers, s)
	c.mu.Unlock()
	return s
}

// connect opens a pgx connection to s, closed when the test ends.
func connect(t *testing.T, ctx context.Context, s *testserver.Server) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, "postgres://sqlstreams@"+s.PGAddr+"/sqlstreams?sslmode=disable")
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// rows runs a query and returns its rows as text, "|"-joined.
func rows(ctx context.Context, conn *pgx.Conn, q string) ([]string, error) {
	rs, err := conn.Query(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []string
	for rs.Next() {
		vals, err := rs.Values()
		if err != nil {
			return nil, err
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out, rs.Err()
}

func mustRows(t *testing.T, ctx context.Context, conn *pgx.Conn, q string) []string {
	t.Helper()
	out, err := rows(ctx, conn, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func exec1(t *testing.T, ctx context.Context, conn *pgx.Conn, q string) {
	t.Helper()
	if _, err := conn.Exec(ctx, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}
