package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/datagen"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/state"
)

// The nexmark scenario (issue 34 points 3 and 6): the Nexmark queries of
// tests/nexmark over N events of the generator, preloaded into the
// persons, auctions and bids topics that tests/nexmark/ddl.sql reads.
// Each query runs alone in a fresh engine (its own service id, state
// directory and consumer group: a fresh server), exactly-once, from the
// CREATE … AS statement until its group has committed every input record
// (and every record of its repartition topics). Events per second and per
// core count all N events, as Flink's Nexmark figures do (its source
// generates all three kinds and each query reads the ones it needs).

var (
	nexQueries = flag.String("queries", "", "nexmark: comma-separated queries (default: every qN.sql of the nexmark directory)")
	nexDir     = flag.String("nexmark-dir", "", "nexmark: the directory of ddl.sql and qN.sql (default tests/nexmark of the module)")
	nexHand    = flag.Bool("nexmark-hand", true, "nexmark: also run the hand-written franz-go q1 beside sqlstreams' q1 (peak RSS comparison)")
)

// flinkPerCore is the Flink 1.13 Nexmark figure the issue quotes: events
// per second per core.
var flinkPerCore = map[string]float64{
	"q0": 155e3, "q1": 158e3, "q2": 175e3, "q3": 152e3, "q4": 34e3, "q5": 22e3, "q7": 12e3, "q8": 146e3,
	"q9": 14e3, "q10": 58e3, "q11": 40e3, "q12": 76e3, "q13": 131e3, "q14": 161e3, "q15": 72e3,
	"q16": 19e3, "q17": 117e3, "q18": 54e3, "q19": 44e3, "q20": 19e3, "q21": 98e3, "q22": 130e3,
}

type nexResult struct {
	Query        string  `json:"query"`
	Events       int     `json:"events"`
	InputRecords int64   `json:"input_records"` // records of the topics the query reads
	WallS        float64 `json:"wall_s"`
	EventsPerS   float64 `json:"events_per_s"`
	CPUPerM      float64 `json:"cpu_s_per_m_events"`
	BrokerPerM   float64 `json:"broker_cpu_s_per_m_events"`
	PerCore      float64 `json:"events_per_core_s"`
	RSSMB        float64 `json:"peak_rss_mb"`
	Flink        float64 `json:"flink_per_core"`
	Ratio        float64 `json:"ratio_to_flink"`
	// Stateful queries: bytes (keys and values) and records written to
	// the changelog topics, per event; the state directory's size at the
	// end.
	ChangelogBytesPerEvent float64 `json:"changelog_bytes_per_event,omitempty"`
	ChangelogRecords       int64   `json:"changelog_records,omitempty"`
	StoreMB                float64 `json:"store_mb,omitempty"`
	HandRSSMB              float64 `json:"handwritten_peak_rss_mb,omitempty"`
	HandCPUPerM            float64 `json:"handwritten_cpu_s_per_m_events,omitempty"`
	HandEventsPerS         float64 `json:"handwritten_events_per_s,omitempty"`

	out output // with -verify: what the query committed to its sink
}

