package types

import "errors"

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
}
