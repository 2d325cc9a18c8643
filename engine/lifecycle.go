package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/metrics"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/plan"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// queryThreads returns the stream threads a query with props runs.
func (e *Engine) queryThreads(props map[string]string) (int, error) {
	t, ok, err := queryInt(props, "num.stream.threads")
	if err != nil {
		return 0, err
	}
	if !ok {
		return max(e.cfg.Threads, 1), nil
	}
	return int(t), nil
}

// IdleAdvanceProp is the query property (SET before CREATE … AS) that
// lets a windowed aggregation's task whose inputs have been idle this
// many milliseconds advance its stream time by the wall-clock time that
// passes, so that windows close (and EMIT FINAL emits them) without new
// input. Off (0) by default, as in ksqlDB: see README's "Windows".
const IdleAdvanceProp = "sqlstreams.window.idle.advance.ms"

// queryIdleAdvance returns the idle advance a query with props asks for.
func queryIdleAdvance(props map[string]string) (time.Duration, error) {
	ms, _, err := queryInt(props, IdleAdvanceProp)
	return time.Duration(ms) * time.Millisecond, err
}

// idleAdvancePolicy records in topo's windowed aggregations the idle
// advance a query created with props asks for: the plan, not the
// property, is what a restart runs.
func idleAdvancePolicy(topo *physical.Topology, props map[string]string) error {
	idle, err := queryIdleAdvance(props)
	if err != nil || idle <= 0 {
		return err
	}
	for _, n := range topo.Nodes {
		if a, ok := n.Op.(*physical.Aggregate); ok && a.Window != nil {
			a.IdleAdvance = idle.Milliseconds()
		}
	}
	return nil
}

// start runs a persistent query's topology.
func (e *Engine) start(id string, topo *physical.Topology, reset string, props map[string]string, fl runFlags) error {
	var mq *metrics.Query
	if e.cfg.Metrics != nil {
		mq = e.cfg.Metrics.Query(id)
	}
	threads, err := e.queryThreads(props)
	if err != nil {
		return err
	}
	if err := migrateIdleAdvance(topo, props); err != nil {
		return err
	}
	alos, err := e.queryAtLeastOnce(props)
	if err != nil {
		return err
	}
	interval, err := e.queryCommitInterval(props)
	if err != nil {
		return err
	}
	txnTimeout, err := e.queryTransactionTimeout(props)
	if err != nil {
		return err
	}
	memory, err := e.queryMemoryStores(props)
	if err != nil {
		return err
	}
	cq, _ := e.cat.Query(id)
	cfg := exec.Config{
		Paused:           cq != nil && cq.Paused,
		PropagateHeaders: fl.headers,
		KsqlDelimited:    fl.delimited,
		Metrics:          mq,
		Kafka:            e.cfg.Kafka,
		InstanceID:       e.cfg.InstanceID,
		Endpoint:         e.cfg.Endpoint,
		PGEndpoint:       e.cfg.PGEndpoint,
		Threads:          threads,
		CommitInterval:   interval,
		AtLeastOnce:      alos,
		OffsetReset:      reset,
		Logger:           e.log,
		StateDir:         e.cfg.StateDir,
		RocksResources:   e.cfg.RocksResources,
		MemoryStores:     memory,
		FetchMaxBytes:    e.cfg.FetchMaxBytes,
		MaxTxnRecords:    e.cfg.MaxTxnRecords,
		BadRecord:        e.logBadRecord,
	}
	cfg.LeaveGroupOnClose = e.cfg.LeaveGroupOnClose
	cfg.SyncStoreCommits = e.cfg.SyncStoreCommits
	cfg.TransactionTimeout = txnTimeout
	if err := e.queryStandby(props, &cfg); err != nil {
		return err
	}
	q, err := exec.New(id, topo, cfg)
	if err != nil {
		return err
	}
	if !e.cfg.Offline {
		q.Run()
	}
	e.running[id] = q
	e.flags[id] = fl
	e.log.Info("persistent query started", "query", id, "app_id", topo.AppID)
	return nil
}

