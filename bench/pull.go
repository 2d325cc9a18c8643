package main

// The pull scenario: pgbench point lookups on a 10,000-row table, served by
// sqlstreams (engine and pgwire server in this process, the broker in a
// child process as for the other scenarios) and by a local PostgreSQL 15
// (a temporary cluster on loopback, started here and stopped after),
// alternating runs, with 1 and 16 clients and pgbench's prepared and
// simple protocols.

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/server/pgwire"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

var pullMemoryLimit = flag.String("pull-memory-limit", "1GiB", "pull scenario: sqlstreams runs as under server --memory-limit of this size (its caches and the Go heap's soft limit and floor); empty: no limit")

var pullSeconds = flag.Int("pull-seconds", 0, "pull scenario: seconds per pgbench run (default 3 with -quick, 8 otherwise)")

var pullPlain = flag.Bool("pull-plain-io", false, "pull scenario: serve on pgwire's plain I/O path (pgwire.WithPlainIO: no spin reader, no serving loop), for A/B runs")

var pullPolled = flag.Bool("pull-polled-sockets", false, "pull scenario: keep every connection's socket in Go's network poller (pgwire.WithPolledSockets), as before the lone connection read its socket itself")

var pullProcs = flag.Int("pull-procs", 0, "pull scenario: GOMAXPROCS of this process (sqlstreams' engine and server) during the scenario; 0: unchanged (the number of CPUs)")

var pullRate = flag.Int("pull-rate", 0, "pull scenario: pgbench's target rate in transactions/s (-R), all clients together; 0: as fast as each system answers")

var pullLogs = flag.String("pull-logs", "", "pull scenario: keep pgbench's per-transaction logs (-l) of every run in this directory, one subdirectory per run")

var pullConfigs = flag.String("pull-configs", "", "pull scenario: run only these configurations, a comma-separated list of <protocol>/<clients> (e.g. simple/16); empty: prepared and simple with 1 and 16 clients")

var pullTrace = flag.String("trace", "", "pull scenario: write an execution trace (runtime/trace) of this process during each sqlstreams run to PREFIX.pull.<protocol>.<clients>.<run>")

// pullKeys is the table's size, as in the issue.
const pullKeys = 10_000

// pullScript is the pgbench script: one point lookup per transaction.
const pullScript = "\\set k random(1, 10000)\nSELECT * FROM kv WHERE id = :k;\n"

// pullConfig is one pgbench configuration.
type pullConfig struct {
	mode    string // prepared | simple
	clients int
}

// pullRun is one pgbench run's figures.
type pullRun struct {
	tps           float64
	p50, p99, max time.Duration
}

// pullResult is one configuration's best runs of both systems.
type pullResult struct {
	Mode       string    `json:"mode"`
	Clients    int       `json:"clients"`
	SQLTPS     float64   `json:"sqlstreams_tps"`
	PGTPS      float64   `json:"postgres_tps"`
	Ratio      float64   `json:"ratio"`
	SQLP50us   float64   `json:"sqlstreams_p50_us"`
	SQLP99us   float64   `json:"sqlstreams_p99_us"`
	PGP50us    float64   `json:"postgres_p50_us"`
	PGP99us    float64   `json:"postgres_p99_us"`
	SQLRuns    []float64 `json:"sqlstreams_tps_runs"`
	PGRuns     []float64 `json:"postgres_tps_runs"`
	Seconds    int       `json:"seconds"`
	Repeats    int       `json:"repeats"`
	MedianRati float64   `json:"median_ratio"`
}

