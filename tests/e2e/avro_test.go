package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

// python is Debian's interpreter, which has python3-confluent-kafka and
// python3-avro (scripts/deps.sh installs them).
const python = "/usr/bin/python3"

// avroClient runs testdata/avro_client.py: Confluent's own Python Avro
// serializer and deserializer.
func avroClient(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(python, append([]string{filepath.Join("testdata", "avro_client.py")}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("avro_client.py %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

const (
	pageviewV1 = `{"type":"record","name":"pageview","namespace":"com.example","fields":[{"name":"pageid","type":"string"},{"name":"viewtime","type":"long"}]}`
	// v2 adds a field with a default: BACKWARD compatible, read by the
	// stream's columns without it.
	pageviewV3 = `{"type":"record","name":"pageview","namespace":"com.example","fields":[{"name":"pageid","type":"string"},{"name":"viewtime","type":"long"},{"name":"referrer","type":"string","default":""},{"name":"campaign","type":"string","default":""}]}`
	pageviewV2 = `{"type":"record","name":"pageview","namespace":"com.example","fields":[{"name":"pageid","type":"string"},{"name":"viewtime","type":"long"},{"name":"referrer","type":"string","default":""}]}`
)

// TestAvroEndToEnd: Confluent's Python serializer writes Avro records
// (two writer schema versions) through the embedded registry; a CSAS reads
// them, skips records with an unknown schema ID or a truncated payload,
// and writes Avro that Confluent's deserializer reads with the schema the
// sink registered under CARTS-value. A stream declared without columns
// takes them from pv-value's latest schema, and keeps them when a later
// version is registered. After a SIGKILL the registry has every schema
// under the same IDs, and the query goes on writing with its ID.
func TestAvroEndToEnd(t *testing.T) {
	if err := exec.Command(python, "-c", "import confluent_kafka.avro, requests").Run(); err != nil {
		t.Fatalf("%s cannot import confluent_kafka.avro (run scripts/deps.sh): %v", python, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := startServer(t)
	regURL := "http://" + s.RegistryAddr
	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `SET 'auto.offset.reset' = 'earliest'`)
	exec1(t, ctx, conn, `CREATE STREAM pv (userid VARCHAR KEY, pageid VARCHAR, viewtime BIGINT) WITH (KAFKA_TOPIC='pv', VALUE_FORMAT='AVRO', PARTITIONS=1)`)
	exec1(t, ctx, conn, `CREATE STREAM carts AS SELECT userid, pageid, viewtime * 10 AS t10 FROM pv WHERE pageid = 'cart' EMIT CHANGES`)

	avroClient(t, "u1\t"+pageviewV1+"\t"+`{"pageid":"home","viewtime":1}`+"\n"+
		"u2\t"+pageviewV1+"\t"+`{"pageid":"cart","viewtime":2}`+"\n"+
		"u3\t"+pageviewV2+"\t"+`{"pageid":"cart","viewtime":3,"referrer":"ad"}`+"\n",
		"produce", s.KafkaAddr, regURL, "pv")
	// Bad records: an unknown schema ID, and schema 1 with a truncated
	// payload (a string of 4 bytes with none there).
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx,
		&kgo.Record{Topic: "pv", Key: []byte("bad1"), Value: []byte{0, 0, 0, 0x7f, 0xff, 8, 'c', 'a', 'r', 't', 2}},
		&kgo.Record{Topic: "pv", Key: []byte("bad2"), Value: []byte{0, 0, 0, 0, 1, 8}},
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// Schema inference: the columns of the subject's latest schema (v2).
	exec1(t, ctx, conn, `CREATE STREAM pvi WITH (KAFKA_TOPIC='pv', VALUE_FORMAT='AVRO')`)
	// Inferred names are upper-cased, as ksqlDB's are.
	inferred := []string{"PAGEID|STRING", "VIEWTIME|BIGINT", "REFERRER|STRING"}
	if got := rows(t, ctx, conn, "DESCRIBE pvi"); !slices.Equal(got, inferred) {
		t.Fatalf("DESCRIBE of a stream inferred from pv-value: %v, want %v", got, inferred)
	}
	if got := rows(t, ctx, conn, `SELECT pageid, referrer FROM pvi WHERE viewtime = 3 EMIT CHANGES LIMIT 1`); !slices.Equal(got, []string{"cart|ad"}) {
		t.Errorf("push query on the inferred stream: %v", got)
	}
	// A v1 record lacks referrer: it reads as v2's default, "".
	if got := rows(t, ctx, conn, `SELECT pageid, referrer FROM pvi WHERE viewtime = 2 EMIT CHANGES LIMIT 1`); !slices.Equal(got, []string{"cart|"}) {
		t.Errorf("a v1 record on the stream inferred from v2: %v, want [cart|] (the default)", got)
	}
	avroClient(t, "u4\t"+pageviewV1+"\t"+`{"pageid":"cart","viewtime":4}`+"\n", "produce", s.KafkaAddr, regURL, "pv")

	got := strings.Split(strings.TrimSpace(avroClient(t, "", "consume", s.KafkaAddr, regURL, "CARTS", "3")), "\n")
	srcl, err := sr.NewClient(sr.URLs(regURL))
	if err != nil {
		t.Fatal(err)
	}
	sink, err := srcl.SchemaByVersion(ctx, "CARTS-value", -1)
	if err != nil {
		t.Fatalf("the sink's schema under CARTS-value: %v", err)
	}
	id := strconv.Itoa(sink.ID)
	want := []string{
		"u2\t" + id + "\t" + `{"PAGEID": "cart", "T10": 20}`,
		"u3\t" + id + "\t" + `{"PAGEID": "cart", "T10": 30}`,
		"u4\t" + id + "\t" + `{"PAGEID": "cart", "T10": 40}`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("CARTS as Confluent's deserializer reads it:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(sink.Schema.Schema, `"name":"T10","type":["null","long"]`) {
		t.Errorf("CARTS-value schema: %s", sink.Schema.Schema)
	}
	plog := string(bytes.Join(readRaw(t, ctx, s.KafkaAddr, "sqlstreams_processing_log"), []byte("\n")))
	for _, w := range []string{"schema ID 32767", "schema ID 1"} {
		if !strings.Contains(plog, w) {
			t.Errorf("processing log lacks a bad record naming %q:\n%s", w, plog)
		}
	}

	before := registryDump(t, ctx, srcl)
	crashAndRestart(t, s)
	conn = connect(t, ctx, s)
	after := registryDump(t, ctx, srcl)
	if !slices.Equal(before, after) {
		t.Fatalf("registry after SIGKILL:\n%s\nbefore:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	if got := rows(t, ctx, conn, "DESCRIBE pvi"); !slices.Equal(got, inferred) {
		t.Fatalf("DESCRIBE of the inferred stream after SIGKILL: %v, want %v", got, inferred)
	}
	// A third version of pv-value does not change the inferred stream: its
	// command recorded the schema ID.
	avroClient(t, "u5\t"+pageviewV3+"\t"+`{"pageid":"cart","viewtime":5,"referrer":"","campaign":"x"}`+"\n", "produce", s.KafkaAddr, regURL, "pv")
	stopAndRestart(t, s)
	conn = connect(t, ctx, s)
	if got := rows(t, ctx, conn, "DESCRIBE pvi"); !slices.Equal(got, inferred) {
		t.Fatalf("DESCRIBE of the inferred stream after v3 and a restart: %v, want %v", got, inferred)
	}
	got = strings.Split(strings.TrimSpace(avroClient(t, "", "consume", s.KafkaAddr, regURL, "CARTS", "4")), "\n")
	if w := "u5\t" + id + "\t" + `{"PAGEID": "cart", "T10": 50}`; len(got) != 4 || got[3] != w {
		t.Fatalf("after the restart CARTS is:\n%s\nwant its 4th record %s", strings.Join(got, "\n"), w)
	}
	if sink2, err := srcl.SchemaByVersion(ctx, "CARTS-value", -1); err != nil || sink2.ID != sink.ID || sink2.Version != 1 {
		t.Errorf("CARTS-value after restarts: %+v, %v; want only version 1, ID %d", sink2, err, sink.ID)
	}
}

// registryDump lists every subject version as "subject version id schema".
func registryDump(t *testing.T, ctx context.Context, cl *sr.Client) []string {
	t.Helper()
	all, err := cl.AllSchemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range all {
		out = append(out, s.Subject+" "+strconv.Itoa(s.Version)+" "+strconv.Itoa(s.ID)+" "+s.Schema.Schema)
	}
	slices.Sort(out)
	if len(out) < 2 {
		t.Fatalf("registry has %d schemas: %v", len(out), out)
	}
	return out
}

// TestAvroKeysEndToEnd: a CTAS with KEY_FORMAT='AVRO' groups an Avro
// stream by a value column (a repartition on an Avro key), registers its
// key schema (unwrapped, as ksqlDB's single key), answers a pull query by
// its Avro key, and writes keys in the wire format with that schema's ID.
func TestAvroKeysEndToEnd(t *testing.T) {
	if err := exec.Command(python, "-c", "import confluent_kafka.avro, requests").Run(); err != nil {
		t.Fatalf("%s cannot import confluent_kafka.avro (run scripts/deps.sh): %v", python, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := startServer(t)
	regURL := "http://" + s.RegistryAddr
	conn := connect(t, ctx, s)
	exec1(t, ctx, conn, `SET 'auto.offset.reset' = 'earliest'`)
	exec1(t, ctx, conn, `CREATE STREAM pv (userid VARCHAR KEY, pageid VARCHAR, viewtime BIGINT) WITH (KAFKA_TOPIC='pv', VALUE_FORMAT='AVRO', PARTITIONS=2)`)
	exec1(t, ctx, conn, `CREATE TABLE bypage WITH (KEY_FORMAT='AVRO') AS SELECT pageid, COUNT(*) AS n FROM pv GROUP BY pageid`)
	var in strings.Builder
	for i, page := range []string{"home", "cart", "cart", "home", "cart"} {
		in.WriteString("u" + strconv.Itoa(i) + "\t" + pageviewV1 + "\t" + `{"pageid":"` + page + `","viewtime":` + strconv.Itoa(i) + "}\n")
	}
	avroClient(t, in.String(), "produce", s.KafkaAddr, regURL, "pv")

	var got []string
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		got = rows(t, ctx, conn, `SELECT * FROM bypage WHERE pageid = 'cart'`)
		if slices.Equal(got, []string{"cart|3"}) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !slices.Equal(got, []string{"cart|3"}) {
		t.Fatalf("pull query by an Avro key: %v, want [cart|3]", got)
	}
	srcl, err := sr.NewClient(sr.URLs(regURL))
	if err != nil {
		t.Fatal(err)
	}
	key, err := srcl.SchemaByVersion(ctx, "BYPAGE-key", -1)
	if err != nil || key.Schema.Schema != `["null","string"]` {
		t.Fatalf("BYPAGE-key: %+v, %v; want the unwrapped nullable string", key, err)
	}
	var h sr.ConfluentHeader
	keys := map[string]bool{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.KafkaAddr), kgo.ConsumeTopics("BYPAGE"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for len(keys) < 2 && ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			id, rest, err := h.DecodeID(r.Key)
			if err != nil || id != key.ID || len(rest) < 1 {
				t.Fatalf("BYPAGE key %x: ID %d (want %d), %v", r.Key, id, key.ID, err)
			}
			keys[string(rest[2:])] = true // union branch 1, length, bytes
		})
	}
	if !keys["cart"] || !keys["home"] {
		t.Errorf("BYPAGE keys %v", keys)
	}
}