// checkQueryProps checks the properties a query runs with.
func (e *Engine) checkQueryProps(props map[string]string) (alos bool, err error) {
	if _, err := e.queryThreads(props); err != nil {
		return false, err
	}
	if _, err := queryIdleAdvance(props); err != nil {
		return false, err
	}
	if alos, err = e.queryAtLeastOnce(props); err != nil {
		return false, err
	}
	if _, err := e.queryCommitInterval(props); err != nil {
		return false, err
	}
	if _, err := e.queryMemoryStores(props); err != nil {
		return false, err
	}
	if _, err := windowChangelogExtra(props); err != nil {
		return false, err
	}
	if _, err := e.queryTransactionTimeout(props); err != nil {
		return false, err
	}
	return alos, nil
}

// startPersistent plans a bound query (its sink newSink, when it creates
// one; givesPartitions when the statement gave the sink's PARTITIONS),
// records the command with its plan (record), assigns the query its ID
// (prefix_<command offset>, or the one the command carries) and runs the
// plan as recorded (runPlan). It returns the query ID.
func (e *Engine) startPersistent(ctx context.Context, prefix string, sink *planner.Sink, cmd catalog.Command, record recorder, newSink, givesPartitions bool, b binding) (string, error) {
	e.useSchemas(sink.Target)
	alos, err := e.checkQueryProps(cmd.Props)
	if err != nil {
		return "", err
	}
	p, err := e.planQuery(sink, cmd, newSink, b.legacy)
	if err != nil {
		return "", err
	}
	if b.live {
		if err := e.checkQuery(ctx, p.Query, alos); err != nil {
			return "", err
		}
	}
	if newSink {
		if n, err := e.ensureTopic(ctx, sink.Target.Topic, 0); err == nil && !givesPartitions {
			sink.Target.Partitions = n
		} else if _, err := e.ensureTopic(ctx, sink.Target.Topic, sink.Target.Partitions); err != nil {
			return "", err
		}
		if sink.Target.Kind == catalog.Table && !exec.MaterializesResult(p.Query) {
			// The result of an aggregation answers pull queries from
			// the query's own aggregate store, as in ksqlDB; another
			// result table from a materialization of its topic
			// (read_committed, so only committed results).
			p.Materialization = physical.BuildTable(physical.AppID(e.cfg.ServiceID, queryBuildID(cmd)+"_MATERIALIZE"), planner.NewScan(sink.Target))
			timestampPolicy(p.Materialization, b.keepTimestamps, timestampsThrow(cmd.Props))
		}
	}
	dp, id, err := e.finishPlan(ctx, p, &cmd, record, prefix, b.migrate)
	if err != nil {
		return "", err
	}
	return id, e.runPlan(ctx, dp, id, cmd, newSink)
}

// planQuery builds the plan of a bound query: its topology, built under
// the ID the command carries or the placeholder of the one it will get.
func (e *Engine) planQuery(sink *planner.Sink, cmd catalog.Command, newSink bool, l legacy) (*plan.Plan, error) {
	var opts []physical.BuildOption
	if l.wideRepartitions {
		opts = append(opts, physical.WideRepartitions)
	}
	if l.plainFKJoins {
		opts = append(opts, physical.PlainForeignKeyJoins)
	}
	topo, err := physical.Build(physical.AppID(e.cfg.ServiceID, queryBuildID(cmd)), sink, opts...)
	if err != nil {
		return nil, err
	}
	timestampPolicy(topo, l.keepTimestamps, timestampsThrow(cmd.Props))
	if err := idleAdvancePolicy(topo, cmd.Props); err != nil {
		return nil, err
	}
	p := &plan.Plan{Query: topo, Target: sink.Target.Name, InputPartitions: planner.Sources(sink.Input)[0].Partitions}
	for _, s := range planner.Sources(sink.Input) {
		p.Sources = append(p.Sources, s.Name)
	}
	if newSink {
		p.Sink = sink.Target
	}
	e.planFlags(p, l)
	return p, nil
}

