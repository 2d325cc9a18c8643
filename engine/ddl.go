package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/plan"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// recorder records a validated command before the catalog changes and
// returns its offset in the command topic (-1 in headless mode).
type recorder func(catalog.Command) (int64, error)

// apply validates and carries out a catalog-changing statement. Live
// statements are appended to the command topic after validation and
// before the catalog changes; replayed ones (and those of other
// instances) are not appended again, and off is their offset (-1 in
// headless mode). The caller holds e.mu.
func (e *Engine) apply(ctx context.Context, st sql.Statement, cmd catalog.Command, off int64, live bool) (Result, error) {
	recorded := int64(-1)
	record := func(c catalog.Command) (int64, error) {
		if !live {
			recorded = off
			if e.headless != nil {
				return off, e.headless.save(ctx, c)
			}
			return off, nil
		}
		o, err := e.append(ctx, c)
		if err == nil {
			recorded = o
		}
		return o, err
	}
	defaultFormats(st, cmd.Props)
	// A command recorded before plans is bound as it was then, once:
	// its plan is recorded by a migration command (migrate.go).
	migrate := !live && e.cfg.Headless == nil && len(cmd.Plan) == 0
	l := e.legacyOf(cmd, migrate)
	limits, err := collectLimits(cmd.Props)
	if err != nil {
		return Result{}, err
	}
	l.bindWith(st)
	switch st := st.(type) {
	case *sql.CreateAs:
		st.Select.CollectLimits = limits
	case *sql.InsertSelect:
		st.Select.CollectLimits = limits
	}
	b := binding{legacy: l, live: live, migrate: migrate}
	if live {
		if err := e.viewNameTaken(st); err != nil {
			return Result{}, err
		}
	}
	var res Result
	switch st := st.(type) {
	case *sql.CreateSource:
		res, err = e.createSource(ctx, st, cmd, record, b)
	case *sql.CreateAs:
		res, err = e.createAs(ctx, st, cmd, record, b)
	case *sql.Drop:
		res, err = e.drop(ctx, st, cmd, live, record)
	case *sql.Terminate:
		res, err = e.terminate(st, cmd, record)
	case *sql.Pause:
		res, err = e.pause(st, cmd, record)
	case *sql.InsertSelect:
		res, err = e.insertSelect(ctx, st, cmd, record, b)
	case *sql.CreateType:
		res, err = e.createType(st, cmd, record)
	case *sql.DropType:
		res, err = e.dropType(st, cmd, record)
	case *sql.CreateView:
		res, err = e.createView(st, cmd, record, live)
	case *sql.DropView:
		res, err = e.dropView(st, cmd, record)
	default:
		return Result{}, fmt.Errorf("statement %T does not change the catalog", st)
	}
	if err != nil {
		return Result{}, err
	}
	if res.Change == nil {
		res.Change = &Change{}
	}
	res.Change.Offset = recorded
	return res, nil
}

// createType registers a custom type (CREATE TYPE): recorded in the
// command topic, so that a replay has it before the statements that use
// it. As in ksqlDB, registering a name again is an error unless IF NOT
// EXISTS is given; sources made with a type keep the type it was then.
func (e *Engine) createType(st *sql.CreateType, cmd catalog.Command, record recorder) (Result, error) {
	tag := Result{Tag: "CREATE TYPE"}
	if _, ok := e.cat.Type(st.Name); ok {
		if st.IfNotExists {
			return tag, nil
		}
		return Result{}, sql.NameError(st, sql.CodeDuplicateObject, "Cannot register custom type '%s' since it is already registered", st.Name)
	}
	if err := sql.ResolveTypes(st, e.cat.Type); err != nil {
		return Result{}, err
	}
	if _, err := record(cmd); err != nil {
		return Result{}, err
	}
	e.cat.PutType(st.Name, st.Type)
	return tag, nil
}

// dropType removes a custom type; the sources made with it keep theirs.
func (e *Engine) dropType(st *sql.DropType, cmd catalog.Command, record recorder) (Result, error) {
	tag := Result{Tag: "DROP TYPE"}
	if _, ok := e.cat.Type(st.Name); !ok {
		if st.IfExists {
			return tag, nil
		}
		return Result{}, sql.NameError(st, sql.CodeUndefinedObject, "Type %s does not exist", st.Name)
	}
	if _, err := record(cmd); err != nil {
		return Result{}, err
	}
	e.cat.DropType(st.Name)
	return tag, nil
}

// binding says how a catalog command is carried out: live (run now,
// recorded after validation), migrate (a command recorded before plans,
// bound with its behaviour properties) or neither (a replayed command
// with a plan, or a headless server's).
type binding struct {
	legacy
	live, migrate bool
}

