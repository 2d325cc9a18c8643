package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Case is one test case to run: statements, the records to produce, and
// what should come out (records, or an error).
type Case struct {
	// File is the test file's base name; Name is the test's name with the
	// format and config it was expanded with (" - AVRO", " - k=v"), as
	// ksqlDB names its expanded tests.
	File, Name string
	// Statements run in order through the engine.
	Statements []string
	// Properties are set on the session before the statements run
	// (ksqlDB's "properties": config overrides).
	Properties map[string]string
	Inputs     []Record
	Outputs    []Record
	Topics     []Topic
	// Expected, when set, says the case should fail with this error.
	Expected *ExpectedError
	// Disabled is ksqlDB's "enabled": false.
	Disabled bool
	// SQLTest marks a test of ksqlDB's SQL test files (LoadSQLTests):
	// Statements, ASSERTs among them, run in order on one session and
	// there are no Inputs or Outputs.
	SQLTest bool
}

// Record is a test record in ksqlDB's spec form: key and value are JSON
// values that the topic's formats serialize.
type Record struct {
	Topic string
	// Key and Value are JSON values decoded with UseNumber; a missing
	// key is nil (no key).
	Key, Value any
	// Timestamp is set when the file gives one.
	Timestamp *int64
	Window    *Window
	// Headers are nil when the file gives none.
	Headers []Header
}

// Window is a windowed record key's window.
type Window struct {
	Start int64  `json:"start"`
	End   int64  `json:"end"`
	Type  string `json:"type"`
}

// Header is one record header; Value is nil for a null value.
type Header struct {
	Key   string `json:"KEY"`
	Value []byte `json:"VALUE"`
}

// Topic is a topic the test declares up front.
type Topic struct {
	Name        string `json:"name"`
	Partitions  int32  `json:"partitions"`
	KeyFormat   string `json:"keyFormat"`
	ValueFormat string `json:"valueFormat"`
	// KeySchema and ValueSchema are registered with the schema registry
	// before the statements run, when the test gives them.
	KeySchema, ValueSchema json.RawMessage
	// KeySchemaID and ValueSchemaID, when not 0, are the IDs the
	// schemas are registered with (ksqlDB's keySchemaId/valueSchemaId),
	// so that statements can name them in KEY_SCHEMA_ID/VALUE_SCHEMA_ID.
	KeySchemaID   int `json:"keySchemaId"`
	ValueSchemaID int `json:"valueSchemaId"`
	// KeySchemaRefs and ValueSchemaRefs are the schemas the key and
	// value schemas refer to, each registered under its name as subject
	// (version 1), as ksqlDB's runner registers them.
	KeySchemaRefs   []SchemaRef `json:"keySchemaReferences"`
	ValueSchemaRefs []SchemaRef `json:"valueSchemaReferences"`
}

// SchemaRef is a schema another schema of a test topic refers to: the
// name the referring schema uses (a .proto import path, an Avro full
// name), the schema's format, and its text (a JSON string for protobuf).
type SchemaRef struct {
	Name   string          `json:"name"`
	Format string          `json:"format"`
	Schema json.RawMessage `json:"schema"`
}

// ExpectedError is ksqlDB's expectedException: a Java exception class
// name and a message substring.
type ExpectedError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// FileError is a test file that cannot be read as one: exit code 2.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

type testNode struct {
	Name       string            `json:"name"`
	Format     []string          `json:"format"`
	Config     []string          `json:"config"`
	Properties map[string]any    `json:"properties"`
	Statements []string          `json:"statements"`
	Inputs     []json.RawMessage `json:"inputs"`
	Outputs    []json.RawMessage `json:"outputs"`
	Topics     []json.RawMessage `json:"topics"`
	Expected   *ExpectedError    `json:"expectedException"`
	Enabled    *bool             `json:"enabled"`
}

type recordNode struct {
	Topic     string          `json:"topic"`
	Key       json.RawMessage `json:"key"`
	Value     json.RawMessage `json:"value"`
	Timestamp *int64          `json:"timestamp"`
	Window    *Window         `json:"window"`
	Headers   []Header        `json:"headers"`
}

// lineComment matches a whole-line // comment, which Jackson accepts in
// ksqlDB's files and encoding/json does not.
var lineComment = regexp.MustCompile(`(?m)^\s*//.*$`)

// LoadQTT reads a query-validation-test file (ksqlDB's
// query-validation-tests/*.json) and expands each test over its "format"
// and "config" lists as ksqlDB does: one case per format × config, with
// {FORMAT} replaced in the statements and the property whose value is
// {CONFIG} set to each config.
func LoadQTT(path string) ([]Case, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &FileError{path, err}
	}
	var f struct {
		Tests []testNode `json:"tests"`
	}
	if err := json.Unmarshal(lineComment.ReplaceAll(b, nil), &f); err != nil {
		return nil, &FileError{path, err}
	}
	if len(f.Tests) == 0 {
		return nil, &FileError{path, fmt.Errorf("no tests")}
	}
	base := filepath.Base(path)
	var out []Case
	for i, t := range f.Tests {
		cs, err := expand(base, t)
		if err != nil {
			return nil, &FileError{path, fmt.Errorf("test %d (%q): %w", i+1, t.Name, err)}
		}
		out = append(out, cs...)
	}
	return out, nil
}

