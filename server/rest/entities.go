package rest

// This file holds the ksqlDB entities /ksql answers with for SHOW,
// DESCRIBE and EXPLAIN, and builds them from the engine's typed results
// (engine.Result.Value).

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sqlstreams/sqlstreams/catalog"
	"github.com/sqlstreams/sqlstreams/engine"
	"github.com/sqlstreams/sqlstreams/sql"
	"github.com/sqlstreams/sqlstreams/types"
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
	// sqlstreams' additions (ksqlDB's clients ignore unknown fields):
	// since when the query is in State, its restarts and latest failure.
	StateSince  string `json:"stateSince,omitempty"`
	Restarts    int64  `json:"restarts"`
	LastError   string `json:"lastError,omitempty"`
	LastErrorAt string `json:"lastErrorAt,omitempty"`
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

// typed runs a SHOW, DESCRIBE or EXPLAIN statement and returns the
// engine's typed result.
func (s *Server) typed(ctx context.Context, sess *engine.Session, st sql.Statement) (engine.Tabular, error) {
	res, err := s.eng.ExecuteStatement(ctx, sess, st, discard{})
	if err != nil {
		return nil, err
	}
	if res.Value == nil {
		return nil, fmt.Errorf("the engine returned no result for %q", st.Text())
	}
	return res.Value, nil
}

// discard is a ResultWriter that drops the rows: REST builds its
// entities from the typed result.
type discard struct{}

func (discard) Columns([]types.Column) error { return nil }
func (discard) Row(types.Row) error          { return nil }

// show turns a SHOW statement's typed result into its entity.
func (s *Server) show(ctx context.Context, sess *engine.Session, st *sql.Show, text string) (any, error) {
	v, err := s.typed(ctx, sess, st)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case *engine.SourceList:
		if v.Extended {
			l := sourceDescriptionList{entityBase: base("source_descriptions", text), SourceDescriptions: []sourceDescription{}}
			for _, src := range v.Sources {
				if d, ok := s.eng.DescribeSource(src.Name, true); ok {
					l.SourceDescriptions = append(l.SourceDescriptions, describeSource(d))
				}
			}
			return l, nil
		}
		infos := make([]sourceInfo, len(v.Sources))
		for i, src := range v.Sources {
			infos[i] = sourceInfo{
				Type: v.Kind.String(), Name: src.Name, Topic: src.Topic,
				KeyFormat: src.KeyFormat, ValueFormat: src.ValueFormat,
				Format: src.ValueFormat, IsWindowed: src.Windowed,
			}
		}
		if v.Kind == catalog.Table {
			return tablesList{entityBase: base("tables", text), Tables: infos}, nil
		}
		return streamsList{entityBase: base("streams", text), Streams: infos}, nil
	case *engine.QueryList:
		if v.Extended {
			l := queryDescriptionList{entityBase: base("query_descriptions", text), QueryDescriptions: []queryDescription{}}
			for _, q := range v.Queries {
				p, ok := s.eng.ExplainQuery(q.ID)
				if !ok {
					continue // terminated meanwhile
				}
				l.QueryDescriptions = append(l.QueryDescriptions, describeQuery(p))
			}
			return l, nil
		}
		qs := make([]runningQuery, len(v.Queries))
		for i := range v.Queries {
			qs[i] = toRunningQuery(&v.Queries[i])
		}
		return queriesList{entityBase: base("queries", text), Queries: qs}, nil
	case *engine.TopicList:
		topics := make([]kafkaTopic, len(v.Topics))
		for i, t := range v.Topics {
			replicas := make([]int, t.Partitions)
			for j := range replicas {
				replicas[j] = 1 // replicas per partition are not reported; one is the embedded broker's
			}
			topics[i] = kafkaTopic{Name: t.Name, ReplicaInfo: replicas}
		}
		return kafkaTopicsList{entityBase: base("kafka_topics", text), Topics: topics}, nil
	case *engine.PropertyList:
		l := propertiesList{entityBase: base("properties", text), Properties: []property{}, OverwrittenProperties: []string{}, DefaultProperties: []string{}}
		for _, p := range v.Properties {
			scope := "STREAMS"
			if strings.HasPrefix(p.Name, "ksql.") {
				scope = "KSQL"
			}
			l.Properties = append(l.Properties, property{Name: p.Name, Scope: scope, Value: p.Value})
			if p.Overridden {
				l.OverwrittenProperties = append(l.OverwrittenProperties, p.Name)
			} else {
				l.DefaultProperties = append(l.DefaultProperties, p.Name)
			}
		}
		return l, nil
	case *engine.FunctionList:
		fns := make([]simpleFunction, len(v.Functions))
		for i, f := range v.Functions {
			fns[i] = simpleFunction{Name: f.Name, Type: f.Type, Category: ""}
		}
		return functionNames{entityBase: base("function_names", text), Functions: fns}, nil
	}
	return tableEntity(v, text), nil
}