// nexmarkDir finds tests/nexmark: from the module root (go run ./bench)
// or from bench/ (go test).
func nexmarkDir() (string, error) {
	if *nexDir != "" {
		return *nexDir, nil
	}
	for _, d := range []string{"tests/nexmark", "../tests/nexmark"} {
		if _, err := os.Stat(filepath.Join(d, "ddl.sql")); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("tests/nexmark not found from %s (use -nexmark-dir)", mustWd())
}

func mustWd() string { d, _ := os.Getwd(); return d }

// nexmarkQueries lists the queries to run: names given, or every qN.sql
// in dir, in numeric order.
func nexmarkQueries(dir, names string) ([]string, error) {
	if names != "" {
		var qs []string
		for _, q := range strings.Split(names, ",") {
			q = strings.ToLower(strings.TrimSpace(q))
			if _, err := os.Stat(filepath.Join(dir, q+".sql")); err != nil {
				return nil, fmt.Errorf("query %q: %w", q, err)
			}
			qs = append(qs, q)
		}
		return qs, nil
	}
	files, err := filepath.Glob(filepath.Join(dir, "q*.sql"))
	if err != nil {
		return nil, err
	}
	var qs []string
	for _, f := range files {
		qs = append(qs, strings.TrimSuffix(filepath.Base(f), ".sql"))
	}
	num := func(q string) int { n, _ := strconv.Atoi(strings.TrimPrefix(q, "q")); return n }
	sort.Slice(qs, func(i, j int) bool { return num(qs[i]) < num(qs[j]) })
	return qs, nil
}

// The streams and tables of ddl.sql and their topics.
var nexSources = []struct {
	re    *regexp.Regexp
	topic string
}{
	{readsRe(`bid`), "bids"},
	{readsRe(`auction(_t)?`), "auctions"},
	{readsRe(`person(_t)?`), "persons"},
	{readsRe(`side_input`), "side_input"}, // q13
}

// readsRe matches a FROM or JOIN of source (a regular expression), the
// second source of a comma join (FROM a [AS] x, source), or a window
// table function's input (TUMBLE(TABLE source, …)).
func readsRe(source string) *regexp.Regexp {
	return regexp.MustCompile(`(?i)(\b(from|join)\s+|\bfrom\s+\w+(\s+(as\s+)?\w+)?\s*,\s*|\(\s*table\s+)` + source + `\b`)
}

var ddlName = regexp.MustCompile(`(?i)^\s*CREATE\s+(?:STREAM|TABLE)\s+(\w+)`)

// nexInputs returns the topics a query's text reads.
func nexInputs(text string) []string {
	var ts []string
	for _, s := range nexSources {
		// Comments name sources too: look at the statement only.
		if s.re.MatchString(stripComments(text)) {
			ts = append(ts, s.topic)
		}
	}
	return ts
}

func stripComments(text string) string {
	var b strings.Builder
	for _, line := range strings.Split(text, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// preloadNexmark creates the three topics (2 partitions each, as ddl.sql
// declares them) and produces the generator's first n events (seed 1)
// with their event times, starting an hour ago (the broker's retention
// would delete records stamped with the generator's default 2024 from
// the output and changelog topics).
func preloadNexmark(ctx context.Context, brokers []string, n int) (map[string]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...),
		kgo.ProducerBatchMaxBytes(1<<20), kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(200_000), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, t := range []string{"persons", "auctions", "bids"} {
		resp, err := adm.CreateTopic(ctx, 2, -1, nil, t)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return nil, fmt.Errorf("creating %s: %w", t, err)
		}
	}
	var (
		mu    sync.Mutex
		first error
	)
	promise := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	}
	gen, err := datagen.New(datagen.Config{Quickstart: "nexmark", Seed: 1, Base: time.Now().Add(-time.Hour)})
	if err != nil {
		return nil, err
	}
	counts := map[string]int64{}
	var rec datagen.Record
	var last time.Time
	for range n {
		rec.Key, rec.Value = rec.Key[:0], rec.Value[:0]
		gen.Next(&rec)
		counts[rec.Topic]++
		if rec.Timestamp.After(last) {
			last = rec.Timestamp
		}
		cl.Produce(ctx, &kgo.Record{Topic: rec.Topic, Key: bytes.Clone(rec.Key), Value: bytes.Clone(rec.Value), Timestamp: rec.Timestamp}, promise)
	}
	// The end of the input, as Flink's bounded source ends it with a
	// watermark past every window: one bid two days after the last
	// event closes the windows (a window table function's default grace
	// is a day less its size), so that a query emitting closed windows
	// (q7's EMIT FINAL side) does that work within the run.
	end := last.Add(48 * time.Hour)
	counts["bids"]++
	cl.Produce(ctx, &kgo.Record{Topic: "bids", Key: []byte("0"), Timestamp: end,
		Value: fmt.Appendf(nil, `{"auction":0,"bidder":0,"price":0,"channel":"end","url":"","dateTime":%d,"extra":""}`, end.UnixMilli())}, promise)
	// q13's side input (ddl.sql's side_input): the suite's 10,000 rows,
	// key i and value 'i', stamped before the events so that a join task
	// reading them and the bids in timestamp order takes them first.
	if resp, err := adm.CreateTopic(ctx, 2, -1, nil, "side_input"); err != nil || resp.Err != nil {
		return nil, fmt.Errorf("creating side_input: %v %v", err, resp.Err)
	}
	for i := range nexSideInput {
		counts["side_input"]++
		cl.Produce(ctx, &kgo.Record{Topic: "side_input", Key: strconv.AppendInt(nil, int64(i), 10),
			Value: fmt.Appendf(nil, `{"value":"%d"}`, i), Timestamp: time.Now().Add(-2 * time.Hour)}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, err
	}
	return counts, first
}

// nexSideInput is the number of rows of q13's side input (the suite's
// side_input_gen.sh).
const nexSideInput = 10_000

// runNexmark runs the scenario: one broker, the events preloaded once,
// then each query in a fresh engine.
func runNexmark(n int) ([]nexResult, error) {
	ctx := context.Background()
	dir, err := nexmarkDir()
	if err != nil {
		return nil, err
	}
	queries, err := nexmarkQueries(dir, *nexQueries)
	if err != nil {
		return nil, err
	}
	ddl, err := os.ReadFile(filepath.Join(dir, "ddl.sql"))
	if err != nil {
		return nil, err
	}
	var dataDir string
	if !*memory {
		d, err := os.MkdirTemp("", "sqlstreams-bench-broker-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dataDir = d
	}
	b, err := startBroker(ctx, dataDir)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	theBroker = b
	defer func() { theBroker = nil }()
	brokers := []string{b.addr}
	began := time.Now()
	counts, err := preloadNexmark(ctx, brokers, n)
	if err != nil {
		return nil, fmt.Errorf("preloading: %w", err)
	}
	logf("nexmark: preloaded %d events in %v: %v", n, time.Since(began).Round(time.Millisecond), counts)
	adm, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	admin := kadm.NewClient(adm)
	resetPeakRSS()
	var results []nexResult
	for _, q := range queries {
		text, err := os.ReadFile(filepath.Join(dir, q+".sql"))
		if err != nil {
			return results, err
		}
		r, err := runNexmarkQuery(ctx, admin, brokers, q, string(ddl), string(text), n, counts)
		if err != nil {
			return results, fmt.Errorf("%s: %w", q, err)
		}
		if q == "q1" && *nexHand {
			if err := runNexmarkHandQ1(ctx, admin, brokers, n, &r); err != nil {
				return results, fmt.Errorf("q1 handwritten: %w", err)
			}
		}
		logf("nexmark %s: %.1f s, %.0f events/s, %.2f CPU s/M (broker %.2f), %.0f MB peak RSS", q, r.WallS, r.EventsPerS, r.CPUPerM, r.BrokerPerM, r.RSSMB)
		results = append(results, r)
	}
	return results, nil
}

func runNexmarkQuery(ctx context.Context, admin *kadm.Client, brokers []string, q, ddl, text string, n int, counts map[string]int64) (nexResult, error) {
	res := nexResult{Query: q, Events: n, Flink: flinkPerCore[q]}
	inputs := nexInputs(text)
	if len(inputs) == 0 {
		return res, fmt.Errorf("reads none of bid, auction(_t), person(_t)")
	}
	for _, t := range inputs {
		res.InputRecords += counts[t]
	}
	ends, err := admin.ListEndOffsets(ctx, inputs...)
	if err != nil {
		return res, err
	}
	svc := "nex_" + q
	stateDir, err := os.MkdirTemp("", "sqlstreams-bench-state-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(stateDir)
	rocks := state.NewRocksResources(0, 0, 0) // a default server's budgets
	defer rocks.Close()
	eng, err := engine.Open(ctx, engine.Config{Kafka: kafka.Plain(brokers...), ServiceID: svc, InstanceID: "bench",
		StateDir: stateDir, RocksResources: rocks, Threads: *threads})
	if err != nil {
		return res, err
	}
	closed := false
	defer func() {
		if !closed {
			eng.Close()
		}
	}()
	exec := func(stmt string) error {
		if _, err := eng.Execute(ctx, engine.NewSession(), stmt, nopWriter{}); err != nil {
			return fmt.Errorf("%s: %w", strings.TrimSpace(stmt), err)
		}
		return nil
	}
	// Only the sources the query reads: ddl.sql's tables start queries
	// of their own (materializing person_t and auction_t), which would
	// run beside every query.
	for _, st := range sql.Segments(ddl) {
		m := ddlName.FindStringSubmatch(stripComments(st.Text))
		if m == nil || !readsRe(m[1]).MatchString(stripComments(text)) {
			continue
		}
		if err := exec(st.Text); err != nil {
			return res, err
		}
	}
	stmts := sql.Segments(text)
	if len(stmts) == 0 {
		return res, fmt.Errorf("no statement")
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
			// The query's CREATE … AS SELECT (CSAS_/CTAS_), not the
			// queries ddl.sql's source tables start (CST_).
			if strings.HasPrefix(g, svc+"_query_C") && (strings.Contains(g, "_CSAS_") || strings.Contains(g, "_CTAS_")) && !strings.HasSuffix(g, "_MATERIALIZE") {
				group = g
			}
		}
		return group
	}
	done := func(g string) (bool, error) { return nexDone(ctx, admin, g, ends) }
	// Return what earlier queries left to the OS, so that the peak RSS
	// (reset to the current RSS at the start) is this query's.
	debug.FreeOSMemory()
	r, err := measureUntil(ctx, admin, "nexmark."+q, groupOf, ends, done, func() (func(), error) {
		for _, st := range stmts {
			if err := exec(st.Text); err != nil {
				return func() {}, err
			}
		}
		return func() {}, nil
	})
	if err != nil {
		return res, err
	}
	res.WallS = round3(r.wall.Seconds())
	res.EventsPerS = round(float64(n) / r.wall.Seconds())
	res.CPUPerM = round3(r.cpu.Seconds() * 1e6 / float64(n))
	res.BrokerPerM = round3(r.brokerCPU.Seconds() * 1e6 / float64(n))
	if r.cpu > 0 {
		res.PerCore = round(float64(n) / r.cpu.Seconds())
	}
	res.RSSMB = round(r.rssMB)
	if res.Flink > 0 {
		res.Ratio = round3(res.PerCore / res.Flink)
	}
	res.StoreMB = round3(float64(dirSize(stateDir)) / (1 << 20))
	if *verbose {
		if tds, err := admin.ListTopics(ctx); err == nil {
			var own []string
			for _, t := range tds.Names() {
				if strings.HasPrefix(t, group) {
					own = append(own, t)
				}
			}
			logf("nexmark %s: group %s, internal topics %v", q, group, own)
		}
	}
	eng.Close()
	closed = true
	// The changelogs, read back (outside the measurement).
	if tds, err := admin.ListTopics(ctx); err == nil {
		for _, t := range tds.Names() {
			if strings.HasPrefix(t, group) && strings.HasSuffix(t, "-changelog") {
				recs, bytes, err := topicBytes(ctx, brokers, t)
				if err != nil {
					return res, err
				}
				res.ChangelogRecords += recs
				res.ChangelogBytesPerEvent += float64(bytes) / float64(n)
			}
		}
	}
	res.ChangelogBytesPerEvent = round3(res.ChangelogBytesPerEvent)
	sink := "NEXMARK_" + strings.ToUpper(q)
	if *verify {
		if res.out, err = readOutput(ctx, brokers, sink); err != nil {
			return res, err
		}
		logf("verify: %s: sqlstreams wrote %d records; first: %s", q, res.out.n, res.out.sample)
	}
	deleteTopics(ctx, admin, svc, sink)
	return res, nil
}

// nexDone reports whether group has committed the end of every input
// partition and of its repartition topics (written in transactions whose
// offsets commit with them: once the inputs are committed nothing more
// is written there; a topic's last offset is then a commit marker, which
// the committed offset may stop before).
func nexDone(ctx context.Context, admin *kadm.Client, group string, ends kadm.ListedOffsets) (bool, error) {
	ok, err := committedAll(ctx, admin, group, ends)
	if err != nil || !ok {
		return ok, err
	}
	tds, err := admin.ListTopics(ctx)
	if err != nil {
		return false, nil
	}
	var internal []string
	for _, t := range tds.Names() {
		// Repartition topics and a foreign-key join's subscription
		// topics: every internal topic but the changelogs.
		if strings.HasPrefix(t, group) && !strings.HasSuffix(t, "-changelog") {
			internal = append(internal, t)
		}
	}
	if len(internal) == 0 {
		return true, nil
	}
	// The group's offsets first, then the ends: whatever a transaction
	// whose offsets are in offs wrote is then within the ends.
	offs, err := admin.FetchOffsets(ctx, group)
	if err != nil {
		return false, nil
	}
	iends, err := admin.ListEndOffsets(ctx, internal...)
	if err != nil {
		return false, nil
	}
	done := true
	iends.Each(func(e kadm.ListedOffset) {
		if e.Offset == 0 {
			return
		}
		o, ok := offs.Lookup(e.Topic, e.Partition)
		if !ok || o.Err != nil || o.At < e.Offset-1 {
			done = false
		}
	})
	return done, nil
}

// topicBytes reads a topic to its end (read_uncommitted: every record
// written, aborted ones too) and returns its records and key+value bytes.
func topicBytes(ctx context.Context, brokers []string, topic string) (recs, size int64, err error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, 0, err
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, 0, err
	}
	want := map[int32]int64{}
	ends.Each(func(e kadm.ListedOffset) {
		if e.Offset > 0 {
			want[e.Partition] = e.Offset
		}
	})
	seen := map[int32]int64{}
	idle := time.Now()
	for len(want) > 0 && time.Since(idle) < 10*time.Second {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if fs.NumRecords() > 0 {
			idle = time.Now()
		}
		fs.EachRecord(func(r *kgo.Record) {
			recs++
			size += int64(len(r.Key) + len(r.Value))
			seen[r.Partition] = r.Offset
		})
		for p, end := range want {
			// The last offsets may be control records, never returned.
			if s, ok := seen[p]; ok && s >= end-2 {
				delete(want, p)
			}
		}
	}
	return recs, size, nil
}

func dirSize(dir string) int64 {
	var total int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total
}

// runNexmarkHandQ1 runs the hand-written franz-go q1 (hand_nexmark.go)
// over the same bids, measured as the query was, and adds its figures.
func runNexmarkHandQ1(ctx context.Context, admin *kadm.Client, brokers []string, n int, res *nexResult) error {
	ends, err := admin.ListEndOffsets(ctx, "bids")
	if err != nil {
		return err
	}
	cfg := handConfig{brokers: brokers, group: "hand_nexmark_q1", input: "bids", output: "hand_nexmark_q1_out"}
	if _, err := admin.CreateTopic(ctx, 2, -1, nil, cfg.output); err != nil {
		return err
	}
	debug.FreeOSMemory()
	r, err := measure(ctx, admin, "nexmark.q1.handwritten", func() string { return cfg.group }, ends, func() (func(), error) {
		return startHand(ctx, cfg, &nexQ1{out: cfg.output}), nil
	})
	if err != nil {
		return err
	}
	if *verify {
		// The hand-written q1 must have written what sqlstreams did.
		if r.out, err = readOutput(ctx, brokers, cfg.output); err != nil {
			return err
		}
		if r.out.n != res.out.n || r.out.digest != res.out.digest {
			return fmt.Errorf("hand-written q1 wrote %d records (digest %x, first %q), sqlstreams %d (digest %x, first %q)",
				r.out.n, r.out.digest, r.out.sample, res.out.n, res.out.digest, res.out.sample)
		}
	}
	res.HandRSSMB = round(r.rssMB)
	res.HandCPUPerM = round3(r.cpu.Seconds() * 1e6 / float64(n))
	res.HandEventsPerS = round(float64(n) / r.wall.Seconds())
	deleteTopics(ctx, admin, cfg.group, cfg.output)
	return nil
}

// reportNexmark writes the per-query table (or JSON).
func reportNexmark(w io.Writer, rs []nexResult, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"nexmark": rs})
	}
	fmt.Fprintln(w, "| query | events | input records | events/s | CPU s/M events (ours) | CPU s/M events (broker) | events/s per core | Flink 1.13 per core | ratio | peak RSS MB | changelog B/event | store MB |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range rs {
		clog, store := "", ""
		if r.ChangelogRecords > 0 {
			clog = fmt.Sprintf("%.1f", r.ChangelogBytesPerEvent)
		}
		if r.StoreMB > 0.01 {
			store = fmt.Sprintf("%.1f", r.StoreMB)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.0f | %.2f | %.2f | %.0f | %.0f | %.2f | %.0f | %s | %s |\n", r.Query, r.Events, r.InputRecords, r.EventsPerS, r.CPUPerM, r.BrokerPerM, r.PerCore, r.Flink, r.Ratio, r.RSSMB, clog, store)
	}
	for _, r := range rs {
		if r.HandRSSMB > 0 {
			fmt.Fprintf(w, "\n%s hand-written franz-go: %.0f events/s, %.2f CPU s/M events, peak RSS %.0f MB; sqlstreams / hand-written peak RSS %.2f.\n", r.Query, r.HandEventsPerS, r.HandCPUPerM, r.HandRSSMB, r.RSSMB/r.HandRSSMB)
		}
	}
	fmt.Fprintln(w, "\nevents/s = all N generated events / wall time from the CREATE … AS until the query's group committed its inputs' ends; per core = N / CPU s of this process (user+system). ratio = per core / Flink's. peak RSS: VmHWM reset before each query (the broker runs in a child process).")
	return nil
}