// runPull runs the pull scenario and prints its table.
func runPull(reps int) error {
	ctx := context.Background()
	secs := *pullSeconds
	if secs <= 0 {
		secs = 8
		if *quick {
			secs = 3
		}
	}
	pgbench, err := exec.LookPath("pgbench")
	if err != nil {
		return errors.New("pgbench not found: apt-get install -y postgresql-client")
	}
	pgBin, err := postgresBin()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "sqlstreams-bench-pull-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	script := filepath.Join(work, "lookup.sql")
	if err := os.WriteFile(script, []byte(pullScript), 0o644); err != nil {
		return err
	}

	if *pullProcs > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(*pullProcs))
	}
	sqlAddr, stopSQL, err := startSQLStreamsPull(ctx)
	if err != nil {
		return fmt.Errorf("sqlstreams: %w", err)
	}
	defer stopSQL()
	pgAddr, stopPG, err := startPostgres(ctx, pgBin, work)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	defer stopPG()
	logf("pull: sqlstreams on %s, postgres on %s", sqlAddr, pgAddr)

	cfgs, err := parsePullConfigs(*pullConfigs)
	if err != nil {
		return err
	}
	var results []pullResult
	for _, cfg := range cfgs {
		var sqlRuns, pgRuns []pullRun
		for i := 0; i < reps; i++ {
			stopProfile, err := startProfile(fmt.Sprintf("pull.%s.%d.%d", cfg.mode, cfg.clients, i))
			if err != nil {
				return err
			}
			r, err := runPgbench(ctx, pgbench, work, script, sqlAddr, cfg, secs, fmt.Sprintf("s%d", i))
			stopProfile()
			if err != nil {
				return fmt.Errorf("pgbench against sqlstreams (%s, %d clients): %w", cfg.mode, cfg.clients, err)
			}
			logf("pull %s c=%d sqlstreams #%d: %.0f tps, p50 %v, p99 %v, max %v", cfg.mode, cfg.clients, i, r.tps, r.p50, r.p99, r.max)
			sqlRuns = append(sqlRuns, r)
			r, err = runPgbench(ctx, pgbench, work, script, pgAddr, cfg, secs, fmt.Sprintf("p%d", i))
			if err != nil {
				return fmt.Errorf("pgbench against postgres (%s, %d clients): %w", cfg.mode, cfg.clients, err)
			}
			logf("pull %s c=%d postgres   #%d: %.0f tps, p50 %v, p99 %v, max %v", cfg.mode, cfg.clients, i, r.tps, r.p50, r.p99, r.max)
			pgRuns = append(pgRuns, r)
		}
		results = append(results, summarizePull(cfg, secs, reps, sqlRuns, pgRuns))
	}
	return reportPull(os.Stdout, results, *jsonOut)
}

// parsePullConfigs reads -pull-configs; empty is all four.
func parsePullConfigs(s string) ([]pullConfig, error) {
	if s == "" {
		return []pullConfig{{"prepared", 1}, {"prepared", 16}, {"simple", 1}, {"simple", 16}}, nil
	}
	var cfgs []pullConfig
	for _, f := range strings.Split(s, ",") {
		mode, clients, ok := strings.Cut(strings.TrimSpace(f), "/")
		n, err := strconv.Atoi(clients)
		if !ok || err != nil || n < 1 || (mode != "prepared" && mode != "simple") {
			return nil, fmt.Errorf("-pull-configs: %q is not <prepared|simple>/<clients>", f)
		}
		cfgs = append(cfgs, pullConfig{mode, n})
	}
	return cfgs, nil
}