func (e *Engine) createSource(ctx context.Context, st *sql.CreateSource, cmd catalog.Command, record recorder, b binding) (Result, error) {
	tag := Result{Tag: "CREATE " + st.Kind.String()}
	if old, ok := e.cat.Source(st.Name); ok {
		switch {
		case st.IfNotExists:
			tag.Change = &Change{Source: old.Name, Kind: old.Kind, Topic: old.Topic, Existed: true}
			return tag, nil
		case !st.OrReplace:
			return Result{}, sql.NameError(st, sql.CodeDuplicateObject, "%s %s already exists", old.Kind, st.Name)
		case old.Kind != st.Kind:
			return Result{}, sql.NameError(st, sql.CodeDuplicateObject, "%s is a %s, not a %s", st.Name, old.Kind, st.Kind)
		case old.IsSource || st.Source:
			kind := strings.ToLower(st.Kind.String())
			return Result{}, sql.NameError(st, sql.CodeFeatureNotSupport, "Cannot add %s '%s': CREATE OR REPLACE is not supported on source %ss.", kind, st.Name, kind)
		}
	}
	if len(cmd.Plan) > 0 {
		return e.createSourceFromPlan(ctx, st, cmd, record)
	}
	if err := sql.ResolveTypes(st, e.cat.Type); err != nil {
		return Result{}, err
	}
	if _, err := sql.InferColumns(st, e.cfg.Schemas, sql.Inferred{KeySchemaID: cmd.KeySchemaID, ValueSchemaID: cmd.ValueSchemaID}); err != nil {
		return Result{}, err
	}
	src, err := sql.BindCreateSource(st)
	if err != nil {
		return Result{}, err
	}
	if err := e.ksqlConfigs(src, st.Props, false, cmd.Props, b.legacy); err != nil {
		return Result{}, err
	}
	e.useSchemas(src)
	src.KeyOptions.ReaderSchemaID, src.ValueOptions.ReaderSchemaID = cmd.KeySchemaID, cmd.ValueSchemaID
	if old, ok := e.cat.Source(st.Name); ok {
		// OR REPLACE of a declared source: same topic, columns only added.
		refuse := func(format string, args ...any) (Result, error) {
			return Result{}, sql.NameError(st, sql.CodeFeatureNotSupport, "cannot replace %s: "+format, append([]any{st.Name}, args...)...)
		}
		if old.WriterQuery != "" {
			return refuse("query %s writes it; replace it with CREATE OR REPLACE %s … AS SELECT", old.WriterQuery, old.Kind)
		}
		if old.Topic != src.Topic || old.KeyFormat != src.KeyFormat || old.ValueFormat != src.ValueFormat {
			return refuse("its topic and formats cannot change")
		}
		if old.Partitioner != src.Partitioner {
			// Its queries were planned (repartitions, routing) for the
			// old one.
			return refuse("its PARTITIONER cannot change (%s to %s): DROP it, after the queries that read it, and create it again", old.Partitioner, src.Partitioner)
		}
		if err := compatibleSchema(old.Schema, src.Schema); err != nil {
			return refuse("%v", err)
		}
	}
	parts, err := e.ensureTopic(ctx, src.Topic, src.Partitions)
	if err != nil {
		return Result{}, err
	}
	src.Partitions = parts
	p := &plan.Plan{Sink: src}
	e.planFlags(p, b.legacy)
	prefix := ""
	if src.Kind == catalog.Table {
		if old, ok := e.cat.Source(st.Name); ok && old.MaterializedBy != "" {
			src.MaterializedBy = old.MaterializedBy // OR REPLACE keeps it
		} else {
			// The query that keeps the table's latest rows in a state
			// store, CST_<NAME>_<n> as in ksqlDB. The table's topic is
			// the store's changelog.
			prefix = "CST_" + src.Name
			p.Query = physical.BuildTable(physical.AppID(e.cfg.ServiceID, queryBuildID(cmd)), planner.NewScan(src))
			timestampPolicy(p.Query, b.keepTimestamps, timestampsThrow(cmd.Props))
			p.Sources = []string{src.Name}
		}
	}
	_, existed := e.cat.Source(st.Name)
	dp, id, err := e.finishPlan(ctx, p, &cmd, record, prefix, b.migrate)
	if err != nil {
		return Result{}, err
	}
	if err := e.registerSource(dp, id, cmd); err != nil {
		return Result{}, err
	}
	return e.created(tag, st.Name, dp.Sink.MaterializedBy, existed), nil
}

