// Package engine is the one API the servers and the shell use: execute a
// statement, describe its result, run pull and push queries. It owns the
// lifecycle of persistent queries and keeps the catalog in step with the
// command topic.
//
//	pgwire, rest, shell ─▶ Engine.Execute(stmt)
//	                          ├─ sql.Parse / Bind  ─▶ planner ─▶ physical
//	                          ├─ catalog changes: CommandLog.Append, then apply
//	                          ├─ persistent queries: exec.Start / Stop
//	                          └─ push queries: exec.RunPush, rows to the writer
//
// At Open the engine replays the command topic, so a restart recreates
// every stream, table and query, which resume from their committed offsets.
package engine
