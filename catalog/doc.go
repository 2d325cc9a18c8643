// Package catalog owns the streams, tables and persistent queries sqlstreams
// knows about, their schemas and topics, and the command topic that
// persists them.
//
//	engine ──(validated statement)──▶ CommandLog.Append ──▶ <service>_command_topic
//	                                                              │ (one partition,
//	every instance, at start and after: CommandLog.Replay ◀───────┘  transactional)
//	          └──▶ engine re-executes each command ──▶ Catalog
//
// The catalog itself is plain in-memory data guarded by a mutex; the
// command topic is the source of truth, so a restart rebuilds it by replay.
package catalog
