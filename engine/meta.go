package engine

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/exec"
	"github.com/sqlstreams/sqlstreams/expr"
	"github.com/sqlstreams/sqlstreams/physical"
	"github.com/sqlstreams/sqlstreams/planner"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
)

// Result layouts of the statements that return fixed columns.
var (
	streamsCols     = textCols("Stream Name", "Kafka Topic", "Key Format", "Value Format", "Windowed")
	tablesCols      = textCols("Table Name", "Kafka Topic", "Key Format", "Value Format", "Windowed")
	queriesCols     = textCols("Query ID", "Query Type", "Status", "Sink Name", "Sink Kafka Topic", "Query String")
	queriesExtCols  = textCols("Query ID", "Query Type", "Status", "Since", "Restarts", "Last Error", "Records In", "Records Out", "Bad Records", "Sink Name", "Sink Kafka Topic", "Query String")
	topicsCols      = textCols("Kafka Topic", "Partitions")
	typesCols       = textCols("Type Name", "Schema")
	propertiesCols  = textCols("Property", "Value", "Source")
	functionsCols   = textCols("Name", "Type", "Description")
	describeCols    = textCols("Field", "Type")
	describeExtCols = textCols("Property", "Value")
	describeFnCols  = textCols("Name", "Signature", "Description")
	explainCols     = textCols("QUERY PLAN")
)

func textCols(names ...string) []types.Column {
	cols := make([]types.Column, len(names))
	for i, n := range names {
		cols[i] = types.Column{Name: n, Type: types.StringType}
	}
	return cols
}

// writeTable sends a table of strings.
func writeTable(w ResultWriter, cols []types.Column, rows [][]string) (Result, error) {
	if err := w.Columns(cols); err != nil {
		return Result{}, err
	}
	row := make(types.Row, len(cols))
	for _, r := range rows {
		for i, v := range r {
			row[i] = types.Datum{B: []byte(v)}
		}
		if err := w.Row(row); err != nil {
			return Result{}, err
		}
	}
	return Result{Tag: "SELECT " + strconv.Itoa(len(rows))}, nil
}

// writeTyped sends a typed result's table and returns the result with it.
func writeTyped(w ResultWriter, v Tabular) (Result, error) {
	cols, rows := v.Table()
	res, err := writeTable(w, cols, rows)
	if err != nil {
		return Result{}, err
	}
	res.Value = v
	return res, nil
}

// Sources returns the streams (kind catalog.Stream) or tables in the
// catalog, as SHOW STREAMS|TABLES lists them.
func (e *Engine) Sources(kind catalog.Kind) []SourceInfo {
	out := []SourceInfo{}
	for _, src := range e.cat.Sources() {
		if src.Kind == kind {
			out = append(out, sourceInfo(src))
		}
	}
	return out
}

// Queries returns every persistent query in the catalog with this
// server's status of it, as SHOW QUERIES lists them.
func (e *Engine) Queries() []QueryInfo {
	out := []QueryInfo{}
	for _, q := range e.cat.Queries() {
		out = append(out, e.queryInfo(q))
	}
	return out
}

func (e *Engine) queryInfo(q *catalog.Query) QueryInfo {
	qi := QueryInfo{ID: q.ID, Type: "PERSISTENT", Sink: q.Sink, Sources: append([]string{}, q.Sources...), SQL: q.SQL}
	if qs, ok := e.QueryStatus(q.ID); ok {
		qi.Status = &qs
	}
	if src, ok := e.cat.Source(q.Sink); ok {
		qi.SinkTopic = src.Topic
	}
	return qi
}