// tableEntity is the answer for a statement that returns rows this server
// has no ksqlDB entity for: sqlstreams' own "table" entity.
func tableEntity(v engine.Tabular, text string) any {
	type tableEntity struct {
		entityBase
		ColumnNames []string   `json:"columnNames"`
		Rows        [][]string `json:"rows"`
	}
	cols, rows := v.Table()
	e := tableEntity{entityBase: base("table", text), ColumnNames: []string{}, Rows: rows}
	for _, c := range cols {
		e.ColumnNames = append(e.ColumnNames, c.Name)
	}
	if e.Rows == nil {
		e.Rows = [][]string{}
	}
	return e
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
	v, err := s.typed(ctx, sess, st)
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case *engine.FunctionDescription:
		return describeFunction(v, text), nil
	case *engine.SourceDescription:
		return sourceDescriptionEntity{entityBase: base("sourceDescription", text), SourceDescription: describeSource(v)}, nil
	}
	return tableEntity(v, text), nil
}

// describeSource builds ksqlDB's SourceDescription from the engine's.
func describeSource(src *engine.SourceDescription) sourceDescription {
	d := sourceDescription{
		Name: src.Source.Name, ReadQueries: []runningQuery{}, WriteQueries: []runningQuery{},
		Fields: fieldInfos(src.Columns), Type: src.Source.Kind.String(), Timestamp: src.TimestampColumn,
		StatisticsMap: map[string]any{}, ErrorStatsMap: map[string]any{}, Extended: src.Extended,
		KeyFormat: src.Source.KeyFormat, ValueFormat: src.Source.ValueFormat, Topic: src.Source.Topic,
		Partitions: int(src.Source.Partitions), Replication: 1, Statement: src.Statement,
		QueryOffsetSummaries: []any{}, SourceConstraints: []string{},
	}
	if src.Source.Windowed {
		w := string(src.WindowType)
		d.WindowType = &w
	}
	// The queries that use the source, in ID order: those that write it
	// (its CREATE … AS SELECT and any INSERT INTO … SELECT) and those
	// that read it.
	users := append([]engine.QueryInfo{}, src.Readers...)
	if src.Writer != nil {
		users = append(users, *src.Writer)
	}
	sort.Slice(users, func(i, j int) bool { return users[i].ID < users[j].ID })
	for i := range users {
		if users[i].Sink == src.Source.Name {
			d.WriteQueries = append(d.WriteQueries, toRunningQuery(&users[i]))
		} else {
			d.ReadQueries = append(d.ReadQueries, toRunningQuery(&users[i]))
		}
	}
	if src.Extended && src.Writer != nil && src.Writer.Status != nil {
		st := src.Writer.Status
		d.Statistics = fmt.Sprintf("records-in: %d records-out: %d commits: %d", st.RecordsIn, st.RecordsOut, st.Commits)
		d.ErrorStats = fmt.Sprintf("bad-records: %d aborts: %d", st.BadRecords, st.Aborts)
		d.StatisticsMap = map[string]any{"records-in": st.RecordsIn, "records-out": st.RecordsOut, "commits": st.Commits,
			"state": st.State, "state-since": st.Since.UTC().Format(time.RFC3339Nano)}
		d.ErrorStatsMap = map[string]any{"bad-records": st.BadRecords, "aborts": st.Aborts, "restarts": st.Restarts, "late-records": st.LateRecords}
		if st.LastErr != "" {
			d.ErrorStatsMap["last-error"] = st.LastErr
			d.ErrorStatsMap["last-error-at"] = st.LastErrAt.UTC().Format(time.RFC3339Nano)
			d.ErrorStats += " restarts: " + strconv.FormatInt(st.Restarts, 10) + " last-error: " + st.LastErr
		}
	}
	return d
}

