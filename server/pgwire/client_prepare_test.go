package pgwire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRealPgxPreparedPush runs a push query with $1 in its WHERE and
// LIMIT $2 through the engine's Prepare and Bind (the values are datums,
// not text): in every pgx mode, the same prepared statement twice with
// other values, each returning the rows its values select; a cursor
// (Execute with a row limit) over it; and the refusals: a statement that
// takes no parameters (42P02), a negative LIMIT (2201W).
func TestRealPgxPreparedPush(t *testing.T) {
	s := sharedReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	conn := s.pgxConn(t, ctx)
	kc, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if _, err := conn.Exec(ctx, "CREATE STREAM pgx_push_params (id INT KEY, n BIGINT, v VARCHAR) WITH (KAFKA_TOPIC='pgx_push_params', VALUE_FORMAT='JSON', PARTITIONS=1)"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		r := &kgo.Record{Topic: "pgx_push_params", Key: binary.BigEndian.AppendUint32(nil, uint32(i)),
			Value: fmt.Appendf(nil, `{"N":%d,"V":"v%d"}`, i, i)}
		if err := kc.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, "SET 'auto.offset.reset'='earliest'", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	const push = "SELECT id, v FROM pgx_push_params WHERE n >= $1 EMIT CHANGES LIMIT $2"
	rowsOf := func(args ...any) (string, error) {
		rs, err := conn.Query(ctx, push, args...)
		if err != nil {
			return "", err
		}
		defer rs.Close()
		var out []string
		for rs.Next() {
			vals, err := rs.Values()
			if err != nil {
				return "", err
			}
			out = append(out, fmt.Sprint(vals...))
		}
		return strings.Join(out, ","), rs.Err()
	}
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec} {
		for _, c := range []struct {
			from, limit int64
			want        string
		}{{15, 3, "15v15,16v16,17v17"}, {5, 2, "5v5,6v6"}, {18, 2, "18v18,19v19"}, {0, 0, ""}} {
			got, err := rowsOf(mode, c.from, c.limit)
			if err != nil || got != c.want {
				t.Fatalf("%s with %d, %d (mode %v): %q %v, want %q", push, c.from, c.limit, mode, got, err, c.want)
			}
		}
	}

	// A pull query over a stream (a scan) takes them too.
	var ids []int32
	rs, err := conn.Query(ctx, "SELECT id FROM pgx_push_params WHERE n BETWEEN $1 AND $2", 3, 5)
	if err == nil {
		ids, err = pgx.CollectRows(rs, pgx.RowTo[int32])
	}
	if err != nil || fmt.Sprint(ids) != "[3 4 5]" {
		t.Errorf("pull over a stream with $1, $2: %v %v, want [3 4 5]", ids, err)
	}

	// Refusals, as Postgres reports them.
	var pe *pgconn.PgError
	if _, err := conn.Exec(ctx, "PRINT 'pgx_push_params' FROM BEGINNING LIMIT $1", 3); !errors.As(err, &pe) || pe.Code != "42P02" || !strings.Contains(pe.Message, "PRINT") {
		t.Errorf("PRINT with $1: %v, want 42P02 naming PRINT", err)
	}
	if _, err := rowsOf(int64(0), int64(-1)); !errors.As(err, &pe) || pe.Code != "2201W" {
		t.Errorf("LIMIT -1: %v, want 2201W", err)
	}
	if _, err := conn.Exec(ctx, "CREATE STREAM pgx_push_copy AS SELECT * FROM pgx_push_params WHERE n > $1 EMIT CHANGES", 3); !errors.As(err, &pe) || pe.Code != "42P02" || !strings.Contains(pe.Message, "CREATE STREAM") {
		t.Errorf("CREATE STREAM … AS SELECT with $1: %v, want 42P02 naming CREATE STREAM", err)
	}

	// A cursor: Execute with a row limit suspends the bound push query,
	// the next Execute takes the rest.
	pc, err := pgconn.Connect(ctx, s.url("tester"))
	if err != nil {
		t.Fatal(err)
	}
	hc, err := pc.Hijack()
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Conn.Close()
	fe := hc.Frontend
	_ = hc.Conn.SetDeadline(time.Now().Add(60 * time.Second))
	until := func(stop func(pgproto3.BackendMessage) bool) []string {
		t.Helper()
		var got []string
		for {
			m, err := fe.Receive()
			if err != nil {
				t.Fatal(err)
			}
			switch m := m.(type) {
			case *pgproto3.DataRow:
				got = append(got, string(m.Values[0]))
			case *pgproto3.ErrorResponse:
				t.Fatalf("error: %s %s", m.Code, m.Message)
			}
			if stop(m) {
				return got
			}
		}
	}
	isReady := func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.ReadyForQuery); return ok }
	fe.Send(&pgproto3.Query{String: "SET 'auto.offset.reset'='earliest'"})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	until(isReady)
	fe.SendParse(&pgproto3.Parse{Name: "cur", Query: "SELECT id FROM pgx_push_params WHERE n >= $1 EMIT CHANGES LIMIT $2"})
	fe.SendBind(&pgproto3.Bind{DestinationPortal: "c1", PreparedStatement: "cur", Parameters: [][]byte{[]byte("10"), []byte("5")}})
	fe.SendExecute(&pgproto3.Execute{Portal: "c1", MaxRows: 2})
	fe.Send(&pgproto3.Flush{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	first := until(func(m pgproto3.BackendMessage) bool { _, ok := m.(*pgproto3.PortalSuspended); return ok })
	fe.SendExecute(&pgproto3.Execute{Portal: "c1"})
	fe.SendSync(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	rest := until(isReady)
	if got := strings.Join(first, ",") + "|" + strings.Join(rest, ","); got != "10,11|12,13,14" {
		t.Errorf("cursor over %s: %s, want 10,11|12,13,14", "the push query", got)
	}
	// An INSERT … VALUES run as a cursor (its own prepared statement).
	fe.SendParse(&pgproto3.Parse{Name: "ins", Query: "INSERT INTO pgx_push_params (id, n, v) VALUES ($1, $2, $3)"})
	fe.SendBind(&pgproto3.Bind{DestinationPortal: "c2", PreparedStatement: "ins", Parameters: [][]byte{[]byte("99"), []byte("99"), []byte("v99")}})
	fe.SendExecute(&pgproto3.Execute{Portal: "c2", MaxRows: 1})
	fe.SendSync(&pgproto3.Sync{})
	if err := fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var tag string
	until(func(m pgproto3.BackendMessage) bool {
		if cc, ok := m.(*pgproto3.CommandComplete); ok {
			tag = string(cc.CommandTag)
		}
		return isReady(m)
	})
	if tag != "INSERT 0 1" {
		t.Errorf("INSERT as a cursor: tag %q", tag)
	}
	got, err := rowsOf(int64(99), int64(1))
	if err != nil || got != "99v99" {
		t.Errorf("the row inserted through a cursor: %q %v", got, err)
	}
}
