package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// runReset is "sqlstreams reset --query ID": Kafka's application reset
// tool for one persistent query. It asks a running server to carry out
// RESET QUERY ID (over the Postgres wire protocol, as the shell does):
// the query stops, its internal topics, local state and committed
// offsets are deleted, and it starts again from auto.offset.reset. The
// server refuses while the query runs on another instance too.
func runReset(args []string) int {
	fs := flag.NewFlagSet("sqlstreams reset", flag.ContinueOnError)
	server := stringFlag(fs, "server", "127.0.0.1:5433", "server's Postgres wire protocol address, host:port")
	query := fs.String("query", "", "the ID of the persistent query to reset (SHOW QUERIES lists them)")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long to wait for the reset")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *query == "" || fs.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: sqlstreams reset --query QUERY_ID [--server host:port]")
		return 2
	}
	id := strings.ToUpper(*query) // query IDs are upper-case, as ksqlDB makes them
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	cfg, err := pgx.ParseConfig("postgres://sqlstreams@" + *server + "/sqlstreams?sslmode=disable")
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams reset: --server: %v\n", err)
		return 2
	}
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams reset: cannot connect to %s: %v\n", *server, err)
		return 1
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "RESET QUERY "+quoteIdent(id)); err != nil {
		fmt.Fprintf(os.Stderr, "sqlstreams reset: %v\n", err)
		return 1
	}
	fmt.Printf("Query %s reset: it runs again from its input's auto.offset.reset.\n", id)
	return 0
}
