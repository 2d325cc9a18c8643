// Package exec is the runtime: it runs physical topologies on Kafka.
//
//	Query (a persistent query, one application ID = one consumer group)
//	 └─ stream threads: one group member each, one kgo.GroupTransactSession
//	     (EOSv2: one transactional producer per thread, offsets committed in
//	     the transaction with live group metadata, read_committed)
//	      └─ tasks, one per (sub-topology, input partition):
//	          source (decode key+value) ─▶ operators ─▶ sink (encode, produce)
//
// Each operator is one file: source.go, filter.go, project.go, sink.go,
// collect.go. Operators are built once per task from the topology, with
// expressions compiled into evaluators; processing a record reuses the
// task's row buffers and allocates nothing in steady state.
//
// A record that cannot be decoded or evaluated is a bad record: skipped,
// counted and logged with its topic, partition and offset. It never stops
// the query.
//
// exec imports neither sql nor planner: it sees only physical topologies.
package exec
