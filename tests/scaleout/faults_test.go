package scaleout

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

var allFaults = flag.Bool("scaleout.all", false, "run every fault scenario (SIGSTOP past the session timeout, adding and removing an instance), not only those CI runs")

const (
	faultKeys    = 50    // GROUP BY keys
	faultRate    = 1_000 // records per second produced during the faults
	faultParts   = 6     // input partitions
	faultQueries = `
CREATE STREAM ev (id VARCHAR KEY, k VARCHAR, n BIGINT) WITH (KAFKA_TOPIC='ev', VALUE_FORMAT='JSON', PARTITIONS=6);
CREATE STREAM big WITH (KAFKA_TOPIC='big') AS SELECT id, k, n FROM ev WHERE n > 100;
CREATE TABLE cnt WITH (KAFKA_TOPIC='cnt') AS SELECT k, COUNT(*) AS c, SUM(n) AS s FROM ev GROUP BY k`
	// The same SQL, run by SQLite over the input.
	oracleBig = `SELECT id, k, n FROM ev WHERE n > 100 ORDER BY id`
	oracleCnt = `SELECT k, COUNT(*), SUM(n) FROM ev GROUP BY k ORDER BY k`
)

// fault is one step of a fault scenario.
type fault struct {
	name string
	ci   bool // run in CI (the others need -scaleout.all)
	do   func(t *testing.T, c *cluster)
}