// startFromPlan carries out a CREATE … AS SELECT or INSERT INTO … SELECT
// recorded with its plan, and returns its query ID.
func (e *Engine) startFromPlan(ctx context.Context, prefix string, cmd catalog.Command, record recorder) (string, error) {
	off, err := record(cmd) // a replay's: its offset
	if err != nil {
		return "", err
	}
	id := e.queryID(prefix, cmd, off)
	p, err := plan.Decode(cmd.Plan, id, e.cfg.Schemas)
	if err != nil {
		return "", err
	}
	if p.Query == nil {
		return "", fmt.Errorf("the plan of query %s has no topology", id)
	}
	if err := e.checkPlanSources(p); err != nil {
		return "", err
	}
	if p.Sink != nil {
		if err := e.ensureRecordedTopic(ctx, p.Sink); err != nil {
			return "", err
		}
	}
	return id, e.runPlan(ctx, p, id, cmd, p.Sink != nil)
}

// checkPlanSources checks that the sources a recorded plan reads, and
// the target an INSERT INTO writes, are in the catalog: a command
// validated by an instance that another instance's command overtook
// (a DROP of its input) fails as binding it would have, on every
// instance alike.
func (e *Engine) checkPlanSources(p *plan.Plan) error {
	names := p.Sources
	if p.Sink == nil {
		names = append(names[:len(names):len(names)], p.Target)
	}
	for _, name := range names {
		if _, ok := e.cat.Source(name); !ok {
			return sql.Errorf(sql.CodeUndefinedTable, "stream or table %s does not exist", name)
		}
	}
	return nil
}

// runPlan runs the query id of a plan: creates its internal topics,
// registers its sink (newSink) and the query in the catalog, and starts
// it (and the materialization of its result table, if it has one).
func (e *Engine) runPlan(ctx context.Context, p *plan.Plan, id string, cmd catalog.Command, newSink bool) error {
	topo := p.Query
	// Internal topics have as many partitions as the query's input, so
	// task p of every sub-topology reads and writes partition p.
	additional, err := windowChangelogExtra(cmd.Props)
	if err != nil {
		return err
	}
	for _, it := range topo.InternalTopics() {
		configs := it.Configs(additional)
		parts := p.InputPartitions
		if it.Partitions > 0 {
			parts = it.Partitions // a join's repartition topic: the table's
		}
		if _, err := e.ensureInternalTopic(ctx, it.Name, parts, configs); err != nil {
			return err
		}
		if it.RetentionMs > 0 {
			e.alignTopicConfig(ctx, it.Name, configs)
		}
	}
	materialized := ""
	if newSink {
		if p.Sink.Kind == catalog.Table {
			materialized = id
			if p.Materialization != nil {
				materialized = id + "_MATERIALIZE"
			}
		}
		e.useSchemas(p.Sink)
		p.Sink.WriterQuery = id
		p.Sink.MaterializedBy = materialized
		if err := e.cat.AddSource(p.Sink, false); err != nil {
			return err
		}
	}
	e.cat.AddQuery(&catalog.Query{ID: id, SQL: cmd.Statement, Sink: p.Target, Sources: p.Sources, Props: cmd.Props})
	reset := offsetReset(cmd.Props, "earliest")
	if err := e.start(id, topo, reset, cmd.Props, flagsOf(p)); err != nil {
		return err
	}
	if p.Materialization != nil && newSink {
		return e.start(materialized, p.Materialization, "earliest", cmd.Props, flagsOf(p))
	}
	return nil
}

