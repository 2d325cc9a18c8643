package sqldiff

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestUnionAllDifferential runs a UNION ALL of three branches over
// streams of 1, 2 and 3 partitions (one stream read by two branches),
// each branch with its own filter and projection, over random rows with
// a SIGKILL while output flows, and compares the output topic (a stream:
// every record, as a multiset, read_committed) with SQLite's UNION ALL.
// Exactly once: no record lost, none twice.
func TestUnionAllDifferential(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := start(t, ctx)
	for _, q := range []string{
		`CREATE STREAM a (k VARCHAR KEY, x BIGINT, s VARCHAR) WITH (KAFKA_TOPIC='a', VALUE_FORMAT='JSON', PARTITIONS=1)`,
		`CREATE STREAM b (k VARCHAR KEY, y INT, t VARCHAR) WITH (KAFKA_TOPIC='b', VALUE_FORMAT='JSON', PARTITIONS=2)`,
		`CREATE STREAM c (k VARCHAR KEY, z BIGINT) WITH (KAFKA_TOPIC='c', VALUE_FORMAT='JSON', PARTITIONS=3)`,
		`CREATE STREAM u AS
		   SELECT k, x AS v, s AS src FROM a WHERE x % 3 <> 0
		   UNION ALL SELECT k, y * 10, UCASE(t) FROM b WHERE t IS NOT NULL
		   UNION ALL SELECT k, z, 'c' FROM c
		   UNION ALL SELECT k, -x, 'a2' FROM a WHERE x > 500`,
	} {
		e.exec(q)
	}
	rng := rand.New(rand.NewPCG(33, 2))
	var script strings.Builder
	script.WriteString("CREATE TABLE a (k TEXT, x INTEGER, s TEXT); CREATE TABLE b (k TEXT, y INTEGER, t TEXT); CREATE TABLE c (k TEXT, z INTEGER);\n")
	batch := func(n int) {
		var recs []*kgo.Record
		for range n {
			k := fmt.Sprintf("k%d", rng.IntN(20))
			switch rng.IntN(3) {
			case 0:
				x, s := rng.Int64N(1000), fmt.Sprintf("s%d", rng.IntN(5))
				recs = append(recs, &kgo.Record{Topic: "a", Key: []byte(k), Value: fmt.Appendf(nil, `{"X":%d,"S":"%s"}`, x, s)})
				fmt.Fprintf(&script, "INSERT INTO a VALUES ('%s', %d, '%s');\n", k, x, s)
			case 1:
				y := rng.Int64N(100)
				if rng.IntN(4) == 0 {
					recs = append(recs, &kgo.Record{Topic: "b", Key: []byte(k), Value: fmt.Appendf(nil, `{"Y":%d}`, y)})
					fmt.Fprintf(&script, "INSERT INTO b VALUES ('%s', %d, NULL);\n", k, y)
				} else {
					tv := fmt.Sprintf("t%d", rng.IntN(5))
					recs = append(recs, &kgo.Record{Topic: "b", Key: []byte(k), Value: fmt.Appendf(nil, `{"Y":%d,"T":"%s"}`, y, tv)})
					fmt.Fprintf(&script, "INSERT INTO b VALUES ('%s', %d, '%s');\n", k, y, tv)
				}
			default:
				z := rng.Int64N(1000)
				recs = append(recs, &kgo.Record{Topic: "c", Key: []byte(k), Value: fmt.Appendf(nil, `{"Z":%d}`, z)})
				fmt.Fprintf(&script, "INSERT INTO c VALUES ('%s', %d);\n", k, z)
			}
		}
		e.produce(recs)
	}
	for range 3 {
		batch(300)
	}
	e.waitOutput("U", 100)
	e.crash()
	for range 3 {
		batch(300)
	}
	script.WriteString(`
SELECT '#U';
SELECT k, x, s FROM a WHERE x % 3 <> 0
UNION ALL SELECT k, y * 10, UPPER(t) FROM b WHERE t IS NOT NULL
UNION ALL SELECT k, z, 'c' FROM c
UNION ALL SELECT k, -x, 'a2' FROM a WHERE x > 500;
`)
	want := sqlite(t, ctx, script.String())
	if len(want["U"]) < 1500 {
		t.Fatalf("input too thin: %d rows", len(want["U"]))
	}
	e.eventually("topic U", want["U"], func() ([]string, error) { return e.stream("U", "V", "SRC") })
}
