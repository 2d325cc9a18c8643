// Package engine is the one API the servers and the shell use: execute a
// statement, describe its result, run pull and push queries. It owns the
// lifecycle of persistent queries and keeps the catalog in step with the
// command topic.
//
//	pgwire, rest, shell ─▶ Engine.Execute(stmt)
//	                          ├─ sql.Parse / Bind  ─▶ planner ─▶ physical
//	                          ├─ catalog changes: catch up, CommandLog.Append, then apply
//	                          ├─ persistent queries: exec.Start / Stop
//	                          ├─ pull queries: local stores + forwarded to owners (route.go)
//	                          └─ push queries: exec.RunPush, rows to the writer
//
//	command topic ─▶ follower (follow.go) ─▶ apply, in the topic's order
//
// At Open the engine replays the command topic to its end offset, so a
// restart recreates every stream, table and query, which resume from their
// committed offsets; then it follows the topic, applying what other
// instances of the service write. Query IDs come from their command's
// offset. Several instances share every query's consumer group; a pull
// query asked of any of them is answered for the whole table.
//
// Files: engine.go (Open, Close, Execute's dispatch), config.go, ddl.go
// (catalog statements), lifecycle.go (query start, replace, terminate,
// pause, stop), topics.go and topicadmin.go (TopicAdmin), follow.go
// (CommandLog), route.go (pull routing and forwarding), migrate.go
// (commands recorded before plans). With Config.Offline, a TopicAdmin and
// a CommandLog from engine/enginetest, the engine runs without Kafka and
// builds queries without running them: TestStatements runs its
// statements that way.
package engine