// replaceQuery carries out CREATE OR REPLACE of a query's sink: the new
// query must read the same inputs, keep the topology's shape (internal
// topics, stores and sink) and keep the sink's columns (new value columns may
// be added at the end). It then replaces the running query in place: same
// query ID and application ID, so it resumes from the old one's offsets.
func (e *Engine) replaceQuery(ctx context.Context, st *sql.CreateAs, old *catalog.Source, cmd catalog.Command, record recorder, b binding) error {
	refuse := func(format string, args ...any) error {
		return sql.NameError(st, sql.CodeFeatureNotSupport, "cannot replace %s: "+format, append([]any{st.Name}, args...)...)
	}
	if old.Kind != st.Kind {
		return refuse("it is a %s", old.Kind)
	}
	id := old.WriterQuery
	if id == "" {
		return refuse("no running query writes it")
	}
	oldQuery := e.running[id]
	if oldQuery == nil {
		return refuse("its query %s is not running", id)
	}
	var p *plan.Plan
	if len(cmd.Plan) > 0 {
		if _, err := record(cmd); err != nil {
			return err
		}
		var err error
		if p, err = plan.Decode(cmd.Plan, id, e.cfg.Schemas); err != nil {
			return err
		}
		if p.Query == nil || p.Sink == nil {
			return fmt.Errorf("the plan of query %s has no topology or sink", id)
		}
		if err := e.checkPlanSources(p); err != nil {
			return err
		}
	} else {
		// A query whose distinct aggregates keep their values in the
		// groups' states (recorded before they were kept apart) is
		// replaced by one that keeps them there too: its stores hold them.
		st.Select.LegacyDistinctState = st.Select.LegacyDistinctState || distinctInState(oldQuery.Topology())
		// One whose foreign-key joins read their left tables unfiltered
		// (planned before filters went below them) keeps them so.
		st.Select.NoFilterPushdown = st.Select.NoFilterPushdown || fkJoinReadsTable(oldQuery.Topology())
		sink, err := sql.BindCreateAs(st, e.cat)
		if err != nil {
			return err
		}
		if err := e.ksqlConfigs(sink.Target, st.Props, true, cmd.Props, b.legacy); err != nil {
			return err
		}
		e.useSchemas(sink.Target)
		if _, err := e.checkQueryProps(cmd.Props); err != nil {
			return err
		}
		cmd.QueryID = id
		np, err := e.planQuery(sink, cmd, true, b.legacy)
		if err != nil {
			return err
		}
		// A Top-N keeps its rows as the running query's store holds them.
		physical.KeepTopNLayout(oldQuery.Topology(), np.Query)
		if a, b := oldQuery.Topology().ShapeFingerprint(), np.Query.ShapeFingerprint(); a != b {
			return refuse("the new query's topology differs in shape (inputs, internal topics, stores or sink; fingerprint %s, was %s)", b, a)
		}
		if err := compatibleSchema(old.Schema, sink.Target.Schema); err != nil {
			return refuse("%v", err)
		}
		sink.Target.Topic = old.Topic
		sink.Target.MaterializedBy = old.MaterializedBy
		if p, _, err = e.finishPlan(ctx, np, &cmd, record, "", b.migrate); err != nil {
			return err
		}
	}
	oldQuery.Stop()
	delete(e.running, id)
	p.Sink.WriterQuery = id
	e.useSchemas(p.Sink)
	if err := e.cat.AddSource(p.Sink, true); err != nil {
		return err
	}
	// runPlan registers the query again under the same ID.
	return e.runPlan(ctx, p, id, cmd, false)
}

// compatibleSchema checks that next can replace prev as a sink's schema:
// the same key columns, every value column kept with its type and place,
// new value columns only at the end.
func compatibleSchema(prev, next types.Schema) error {
	if len(next.Columns) < len(prev.Columns) {
		return fmt.Errorf("the new schema (%s) drops columns of (%s)", next, prev)
	}
	for i, c := range prev.Columns {
		n := next.Columns[i]
		if n.Name != c.Name || !n.Type.Equal(c.Type) || n.Key != c.Key {
			return fmt.Errorf("column %d changes from %s %s to %s %s; only new value columns at the end are allowed", i+1, c.Name, c.Type, n.Name, n.Type)
		}
	}
	for _, n := range next.Columns[len(prev.Columns):] {
		if n.Key {
			return fmt.Errorf("the new key column %s changes the key", n.Name)
		}
	}
	return nil
}

// queryID returns the ID of the query a command starts: the one the
// command carries (commands written before IDs came from offsets, and
// CREATE OR REPLACE), else prefix_<offset> as in ksqlDB, so that queries
// two instances create at once never share an ID. Headless mode, which
// has no command topic (off < 0), numbers queries in order.
func (e *Engine) queryID(prefix string, cmd catalog.Command, off int64) string {
	id := cmd.QueryID
	if id == "" {
		n := off
		if n < 0 {
			n = int64(e.nextID)
		}
		id = fmt.Sprintf("%s_%d", prefix, n)
	}
	if n := queryNumber(id); n >= e.nextID {
		e.nextID = n + 1
	}
	return id
}