func expand(file string, t testNode) ([]Case, error) {
	if t.Name == "" {
		return nil, fmt.Errorf("no name")
	}
	if len(t.Statements) == 0 {
		return nil, fmt.Errorf("no statements")
	}
	if t.Expected == nil && len(t.Inputs) == 0 && len(t.Outputs) == 0 {
		return nil, fmt.Errorf("no inputs, outputs or expectedException")
	}
	inputs, err := records(t.Inputs)
	if err != nil {
		return nil, fmt.Errorf("inputs: %w", err)
	}
	outputs, err := records(t.Outputs)
	if err != nil {
		return nil, fmt.Errorf("outputs: %w", err)
	}
	var topics []Topic
	for _, raw := range t.Topics {
		var tn struct {
			Topic
			KeySchema   json.RawMessage `json:"keySchema"`
			ValueSchema json.RawMessage `json:"valueSchema"`
		}
		if err := json.Unmarshal(raw, &tn); err != nil {
			return nil, fmt.Errorf("topics: %w", err)
		}
		tp := tn.Topic
		tp.KeySchema, tp.ValueSchema = nullToNil(tn.KeySchema), nullToNil(tn.ValueSchema)
		topics = append(topics, tp)
	}
	props := map[string]string{}
	configKey := ""
	for k, v := range t.Properties {
		s := fmt.Sprint(v)
		if n, ok := v.(float64); ok && n == float64(int64(n)) {
			s = fmt.Sprint(int64(n))
		}
		props[k] = s
		if strings.EqualFold(s, "{CONFIG}") {
			configKey = k
		}
	}
	if len(t.Config) > 0 && configKey == "" {
		return nil, fmt.Errorf("config given but no property is {CONFIG}")
	}
	formats := t.Format
	if len(formats) == 0 {
		formats = []string{""}
	}
	configs := t.Config
	if len(configs) == 0 {
		configs = []string{""}
	}
	var out []Case
	for _, f := range formats {
		for _, c := range configs {
			name := t.Name
			if f != "" {
				name += " - " + f
			}
			p := map[string]string{}
			for k, v := range props {
				p[k] = v
			}
			if c != "" {
				p[configKey] = c
				name += " - " + configKey + "=" + c
			}
			stmts := make([]string, len(t.Statements))
			for i, s := range t.Statements {
				if f != "" {
					s = strings.ReplaceAll(s, "{FORMAT}", f)
				}
				stmts[i] = s
			}
			out = append(out, Case{
				File: file, Name: name, Statements: stmts, Properties: p,
				Inputs: inputs, Outputs: outputs, Topics: topics, Expected: t.Expected,
				Disabled: t.Enabled != nil && !*t.Enabled,
			})
		}
	}
	return out, nil
}

func nullToNil(m json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(m)) == 0 || string(bytes.TrimSpace(m)) == "null" {
		return nil
	}
	return m
}

func records(raws []json.RawMessage) ([]Record, error) {
	out := make([]Record, 0, len(raws))
	for i, raw := range raws {
		var n recordNode
		if err := json.Unmarshal(raw, &n); err != nil {
			return nil, fmt.Errorf("record %d: %w", i+1, err)
		}
		if n.Topic == "" {
			return nil, fmt.Errorf("record %d: no topic", i+1)
		}
		r := Record{Topic: n.Topic, Timestamp: n.Timestamp, Window: n.Window, Headers: n.Headers}
		var err error
		if r.Key, err = specValue(n.Key); err != nil {
			return nil, fmt.Errorf("record %d key: %w", i+1, err)
		}
		if r.Value, err = specValue(n.Value); err != nil {
			return nil, fmt.Errorf("record %d value: %w", i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// specValue decodes a JSON value keeping numbers as json.Number, so that
// 1.50 stays 1.50 (ksqlDB compares decimals by their exact text).
func specValue(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// LoadRunner reads ksqlDB's ksql-test-runner form: a file of statements
// (separated by semicolons), a file {"inputs": [records]} and a file
// {"outputs": [records]}. It is one case named after the SQL file. A
// file without its array, or with an empty one, is a FileError.
func LoadRunner(sqlFile, inputFile, outputFile string, split func(string) []string) (Case, error) {
	sqlText, err := os.ReadFile(sqlFile)
	if err != nil {
		return Case{}, &FileError{sqlFile, err}
	}
	c := Case{File: filepath.Base(sqlFile), Name: filepath.Base(sqlFile), Properties: map[string]string{}}
	for _, s := range split(string(sqlText)) {
		if strings.TrimSpace(s) != "" {
			c.Statements = append(c.Statements, s)
		}
	}
	if len(c.Statements) == 0 {
		return Case{}, &FileError{sqlFile, fmt.Errorf("no statements")}
	}
	read := func(path, field string) ([]Record, error) {
		if path == "" {
			return nil, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, &FileError{path, err}
		}
		var m map[string][]json.RawMessage
		if err := json.Unmarshal(lineComment.ReplaceAll(b, nil), &m); err != nil {
			return nil, &FileError{path, err}
		}
		raws, ok := m[field]
		if !ok {
			return nil, &FileError{path, fmt.Errorf("no %q array", field)}
		}
		if len(raws) == 0 {
			// As ksqlDB's runner: a file given must hold records.
			return nil, &FileError{path, fmt.Errorf("%s%s cannot be empty", strings.ToUpper(field[:1]), field[1:])}
		}
		rs, err := records(raws)
		if err != nil {
			return nil, &FileError{path, err}
		}
		return rs, nil
	}
	if c.Inputs, err = read(inputFile, "inputs"); err != nil {
		return Case{}, err
	}
	if c.Outputs, err = read(outputFile, "outputs"); err != nil {
		return Case{}, err
	}
	return c, nil
}