// Functions returns the scalar and table functions, sorted by name.
func (e *Engine) Functions() []FunctionInfo {
	var out []FunctionInfo
	for _, f := range expr.Functions() {
		out = append(out, FunctionInfo{Name: f.Name, Type: "SCALAR", Description: f.Description})
	}
	for _, f := range expr.TableFunctions() {
		out = append(out, FunctionInfo{Name: f.Name, Type: "TABLE", Description: f.Description})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (e *Engine) show(ctx context.Context, s *Session, st *sql.Show, w ResultWriter) (Result, error) {
	switch st.What {
	case "STREAMS", "TABLES":
		kind := catalog.Stream
		if st.What == "TABLES" {
			kind = catalog.Table
		}
		return writeTyped(w, &SourceList{Kind: kind, Extended: st.Extended, Sources: e.Sources(kind)})
	case "QUERIES":
		return writeTyped(w, &QueryList{Extended: st.Extended, Queries: e.Queries()})
	case "TOPICS":
		details, err := e.topics.Describe(ctx)
		if err != nil {
			return Result{}, err
		}
		l := &TopicList{Topics: []TopicInfo{}}
		for _, name := range topicNames(details) {
			// The service's own command topic, processing log and
			// headless plans are internal, as the _-prefixed topics are.
			internal := strings.HasPrefix(name, "_") || name == e.commandTopic() || name == e.processingLogTopic() ||
				e.headless != nil && name == e.headless.topic
			if internal && !st.Extended {
				continue
			}
			l.Topics = append(l.Topics, TopicInfo{Name: name, Partitions: int(details[name].Partitions)})
		}
		return writeTyped(w, l)
	case "PROPERTIES":
		// Every property of the registry, with its default (the
		// server's value where the server sets it), then the session's.
		props := map[string]string{}
		for _, d := range Properties {
			props[d.Name] = d.Default
		}
		for k, v := range map[string]string{
			"auto.offset.reset":    "latest (push queries), earliest (persistent queries)",
			"processing.guarantee": e.guarantee(),
			"commit.interval.ms":   strconv.FormatInt(e.commitInterval().Milliseconds(), 10),
			"ksql.service.id":      e.cfg.ServiceID,
			"num.stream.threads":   strconv.Itoa(max(e.cfg.Threads, 1)),
			IdleAdvanceProp:        "0",
			StandbyReplicasProp:    strconv.Itoa(e.cfg.StandbyReplicas),
		} {
			props[k] = v
		}
		props["transaction.timeout.ms"] = strconv.FormatInt(e.transactionTimeout().Milliseconds(), 10)
		source := map[string]string{}
		for k := range props {
			source[k] = "default"
		}
		for k, v := range s.Props {
			props[k], source[k] = v, "session (SET)"
			if d, ok := s.defaults[k]; ok && d == v {
				source[k] = "server (--config)"
			}
		}
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		l := &PropertyList{Properties: make([]Property, 0, len(keys)+len(e.cfg.Settings))}
		for _, k := range keys {
			_, set := s.Props[k]
			set = set && source[k] != "server (--config)"
			l.Properties = append(l.Properties, Property{Name: k, Value: props[k], Source: source[k], Overridden: set})
		}
		// The server's own settings, as sqlstreams server took them.
		for _, st := range e.cfg.Settings {
			l.Properties = append(l.Properties, Property{Name: "server." + st.Name, Value: st.Value, Source: st.Source})
		}
		return writeTyped(w, l)
	case "FUNCTIONS":
		return writeTyped(w, &FunctionList{Functions: e.Functions()})
	case "VIEWS":
		return e.showViews(w)
	case "TYPES":
		l := &TypeList{Types: []TypeInfo{}}
		snap := e.cat.Snapshot()
		for _, n := range snap.Types() {
			t, _ := snap.Type(n)
			l.Types = append(l.Types, TypeInfo{Name: n, Schema: t.String()})
		}
		return writeTyped(w, l)
	}
	return Result{}, sql.Errorf(sql.CodeFeatureNotSupport, "SHOW %s is not supported yet", st.What)
}

func (e *Engine) commitInterval() time.Duration {
	if e.cfg.CommitInterval > 0 {
		return e.cfg.CommitInterval
	}
	return defaultCommitInterval
}

// DescribeFunction returns DESCRIBE FUNCTION name's result; ok is false
// when no such function exists.
func (e *Engine) DescribeFunction(name string) (*FunctionDescription, bool) {
	if fn, ok := expr.Lookup(name); ok {
		return &FunctionDescription{Name: fn.Name, Type: "SCALAR", Description: fn.Description, Signatures: fn.Signatures}, true
	}
	if tf, ok := expr.LookupTable(name); ok {
		return &FunctionDescription{Name: tf.Name, Type: "TABLE", Description: tf.Description, Signatures: tf.Signatures}, true
	}
	return nil, false
}

// DescribeSource returns DESCRIBE [EXTENDED] name's result; ok is false
// when no stream or table has that name.
func (e *Engine) DescribeSource(name string, extended bool) (*SourceDescription, bool) {
	src, ok := e.cat.Source(name)
	if !ok {
		return nil, false
	}
	d := &SourceDescription{
		Source: sourceInfo(src), Extended: extended,
		Columns:         append([]types.Column{}, src.Schema.Columns...),
		TimestampColumn: src.TimestampColumn, WindowType: src.WindowType, WindowSizeMs: src.WindowSizeMs,
		IsSource: src.IsSource, Statement: src.SQL, Readers: []QueryInfo{},
		Partitioner: src.Partitioner.String(),
	}
	d.Checked, d.Misplaced = e.sourcePartitioning(src.Name)
	if src.WriterQuery != "" {
		if q, ok := e.cat.Query(src.WriterQuery); ok {
			qi := e.queryInfo(q)
			d.Writer = &qi
		} else {
			d.Writer = &QueryInfo{ID: src.WriterQuery, Type: "PERSISTENT", Sink: src.Name, SinkTopic: src.Topic}
			if qs, ok := e.QueryStatus(src.WriterQuery); ok {
				d.Writer.Status = &qs
			}
		}
	}
	for _, id := range e.cat.Users(src.Name) {
		if id == src.WriterQuery {
			continue
		}
		if q, ok := e.cat.Query(id); ok {
			d.Readers = append(d.Readers, e.queryInfo(q))
		} else {
			d.Readers = append(d.Readers, QueryInfo{ID: id, Type: "PERSISTENT"})
		}
	}
	return d, true
}

// sourcePartitioning sums, over the queries running here, the keyed
// records of source they checked and those outside their key's murmur2
// partition.
func (e *Engine) sourcePartitioning(source string) (checked, misplaced int64) {
	e.mu.Lock()
	qs := make([]*exec.Query, 0, len(e.running))
	for _, q := range e.running {
		qs = append(qs, q)
	}
	e.mu.Unlock()
	for _, q := range qs {
		for _, p := range q.Partitioning() {
			if p.Source == source {
				checked += p.Checked
				misplaced += p.Misplaced
			}
		}
	}
	return checked, misplaced
}

func (e *Engine) describe(st *sql.Describe, w ResultWriter) (Result, error) {
	if st.Function {
		d, ok := e.DescribeFunction(st.Name)
		if !ok {
			return Result{}, sql.NameError(st, sql.CodeUndefinedFunction, "function %s does not exist", st.Name)
		}
		return writeTyped(w, d)
	}
	d, ok := e.DescribeSource(st.Name, st.Extended)
	if !ok {
		return Result{}, sql.NameError(st, sql.CodeUndefinedTable, "stream or table %s does not exist", st.Name)
	}
	return writeTyped(w, d)
}

// ExplainQuery returns EXPLAIN query_id's result; ok is false when no
// query has that ID.
func (e *Engine) ExplainQuery(id string) (*Plan, bool) {
	q, ok := e.cat.Query(id)
	if !ok {
		return nil, false
	}
	e.mu.Lock()
	rq := e.running[q.ID]
	e.mu.Unlock()
	p := &Plan{QueryID: q.ID, SQL: q.SQL, Type: "PERSISTENT", Sink: q.Sink, Sources: append([]string{}, q.Sources...)}
	if src, ok := e.cat.Source(q.Sink); ok {
		p.Columns = append([]types.Column{}, src.Schema.Columns...)
	}
	var b strings.Builder
	b.WriteString("Query ID: " + q.ID + "\n")
	b.WriteString("SQL: " + q.SQL + "\n")
	if rq != nil {
		status := statusOf(rq.Status())
		p.Status = &status
		topo := rq.Topology()
		p.AppID, p.Fingerprint, p.Graph = topo.AppID, topo.Fingerprint(), graphOf(topo)
		b.WriteString("Status: " + status.State + "\n")
		if status.Err != "" {
			b.WriteString("Error: " + status.Err + "\n")
		}
		b.WriteString("Application ID: " + topo.AppID + "\n")
		b.WriteString("Fingerprint: " + p.Fingerprint + "\n")
		b.WriteString("Records in/out/bad: " + strconv.FormatInt(status.RecordsIn, 10) + "/" +
			strconv.FormatInt(status.RecordsOut, 10) + "/" + strconv.FormatInt(status.BadRecords, 10) + "\n")
		b.WriteString("Topology:\n")
		b.WriteString(topo.String())
	}
	p.Text = b.String()
	return p, true
}

func (e *Engine) explain(st *sql.Explain, w ResultWriter) (Result, error) {
	if st.QueryID != "" {
		p, ok := e.ExplainQuery(st.QueryID)
		if !ok {
			return Result{}, sql.NameError(st, sql.CodeUndefinedObject, "query %s does not exist", st.QueryID)
		}
		return writeTyped(w, p)
	}
	p, err := e.explainStatement(st.Stmt)
	if err != nil {
		return Result{}, err
	}
	return writeTyped(w, p)
}

// explainStatement plans a statement without running it and renders its
// logical plan and topology.
func (e *Engine) explainStatement(st sql.Statement) (*Plan, error) {
	var b strings.Builder
	p := &Plan{}
	switch st := st.(type) {
	case *sql.CreateAs:
		sink, err := sql.BindCreateAs(st, e.cat)
		if err != nil {
			return nil, err
		}
		topo, err := physical.Build(physical.AppID(e.cfg.ServiceID, "CSAS_"+st.Name+"_0"), sink)
		if err != nil {
			return nil, err
		}
		p.Type, p.Sink, p.Logical, p.Graph = "PERSISTENT", st.Name, planner.Explain(sink), graphOf(topo)
		p.AppID, p.Fingerprint = topo.AppID, topo.Fingerprint()
		b.WriteString("Logical plan:\n")
		b.WriteString(p.Logical)
		b.WriteString("Physical plan:\n")
		b.WriteString(topo.String())
	case *sql.Select:
		q, err := sql.BindSelect(st, e.cat)
		if err != nil {
			return nil, err
		}
		p.Type, p.Logical, p.Columns = "PULL", planner.Explain(q.Root), q.Root.Schema().Columns
		b.WriteString("Logical plan:\n")
		b.WriteString(p.Logical)
		if q.Emit != "" {
			build := physical.BuildPush
			if needsTransient(q) {
				// As it runs: a transient query of its own.
				build = func(q *planner.Query) (*physical.Topology, error) {
					return physical.BuildTransient(physical.AppID(e.cfg.ServiceID, "transient_EXPLAIN"), q)
				}
			}
			topo, err := build(q)
			if err != nil {
				return nil, err
			}
			p.Type, p.Graph = "PUSH", graphOf(topo)
			b.WriteString("Physical plan:\n")
			b.WriteString(topo.String())
		}
	default:
		return nil, sql.Errorf(sql.CodeFeatureNotSupport, "EXPLAIN of this statement is not supported yet")
	}
	p.SQL = strings.TrimSpace(st.Text())
	if len(p.SQL) > 7 && strings.EqualFold(p.SQL[:7], "EXPLAIN") {
		p.SQL = strings.TrimSpace(p.SQL[7:])
	}
	p.Text = b.String()
	return p, nil
}

// Describe returns the columns a statement would return, without running
// it; nil for statements that return no rows.
func (e *Engine) Describe(ctx context.Context, s *Session, text string) ([]types.Column, error) {
	e.seed(s)
	st, err := sql.Parse(text)
	if err != nil {
		return nil, err
	}
	switch st := st.(type) {
	case *sql.Select:
		q, err := sql.BindSelect(st, e.cat)
		if err != nil {
			return nil, err
		}
		return q.Root.Schema().Columns, nil
	case *sql.Show:
		switch st.What {
		case "STREAMS":
			return streamsCols, nil
		case "TABLES":
			return tablesCols, nil
		case "QUERIES":
			if st.Extended {
				return queriesExtCols, nil
			}
			return queriesCols, nil
		case "TOPICS":
			return topicsCols, nil
		case "TYPES":
			return typesCols, nil
		case "VIEWS":
			return viewsCols, nil
		case "PROPERTIES":
			return propertiesCols, nil
		case "FUNCTIONS":
			return functionsCols, nil
		}
	case *sql.Describe:
		if st.Function {
			return describeFnCols, nil
		}
		if st.Extended {
			return describeExtCols, nil
		}
		return describeCols, nil
	case *sql.Explain:
		return explainCols, nil
	case *sql.Print:
		return printCols, nil
	}
	return nil, nil
}

// windowDesc describes a source's windowing for DESCRIBE: its type and,
// for time windows, its size ("TUMBLING, 1 MINUTE"); "false" when it has
// none.
func windowDesc(src *catalog.Source) string {
	switch src.WindowType {
	case types.NoWindow:
		return "false"
	case types.Session:
		return string(src.WindowType)
	}
	return string(src.WindowType) + ", " + planner.FormatDuration(src.WindowSizeMs)
}

// commandTopic is the service's command topic ("" in headless mode).
func (e *Engine) commandTopic() string {
	if e.cmds == nil {
		return ""
	}
	return e.cmds.Topic()
}