// queryNumber returns the trailing number of a query ID like CSAS_X_7.
func queryNumber(id string) int {
	i := strings.LastIndexByte(id, '_')
	n, _ := strconv.Atoi(id[i+1:])
	return n
}

func (e *Engine) terminate(st *sql.Terminate, cmd catalog.Command, record recorder) (Result, error) {
	var ids []string
	if st.All {
		for _, q := range e.cat.Queries() {
			ids = append(ids, q.ID)
		}
	} else {
		if _, ok := e.cat.Query(st.QueryID); !ok {
			return Result{}, sql.NameError(st, sql.CodeUndefinedObject, "query %s does not exist", st.QueryID)
		}
		ids = []string{st.QueryID}
	}
	if _, err := record(cmd); err != nil {
		return Result{}, err
	}
	for _, id := range ids {
		e.stopQuery(id)
	}
	return Result{Tag: "TERMINATE", Change: &Change{Queries: ids}}, nil
}

// pause pauses (or resumes) queries: recorded, so that every instance
// and every restart keeps them so until RESUME.
func (e *Engine) pause(st *sql.Pause, cmd catalog.Command, record recorder) (Result, error) {
	var ids []string
	if st.All {
		for _, q := range e.cat.Queries() {
			ids = append(ids, q.ID)
		}
	} else {
		if _, ok := e.cat.Query(st.QueryID); !ok {
			return Result{}, sql.NameError(st, sql.CodeUndefinedObject, "query %s does not exist", st.QueryID)
		}
		ids = []string{st.QueryID}
	}
	if _, err := record(cmd); err != nil {
		return Result{}, err
	}
	for _, id := range ids {
		e.cat.UpdateQuery(id, func(q *catalog.Query) { q.Paused = !st.Resume })
		if q := e.running[id]; q != nil {
			q.SetPaused(!st.Resume)
		}
	}
	if st.Resume {
		return Result{Tag: "RESUME", Change: &Change{Queries: ids}}, nil
	}
	return Result{Tag: "PAUSE", Change: &Change{Queries: ids}}, nil
}

// stopQuery stops a persistent query and forgets it.
func (e *Engine) stopQuery(id string) {
	if q := e.running[id]; q != nil {
		q.Stop()
		delete(e.running, id)
		if e.cfg.Metrics != nil {
			e.cfg.Metrics.Query(id).Close()
		}
	}
	if q, ok := e.cat.Query(id); ok {
		if s, ok := e.cat.Source(q.Sink); ok && s.WriterQuery == id {
			e.cat.UpdateSource(q.Sink, func(s *catalog.Source) {
				s.WriterQuery = ""
				if s.MaterializedBy == id {
					s.MaterializedBy = "" // its aggregate store goes with it
				}
			})
		}
		for _, name := range q.Sources {
			if s, ok := e.cat.Source(name); ok && s.MaterializedBy == id {
				e.cat.UpdateSource(name, func(s *catalog.Source) { s.MaterializedBy = "" })
			}
		}
	}
	e.cat.DropQuery(id)
}

// fkJoinReadsTable reports whether topo has a foreign-key join that
// reads its left side straight from a table's topic (its store is the
// table's): one planned before rule FilterBelowForeignKeyJoin, or with
// nothing to filter there.
func fkJoinReadsTable(topo *physical.Topology) bool {
	for _, n := range topo.Nodes {
		if j, ok := n.Op.(*physical.ForeignKeyJoin); ok && !j.LeftRows {
			return true
		}
	}
	return false
}

// distinctInState reports whether topo has an aggregation whose
// distinct aggregates keep their values in the groups' states, without
// a store of distinct values (physical.Aggregate.DistinctStore), where
// one planned now keeps them apart: one planned before that store (of
// an unwindowed aggregation), before it kept a time window's values
// apart, or before it kept a session's.
func distinctInState(topo *physical.Topology) bool {
	for _, n := range topo.Nodes {
		if a, ok := n.Op.(*physical.Aggregate); ok && a.DistinctStore == nil {
			for _, c := range a.Aggs {
				if expr.IsDistinctValues(c.Fn) {
					return true
				}
			}
		}
	}
	return false
}
