// Command bench compares sqlstreams with hand-written franz-go pipelines
// doing the same work, end to end through the embedded broker. See
// README.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/registry"
	"github.com/sqlstreams/sqlstreams/state"
	"github.com/sqlstreams/sqlstreams/types"
)

type result struct {
	Name          string    `json:"name"`
	Records       int       `json:"records"`
	Repeats       int       `json:"repeats"`
	SQLRPS        float64   `json:"sqlstreams_rps"`
	HandRPS       float64   `json:"handwritten_rps"`
	Ratio         float64   `json:"ratio"`
	MedianRatio   float64   `json:"median_ratio"` // median sqlstreams rps / median handwritten rps
	SQLCPU        float64   `json:"sqlstreams_cpu_s_per_m"`
	HandCPU       float64   `json:"handwritten_cpu_s_per_m"`
	SQLRSS        float64   `json:"sqlstreams_peak_rss_mb"`
	HandRSS       float64   `json:"handwritten_peak_rss_mb"`
	SQLRuns       []float64 `json:"sqlstreams_rps_runs"`
	HandRuns      []float64 `json:"handwritten_rps_runs"`
	RSSResettable bool      `json:"peak_rss_per_run"`
}

type run struct {
	wall, cpu time.Duration
	rssMB     float64
	gcs       uint32 // GC cycles during the run (the whole process)
	allocMB   float64
	brokerCPU time.Duration // the broker process's
	out       output        // with -verify
}

var (
	quick           = flag.Bool("quick", false, "≈300,000 records per scenario, 3 repeats (under 2 minutes)")
	jsonOut         = flag.Bool("json", false, "print one JSON object instead of the markdown table")
	scenario        = flag.String("scenario", "", "run only this scenario (stateless, aggregate, hopping, tumbling, topn, distinct; stateless-avro, join-st, join-ss, pull, memory, latency and nexmark run only when named)")
	records         = flag.Int("records", 0, "records per scenario (default 300,000 with -quick, 5,000,000 otherwise)")
	repeats         = flag.Int("repeats", 0, "runs of each system per scenario (default 3 with -quick, 5 otherwise)")
	memory          = flag.Bool("memory", false, "in-memory broker (default: a temporary data dir, as the server runs)")
	brokerInProcess = flag.Bool("broker-in-process", false, "run the broker in this process, beside the system under test (default: a child process)")
	cpuprofile      = flag.String("cpuprofile", "", "write a CPU profile of each measured run to PREFIX.<scenario>.<system>.<run>")
	memprofile      = flag.String("memprofile", "", "write a heap profile at the end of each measured run to PREFIX.<scenario>.<system>.<run>")
	verbose         = flag.Bool("v", false, "log progress and engine warnings to stderr")
	syncCommits     = flag.Bool("sync-store-commits", false, "sqlstreams applies each transaction's state-store writes before the next transaction starts (engine.Config.SyncStoreCommits), as before they were applied in the background")
	dslStore        = flag.String("default-dsl-store", "rocksDB", "where sqlstreams keeps its state stores: rocksDB (the default) or in_memory (engine.Config.MemoryStores), as the hand-written pipeline keeps its state in maps")
	threads         = flag.Int("threads", 1, "sqlstreams' stream threads per query (num.stream.threads); the hand-written pipeline stays one")
	instances       = flag.Int("instances", 1, "sqlstreams instances (engines of one service, each its own state dir and group members) sharing the queries, all in this process")
)

var scenarios = []string{"stateless", "aggregate", "hopping", "tumbling", "topn", "distinct"}

