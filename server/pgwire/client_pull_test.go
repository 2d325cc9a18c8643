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
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRealPgxPreparedPull runs prepared point lookups (WHERE key = $1,
// planned once per statement) with pgx on the real server, in every pgx
// mode, for many keys present and absent; again after the table changes
// and after it is dropped and created over other rows; and with a
// parameter that is not an integer, which fails with 22P02 and leaves the
// statement usable.
func TestRealPgxPreparedPull(t *testing.T) {
	s := sharedReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	conn := s.pgxConn(t, ctx)
	kc, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	produce := func(topic string, recs ...*kgo.Record) {
		t.Helper()
		for _, r := range recs {
			r.Topic = topic
		}
		if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	key := func(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(int32(i))) }
	waitLookup := func(id int, want string) {
		t.Helper()
		for {
			var v string
			err := conn.QueryRow(ctx, fmt.Sprintf("SELECT v FROM pgx_pull WHERE id = %d", id), pgx.QueryExecModeSimpleProtocol).Scan(&v)
			if err == nil && v == want || want == "" && errors.Is(err, pgx.ErrNoRows) {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("key %d never became %q: %v %q", id, want, err, v)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	if _, err := conn.Exec(ctx, "CREATE TABLE pgx_pull (id INT PRIMARY KEY, v VARCHAR, n BIGINT) WITH (KAFKA_TOPIC='pgx_pull', VALUE_FORMAT='JSON', PARTITIONS=3)"); err != nil {
		t.Fatal(err)
	}
	const keys = 200
	var recs []*kgo.Record
	for i := 0; i < keys; i++ {
		recs = append(recs, &kgo.Record{Key: key(i), Value: fmt.Appendf(nil, `{"V":"v%d","N":%d}`, i, 3*i)})
	}
	produce("pgx_pull", recs...)
	waitLookup(keys-1, fmt.Sprintf("v%d", keys-1))

	const lookup = "SELECT v, n FROM pgx_pull WHERE id = $1"
	expect := func(stage string, mode pgx.QueryExecMode, id int, want string, wantN int64) {
		t.Helper()
		var v string
		var n int64
		err := conn.QueryRow(ctx, lookup, mode, id).Scan(&v, &n)
		switch {
		case want == "" && errors.Is(err, pgx.ErrNoRows):
		case want == "":
			t.Fatalf("%s, mode %v, key %d: %q %d %v, want no row", stage, mode, id, v, n, err)
		case err != nil || v != want || n != wantN:
			t.Fatalf("%s, mode %v, key %d: %q %d %v, want %q %d", stage, mode, id, v, n, err, want, wantN)
		}
	}
	// Cached statements (named, binary parameters), described
	// statements, and the text format.
	// The simple protocol: the statement's one literal is the key of a
	// plan made once per connection (simplepull.go).
	modes := []pgx.QueryExecMode{pgx.QueryExecModeCacheStatement, pgx.QueryExecModeCacheDescribe, pgx.QueryExecModeDescribeExec, pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol}
	for _, mode := range modes {
		for i := -3; i < keys+10; i++ {
			if i >= 0 && i < keys {
				expect("initially", mode, i, fmt.Sprintf("v%d", i), int64(3*i))
			} else {
				expect("initially", mode, i, "", 0)
			}
		}
	}

	// The table changes under the prepared statement.
	produce("pgx_pull",
		&kgo.Record{Key: key(5), Value: []byte(`{"V":"five","N":-5}`)},
		&kgo.Record{Key: key(6)},
		&kgo.Record{Key: key(500), Value: []byte(`{"V":"new","N":1}`)})
	waitLookup(500, "new")
	waitLookup(6, "")
	waitLookup(5, "five")
	for _, mode := range modes {
		expect("after the update", mode, 5, "five", -5)
		expect("after the update", mode, 6, "", 0)
		expect("after the update", mode, 500, "new", 1)
		expect("after the update", mode, 7, "v7", 21)
	}

	// Simple-protocol statements the cached plan must answer exactly as
	// the text path does (an unnamed statement bound once, pgx's Exec
	// mode, runs the text).
	fresh := s.pgxConn(t, ctx)
	for _, q := range []string{
		"SELECT v, n FROM pgx_pull WHERE id = 7",
		"SELECT v, n FROM pgx_pull WHERE id = 8",
		"SELECT v, n FROM pgx_pull WHERE id = 5000000000",
		"SELECT v, n FROM pgx_pull WHERE id = '7'",
		"SELECT v, n FROM pgx_pull WHERE id = 7 AND n = 21",
		"SELECT v, n FROM pgx_pull WHERE id = 7 AND n = 22",
		"SELECT v, n FROM pgx_pull WHERE id = -3",
		"SELECT v FROM pgx_pull WHERE v = 'v9'",
	} {
		text := func(c *pgx.Conn, mode pgx.QueryExecMode) string {
			rs, err := c.Query(ctx, q, mode)
			if err != nil {
				return "error " + err.Error()
			}
			defer rs.Close()
			var out []string
			for rs.Next() {
				vals, _ := rs.Values()
				out = append(out, fmt.Sprint(vals))
			}
			if rs.Err() != nil {
				return "error " + rs.Err().Error()
			}
			return fmt.Sprint(out)
		}
		want := text(fresh, pgx.QueryExecModeExec)
		for i := 0; i < 2; i++ {
			if got := text(fresh, pgx.QueryExecModeSimpleProtocol); got != want {
				t.Errorf("%s: %s over the simple protocol (run %d), %s from the text", q, got, i, want)
			}
		}
	}

	// A parameter that is not an integer: a clear error, and the prepared
	// statement still works.
	pc := conn.PgConn()
	if _, err := pc.Prepare(ctx, "pull_text", lookup, nil); err != nil {
		t.Fatal(err)
	}
	res := pc.ExecPrepared(ctx, "pull_text", [][]byte{[]byte("seven")}, []int16{0}, nil).Read()
	var pe *pgconn.PgError
	if !errors.As(res.Err, &pe) || pe.Code != "22P02" {
		t.Fatalf("a non-integer key: %v, want 22P02", res.Err)
	}
	res = pc.ExecPrepared(ctx, "pull_text", [][]byte{[]byte("7")}, []int16{0}, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != "v7" || string(res.Rows[0][1]) != "21" {
		t.Fatalf("after the error: %v %q", res.Err, res.Rows)
	}
	res = pc.ExecPrepared(ctx, "pull_text", [][]byte{nil}, []int16{0}, nil).Read()
	if res.Err != nil || len(res.Rows) != 0 || res.CommandTag.String() != "SELECT 0" {
		t.Fatalf("a NULL key: %v %q %q, want no rows", res.Err, res.Rows, res.CommandTag)
	}

	// Dropped and created again over another topic: the statement
	// answers from the new table.
	if _, err := conn.Exec(ctx, "DROP TABLE pgx_pull"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE pgx_pull (id INT PRIMARY KEY, v VARCHAR, n BIGINT) WITH (KAFKA_TOPIC='pgx_pull2', VALUE_FORMAT='JSON', PARTITIONS=1)"); err != nil {
		t.Fatal(err)
	}
	produce("pgx_pull2", &kgo.Record{Key: key(5), Value: []byte(`{"V":"again","N":55}`)})
	waitLookup(5, "again")
	for _, mode := range modes {
		expect("after DROP and CREATE", mode, 5, "again", 55)
		expect("after DROP and CREATE", mode, 7, "", 0)
	}
	res = pc.ExecPrepared(ctx, "pull_text", [][]byte{[]byte("5")}, []int16{0}, nil).Read()
	if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != "again" {
		t.Fatalf("prepared before DROP, run after: %v %q", res.Err, res.Rows)
	}
}

// TestRealPgxPreparedPullStringKey runs a prepared lookup on a VARCHAR key
// (one with a quote in it) through the engine's plan, and again after the
// table is dropped and created, when the plan is stale and the portal's
// text — built from the key alone — runs instead.
func TestRealPgxPreparedPullStringKey(t *testing.T) {
	s := sharedReal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn := s.pgxConn(t, ctx)
	kc, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	create := func(topic string, rows map[string]string) {
		t.Helper()
		if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE TABLE pull_str (k VARCHAR PRIMARY KEY, v VARCHAR) WITH (KAFKA_TOPIC='%s', VALUE_FORMAT='JSON', PARTITIONS=2)", topic)); err != nil {
			t.Fatal(err)
		}
		for k, v := range rows {
			if err := kc.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(k), Value: fmt.Appendf(nil, `{"V":%q}`, v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		for k := range rows {
			for {
				var n int
				rs, err := conn.Query(ctx, "SELECT v FROM pull_str WHERE k = '"+strings.ReplaceAll(k, "'", "''")+"'", pgx.QueryExecModeSimpleProtocol)
				if err == nil {
					for rs.Next() {
						n++
					}
					rs.Close()
				}
				if n == 1 {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("key %q never arrived", k)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	create("pull_str1", map[string]string{"o'k": "first", "plain": "p1"})
	pc := conn.PgConn()
	if _, err := pc.Prepare(ctx, "pull_str_stmt", "SELECT v FROM pull_str WHERE k = $1", nil); err != nil {
		t.Fatal(err)
	}
	lookup := func(stage, key, want string) {
		t.Helper()
		res := pc.ExecPrepared(ctx, "pull_str_stmt", [][]byte{[]byte(key)}, []int16{0}, nil).Read()
		got := ""
		if len(res.Rows) == 1 {
			got = string(res.Rows[0][0])
		}
		if res.Err != nil || len(res.Rows) > 1 || got != want {
			t.Fatalf("%s, key %q: %v %q, want %q", stage, key, res.Err, res.Rows, want)
		}
	}
	for i := 0; i < 3; i++ {
		lookup("planned", "o'k", "first")
		lookup("planned", "plain", "p1")
		lookup("planned", "absent'", "")
	}
	if _, err := conn.Exec(ctx, "DROP TABLE pull_str"); err != nil {
		t.Fatal(err)
	}
	create("pull_str2", map[string]string{"o'k": "second"})
	lookup("stale plan", "o'k", "second")
	lookup("replanned", "o'k", "second")
	lookup("replanned", "plain", "")
}
