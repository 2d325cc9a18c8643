package exec

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

var usersSchema = types.Schema{Columns: []types.Column{
	{Name: "USERID", Type: types.StringType, Key: true},
	{Name: "LEVEL", Type: types.BigintType},
}}.WithPseudo()

func usersSource() *physical.Source {
	return &physical.Source{Topic: "users", KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Out: usersSchema, Table: true}
}

func usersTopology(appID string) *physical.Topology {
	store := &physical.Store{Name: "USERS", Kind: physical.KeyValue, Changelog: "users", SourceTopicChangelog: true,
		KeyFormat: types.FormatKafka, ValueFormat: types.FormatJSON, Schema: usersSchema}
	g := physical.NewGraph(appID)
	src := g.Add("SOURCE-USERS", usersSource())
	g.Add("MATERIALIZE-USERS", &physical.Materialize{Store: store, Out: usersSchema}, src)
	return g.Topology()
}

// produceUsers writes n upserts over keys u0…u(keys-1), the level being
// the record's sequence number, plus a tombstone for every seventh key;
// it returns the expected table.
func produceUsers(t testing.TB, ctx context.Context, brokers []string, from, n, keys int, want map[string]string) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.DefaultProduceTopic("users"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := make([]*kgo.Record, 0, n)
	for i := from; i < from+n; i++ {
		k := fmt.Sprintf("u%d", i%keys)
		r := &kgo.Record{Key: []byte(k), Value: fmt.Appendf(nil, `{"LEVEL":%d}`, i)}
		want[k] = fmt.Sprint(i)
		if i%(keys*7+1) == 0 {
			r.Value = nil // tombstone
			delete(want, k)
		}
		recs = append(recs, r)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// tableContents reads the query's committed stores with a pull query.
func tableContents(t testing.TB, ctx context.Context, q *Query) map[string]string {
	got := map[string]string{}
	g := physical.NewGraph("")
	src := usersSource()
	src.Table = false
	g.Add("SOURCE-USERS", src)
	topo := g.Topology()
	err := RunPull(ctx, topo, q.Stores("USERS"), KeySelection{}, func(r types.Row) error {
		got[string(r[0].B)] = types.Text(r[1], types.BigintType)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func equalTables(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func waitTable(t testing.TB, ctx context.Context, q *Query, want map[string]string) {
	for {
		got := tableContents(t, ctx, q)
		if equalTables(got, want) {
			return
		}
		select {
		case <-ctx.Done():
			keys := make([]string, 0, len(got))
			for k := range got {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			t.Fatalf("table has %d rows, want %d", len(got), len(want))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestTableRestore checks that a restart with a valid checkpoint restores
// nothing (or only the tail), that a restart without one (or with a
// damaged one) restores the whole changelog, and that the table is right
// each time.
func TestTableRestore(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	brokers := testCluster(t, 2, "users").ListenAddrs()
	dir := t.TempDir()
	res := state.NewRocksResources(8<<20, 8<<20, 0)
	defer res.Close()
	cfg := Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", CommitInterval: 20 * time.Millisecond, StateDir: dir, RocksResources: res}
	want := map[string]string{}

	produceUsers(t, ctx, brokers, 0, 5000, 500, want)
	q, err := Start("CST_USERS_1", usersTopology("app"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitTable(t, ctx, q, want)
	waitCommitted(t, ctx, brokers, "app", "users")
	q.Stop()
	if r := q.Status().Restored; r != 0 {
		t.Errorf("first start restored %d records from an empty changelog position", r)
	}

	// A clean restart with a valid checkpoint restores nothing.
	produceUsers(t, ctx, brokers, 5000, 1000, 500, want)
	q, err = Start("CST_USERS_1", usersTopology("app"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitTable(t, ctx, q, want)
	waitCommitted(t, ctx, brokers, "app", "users")
	q.Stop()
	if r := q.Status().Restored; r != 0 {
		t.Errorf("restart with a valid checkpoint restored %d records, want 0", r)
	}

	// A checkpoint behind the committed offsets restores only the tail.
	cps, _ := filepath.Glob(filepath.Join(dir, "app", "*", "USERS", "checkpoint"))
	if len(cps) != 2 {
		t.Fatalf("found %d checkpoints, want one per partition: %v", len(cps), cps)
	}
	var tail int64
	for _, cp := range cps {
		offs, err := state.ReadCheckpoint(cp)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range offs {
			offs[k] = v - 100 // pretend the last 100 records never reached the store
			tail += 100
		}
		if err := state.WriteCheckpoint(cp, offs); err != nil {
			t.Fatal(err)
		}
	}
	q, err = Start("CST_USERS_1", usersTopology("app"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitTable(t, ctx, q, want)
	q.Stop()
	if r := q.Status().Restored; r < tail-10 || r > tail {
		t.Errorf("checkpoint %d records behind: restored %d", tail, r)
	}

	// A damaged checkpoint cannot be trusted: everything is restored.
	for _, cp := range cps {
		if err := os.WriteFile(cp, []byte("garbage"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	q, err = Start("CST_USERS_1", usersTopology("app"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	waitTable(t, ctx, q, want)
	q.Stop()
	if r := q.Status().Restored; r < 6000-10 {
		t.Errorf("without a checkpoint restored %d of 6000 changelog records", r)
	}
}

// TestTableExactlyOnceUnderFaults materializes a table while the broker
// fails some EndTxn and TxnOffsetCommit requests: the store must hold the
// latest value of every key, as committed.
func TestTableExactlyOnceUnderFaults(t *testing.T) {
	for _, fault := range []struct {
		name string
		key  kmsg.Key
		err  int16
	}{
		{"end-txn", kmsg.EndTxn, kerr.CoordinatorNotAvailable.Code},
		{"txn-offset-commit", kmsg.TxnOffsetCommit, kerr.CoordinatorLoadInProgress.Code},
	} {
		t.Run(fault.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c := testCluster(t, 2, "users")
			brokers := c.ListenAddrs()
			injected := injectFaults(c, fault.key, fault.err, 3, 4)
			q, err := Start("CST_USERS_1", usersTopology("app"), Config{Kafka: kafka.Plain(brokers...), InstanceID: "i",
				CommitInterval: 20 * time.Millisecond, StateDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			defer q.Stop()
			want := map[string]string{}
			for b := 0; b < 10; b++ {
				produceUsers(t, ctx, brokers, b*1000, 1000, 300, want)
				waitCommitted(t, ctx, brokers, "app", "users")
			}
			waitTable(t, ctx, q, want)
			if injected.Load() == 0 {
				t.Fatal("no fault was injected")
			}
			t.Logf("injected %d faults; stats %+v", injected.Load(), q.Status().Stats)
		})
	}
}

// BenchmarkTableRestore measures restoring a table of one million keys
// from its changelog (no checkpoint), and the restart time with a valid
// checkpoint: go test ./exec -run '^$' -bench TableRestore -benchtime 1x
func BenchmarkTableRestore(b *testing.B) {
	const keys = 1_000_000
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	brokers := testCluster(b, 1, "users").ListenAddrs()
	want := map[string]string{}
	for i := 0; i < keys; i += 100_000 {
		produceUsers(b, ctx, brokers, i, 100_000, keys, want)
	}
	dir := b.TempDir()
	res := state.NewRocksResources(64<<20, 64<<20, 0)
	defer res.Close()
	cfg := Config{Kafka: kafka.Plain(brokers...), InstanceID: "i", CommitInterval: 100 * time.Millisecond, StateDir: dir, RocksResources: res}
	start := func() (*Query, time.Duration) {
		began := time.Now()
		q, err := Start("CST_USERS_1", usersTopology("app"), cfg)
		if err != nil {
			b.Fatal(err)
		}
		waitCommitted(b, ctx, brokers, "app", "users")
		for len(q.Stores("USERS")) == 0 {
			time.Sleep(time.Millisecond)
		}
		return q, time.Since(began)
	}
	q, took := start()
	q.Stop()
	b.Logf("first materialization of %d keys: %v (%.0f records/s)", keys, took, keys/took.Seconds())
	for i := 0; i < b.N; i++ {
		q, took = start() // valid checkpoint: nothing to restore
		q.Stop()
		b.ReportMetric(took.Seconds(), "restart-s")
		cps, _ := filepath.Glob(filepath.Join(dir, "app", "*", "USERS", "checkpoint"))
		for _, cp := range cps {
			os.Remove(cp)
		}
		cpu := processCPU()
		q, took = start() // no checkpoint: restore everything
		cpu = processCPU() - cpu
		restored := q.Status().Restored
		q.Stop()
		b.ReportMetric(took.Seconds(), "full-restore-s")
		b.ReportMetric(float64(restored)/took.Seconds(), "restored-records/s")
		// CPU per record (this process: the restore, the client's fetches
		// and the in-process broker) is what a busy machine does not blur:
		// two cores at this cost bound the records/s an idle one reaches.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(restored), "cpu-ns/record")
	}
}

// processCPU returns the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
