package broker

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/sqlstreams/sqlstreams/internal/testtool"
)

// Clients we did not write keep working against the broker: kcat
// (librdkafka), including idempotent produce and read_committed reads;
// Python's kafka client (kafka-python 2.0, Debian's python3-kafka, which
// predates its read_committed support): produce, a consumer group that
// commits; Python's confluent-kafka
// (librdkafka): a read_committed consumer group that commits.
// scripts/deps.sh installs them.

func needCommand(t *testing.T, name string, args ...string) {
	t.Helper()
	testtool.Probe(t, "scripts/deps.sh installs it", name, args...)
}

func runClient(t *testing.T, stdin string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s %v: %v\n%s%s", name, args, err, out, stderr)
	}
	return string(out)
}

// transactionalPrefix writes one committed and one aborted transaction to
// topic's partition 0: read_committed readers must see "tx-committed"
// only.
func transactionalPrefix(t *testing.T, addr, topic string) {
	t.Helper()
	produceTxn(t, addr, "compat", true, rec(topic, 0, "tx-committed"))
	produceTxn(t, addr, "compat", false, rec(topic, 0, "tx-aborted"))
}

func TestKcat(t *testing.T) {
	needCommand(t, "kcat", "-V")
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	defer b.Close()
	createTopic(t, b.Addr(), "kc", 1)
	transactionalPrefix(t, b.Addr(), "kc")

	runClient(t, "a\nb\n", "kcat", "-b", b.Addr(), "-P", "-t", "kc", "-p", "0")
	runClient(t, "c\nd\n", "kcat", "-b", b.Addr(), "-P", "-t", "kc", "-p", "0", "-X", "enable.idempotence=true")

	want := []string{"tx-committed", "a", "b", "c", "d"}
	got := strings.Fields(runClient(t, "", "kcat", "-b", b.Addr(), "-C", "-t", "kc", "-o", "beginning", "-e",
		"-X", "isolation.level=read_committed", "-f", "%s\n"))
	if !slices.Equal(got, want) {
		t.Fatalf("kcat read_committed: %v, want %v", got, want)
	}
	// read_uncommitted sees the aborted record too.
	got = strings.Fields(runClient(t, "", "kcat", "-b", b.Addr(), "-C", "-t", "kc", "-o", "beginning", "-e",
		"-X", "isolation.level=read_uncommitted", "-f", "%s\n"))
	if !slices.Contains(got, "tx-aborted") || len(got) != 6 {
		t.Fatalf("kcat read_uncommitted: %v, want the 5 committed records and tx-aborted", got)
	}
}

const kafkaPythonClient = `
import sys
from kafka import KafkaProducer, KafkaConsumer
addr, topic = sys.argv[1], sys.argv[2]
p = KafkaProducer(bootstrap_servers=addr, acks='all')
for i in range(10):
    p.send(topic, key=b'k%d' % i, value=b'py-%d' % i, partition=0).get(timeout=30)
p.close()
def group(timeout_ms):
    return KafkaConsumer(topic, bootstrap_servers=addr, group_id='pygroup', auto_offset_reset='earliest',
                         enable_auto_commit=False, consumer_timeout_ms=timeout_ms)
c = group(15000)
got = []
for m in c:
    got.append(m.value.decode())
    if len(got) == 10:
        break
c.commit()
c.close()
print(' '.join(got))
c = group(3000)
print('after-commit', len(list(c)))
c.close()
`

func TestKafkaPython(t *testing.T) {
	needCommand(t, "/usr/bin/python3", "-c", "import kafka")
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	defer b.Close()
	// kafka-python 2.0 does not know transactions: it hands out
	// transaction markers as records, as it would from Apache Kafka.
	// So no transactions here; confluent-kafka covers read_committed.
	createTopic(t, b.Addr(), "py", 1)

	out := strings.Split(strings.TrimSpace(runClient(t, "", "/usr/bin/python3", "-c", kafkaPythonClient, b.Addr(), "py")), "\n")
	want := "py-0 py-1 py-2 py-3 py-4 py-5 py-6 py-7 py-8 py-9"
	if len(out) != 2 || out[0] != want || out[1] != "after-commit 0" {
		t.Fatalf("kafka-python: %q; want %q, then nothing after the group's commit", out, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(newClient(t, b.Addr())).FetchOffsets(ctx, "pygroup")
	if err != nil {
		t.Fatal(err)
	}
	end := endOffsets(t, b.Addr(), "py")[0]
	if o, ok := offs.Lookup("py", 0); !ok || o.At != end {
		t.Fatalf("pygroup committed %+v, want the end offset %d", o, end)
	}
}

const confluentPythonClient = `
import sys
import confluent_kafka as ck
addr, topic = sys.argv[1], sys.argv[2]
c = ck.Consumer({'bootstrap.servers': addr, 'group.id': 'ckgroup', 'auto.offset.reset': 'earliest',
                 'enable.auto.commit': False, 'isolation.level': 'read_committed'})
c.subscribe([topic])
got = []
idle = 0
while len(got) < 4 and idle < 30:
    m = c.poll(0.5)
    if m is None:
        idle += 1
        continue
    if m.error():
        continue
    got.append(m.value().decode())
c.commit(asynchronous=False)
c.close()
print(' '.join(got))
`

func TestConfluentKafkaPythonReadCommitted(t *testing.T) {
	needCommand(t, "/usr/bin/python3", "-c", "import confluent_kafka")
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: t.TempDir()})
	defer b.Close()
	createTopic(t, b.Addr(), "ck", 1)
	transactionalPrefix(t, b.Addr(), "ck")
	produceEach(t, b.Addr(), "ck", 0, "p-0", "p-1")
	produceTxn(t, b.Addr(), "compat", true, rec("ck", 0, "tx-2"))

	got := strings.TrimSpace(runClient(t, "", "/usr/bin/python3", "-c", confluentPythonClient, b.Addr(), "ck"))
	if want := "tx-committed p-0 p-1 tx-2"; got != want {
		t.Fatalf("confluent-kafka read_committed: %q, want %q", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(newClient(t, b.Addr())).FetchOffsets(ctx, "ckgroup")
	if err != nil {
		t.Fatal(err)
	}
	// Past tx-2 (offset 6); librdkafka does not step over the commit
	// marker after it.
	end := endOffsets(t, b.Addr(), "ck")[0]
	if o, ok := offs.Lookup("ck", 0); !ok || o.At < 7 || o.At > end {
		t.Fatalf("ckgroup committed %+v, want past the last record (7) and at most the end (%d)", o, end)
	}
}
