package engine_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/types"
)

// TestJoinsV4ByCommand checks stream–table joins on a table whose
// JSON_SR keys its producer wrote under a schema ID of its own (not the
// one the join writes the stream's keys with), over 4 partitions: a
// key value then has other bytes, and often another partition, on the
// table's topic than on the join's repartition topic. A query run now
// (sqlstreams.joins=4) repartitions the table too and finds every
// click's user, and sees the table's later updates and deletes; one
// replayed from a command recorded under sqlstreams.joins=3 keeps its
// topology (no repartition of the table), so it finds only the users
// whose key lands in the same partition both ways.
func TestJoinsV4ByCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	brokers, schemas := registryCluster(ctx, t)

	props := map[string]string{"auto.offset.reset": "earliest", "sqlstreams.generated.aliases": "ksql", "sqlstreams.null.comparison": "ksql",
		"sqlstreams.join.keys": "ksql", "sqlstreams.headers.propagate": "true", "sqlstreams.joins": "3"}
	const join = "SELECT c.id, page, name FROM clicks c LEFT JOIN users u ON c.id = u.id;"
	log, err := catalog.OpenCommandLog(ctx, kafka.Plain(brokers...), "sqlstreams", "old")
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"CREATE TABLE users (id INT PRIMARY KEY, name VARCHAR) WITH (KAFKA_TOPIC='users', KEY_FORMAT='JSON_SR', VALUE_FORMAT='JSON', PARTITIONS=4);",
		"CREATE STREAM clicks (id INT KEY, page VARCHAR) WITH (KAFKA_TOPIC='clicks', KEY_FORMAT='JSON', VALUE_FORMAT='JSON', PARTITIONS=4);",
		"CREATE STREAM old_q WITH (KAFKA_TOPIC='old_q') AS " + join,
	} {
		if _, err := log.Append(ctx, catalog.Command{Statement: stmt, Props: props}); err != nil {
			t.Fatal(err)
		}
	}
	log.Close()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", StateDir: t.TempDir(), Schemas: schemas})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	sess := engine.NewSession()
	for _, stmt := range []string{
		"SET 'auto.offset.reset'='earliest';",
		"CREATE STREAM new_q WITH (KAFKA_TOPIC='new_q') AS " + join,
	} {
		if _, err := eng.Execute(ctx, sess, stmt, discard{}); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	// The table's producer writes its keys with a schema of its own.
	prodID, err := schemas.Register("users-producer-key", types.RegisteredSchema{Type: types.SchemaTypeJSON, Text: `{"type":"integer","title":"user id"}`})
	if err != nil {
		t.Fatal(err)
	}
	const n = 24
	srKey := func(id, k int) []byte {
		return strconv.AppendInt(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), int64(k), 10)
	}
	var users []*kgo.Record
	for k := range n {
		users = append(users, &kgo.Record{Key: srKey(prodID, k), Value: []byte(`{"NAME":"u` + strconv.Itoa(k) + `"}`), Timestamp: time.UnixMilli(1)})
	}
	produce(t, ctx, brokers, "users", users...)

	// Only the query run now repartitions the table.
	adm := kadm.NewClient(mustClient(t, brokers))
	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var tableReps, streamReps []string
	for _, name := range topics.Names() {
		switch {
		case strings.HasSuffix(name, "-JOIN-USERS-TABLE-repartition"):
			tableReps = append(tableReps, name)
		case strings.HasSuffix(name, "-JOIN-USERS-repartition"):
			streamReps = append(streamReps, name)
		}
	}
	if len(tableReps) != 1 || len(streamReps) != 2 {
		t.Fatalf("table repartitions %v (want the new query's only), stream repartitions %v (want both queries')", tableReps, streamReps)
	}
	newGroup := strings.TrimSuffix(tableReps[0], "-JOIN-USERS-TABLE-repartition")
	oldGroup := ""
	for _, s := range streamReps {
		if g := strings.TrimSuffix(s, "-JOIN-USERS-repartition"); g != newGroup {
			oldGroup = g
		}
	}
	// Both queries hold every user before a click comes.
	waitConsumed(t, ctx, adm, brokers, oldGroup, "users", n)
	waitConsumed(t, ctx, adm, brokers, newGroup, tableReps[0], n)

	var clicks []*kgo.Record
	for k := range n {
		clicks = append(clicks, &kgo.Record{Key: []byte(strconv.Itoa(k)), Value: []byte(`{"PAGE":"p` + strconv.Itoa(k) + `"}`), Timestamp: time.UnixMilli(100)})
	}
	produce(t, ctx, brokers, "clicks", clicks...)

	var want []string
	for k := range n {
		want = append(want, `{"PAGE":"p`+strconv.Itoa(k)+`","NAME":"u`+strconv.Itoa(k)+`"}`)
	}
	got := consume(t, ctx, brokers, "new_q", n)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("new_q:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A delete and an update, keyed by the producer, reach the
	// repartitioned table.
	produce(t, ctx, brokers, "users", &kgo.Record{Key: srKey(prodID, 1), Timestamp: time.UnixMilli(150)},
		&kgo.Record{Key: srKey(prodID, 2), Value: []byte(`{"NAME":"v2"}`), Timestamp: time.UnixMilli(150)})
	waitConsumed(t, ctx, adm, brokers, newGroup, tableReps[0], n+2)
	produce(t, ctx, brokers, "clicks", &kgo.Record{Key: []byte("1"), Value: []byte(`{"PAGE":"q1"}`), Timestamp: time.UnixMilli(200)},
		&kgo.Record{Key: []byte("2"), Value: []byte(`{"PAGE":"q2"}`), Timestamp: time.UnixMilli(200)})
	// Records of several partitions interleave: the two new ones are
	// those of the q pages.
	got = slices.DeleteFunc(consume(t, ctx, brokers, "new_q", n+2), func(r string) bool { return !strings.HasPrefix(r, `{"PAGE":"q`) })
	slices.Sort(got)
	if want := []string{`{"PAGE":"q1","NAME":null}`, `{"PAGE":"q2","NAME":"v2"}`}; !slices.Equal(got, want) {
		t.Errorf("new_q after a delete and an update: %v, want %v", got, want)
	}

	// The old query writes the clicks' keys with the key column's own
	// schema: a click finds its user only where that key's partition is
	// the producer's key's.
	ourID := 0
	for _, r := range consumeRecords(t, ctx, brokers, oldGroup+"-JOIN-USERS-repartition", 1) {
		ourID = int(binary.BigEndian.Uint32(r.Key[1:5]))
	}
	if ourID == prodID {
		t.Fatalf("the repartition writes the producer's schema ID %d", prodID)
	}
	part := kgo.StickyKeyPartitioner(nil).ForTopic("x")
	same := map[string]bool{}
	for k := range n {
		if part.Partition(&kgo.Record{Key: srKey(prodID, k)}, 4) == part.Partition(&kgo.Record{Key: srKey(ourID, k)}, 4) {
			same["p"+strconv.Itoa(k)] = true
		}
	}
	if len(same) == n {
		t.Fatalf("every key has one partition under schema IDs %d and %d: nothing to show", prodID, ourID)
	}
	for _, v := range consume(t, ctx, brokers, "old_q", n+2) {
		var row struct{ PAGE, NAME *string }
		if err := json.Unmarshal([]byte(v), &row); err != nil || row.PAGE == nil {
			t.Fatalf("old_q: %s: %v", v, err)
		}
		if *row.PAGE == "q1" {
			continue // user 1 is deleted
		}
		if found := row.NAME != nil; found != same["p"+(*row.PAGE)[1:]] {
			t.Errorf("old_q: %s; the two schema IDs send its key to the same partition: %v", v, same[*row.PAGE])
		}
	}
}

func mustClient(t *testing.T, brokers []string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// waitConsumed waits until group has committed, on topic, offsets past
// its n records (read with read_committed).
func waitConsumed(t *testing.T, ctx context.Context, adm *kadm.Client, brokers []string, group, topic string, n int) {
	t.Helper()
	past := map[int32]int64{}
	for _, r := range consumeRecords(t, ctx, brokers, topic, n) {
		past[r.Partition] = max(past[r.Partition], r.Offset+1)
	}
	for ctx.Err() == nil {
		offs, err := adm.FetchOffsets(ctx, group)
		done := err == nil
		for p, o := range past {
			c, ok := offs.Lookup(topic, p)
			done = done && ok && c.At >= o
		}
		if done {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("group %s did not consume %s", group, topic)
}
