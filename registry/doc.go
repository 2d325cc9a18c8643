// Package registry is sqlstreams' schema registry: a client of any
// Confluent-compatible registry (Client, the types.SchemaSource the AVRO
// format reads and registers schemas through), and an embedded registry
// (Registry) that serves Confluent's REST API from the single binary.
//
//	Confluent clients, kcat -r, pkg/sr ──HTTP──▶ Registry.Handler ─▶ Registry ◀─replay── _schemas (compacted topic)
//	                                                                    └─produce each change before applying it─▶
//	types (AVRO codec) ─▶ types.SchemaSource = Client ──HTTP──▶ any registry
//
// The embedded registry keeps Confluent's record layout in its topic, hands
// out IDs from 1 up (the same schema keeps one ID across subjects; schemas
// are compared parsed, not as text, so another text form of a registered
// schema gets its ID and version back: an Avro schema by twmb/avro's
// Parsing Canonical Form plus the attributes that form drops, see
// identity), keeps per-subject versions with soft and permanent deletes,
// /config compatibility levels (BACKWARD by default) and checks
// compatibility: Avro with twmb/avro's schema resolution rules
// (avro.CheckCompatibility; it follows the specification where Avro Java,
// and so Confluent, do not — AVRO-2078 is still open: two decimals
// resolve only when their precisions and scales are equal, so a changed
// DECIMAL(p, s) is refused under BACKWARD and FORWARD, which Confluent
// accepts), Protobuf (compiled with bufbuild/protocompile) by field
// numbers and wire types, JSON schemas in the common cases (property
// types, required properties; not oneOf/$ref).
package registry