func main() {
	if spec := os.Getenv(brokerEnv); spec != "" {
		serveBroker(spec)
		return
	}
	flag.Parse()
	n, reps := 5_000_000, 5
	if *quick {
		n, reps = 300_000, 3
	}
	if *records > 0 {
		n = *records
	}
	if *repeats > 0 {
		reps = *repeats
	}
	level := slog.LevelError + 4
	if *verbose {
		level = slog.LevelWarn
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
	todo := scenarios
	if *scenario != "" {
		if *scenario == "memory" {
			if *records == 0 {
				n = 1_000_000 // the figure: 1M groups per query
				if *quick {
					n = 100_000
				}
			}
			if err := runMemory(n); err != nil {
				fatal(fmt.Errorf("memory: %w", err))
			}
			return
		}
		if *scenario == "latency" {
			if *repeats == 0 {
				reps = 3
			}
			if err := runLatency(reps); err != nil {
				fatal(fmt.Errorf("latency: %w", err))
			}
			return
		}
		if *scenario == "nexmark" {
			if *records == 0 {
				n = 1_000_000
				if *quick {
					n = 200_000
				}
			}
			rs, err := runNexmark(n)
			if err != nil {
				fatal(fmt.Errorf("nexmark: %w", err))
			}
			if err := reportNexmark(os.Stdout, rs, *jsonOut); err != nil {
				fatal(err)
			}
			return
		}
		if *scenario == "idle" {
			if err := runIdle(); err != nil {
				fatal(fmt.Errorf("idle: %w", err))
			}
			return
		}
		if *scenario == "pull" {
			if err := runPull(reps); err != nil {
				fatal(fmt.Errorf("pull: %w", err))
			}
			return
		}
		if !slices.Contains(scenarios, *scenario) && *scenario != "stateless-avro" && !isJoin(*scenario) {
			fatal(fmt.Errorf("unknown scenario %q (want one of %s, stateless-avro, join-st, join-ss, pull, idle, memory, latency or nexmark)", *scenario, strings.Join(scenarios, ", ")))
		}
		if isJoin(*scenario) && *records == 0 && !*quick {
			n = 1_000_000 // see README.md: a join run is slower than the others
		}
		todo = []string{*scenario}
	}
	var results []result
	for _, sc := range todo {
		r, err := runScenario(sc, n, reps)
		if err != nil {
			fatal(fmt.Errorf("%s: %w", sc, err))
		}
		results = append(results, r)
	}
	if err := report(os.Stdout, results, *jsonOut); err != nil {
		fatal(err)
	}
}

// report writes the results as the markdown table, or with asJSON as one
// object {"scenarios": [...]}.
func report(w io.Writer, results []result, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"scenarios": results})
	}
	fmt.Fprintln(w, "| scenario | records | sqlstreams rec/s | handwritten rec/s | ratio | median ratio | sqlstreams CPU s/M | handwritten CPU s/M | sqlstreams peak RSS MB | handwritten peak RSS MB |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %d | %.0f | %.0f | %.2f | %.2f | %.2f | %.2f | %.0f | %.0f |\n", r.Name, r.Records, r.SQLRPS, r.HandRPS, r.Ratio, r.MedianRatio, r.SQLCPU, r.HandCPU, r.SQLRSS, r.HandRSS)
	}
	fmt.Fprintf(w, "\nbest of %d alternating runs per system (highest records/s; CPU and RSS from that run). ratio = sqlstreams / handwritten records/s; median ratio = the same over each system's median run.\n", results[0].Repeats)
	if !results[0].RSSResettable {
		fmt.Fprintln(w, "peak RSS: VmHWM could not be reset between runs, so it is process-wide and monotone (includes the broker and earlier runs).")
	} else {
		where := "the system's process (the broker runs in a child process; its CPU is not counted either)"
		if *brokerInProcess {
			where = "still process-wide: it includes the in-process broker holding the input"
		}
		fmt.Fprintf(w, "peak RSS: VmHWM reset before each run (/proc/self/clear_refs); %s.\n", where)
	}
	return nil
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	if *verbose {
		fmt.Fprintf(os.Stderr, format+"\n", args...)
	}
}