// createSourceFromPlan carries out a CREATE STREAM|TABLE recorded with
// its plan: the source as it was bound, its topic made sure of.
func (e *Engine) createSourceFromPlan(ctx context.Context, st *sql.CreateSource, cmd catalog.Command, record recorder) (Result, error) {
	tag := Result{Tag: "CREATE " + st.Kind.String()}
	off, err := record(cmd) // a replay's: its offset
	if err != nil {
		return Result{}, err
	}
	p, err := plan.Decode(cmd.Plan, "", nil)
	if err != nil {
		return Result{}, err
	}
	id := ""
	if p.Query != nil {
		id = e.queryID("CST_"+st.Name, cmd, off)
		if p, err = plan.Decode(cmd.Plan, id, e.cfg.Schemas); err != nil {
			return Result{}, err
		}
	}
	if p.Sink == nil {
		return Result{}, fmt.Errorf("the plan of %s registers no source", st.Name)
	}
	if err := e.ensureRecordedTopic(ctx, p.Sink); err != nil {
		return Result{}, err
	}
	_, existed := e.cat.Source(st.Name)
	if err := e.registerSource(p, id, cmd); err != nil {
		return Result{}, err
	}
	return e.created(tag, st.Name, p.Sink.MaterializedBy, existed), nil
}

// ensureRecordedTopic makes sure a recorded source's topic exists: with
// the partitions recorded when it is missing.
func (e *Engine) ensureRecordedTopic(ctx context.Context, src *catalog.Source) error {
	if _, err := e.ensureTopic(ctx, src.Topic, 0); err == nil {
		return nil
	}
	_, err := e.ensureTopic(ctx, src.Topic, src.Partitions)
	return err
}

// registerSource registers a CREATE STREAM|TABLE's source from its plan
// and starts its materialization (query id), if it has one.
func (e *Engine) registerSource(p *plan.Plan, id string, cmd catalog.Command) error {
	src := p.Sink
	e.useSchemas(src)
	if p.Query == nil {
		return e.cat.AddSource(src, true)
	}
	src.MaterializedBy = id
	if err := e.cat.AddSource(src, true); err != nil {
		return err
	}
	e.cat.AddQuery(&catalog.Query{ID: id, SQL: cmd.Statement, Sources: p.Sources, Props: cmd.Props})
	return e.start(id, p.Query, "earliest", cmd.Props, flagsOf(p))
}

// exists reports whether a CREATE IF NOT EXISTS of name will do nothing.
func (e *Engine) exists(name string, ifNotExists bool) bool {
	_, ok := e.cat.Source(name)
	return ok && ifNotExists
}

// checkWriterSchemas checks a new sink's KEY_SCHEMA_ID and VALUE_SCHEMA_ID
// against its columns (types.CheckWriterSchema), as ksqlDB does when the
// statement runs; a replay does not check again.
func (e *Engine) checkWriterSchemas(t *catalog.Source) error {
	for _, side := range []struct {
		format string
		opts   types.FormatOptions
		idx    []int
		key    bool
	}{{t.KeyFormat, t.KeyOptions, t.Schema.KeyIndexes(), true}, {t.ValueFormat, t.ValueOptions, t.Schema.ValueIndexes(), false}} {
		cols := make([]types.Column, len(side.idx))
		for i, c := range side.idx {
			cols[i] = t.Schema.Columns[c]
		}
		if err := types.CheckWriterSchema(e.cfg.Schemas, side.format, side.opts.SchemaID, side.opts.FullName, cols, side.key); err != nil {
			return err
		}
	}
	return nil
}

// useSchemas gives src's formats the engine's schema registry.
// A source already in the catalog (INSERT INTO's target) has it and is
// not written to.
func (e *Engine) useSchemas(src *catalog.Source) {
	if e.cfg.Schemas == nil {
		return
	}
	if src.KeyOptions.Schemas == nil {
		src.KeyOptions.Schemas = e.cfg.Schemas
	}
	if src.ValueOptions.Schemas == nil {
		src.ValueOptions.Schemas = e.cfg.Schemas
	}
}

