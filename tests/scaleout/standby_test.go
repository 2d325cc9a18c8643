package scaleout

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sqlstreams/sqlstreams/tests/testserver"
)

var standbyCount = flag.Int("scaleout.standbys", 1, "num.standby.replicas of TestStandbyFailover (0 measures the same failover without standbys)")

// restoredRE finds the records each store restore read, in a server log
// (0 for a store that was up to date: a standby read to the changelog's
// end).
var restoredRE = regexp.MustCompile(`msg="store (?:restored|up to date)".*?records=(\d+)`)

// restores returns the records read by each store restore in log.
func restores(log string) []int {
	var out []int
	for _, m := range restoredRE.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

// TestStandbyFailover runs the stateless and GROUP BY queries of
// TestFaults on three servers with num.standby.replicas=1 and a long
// history in the GROUP BY's changelogs, SIGKILLs one server under load
// and keeps it down past the session timeout: its tasks move to the
// instances with their standbys, whose restores read only what the
// standby had not applied yet (not the changelog from its start); every
// instance answers the whole table again after a failover window that
// is logged; the outputs equal SQLite's, each record once.
func TestStandbyFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	c := startCluster(t, 3, "--num-standby-replicas", strconv.Itoa(*standbyCount), "--probing-rebalance-interval-ms", "2000")
	addr := c.broker.KafkaAddr
	conn := connect(t, ctx, c.servers[0])
	for _, st := range strings.Split(faultQueries, ";") {
		exec1(t, ctx, conn, strings.TrimSpace(st))
	}
	// A store with many keys (one per input record), whose changelog
	// compaction keeps long: restoring it from the start reads ~10,000
	// records per partition.
	exec1(t, ctx, conn, "CREATE TABLE byid WITH (KAFKA_TOPIC='byid') AS SELECT id, COUNT(*) AS c FROM ev GROUP BY id")
	in := &inputLog{}
	// A long history: 60,000 updates of 50 groups, ~10,000 changelog
	// records per partition.
	for range 60 {
		in.produce(t, ctx, addr, 1000)
	}
	w := newWatcher(c)
	if d, ok := w.waitWhole(ctx, 2*time.Minute, false); !ok {
		t.Fatalf("the table never showed every key on every instance: %v", d)
	}
	// Every instance keeps standbys, caught up.
	for i, s := range c.servers {
		if *standbyCount == 0 {
			break
		}
		if !s.WaitLog(90*time.Second, "standby task started") {
			t.Fatalf("i%d started no standby task", i+1)
		}
	}
	var wantCnt []string
	_, wantCnt = in.oracleSoFar(t)
	if !testserver.WaitFor(2*time.Minute, func() bool { return slices.Equal(countsOf(latestCommitted(t, ctx, addr, "cnt")), wantCnt) }) {
		t.Fatal("the GROUP BY never caught up with the history")
	}
	time.Sleep(6 * time.Second) // standbys checkpoint every 5 s

	wctx, stopWatch := context.WithCancel(ctx)
	watchDone := w.run(wctx)
	// A second watcher asks with standby reads on.
	ws := newWatcher(c)
	ws.set = "SET 'ksql.query.pull.enable.standby.reads'='true'"
	ws.set2 = "SET 'ksql.query.pull.max.allowed.offset.lag'='1000'"
	standbyDone := ws.run(wctx)
	pctx, stopProduce := context.WithCancel(ctx)
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for pctx.Err() == nil {
			<-tick.C
			in.produce(t, ctx, addr, faultRate/10)
		}
	}()
	time.Sleep(3 * time.Second)
	logAt := make([]int, len(c.servers))
	for i, s := range c.servers {
		logAt[i] = len(s.Log())
	}
	w.mark("SIGKILL i2, down for 20 s")
	ws.mark("SIGKILL i2, down for 20 s")
	killed := time.Now()
	c.servers[1].Kill()
	// Past the 10 s session timeout: its tasks fail over.
	time.Sleep(20 * time.Second)
	var after []int
	for i, s := range c.servers {
		if i != 1 {
			after = append(after, restores(s.Log()[logAt[i]:])...)
		}
	}
	restarted := time.Now()
	w.mark("restart i2")
	ws.mark("restart i2")
	if err := c.servers[1].Restart(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second)
	stopProduce()
	<-produced
	if d, ok := w.waitWhole(ctx, 2*time.Minute, true); !ok {
		t.Errorf("after the failover some instance never answered the whole table: %v", d)
	}
	stopWatch()
	<-watchDone
	<-standbyDone
	w.report(t)
	t.Log("with standby reads:")
	ws.report(t)
	failover, _ := w.errorWindow(killed, restarted, "i2")
	t.Logf("failover window: after the SIGKILL of i2 (session timeout 10 s), i1 and i3 answered errors for at most %v in a row", failover.Round(100*time.Millisecond))
	withStandby, errs := ws.errorWindow(killed, restarted, "i2")
	t.Logf("failover window with ksql.query.pull.enable.standby.reads: at most %v in a row; errors: %v", withStandby.Round(100*time.Millisecond), errs)
	if *standbyCount > 0 && withStandby > 3*time.Second {
		t.Errorf("with standby reads, i1 and i3 answered errors for %v after the kill", withStandby)
	}

	// The failed-over stores restored a little, not ~10,000 records each.
	sort.Ints(after)
	t.Logf("store restores on the survivors after the kill (records read): %v", after)
	if len(after) == 0 {
		t.Error("no store was restored on the survivors: the killed instance's tasks did not fail over")
	}
	for _, n := range after {
		if n > 3000 && *standbyCount > 0 {
			t.Errorf("a failed-over store restored %d records: its standby did not keep it up to date", n)
		}
	}

	wantBig, wantCnt := in.oracle(t)
	var gotCnt []string
	if !testserver.WaitFor(2*time.Minute, func() bool {
		gotCnt = countsOf(latestCommitted(t, ctx, addr, "cnt"))
		return slices.Equal(gotCnt, wantCnt)
	}) {
		t.Errorf("GROUP BY result differs from SQLite's:\n got %d rows, first %v\nwant %d rows, first %v", len(gotCnt), first(gotCnt), len(wantCnt), first(wantCnt))
	}
	var gotBig []string
	testserver.WaitFor(time.Minute, func() bool {
		gotBig = allCommitted(t, ctx, addr, "big")
		sort.Strings(gotBig)
		return slices.Equal(gotBig, wantBig)
	})
	if !slices.Equal(gotBig, wantBig) {
		dup, missing := diff(gotBig, wantBig)
		t.Errorf("the stateless query's output differs from SQLite's: %d records, want %d; %d duplicates (e.g. %v), %d missing (e.g. %v)",
			len(gotBig), len(wantBig), len(dup), first(dup), len(missing), first(missing))
	}
	t.Logf("%d input records; %d stateless outputs and %d groups equal SQLite's", in.n, len(wantBig), len(wantCnt))
}

// errorWindow returns the longest stretch, between from and until, in
// which an instance other than skip answered errors instead of the whole
// table (from its first error to its next whole answer), and the errors.
func (w *watcher) errorWindow(from, until time.Time, skip string) (time.Duration, []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []string
	failing := map[string]time.Time{}
	longest := time.Duration(0)
	for _, e := range w.events {
		if e.mark != "" || e.instance == skip || e.at.Before(from) || !e.at.Before(until) || e.err == "not running" {
			continue
		}
		if e.whole {
			if since, ok := failing[e.instance]; ok {
				longest = max(longest, e.at.Sub(since))
				delete(failing, e.instance)
			}
			continue
		}
		errs = append(errs, fmt.Sprintf("%s +%v: %s", e.instance, e.at.Sub(from).Round(100*time.Millisecond), e.err))
		if _, ok := failing[e.instance]; !ok {
			failing[e.instance] = e.at
		}
	}
	for _, since := range failing {
		longest = max(longest, until.Sub(since))
	}
	return longest, errs
}