func runScenario(sc string, n, reps int) (result, error) {
	ctx := context.Background()
	var dataDir string
	if !*memory {
		d, err := os.MkdirTemp("", "sqlstreams-bench-broker-")
		if err != nil {
			return result{}, err
		}
		defer os.RemoveAll(d)
		dataDir = d
	}
	b, err := startBroker(ctx, dataDir)
	if err != nil {
		return result{}, err
	}
	defer b.Close()
	theBroker = b
	defer func() { theBroker = nil }()
	brokers := []string{b.addr}
	input := "bids_" + strings.ReplaceAll(sc, "-", "_")
	var schemas *registry.Client
	var encode func([]byte) ([]byte, error)
	if sc == "stateless-avro" {
		cl, stop, err := startRegistry(ctx, brokers)
		if err != nil {
			return result{}, err
		}
		defer stop()
		schemas = cl
		if encode, err = avroEncoder(schemas, input); err != nil {
			return result{}, err
		}
	}
	began := time.Now()
	var median int64
	inputs := []string{input}
	if isJoin(sc) {
		left, right := joinTopics(sc)
		input, inputs = left, []string{left, right}
		err = preloadJoin(ctx, brokers, sc, n)
	} else {
		median, err = preload(ctx, brokers, input, n, encode)
	}
	if err != nil {
		return result{}, fmt.Errorf("preloading: %w", err)
	}
	logf("%s: preloaded %d records in %v (median price %d)", sc, n, time.Since(began), median)

	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return result{}, err
	}
	defer adm.Close()
	admin := kadm.NewClient(adm)
	ends, err := admin.ListEndOffsets(ctx, inputs...)
	if err != nil {
		return result{}, err
	}

	res := result{Name: sc, Records: n, Repeats: reps, RSSResettable: resetPeakRSS()}
	var sqlRuns, handRuns []run
	for i := 0; i < reps; i++ {
		id := fmt.Sprintf("%s_r%d", sc, i)
		r, err := runSQL(ctx, admin, brokers, sc, id, input, median, ends, schemas)
		if err != nil {
			return res, fmt.Errorf("sqlstreams run %d: %w", i, err)
		}
		logf("%s sqlstreams #%d: %v, %.0f rec/s, %.2f CPU s (broker %.2f), %d GCs, %.0f MB allocated", sc, i, r.wall, float64(n)/r.wall.Seconds(), r.cpu.Seconds(), r.brokerCPU.Seconds(), r.gcs, r.allocMB)
		sqlRuns = append(sqlRuns, r)
		r, err = runHandwritten(ctx, admin, brokers, sc, id, input, median, ends, schemas)
		if err != nil {
			return res, fmt.Errorf("handwritten run %d: %w", i, err)
		}
		logf("%s handwritten #%d: %v, %.0f rec/s, %.2f CPU s (broker %.2f), %d GCs, %.0f MB allocated", sc, i, r.wall, float64(n)/r.wall.Seconds(), r.cpu.Seconds(), r.brokerCPU.Seconds(), r.gcs, r.allocMB)
		handRuns = append(handRuns, r)
	}
	if *verify {
		if err := sameOutputs(sc, sqlRuns, handRuns); err != nil {
			return res, err
		}
	}
	best := func(rs []run, all *[]float64) run {
		for _, r := range rs {
			*all = append(*all, round(float64(n)/r.wall.Seconds()))
		}
		s := append([]run(nil), rs...)
		sort.Slice(s, func(i, j int) bool { return s[i].wall < s[j].wall })
		return s[0]
	}
	bs, bh := best(sqlRuns, &res.SQLRuns), best(handRuns, &res.HandRuns)
	res.SQLRPS, res.HandRPS = round(float64(n)/bs.wall.Seconds()), round(float64(n)/bh.wall.Seconds())
	res.Ratio = round3(res.SQLRPS / res.HandRPS)
	res.MedianRatio = round3(medianOf(res.SQLRuns) / medianOf(res.HandRuns))
	res.SQLCPU, res.HandCPU = round3(bs.cpu.Seconds()*1e6/float64(n)), round3(bh.cpu.Seconds()*1e6/float64(n))
	res.SQLRSS, res.HandRSS = round(bs.rssMB), round(bh.rssMB)
	return res, nil
}