// TestFaults runs a stateless query and a GROUP BY with a repartition on
// three servers sharing a standalone broker while records stream in, and
// injects faults one after another: SIGKILL of an instance (restarted
// later), a rolling restart of all three and, with -scaleout.all, SIGSTOP
// past the session timeout then SIGCONT (the zombie's transactions are
// fenced) and adding then removing an instance. Throughout, every
// instance is asked the GROUP BY table: an answer is either the whole
// table (every key) or an error, never a partial table; how long each
// fault kept some instance from answering is logged. At the end both
// outputs, read with read_committed, equal SQLite's result of the same
// SQL over the input, every record exactly once.
func TestFaults(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Fatal("the sqlite3 command (Debian package sqlite3) is the batch oracle of this test; scripts/deps.sh installs it")
	}
	faults := []fault{
		{"SIGKILL i2 under load, restart it 5 s later", true, func(t *testing.T, c *cluster) {
			c.servers[1].Kill()
			time.Sleep(5 * time.Second)
			if err := c.servers[1].Restart(); err != nil {
				t.Fatal(err)
			}
		}},
		{"rolling restart of all three", true, func(t *testing.T, c *cluster) {
			for _, s := range c.servers[:3] {
				if err := s.Stop(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
				if err := s.Restart(); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"SIGSTOP i3 for 15 s (session timeout 10 s), then SIGCONT", false, func(t *testing.T, c *cluster) {
			p, _ := os.FindProcess(c.servers[2].Pid())
			if err := p.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			time.Sleep(15 * time.Second)
			if err := p.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
		}},
		{"add i4", false, func(t *testing.T, c *cluster) { c.add(t, "i4") }},
		{"remove i1 (SIGTERM, not restarted)", false, func(t *testing.T, c *cluster) {
			if err := c.servers[0].Stop(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}},
	}
	var run []fault
	for _, f := range faults {
		if f.ci || *allFaults {
			run = append(run, f)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	c := startCluster(t, 3)
	addr := c.broker.KafkaAddr
	conn := connect(t, ctx, c.servers[0])
	for _, st := range strings.Split(faultQueries, ";") {
		exec1(t, ctx, conn, strings.TrimSpace(st))
	}

	in := &inputLog{}
	// Every key first, so that from then on the whole table has them all.
	in.produce(t, ctx, addr, faultKeys)
	w := newWatcher(c)
	if d, ok := w.waitWhole(ctx, 90*time.Second, false); !ok {
		t.Fatalf("the table never showed every key on every instance: %v", d)
	}
	underFaults(t, ctx, c, w, func() { in.produce(t, ctx, addr, faultRate/10) }, run, 3*time.Second, 5*time.Second)
	wantBig, wantCnt := checkFaultOutputs(t, ctx, kafka.Plain(addr), in)
	t.Logf("%d input records; %d stateless outputs and %d groups equal SQLite's", in.n, len(wantBig), len(wantCnt))
}

// underFaults runs produce every 100 ms while, after warmup, it runs
// each fault in turn, settle apart; then it waits until every instance
// answers the whole table again and reports what w saw: how long each
// fault kept an instance from answering, and any partial answer (a
// failure).
func underFaults(t *testing.T, ctx context.Context, c *cluster, w *watcher, produce func(), faults []fault, warmup, settle time.Duration) {
	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := w.run(wctx)
	pctx, stopProduce := context.WithCancel(ctx)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for pctx.Err() == nil {
			<-tick.C
			produce()
		}
	}()
	time.Sleep(warmup)
	for _, f := range faults {
		began := time.Now()
		w.mark(f.name)
		f.do(t, c)
		t.Logf("fault %q done in %v", f.name, time.Since(began).Round(100*time.Millisecond))
		time.Sleep(settle)
	}
	stopProduce()
	<-produced
	// After the last fault, every instance answers the whole table again.
	if d, ok := w.waitWhole(ctx, 2*time.Minute, true); !ok {
		t.Errorf("after the faults some instance never answered the whole table: %v", d)
	}
	stopWatch()
	<-watchDone
	w.report(t)
}

// checkFaultOutputs checks that the GROUP BY's and the stateless query's
// outputs (cnt and big), read with read_committed through kp, equal
// SQLite's answer over the input: every record once. It returns that
// answer.
func checkFaultOutputs(t *testing.T, ctx context.Context, kp kafka.Profile, in *inputLog) (wantBig, wantCnt []string) {
	t.Helper()
	wantBig, wantCnt = in.oracle(t)
	var gotCnt []string
	if !testserver.WaitFor(2*time.Minute, func() bool {
		gotCnt = countsOf(latestCommittedWith(t, ctx, kp, "cnt"))
		return slices.Equal(gotCnt, wantCnt)
	}) {
		t.Errorf("GROUP BY result differs from SQLite's:\n got %d rows, first %v\nwant %d rows, first %v", len(gotCnt), first(gotCnt), len(wantCnt), first(wantCnt))
	}
	gotBig := allCommittedWith(t, ctx, kp, "big")
	sort.Strings(gotBig)
	if !slices.Equal(gotBig, wantBig) {
		dup, missing := diff(gotBig, wantBig)
		t.Errorf("the stateless query's output differs from SQLite's: %d records, want %d; %d duplicates (e.g. %v), %d missing (e.g. %v)",
			len(gotBig), len(wantBig), len(dup), first(dup), len(missing), first(missing))
	}
	return wantBig, wantCnt
}

// inputLog produces the input and remembers it for the oracle.
type inputLog struct {
	// keys is the number of GROUP BY keys (0: faultKeys).
	keys int
	mu   sync.Mutex
	n    int
	csv  bytes.Buffer
	cl   *kgo.Client
}

// produce writes n more records: ids in order, keys k0…k49 (or as many
// as l.keys) in turn, n from 0 to 199.
func (l *inputLog) produce(t *testing.T, ctx context.Context, addr string, n int) {
	l.produceWith(t, ctx, kafka.Plain(addr), n)
}

// produceWith is produce with a client of the profile kp.
func (l *inputLog) produceWith(t *testing.T, ctx context.Context, kp kafka.Profile, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cl == nil {
		cl, err := kp.NewClient(kgo.DefaultProduceTopic("ev"))
		if err != nil {
			t.Error(err)
			return
		}
		l.cl = cl
	}
	var recs []*kgo.Record
	for range n {
		i := l.n
		l.n++
		id, k, v := fmt.Sprintf("e%07d", i), fmt.Sprintf("k%d", i%cmp.Or(l.keys, faultKeys)), (i*37)%200
		recs = append(recs, &kgo.Record{Key: []byte(id), Value: fmt.Appendf(nil, `{"K":%q,"N":%d}`, k, v)})
		fmt.Fprintf(&l.csv, "%s,%s,%d\n", id, k, v)
	}
	if err := l.cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Errorf("producing: %v", err)
	}
}

// oracle runs the queries' SQL in SQLite over the input.
func (l *inputLog) oracle(t *testing.T) (big, cnt []string) {
	l.mu.Lock()
	if l.cl != nil {
		l.cl.Close()
		l.cl = nil
	}
	l.mu.Unlock()
	return l.oracleSoFar(t)
}

// oracleSoFar is oracle over the input produced so far; more may follow.
func (l *inputLog) oracleSoFar(t *testing.T) (big, cnt []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	dir := t.TempDir()
	csv := filepath.Join(dir, "ev.csv")
	if err := os.WriteFile(csv, l.csv.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(q string) []string {
		script := fmt.Sprintf("CREATE TABLE ev (id TEXT, k TEXT, n INTEGER);\n.mode csv\n.import %s ev\n.mode list\n.separator |\n%s;\n", csv, q)
		cmd := exec.Command("sqlite3", ":memory:")
		cmd.Stdin = strings.NewReader(script)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sqlite3: %v\n%s", err, out)
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	big, cnt = run(oracleBig), run(oracleCnt)
	sort.Strings(big)
	sort.Strings(cnt)
	return big, cnt
}

// countsOf turns the GROUP BY's latest values into "k|c|s" rows, sorted.
func countsOf(m map[string]map[string]any) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s|%v|%v", k, v["C"], v["S"]))
	}
	sort.Strings(out)
	return out
}

// allCommitted returns every record of topic (read_committed) as
// "id|k|n", in no order.
func allCommitted(t *testing.T, ctx context.Context, addr, topic string) []string {
	t.Helper()
	return allCommittedWith(t, ctx, kafka.Plain(addr), topic)
}

// allCommittedWith is allCommitted with clients of the profile kp.
func allCommittedWith(t *testing.T, ctx context.Context, kp kafka.Profile, topic string) []string {
	t.Helper()
	var out []string
	readCommittedWith(t, ctx, kp, topic, func(r *kgo.Record) {
		var v struct {
			K string
			N int64
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Errorf("%s: value %q: %v", topic, r.Value, err)
		}
		out = append(out, fmt.Sprintf("%s|%s|%d", r.Key, v.K, v.N))
	})
	return out
}

// diff returns the rows got has more often than want, and those it lacks.
func diff(got, want []string) (extra, missing []string) {
	n := map[string]int{}
	for _, g := range got {
		n[g]++
	}
	for _, w := range want {
		n[w]--
	}
	for r, c := range n {
		for ; c > 0; c-- {
			extra = append(extra, r)
		}
		for ; c < 0; c++ {
			missing = append(missing, r)
		}
	}
	sort.Strings(extra)
	sort.Strings(missing)
	return extra, missing
}

func first(s []string) []string { return s[:min(len(s), 3)] }

// watcher asks every instance the GROUP BY table twice a second and
// keeps what each answer was: the whole table, an error, or (a failure)
// a partial table.
type watcher struct {
	c *cluster
	// keys is the number of keys of the whole table (0: faultKeys).
	keys int
	// set, when not empty, is a statement each connection runs first
	// (a SET of a session property).
	set, set2 string
	mu        sync.Mutex
	events    []watchEvent
	partial   []string
}

type watchEvent struct {
	at       time.Time
	instance string
	whole    bool
	err      string
	mark     string // a fault began
}

func newWatcher(c *cluster) *watcher { return &watcher{c: c} }

// ask asks s the table once: whether it answered the whole table, or the
// error; a partial table is recorded as a failure.
func (w *watcher) ask(ctx context.Context, s *testserver.Server, record bool) (bool, string) {
	if !s.Running() {
		return false, "not running"
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, "postgres://sqlstreams@"+s.PGAddr+"/sqlstreams?sslmode=disable")
	if err != nil {
		return false, "connect: " + err.Error()
	}
	defer conn.Close(context.Background())
	for _, set := range []string{w.set, w.set2} {
		if set == "" {
			continue
		}
		if _, err := conn.Exec(cctx, set); err != nil {
			return false, err.Error()
		}
	}
	got, err := rows(cctx, conn, "SELECT k, c FROM cnt")
	keys := cmp.Or(w.keys, faultKeys)
	if err != nil {
		return false, err.Error()
	}
	if len(got) != keys && record {
		w.mu.Lock()
		w.partial = append(w.partial, fmt.Sprintf("%s at %s: %d of %d keys", s.PGAddr, time.Now().Format("15:04:05.000"), len(got), keys))
		w.mu.Unlock()
	}
	if len(got) != keys {
		have := map[string]bool{}
		for _, r := range got {
			k, _, _ := strings.Cut(r, "|")
			have[k] = true
		}
		var missing []string
		for i := range keys {
			if k := fmt.Sprintf("k%d", i); !have[k] {
				missing = append(missing, k)
			}
		}
		return false, fmt.Sprintf("partial: %d of %d keys, missing %v", len(got), keys, missing)
	}
	if len(got) != keys {
		return false, "partial"
	}
	return true, ""
}

// waitWhole waits until every running instance answers the whole table;
// record says whether a partial answer is a failure (not before the
// table has every key).
func (w *watcher) waitWhole(ctx context.Context, d time.Duration, record bool) (string, bool) {
	var last string
	ok := testserver.WaitFor(d, func() bool {
		for _, s := range w.c.list() {
			if !s.Running() {
				continue
			}
			if whole, err := w.ask(ctx, s, record); !whole {
				last = s.PGAddr + ": " + err
				return false
			}
		}
		return true
	})
	return last, ok
}

func (w *watcher) mark(name string) {
	w.mu.Lock()
	w.events = append(w.events, watchEvent{at: time.Now(), mark: name})
	w.mu.Unlock()
}

func (w *watcher) run(ctx context.Context) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			for i, s := range w.c.list() {
				whole, err := w.ask(ctx, s, true)
				if ctx.Err() != nil {
					return
				}
				w.mu.Lock()
				w.events = append(w.events, watchEvent{at: time.Now(), instance: fmt.Sprintf("i%d", i+1), whole: whole, err: err})
				w.mu.Unlock()
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	return done
}

// report fails the test for any partial answer and logs, per fault, how
// long instances that were running answered errors instead of the table.
func (w *watcher) report(t *testing.T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.partial {
		t.Errorf("a partial table was answered: %s", p)
	}
	var fault string
	var began time.Time
	failing := map[string]time.Time{}
	longest := time.Duration(0)
	asked, whole := 0, 0
	flush := func() {
		if fault != "" {
			t.Logf("fault %q: longest stretch of an instance answering an error instead of the whole table: %v", fault, longest.Round(100*time.Millisecond))
		}
	}
	for _, e := range w.events {
		if e.mark != "" {
			flush()
			fault, began, longest = e.mark, e.at, 0
			clear(failing)
			continue
		}
		if e.err == "not running" {
			delete(failing, e.instance)
			continue
		}
		asked++
		if e.whole {
			whole++
			if since, ok := failing[e.instance]; ok {
				longest = max(longest, e.at.Sub(since))
				delete(failing, e.instance)
			}
		} else if _, ok := failing[e.instance]; !ok {
			failing[e.instance] = e.at
		}
	}
	for _, since := range failing {
		longest = max(longest, time.Since(since))
	}
	flush()
	_ = began
	t.Logf("pull queries during the faults: %d asked of running instances, %d answered the whole table, the rest errors; %d partial", asked, whole, len(w.partial))
}
