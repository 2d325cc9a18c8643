package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

// testLogger logs to t until the test ends (kfake may still log from its
// connection goroutines while Close runs).
func testLogger(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func startBroker(t testing.TB, cfg Config) *Broker {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = testLogger(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	return b
}

func newClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t testing.TB, addr, topic string, partitions int32) {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
}

func rec(topic string, partition int32, value string) *kgo.Record {
	return &kgo.Record{Topic: topic, Partition: partition, Value: []byte(value)}
}

// produceTxn produces values to topic/partition in one transaction of
// txid and commits or aborts it.
func produceTxn(t testing.TB, addr, txid string, commit bool, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl := newClient(t, addr, kgo.TransactionalID(txid))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("producing in %s: %v", txid, err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("ending %s: %v", txid, err)
	}
	cl.Close()
}

// consume reads topic from the start until it has want records or the
// deadline passes, and returns the values in partition, offset order.
func consume(t testing.TB, addr, topic string, level kgo.IsolationLevel, want int, wait time.Duration) []string {
	t.Helper()
	cl := newClient(t, addr,
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(level),
	)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) < want {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			break
		}
		fs.EachError(func(t2 string, p int32, err error) { t.Errorf("consuming %s[%d]: %v", t2, p, err) })
		recs = append(recs, fs.Records()...)
	}
	slices.SortFunc(recs, func(a, b *kgo.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Value))
	}
	return out
}

func endOffsets(t testing.TB, addr, topic string) map[int32]int64 {
	t.Helper()
	adm := kadm.NewClient(newClient(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[int32]int64)
	ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// freePort returns a free loopback port for a broker the test may restart
// on it. It is below the kernel's ephemeral range (testserver.FreeAddr), so
// that no process listening on port 0 takes it while the broker is down.
func freePort(t testing.TB) int {
	t.Helper()
	_, p, err := net.SplitHostPort(testserver.FreeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// TestRestartKeepsRecords: records and committed group offsets written to a
// broker with a DataDir are there after a clean restart.
func TestRestartKeepsRecords(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	if strings.HasSuffix(b.Addr(), ":0") {
		t.Fatalf("Addr() = %s, want the real port", b.Addr())
	}
	createTopic(t, b.Addr(), "events", 2)

	var want []string
	var recs []*kgo.Record
	for p := int32(0); p < 2; p++ {
		for i := range 50 {
			v := fmt.Sprintf("p%d-%02d", p, i)
			want = append(want, v)
			recs = append(recs, rec("events", p, v))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := newClient(t, b.Addr()).ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if got := consume(t, b.Addr(), "events", kgo.ReadCommitted(), len(want), 10*time.Second); !slices.Equal(got, want) {
		t.Fatalf("before restart: got %d records %v, want %d", len(got), got, len(want))
	}
	adm := kadm.NewClient(newClient(t, b.Addr()))
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: "events", Partition: 0, At: 7, LeaderEpoch: -1})
	if err := adm.CommitAllOffsets(ctx, "app", offs); err != nil {
		t.Fatal(err)
	}
	b.Close()

	b = startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	defer b.Close()
	if got := consume(t, b.Addr(), "events", kgo.ReadCommitted(), len(want), 10*time.Second); !slices.Equal(got, want) {
		t.Fatalf("after restart: got %d records %v, want %d", len(got), got, len(want))
	}
	fetched, err := kadm.NewClient(newClient(t, b.Addr())).FetchOffsets(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := fetched.Lookup("events", 0); !ok || o.At != 7 {
		t.Fatalf("committed offset after restart = %+v, want 7", o)
	}
}

// TestListenHost: the broker listens on the host it is given, not only
// 127.0.0.1, and advertises an address clients can use.
func TestListenHost(t *testing.T) {
	b := startBroker(t, Config{Addr: "127.0.0.2:0"})
	defer b.Close()
	if !strings.HasPrefix(b.Addr(), "127.0.0.2:") {
		t.Fatalf("Addr() = %s, want 127.0.0.2:<port>", b.Addr())
	}
	createTopic(t, b.Addr(), "x", 1)
	if _, err := net.Dial("tcp", strings.Replace(b.Addr(), "127.0.0.2", "127.0.0.1", 1)); err == nil {
		t.Fatalf("127.0.0.1 answers too; the listener ignored the host")
	}

	// Every interface: the listener really is on 0.0.0.0 (a client
	// reaches it through loopback and through every other local address)
	// and advertises the host name, as Kafka does.
	all := startBroker(t, Config{Addr: "0.0.0.0:0"})
	defer all.Close()
	tcp, ok := all.ListenAddr().(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		t.Fatalf("ListenAddr() = %v, want 0.0.0.0:<port>", all.ListenAddr())
	}
	host, _ := os.Hostname()
	if want := net.JoinHostPort(host, strconv.Itoa(tcp.Port)); all.Addr() != want && all.Addr() != net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port)) {
		t.Fatalf("wildcard listener advertises %s, want %s (or 127.0.0.1 when the name does not resolve)", all.Addr(), want)
	}
	createTopic(t, all.Addr(), "y", 1)
	ips := []string{"127.0.0.1"}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			ips = append(ips, n.IP.String())
		}
	}
	for _, ip := range ips {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(tcp.Port)), 5*time.Second)
		if err != nil {
			t.Fatalf("the wildcard listener does not answer on %s: %v", ip, err)
		}
		c.Close()
	}
	t.Logf("wildcard listener answered on %v; advertises %s", ips, all.Addr())
}