// toRunningQuery describes a persistent query as SHOW QUERIES lists it.
func toRunningQuery(q *engine.QueryInfo) runningQuery {
	st := q.State()
	r := runningQuery{
		QueryString: q.SQL, Sinks: list(q.Sink), SinkKafkaTopics: list(q.SinkTopic), ID: q.ID,
		StatusCount: map[string]int{st: 1}, QueryType: orDefault(q.Type, "PERSISTENT"), State: st,
	}
	if s := q.Status; s != nil {
		r.StateSince, r.Restarts = s.Since.UTC().Format(time.RFC3339Nano), s.Restarts
		if s.LastErr != "" {
			r.LastError, r.LastErrorAt = s.LastErr, s.LastErrAt.UTC().Format(time.RFC3339Nano)
		}
	}
	return r
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
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

// describeQuery builds ksqlDB's QueryDescription from the engine's plan.
func describeQuery(p *engine.Plan) queryDescription {
	d := queryDescription{
		ID: p.QueryID, StatementText: p.SQL, Fields: fieldInfos(p.Columns), Sources: append([]string{}, p.Sources...),
		Sinks: list(p.Sink), Topology: p.Topology(), ExecutionPlan: p.Text,
		OverriddenProperties: map[string]any{}, KsqlHostQueryStatus: map[string]string{},
		QueryType: p.Type, QueryErrors: []any{},
	}
	if st := p.Status; st != nil {
		d.State = st.State
		if st.LastErr != "" {
			// ksqlDB's QueryError: the latest failure, kept after a
			// recovery.
			d.QueryErrors = append(d.QueryErrors, map[string]any{"timestamp": st.LastErrAt.UnixMilli(), "errorMessage": st.LastErr, "type": "UNKNOWN"})
		}
	}
	return d
}

// explain answers EXPLAIN query_id and EXPLAIN statement.
func (s *Server) explain(ctx context.Context, sess *engine.Session, st *sql.Explain, text string) (any, error) {
	v, err := s.typed(ctx, sess, st)
	if err != nil {
		return nil, err
	}
	p, ok := v.(*engine.Plan)
	if !ok {
		return tableEntity(v, text), nil
	}
	return queryDescriptionEntity{entityBase: base("queryDescription", text), QueryDescription: describeQuery(p)}, nil
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

// describeFunction builds DESCRIBE FUNCTION's entity.
func describeFunction(f *engine.FunctionDescription, text string) any {
	d := functionDescription{entityBase: base("describe_function", text), Name: f.Name, Description: f.Description,
		Author: "sqlstreams", Version: "", Path: "internal", Functions: []functionInfo{}, Type: f.Type}
	for _, sig := range f.Signatures {
		args, ret := parseSignature(sig)
		fi := functionInfo{Arguments: args, ReturnType: ret, Description: f.Description, ArgumentTypes: []string{}}
		for _, a := range args {
			fi.ArgumentTypes = append(fi.ArgumentTypes, a.Type)
		}
		d.Functions = append(d.Functions, fi)
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