// medianOf returns the median of xs (the mean of the middle two for an
// even count).
func medianOf(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// theBroker is the running scenario's broker.
var theBroker *benchBroker

func round(f float64) float64  { return float64(int64(f + 0.5)) }
func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// measure runs start, waits until group has committed the input's end
// offsets, then stops. Wall time and CPU cover start to fully committed.
// With -cpuprofile, the run's CPU profile (of this process: the system,
// the GC, and with -broker-in-process the broker) goes to a file named
// with profile; with -memprofile, the heap profile at its end.
func measure(ctx context.Context, admin *kadm.Client, profile string, groupOf func() string, ends kadm.ListedOffsets, start func() (stop func(), err error)) (run, error) {
	return measureUntil(ctx, admin, profile, groupOf, ends, func(g string) (bool, error) { return committedAll(ctx, admin, g, ends) }, start)
}

// measureUntil is measure with its own test of the end: done(group)
// reports whether the group has processed everything (ends only feeds
// the -v progress log).
func measureUntil(ctx context.Context, admin *kadm.Client, profile string, groupOf func() string, ends kadm.ListedOffsets, done func(group string) (bool, error), start func() (stop func(), err error)) (run, error) {
	runtime.GC()
	resetPeakRSS()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile + "." + profile)
		if err != nil {
			return run{}, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return run{}, err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	cpu0, bcpu0 := cpuTime(), theBroker.cpu()
	t0 := time.Now()
	stop, err := start()
	if err != nil {
		return run{}, err
	}
	defer stop()
	deadline := t0.Add(30 * time.Minute)
	lastLog := t0
	for {
		if time.Now().After(deadline) {
			return run{}, fmt.Errorf("timed out waiting for committed offsets")
		}
		if *verbose && time.Since(lastLog) > 10*time.Second {
			lastLog = time.Now()
			if g := groupOf(); g != "" {
				if offs, err := admin.FetchOffsets(ctx, g); err == nil {
					var at []string
					ends.Each(func(e kadm.ListedOffset) {
						o, _ := offs.Lookup(e.Topic, e.Partition)
						at = append(at, fmt.Sprintf("%s/%d %d of %d", e.Topic, e.Partition, o.At, e.Offset))
					})
					logf("%s after %v: %s", g, time.Since(t0).Round(time.Second), strings.Join(at, ", "))
				}
			} else {
				logf("%v: no group yet", time.Since(t0).Round(time.Second))
			}
		}
		if g := groupOf(); g != "" {
			ok, err := done(g)
			if err != nil {
				return run{}, err
			}
			if ok {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r := run{wall: time.Since(t0), cpu: cpuTime() - cpu0, rssMB: peakRSSMB(), brokerCPU: theBroker.cpu() - bcpu0}
	if *memprofile != "" {
		if err := writeHeapProfile(*memprofile + "." + profile); err != nil {
			return r, err
		}
	}
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	r.gcs, r.allocMB = m1.NumGC-m0.NumGC, float64(m1.TotalAlloc-m0.TotalAlloc)/(1<<20)
	return r, nil
}

// writeHeapProfile writes the heap profile: what was live at the last GC
// (inuse_*) and what the process allocated since it started (alloc_*;
// compare two with pprof -diff_base).
func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func committedAll(ctx context.Context, admin *kadm.Client, group string, ends kadm.ListedOffsets) (bool, error) {
	offs, err := admin.FetchOffsets(ctx, group)
	if err != nil {
		return false, nil // group not there yet
	}
	done := true
	ends.Each(func(e kadm.ListedOffset) {
		o, ok := offs.Lookup(e.Topic, e.Partition)
		if !ok || o.Err != nil || o.At < e.Offset {
			done = false
		}
	})
	return done, nil
}

func runSQL(ctx context.Context, admin *kadm.Client, brokers []string, sc, id, input string, median int64, ends kadm.ListedOffsets, schemas *registry.Client) (run, error) {
	svc := "svc_" + id
	stateDir, err := os.MkdirTemp("", "sqlstreams-bench-state-")
	if err != nil {
		return run{}, err
	}
	defer os.RemoveAll(stateDir)
	// The state memory budgets of a server with default flags.
	rocks := state.NewRocksResources(0, 0, 0)
	defer rocks.Close()
	cfg := engine.Config{Kafka: kafka.Plain(brokers...), ServiceID: svc, InstanceID: "bench", StateDir: stateDir, RocksResources: rocks,
		Threads: *threads, SyncStoreCommits: *syncCommits, MemoryStores: strings.EqualFold(*dslStore, "in_memory")}
	format := "JSON"
	if schemas != nil {
		cfg.Schemas, format = schemas, "AVRO"
	}
	eng, err := engine.Open(ctx, cfg)
	if err != nil {
		return run{}, err
	}
	closed := false
	defer func() {
		if !closed {
			eng.Close()
		}
	}()
	// More instances of the service: they follow the command topic and
	// join every query's group.
	var others []*engine.Engine
	defer func() {
		for _, o := range others {
			o.Close()
		}
	}()
	for i := 2; i <= *instances; i++ {
		ocfg := cfg
		ocfg.InstanceID = fmt.Sprintf("bench%d", i)
		ocfg.StateDir = filepath.Join(stateDir, ocfg.InstanceID)
		o, err := engine.Open(ctx, ocfg)
		if err != nil {
			return run{}, err
		}
		others = append(others, o)
	}
	exec := func(stmt string) error {
		_, err := eng.Execute(ctx, engine.NewSession(), stmt, nopWriter{})
		if err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
		return nil
	}
	eventTime := ""
	if sc == "hopping" || sc == "tumbling" {
		eventTime = ", TIMESTAMP='dateTime'"
	}
	out := "out_" + id
	var stmt string
	if isJoin(sc) {
		stmts := joinStatements(sc, out)
		for _, s := range stmts[:len(stmts)-1] {
			if err := exec(s); err != nil {
				return run{}, err
			}
		}
		stmt = stmts[len(stmts)-1]
	} else if err := exec(fmt.Sprintf("CREATE STREAM bids (auction VARCHAR KEY, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, dateTime BIGINT, extra VARCHAR) WITH (KAFKA_TOPIC='%s', VALUE_FORMAT='%s', PARTITIONS=4%s)", input, format, eventTime)); err != nil {
		return run{}, err
	}
	switch sc {
	case "join-st", "join-ss":
	case "stateless", "stateless-avro":
		stmt = fmt.Sprintf("CREATE STREAM out WITH (KAFKA_TOPIC='%s') AS SELECT auction, bidder, price * 908 / 1000 AS euros, channel FROM bids WHERE price > %d EMIT CHANGES", out, median)
	case "hopping":
		stmt = fmt.Sprintf("CREATE TABLE hops WITH (KAFKA_TOPIC='%s') AS SELECT auction, COUNT(*) AS n FROM bids WINDOW HOPPING (SIZE 10 SECONDS, ADVANCE BY 2 SECONDS, GRACE PERIOD 0 SECONDS) GROUP BY auction", out)
	case "tumbling":
		stmt = fmt.Sprintf("CREATE TABLE tops WITH (KAFKA_TOPIC='%s') AS SELECT auction, MAX(price) AS top FROM bids WINDOW TUMBLING (SIZE 10 SECONDS, GRACE PERIOD 0 SECONDS) GROUP BY auction", out)
	case "topn":
		stmt = fmt.Sprintf("CREATE TABLE top3 WITH (KAFKA_TOPIC='%s') AS SELECT * FROM (SELECT auction, bidder, price, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rn FROM bids) WHERE rn <= 3", out)
	case "distinct":
		stmt = fmt.Sprintf("CREATE TABLE bidders WITH (KAFKA_TOPIC='%s') AS SELECT auction, COUNT(DISTINCT bidder) AS bidders FROM bids GROUP BY auction", out)
	default:
		stmt = fmt.Sprintf("CREATE TABLE agg WITH (KAFKA_TOPIC='%s') AS SELECT auction, COUNT(*) AS n, SUM(price) AS total, MAX(price) AS top FROM bids GROUP BY auction", out)
	}
	group := ""
	groupOf := func() string {
		if group != "" {
			return group
		}
		gs, err := admin.ListGroups(ctx)
		if err != nil {
			return ""
		}
		for _, g := range gs.Groups() {
			// The query that reads the input (a CTAS whose own stores
			// do not answer pull queries, neither an aggregation nor a
			// Top-N, also starts <id>_MATERIALIZE, which reads its
			// output).
			// (A join's CREATE TABLE of its input starts a query
			// that materializes it: not the one measured.)
			if strings.HasPrefix(g, svc+"_query_") && !strings.HasSuffix(g, "_MATERIALIZE") && (!isJoin(sc) || strings.Contains(g, "_CSAS_")) {
				group = g
			}
		}
		return group
	}
	r, err := measure(ctx, admin, sc+".sqlstreams."+strings.TrimPrefix(id, sc+"_r"), groupOf, ends, func() (func(), error) {
		return func() {}, exec(stmt)
	})
	if err != nil {
		return r, err
	}
	eng.Close()
	closed = true
	for _, o := range others {
		o.Close()
	}
	others = nil
	if *verify {
		if r.out, err = readOutput(ctx, brokers, out); err != nil {
			return r, err
		}
		logf("verify: sqlstreams wrote %d records to %s; first: %s", r.out.n, out, r.out.sample)
	}
	deleteTopics(ctx, admin, svc, out)
	return r, nil
}

func runHandwritten(ctx context.Context, admin *kadm.Client, brokers []string, sc, id, input string, median int64, ends kadm.ListedOffsets, schemas *registry.Client) (run, error) {
	cfg := handConfig{brokers: brokers, group: "hand_" + id, input: input, output: "hand_out_" + id, median: median}
	var proc processor
	switch sc {
	case "stateless-avro":
		p, err := newStatelessAvro(schemas, median, cfg.output)
		if err != nil {
			return run{}, err
		}
		proc = p
	case "stateless":
		proc = &stateless{median: median, out: cfg.output}
	case "hopping":
		cfg.changelog = cfg.group + "-changelog"
		proc = newWindow(cfg.output, cfg.changelog, 10_000, 2_000, false)
	case "tumbling":
		cfg.changelog = cfg.group + "-changelog"
		proc = newWindow(cfg.output, cfg.changelog, 10_000, 10_000, true)
	case "topn":
		cfg.changelog = cfg.group + "-changelog"
		proc = newTopN(cfg.output, cfg.changelog, 4)
	case "distinct":
		cfg.changelog = cfg.group + "-changelog"
		cfg.changelog2 = cfg.group + "-values-changelog"
		proc = newDistinct(cfg.output, cfg.changelog, cfg.changelog2)
	case "join-st", "join-ss":
		dir, err := os.MkdirTemp("", "sqlstreams-bench-hand-")
		if err != nil {
			return run{}, err
		}
		defer os.RemoveAll(dir)
		db, err := openHandRocks(dir)
		if err != nil {
			return run{}, err
		}
		defer db.close()
		_, cfg.table = joinTopics(sc)
		if sc == "join-st" {
			cfg.tableFirst = true
			proc = newTableJoin(cfg.table, cfg.output, db)
		} else {
			cfg.changelog = cfg.group + "-bids-changelog"
			cfg.changelog2 = cfg.group + "-auctions-changelog"
			proc = newStreamJoin(input, cfg.output, cfg.changelog, cfg.changelog2, db)
		}
	default:
		cfg.changelog = cfg.group + "-changelog"
		proc = newAggregate(cfg.output, cfg.changelog)
	}
	// Topics are created outside the measurement, as sqlstreams' CREATE
	// STREAM/TABLE … AS creates its own inside it (a few ms).
	if _, err := admin.CreateTopic(ctx, 4, -1, nil, cfg.output); err != nil {
		return run{}, err
	}
	for _, clog := range []string{cfg.changelog, cfg.changelog2} {
		if clog == "" {
			continue
		}
		compact := "compact"
		if _, err := admin.CreateTopic(ctx, 4, -1, map[string]*string{"cleanup.policy": &compact}, clog); err != nil {
			return run{}, err
		}
	}
	r, err := measure(ctx, admin, sc+".handwritten."+strings.TrimPrefix(id, sc+"_r"), func() string { return cfg.group }, ends, func() (func(), error) {
		return startHand(ctx, cfg, proc), nil
	})
	if err != nil {
		return r, err
	}
	if *verify {
		if r.out, err = readOutput(ctx, brokers, cfg.output); err != nil {
			return r, err
		}
		logf("verify: handwritten wrote %d records to %s; first: %s", r.out.n, cfg.output, r.out.sample)
		if c, ok := proc.(interface{ outputs() int }); ok {
			logf("verify: handwritten committed %d output records", c.outputs())
		}
	}
	deleteTopics(ctx, admin, cfg.group, cfg.output)
	return r, nil
}

// startHand runs the hand-written pipeline in a goroutine and returns the
// function that stops it.
func startHand(ctx context.Context, cfg handConfig, proc processor) func() {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- runHand(rctx, cfg, proc) }()
	return func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "bench: handwritten:", err)
		}
	}
}

