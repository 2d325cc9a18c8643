package rest

// This file holds the ksqlDB entities /ksql answers with for SHOW,
// DESCRIBE and EXPLAIN, and builds them from the engine's result rows and
// the catalog.

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
)

// sourceInfo is ksqlDB's SourceInfo (an entry of SHOW STREAMS|TABLES).
type sourceInfo struct {
	Type        string `json:"type"`
	Name        string `json:"name"`
	Topic       string `json:"topic"`
	KeyFormat   string `json:"keyFormat"`
	ValueFormat string `json:"valueFormat"`
	// Format is the value format, under the name older clients read.
	Format     string `json:"format"`
	IsWindowed bool   `json:"isWindowed"`
}

type streamsList struct {
	entityBase
	Streams []sourceInfo `json:"streams"`
}

type tablesList struct {
	entityBase
	Tables []sourceInfo `json:"tables"`
}

// runningQuery is ksqlDB's RunningQuery (SHOW QUERIES, DESCRIBE).
type runningQuery struct {
	QueryString     string         `json:"queryString"`
	Sinks           []string       `json:"sinks"`
	SinkKafkaTopics []string       `json:"sinkKafkaTopics"`
	ID              string         `json:"id"`
	StatusCount     map[string]int `json:"statusCount"`
	QueryType       string         `json:"queryType"`
	State           string         `json:"state"`
}

type queriesList struct {
	entityBase
	Queries []runningQuery `json:"queries"`
}

type property struct {
	Name  string `json:"name"`
	Scope string `json:"scope"`
	Value string `json:"value"`
}

type propertiesList struct {
	entityBase
	Properties            []property `json:"properties"`
	OverwrittenProperties []string   `json:"overwrittenProperties"`
	DefaultProperties     []string   `json:"defaultProperties"`
}

type kafkaTopic struct {
	Name        string `json:"name"`
	ReplicaInfo []int  `json:"replicaInfo"`
}

type kafkaTopicsList struct {
	entityBase
	Topics []kafkaTopic `json:"topics"`
}

type simpleFunction struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Category string `json:"category"`
}

type functionNames struct {
	entityBase
	Functions []simpleFunction `json:"functions"`
}

type sourceDescriptionList struct {
	entityBase
	SourceDescriptions []sourceDescription `json:"sourceDescriptions"`
}

type queryDescriptionList struct {
	entityBase
	QueryDescriptions []queryDescription `json:"queryDescriptions"`
}

// state is a query state without the error text SHOW QUERIES appends.
func state(status string) string {
	st, _, _ := strings.Cut(status, ":")
	if st = strings.TrimSpace(st); st == "" {
		return "UNKNOWN"
	}
	return st
}

