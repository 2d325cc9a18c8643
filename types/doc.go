// Package types owns sqlstreams' SQL types, the typed value (Datum) and row
// representation, and the key/value formats that turn Kafka record bytes
// into rows and back (JSON, KAFKA; DELIMITED, AVRO and PROTOBUF later).
//
// Rows are slices of Datum reused from record to record: decoders fill a
// row in place and encoders append to a caller's buffer, so the per-record
// path allocates nothing in steady state. A STRING or BYTES datum's bytes
// may alias the decoded record or an evaluator's scratch buffer; they are
// valid only until the row is refilled. Copy what you keep.
//
// This package imports nothing internal.
package types