// startProfile starts a CPU profile of this process (sqlstreams serving
// pgbench) with -cpuprofile, and an execution trace with -trace, each
// named PREFIX.name.
func startProfile(name string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile + "." + name)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if *pullTrace != "" {
		f, err := os.Create(*pullTrace + "." + name)
		if err != nil {
			stop()
			return nil, err
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			stop()
			return nil, err
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	return stop, nil
}

// summarizePull keeps each system's best run (highest tps) with its
// latencies, and the median tps of each.
func summarizePull(cfg pullConfig, secs, reps int, sqlRuns, pgRuns []pullRun) pullResult {
	best := func(rs []pullRun, all *[]float64) pullRun {
		b := rs[0]
		for _, r := range rs {
			*all = append(*all, round(r.tps))
			if r.tps > b.tps {
				b = r
			}
		}
		return b
	}
	res := pullResult{Mode: cfg.mode, Clients: cfg.clients, Seconds: secs, Repeats: reps}
	bs, bp := best(sqlRuns, &res.SQLRuns), best(pgRuns, &res.PGRuns)
	res.SQLTPS, res.PGTPS = round(bs.tps), round(bp.tps)
	res.Ratio = round3(bs.tps / bp.tps)
	res.MedianRati = round3(medianOf(res.SQLRuns) / medianOf(res.PGRuns))
	us := func(d time.Duration) float64 { return round(float64(d) / float64(time.Microsecond)) }
	res.SQLP50us, res.SQLP99us = us(bs.p50), us(bs.p99)
	res.PGP50us, res.PGP99us = us(bp.p50), us(bp.p99)
	return res
}

func reportPull(w io.Writer, rs []pullResult, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"pull": rs})
	}
	fmt.Fprintln(w, "| protocol | clients | sqlstreams tps | postgres tps | ratio | median ratio | sqlstreams p50 µs | postgres p50 µs | sqlstreams p99 µs | postgres p99 µs |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f |\n", r.Mode, r.Clients, r.SQLTPS, r.PGTPS, r.Ratio, r.MedianRati, r.SQLP50us, r.PGP50us, r.SQLP99us, r.PGP99us)
	}
	fmt.Fprintf(w, "\npgbench -M <protocol> -c <clients> -j min(clients,2) -T %d, best of %d alternating runs per system (highest tps; latencies of that run, from pgbench's per-transaction log). ratio = sqlstreams / postgres tps.\n", rs[0].Seconds, rs[0].Repeats)
	return nil
}

// startSQLStreamsPull opens an engine on a fresh broker, serves it over
// pgwire on loopback, creates the table kv (id INT PRIMARY KEY, v VARCHAR)
// and fills it with pullKeys rows, waiting until pull queries see them all.
func startSQLStreamsPull(ctx context.Context) (addr string, stop func(), err error) {
	var cleanup []func()
	stop = func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	defer func() {
		if err != nil {
			stop()
		}
	}()
	dir, err := os.MkdirTemp("", "sqlstreams-bench-pull-sqlstreams-")
	if err != nil {
		return "", stop, err
	}
	cleanup = append(cleanup, func() { os.RemoveAll(dir) })
	b, err := startBroker(ctx, filepath.Join(dir, "kafka"))
	if err != nil {
		return "", stop, err
	}
	cleanup = append(cleanup, b.Close)
	var budget engine.MemoryBudget
	if *pullMemoryLimit != "" {
		limit, err := engine.ParseBytes(*pullMemoryLimit)
		if err == nil {
			budget, err = engine.NewMemoryBudget(limit)
		}
		if err != nil {
			return "", stop, fmt.Errorf("-pull-memory-limit: %w", err)
		}
		debug.SetMemoryLimit(budget.GoSoftLimit)
		engine.SetHeapFloor(budget.HeapFloor)
		cleanup = append(cleanup, func() { debug.SetMemoryLimit(math.MaxInt64); engine.SetHeapFloor(0) })
	}
	rocks := state.NewRocksResources(budget.BlockCache, budget.WriteBuffers, budget.ValueCache)
	cleanup = append(cleanup, func() { rocks.Close() })
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(b.addr), ServiceID: "svc_pull", InstanceID: "bench",
		StateDir: filepath.Join(dir, "state"), RocksResources: rocks})
	if err != nil {
		return "", stop, err
	}
	cleanup = append(cleanup, eng.Close)
	if _, err := eng.Execute(ctx, engine.NewSession(), "CREATE TABLE kv (id INT PRIMARY KEY, v VARCHAR) WITH (KAFKA_TOPIC='kv', VALUE_FORMAT='JSON', PARTITIONS=4)", nopWriter{}); err != nil {
		return "", stop, err
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.addr), kgo.DefaultProduceTopic("kv"))
	if err != nil {
		return "", stop, err
	}
	recs := make([]*kgo.Record, 0, pullKeys)
	for i := 1; i <= pullKeys; i++ {
		recs = append(recs, &kgo.Record{Key: binary.BigEndian.AppendUint32(nil, uint32(i)), Value: fmt.Appendf(nil, `{"V":"value-%d"}`, i)})
	}
	err = cl.ProduceSync(ctx, recs...).FirstErr()
	cl.Close()
	if err != nil {
		return "", stop, err
	}
	for deadline := time.Now().Add(2 * time.Minute); ; {
		var n countWriter
		if _, err := eng.Execute(ctx, engine.NewSession(), "SELECT * FROM kv", &n); err == nil && n == pullKeys {
			break
		}
		if time.Now().After(deadline) {
			return "", stop, fmt.Errorf("the table never reached %d rows", pullKeys)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", stop, err
	}
	opts := []pgwire.Option{pgwire.WithLogger(slog.Default()), pgwire.WithMaxConnections(100)}
	if *pullPolled {
		opts = append(opts, pgwire.WithPolledSockets())
	}
	if *pullPlain {
		opts = append(opts, pgwire.WithPlainIO())
	}
	srv := pgwire.New(eng, opts...)
	go srv.Serve(ln)
	cleanup = append(cleanup, func() { srv.Close() })
	return ln.Addr().String(), stop, nil
}

