// Package types owns sqlstreams' SQL types, the typed value (Datum) and row
// representation, and the key/value formats that turn Kafka record bytes
// into rows and back, as ksqlDB defines them:
//
//	JSON       every type, nested to any depth (json.go)
//	KAFKA      one INT, BIGINT, DOUBLE, STRING or BYTES column in the
//	           layout of Kafka's Java serializers (kafka.go)
//	DELIMITED  one CSV line of scalar columns (delimited.go)
//	NONE       no columns
//	AVRO       every type, Confluent wire format, schemas in a registry
//	           reached through a SchemaSource, parsed with twmb/avro and
//	           read and written by schema-driven plans (avro.go)
//	JSON_SR    the JSON format behind the Confluent wire header, with a
//	           JSON Schema in the registry (jsonsr.go)
//	PROTOBUF   Confluent wire format with message indexes, .proto files
//	           in the registry compiled with bufbuild/protocompile, read
//	           and written with protowire by descriptor-driven plans
//	           (protobuf.go); PROTOBUF_NOSR the bare encoding
//
// AvroColumns, JSONSchemaColumns, ProtobufColumns and SchemaColumns infer
// columns from a registered schema, as ksqlDB's schema inference does. NewDecoderOpts and
// NewEncoderOpts build a codec for some columns of a schema once, checking
// then everything the format cannot hold; FormatOptions carries ksqlDB's
// WRAP_SINGLE_VALUE and KEY_DELIMITER/VALUE_DELIMITER.
//
//	record bytes ─▶ Decoder.Decode ─▶ Row (reused) ─▶ … ─▶ Encoder.Encode ─▶ bytes
//
// Rows are slices of Datum reused from record to record: decoders fill a
// row in place (reusing the element slices of composite values) and
// encoders append to a caller's buffer, so the per-record path allocates
// nothing in steady state. A STRING or BYTES datum's bytes may alias the
// decoded record or a decoder's or evaluator's scratch buffer; they are
// valid only until the row is refilled. Copy what you keep (Datum.Clone,
// CloneRow).
//
// AppendText gives the text form of any value (what psql shows) and
// AppendJSONValue its JSON form (what the JSON format writes).
//
// This package imports nothing internal.
package types
