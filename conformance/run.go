package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/sqlstreams/sqlstreams/broker"
	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/kafka"
	"github.com/sqlstreams/sqlstreams/registry"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// Options configure Run.
type Options struct {
	// Parallel is how many cases run at once, each on its own broker and
	// engine (default GOMAXPROCS).
	Parallel int
	// Timeout bounds one case (default 60 s).
	Timeout time.Duration
	// Logger receives the engines' logs (default: discarded).
	Logger *slog.Logger
	// Progress, when set, is called after each case.
	Progress func(Result)
}

// Status is how a case ended.
type Status string

// Case outcomes.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is one case's outcome.
type Result struct {
	File   string `json:"file"`
	Name   string `json:"name"`
	Status Status `json:"status"`
	// Kind is "records" for a case comparing output records, "error"
	// for one expecting an error.
	Kind string `json:"kind"`
	// Reason is a skipped case's named reason, or a failure's class.
	Reason string `json:"reason,omitempty"`
	// Detail is a failure's readable diff.
	Detail string `json:"detail,omitempty"`
	// MessageDiffers marks an expected-error case that did fail, but
	// whose message does not contain ksqlDB's.
	MessageDiffers bool    `json:"message_differs,omitempty"`
	Seconds        float64 `json:"seconds"`
}

