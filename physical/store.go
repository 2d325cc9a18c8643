package physical

import (
	"github.com/sqlstreams/sqlstreams/types"
)

// StoreKind says how a store lays out its keys.
type StoreKind string

// Store kinds. Key-value stores exist today; the window, session and
// buffer kinds are the layouts windowed aggregates and joins keep.
const (
	// KeyValue keeps the latest value per key.
	KeyValue StoreKind = "key-value"
	// WindowStore keeps values per (key, window start), time-ordered so
	// that retention drops whole segments.
	WindowStore StoreKind = "window"
	// SessionStore keeps values per (key, session end, session start).
	SessionStore StoreKind = "session"
	// TimeOrderedBuffer keeps records by time until they are emitted
	// (EMIT FINAL, outer stream joins).
	TimeOrderedBuffer StoreKind = "time-ordered-buffer"
	// JoinWindowStore keeps a stream–stream join side's rows per key and
	// time, duplicates included, in time segments so that retention
	// drops whole segments. Its changelog holds its own keys.
	JoinWindowStore StoreKind = "join-window"
)

// Store is a state store of a topology.
type Store struct {
	// Name is the store's deterministic name, unique in its topology; a
	// task keeps it in <state dir>/<app id>/<sub-topology>_<partition>/<name>.
	Name string
	Kind StoreKind
	// Changelog is the topic the store is restored from. For a source
	// table it is the source topic itself (it is already a changelog);
	// SourceTopicChangelog says so, and a restore then stops at the
	// group's committed offset of that topic rather than at its end.
	Changelog            string
	SourceTopicChangelog bool
	// KeyFormat and ValueFormat describe the stored key and value bytes,
	// with Schema laying out the row they decode into.
	KeyFormat, ValueFormat   string
	KeyOptions, ValueOptions types.FormatOptions
	Schema                   types.Schema
	// RetentionMs bounds how long window and session stores keep a
	// window after it ends; 0 keeps everything (key-value stores).
	RetentionMs int64
	// Partitions is the changelog's partition count: its sub-topology's
	// (a join's repartition topic's); 0 for the query input's.
	Partitions int32
}
