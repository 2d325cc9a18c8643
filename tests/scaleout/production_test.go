package scaleout

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sqlstreams/sqlstreams/broker"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka/kafkatest"
	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// The service of the production-cluster test, and its queries: the fault
// tests' stateless query and GROUP BY, and a stream–table join (the
// stream repartitioned by the join column). The input topics exist
// beforehand, as on a shared cluster; the service may only read them.
const (
	prodService = "prod"
	prodQueries = `
CREATE STREAM ev (id VARCHAR KEY, k VARCHAR, n BIGINT) WITH (KAFKA_TOPIC='ev', VALUE_FORMAT='JSON');
CREATE TABLE owners (k VARCHAR PRIMARY KEY, name VARCHAR) WITH (KAFKA_TOPIC='owners', VALUE_FORMAT='JSON');
CREATE STREAM big WITH (KAFKA_TOPIC='big', PARTITIONS=6) AS SELECT id, k, n FROM ev WHERE n > 100;
CREATE TABLE cnt WITH (KAFKA_TOPIC='cnt', PARTITIONS=6) AS SELECT k, COUNT(*) AS c, SUM(n) AS s FROM ev GROUP BY k;
CREATE STREAM owned WITH (KAFKA_TOPIC='owned', PARTITIONS=6) AS SELECT ev.k AS k, ev.id AS eid, o.name AS oname FROM ev JOIN owners o ON ev.k = o.k`
)

// prodStandbys is the production test's num.standby.replicas.
var prodStandbys = flag.Int("scaleout.prod-standbys", 1, "num.standby.replicas of TestProductionKafka's instances")

// prodGrants are the ACLs the service's principal gets: exactly those
// docs/kafka-acls.md lists (kafka.Service.Permissions, what check-kafka
// checks), with READ on its queries' inputs and WRITE and CREATE on their
// outputs. A permission the service needs and lacks fails the test.
func prodGrants(service string, inputs, outputs []string) []kfake.ACL {
	svc := engine.KafkaService(service, engine.ProcessingLogConfig{})
	svc.Read, svc.Write = inputs, outputs
	return kafkatest.ACLs(svc.Permissions())
}

// epochsAsKafka makes kfake answer OffsetForLeaderEpoch as Kafka does
// after a leader move: kfake answers an epoch older than the leader's with
// -1/-1 until something is written in the new epoch, which makes franz-go
// consumers reset to auto.offset.reset (FACTS.md). Kafka answers with the
// epoch's end offset; kfake never truncates, so its log end (what it
// answers for the current epoch) says the same: no divergence.
func epochsAsKafka(c *kfake.Cluster) {
	c.ControlKey(int16(kmsg.OffsetForLeaderEpoch), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := r.(*kmsg.OffsetForLeaderEpochRequest)
		for i := range req.Topics {
			for j := range req.Topics[i].Partitions {
				p := &req.Topics[i].Partitions[j]
				if p.CurrentLeaderEpoch >= 0 && p.LeaderEpoch < p.CurrentLeaderEpoch {
					p.LeaderEpoch = p.CurrentLeaderEpoch
				}
			}
		}
		return nil, nil, false
	})
}

