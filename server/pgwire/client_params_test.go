package pgwire

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRealPgxPreparedPullParams runs prepared pull queries with several
// parameters (bound as values into the engine's plan, not into text) in
// every pgx mode, text and binary, and checks each answer against the
// same query with the values written in, run with the simple protocol.
func TestRealPgxPreparedPullParams(t *testing.T) {
	s := sharedReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	conn := s.pgxConn(t, ctx)
	kc, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if _, err := conn.Exec(ctx, "CREATE TABLE pgx_pull_params (id INT PRIMARY KEY, v VARCHAR, n BIGINT, d DOUBLE, b BOOLEAN) WITH (KAFKA_TOPIC='pgx_pull_params', VALUE_FORMAT='JSON', PARTITIONS=2)"); err != nil {
		t.Fatal(err)
	}
	const keys = 30
	for i := 0; i < keys; i++ {
		r := &kgo.Record{Topic: "pgx_pull_params", Key: binary.BigEndian.AppendUint32(nil, uint32(i)),
			Value: fmt.Appendf(nil, `{"V":"v%d","N":%d,"D":%d.5,"B":%v}`, i, i*i, i, i%2 == 0)}
		if err := kc.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	rowsOf := func(sql string, args ...any) ([]string, error) {
		rs, err := conn.Query(ctx, sql, args...)
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
			out = append(out, fmt.Sprint(vals...))
		}
		slices.Sort(out)
		return out, rs.Err()
	}
	for {
		got, err := rowsOf("SELECT id FROM pgx_pull_params", pgx.QueryExecModeSimpleProtocol)
		if err == nil && len(got) == keys {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the table never had its %d rows: %v %v", keys, len(got), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cases := []struct {
		prepared, literal string
		args              []any
	}{
		{"SELECT id, v FROM pgx_pull_params WHERE n > $1 AND v <> $2", "SELECT id, v FROM pgx_pull_params WHERE n > 500 AND v <> 'v25'", []any{int64(500), "v25"}},
		{"SELECT id FROM pgx_pull_params WHERE id IN ($1, $2, $3)", "SELECT id FROM pgx_pull_params WHERE id IN (3, 17, 99)", []any{3, 17, 99}},
		{"SELECT id, d FROM pgx_pull_params WHERE id BETWEEN $1 AND $2 AND b = $3", "SELECT id, d FROM pgx_pull_params WHERE id BETWEEN 4 AND 12 AND b = true", []any{4, 12, true}},
		{"SELECT v FROM pgx_pull_params WHERE d < $1 AND id >= $2", "SELECT v FROM pgx_pull_params WHERE d < 6.0 AND id >= 2", []any{6.0, 2}},
		{"SELECT v FROM pgx_pull_params WHERE v = $1 OR v = $2", "SELECT v FROM pgx_pull_params WHERE v = 'v1' OR v = 'o''k'", []any{"v1", "o'k"}},
	}
	check := func(c struct {
		prepared, literal string
		args              []any
	}) {
		t.Helper()
		want, err := rowsOf(c.literal, pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			t.Fatalf("%s: %v", c.literal, err)
		}
		for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec} {
			// Several runs: the unnamed statement is planned at its
			// second Bind.
			for run := 0; run < 3; run++ {
				got, err := rowsOf(c.prepared, append([]any{mode}, c.args...)...)
				if err != nil || !slices.Equal(got, want) {
					t.Fatalf("%s %v (mode %v, run %d): %v %v, want %v", c.prepared, c.args, mode, run, got, err, want)
				}
			}
		}
	}
	for _, c := range cases {
		check(c)
	}
	// The plans of the statements pgx keeps are stale once the table is
	// dropped and created again over other rows: they are made again.
	if _, err := conn.Exec(ctx, "DROP TABLE pgx_pull_params"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE pgx_pull_params (id INT PRIMARY KEY, v VARCHAR, n BIGINT, d DOUBLE, b BOOLEAN) WITH (KAFKA_TOPIC='pgx_pull_params2', VALUE_FORMAT='JSON', PARTITIONS=2)"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < keys; i++ {
		r := &kgo.Record{Topic: "pgx_pull_params2", Key: binary.BigEndian.AppendUint32(nil, uint32(i)),
			Value: fmt.Appendf(nil, `{"V":"w%d","N":%d,"D":%d.5,"B":%v}`, i, 2*i*i, i, i%2 == 1)}
		if err := kc.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for {
		got, err := rowsOf("SELECT id FROM pgx_pull_params", pgx.QueryExecModeSimpleProtocol)
		if err == nil && len(got) == keys {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the new table never had its %d rows: %v %v", keys, len(got), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range cases {
		check(c)
	}

	// INSERT … VALUES with parameters, as pgx sends it (a named
	// statement): the values reach the engine as datums.
	for i := 100; i < 103; i++ {
		if _, err := conn.Exec(ctx, "INSERT INTO pgx_pull_params (id, v, n, d, b) VALUES ($1, $2, $3, $4, $5)", i, fmt.Sprintf("i'%d", i), int64(i), float64(i)+0.25, i%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
	var want []string
	for i := 100; i < 103; i++ {
		want = append(want, fmt.Sprint(int32(i), fmt.Sprintf("i'%d", i), int64(i), float64(i)+0.25, i%2 == 0))
	}
	for {
		got, err := rowsOf("SELECT id, v, n, d, b FROM pgx_pull_params WHERE id >= 100", pgx.QueryExecModeSimpleProtocol)
		if err == nil && slices.Equal(got, want) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("inserted rows: %v %v, want %v", got, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
