package types

import (
	"errors"
	"fmt"
	"strings"
)

// Schema registry schema types, as the registry's schemaType field names
// them ("" is AVRO).
const (
	SchemaTypeAvro     = "AVRO"
	SchemaTypeProtobuf = "PROTOBUF"
	SchemaTypeJSON     = "JSON"
)

// RegisteredSchema is a schema as a Confluent-compatible schema registry
// stores it.
type RegisteredSchema struct {
	// Type is SchemaTypeAvro (also ""), SchemaTypeProtobuf or
	// SchemaTypeJSON.
	Type string
	// Text is the schema's source: Avro JSON, a .proto file, a JSON
	// schema.
	Text string
	// References name the other registered schemas Text refers to.
	References []SchemaRef
}

// SchemaRef is a reference from one registered schema to another.
type SchemaRef struct {
	Name    string // the name Text uses: an Avro full name, a .proto import path
	Subject string
	Version int
}

// ErrSchemaNotFound is what a SchemaSource returns, wrapped, for a schema
// ID or subject the registry does not have. A record whose header names
// such an ID is a bad record; other SchemaSource errors (the registry is
// unreachable) are not, and fail the query so that it retries.
var ErrSchemaNotFound = errors.New("schema not found")

// ErrRegistry wraps the errors of the registry formats that are not a
// record's fault: no registry configured, a registry that does not answer,
// a sink schema the registry refuses. A query fails on such an error (and
// restarts with backoff) instead of skipping the record as bad.
var ErrRegistry = errors.New("schema registry")

// registryErr wraps err in ErrRegistry.
func registryErr(err error) error {
	if err == nil || errors.Is(err, ErrRegistry) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrRegistry, err)
}

// SchemaSource is the schema registry as the formats see it; the registry
// package implements it over HTTP. It must be safe for concurrent use.
// Codecs call it the first time they see a schema ID and when they
// register their own schema, never per record once an ID is known.
type SchemaSource interface {
	// SchemaByID returns the schema registered with id.
	SchemaByID(id int) (RegisteredSchema, error)
	// Register registers s under subject, or finds it there already,
	// and returns its ID. The registry refuses a schema incompatible with
	// the subject's compatibility level.
	Register(subject string, s RegisteredSchema) (int, error)
	// Latest returns the ID and schema of subject's latest version.
	Latest(subject string) (int, RegisteredSchema, error)
	// SchemaByVersion returns version version of subject, for the
	// references of a schema.
	SchemaByVersion(subject string, version int) (RegisteredSchema, error)
}

// namedSchema is a referenced schema's text under the name the referring
// schema uses for it (an Avro full name, a .proto import path).
type namedSchema struct{ name, text string }

// resolveRefs fetches the schemas rs references, transitively, each after
// the ones it references. A missing reference wraps ErrSchemaNotFound.
func resolveRefs(src SchemaSource, rs RegisteredSchema) ([]namedSchema, error) {
	if len(rs.References) == 0 {
		return nil, nil
	}
	if src == nil {
		return nil, errNoRegistry
	}
	var out []namedSchema
	seen := map[SchemaRef]bool{}
	var walk func(refs []SchemaRef, depth int) error
	walk = func(refs []SchemaRef, depth int) error {
		if depth > 32 {
			return fmt.Errorf("%w: schema references nest too deeply", errParse)
		}
		for _, r := range refs {
			if seen[r] {
				continue
			}
			seen[r] = true
			dep, err := src.SchemaByVersion(r.Subject, r.Version)
			if err != nil {
				return fmt.Errorf("reference %s (subject %s version %d): %w", r.Name, r.Subject, r.Version, err)
			}
			if err := walk(dep.References, depth+1); err != nil {
				return err
			}
			out = append(out, namedSchema{r.Name, dep.Text})
		}
		return nil
	}
	return out, walk(rs.References, 0)
}

// depsKey identifies a schema with its references for the parse caches.
func depsKey(text string, deps []namedSchema) string {
	if len(deps) == 0 {
		return text
	}
	var b strings.Builder
	b.WriteString(text)
	for _, d := range deps {
		b.WriteString("\x00")
		b.WriteString(d.name)
		b.WriteString("\x00")
		b.WriteString(d.text)
	}
	return b.String()
}

// CheckWriterSchema checks that the registered schema id (its message
// fullName, for PROTOBUF) can be written with cols, as ksqlDB checks a sink given KEY_SCHEMA_ID or VALUE_SCHEMA_ID:
// the schema's columns (SchemaColumns) must hold each column at the same
// position with the same name (ignoring case) and type; the schema may
// have more columns after them. Only PROTOBUF keys are checked (the other
// formats' keys are not wrapped in a record). The error names the columns that differ
// and the schema's columns, in ksqlDB's words.
func CheckWriterSchema(src SchemaSource, format string, id int, fullName string, cols []Column, key bool) error {
	if src == nil || id == 0 || !InfersColumns(format) || len(cols) == 0 {
		return nil
	}
	if key && format != FormatProtobuf {
		// An AVRO or JSON_SR key is one unwrapped column: a record
		// schema is that column's STRUCT, not the key columns.
		return nil
	}
	rs, err := src.SchemaByID(id)
	if err != nil {
		return registryErr(fmt.Errorf("schema ID %d: %w", id, err))
	}
	single := "ROWVAL"
	if key {
		single = "ROWKEY"
	}
	if format != FormatProtobuf {
		fullName = ""
	}
	got, wrapped, err := SchemaColumnsNamed(src, format, rs, single, fullName)
	if err != nil {
		return fmt.Errorf("schema ID %d: %v", id, err)
	}
	var bad []string
	for i, c := range cols {
		ok := i < len(got) && strings.EqualFold(got[i].Type.String(), c.Type.String()) &&
			(!wrapped || strings.EqualFold(got[i].Name, c.Name))
		if !ok {
			bad = append(bad, ksqlColumn(c))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	side := "value "
	if key {
		side = "key "
	}
	have := make([]string, len(got))
	for i, c := range got {
		have[i] = ksqlColumn(c)
	}
	return fmt.Errorf("The following %scolumns are changed, missing or reordered: [%s]. Schema from schema registry is [%s]",
		side, strings.Join(bad, ", "), strings.Join(have, ", "))
}

// ksqlColumn renders a column as ksqlDB's messages do: `name` TYPE.
func ksqlColumn(c Column) string { return "`" + c.Name + "` " + c.Type.String() }
