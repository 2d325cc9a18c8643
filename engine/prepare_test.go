package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// TestPrepareBind checks Prepare and Bind: a pull query's placeholders
// are typed from the columns they are compared with, and each run with
// bound values returns the rows Execute returns for the statement with
// those values written in, for point lookups ($1 is the key), IN lists,
// key ranges and value filters.
func TestPrepareBind(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	eng, brokers := openPullEngine(t, ctx)
	s := engine.NewSession()
	if _, err := eng.Execute(ctx, s, "CREATE TABLE kv (id INT PRIMARY KEY, v VARCHAR, n BIGINT) WITH (KAFKA_TOPIC='kv', VALUE_FORMAT='JSON', PARTITIONS=2)", discard{}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Execute(ctx, s, "CREATE TABLE sk (k VARCHAR PRIMARY KEY, n INT) WITH (KAFKA_TOPIC='sk', VALUE_FORMAT='JSON', PARTITIONS=2)", discard{}); err != nil {
		t.Fatal(err)
	}
	const keys = 50
	var recs, srecs []*kgo.Record
	var want, swant []string
	for i := 0; i < keys; i++ {
		swant = append(swant, fmt.Sprintf("k%02d|%d", i, i))
		recs = append(recs, &kgo.Record{Key: intKey(i), Value: fmt.Appendf(nil, `{"V":"v%d","N":%d}`, i, i*i)})
		srecs = append(srecs, &kgo.Record{Key: fmt.Appendf(nil, "k%02d", i), Value: fmt.Appendf(nil, `{"N":%d}`, i)})
		want = append(want, fmt.Sprintf("%d|v%d|%d", i, i, i*i))
	}
	produce(t, ctx, brokers, "kv", recs...)
	produce(t, ctx, brokers, "sk", srecs...)
	sort.Strings(want)
	waitRows(t, ctx, eng, "SELECT * FROM kv", want)
	waitRows(t, ctx, eng, "SELECT * FROM sk", swant)

	cases := []struct {
		prepared string
		types    []types.Kind
		literal  string // with %v for each value
		values   [][]types.Datum
	}{
		{"SELECT v, n, id FROM kv WHERE id = $1", []types.Kind{types.Int}, "SELECT v, n, id FROM kv WHERE id = %v",
			[][]types.Datum{{types.IntDatum(3)}, {types.IntDatum(49)}, {types.IntDatum(50)}, {types.NullDatum}}},
		{"SELECT id FROM kv WHERE id IN ($1, $2)", []types.Kind{types.Int, types.Int}, "SELECT id FROM kv WHERE id IN (%v, %v)",
			[][]types.Datum{{types.IntDatum(3), types.IntDatum(7)}, {types.IntDatum(60), types.IntDatum(1)}}},
		{"SELECT id, v FROM kv WHERE n > $1 AND v <> $2", []types.Kind{types.Bigint, types.String}, "SELECT id, v FROM kv WHERE n > %v AND v <> %v",
			[][]types.Datum{{types.IntDatum(2000), types.StringDatum("v48")}, {types.IntDatum(0), types.StringDatum("x")}}},
		{"SELECT k, n FROM sk WHERE k BETWEEN $1 AND $2", []types.Kind{types.String, types.String}, "SELECT k, n FROM sk WHERE k BETWEEN %v AND %v",
			[][]types.Datum{{types.StringDatum("k10"), types.StringDatum("k13")}, {types.StringDatum("k48"), types.StringDatum("z")}}},
		{"SELECT k, n FROM sk WHERE $1 = k", []types.Kind{types.String}, "SELECT k, n FROM sk WHERE %v = k",
			[][]types.Datum{{types.StringDatum("k07")}, {types.StringDatum("nope")}}},
	}
	lit := func(d types.Datum, k types.Kind) string {
		switch {
		case d.Null:
			return "NULL"
		case k == types.String:
			return "'" + string(d.B) + "'"
		}
		return fmt.Sprint(d.I)
	}
	for _, c := range cases {
		p, err := eng.Prepare(ctx, s, c.prepared)
		if err != nil {
			t.Fatalf("%s: %v", c.prepared, err)
		}
		if _, _, point := p.Pull().PointKey(); point != strings.Contains(c.prepared, "= ") {
			t.Errorf("%s: point lookup %v", c.prepared, point)
		}
		var kinds []types.Kind
		for _, pt := range p.ParamTypes() {
			kinds = append(kinds, pt.Kind)
		}
		if fmt.Sprint(kinds) != fmt.Sprint(c.types) {
			t.Errorf("%s: parameter types %v, want %v", c.prepared, kinds, c.types)
		}
		for _, vals := range c.values {
			args := make([]any, len(vals))
			for i, v := range vals {
				args[i] = lit(v, c.types[i])
			}
			text := fmt.Sprintf(c.literal, args...)
			var viaExec, viaBind collect
			resExec, err := eng.Execute(ctx, s, text, &viaExec)
			if err != nil && vals[0].Null {
				// ksqlDB refuses = NULL written in; a NULL bound
				// matches nothing, as in Postgres.
				resExec, err = engine.Result{Tag: "SELECT 0"}, nil
			}
			if err != nil {
				t.Fatalf("%s: %v", text, err)
			}
			b, err := p.Bind(vals)
			if err != nil {
				t.Fatal(err)
			}
			res, err := b.Run(ctx, &viaBind)
			if err != nil {
				t.Fatalf("%s with %v: %v", c.prepared, args, err)
			}
			if g, w := strings.Join(viaBind.sorted(), ";"), strings.Join(viaExec.sorted(), ";"); g != w || res.Tag != resExec.Tag {
				t.Errorf("%s with %v: prepared %q (%s), executed %q (%s)", c.prepared, args, g, res.Tag, w, resExec.Tag)
			}
		}
	}

	// Placeholders are refused where no values can be bound.
	var se *sql.Error
	if _, err := eng.Execute(ctx, s, "SELECT * FROM kv WHERE id = $1", discard{}); !errors.As(err, &se) || se.Code != "42P02" {
		t.Errorf("Execute with $1: %v, want 42P02 there is no parameter", err)
	}
	p, err := eng.Prepare(ctx, s, "SELECT * FROM kv WHERE id = $1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Bind(nil); err == nil {
		t.Error("Bind with too few values: no error")
	}
	// Statements other than SELECT and INSERT … VALUES take no
	// placeholders: refused, naming the statement.
	for _, c := range []struct{ text, kind string }{
		{"CREATE TABLE x AS SELECT * FROM kv WHERE id = $1", "CREATE TABLE"},
		{"PRINT 'kv' LIMIT $1", "PRINT"},
		{"INSERT INTO kv SELECT * FROM kv WHERE id = $1", "INSERT INTO"},
		{"CREATE STREAM y WITH (KAFKA_TOPIC='y') AS SELECT * FROM kv WHERE n > $1 EMIT CHANGES", "CREATE STREAM"},
	} {
		_, err := eng.Prepare(ctx, s, c.text)
		if !errors.As(err, &se) || se.Code != "42P02" || !strings.Contains(se.Msg, "in "+c.kind+";") {
			t.Errorf("Prepare(%s): %v, want 42P02 naming %s", c.text, err, c.kind)
		}
	}

	// A push query takes placeholders in its WHERE and as its LIMIT: each
	// run binds the statement again with its values.
	es := engine.NewSession()
	if _, err := eng.Execute(ctx, es, "SET 'auto.offset.reset'='earliest'", discard{}); err != nil {
		t.Fatal(err)
	}
	push, err := eng.Prepare(ctx, es, "SELECT id, n FROM kv WHERE n > $1 EMIT CHANGES LIMIT $2")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(push.ParamTypes()); got != "[BIGINT BIGINT]" || !push.IsPush() || len(push.Columns()) != 2 {
		t.Fatalf("push query: parameter types %s, push %v, columns %v", got, push.IsPush(), push.Columns())
	}
	for _, run := range []struct {
		n, limit int64
		want     []string // the rows it may return
		count    int
	}{
		{2000, 3, []string{"45|2025", "46|2116", "47|2209", "48|2304", "49|2401"}, 3},
		{2300, 2, []string{"48|2304", "49|2401"}, 2},
		{2300, 0, nil, 0},
	} {
		b, err := push.Bind([]types.Datum{types.IntDatum(run.n), types.IntDatum(run.limit)})
		if err != nil {
			t.Fatal(err)
		}
		var got collect
		rctx, rcancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := b.Run(rctx, &got)
		rcancel()
		if err != nil || len(got.rows) != run.count {
			t.Fatalf("push n > %d LIMIT %d: %v %v (%s)", run.n, run.limit, got.rows, err, res.Tag)
		}
		for _, r := range got.rows {
			if !slices.Contains(run.want, r) {
				t.Errorf("push n > %d LIMIT %d: row %s, want one of %v", run.n, run.limit, r, run.want)
			}
		}
	}
	// A pull query's LIMIT $n: the value bound at each run; NULL is no
	// limit, a negative one is Postgres's 2201W.
	lim, err := eng.Prepare(ctx, s, "SELECT id FROM kv WHERE n > $1 LIMIT $2")
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		limit types.Datum
		count int
		code  string
	}{{types.IntDatum(2), 2, ""}, {types.NullDatum, 5, ""}, {types.IntDatum(0), 0, ""}, {types.IntDatum(-1), 0, "2201W"}} {
		b, err := lim.Bind([]types.Datum{types.IntDatum(2000), run.limit})
		if err != nil {
			t.Fatal(err)
		}
		var got collect
		_, err = b.Run(ctx, &got)
		if run.code != "" {
			if !errors.As(err, &se) || se.Code != run.code {
				t.Errorf("pull LIMIT %v: %v, want %s", run.limit, err, run.code)
			}
			continue
		}
		if err != nil || len(got.rows) != run.count {
			t.Errorf("pull LIMIT %v: %v %v, want %d rows", run.limit, got.rows, err, run.count)
		}
	}
	// A push query's negative LIMIT too.
	if b, err := push.Bind([]types.Datum{types.IntDatum(0), types.IntDatum(-5)}); err != nil {
		t.Fatal(err)
	} else if _, err := b.Run(ctx, discard{}); !errors.As(err, &se) || se.Code != "2201W" {
		t.Errorf("push LIMIT -5: %v, want 2201W", err)
	}
	// A forwarded pull query carries its parameters' values: the
	// instance asked runs it with them over the partitions named.
	for _, c := range []struct{ body, want string }{
		{`{"sql":"SELECT id FROM kv WHERE n > $1 AND id < $2","params":[2200,49],"partitions":[0,1]}`, `[47] [48]`},
		{`{"sql":"SELECT v FROM kv WHERE id = $1","key":7,"partitions":[0,1]}`, `["v7"]`},
	} {
		rec := httptest.NewRecorder()
		eng.ServeInternalPull(rec, httptest.NewRequest(http.MethodPost, engine.InternalPullPath, strings.NewReader(c.body)))
		var resp struct{ Rows []json.RawMessage }
		_ = json.Unmarshal(rec.Body.Bytes(), &resp)
		var rows []string
		for _, r := range resp.Rows {
			rows = append(rows, string(r))
		}
		sort.Strings(rows)
		if got := strings.Join(rows, " "); rec.Code != http.StatusOK || got != c.want {
			t.Errorf("forwarded %s: HTTP %d %s, want %s", c.body, rec.Code, got, c.want)
		}
	}

	// INSERT … VALUES takes placeholders typed like their columns; each
	// run inserts the values bound.
	ins, err := eng.Prepare(ctx, s, "INSERT INTO kv (id, v, n) VALUES ($1, $2, $3)")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(ins.ParamTypes()); got != "[INTEGER STRING BIGINT]" {
		t.Errorf("INSERT parameter types %s", got)
	}
	for _, vals := range [][]types.Datum{
		{types.IntDatum(100), types.StringDatum("hundred"), types.IntDatum(1)},
		{types.IntDatum(101), types.NullDatum, types.IntDatum(2)},
	} {
		b, err := ins.Bind(vals)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := b.Run(ctx, discard{}); err != nil || res.Tag != "INSERT 0 1" {
			t.Fatalf("INSERT %v: %+v %v", vals, res, err)
		}
	}
	waitRows(t, ctx, eng, "SELECT id, v, n FROM kv WHERE id >= 100", []string{"100|hundred|1", "101|NULL|2"})

	// A statement without parameters runs as Execute runs it.
	p, err = eng.Prepare(ctx, s, "SHOW TABLES")
	if err != nil || p.Pull() != nil || len(p.Columns()) == 0 {
		t.Fatalf("Prepare(SHOW TABLES): %v", err)
	}
	b, err := p.Bind(nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := b.Run(ctx, discard{}); err != nil || res.Value == nil {
		t.Errorf("SHOW TABLES prepared: %+v, %v", res, err)
	}
}