func (e *Engine) createAs(ctx context.Context, st *sql.CreateAs, cmd catalog.Command, record recorder, b binding) (Result, error) {
	tag := Result{Tag: "CREATE " + st.Kind.String()}
	if old, ok := e.cat.Source(st.Name); ok {
		switch {
		case st.IfNotExists:
			tag.Change = &Change{Source: old.Name, Kind: old.Kind, Topic: old.Topic, Existed: true}
			return tag, nil
		case st.OrReplace && old.WriterQuery != "" && (b.live || e.cfg.Headless != nil) && propFalse(cmd.Props, createOrReplaceProp):
			// ksqlDB's message (QueryIdUtil); checked when the statement
			// runs, not when a command recorded before is replayed.
			kind := strings.ToLower(old.Kind.String())
			return Result{}, sql.NameError(st, sql.CodeFeatureNotSupport, "Cannot add %s '%s': A %s with the same name already exists", kind, st.Name, kind)
		case st.OrReplace:
			if err := e.replaceQuery(ctx, st, old, cmd, record, b); err != nil {
				return Result{}, err
			}
			return e.created(tag, st.Name, old.WriterQuery, true), nil
		default:
			return Result{}, sql.NameError(st, sql.CodeDuplicateObject, "%s %s already exists", old.Kind, st.Name)
		}
	}
	prefix := "CSAS_"
	if st.Kind == catalog.Table {
		prefix = "CTAS_"
	}
	if len(cmd.Plan) > 0 {
		id, err := e.startFromPlan(ctx, prefix+st.Name, cmd, record)
		if err != nil {
			return Result{}, err
		}
		return e.created(tag, st.Name, id, false), nil
	}
	sink, err := sql.BindCreateAs(st, e.cat)
	if err != nil {
		return Result{}, err
	}
	if err := e.ksqlConfigs(sink.Target, st.Props, true, cmd.Props, b.legacy); err != nil {
		return Result{}, err
	}
	if b.live {
		if err := e.checkWriterSchemas(sink.Target); err != nil {
			return Result{}, err
		}
	}
	// A sink topic that exists keeps its partitions unless the statement
	// gave PARTITIONS, as in ksqlDB.
	_, gives := st.Props["PARTITIONS"]
	id, err := e.startPersistent(ctx, prefix+st.Name, sink, cmd, record, true, gives, b)
	if err != nil {
		return Result{}, err
	}
	return e.created(tag, st.Name, id, false), nil
}

// created adds to res the Change of a statement that started query id
// writing into the source name.
func (e *Engine) created(res Result, name, id string, existed bool) Result {
	c := &Change{Source: name, QueryID: id, Existed: existed}
	if src, ok := e.cat.Source(name); ok {
		c.Kind, c.Topic = src.Kind, src.Topic
	}
	res.Change = c
	return res
}

func (e *Engine) insertSelect(ctx context.Context, st *sql.InsertSelect, cmd catalog.Command, record recorder, b binding) (Result, error) {
	tag := Result{Tag: "INSERT 0 0"}
	var id string
	if len(cmd.Plan) > 0 {
		var err error
		if id, err = e.startFromPlan(ctx, "INSERTQUERY", cmd, record); err != nil {
			return Result{}, err
		}
	} else {
		sink, err := sql.BindInsertSelect(st, e.cat)
		if err != nil {
			return Result{}, err
		}
		if id, err = e.startPersistent(ctx, "INSERTQUERY", sink, cmd, record, false, false, b); err != nil {
			return Result{}, err
		}
	}
	return e.created(tag, st.Target, id, true), nil
}

func (e *Engine) drop(ctx context.Context, st *sql.Drop, cmd catalog.Command, live bool, record recorder) (Result, error) {
	tag := Result{Tag: "DROP " + st.Kind.String(), Change: &Change{Source: st.Name, Kind: st.Kind}}
	src, ok := e.cat.Source(st.Name)
	if !ok {
		if st.IfExists {
			return tag, nil
		}
		return Result{}, sql.NameError(st, sql.CodeUndefinedTable, "%s %s does not exist", st.Kind, st.Name)
	}
	if src.Kind != st.Kind {
		return Result{}, sql.NameError(st, sql.CodeUndefinedTable, "%s is a %s, not a %s", st.Name, src.Kind, st.Kind)
	}
	if src.IsSource && st.DeleteTopic {
		return Result{}, sql.NameError(st, sql.CodeFeatureNotSupport, "Cannot delete topic for read-only source: %s", st.Name)
	}
	var users []string
	for _, id := range e.cat.Users(st.Name) {
		if id != src.MaterializedBy || id == src.WriterQuery {
			users = append(users, id)
		}
	}
	if len(users) > 0 {
		return Result{}, sql.NameError(st, sql.CodeObjectInUse, "cannot drop %s: queries %s read or write it; TERMINATE them first", st.Name, strings.Join(users, ", "))
	}
	if _, err := record(cmd); err != nil {
		return Result{}, err
	}
	tag.Change.Existed, tag.Change.Topic = true, src.Topic
	if id := src.MaterializedBy; id != "" {
		e.stopQuery(id)
		tag.Change.Queries = []string{id}
	}
	e.cat.DropSource(st.Name)
	// Only the instance the user asked deletes the topic: a replay or
	// another instance must not delete one created again since.
	if st.DeleteTopic && live {
		if _, err := e.topics.Delete(ctx, src.Topic); err != nil {
			e.log.Warn("deleting topic", "topic", src.Topic, "err", err)
		}
	}
	return tag, nil
}
