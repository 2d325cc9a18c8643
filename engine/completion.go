package engine

import (
	"sort"
	"strings"

	"github.com/sqlstreams/sqlstreams/expr"
)

// CompletionKeywords are the ksqlDB words a client offers to complete at
// any position (the shell and the console).
var CompletionKeywords = []string{
	"SELECT", "FROM", "WHERE", "GROUP", "BY", "GROUP BY", "HAVING", "EMIT", "CHANGES", "EMIT CHANGES",
	"FINAL", "EMIT FINAL", "LIMIT", "PARTITION", "PARTITION BY", "ORDER", "AS", "AND", "OR", "NOT",
	"IS", "NULL", "IN", "LIKE", "BETWEEN", "CASE", "WHEN", "THEN", "ELSE", "END", "CAST", "DISTINCT",
	"JOIN", "LEFT", "RIGHT", "FULL", "OUTER", "INNER", "ON", "WITHIN", "GRACE", "PERIOD",
	"WINDOW", "TUMBLING", "HOPPING", "SESSION", "SIZE", "ADVANCE", "RETENTION",
	"SECOND", "SECONDS", "MINUTE", "MINUTES", "HOUR", "HOURS", "DAY", "DAYS", "MILLISECONDS",
	"CREATE", "STREAM", "TABLE", "CREATE STREAM", "CREATE TABLE", "CREATE OR REPLACE", "REPLACE",
	"SOURCE", "IF", "EXISTS", "IF NOT EXISTS", "IF EXISTS", "DROP", "DROP STREAM", "DROP TABLE",
	"DELETE", "TOPIC", "INSERT", "INTO", "INSERT INTO", "VALUES", "WITH", "KEY", "PRIMARY", "PRIMARY KEY",
	"HEADERS", "HEADER", "KAFKA_TOPIC", "VALUE_FORMAT", "KEY_FORMAT", "FORMAT", "PARTITIONS", "REPLICAS",
	"TIMESTAMP", "TIMESTAMP_FORMAT", "WRAP_SINGLE_VALUE", "VALUE_DELIMITER", "KEY_DELIMITER", "PARTITIONER",
	"SHOW", "LIST", "STREAMS", "TABLES", "QUERIES", "TOPICS", "FUNCTIONS", "PROPERTIES", "EXTENDED",
	"DESCRIBE", "FUNCTION", "EXPLAIN", "TERMINATE", "PAUSE", "RESUME", "ALL", "PRINT", "SET", "UNSET", "RUN", "SCRIPT",
	"RUN SCRIPT", "BEGINNING", "INTERVAL", "TRUE", "FALSE",
	"BOOLEAN", "INT", "INTEGER", "BIGINT", "DOUBLE", "DECIMAL", "VARCHAR", "STRING", "BYTES",
	"ARRAY", "MAP", "STRUCT", "DATE", "TIME",
	"JSON", "AVRO", "PROTOBUF", "DELIMITED", "KAFKA", "NONE",
}

// CompletionProperties are the property names offered inside quotes, as
// in SET 'auto.offset.reset'='earliest': the registry's (properties.go)
// that take more than one value.
var CompletionProperties = func() []string {
	var out []string
	for _, n := range PropertyNames() {
		if propsByName[n].Fixed == "" {
			out = append(out, n)
		}
	}
	return out
}()

// Completions is what a client offers to complete: keywords, function
// names, stream and table names with their columns, property names.
type Completions struct {
	Keywords   []string           `json:"keywords"`
	Functions  []string           `json:"functions"`
	Sources    []CompletionSource `json:"sources"`
	Properties []string           `json:"properties"`
}

// CompletionSource is a stream or table and its column names.
type CompletionSource struct {
	Name string `json:"name"`
	// Kind is STREAM or TABLE.
	Kind    string   `json:"kind"`
	Columns []string `json:"columns"`
}

// Completions returns the words to complete from, as the catalog is now.
func (e *Engine) Completions() Completions {
	c := Completions{Keywords: CompletionKeywords, Properties: CompletionProperties, Functions: []string{}, Sources: []CompletionSource{}}
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			c.Functions = append(c.Functions, name)
		}
	}
	for _, f := range e.Functions() {
		add(f.Name)
	}
	for _, f := range expr.Aggregates() {
		add(f.Name)
	}
	sort.Strings(c.Functions)
	for _, src := range e.cat.Sources() {
		cs := CompletionSource{Name: src.Name, Kind: strings.ToUpper(src.Kind.String()), Columns: []string{}}
		for _, col := range src.Schema.Columns {
			if !col.Pseudo {
				cs.Columns = append(cs.Columns, col.Name)
			}
		}
		c.Sources = append(c.Sources, cs)
	}
	return c
}