// TestProductionKafka runs a service of two instances on a cluster that
// behaves like a production one: three brokers behind SASL_SSL
// (SCRAM-SHA-512 over TLS, a CA made for the test), ACLs on and the
// service's principal granted only prodGrants. While records stream in,
// partition leaders and the group and transaction coordinators move, a
// partition moves to another broker, a broker is removed and added back,
// and one instance restarts (SIGTERM, then again on its data). Throughout,
// the GROUP BY table answers pull queries, whole or with an error, never
// partially; at the end every output, read with read_committed, equals
// SQLite's answer over the input: each record exactly once. PRINT and
// datagen work on the same cluster.
func TestProductionKafka(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Fatal("the sqlite3 command (Debian package sqlite3) is the batch oracle of this test; scripts/deps.sh installs it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	outputs := []string{"big", "cnt", "owned"}
	kc := kafkatest.NewCluster(t, kafkatest.Options{Grants: prodGrants(prodService, []string{"ev", "owners", "big"}, outputs)})
	epochsAsKafka(kc.Cluster)
	// kfake answers UNSTABLE_OFFSET_COMMIT for a whole group while any
	// transaction holds offsets of any of its partitions; Kafka, and the
	// embedded broker, per partition.
	broker.StableOffsetsPerPartition(kc.Cluster)
	admin := kc.AdminProfile(t)
	adm, err := admin.NewClient()
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	for _, topic := range []string{"ev", "owners"} {
		if _, err := kadm.NewClient(adm).CreateTopic(ctx, faultParts, -1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	// The owners, before any event, so that every event joins.
	var owners []*kgo.Record
	ownerCSV := ""
	for i := range faultKeys {
		k, name := fmt.Sprintf("k%d", i), fmt.Sprintf("owner-%d", i%7)
		owners = append(owners, &kgo.Record{Topic: "owners", Key: []byte(k), Value: fmt.Appendf(nil, `{"NAME":%q}`, name)})
		ownerCSV += k + "," + name + "\n"
	}
	if err := adm.ProduceSync(ctx, owners...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	props := kc.PropertiesFile(t)
	c := &cluster{}
	for _, id := range []string{"i1", "i2"} {
		s := testserver.Start(t, testserver.Args("--bootstrap-servers", strings.Join(kc.Brokers, ","), "--kafka-config", props,
			"--service-id", prodService, "--instance-id", id, "--num-standby-replicas", fmt.Sprint(*prodStandbys)))
		c.servers = append(c.servers, s)
	}
	conn := connect(t, ctx, c.servers[0])
	for _, st := range strings.Split(prodQueries, ";") {
		exec1(t, ctx, conn, strings.TrimSpace(st))
	}

	// The join takes the table as it is when an event comes, and a task
	// does not wait for a partition it has not fetched yet (Kafka
	// Streams' max.task.idle.ms=0 before KIP-695): events start once the
	// join's group has read every owner.
	if !testserver.WaitFor(time.Minute, func() bool { return groupCaughtUp(ctx, adm, prodService+"_query_CSAS_OWNED_", "owners") }) {
		t.Fatal("the join never read the owners table")
	}
	in := &inputLog{}
	in.produceWith(t, ctx, admin, faultKeys)
	w := newWatcher(c)
	if d, ok := w.waitWhole(ctx, 2*time.Minute, false); !ok {
		t.Fatalf("the table never showed every key on every instance: %v", d)
	}
	// Not the controller (kfake's is the last broker): kfake keeps a
	// removed controller as its controller, and then refuses every
	// CreateTopics (NOT_CONTROLLER), where Kafka elects another. The
	// broker added back takes a new ID (3) on the removed one's address.
	removed := kc.Brokers[1]
	faults := []fault{
		{"partition leaders move", true, func(t *testing.T, _ *cluster) { kc.ShufflePartitionLeaders() }},
		{"group and transaction coordinators move", true, func(t *testing.T, _ *cluster) { kc.RehashCoordinators() }},
		{"a partition of the input and of a changelog move to another broker", true, func(t *testing.T, _ *cluster) {
			changelog := ""
			if topics, err := kadm.NewClient(adm).ListTopics(ctx); err == nil {
				for _, name := range topics.Names() {
					if strings.HasPrefix(name, prodService+"_query_CTAS_CNT_") && strings.HasSuffix(name, "-AGGREGATE-changelog") {
						changelog = name
					}
				}
			}
			if changelog == "" {
				t.Fatal("the GROUP BY's changelog topic is missing")
			}
			for _, tp := range []struct {
				topic string
				p     int32
			}{{"ev", 0}, {changelog, 1}} {
				to := (kc.LeaderFor(tp.topic, tp.p) + 1) % 3
				if err := kc.MoveTopicPartition(tp.topic, tp.p, to); err != nil {
					t.Errorf("moving %s/%d: %v", tp.topic, tp.p, err)
				}
			}
		}},
		{"broker 1 removed, a broker added back on its address 5 s later", true, func(t *testing.T, _ *cluster) {
			if err := kc.RemoveNode(1); err != nil {
				t.Fatal(err)
			}
			// kfake closes a removed broker's listener but not its
			// connections, which go on answering as a broker that leads
			// nothing (NOT_LEADER_FOR_PARTITION for ever, once another
			// broker takes its ID). A dead broker's connections die.
			kc.Control(func(kmsg.Request) (kmsg.Response, error, bool) {
				kc.KeepControl()
				if kc.CurrentNode() == 1 {
					return nil, errors.New("broker 1 is gone"), true
				}
				return nil, nil, false
			})
			time.Sleep(5 * time.Second)
			port := removed[strings.LastIndexByte(removed, ':')+1:]
			var n int
			fmt.Sscan(port, &n)
			if _, _, err := kc.AddNode(-1, n); err != nil {
				t.Fatal(err)
			}
		}},
		{"rolling restart of i2", true, func(t *testing.T, c *cluster) {
			if err := c.servers[1].Stop(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := c.servers[1].Restart(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	underFaults(t, ctx, c, w, func() { in.produceWith(t, ctx, admin, 50) }, faults, 2*time.Second, 4*time.Second)
	wantBig, wantCnt := checkFaultOutputs(t, ctx, admin, in)
	wantOwned := in.joinOracle(t, ownerCSV)
	var gotOwned []string
	readCommittedWith(t, ctx, admin, "owned", func(r *kgo.Record) {
		var v struct{ EID, ONAME string }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Errorf("owned: %q: %v", r.Value, err)
		}
		gotOwned = append(gotOwned, fmt.Sprintf("%s|%s|%s", v.EID, r.Key, v.ONAME))
	})
	sort.Strings(gotOwned)
	if extra, missing := diff(gotOwned, wantOwned); len(extra)+len(missing) > 0 {
		t.Errorf("the join's output: %d records, want %d; %d duplicates (e.g. %v), %d missing (e.g. %v)",
			len(gotOwned), len(wantOwned), len(extra), first(extra), len(missing), first(missing))
	}
	t.Logf("%d input records; %d stateless outputs, %d groups and %d joined records equal SQLite's", in.n, len(wantBig), len(wantCnt), len(wantOwned))

	// PRINT, over the service's own profile, on either instance.
	got := mustRows(t, ctx, connect(t, ctx, c.servers[1]), "PRINT 'big' FROM BEGINNING LIMIT 2")
	if len(got) != 2 {
		t.Errorf("PRINT 'big': %q, want 2 records", got)
	}
	// datagen with a properties file of its own principal's.
	adminProps := kc.AdminPropertiesFile(t)
	out, err := exec.CommandContext(ctx, testserver.Binary(t), "datagen", "--quickstart", "pageviews", "--count", "20",
		"--bootstrap-servers", kc.Brokers[0], "--kafka-config", adminProps, "--seed", "1").CombinedOutput()
	if err != nil {
		t.Fatalf("datagen on the secured cluster: %v\n%s", err, out)
	}
	n := 0
	readCommittedWith(t, ctx, admin, "pageviews", func(*kgo.Record) { n++ })
	if n != 20 {
		t.Errorf("datagen wrote %d records to pageviews, want 20", n)
	}
}

// joinOracle is SQLite's answer to the join over the input and owners
// (k,name lines): "eid|k|name" rows, sorted.
func (l *inputLog) joinOracle(t *testing.T, ownerCSV string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	dir := t.TempDir()
	evCSV, ownCSV := dir+"/ev.csv", dir+"/owners.csv"
	if err := os.WriteFile(evCSV, l.csv.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ownCSV, []byte(ownerCSV), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("CREATE TABLE ev (id TEXT, k TEXT, n INTEGER);\nCREATE TABLE owners (k TEXT, name TEXT);\n.mode csv\n.import %s ev\n.import %s owners\n.mode list\n.separator |\nSELECT ev.id, ev.k, owners.name FROM ev JOIN owners ON ev.k = owners.k;\n", evCSV, ownCSV)
	cmd := exec.Command("sqlite3", ":memory:")
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3: %v\n%s", err, out)
	}
	rows := strings.Split(strings.TrimSpace(string(out)), "\n")
	sort.Strings(rows)
	return rows
}

// groupCaughtUp says whether the consumer group whose name starts with
// prefix has committed offsets at the end of every partition of topic.
func groupCaughtUp(ctx context.Context, cl *kgo.Client, prefix, topic string) bool {
	adm := kadm.NewClient(cl)
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return false
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return false
	}
	for _, g := range groups.Groups() {
		if !strings.HasPrefix(g, prefix) {
			continue
		}
		offs, err := adm.FetchOffsets(ctx, g)
		if err != nil {
			return false
		}
		caught := true
		ends.Each(func(e kadm.ListedOffset) {
			o, ok := offs.Lookup(topic, e.Partition)
			caught = caught && ok && o.At >= e.Offset
		})
		return caught
	}
	return false
}