// show turns a SHOW statement's rows into its entity.
func (s *Server) show(ctx context.Context, sess *engine.Session, st *sql.Show, text string) (any, error) {
	t, err := s.collect(ctx, sess, text)
	if err != nil {
		return nil, err
	}
	cat := s.eng.Catalog()
	switch st.What {
	case "STREAMS", "TABLES":
		kind := catalog.Stream
		if st.What == "TABLES" {
			kind = catalog.Table
		}
		if st.Extended {
			l := sourceDescriptionList{entityBase: base("source_descriptions", text), SourceDescriptions: []sourceDescription{}}
			for _, src := range cat.Sources() {
				if src.Kind == kind {
					l.SourceDescriptions = append(l.SourceDescriptions, s.describeSource(src, true))
				}
			}
			return l, nil
		}
		infos := make([]sourceInfo, len(t.rows))
		for i := range t.rows {
			infos[i] = sourceInfo{
				Type: kind.String(), Name: t.rows[i][0], Topic: t.get(i, "Kafka Topic"),
				KeyFormat: t.get(i, "Key Format"), ValueFormat: t.get(i, "Value Format"),
				Format: t.get(i, "Value Format"), IsWindowed: t.get(i, "Windowed") == "true",
			}
		}
		if kind == catalog.Table {
			return tablesList{entityBase: base("tables", text), Tables: infos}, nil
		}
		return streamsList{entityBase: base("streams", text), Streams: infos}, nil
	case "QUERIES":
		if st.Extended {
			l := queryDescriptionList{entityBase: base("query_descriptions", text), QueryDescriptions: []queryDescription{}}
			for _, q := range cat.Queries() {
				plan, err := s.collect(ctx, sess, "EXPLAIN "+q.ID)
				if err != nil {
					continue // terminated meanwhile
				}
				l.QueryDescriptions = append(l.QueryDescriptions, s.describeQuery(q, plan.lines()))
			}
			return l, nil
		}
		qs := make([]runningQuery, len(t.rows))
		for i := range t.rows {
			st := state(t.get(i, "Status"))
			qs[i] = runningQuery{
				QueryString: t.get(i, "Query String"), ID: t.get(i, "Query ID"),
				Sinks: list(t.get(i, "Sink Name")), SinkKafkaTopics: list(t.get(i, "Sink Kafka Topic")),
				StatusCount: map[string]int{st: 1}, QueryType: orDefault(t.get(i, "Query Type"), "PERSISTENT"), State: st,
			}
		}
		return queriesList{entityBase: base("queries", text), Queries: qs}, nil
	case "TOPICS":
		topics := make([]kafkaTopic, len(t.rows))
		for i := range t.rows {
			n, _ := strconv.Atoi(t.get(i, "Partitions"))
			replicas := make([]int, n)
			for j := range replicas {
				replicas[j] = 1 // replicas per partition are not reported; one is the embedded broker's
			}
			topics[i] = kafkaTopic{Name: t.get(i, "Kafka Topic"), ReplicaInfo: replicas}
		}
		return kafkaTopicsList{entityBase: base("kafka_topics", text), Topics: topics}, nil
	case "PROPERTIES":
		l := propertiesList{entityBase: base("properties", text), Properties: []property{}, OverwrittenProperties: []string{}, DefaultProperties: []string{}}
		for i := range t.rows {
			name := t.get(i, "Property")
			scope := "STREAMS"
			if strings.HasPrefix(name, "ksql.") {
				scope = "KSQL"
			}
			l.Properties = append(l.Properties, property{Name: name, Scope: scope, Value: t.get(i, "Value")})
			if _, set := sess.Props[name]; set {
				l.OverwrittenProperties = append(l.OverwrittenProperties, name)
			} else {
				l.DefaultProperties = append(l.DefaultProperties, name)
			}
		}
		return l, nil
	case "FUNCTIONS":
		fns := make([]simpleFunction, len(t.rows))
		for i := range t.rows {
			fns[i] = simpleFunction{Name: t.get(i, "Name"), Type: t.get(i, "Type"), Category: ""}
		}
		return functionNames{entityBase: base("function_names", text), Functions: fns}, nil
	}
	return s.tableEntity(t, text), nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// tableEntity is the answer for a statement that returns rows this server
// has no ksqlDB entity for: sqlstreams' own "table" entity.
func (s *Server) tableEntity(t *table, text string) any {
	type tableEntity struct {
		entityBase
		ColumnNames []string   `json:"columnNames"`
		Rows        [][]string `json:"rows"`
	}
	e := tableEntity{entityBase: base("table", text), ColumnNames: []string{}, Rows: t.rows}
	for _, c := range t.cols {
		e.ColumnNames = append(e.ColumnNames, c.Name)
	}
	if e.Rows == nil {
		e.Rows = [][]string{}
	}
	return e
}

// lines returns a one-column result (EXPLAIN's) as text.
func (t *table) lines() string {
	var b strings.Builder
	for _, r := range t.rows {
		if len(r) > 0 {
			b.WriteString(r[0])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// sourceDescription is ksqlDB's SourceDescription.
type sourceDescription struct {
	Name                 string         `json:"name"`
	WindowType           *string        `json:"windowType"`
	ReadQueries          []runningQuery `json:"readQueries"`
	WriteQueries         []runningQuery `json:"writeQueries"`
	Fields               []fieldInfo    `json:"fields"`
	Type                 string         `json:"type"`
	Timestamp            string         `json:"timestamp"`
	Statistics           string         `json:"statistics"`
	ErrorStats           string         `json:"errorStats"`
	StatisticsMap        map[string]any `json:"statisticsMap"`
	ErrorStatsMap        map[string]any `json:"errorStatsMap"`
	Extended             bool           `json:"extended"`
	KeyFormat            string         `json:"keyFormat"`
	ValueFormat          string         `json:"valueFormat"`
	Topic                string         `json:"topic"`
	Partitions           int            `json:"partitions"`
	Replication          int            `json:"replication"`
	Statement            string         `json:"statement"`
	QueryOffsetSummaries []any          `json:"queryOffsetSummaries"`
	SourceConstraints    []string       `json:"sourceConstraints"`
}

type sourceDescriptionEntity struct {
	entityBase
	SourceDescription sourceDescription `json:"sourceDescription"`
}

// describe answers DESCRIBE [EXTENDED] source and DESCRIBE FUNCTION f.
func (s *Server) describe(ctx context.Context, sess *engine.Session, st *sql.Describe, text string) (any, error) {
	t, err := s.collect(ctx, sess, text)
	if err != nil {
		return nil, err
	}
	if st.Function {
		return s.describeFunction(ctx, sess, t, text), nil
	}
	src, ok := s.eng.Catalog().Source(st.Name)
	if !ok {
		return nil, sql.NameError(st, sql.CodeUndefinedTable, "stream or table %s does not exist", st.Name)
	}
	return sourceDescriptionEntity{entityBase: base("sourceDescription", text), SourceDescription: s.describeSource(src, st.Extended)}, nil
}

// describeSource builds a source's description from the catalog and, for
// its queries, the engine's status.
func (s *Server) describeSource(src *catalog.Source, extended bool) sourceDescription {
	cat := s.eng.Catalog()
	d := sourceDescription{
		Name: src.Name, ReadQueries: []runningQuery{}, WriteQueries: []runningQuery{},
		Fields: fieldInfos(src.Schema.Columns), Type: src.Kind.String(), Timestamp: src.TimestampColumn,
		StatisticsMap: map[string]any{}, ErrorStatsMap: map[string]any{}, Extended: extended,
		KeyFormat: src.KeyFormat, ValueFormat: src.ValueFormat, Topic: src.Topic,
		Partitions: int(src.Partitions), Replication: 1, Statement: src.SQL,
		QueryOffsetSummaries: []any{}, SourceConstraints: []string{},
	}
	if src.Windowed() {
		w := string(src.WindowType)
		d.WindowType = &w
	}
	for _, id := range cat.Users(src.Name) {
		q, ok := cat.Query(id)
		if !ok {
			continue
		}
		if q.Sink == src.Name {
			d.WriteQueries = append(d.WriteQueries, s.runningQuery(q))
		} else {
			d.ReadQueries = append(d.ReadQueries, s.runningQuery(q))
		}
	}
	if extended && src.WriterQuery != "" {
		if st, ok := s.eng.QueryStatus(src.WriterQuery); ok {
			d.Statistics = fmt.Sprintf("records-in: %d records-out: %d commits: %d", st.RecordsIn, st.RecordsOut, st.Commits)
			d.ErrorStats = fmt.Sprintf("bad-records: %d aborts: %d", st.BadRecords, st.Aborts)
			d.StatisticsMap = map[string]any{"records-in": st.RecordsIn, "records-out": st.RecordsOut, "commits": st.Commits}
			d.ErrorStatsMap = map[string]any{"bad-records": st.BadRecords, "aborts": st.Aborts}
		}
	}
	return d
}

// runningQuery describes a persistent query as SHOW QUERIES lists it.
func (s *Server) runningQuery(q *catalog.Query) runningQuery {
	st := "UNKNOWN"
	if qs, ok := s.eng.QueryStatus(q.ID); ok {
		st = qs.State
	}
	topic := ""
	if src, ok := s.eng.Catalog().Source(q.Sink); ok {
		topic = src.Topic
	}
	return runningQuery{
		QueryString: q.SQL, Sinks: list(q.Sink), SinkKafkaTopics: list(topic), ID: q.ID,
		StatusCount: map[string]int{st: 1}, QueryType: "PERSISTENT", State: st,
	}
}

// list returns [s], or [] when s is empty (a query that materializes a
// source table has no sink).
func list(s string) []string {
	if s == "" {
		return []string{}
	}
	return []string{s}
}

// queryDescription is ksqlDB's QueryDescription (EXPLAIN).
type queryDescription struct {
	ID                   string            `json:"id"`
	StatementText        string            `json:"statementText"`
	WindowType           *string           `json:"windowType"`
	Fields               []fieldInfo       `json:"fields"`
	Sources              []string          `json:"sources"`
	Sinks                []string          `json:"sinks"`
	Topology             string            `json:"topology"`
	ExecutionPlan        string            `json:"executionPlan"`
	OverriddenProperties map[string]any    `json:"overriddenProperties"`
	KsqlHostQueryStatus  map[string]string `json:"ksqlHostQueryStatus"`
	QueryType            string            `json:"queryType"`
	QueryErrors          []any             `json:"queryErrors"`
	State                string            `json:"state,omitempty"`
}

type queryDescriptionEntity struct {
	entityBase
	QueryDescription queryDescription `json:"queryDescription"`
}

// topologyOf returns the part of an EXPLAIN text after its "Topology:" or
// "Physical plan:" line.
func topologyOf(plan string) string {
	for _, marker := range []string{"Topology:\n", "Physical plan:\n"} {
		if _, after, ok := strings.Cut(plan, marker); ok {
			return after
		}
	}
	return ""
}

// describeQuery builds a running query's description.
func (s *Server) describeQuery(q *catalog.Query, plan string) queryDescription {
	d := queryDescription{
		ID: q.ID, StatementText: q.SQL, Fields: []fieldInfo{}, Sources: append([]string{}, q.Sources...),
		Sinks: list(q.Sink), Topology: topologyOf(plan), ExecutionPlan: plan,
		OverriddenProperties: map[string]any{}, KsqlHostQueryStatus: map[string]string{},
		QueryType: "PERSISTENT", QueryErrors: []any{},
	}
	if src, ok := s.eng.Catalog().Source(q.Sink); ok {
		d.Fields = fieldInfos(src.Schema.Columns)
	}
	if st, ok := s.eng.QueryStatus(q.ID); ok {
		d.State = st.State
		if st.Err != "" {
			d.QueryErrors = append(d.QueryErrors, map[string]any{"errorMessage": st.Err, "type": "UNKNOWN"})
		}
	}
	return d
}

// explain answers EXPLAIN query_id and EXPLAIN statement.
func (s *Server) explain(ctx context.Context, sess *engine.Session, st *sql.Explain, text string) (any, error) {
	t, err := s.collect(ctx, sess, text)
	if err != nil {
		return nil, err
	}
	plan := t.lines()
	if st.QueryID != "" {
		q, ok := s.eng.Catalog().Query(st.QueryID)
		if !ok {
			return nil, sql.NameError(st, sql.CodeUndefinedObject, "query %s does not exist", st.QueryID)
		}
		return queryDescriptionEntity{entityBase: base("queryDescription", text), QueryDescription: s.describeQuery(q, plan)}, nil
	}
	inner := st.Stmt.Text()
	if len(inner) > 7 && strings.EqualFold(inner[:7], "EXPLAIN") {
		inner = strings.TrimSpace(inner[7:])
	}
	d := queryDescription{
		StatementText: inner, Fields: []fieldInfo{}, Sources: []string{}, Sinks: []string{},
		Topology: topologyOf(plan), ExecutionPlan: plan,
		OverriddenProperties: map[string]any{}, KsqlHostQueryStatus: map[string]string{},
		QueryType: "PUSH", QueryErrors: []any{},
	}
	switch stmt := st.Stmt.(type) {
	case *sql.Select:
		if cols, err := s.eng.Describe(ctx, sess, inner); err == nil {
			d.Fields = fieldInfos(cols)
		}
		if stmt.Emit == "" {
			d.QueryType = "PULL"
		}
	case *sql.CreateAs:
		d.QueryType = "PERSISTENT"
		d.Sinks = []string{stmt.Name}
	}
	return queryDescriptionEntity{entityBase: base("queryDescription", text), QueryDescription: d}, nil
}

// argumentInfo is ksqlDB's ArgumentInfo.
type argumentInfo struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description"`
	IsVariadic  bool   `json:"isVariadic"`
}

// functionInfo is ksqlDB's FunctionInfo: one signature.
type functionInfo struct {
	Arguments     []argumentInfo `json:"arguments"`
	ReturnType    string         `json:"returnType"`
	Description   string         `json:"description"`
	ArgumentTypes []string       `json:"argumentTypes"`
}

type functionDescription struct {
	entityBase
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Author      string         `json:"author"`
	Version     string         `json:"version"`
	Path        string         `json:"path"`
	Functions   []functionInfo `json:"functions"`
	Type        string         `json:"type"`
}

// describeFunction builds DESCRIBE FUNCTION's entity from the engine's
// "Name | Signature | Description" rows.
func (s *Server) describeFunction(ctx context.Context, sess *engine.Session, t *table, text string) any {
	d := functionDescription{entityBase: base("describe_function", text), Author: "sqlstreams", Version: "", Path: "internal", Functions: []functionInfo{}, Type: "SCALAR"}
	for i := range t.rows {
		d.Name, d.Description = t.get(i, "Name"), t.get(i, "Description")
		args, ret := parseSignature(t.get(i, "Signature"))
		fi := functionInfo{Arguments: args, ReturnType: ret, Description: d.Description, ArgumentTypes: []string{}}
		for _, a := range args {
			fi.ArgumentTypes = append(fi.ArgumentTypes, a.Type)
		}
		d.Functions = append(d.Functions, fi)
	}
	if fns, err := s.collect(ctx, sess, "SHOW FUNCTIONS"); err == nil {
		for i := range fns.rows {
			if fns.get(i, "Name") == d.Name {
				d.Type = fns.get(i, "Type")
			}
		}
	}
	return d
}

// parseSignature splits "SUBSTRING(STRING, INTEGER pos) -> STRING" into
// its arguments and return type. A trailing "..." marks the argument
// before it variadic.
func parseSignature(sig string) ([]argumentInfo, string) {
	args := []argumentInfo{}
	open := strings.IndexByte(sig, '(')
	arrow := strings.LastIndex(sig, "->")
	if open < 0 || arrow < open {
		return args, ""
	}
	ret := strings.TrimSpace(sig[arrow+2:])
	inner := strings.TrimSpace(sig[open+1 : arrow])
	inner = strings.TrimSpace(strings.TrimSuffix(inner, ")"))
	for _, part := range splitTop(inner) {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case part == "...":
			if len(args) > 0 {
				args[len(args)-1].IsVariadic = true
			}
		default:
			a := argumentInfo{Type: part}
			if sp := strings.LastIndexByte(part, ' '); sp > 0 && isArgName(part[sp+1:]) {
				a.Type, a.Name = strings.TrimSpace(part[:sp]), part[sp+1:]
			}
			args = append(args, a)
		}
	}
	return args, ret
}

// splitTop splits s at commas outside <…> and (…).
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '<', '(':
			depth++
		case '>', ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// isArgName reports whether w is an argument name (lower case) rather
// than part of a type (upper case).
func isArgName(w string) bool {
	if w == "" {
		return false
	}
	for _, c := range w {
		if !(c >= 'a' && c <= 'z' || c == '_' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