// Run runs every case and returns their results in the cases' order.
func Run(ctx context.Context, cases []Case, o Options) []Result {
	if o.Parallel <= 0 {
		o.Parallel = runtime.GOMAXPROCS(0)
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return runEach(len(cases), o, func(i int) Result {
		r := runCase(ctx, &cases[i], o)
		r.File, r.Name = cases[i].File, cases[i].Name
		r.Kind = "records"
		if cases[i].Expected != nil {
			r.Kind = "error"
		}
		return r
	})
}

// runEach runs one(i) for each of n cases, o.Parallel at once, timing
// each and handing it to o.Progress as it ends.
func runEach(n int, o Options, one func(i int) Result) []Result {
	out := make([]Result, n)
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			start := time.Now()
			r := one(i)
			r.Seconds = time.Since(start).Seconds()
			out[i] = r
			if o.Progress != nil {
				mu.Lock()
				o.Progress(r)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

const serviceID = "qtt"

// harnessProperties are the properties of ksqlDB's test files that
// configure ksqlDB's test harness, or that ksqlDB's own server takes and
// ignores, rather than the engine: the runner applies or drops them
// itself (a session's SET refuses them), each for the reason given.
var harnessProperties = map[string]string{
	// How the harness compares records (compare.go).
	"use.exact.numeric.comparison": "the runner's record comparison",
	// ksqlDB runs its test cases under both planners; the cases check
	// results, which do not depend on it.
	"ksql.new.query.planner.enabled": "ksqlDB's experimental planner switch",
	// No longer in ksqlDB's KsqlConfig, which ignores unknown keys.
	"ksql.sink.partitions": "ignored by ksqlDB itself",
	"ksql.sink.replicas":   "ignored by ksqlDB itself",
	// Decides only the names of Kafka Streams' internal changelog
	// topics, which test cases' records do not show.
	"ksql.streams.topology.optimization": "internal topic names only",
}

// caseProperties sets a test case's properties on s as SET does (the
// engine's property registry checks each), except the harness's own.
func caseProperties(s *engine.Session, props map[string]string) error {
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if _, ok := harnessProperties[k]; ok {
			continue
		}
		if err := engine.SetProperty(s.Props, k, props[k]); err != nil {
			return fmt.Errorf("test property %s: %w", k, err)
		}
	}
	return nil
}

// needsRegistry reports whether a case names a schema registry format.
var registryFormat = regexp.MustCompile(`(?i)AVRO|PROTOBUF|JSON_SR`)

func needsRegistry(c *Case) bool {
	for _, s := range c.Statements {
		if registryFormat.MatchString(s) {
			return true
		}
	}
	for _, v := range c.Properties {
		if registryFormat.MatchString(v) {
			return true
		}
	}
	for _, t := range c.Topics {
		if registryFormat.MatchString(t.KeyFormat + t.ValueFormat) {
			return true
		}
	}
	return false
}

type env struct {
	o        Options
	brk      *broker.Broker
	kp       kafka.Profile // the embedded broker's
	schemas  types.SchemaSource
	reg      *registry.Registry
	closeReg func()
	eng      *engine.Engine
	cl       *kgo.Client
	adm      *kadm.Client
	dir      string
}

func (e *env) close() {
	if e.eng != nil {
		e.eng.Close()
	}
	if e.cl != nil {
		e.cl.Close()
	}
	if e.closeReg != nil {
		e.closeReg()
	}
	if e.brk != nil {
		e.brk.Close()
	}
	if e.dir != "" {
		os.RemoveAll(e.dir)
	}
}

func fail(reason, format string, args ...any) Result {
	return Result{Status: Fail, Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

func runCase(parent context.Context, c *Case, o Options) (res Result) {
	if c.Disabled {
		return Result{Status: Skip, Reason: "disabled in the test file"}
	}
	if r := staticSkip(c); r != "" {
		return Result{Status: Skip, Reason: r}
	}
	ctx, cancel := context.WithTimeout(parent, o.Timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			res = fail("runner panic", "%v", p)
		}
	}()
	e := &env{o: o}
	defer e.close()
	if err := e.start(ctx, needsRegistry(c)); err != nil {
		return fail("environment", "%v", err)
	}
	if err := e.createTopics(ctx, c); err != nil {
		return fail("environment", "creating topics: %v", err)
	}
	if c.SQLTest {
		return e.runSQLTest(ctx, c)
	}

	s := engine.NewSession()
	s.Props["auto.offset.reset"] = "earliest"
	if err := caseProperties(s, c.Properties); err != nil {
		return fail("property refused", "%v", err)
	}
	for i, text := range c.Statements {
		for _, st := range sql.Split(text) {
			if strings.TrimSpace(st) == "" {
				continue
			}
			sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
			_, err := e.eng.Execute(sctx, s, st, discard{})
			scancel()
			if err == nil {
				continue
			}
			if c.Expected != nil {
				return expectedError(c, err)
			}
			if r := skipFor(st, err); r != "" {
				return Result{Status: Skip, Reason: r, Detail: err.Error()}
			}
			return fail(classify(err), "statement %d failed: %v\n  %s", i+1, err, oneLine(st))
		}
	}

	if err := e.produce(ctx, c); err != nil {
		if c.Expected != nil {
			return expectedError(c, err)
		}
		return fail("producing input", "%v", err)
	}
	why, err := e.waitCaughtUp(ctx)
	if c.Expected != nil {
		// A query that failed on a record (ksqlDB's StreamsException)
		// is the expected error, whether or not the others caught up.
		for _, q := range e.eng.Catalog().Queries() {
			if st, ok := e.eng.QueryStatus(q.ID); ok && st.State != "RUNNING" && st.Err != "" {
				return expectedError(c, errors.New(st.Err))
			}
		}
		// ksqlDB's StreamsException is a record that failed in a
		// processor, which stops its query; ours skips that record and
		// logs it (DESIGN: bad records), which is the same error.
		if strings.HasSuffix(c.Expected.Type, ".StreamsException") {
			for _, q := range e.eng.Catalog().Queries() {
				if st, ok := e.eng.QueryStatus(q.ID); ok && st.BadRecords > 0 {
					return expectedError(c, fmt.Errorf("query %s skipped %d bad records", q.ID, st.BadRecords))
				}
			}
		}
	}
	if err != nil || why != "" {
		if err == nil {
			err = errors.New(why)
		}
		// A query that failed is why the input was not consumed: say
		// so, rather than report a hang.
		for _, q := range e.eng.Catalog().Queries() {
			if st, ok := e.eng.QueryStatus(q.ID); ok && st.State != "RUNNING" && st.Err != "" {
				return fail("query failed", "query %s is %s: %s", q.ID, st.State, st.Err)
			}
		}
		return fail("timeout", "the queries did not consume all input: %v", err)
	}
	if c.Expected != nil {
		return fail("no error", "wanted an error (%s: %q), the statements succeeded", c.Expected.Type, c.Expected.Message)
	}
	return e.verify(ctx, c)
}

// expectedError judges an error against the case's expectedException.
// Java exception types do not map onto ours; the error itself and its
// message are what is compared.
func expectedError(c *Case, err error) Result {
	if c.Expected == nil {
		return fail(classify(err), "%v", err)
	}
	r := Result{Status: Pass}
	if c.Expected.Message != "" && !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(c.Expected.Message)) {
		r.MessageDiffers = true
		r.Detail = fmt.Sprintf("error %q does not contain ksqlDB's %q", err.Error(), c.Expected.Message)
	}
	return r
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

type discard struct{}

func (discard) Columns([]types.Column) error { return nil }
func (discard) Row(types.Row) error          { return nil }

func (e *env) start(ctx context.Context, withRegistry bool) error {
	var err error
	if e.dir, err = os.MkdirTemp("", "sqlstreams-test-"); err != nil {
		return err
	}
	if e.brk, err = broker.Start(ctx, broker.Config{Addr: "127.0.0.1:0", Logger: e.o.Logger}); err != nil {
		return err
	}
	e.kp = kafka.Plain(e.brk.Addr())
	if withRegistry {
		reg, err := registry.Open(ctx, registry.Config{Kafka: e.kp, Logger: e.o.Logger})
		if err != nil {
			return fmt.Errorf("schema registry: %w", err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			reg.Close()
			return err
		}
		hs := &http.Server{Handler: reg.Handler(), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = hs.Serve(ln) }()
		e.reg = reg
		// ksqlDB's runner uses Confluent's mock registry, which checks
		// no compatibility when a schema is registered: a sink's schema
		// replaces the one a test registered for its topic.
		if err := reg.SetCompatibility(ctx, "", "NONE"); err != nil {
			reg.Close()
			return fmt.Errorf("schema registry: %w", err)
		}
		e.closeReg = func() { hs.Close(); reg.Close() }
		cl, err := registry.NewClient(registry.ClientConfig{URL: "http://" + ln.Addr().String()})
		if err != nil {
			return err
		}
		e.schemas = cl
	}
	if e.cl, err = e.kp.NewClient(kgo.ProducerLinger(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.MetadataMinAge(10*time.Millisecond)); err != nil {
		return err
	}
	e.adm = kadm.NewClient(e.cl)
	e.eng, err = engine.Open(ctx, engine.Config{
		Kafka: e.kp, ServiceID: serviceID, InstanceID: "test", Logger: e.o.Logger,
		StateDir: e.dir, CommitInterval: 20 * time.Millisecond, Schemas: e.schemas,
	})
	return err
}

// ksqlDefaultPartitions is the partition count ksqlDB's runner gives a
// topic the test does not list (Topic.DEFAULT_PARTITIONS): the topics of
// its input and output records, and those CREATE STREAM|TABLE statements
// with columns name without PARTITIONS. A listed topic without a count
// has one (TopicNode).
const ksqlDefaultPartitions = 4

// createTopics creates the topics ksqlDB's runner creates before the
// statements run: those the test lists (with their count, else one
// partition), those its input records go to, and those CREATE
// STREAM|TABLE statements name (with their PARTITIONS). The unlisted ones
// have ksqlDB's four partitions in a case that gives some topic more than
// one (a listed count, a CREATE's PARTITIONS), so that the co-partition
// checks compare the counts ksqlDB's do (a sink made WITH (PARTITIONS=4)
// joins a table over such a topic); elsewhere they have one, which every
// such check sees alike and which keeps each query one task.
func (e *env) createTopics(ctx context.Context, c *Case) error {
	parts := map[string]int32{}
	for _, t := range c.Topics {
		n := t.Partitions
		if n <= 0 {
			n = 1
		}
		parts[t.Name] = n
	}
	implicit := int32(1)
	stated := map[string]int32{}
	var creates []string
	for _, text := range c.Statements {
		st, err := sql.Parse(text)
		if err != nil {
			continue
		}
		var props sql.Props
		switch st := st.(type) {
		case *sql.CreateSource:
			props = st.Props
			if topic, ok := props["KAFKA_TOPIC"]; ok {
				creates = append(creates, topic.Value)
			}
		case *sql.CreateAs:
			props = st.Props
		default:
			continue
		}
		p, given := props["PARTITIONS"]
		if !given {
			continue
		}
		n, err := strconv.Atoi(p.Value)
		if err != nil || n <= 0 {
			continue
		}
		if n > 1 {
			implicit = ksqlDefaultPartitions
		}
		if topic, ok := props["KAFKA_TOPIC"]; ok {
			if _, isCreate := st.(*sql.CreateSource); isCreate {
				stated[topic.Value] = int32(n)
			}
		}
	}
	for _, n := range parts {
		if n > 1 {
			implicit = ksqlDefaultPartitions
		}
	}
	for _, r := range c.Inputs {
		if _, ok := parts[r.Topic]; !ok {
			parts[r.Topic] = implicit
		}
	}
	for _, t := range creates {
		if n, ok := stated[t]; ok {
			// The statement's count wins over the default its input
			// records would give the topic.
			parts[t] = n
		} else if _, ok := parts[t]; !ok {
			parts[t] = implicit
		}
	}
	for t, n := range parts {
		resp, err := e.adm.CreateTopic(ctx, n, 1, nil, t)
		if err != nil {
			return err
		}
		if resp.Err != nil {
			return fmt.Errorf("%s: %w", t, resp.Err)
		}
	}
	return e.registerSchemas(ctx, c)
}

// schemaSide is one schema a test topic gives: its subject, format, text,
// the ID the test pins (0: none) and the schemas it refers to.
type schemaSide struct {
	subject, format string
	schema          []byte
	id              int
	refs            []SchemaRef
	// reserve marks a schema ksqlDB's runner registers (derived from a
	// CREATE statement's columns) that this runner does not: its ID is
	// passed over.
	reserve bool
}

// registerSchemas registers the schemas the test's topics give, in the
// order ksqlDB's runner does, so that the IDs tests name in
// KEY_SCHEMA_ID/VALUE_SCHEMA_ID are the ones its mock registry hands out:
// first the schemas the test pins an ID for (their references first, each
// under its name as subject), with that ID; then, topic by topic in the
// order of ksqlDB's topic map (orderTopics), the key and then the value
// schema under <topic>-key and <topic>-value. A schema already there
// stays; a new one takes the lowest ID not yet taken counting from 1. A
// CREATE statement with columns in a registry format makes ksqlDB's runner
// register the schema of those columns: that ID is passed over here (the
// engine registers its own schema when it writes). References take IDs
// from 1,000,000 up: ksqlDB's mock resolves them without registering
// them. The registry is in IMPORT mode meanwhile.
func (e *env) registerSchemas(ctx context.Context, c *Case) error {
	topics := orderTopics(c)
	var sides []schemaSide
	for _, t := range topics {
		sides = append(sides, t.key, t.value)
	}
	given := false
	for _, s := range sides {
		given = given || s.schema != nil
	}
	if !given {
		return nil
	}
	if e.reg == nil {
		return fmt.Errorf("a test topic has a schema but the case names no registry format")
	}
	if err := e.reg.SetMode(ctx, "", registry.ModeImport, true); err != nil {
		return err
	}
	nextRef := 1_000_000
	register := func(subject string, in registry.SchemaInput, id int) error {
		if _, err := e.reg.Lookup(subject, in); err == nil {
			return nil
		}
		in.ID, in.Version = id, 0
		if _, err := e.reg.Register(ctx, subject, in); err != nil {
			return fmt.Errorf("registering %s: %w", subject, err)
		}
		return nil
	}
	registerRefs := func(refs []SchemaRef) ([]registry.Reference, error) {
		var out []registry.Reference
		for _, ref := range refs {
			in := schemaInput(ref.Format, ref.Schema)
			if _, err := e.reg.Lookup(ref.Name, in); err != nil {
				for e.idTaken(nextRef) {
					nextRef++
				}
				if err := register(ref.Name, in, nextRef); err != nil {
					return nil, err
				}
			}
			out = append(out, registry.Reference{Name: ref.Name, Subject: ref.Name, Version: 1})
		}
		return out, nil
	}
	// inputOf is a side's schema as the registry takes it, its references
	// registered first.
	inputOf := func(s schemaSide) (registry.SchemaInput, error) {
		refs, err := registerRefs(s.refs)
		if err != nil {
			return registry.SchemaInput{}, err
		}
		in := schemaInput(s.format, s.schema)
		in.References = refs
		return in, nil
	}
	for _, s := range sides {
		if s.id == 0 || s.schema == nil {
			continue
		}
		in, err := inputOf(s)
		if err != nil {
			return err
		}
		if err := register(s.subject, in, s.id); err != nil {
			return err
		}
	}
	next := 1
	reserved := map[int]bool{}
	nextFree := func() int {
		for e.idTaken(next) || reserved[next] {
			next++
		}
		return next
	}
	for _, s := range sides {
		if s.reserve {
			reserved[nextFree()] = true
			continue
		}
		if s.schema == nil {
			continue
		}
		in, err := inputOf(s)
		if err != nil {
			return err
		}
		if _, err := e.reg.Lookup(s.subject, in); err == nil {
			continue
		}
		if err := register(s.subject, in, nextFree()); err != nil {
			return err
		}
	}
	return e.reg.SetMode(ctx, "", registry.ModeReadWrite, false)
}

// topicSchemas is one topic's key and value schemas as ksqlDB's runner
// registers them.
type topicSchemas struct {
	name       string
	key, value schemaSide
}

// orderTopics lists the topics whose schemas ksqlDB's runner registers,
// in the order it registers them: the test's topics, then those of CREATE
// statements with columns (whose schemas ksqlDB derives from the columns:
// marked reserve), in the iteration order of the java.util.HashMap
// ksqlDB keeps them in (javaHashOrder).
func orderTopics(c *Case) []topicSchemas {
	byName := map[string]*topicSchemas{}
	var names []string
	for _, t := range c.Topics {
		ts := &topicSchemas{name: t.Name,
			key:   schemaSide{t.Name + "-key", t.KeyFormat, t.KeySchema, t.KeySchemaID, t.KeySchemaRefs, false},
			value: schemaSide{t.Name + "-value", t.ValueFormat, t.ValueSchema, t.ValueSchemaID, t.ValueSchemaRefs, false}}
		if _, ok := byName[t.Name]; !ok {
			names = append(names, t.Name)
		}
		byName[t.Name] = ts
	}
	for _, text := range c.Statements {
		st, err := sql.Parse(text)
		if err != nil {
			continue
		}
		cs, ok := st.(*sql.CreateSource)
		if !ok || len(cs.Columns) == 0 {
			continue
		}
		topic, ok := cs.Props["KAFKA_TOPIC"]
		if !ok {
			continue
		}
		format := func(name, def string) string {
			if p, ok := cs.Props[name]; ok {
				return strings.ToUpper(p.Value)
			}
			if p, ok := cs.Props["FORMAT"]; ok {
				return strings.ToUpper(p.Value)
			}
			if v, ok := c.Properties[def]; ok {
				return strings.ToUpper(v)
			}
			return ""
		}
		hasKey := false
		for _, col := range cs.Columns {
			hasKey = hasKey || col.Key
		}
		ts := byName[topic.Value]
		if ts == nil {
			ts = &topicSchemas{name: topic.Value,
				key:   schemaSide{subject: topic.Value + "-key"},
				value: schemaSide{subject: topic.Value + "-value"}}
			byName[topic.Value] = ts
			names = append(names, topic.Value)
		}
		if ts.key.schema == nil && hasKey && inferable(format("KEY_FORMAT", "ksql.persistence.default.format.key")) {
			ts.key.reserve = true
		}
		if ts.value.schema == nil && inferable(format("VALUE_FORMAT", "ksql.persistence.default.format.value")) {
			ts.value.reserve = true
		}
	}
	var out []topicSchemas
	for _, n := range javaHashOrder(names) {
		out = append(out, *byName[n])
	}
	return out
}

// javaHash is Java's String.hashCode: over UTF-16 code units,
// h = 31*h + c, wrapping.
func javaHash(s string) int32 {
	var h int32
	for _, r := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(r)
	}
	return h
}

// inferable reports whether ksqlDB's runner derives a registry schema for
// the format (its SCHEMA_INFERENCE feature).
func inferable(format string) bool {
	switch format {
	case "AVRO", "PROTOBUF", "JSON_SR":
		return true
	}
	return false
}

// javaHashOrder orders keys (given in insertion order) as a
// java.util.HashMap<String, …> iterates them: by bucket — the spread
// String.hashCode masked to the table size, which starts at 16 and
// doubles past 0.75 full — and in insertion order within a bucket.
func javaHashOrder(keys []string) []string {
	size := 16
	for float64(len(keys)) > 0.75*float64(size) {
		size *= 2
	}
	bucket := func(k string) int {
		u := uint32(javaHash(k))
		return int((u ^ u>>16) & uint32(size-1))
	}
	out := append([]string(nil), keys...)
	sort.SliceStable(out, func(i, j int) bool { return bucket(out[i]) < bucket(out[j]) })
	return out
}

// idTaken reports whether the registry has a schema with id.
func (e *env) idTaken(id int) bool {
	_, _, err := e.reg.ByID(id)
	return err == nil
}

// schemaInput is a test schema as the registry takes it; ksqlDB's files
// give .proto text as a JSON string.
func schemaInput(format string, schema []byte) registry.SchemaInput {
	in := registry.SchemaInput{SchemaType: schemaType(format), Schema: string(schema)}
	if in.SchemaType == types.SchemaTypeProtobuf {
		var txt string
		if err := jsonUnmarshal(schema, &txt); err == nil {
			in.Schema = txt
		}
	}
	return in
}

func schemaType(format string) string {
	switch strings.ToUpper(format) {
	case "PROTOBUF", "PROTOBUF_NOSR":
		return types.SchemaTypeProtobuf
	case "JSON_SR", "JSON":
		return types.SchemaTypeJSON
	}
	return types.SchemaTypeAvro
}

// sourceFor returns the catalog source over topic: a declared one for
// input, the query's sink for output.
func sourceFor(cat *catalog.Catalog, topic string, sink bool) *catalog.Source {
	var best *catalog.Source
	for _, s := range cat.Sources() {
		if s.Topic != topic {
			continue
		}
		if best == nil || (s.WriterQuery != "") == sink && (best.WriterQuery != "") != sink {
			best = s
		}
	}
	return best
}

// produce writes the input records in file order to partition 0 (as
// ksqlDB's runner does), timestamp 0 unless given. When a query joins on
// a foreign key, each record is written only once the queries have
// caught up with the one before: ksqlDB's runner (TopologyTestDriver)
// processes a record through every internal topic before the next, and
// a foreign-key join's answers travel through two of them, so records
// written at once would meet the other table's later rows.
func (e *env) produce(ctx context.Context, c *Case) error {
	cat := e.eng.Catalog()
	// ksqlDB's runner feeds a topology test driver, which processes each
	// input record to the end before it takes the next one, in the order
	// the test lists them. A join reads several topics, and a task takes
	// records of its partitions in timestamp order, so for a join the
	// runner waits for the queries to catch up before a record whose
	// topic differs from the one before it (every record, for a
	// foreign-key join, whose subscription and response topics are read
	// by other tasks).
	stepwise, joins := false, false
	for _, q := range cat.Queries() {
		if p, ok := e.eng.ExplainQuery(q.ID); ok {
			stepwise = stepwise || strings.Contains(p.Text, "ForeignKeyJoin")
			joins = joins || strings.Contains(p.Text, "Join")
		}
	}
	parts, err := e.partitionCounts(ctx, c)
	if err != nil {
		return err
	}
	keyed := kgo.StickyKeyPartitioner(nil)
	var prev *kgo.Record
	for i, r := range c.Inputs {
		src := sourceFor(cat, r.Topic, false)
		k, err := encode(src, true, r.Key, e.registered(r.Topic+"-key"))
		if err != nil {
			return fmt.Errorf("input %d key: %w", i+1, err)
		}
		v, err := encode(src, false, r.Value, e.registered(r.Topic+"-value"))
		if err != nil {
			return fmt.Errorf("input %d value: %w", i+1, err)
		}
		if r.Window != nil && src != nil && src.Windowed() {
			k = src.WindowType.AppendWindowKey(k, r.Window.Start, r.Window.End)
		}
		var ts int64
		if r.Timestamp != nil {
			ts = *r.Timestamp
		}
		rec := &kgo.Record{Topic: r.Topic, Partition: 0, Key: k, Value: v, Timestamp: time.UnixMilli(ts)}
		if n := parts[r.Topic]; n > 1 && k != nil && (stepwise || joins) {
			// The partition the Java producer's default partitioner
			// picks (murmur2 of the key bytes), so that tables over
			// topics of different partition counts are partitioned
			// as a foreign-key join expects.
			rec.Partition = int32(keyed.ForTopic(r.Topic).Partition(rec, int(n)))
		}
		for _, h := range r.Headers {
			rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		if prev != nil && (stepwise || joins && (rec.Topic != prev.Topic || rec.Partition != prev.Partition)) {
			if why, err := e.waitCaughtUp(ctx); err != nil || why != "" {
				return fmt.Errorf("input %d: the queries did not catch up: %v %s", i+1, err, why)
			}
		}
		prev = rec
		if err := e.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			return fmt.Errorf("input %d: %w", i+1, err)
		}
	}
	return nil
}

// partitionCounts returns the partition count of every topic the case's
// inputs go to.
func (e *env) partitionCounts(ctx context.Context, c *Case) (map[string]int32, error) {
	var topics []string
	for _, r := range c.Inputs {
		topics = append(topics, r.Topic)
	}
	out := map[string]int32{}
	if len(topics) == 0 {
		return out, nil
	}
	td, err := e.adm.ListTopics(ctx, topics...)
	if err != nil {
		return nil, fmt.Errorf("listing input topics: %w", err)
	}
	for t, d := range td {
		if d.Err == nil {
			out[t] = int32(len(d.Partitions))
		}
	}
	return out, nil
}

// registered returns the ID of the latest schema registered under
// subject, or 0: input records are written with the schema the test
// registered for their topic, as ksqlDB's runner writes them.
func (e *env) registered(subject string) int {
	if e.schemas == nil {
		return 0
	}
	id, _, err := e.schemas.Latest(subject)
	if err != nil {
		return 0
	}
	return id
}

// verify reads every topic the case expects records on and compares.
func (e *env) verify(ctx context.Context, c *Case) Result {
	byTopic := map[string][]Record{}
	var topics []string
	for _, r := range c.Outputs {
		if _, ok := byTopic[r.Topic]; !ok {
			topics = append(topics, r.Topic)
		}
		byTopic[r.Topic] = append(byTopic[r.Topic], r)
	}
	exact := !strings.EqualFold(c.Properties["use.exact.numeric.comparison"], "false")
	insertsOnly := len(c.Inputs) == 0
	var diffs []string
	for _, t := range topics {
		recs, err := e.readAll(ctx, t)
		if err != nil {
			return fail("reading output", "%s: %v", t, err)
		}
		src := sourceFor(e.eng.Catalog(), t, true)
		if d := compareTopic(t, src, byTopic[t], recs, exact, insertsOnly, e.schemas); d != "" {
			diffs = append(diffs, d)
		}
	}
	if len(diffs) > 0 {
		return fail("records differ", "%s", strings.Join(diffs, "\n"))
	}
	return Result{Status: Pass}
}

// actualRecord is an output record decoded for comparison.
type actualRecord struct {
	partition  int32
	key, value any
	window     *Window
	ts         int64
	headers    []Header
	err        error
}

func (a actualRecord) String() string {
	var b strings.Builder
	if a.err != nil {
		return "undecodable: " + a.err.Error()
	}
	fmt.Fprintf(&b, "key=%s value=%s ts=%d", show(a.key), show(a.value), a.ts)
	if a.window != nil {
		fmt.Fprintf(&b, " window=%s[%d,%d)", a.window.Type, a.window.Start, a.window.End)
	}
	if len(a.headers) > 0 {
		fmt.Fprintf(&b, " headers=%s", showHeaders(a.headers))
	}
	if a.partition != 0 {
		fmt.Fprintf(&b, " partition=%d", a.partition)
	}
	return b.String()
}

func showHeaders(hs []Header) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.Key + "=" + show(h.Value)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func expectedString(r Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "key=%s value=%s", show(specShow(r.Key)), show(specShow(r.Value)))
	if r.Timestamp != nil {
		fmt.Fprintf(&b, " ts=%d", *r.Timestamp)
	}
	if r.Window != nil {
		fmt.Fprintf(&b, " window=%s[%d,%d)", strings.ToUpper(r.Window.Type), r.Window.Start, r.Window.End)
	}
	if r.Headers != nil {
		fmt.Fprintf(&b, " headers=%s", showHeaders(r.Headers))
	}
	return b.String()
}

// specShow turns json.Number into printable compared values.
func specShow(v any) any {
	switch v := v.(type) {
	case interface{ String() string }:
		if n, ok := v.(fmt.Stringer); ok {
			s := n.String()
			if isIntegral(s) {
				if i, err := strconv.ParseInt(s, 10, 64); err == nil {
					return i
				}
			}
			if d, ok := parseDec(s); ok {
				return d
			}
		}
	case []any:
		out := make([]any, len(v))
		for i := range v {
			out[i] = specShow(v[i])
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = specShow(e)
		}
		return out
	}
	return v
}

func compareTopic(topic string, src *catalog.Source, want []Record, recs []*kgo.Record, exact, insertsOnly bool, schemas types.SchemaSource) string {
	got := make([]actualRecord, len(recs))
	for i, r := range recs {
		a := actualRecord{partition: r.Partition, ts: r.Timestamp.UnixMilli()}
		for _, h := range r.Headers {
			a.headers = append(a.headers, Header{Key: h.Key, Value: h.Value})
		}
		key := r.Key
		if src != nil && src.Windowed() && key != nil {
			k, start, end, err := src.WindowType.SplitWindowKey(key, src.WindowSizeMs)
			if err != nil {
				a.err = err
			}
			typ := "TIME"
			if src.WindowType == types.Session {
				typ = "SESSION"
			}
			a.window = &Window{Start: start, End: end, Type: typ}
			key = k
		}
		var err error
		if a.err == nil {
			if a.key, err = decode(src, true, key, exact, schemas); err != nil {
				a.err = fmt.Errorf("key: %w", err)
			}
		}
		if a.err == nil {
			if a.value, err = decode(src, false, r.Value, exact, schemas); err != nil {
				a.err = fmt.Errorf("value: %w", err)
			}
		}
		got[i] = a
	}
	// Order is compared per partition: each expected record must be the
	// next record of some partition.
	next := map[int32]int{}
	byPart := map[int32][]int{}
	var parts []int32
	for i, a := range got {
		if _, ok := byPart[a.partition]; !ok {
			parts = append(parts, a.partition)
		}
		byPart[a.partition] = append(byPart[a.partition], i)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var b strings.Builder
	bad := false
	for i, w := range want {
		found := -1
		for _, p := range parts {
			if n := next[p]; n < len(byPart[p]) && recordMatches(got[byPart[p][n]], w, insertsOnly) {
				found = byPart[p][n]
				next[p]++
				break
			}
		}
		if found >= 0 {
			fmt.Fprintf(&b, "    ok   %d: %s\n", i, expectedString(w))
			continue
		}
		bad = true
		fmt.Fprintf(&b, "  - want %d: %s\n", i, expectedString(w))
		for _, p := range parts {
			if n := next[p]; n < len(byPart[p]) {
				fmt.Fprintf(&b, "  + got    : %s\n", got[byPart[p][n]])
				next[p]++
			}
		}
	}
	for _, p := range parts {
		for n := next[p]; n < len(byPart[p]); n++ {
			bad = true
			fmt.Fprintf(&b, "  + extra  : %s\n", got[byPart[p][n]])
		}
	}
	if !bad {
		return ""
	}
	return fmt.Sprintf("topic %s: want %d records, got %d\n%s", topic, len(want), len(got), strings.TrimRight(b.String(), "\n"))
}

func recordMatches(a actualRecord, w Record, insertsOnly bool) bool {
	if a.err != nil {
		return false
	}
	if w.Window != nil {
		if a.window == nil || a.window.Start != w.Window.Start || a.window.End != w.Window.End ||
			!strings.EqualFold(a.window.Type, w.Window.Type) {
			return false
		}
	}
	if !matches(a.key, w.Key) || !matches(a.value, w.Value) {
		return false
	}
	if !headersMatch(a.headers, w.Headers) {
		return false
	}
	if w.Timestamp != nil && a.ts != *w.Timestamp && !(insertsOnly && *w.Timestamp == 0) {
		return false
	}
	return true
}

// readAll reads a topic from its start to its last stable offset, with
// read_committed.
func (e *env) readAll(ctx context.Context, topic string) ([]*kgo.Record, error) {
	ends, err := e.adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		return nil, err
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Err == nil && o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	if len(want) == 0 {
		return nil, nil
	}
	cl, err := e.kp.NewClient(kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(want) > 0 {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("reading %s: %w", topic, err)
		}
		n := 0
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return out, fmt.Errorf("reading %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			out = append(out, r)
			if end, ok := want[r.Partition]; ok && r.Offset+1 >= end {
				delete(want, r.Partition)
			}
		})
		if n == 0 {
			break // the rest up to the end offsets are transaction markers
		}
	}
	return out, nil
}
