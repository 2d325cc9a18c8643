package engine_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/types"
)

// collect keeps a statement's rows as text, one string per row.
type collect struct {
	cols []types.Column
	rows []string
}

func (c *collect) Columns(cols []types.Column) error { c.cols = cols; return nil }
func (c *collect) Row(r types.Row) error {
	parts := make([]string, len(r))
	for i, d := range r {
		switch {
		case d.Null:
			parts[i] = "NULL"
		case c.cols[i].Type.Kind == types.String:
			parts[i] = string(d.B)
		default:
			parts[i] = fmt.Sprint(d.I)
		}
	}
	c.rows = append(c.rows, strings.Join(parts, "|"))
	return nil
}

func (c *collect) sorted() []string {
	s := append([]string(nil), c.rows...)
	sort.Strings(s)
	return s
}

// openPullEngine starts a kfake cluster (over TCP) and an engine on it.
func openPullEngine(t *testing.T, ctx context.Context) (*engine.Engine, []string) {
	t.Helper()
	brokers := kfakeBrokers(t)
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	return eng, brokers
}

func produce(t testing.TB, ctx context.Context, brokers []string, topic string, recs ...*kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func intKey(i int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(int32(i))) }

// waitRows runs stmt until it returns want rows (sorted, as text).
func waitRows(t *testing.T, ctx context.Context, eng *engine.Engine, stmt string, want []string) {
	t.Helper()
	var got []string
	for ctx.Err() == nil {
		var c collect
		if _, err := eng.Execute(ctx, engine.NewSession(), stmt, &c); err == nil {
			if got = c.sorted(); strings.Join(got, "\n") == strings.Join(want, "\n") {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: got %d rows %.200v, want %d", stmt, len(got), got, len(want))
}

// TestPreparedPullPoint checks that a point pull query prepared once
// (PreparePull) is planned as a key lookup and returns, for many keys
// present and absent, the rows Execute returns for the same statement
// with that key written in; and after the table changes, the new rows.
func TestPreparedPullPoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	eng, brokers := openPullEngine(t, ctx)
	s := engine.NewSession()
	if _, err := eng.Execute(ctx, s, "CREATE TABLE kv (id INT PRIMARY KEY, v VARCHAR, n BIGINT) WITH (KAFKA_TOPIC='kv', VALUE_FORMAT='JSON', PARTITIONS=4)", discard{}); err != nil {
		t.Fatal(err)
	}
	const keys = 300
	var recs []*kgo.Record
	var want []string
	for i := 0; i < keys; i++ {
		recs = append(recs, &kgo.Record{Key: intKey(i), Value: fmt.Appendf(nil, `{"V":"v%d","N":%d}`, i, i*i)})
		if i != 13 {
			want = append(want, fmt.Sprintf("%d|v%d|%d", i, i, i*i))
		}
	}
	recs = append(recs, &kgo.Record{Key: intKey(13)}) // a tombstone
	produce(t, ctx, brokers, "kv", recs...)
	sort.Strings(want)
	waitRows(t, ctx, eng, "SELECT * FROM kv", want)

	p, err := eng.PreparePull(s, "SELECT v, n, id FROM kv WHERE id = 5")
	if err != nil {
		t.Fatal(err)
	}
	lit, kt, ok := p.PointKey()
	if !ok || lit.I != 5 || kt.Kind != types.Int {
		t.Fatalf("PointKey = %v %v %v, want the key 5 of type INT", lit, kt, ok)
	}
	check := func() {
		t.Helper()
		for i := -2; i < keys+20; i++ {
			var viaExec, viaKey collect
			if _, err := eng.Execute(ctx, s, fmt.Sprintf("SELECT v, n, id FROM kv WHERE id = %d", i), &viaExec); err != nil {
				t.Fatal(err)
			}
			res, err := p.RunKey(ctx, types.IntDatum(int64(i)), &viaKey)
			if err != nil {
				t.Fatalf("RunKey(%d): %v", i, err)
			}
			if strings.Join(viaKey.rows, ";") != strings.Join(viaExec.rows, ";") {
				t.Fatalf("key %d: prepared %v, executed %v", i, viaKey.rows, viaExec.rows)
			}
			if wantTag := fmt.Sprintf("SELECT %d", len(viaExec.rows)); res.Tag != wantTag {
				t.Errorf("key %d: tag %q, want %q", i, res.Tag, wantTag)
			}
			if len(viaKey.cols) != 3 || viaKey.cols[0].Name != "V" {
				t.Fatalf("columns %v", viaKey.cols)
			}
		}
	}
	check()
	// Keys no INT can hold, and NULL, match nothing.
	for _, k := range []types.Datum{types.IntDatum(math.MaxInt32 + 6), types.IntDatum(math.MinInt32 - 1), types.NullDatum} {
		var c collect
		if _, err := p.RunKey(ctx, k, &c); err != nil || len(c.rows) != 0 {
			t.Errorf("RunKey(%v) = %v, %v; want no rows", k, c.rows, err)
		}
	}

	// The table changes: an update, a delete and a new key.
	produce(t, ctx, brokers, "kv",
		&kgo.Record{Key: intKey(7), Value: []byte(`{"V":"changed","N":-1}`)},
		&kgo.Record{Key: intKey(8)},
		&kgo.Record{Key: intKey(1000), Value: []byte(`{"V":"new","N":1}`)})
	waitRows(t, ctx, eng, "SELECT v FROM kv WHERE id = 1000", []string{"new"})
	waitRows(t, ctx, eng, "SELECT v FROM kv WHERE id = 8", nil)
	for _, c := range []struct {
		key  int64
		want string
	}{{7, "changed|-1|7"}, {8, ""}, {1000, "new|1|1000"}} {
		var got collect
		if _, err := p.RunKey(ctx, types.IntDatum(c.key), &got); err != nil || strings.Join(got.rows, ";") != c.want {
			t.Errorf("after the update, key %d: %v %v, want %q", c.key, got.rows, err, c.want)
		}
	}
	check()

	// A key written to another partition than the default partitioner's
	// (as a producer with another partitioner does) is still found.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("kv"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	other := (exec.DefaultPartition(intKey(2000), 4) + 1) % 4
	err = cl.ProduceSync(ctx, &kgo.Record{Key: intKey(2000), Value: []byte(`{"V":"elsewhere","N":2}`), Partition: other}).FirstErr()
	cl.Close()
	if err != nil {
		t.Fatal(err)
	}
	waitRows(t, ctx, eng, "SELECT v FROM kv WHERE id = 2000", []string{"elsewhere"})
	var got collect
	if _, err := p.RunKey(ctx, types.IntDatum(2000), &got); err != nil || strings.Join(got.rows, ";") != "elsewhere|2|2000" {
		t.Errorf("a key in partition %d: %v %v", other, got.rows, err)
	}

	// Dropped and created again over other rows: the plan is stale.
	if _, err := eng.Execute(ctx, s, "DROP TABLE kv", discard{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RunKey(ctx, types.IntDatum(5), &collect{}); !errors.Is(err, engine.ErrStale) {
		t.Fatalf("RunKey after DROP TABLE: %v, want ErrStale", err)
	}
}

// TestPreparedPullShapes checks which pull queries become key lookups,
// and that the others (ranges, scans, other predicates, aggregate
// tables) run from their prepared plan with the rows Execute returns.
func TestPreparedPullShapes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	eng, brokers := openPullEngine(t, ctx)
	s := engine.NewSession()
	for _, stmt := range []string{
		"CREATE TABLE users (uid VARCHAR PRIMARY KEY, region VARCHAR, level INT) WITH (KAFKA_TOPIC='users', VALUE_FORMAT='JSON', PARTITIONS=2)",
		"CREATE STREAM clicks (uid VARCHAR KEY, n INT) WITH (KAFKA_TOPIC='clicks', VALUE_FORMAT='JSON', PARTITIONS=2)",
		"CREATE TABLE per_user AS SELECT uid, COUNT(*) AS c, SUM(n) AS total FROM clicks GROUP BY uid",
	} {
		if _, err := eng.Execute(ctx, s, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var users, clicks []*kgo.Record
	for i := 0; i < 50; i++ {
		users = append(users, &kgo.Record{Key: fmt.Appendf(nil, "u%02d", i), Value: fmt.Appendf(nil, `{"REGION":"r%d","LEVEL":%d}`, i%3, i)})
		for j := 0; j <= i%4; j++ {
			clicks = append(clicks, &kgo.Record{Key: fmt.Appendf(nil, "u%02d", i), Value: fmt.Appendf(nil, `{"N":%d}`, j)})
		}
	}
	users = append(users, &kgo.Record{Key: []byte("it's"), Value: []byte(`{"REGION":"q","LEVEL":-1}`)})
	produce(t, ctx, brokers, "users", users...)
	produce(t, ctx, brokers, "clicks", clicks...)
	waitRows(t, ctx, eng, "SELECT level FROM users WHERE uid = 'u49'", []string{"49"})
	waitRows(t, ctx, eng, "SELECT c FROM per_user WHERE uid = 'u47'", []string{"4"})

	for _, c := range []struct {
		stmt  string
		point bool
	}{
		{"SELECT * FROM users WHERE uid = 'u07'", true},
		{"SELECT region FROM users WHERE 'u08' = uid", true},
		{"SELECT * FROM users WHERE uid = 'it''s'", true},
		{"SELECT * FROM per_user WHERE uid = 'u09'", true},
		{"SELECT * FROM users WHERE uid = 'u07' AND level > 3", false},
		{"SELECT * FROM users WHERE uid IN ('u01', 'u02')", false},
		{"SELECT * FROM users WHERE uid >= 'u10' AND uid < 'u20'", false},
		{"SELECT * FROM users WHERE level = 7", false},
		{"SELECT * FROM users", false},
		{"SELECT uid, total FROM per_user WHERE c > 2", false},
		{"SELECT * FROM users WHERE uid = 'u03' LIMIT 0", true},
	} {
		p, err := eng.PreparePull(s, c.stmt)
		if err != nil {
			t.Fatalf("%s: %v", c.stmt, err)
		}
		if _, _, ok := p.PointKey(); ok != c.point {
			t.Errorf("%s: PointKey %v, want %v", c.stmt, ok, c.point)
		}
		for round := 0; round < 2; round++ { // a plan runs again
			var viaExec, viaPlan collect
			if _, err := eng.Execute(ctx, s, c.stmt, &viaExec); err != nil {
				t.Fatal(err)
			}
			if _, err := p.Run(ctx, &viaPlan); err != nil {
				t.Fatalf("%s: %v", c.stmt, err)
			}
			if got, want := viaPlan.sorted(), viaExec.sorted(); strings.Join(got, ";") != strings.Join(want, ";") {
				t.Errorf("%s: prepared %v, executed %v", c.stmt, got, want)
			}
			if c.stmt == "SELECT * FROM users" && len(viaPlan.rows) != 51 {
				t.Errorf("scan: %d rows, want 51", len(viaPlan.rows))
			}
		}
		if !c.point {
			if _, err := p.RunKey(ctx, types.StringDatum("u01"), &collect{}); err == nil {
				t.Errorf("%s: RunKey on a plan that reads no single key did not fail", c.stmt)
			}
			continue
		}
		for i := 0; i < 55; i++ {
			k := fmt.Sprintf("u%02d", i)
			var viaExec, viaKey collect
			lit, _, _ := p.PointKey()
			text := strings.Replace(c.stmt, "'"+strings.ReplaceAll(string(lit.B), "'", "''")+"'", "'"+k+"'", 1)
			if _, err := eng.Execute(ctx, s, text, &viaExec); err != nil {
				t.Fatal(err)
			}
			if _, err := p.RunKey(ctx, types.StringDatum(k), &viaKey); err != nil {
				t.Fatal(err)
			}
			if strings.Join(viaKey.rows, ";") != strings.Join(viaExec.rows, ";") {
				t.Errorf("%s with key %s: prepared %v, executed %v", c.stmt, k, viaKey.rows, viaExec.rows)
			}
		}
	}

	for _, stmt := range []string{"SELECT * FROM clicks EMIT CHANGES", "SHOW TABLES", "CREATE STREAM x AS SELECT * FROM clicks"} {
		if _, err := eng.PreparePull(s, stmt); !errors.Is(err, engine.ErrNotPull) {
			t.Errorf("PreparePull(%s) = %v, want ErrNotPull", stmt, err)
		}
	}
	if _, err := eng.PreparePull(s, "SELECT * FROM nosuch WHERE id = 1"); err == nil {
		t.Error("PreparePull over a missing table did not fail")
	}
}
