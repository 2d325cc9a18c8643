package pgwire

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestUnnamedInsertBindsDatums: an unnamed INSERT … VALUES with
// parameters, bound once (pgx's exec mode, most drivers' one-shot
// statements), goes to the engine's prepared INSERT with its values as
// datums from its first Bind, not as text with the values pasted in.
func TestUnnamedInsertBindsDatums(t *testing.T) {
	srv, url := startLoopServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	c := newConn(srv, a)
	defer c.cancel()
	p := &prepared{stmt: "INSERT INTO kv (id, v) VALUES ($1, $2)"}
	var err error
	if p.params, err = c.analyzeParams(p.stmt, nil); err != nil {
		t.Fatal(err)
	}
	c.pullPlan(p)
	if p.prep == nil || !p.prep.IsInsert() {
		t.Fatal("the unnamed INSERT's first Bind does not go to the engine's prepared INSERT")
	}

	// And the rows arrive, in every pgx mode.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	modes := []pgx.QueryExecMode{pgx.QueryExecModeExec, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeCacheDescribe}
	for i, mode := range modes {
		if _, err := conn.Exec(ctx, "INSERT INTO kv (id, v) VALUES ($1, $2)", mode, 1000+i, fmt.Sprintf("x'%d", i)); err != nil {
			t.Fatalf("mode %v: %v", mode, err)
		}
	}
	for i := range modes {
		for {
			var v string
			err := conn.QueryRow(ctx, "SELECT v FROM kv WHERE id = $1", 1000+i).Scan(&v)
			if err == nil && v == fmt.Sprintf("x'%d", i) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("row %d: %q, %v", 1000+i, v, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