// startTempBroker starts a scenario's broker on a temporary data
// directory (also given to the scenario for its state) and sets
// theBroker; stop stops it and removes the directory.
func startTempBroker(ctx context.Context, name string) (dir string, brokers []string, stop func(), err error) {
	dir, err = os.MkdirTemp("", "sqlstreams-bench-"+name+"-")
	if err != nil {
		return "", nil, nil, err
	}
	b, err := startBroker(ctx, dir+"/broker")
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, nil, err
	}
	theBroker = b
	return dir, []string{b.addr}, func() { b.Close(); os.RemoveAll(dir) }, nil
}

// deleteTopics drops a finished run's output, changelog and internal topics
// so that the in-memory broker does not keep growing across runs.
func deleteTopics(ctx context.Context, admin *kadm.Client, prefix string, extra ...string) {
	tds, err := admin.ListTopics(ctx)
	if err != nil {
		return
	}
	names := extra
	for _, t := range tds.Names() {
		if strings.HasPrefix(t, prefix) {
			names = append(names, t)
		}
	}
	_, _ = admin.DeleteTopics(ctx, names...)
}

type nopWriter struct{}

func (nopWriter) Columns([]types.Column) error { return nil }
func (nopWriter) Row(types.Row) error          { return nil }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS resets VmHWM to the current RSS (Linux ≥ 4.0, writing 5 to
// /proc/self/clear_refs); it reports whether that worked.
func resetPeakRSS() bool {
	f, err := os.OpenFile("/proc/self/clear_refs", os.O_WRONLY, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = io.WriteString(f, "5")
	return err == nil
}

func peakRSSMB() float64 { return procStatusMB("VmHWM:") }

// procStatusMB returns a kB field of /proc/self/status (VmHWM:, VmRSS:)
// in MiB, or 0.
func procStatusMB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}