// TestCleanRestartWritesNoMarkers: after a clean run with committed and
// aborted transactions and plain produces, a restart aborts nothing and
// appends nothing, whether it reads from the checkpoint or (checkpoint
// deleted) from the start.
func TestCleanRestartWritesNoMarkers(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
	createTopic(t, b.Addr(), "out", 2)
	produceTxn(t, b.Addr(), "q1", true, rec("out", 0, "a"), rec("out", 1, "b"))
	produceTxn(t, b.Addr(), "q1", false, rec("out", 0, "x"))
	produceTxn(t, b.Addr(), "q2", true, rec("out", 1, "c"))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := newClient(t, b.Addr()).ProduceSync(ctx, rec("out", 0, "plain")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := endOffsets(t, b.Addr(), "out")
	b.Close()

	for _, name := range []string{"with checkpoint", "without checkpoint"} {
		if name == "without checkpoint" {
			if err := removeCheckpoint(dir); err != nil {
				t.Fatal(err)
			}
		}
		b = startBroker(t, Config{Addr: "127.0.0.1:0", DataDir: dir})
		rep := b.repair
		t.Logf("%s: %+v", name, rep)
		if len(rep.Aborted) != 0 || len(rep.Live) != 0 {
			t.Errorf("%s: repair found %v aborted, %v live; want nothing", name, rep.Aborted, rep.Live)
		}
		if name == "with checkpoint" && rep.Read != 0 {
			t.Errorf("with checkpoint: read %d partitions, want 0 (all at their clean point)", rep.Read)
		}
		if name == "without checkpoint" && rep.Read != 2 {
			t.Errorf("without checkpoint: read %d partitions, want 2", rep.Read)
		}
		if after := endOffsets(t, b.Addr(), "out"); !mapsEqual(after, before) {
			t.Errorf("%s: high watermarks %v after restart, want %v (nothing appended)", name, after, before)
		}
		want := []string{"a", "plain", "b", "c"}
		if got := consume(t, b.Addr(), "out", kgo.ReadCommitted(), len(want), 10*time.Second); !slices.Equal(got, want) {
			t.Errorf("%s: read_committed got %v, want %v", name, got, want)
		}
		b.Close()
	}
}

// TestOpenTxnSurvivesCleanRestart: a transaction still open at a clean
// shutdown is restored by kfake and must not be aborted by the repair: its
// producer commits it after the restart.
func TestOpenTxnSurvivesCleanRestart(t *testing.T) {
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	b := startBroker(t, Config{Addr: addr, DataDir: dir})
	createTopic(t, addr, "out", 1)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := newClient(t, addr, kgo.TransactionalID("q1"))
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, rec("out", 0, "early")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	b.Close()

	b = startBroker(t, Config{Addr: addr, DataDir: dir})
	defer b.Close()
	if len(b.repair.Aborted) != 0 || len(b.repair.Live) != 1 {
		t.Fatalf("repair: aborted %v, live %v; want the open transaction left live", b.repair.Aborted, b.repair.Live)
	}
	if err := p.ProduceSync(ctx, rec("out", 0, "late")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	want := []string{"early", "late"}
	if got := consume(t, addr, "out", kgo.ReadCommitted(), len(want), 10*time.Second); !slices.Equal(got, want) {
		t.Fatalf("read_committed got %v, want %v", got, want)
	}
}

func mapsEqual(a, b map[int32]int64) bool {
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