type countWriter int

func (*countWriter) Columns([]types.Column) error { return nil }
func (n *countWriter) Row(types.Row) error        { *n++; return nil }

// postgresBin finds PostgreSQL's server binaries, installing Debian's
// postgresql package when they are missing.
func postgresBin() (string, error) {
	find := func() string {
		ms, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
		sort.Strings(ms)
		if len(ms) == 0 {
			return ""
		}
		return filepath.Dir(ms[len(ms)-1])
	}
	if d := find(); d != "" {
		return d, nil
	}
	fmt.Fprintln(os.Stderr, "bench: PostgreSQL's server is not installed; installing Debian's postgresql (apt-get install -y postgresql) for the pull scenario")
	cmd := exec.Command("apt-get", "install", "-y", "postgresql")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("installing postgresql failed (%v); install it by hand: apt-get install -y postgresql", err)
	}
	if d := find(); d != "" {
		return d, nil
	}
	return "", errors.New("postgresql installed but no initdb under /usr/lib/postgresql/*/bin")
}

// startPostgres creates a temporary cluster under work, starts it on a
// free loopback port with the table kv holding the same rows, and returns
// its address and a function that stops it. PostgreSQL refuses to run as
// root, so as root it runs as the postgres user.
func startPostgres(ctx context.Context, bin, work string) (addr string, stop func(), err error) {
	data := filepath.Join(work, "pgdata")
	if err := os.Mkdir(data, 0o700); err != nil {
		return "", nil, err
	}
	var asUser []string
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return "", nil, fmt.Errorf("running as root and there is no postgres user to run PostgreSQL as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(data, uid, gid); err != nil {
			return "", nil, err
		}
		if err := os.Chmod(work, 0o755); err != nil {
			return "", nil, err
		}
		asUser = []string{"runuser", "-u", "postgres", "--"}
	}
	command := func(name string, args ...string) *exec.Cmd {
		argv := append(append(append([]string(nil), asUser...), filepath.Join(bin, name)), args...)
		return exec.CommandContext(ctx, argv[0], argv[1:]...)
	}
	if out, err := command("initdb", "-D", data, "-U", "bench", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		return "", nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	// Defaults otherwise, as a new user would run it; fsync is irrelevant
	// to a read-only benchmark and off only to make the load quick.
	srv := command("postgres", "-D", data, "-p", strconv.Itoa(port), "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+data, "-c", "max_connections=100", "-c", "fsync=off")
	logFile, err := os.Create(filepath.Join(work, "postgres.log"))
	if err != nil {
		return "", nil, err
	}
	srv.Stdout, srv.Stderr = logFile, logFile
	if err := srv.Start(); err != nil {
		logFile.Close()
		return "", nil, err
	}
	stop = func() {
		// pg_ctl signals the postmaster itself: under runuser, a signal
		// to the child process does not reach it, and it outlived the
		// scenario until it noticed its data directory gone.
		if out, err := command("pg_ctl", "stop", "-D", data, "-m", "fast", "-w", "-t", "20").CombinedOutput(); err != nil {
			logf("pull: pg_ctl stop: %v: %s", err, out)
		}
		_ = srv.Process.Signal(os.Interrupt) // fast shutdown, without runuser
		done := make(chan struct{})
		go func() { srv.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			srv.Process.Kill()
			<-done
		}
		logFile.Close()
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	psql := func(q string) error {
		cmd := exec.CommandContext(ctx, "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "bench", "-d", "postgres", "-c", q)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("psql %q: %v\n%s", q, err, out)
		}
		return nil
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if err = psql("SELECT 1"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("postgres did not start: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, q := range []string{
		"CREATE TABLE kv (id int PRIMARY KEY, v text)",
		fmt.Sprintf("INSERT INTO kv SELECT i, 'value-' || i FROM generate_series(1, %d) i", pullKeys),
		"VACUUM ANALYZE kv",
	} {
		if err := psql(q); err != nil {
			stop()
			return "", nil, err
		}
	}
	return addr, stop, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

var tpsRE = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// runPgbench runs pgbench against addr and reads its tps and, from its
// per-transaction log, the latency percentiles.
func runPgbench(ctx context.Context, pgbench, work, script, addr string, cfg pullConfig, secs int, tag string) (pullRun, error) {
	host, port, _ := net.SplitHostPort(addr)
	logDir := filepath.Join(work, "log-"+tag+"-"+cfg.mode+"-"+strconv.Itoa(cfg.clients))
	if *pullLogs != "" {
		logDir = filepath.Join(*pullLogs, tag+"-"+cfg.mode+"-"+strconv.Itoa(cfg.clients))
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return pullRun{}, err
	}
	if *pullLogs == "" {
		defer os.RemoveAll(logDir)
	}
	args := []string{"-n", "-f", script, "-M", cfg.mode,
		"-c", strconv.Itoa(cfg.clients), "-j", strconv.Itoa(min(cfg.clients, 2)), "-T", strconv.Itoa(secs),
		"-l", "--log-prefix=" + filepath.Join(logDir, "tx"),
		"-h", host, "-p", port, "-U", "bench", "postgres"}
	if *pullRate > 0 {
		args = append(args, "-R", strconv.Itoa(*pullRate))
	}
	cmd := exec.CommandContext(ctx, pgbench, args...)
	cmd.Dir = logDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return pullRun{}, fmt.Errorf("%v\n%s", err, out)
	}
	m := tpsRE.FindSubmatch(out)
	if m == nil {
		return pullRun{}, fmt.Errorf("no tps in pgbench's output:\n%s", out)
	}
	var r pullRun
	r.tps, _ = strconv.ParseFloat(string(m[1]), 64)
	lat, err := readPgbenchLogs(logDir)
	if err != nil {
		return r, err
	}
	if len(lat) == 0 {
		return r, fmt.Errorf("pgbench logged no transactions:\n%s", out)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	r.p50, r.p99, r.max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	return r, nil
}

// readPgbenchLogs reads the latency (third field, µs) of every transaction
// in pgbench's -l logs in dir.
func readPgbenchLogs(dir string) ([]time.Duration, error) {
	files, err := filepath.Glob(filepath.Join(dir, "tx*"))
	if err != nil {
		return nil, err
	}
	var lat []time.Duration
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 3 {
				continue
			}
			us, err := strconv.ParseInt(fs[2], 10, 64)
			if err != nil {
				continue
			}
			lat = append(lat, time.Duration(us)*time.Microsecond)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return lat, nil
}
